"""Long-poll: read once, and if nothing is there, wait for matching events.

The waiter subscribes *before* the read, so a message committed between the
read's snapshot and the wait is still delivered; events carry the rows, so a
woken waiter answers without touching the database.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any

from ..hub import Event, Key, Signal, Waiter
from .context import Context
from .tokencache import reach_key

MAX_WAIT = 60

#: Hands what was heard of an owner's reach so far to the waiter it is to reach (:func:`reach_heard`).
HandOn = Callable[[Waiter], None]


@contextlib.contextmanager
def reach_heard(ctx: Context, owner: int) -> Iterator[HandOn]:
    """Hear ``owner``'s reach key (:func:`~.tokencache.reach_key`) from before its caller reads
    the scope of a wait or a stream: a change that commits while the scope is read, before
    the wait holds its place in the hub, would otherwise reach it only at the end of its wait
    (a minute), or a stream never. Hand it on to the waiter once that is subscribed."""
    told = ctx.hub.subscribe([reach_key(owner)], request=False)

    def hand_on(waiter: Waiter) -> None:
        for signal in told.take():
            waiter.deliver(signal)

    try:
        yield hand_on
    finally:
        ctx.hub.unsubscribe(told)


async def poll(
    ctx: Context,
    keys: Iterable[Key],
    wait: int,
    fetch: Callable[[], Awaitable[list[dict[str, Any]]]],
    match: Callable[[Event], dict[str, Any] | None],
    *,
    owner: int,
    since: int | None = None,
    heard: HandOn | None = None,
) -> list[dict[str, Any]]:
    """``fetch()``; if empty and ``wait`` > 0, the matching events of the next ``wait`` s.

    The wait is held under ``owner`` (the caller's agent id), which holds at most
    ``BOARD_MAX_WAITS`` at once: a newer one ends this one early, with what it has. So does
    a change of what the owner's token reaches (:func:`~.tokencache.reach_key`): ``match``
    and ``fetch`` answer for the reach the call began with; ``heard`` (:func:`reach_heard`)
    carries such a change from before the wait, while the caller read its scope.

    A reader already at the head (``since`` at or past the last id this board has
    published) skips the read: nothing newer exists, and anything committed from
    now on reaches the waiter. This makes the re-poll after every wake free.
    """
    if not wait:
        return await fetch()
    reach = reach_key(owner)
    waiter = ctx.hub.subscribe([*keys, reach], owner)
    if heard is not None:
        heard(waiter)
    try:
        at_head = since is not None and ctx.hub.at_head(since)
        items = [] if at_head else await fetch()
        if items:
            return items
        loop = asyncio.get_running_loop()
        deadline = loop.time() + min(wait, MAX_WAIT, ctx.settings.max_wait)
        while (remaining := deadline - loop.time()) > 0:
            woken = await waiter.wait(remaining)
            if waiter.behind:  # what was missed is in the database, after the caller's cursor
                return await fetch()
            taken = waiter.take()
            if any(isinstance(event, Signal) and event.key == reach for event in taken):
                return []
            found = [
                item for event in taken if isinstance(event, Event) and (item := match(event)) is not None
            ]
            if found:
                return sorted(found, key=lambda item: item["id"])
            if not woken or waiter.released or ctx.hub.closed:
                break
        return []
    finally:
        ctx.hub.unsubscribe(waiter)
