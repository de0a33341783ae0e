"""The loop guard: bots that answer bots stop waking each other until a human writes.

Every wake costs money, and two bots that mention each other answer each other
for ever. A *hop* is a bot-authored message that follows another with no human
message between; an event the board writes for a bot's act (a claim, a handoff,
a release, done) is that bot's too. At the workspace's ``loop_hops`` hops the
message is *held*: it is written and shown as usual, but it wakes no bot (neither
those it is for nor those watching its channel); humans still get it. Three runs
are counted:

- in a thread, the bot messages at its tail since its last human message;
- between one pair of bots, across threads, within :data:`PAIR_WINDOW_S`: the
  turns taken (a burst one way counts once), since a human last wrote to either;
  once paused, the pair stays paused until a human writes to either;
- between two bots whose daemons both watch a channel (every post there wakes
  each), within :data:`PAIR_WINDOW_S`: their turns in the channel since a human
  last posted there; once paused, until a human posts there. Their posts mention
  nobody, so no inbox holds this run: the board records what each daemon's wake
  stream or long-poll watches (``store/watches.py``), and counts a bot only while a
  daemon waits for it (``last_wait_at``, as delivery's ``unreachable``).

The runs are read from the messages themselves, so they cannot drift: a human
message in the thread (or to either bot, or in the watched channel) ends the run.
The board posts one notice per pause, in the thread, into the humans' inboxes only.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from ..principal import Principal
from ..store import loops as store
from ..store import watches as watch_store
from ..store.connection import Connection
from ..store.rows import WorkspaceRow

PAIR_WINDOW_S = 600
HELD_TAG = "loop-held"
NOTICE_TAG = "loop-paused"  # on every pause's notice (wakes.QUIET_TAGS)


@dataclass(frozen=True)
class Verdict:
    """Whether a bot's message is held, and the notice to post if this one began the pause."""

    held: bool = False
    notice: str | None = None
    notice_tag: str | None = None  # a pair's or a channel's pause: what the guard finds it by again


def tail_run(kinds: list[str]) -> int:
    """How many bot messages end a thread (its author kinds, newest first)."""
    run = 0
    for kind in kinds:
        if kind != "bot":
            break
        run += 1
    return run


async def thread_paused(conn: Connection, workspace: WorkspaceRow, thread_id: int) -> bool:
    """Whether bot messages in this thread are held now."""
    hops = int(workspace["loop_hops"])
    if hops == 0:
        return False
    return tail_run(await store.thread_tail_kinds(conn, thread_id, hops)) >= hops


async def screen(
    conn: Connection,
    ctx: Any,
    workspace: WorkspaceRow,
    author: Principal,
    thread_id: int | None,
    bot_recipients: list[int],
    *,
    event: bool = False,
    channel: tuple[int, str] | None = None,
) -> Verdict:
    """The verdict on a message ``author`` is about to post (in ``thread_id``, None for a root;
    in ``channel``, its id and slug, None in a conversation).

    ``event``: the board writes it for ``author`` (a claim, a handoff...); the thread's
    run counts messages, so it adds none to it, but in a thread paused already it is held
    as the bot's messages there are (the pause's notice says so); the pair's and the
    channel's runs count it.
    """
    hops = int(workspace["loop_hops"])
    if not author.is_bot or hops == 0:
        return Verdict()
    if thread_id is not None:
        run = (0 if event else 1) + tail_run(await store.thread_tail_kinds(conn, thread_id, hops))
        if run >= hops:
            notice = None
            if run == hops and not event:
                notice = (
                    f"Paused: {run} bot messages in a row in this thread with no human. "
                    "Bot messages here wake no bot until a human writes in this thread."
                )
            return Verdict(held=True, notice=notice)
    since = ctx.ago(PAIR_WINDOW_S)
    if channel is not None and _may_watch(author, (int(workspace["id"]), channel[1])):
        waited = ctx.ago(ctx.settings.unreachable_after)
        verdict = await _watchers(conn, workspace, author, channel[0], hops, since, waited)
        if verdict.held:
            return verdict
    if not bot_recipients:  # no pair to screen: the author's inbox is not read
        return Verdict()
    return await _pairs(conn, workspace, author, bot_recipients, hops, since)


