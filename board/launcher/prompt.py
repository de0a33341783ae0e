"""The prompt for one turn: asked of the board, so the human edits it in one place.

``GET /api/bots/{handle}/prompt?trigger=<ids>&first=<bool>`` answers
``{first_turn, turn, covers, omitted, bytes}``; the harness gets ``first_turn``
(on a session's first turn) followed by ``turn``. The daemon ships in the same
wheel as the board it is installed from, so the board always has the route;
identity, knowledge, skills and claim state are the board's alone to compose.

A session the daemon rotated (docs/bots.md "Session rotation") asks for the
``handoff`` part too: where the batch's threads stand, within the board's byte
cap, between ``first_turn`` and ``turn``.

The daemon adds a few lines of its own, about things only it knows: messages a
crash interrupted, a session that had to start again, and the skills it linked
on this machine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..client import BoardAPIError, BoardClient


@dataclass(frozen=True)
class Prompt:
    text: str
    covers: tuple[int, ...]
    omitted: tuple[int, ...]


class Prompter:
    """Asks the board for each turn's prompt and adds the daemon's notes."""

    def __init__(self, client: BoardClient, *, handle: str, tools: bool = False) -> None:
        self.client = client
        self.handle = handle
        self.tools = tools  # the harness has the board's MCP tools: the board's prompt names them

    async def build(
        self,
        batch: Sequence[dict[str, Any]],
        first: bool,
        notes: Sequence[str] = (),
        *,
        handoff: bool = False,
    ) -> Prompt:
        """The prompt for batch; BoardAPIError when the board cannot be reached or shows none of it.

        A trigger the board no longer shows the bot (out of its reach since it was
        delivered) makes it refuse the whole batch: the batch is then asked for
        again without the messages it refuses one by one.
        """
        ids = [int(m["id"]) for m in batch]
        try:
            answer = await self._ask(ids, first, handoff)
        except BoardAPIError as exc:
            if exc.code != "NOT_FOUND" or len(ids) == 1:
                raise
            shown = [i for i in ids if await self._shows(i)]
            if not shown:
                raise
            answer = await self._ask(shown, first, handoff)
        parts = [answer.get("first_turn") if first else None, answer.get("handoff"), answer.get("turn")]
        if notes:
            parts.append("\n".join(notes))
        return Prompt(
            text="\n\n".join(p for p in parts if isinstance(p, str) and p.strip()),
            covers=tuple(int(i) for i in answer.get("covers") or ids),
            omitted=tuple(int(i) for i in answer.get("omitted") or ()),
        )

    async def _ask(self, ids: list[int], first: bool, handoff: bool = False) -> dict[str, Any]:
        return await self.client.bot_prompt(self.handle, ids, first=first, mcp=self.tools, handoff=handoff)

    async def _shows(self, message_id: int) -> bool:
        try:
            await self._ask([message_id], False)
        except BoardAPIError as exc:
            if exc.code == "NOT_FOUND":
                return False
            raise
        return True
