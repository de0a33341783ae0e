"""Replays by request id: the first answer of a call sent again, and keeping it.

A caller's request id names one call. The pipeline asks here what an id answered
before (:func:`earlier`, a read), gives the call a context whose writes carry its
:class:`~..store.requests.Mark` (:func:`for_call`), and keeps an answer the write
could not (:func:`remember`). Neither the pipeline nor a transport sees the store.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import BoardError, RequestIdReuse
from ..store import requests as store
from ..store.requests import AppliedElsewhere, Mark
from ..store.writer import ForRequest
from .context import Context

__all__ = ["AppliedElsewhere", "Mark", "Replays", "Stored", "earlier", "for_call", "remember", "stored_error"]

Key = tuple[int, str]  # the caller's agent id, its request id


@dataclass(frozen=True)
class Stored:
    """A call's first answer, as kept: its status and its text (JSON)."""

    status: int
    text: str


class Replays:
    """Serializes concurrent calls with the same request id inside this process."""

    def __init__(self) -> None:
        self._locks: dict[Key, asyncio.Lock] = {}

    def lock(self, key: Key) -> asyncio.Lock:
        return self._locks.setdefault(key, asyncio.Lock())

    def release(self, key: Key, lock: asyncio.Lock) -> None:
        if not lock.locked() and self._locks.get(key) is lock:
            del self._locks[key]


async def earlier(ctx: Context, key: Key, fingerprint: str) -> Stored | None:
    """What the call with this id answered first; None if it never took effect.

    REQUEST_ID_REUSE when the id was used for a different call, or when the call took
    effect but its answer was not kept (``applied``).
    """
    row = await ctx.db.read(lambda conn: store.get(conn, *key))
    if row is None:
        return None
    rid = key[1]
    if row["fingerprint"] != fingerprint:
        raise RequestIdReuse(f"request_id {rid} was used for a different call; use a new id.")
    if row["status"] == store.APPLIED:
        raise RequestIdReuse(
            f"request_id {rid} took effect, but its answer is not kept: the board stopped before "
            "answering it, or is answering it now; read the current state instead of retrying.",
            applied=True,
        )
    return Stored(row["status"], row["response"])


def for_call(
    ctx: Context, key: Key, fingerprint: str, answer: Callable[[Any], tuple[int, str]] | None
) -> tuple[Context, Mark]:
    """The context a call with a request id runs in, whose every write carries its mark.

    With ``answer``, the write keeps the call's answer itself (from its job's result).
    """
    mark = Mark(*key, fingerprint, ctx.now(), answer)
    bound = copy.copy(ctx)  # the same board, hub and clock; only the store's view differs
    bound.db = ForRequest(ctx.db, mark)
    return bound, mark


async def remember(ctx: Context, key: Key, fingerprint: str, status: int, text: str) -> None:
    """Keep an answer rendered after its write (or a refusal that changed nothing)."""
    now = ctx.now()
    await ctx.db.write(lambda conn: store.put(conn, *key, fingerprint, status, text, now))


def stored_error(stored: Stored) -> BoardError:
    """A kept refusal as the error it was, for a transport that does not send the JSON as is."""
    error = json.loads(stored.text)["error"]
    refused = BoardError(error["message"], **error["details"])
    refused.code, refused.status, refused.retryable = error["code"], stored.status, error["retryable"]
    return refused
