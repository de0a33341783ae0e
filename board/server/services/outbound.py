"""Notifications out of band: what each event a human should hear of puts in the outbox.

:func:`enqueue` runs inside the write of the event that causes it, so the outbox row
commits with the event or not at all; the dispatcher (``board/server/outbox/``) sends it
after the commit. Each (event, destination) is enqueued once: the row's ``idem_key`` is
``"<event key>:<destination id>"``, so a write retried by its request id adds nothing.

The kinds (a destination is sent the ones chosen for it):

- ``mention``: a message mentions the human; ``dm``: a message in a conversation of theirs;
- ``held``: a bot is held by its budget or paused by the loop guard (the board's notice);
- ``crashed``: a keeper reports a bot crashed or misconfigured;
- ``routine``: a routine version awaits approval; ``run_failed``: a routine run failed or
  timed out;
- ``review``: a knowledge proposal waits for review.

``held`` and ``crashed`` are *urgent*: a bot is stopped until someone acts, so quiet hours
do not hold them. Every other kind found in quiet hours waits until the window ends
(``next_at``). Whoever caused an event is never notified of it (``actor_id``).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import replace
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..hub import Key, Signal
from ..markdown import first_line
from ..store import messages
from ..store import notifications as store
from ..store.connection import Connection
from ..store.rows import Row
from ..store.writer import emit
from .context import Context

KINDS = ("mention", "dm", "held", "crashed", "routine", "run_failed", "review")
URGENT = frozenset({"held", "crashed"})
#: The hub key signalled after a commit that enqueued something: the dispatcher wakes.
QUEUED: Key = ("outbox", 0)
#: The kind of notification a message is for a human, by why it is in their inbox.
#: A thread handed to someone is news as a mention is: it names them, and it is theirs now.
REASON_KINDS = {
    "mention": "mention",
    "handoff": "mention",
    "conversation": "dm",
    "paused": "held",
    "held": "held",
}
MAX_SUBJECT = 200
#: A fixed offset from UTC, for quiet hours kept without a named zone.
OFFSET = re.compile(r"UTC(?P<sign>[+-])(?P<hours>0[0-9]|1[0-4]):(?P<minutes>[0-5][0-9])")
MAX_TEXT = 2000


def stamp(moment: datetime) -> str:
    """An outbox time: UTC with milliseconds, so retries seconds apart keep their order."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def zone(name: str) -> tzinfo:
    """The time zone ``name``: an IANA name, or a fixed offset ``UTC+02:00``; ValueError if neither."""
    offset = OFFSET.fullmatch(name)
    if offset is not None:
        sign = -1 if offset["sign"] == "-" else 1
        return timezone(sign * timedelta(hours=int(offset["hours"]), minutes=int(offset["minutes"])))
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {name!r}") from exc