async def _pairs(
    conn: Connection,
    workspace: WorkspaceRow,
    author: Principal,
    bot_recipients: list[int],
    hops: int,
    since: str,
) -> Verdict:
    """The verdict of the run between the author and each bot the message is for."""
    mine = await store.recent_inbox(conn, author.agent_id)
    for other in bot_recipients:
        theirs = await store.recent_inbox(conn, other)
        human = max(_last_human(mine), _last_human(theirs))
        low, high = sorted((author.agent_id, other))
        tag = f"loop-pair:{low}-{high}"
        if await store.noticed_since(conn, workspace["id"], tag, human):
            # Paused already, until a human writes to either: what it holds is not in their
            # inboxes to count, and the board's own reminders (a stalled claim's nudge) would
            # otherwise start a new run every time the window passed.
            return Verdict(held=True)
        exchanged = sorted(
            (int(r["id"]), int(r["author_id"]))
            for rows, sender in ((mine, other), (theirs, author.agent_id))
            for r in rows
            if int(r["author_id"]) == sender and int(r["id"]) > human and r["created_at"] >= since
        )
        senders = [sender for _, sender in exchanged]
        ran = "have taken {turns} turns answering each other"
        paused = await _paused(conn, author, other, senders, hops, tag, ran, "writes to one of them")
        if paused is not None:
            return paused
    return Verdict()


def _may_watch(author: Principal, channel: watch_store.Watch) -> bool:
    """Whether ``author``'s daemon may watch ``channel``: no when the watches read with its
    token leave it out, which spares a bot's every post elsewhere the watchers' read."""
    return author.watches is None or channel in author.watches


async def _watchers(
    conn: Connection,
    workspace: WorkspaceRow,
    author: Principal,
    channel_id: int,
    hops: int,
    since: str,
    waited: str,
) -> Verdict:
    """The verdict of the run between the author and each other bot watching the channel, when
    the author watches it too: each one's post there wakes the other. Only bots a daemon waited
    for since ``waited`` (not ``unreachable``) are watching."""
    watching = await watch_store.watching(conn, channel_id, waited)
    if author.agent_id not in watching or len(watching) < 2:
        return Verdict()
    tail = await store.channel_tail(conn, channel_id)
    human = _last_human(tail)
    for other in sorted(watching - {author.agent_id}):
        low, high = sorted((author.agent_id, other))
        tag = f"loop-watch:{channel_id}:{low}-{high}"
        if await store.noticed_since(conn, workspace["id"], tag, human):
            return Verdict(held=True)  # paused already, until a human posts in the channel
        senders = [
            int(r["author_id"])
            for r in reversed(tail)
            if int(r["author_id"]) in (low, high) and int(r["id"]) > human and r["created_at"] >= since
        ]
        ran = "both watch this channel and have taken {turns} turns posting in it"
        paused = await _paused(conn, author, other, senders, hops, tag, ran, "posts in this channel")
        if paused is not None:
            return paused
    return Verdict()


async def _paused(
    conn: Connection,
    author: Principal,
    other: int,
    senders: list[int],
    hops: int,
    tag: str,
    ran: str,
    until: str,
) -> Verdict | None:
    """The pause a run of ``senders`` (oldest first), and now the author, reaches at ``hops``
    turns, with its notice: the two bots, how they ``ran`` (a template of their ``turns``), and
    what a human does to resume them (``until``)."""
    turns = _turns([*senders, author.agent_id])
    if turns < hops:
        return None
    names = " and ".join("@" + name for name in await store.handles(conn, [author.agent_id, other]))
    notice = (
        f"Paused: {names} {ran.format(turns=turns)} within {PAIR_WINDOW_S // 60} min with no human. "
        f"Their messages wake no bot until a human {until}."
    )
    return Verdict(held=True, notice=notice, notice_tag=tag)


def _last_human(rows: list[Any]) -> int:
    """The id a human last wrote to this inbox at, or a lower bound of it: when the scan is full
    and holds none, the human's message is older than all of it, and only what follows counts."""
    human = max((int(r["id"]) for r in rows if r["kind"] == "human"), default=0)
    if human == 0 and len(rows) >= store.PAIR_SCAN:
        return min(int(r["id"]) for r in rows)
    return human


def _turns(senders: list[int]) -> int:
    """How many turns these senders took, oldest first: a burst by one counts once."""
    return 1 + sum(1 for before, after in itertools.pairwise(senders) if before != after)
