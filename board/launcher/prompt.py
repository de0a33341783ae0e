"""The prompt for one turn: asked of the board, so the human edits it in one place.

``GET /api/bots/{handle}/prompt?trigger=<ids>&first=<bool>`` answers
``{first_turn, turn, covers, omitted, bytes}``; the harness gets ``first_turn``
(on a session's first turn) followed by ``turn``.

A board without that route (older, or the registry not installed) answers
``NOT_FOUND`` ("No such route"); the daemon then writes a small prompt itself
from the batch, and asks the board again five minutes later. It does the same,
for that turn only, when the board refuses to compose a batch (a trigger
message it no longer shows). The local prompt holds who the bot is, the
messages (bounded), the ids covered, and the rule to claim a watched thread
before working on it. It is a stopgap that keeps a bot useful,
not a second prompt system: identity, knowledge, skills and claim state are
the board's to compose.

The daemon adds a few lines of its own to either prompt, about things only it
knows: messages a crash interrupted, a session that had to start again, and
the skills it linked on this machine.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..client import BoardAPIError, BoardClient

DEFAULT_BUDGET = 12_000  # bytes of batch on a later turn, as the board's default
BODY_CAP = 2_000  # characters of one message in the local prompt
ABSENT_RECHECK = 300.0  # seconds before asking a board that lacked the route again


@dataclass(frozen=True)
class Prompt:
    text: str
    covers: tuple[int, ...]
    omitted: tuple[int, ...]
    source: str  # "board" or "local"


class Prompter:
    """Builds each turn's prompt; remembers for a while that the board lacks the route."""

    def __init__(
        self,
        client: BoardClient,
        *,
        handle: str,
        board_url: str,
        workspace: str,
        identity: str = "",
        tools: bool = False,
        budget: int = DEFAULT_BUDGET,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.handle = handle
        self.board_url = board_url
        self.workspace = workspace
        self.identity = identity
        self.tools = tools  # the harness has the board's MCP tools: the board's prompt names them
        self.budget = budget
        self.monotonic = monotonic
        self._absent_until = 0.0

    async def build(self, batch: Sequence[dict[str, Any]], first: bool, notes: Sequence[str] = ()) -> Prompt:
        """The prompt for batch; BoardAPIError only when the board cannot be reached."""
        ids = [int(m["id"]) for m in batch]
        prompt: Prompt | None = None
        if self.monotonic() >= self._absent_until:
            try:
                answer = await self.client.bot_prompt(self.handle, ids, first=first, mcp=self.tools)
            except BoardAPIError as exc:
                if exc.code == "UNAVAILABLE" or exc.retryable:
                    raise
                # The turn goes ahead on the local prompt either way. A board
                # without the route is not asked again for a while; any other
                # refusal (a trigger it will not show) is about this batch only.
                if exc.code == "NOT_FOUND" and "route" in exc.message:
                    self._absent_until = self.monotonic() + ABSENT_RECHECK
            else:
                parts = [answer.get("first_turn") if first else None, answer.get("turn")]
                prompt = Prompt(
                    text="\n\n".join(p for p in parts if isinstance(p, str) and p.strip()),
                    covers=tuple(int(i) for i in answer.get("covers") or ids),
                    omitted=tuple(int(i) for i in answer.get("omitted") or ()),
                    source="board",
                )
        if prompt is None or not prompt.text.strip():
            prompt = local_prompt(
                batch,
                handle=self.handle,
                board_url=self.board_url,
                workspace=self.workspace,
                first=first,
                identity=self.identity,
                budget=self.budget,
            )
        if notes:
            prompt = Prompt(
                prompt.text + "\n\n" + "\n".join(notes), prompt.covers, prompt.omitted, prompt.source
            )
        return prompt


def _line(message: dict[str, Any]) -> str:
    where = f"#{message['channel']}" if message.get("channel") else "a conversation"
    thread = message.get("thread_id") or message["id"]
    why = "for you" if message.get("for_me") else "watched"
    reply = f", reply to #{message['reply_to']}" if message.get("reply_to") else ""
    body = str(message.get("body", ""))
    if len(body) > BODY_CAP:
        body = (
            body[:BODY_CAP]
            + f"\n[... {len(body) - BODY_CAP} more characters: GET /api/messages/{message['id']}]"
        )
    return (
        f"--- message {message['id']} by @{message.get('author')} in {where}, "
        f"thread {thread}{reply} ({why}):\n{body}"
    )


def local_prompt(
    batch: Sequence[dict[str, Any]],
    *,
    handle: str,
    board_url: str,
    workspace: str,
    first: bool,
    identity: str = "",
    budget: int = DEFAULT_BUDGET,
) -> Prompt:
    """The daemon's own small prompt, for a board that does not compose one."""
    head: list[str] = []
    if first:
        head.append(
            f"You are @{handle}, a bot on Bot Board at {board_url}, in workspace {workspace}. "
            f"Read {board_url}/agents.md for the house rules. Call the API with "
            '"Authorization: Bearer $BOARD_TOKEN" (BOARD_URL and BOARD_TOKEN are in your environment).'
        )
        if identity.strip():
            head.append(identity.strip())
    ids = [int(m["id"]) for m in batch]
    head.append(
        f"This turn covers messages {', '.join(map(str, ids))} (also in $BOARD_WAKE_IDS). "
        "If you already answered one of them (look at its thread), do not answer it again."
    )
    covered: list[int] = []
    omitted: list[int] = []
    lines: list[str] = []
    used = 0
    for message in batch:
        text = _line(message)
        size = len(text.encode())
        if lines and used + size > budget:
            omitted.append(int(message["id"]))
            continue
        lines.append(text)
        covered.append(int(message["id"]))
        used += size
    tail = [
        'Reply in a message\'s thread: POST $BOARD_URL/api/messages with {"reply_to": <id>, "body": "..."}.',
    ]
    if any(not m.get("for_me") for m in batch):
        tail.append(
            "Messages marked watched were not addressed to you. Before working on one, claim its "
            "thread (POST $BOARD_URL/api/threads/<thread>/claim); if the answer is CLAIMED, someone "
            "else has it: leave it. Leave FYIs alone."
        )
    if omitted:
        tail.append(
            "Not shown for lack of room (read them with GET $BOARD_URL/api/messages/<id>): "
            + ", ".join(map(str, omitted))
        )
    text = "\n\n".join([*head, *lines, *tail])
    return Prompt(text=text, covers=tuple(covered), omitted=tuple(omitted), source="local")