def quiet_until(now: datetime, start: int, end: int, timezone: str) -> datetime | None:
    """The end of the quiet window ``now`` is in (start to end minutes, local), or None.

    A window may span midnight (22:00 to 07:00); start equal to end is no window.
    """
    local = now.astimezone(zone(timezone))
    minute = local.hour * 60 + local.minute
    inside = start <= minute < end if start < end else (minute >= start or minute < end)
    if start == end or not inside:
        return None
    until = local.replace(hour=end // 60, minute=end % 60, second=0, microsecond=0)
    if until <= local:
        until += timedelta(days=1)
    return until.astimezone(now.tzinfo)


def _due(ctx: Context, kind: str, route: Row) -> str:
    now = ctx.clock.now()
    if kind in URGENT or route["start_min"] is None:
        return stamp(now)
    try:
        until = quiet_until(now, int(route["start_min"]), int(route["end_min"]), str(route["timezone"]))
    except ValueError:
        until = None  # a zone this machine lacks: send rather than hold forever
    return stamp(until or now)


async def enqueue(
    conn: Connection,
    ctx: Context,
    *,
    kind: str,
    event_key: str,
    to: list[int],
    subject: str,
    text: str,
    link: str,
    actor_id: int | None = None,
) -> int:
    """Put one notification per destination of ``to`` (humans) that takes ``kind``; how many.

    Call it inside the event's own write job. ``event_key`` names the event once and for
    all (``"m123"``, ``"crashed:7:<time>"``): the same key enqueues nothing twice.
    ``link`` is the board path to open (``/t/12#m34``); the sender makes it absolute.
    """
    assert kind in KINDS, kind
    humans = sorted({i for i in to if i != actor_id})
    if not humans:
        return 0
    quiet = frozenset() if kind in URGENT else await ctx.quiet.ids(conn)
    held = [i for i in humans if i in quiet]
    notice = store.Outgoing(
        idem_key=event_key,
        destination_id=0,
        kind=kind,
        subject=subject[:MAX_SUBJECT],
        text=text[:MAX_TEXT],
        link=link,
        next_at=stamp(ctx.clock.now()),
    )
    # Those without quiet hours (most, and everyone for an urgent kind): one statement.
    added = await store.enqueue_unheld(conn, humans, held, event_key, notice, ctx.now())
    for route in await store.routes_for(conn, held, kind):
        outgoing = replace(
            notice,
            idem_key=f"{event_key}:{route['id']}",
            destination_id=int(route["id"]),
            next_at=_due(ctx, kind, route),
        )
        added += await store.enqueue(conn, outgoing, ctx.now())
    if added:
        wake()
    return added


def wake() -> None:
    """After this write commits, the dispatcher looks for due rows (call inside the write)."""
    emit(Signal(QUEUED, 0))


async def for_message(
    conn: Connection,
    ctx: Context,
    message: dict[str, Any],
    reasons: dict[int, str],
    author_id: int,
    bots: Collection[int] = (),
) -> None:
    """A posted message's notifications: mentions, DMs and the board's held notices.

    ``bots`` are those of ``reasons`` known to be bots (a bot's post has asked): they hear of
    nothing out of band, so a post among bots names no thread and enqueues nothing.
    """
    by_kind: dict[str, list[int]] = {}
    for agent_id, reason in reasons.items():
        kind = REASON_KINDS.get(reason)
        if kind is not None and agent_id not in bots:
            by_kind.setdefault(kind, []).append(agent_id)
    thread = None
    if by_kind.keys() - {"held"}:  # a mention, DM or hand-off names its thread
        roots = await messages.by_ids(conn, replied_roots([message]))
        thread = thread_names([message], roots).get(message["thread_id"])
    for kind, to in by_kind.items():
        subject, link = message_notice(message, kind, thread)
        await enqueue(
            conn,
            ctx,
            kind=kind,
            event_key=f"m{message['id']}",
            to=to,
            subject=subject,
            text=str(message["body"]),
            link=link,
            actor_id=author_id,
        )


def replied_roots(posted: Collection[dict[str, Any]]) -> list[int]:
    """The ids of the roots :func:`thread_names` needs read: those of the replies among ``posted``."""
    return sorted({int(m["thread_id"]) for m in posted if m["reply_to"] is not None})


def thread_names(posted: Collection[dict[str, Any]], roots: list[Row]) -> dict[int, str]:
    """The names of these messages' threads by thread id: each root's first line. ``roots`` are
    the replies' (:func:`replied_roots`), read by the caller in one query however many replies
    there are (a tab's batch of arrivals); a root of ``posted`` is its own."""
    found = [m for m in posted if m["reply_to"] is None] + list(roots)
    return {int(root["id"]): first_line(str(root["body"])) for root in found}


def message_notice(message: dict[str, Any], kind: str, thread: str | None = None) -> tuple[str, str]:
    """A message's notification title and the board path it opens (out of band and in the tab).

    A budget hold's opens where a human lifts it, as its text says (the bot's page, or
    Workspaces for a workspace's limit); any other opens the message. ``thread``, the
    thread's name (its root's first line), ends the title, so that two notices of one
    channel tell their threads apart in a mailbox.
    """
    hold = (message.get("meta") or {}).get("budget") if kind == "held" else None
    if hold is not None:
        bot = message["meta"]["bot"]
        if hold["scope"] == "bot":
            return f"{bot} is held: a daily budget is spent", f"/a/{bot}"
        return f"The bots of {message['workspace']} are held: a daily budget is spent", "/workspaces"
    where = f"#{message['channel']}" if message["channel"] else "a conversation"
    link = f"/t/{message['thread_id']}#m{message['id']}"
    meta = message.get("meta") or {}
    named = f": {thread}" if thread else ""
    if kind == "mention" and meta.get("claim") == "handoff":  # the board posts it for the giver
        return f"{meta.get('by') or message['author']} handed you a thread in {where}{named}", link
    titles = {
        "mention": f"{message['author']} mentioned you in {where}{named}",
        "dm": f"{message['author']} wrote to you in {where}{named}",
        "held": f"A bot is held in {where}",
    }
    return titles[kind], link


async def everyone(conn: Connection) -> list[int]:
    """The humans who may hear of a board-wide event (a crash, a routine, a review)."""
    return await store.human_ids(conn)
