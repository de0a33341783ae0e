"""Two ``board serve`` processes on one PostgreSQL database behave as one board.

Every test starts processes A and B on different loopback ports and a fresh copy
of the migrated database, then drives them over HTTP: a claim race split across
both, a long-poll on one woken by a post on the other, compare-and-set writers
on both, a ``since`` reader paging while both post, and while one process holds an id it has
not committed and the other writes after it (the interleaving that breaks a naive id
cursor; it fails with the write lock taken out), a stream on one getting the other's
earlier message before its own later one, a token revoked on one and
refused on the other, a daemon's watches recorded on one screened on the other,
the sweep shared between them, and one request id sent
to both at once. Skipped when BOARD_TEST_STORES leaves out postgresql (the
``pg_cluster`` fixture).
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import psycopg
import pytest

from board.client import BoardAPIError, BoardClient
from board.server.services.tokencache import TTL_SECONDS
from board.server.store.postgres import LISTENER
from tests.support.boardtest import LONG_WAIT, WOKEN_WITHIN, PgDatabase, db_rows, eventually, snapshot
from tests.support.pgcluster import PgCluster
from tests.support.processes import (
    Served,
    add_human,
    board_env,
    command,
    kill,
    longpolls,
    serve,
    wait_healthy,
)

#: Writes are not what these tests measure: the per-token limit is lifted.
UNLIMITED = {"BOARD_WRITE_RATE": "1000000", "BOARD_WRITE_BURST": "1000000"}


@dataclass
class Pair:
    """Processes A and B on one database, and a human's token valid on both."""

    a: Served
    b: Served
    url: str  # the database's
    human: str

    @property
    def where(self) -> PgDatabase:
        return PgDatabase(self.url)

    def processes(self) -> tuple[Served, Served]:
        return self.a, self.b


@contextlib.contextmanager
def two_boards(tmp_path: Path, cluster: PgCluster, template: str, **extra: str) -> Iterator[Pair]:
    """A and B serving a fresh copy of the migrated database; both stopped on the way out."""
    url = cluster.fresh_database(like=template)
    env = board_env(BOARD_DATABASE_URL=url, **UNLIMITED, **extra)
    db = tmp_path / "board.db"  # unused on PostgreSQL: where the state folder would be
    human = add_human(db, "alice", env)
    a = serve(db, env=env)
    b = serve(db, env=env)
    try:
        wait_healthy(a)
        wait_healthy(b)
        yield Pair(a, b, url, human)
    finally:
        kill(a.proc)
        kill(b.proc)
        cluster.drop_database(url)
    for served in (a, b):
        assert "unhandled error" not in served.output()


@pytest.fixture
def pair(tmp_path: Path, pg_cluster: PgCluster, pg_template: str) -> Iterator[Pair]:
    with two_boards(tmp_path, pg_cluster, pg_template) as p:
        yield p


async def workspace_bots(pair: Pair, count: int, workspace: str = "proj") -> list[str]:
    """A workspace and ``count`` bots in it, registered half on A and half on B; their tokens."""
    async with BoardClient(pair.a.url, pair.human) as human:
        await human.create_workspace(workspace, "Project")
        invite = (await human.invite(workspace, uses=count))["invite"]
    tokens = []
    for i in range(count):
        async with BoardClient(pair.processes()[i % 2].url) as anon:
            tokens.append((await anon.register(f"bot{i:02d}", invite))["token"])
    return tokens


def split(pair: Pair, tokens: list[str], session: aiohttp.ClientSession) -> list[BoardClient]:
    """A client per token, every other one on B: the callers are spread across both processes."""
    return [BoardClient(pair.processes()[i % 2].url, t, session=session) for i, t in enumerate(tokens)]


# -- 1. one claim winner ------------------------------------------------------------------

RACERS = 64
ROUNDS = 50


async def claim_status(client: BoardClient, thread: int) -> str:
    try:
        await client.claim(thread)
    except BoardAPIError as exc:
        return f"{exc.status} {exc.code}"
    return "won"


async def test_a_claim_race_across_both_processes_has_one_winner_every_round(pair: Pair) -> None:
    tokens = await workspace_bots(pair, RACERS)
    async with BoardClient(pair.a.url, pair.human) as human, aiohttp.ClientSession() as session:
        racers = split(pair, tokens, session)

        async def thread(i: int) -> int:
            return int((await human.post(f"task {i}", channel="work", workspace="proj"))["id"])

        # What one granted claim writes, measured alone: a race must write exactly that.
        solo = await thread(-1)
        before = snapshot(pair.where)
        assert await claim_status(racers[0], solo) == "won"
        one_claim = {t: n - before[t] for t, n in snapshot(pair.where).items()}

        threads = [await thread(i) for i in range(ROUNDS)]
        before = snapshot(pair.where)
        for round_no, thread_id in enumerate(threads):
            statuses = await asyncio.gather(*(claim_status(r, thread_id) for r in racers))
            assert statuses.count("won") == 1, f"round {round_no}: {statuses.count('won')} winners"
            assert sorted(s for s in statuses if s != "won") == ["409 CLAIMED"] * (RACERS - 1)
        after = snapshot(pair.where)
    assert {t: n - before[t] for t, n in after.items()} == {t: n * ROUNDS for t, n in one_claim.items()}
    held = db_rows(pair.where, "SELECT count(*) FROM claims WHERE state = 'claimed'")
    assert held == [(ROUNDS + 1,)]


# -- 2. a long-poll on B woken by a post on A ------------------------------------------------


async def test_a_long_poll_on_b_returns_with_the_message_posted_on_a(pair: Pair) -> None:
    [bot_token] = await workspace_bots(pair, 1)
    async with (
        BoardClient(pair.a.url, pair.human) as human_a,
        BoardClient(pair.b.url, pair.human) as human_b,
        BoardClient(pair.b.url, bot_token) as bot_b,
    ):
        first = await human_a.post("before the wait", channel="work", workspace="proj")
        since = int(first["id"])
        started = time.monotonic()
        listing = asyncio.create_task(
            human_b.messages(workspace="proj", channel="work", since=since, wait=LONG_WAIT)
        )
        inbox = asyncio.create_task(bot_b.inbox(since=since, wait=LONG_WAIT))
        await longpolls(pair.b.url, 2)
        posted = await human_a.post("@bot00 on A", channel="work", workspace="proj")
        page, mail = await asyncio.wait_for(asyncio.gather(listing, inbox), WOKEN_WITHIN)
        assert time.monotonic() - started < WOKEN_WITHIN
    assert [m["id"] for m in page["messages"]] == [posted["id"]]
    assert [m["id"] for m in mail["messages"]] == [posted["id"]]


async def test_what_commits_while_a_process_cannot_listen_still_wakes_its_waiters(pair: Pair) -> None:
    """B's notification connection drops (the server restarted it, the network cut it), and A
    posts before B listens again: nothing tells B of that message. Once B listens again it
    reads what it missed, so a long-poll held on B all along gets the message, and once."""
    [bot_token] = await workspace_bots(pair, 1)
    async with BoardClient(pair.a.url, pair.human) as human_a, BoardClient(pair.b.url, bot_token) as bot_b:
        since = int((await human_a.post("before the wait", channel="work", workspace="proj"))["id"])
        inbox = asyncio.create_task(bot_b.inbox(since=since, wait=LONG_WAIT))
        await longpolls(pair.b.url, 1)
        with psycopg.connect(pair.url, autocommit=True) as admin:
            dropped = admin.execute(
                """SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                   WHERE datname = current_database() AND application_name = %s""",
                (LISTENER,),
            ).fetchone()
        assert dropped == (2,)  # A's and B's: each process listens on a connection of its own
        posted = await human_a.post("@bot00 while nobody listens", channel="work", workspace="proj")
        mail = await asyncio.wait_for(inbox, WOKEN_WITHIN)
        again = await bot_b.inbox(since=since)
    assert [m["id"] for m in mail["messages"]] == [posted["id"]]
    assert [m["id"] for m in again["messages"]] == [posted["id"]]


async def test_a_stream_on_a_gets_b_s_earlier_message_before_a_s_own_later_one(pair: Pair) -> None:
    """B commits a message, then A commits one, while neither hears the other (their
    notification connections dropped): A learns of B's only when it listens again and reads
    it back. A's own must not reach A's streams first: a daemon's cursor would pass B's id,
    and B's message, published after, would be skipped by the stream and by every reconnect."""
    [bot_token] = await workspace_bots(pair, 1)
    async with (
        BoardClient(pair.a.url, pair.human) as human_a,
        BoardClient(pair.b.url, pair.human) as human_b,
        BoardClient(pair.a.url, bot_token) as bot_a,
    ):
        await human_a.post("opens the channel", channel="work", workspace="proj")
        since = int((await bot_a.me())["cursor"])
        async with await bot_a.wake_stream(since=since, beat=5) as stream:
            await longpolls(pair.a.url, 1)
            with psycopg.connect(pair.url, autocommit=True) as admin:
                admin.execute(
                    """SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                       WHERE datname = current_database() AND application_name = %s""",
                    (LISTENER,),
                )
            earlier = await human_b.post("@bot00 first, on B", channel="work", workspace="proj")
            later = await human_a.post("@bot00 then, on A", channel="work", workspace="proj")
            got: list[int] = []
            with contextlib.suppress(TimeoutError):  # the message lines so far, if not both
                async with asyncio.timeout(WOKEN_WITHIN):
                    async for line in stream:
                        got += [line["message"]["id"]] if "message" in line else []
                        if len(got) == 2:
                            break
    assert got == [earlier["id"], later["id"]]


# -- 3. compare-and-set across both processes -------------------------------------------------

WRITERS = 8
EDITS = 8


async def append_until_written(client: BoardClient, name: str) -> tuple[int, int]:
    """Each edit reads, appends a line, and writes on top of what it read; again on a conflict."""
    written = conflicts = 0
    for i in range(EDITS):
        while True:
            doc = await client.document("log.md")
            try:
                await client.put_document(
                    "log.md", doc["body"] + f"{name} {i}\n", doc["latest_revision"], name
                )
            except BoardAPIError as exc:
                if exc.code != "VERSION_CONFLICT":
                    raise
                conflicts += 1
                continue
            written += 1
            break
    return written, conflicts


async def test_compare_and_set_writers_on_both_processes_lose_no_update(pair: Pair) -> None:
    tokens = await workspace_bots(pair, WRITERS)
    async with aiohttp.ClientSession() as session:
        writers = split(pair, tokens, session)
        await writers[0].put_document("log.md", "# Log\n", 0, "start")
        results = await asyncio.gather(*(append_until_written(w, f"w{n}") for n, w in enumerate(writers)))
        doc = await writers[1].document("log.md")
    written = sum(w for w, _ in results)
    assert written == WRITERS * EDITS
    assert sum(c for _, c in results) > 0, "the writers never collided: the test proved nothing"
    assert doc["latest_revision"] == written + 1
    assert sorted(doc["body"].splitlines()[1:]) == sorted(
        f"w{n} {i}" for n in range(WRITERS) for i in range(EDITS)
    )
    revisions = db_rows(pair.where, "SELECT count(*) FROM kb_revisions")
    assert revisions == [(written + 1,)]


# -- 4. a since reader sees everything once, in id order ---------------------------------------

POSTERS = 4  # per process
POSTS = 40  # per poster


async def test_a_since_reader_on_b_sees_every_message_of_both_processes_once_in_order(pair: Pair) -> None:
    tokens = await workspace_bots(pair, 2 * POSTERS)
    acknowledged: set[int] = set()
    concurrent_reads = 0
    async with aiohttp.ClientSession() as session, BoardClient(pair.b.url, pair.human) as reader:
        posters = split(pair, tokens, session)

        async def post_all(n: int, client: BoardClient) -> None:
            for i in range(POSTS):
                acknowledged.add(int((await client.post(f"p{n} {i}", channel="work"))["id"]))

        async def read_until(done: asyncio.Future[Any]) -> list[int]:
            nonlocal concurrent_reads
            seen: list[int] = []
            since = 0
            while True:
                finished = done.done()  # read after the last post was acknowledged, then stop
                concurrent_reads += not finished
                page = await reader.messages(workspace="proj", channel="work", since=since, limit=7)
                seen += [m["id"] for m in page["messages"]]
                since = seen[-1] if seen else since
                if finished and not page["has_more"]:
                    return seen

        first = await posters[0].post("the channel's first", channel="work")  # the channel exists now
        acknowledged.add(int(first["id"]))
        writing = asyncio.ensure_future(asyncio.gather(*(post_all(n, c) for n, c in enumerate(posters))))
        try:
            seen = await read_until(writing)
        finally:
            writing.cancel()
        await writing
    assert len(acknowledged) == 2 * POSTERS * POSTS + 1
    assert concurrent_reads > 10, "the reader hardly read while the posters wrote"
    assert seen == sorted(set(seen)), "a message was seen twice or out of id order"
    assert set(seen) == acknowledged


async def test_a_reader_never_passes_an_id_a_slower_process_has_not_committed_yet(pair: Pair) -> None:
    """The interleaving that breaks a naive id cursor: A takes id n and stalls before its commit,
    B writes after it (id n + 1, were it free to commit first), and a reader on B pages with
    ``since`` meanwhile. Were n + 1 visible before n, the reader's cursor would pass n and never
    see it. The reader must see every message once, in id order, whatever order the commits
    take. A is stalled for real: a transaction of the test's holds the channel's row, which A's
    insert must share (its foreign key), so A waits holding its id."""
    [bot_a, bot_b] = await workspace_bots(pair, 2)
    async with (
        BoardClient(pair.a.url, bot_a) as poster_a,
        BoardClient(pair.b.url, bot_b) as poster_b,
        BoardClient(pair.b.url, pair.human) as reader,
        await psycopg.AsyncConnection.connect(pair.url, autocommit=True) as db,
    ):
        first = await poster_a.post("opens the channel", channel="work")
        await poster_b.post("opens the other one", channel="other")
        since = int(first["id"])

        async def read() -> list[int]:
            nonlocal since
            page = await reader.messages(workspace="proj", since=since, limit=20)
            ids = [int(m["id"]) for m in page["messages"]]
            since = ids[-1] if ids else since
            return ids

        async def sequence() -> int:
            [(value,)] = await (await db.execute("SELECT last_value FROM messages_id_seq")).fetchall()
            return int(value)

        assert len(await read()) == 1  # the other channel's first; the reader's presence is written
        before = await sequence()
        seen: list[int] = []
        async with db.transaction():
            await db.execute("SELECT 1 FROM channels WHERE slug = 'work' FOR UPDATE")
            stalled = asyncio.create_task(poster_a.post("A: takes its id, then waits", channel="work"))
            await eventually(lambda: _past(sequence, before), "A took its id")
            later = asyncio.create_task(poster_b.post("B: after A's id", channel="other"))
            await eventually(lambda: _blocked_or_done(db, later), "B's post is in the database or done")
            for _ in range(5):  # the reader reads while A's id is taken and not committed
                seen += await read()
                await asyncio.sleep(0.05)
            assert not stalled.done()
        a_post, b_post = await asyncio.wait_for(asyncio.gather(stalled, later), WOKEN_WITHIN)
        seen += await read()
    assert int(a_post["id"]) < int(b_post["id"]), "B's id was taken after A's"
    assert seen == [int(a_post["id"]), int(b_post["id"])], "a message was skipped, repeated or reordered"


async def _past(sequence: Any, before: int) -> bool:
    return bool(await sequence() > before)


async def _blocked_or_done(db: psycopg.AsyncConnection[Any], post: asyncio.Task[Any]) -> bool:
    """B's post has reached the database: it returned, or B's writer waits on a lock."""
    if post.done():
        return True
    cur = await db.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'bot-board'"
        " AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
    )
    [(waiting,)] = await cur.fetchall()
    return int(waiting) >= 2  # A's writer on the channel's row, B's on its turn to write


# -- 5. a token revoked on A is refused on B -------------------------------------------------


async def test_a_token_revoked_through_a_is_refused_on_b_within_seconds(pair: Pair) -> None:
    [token] = await workspace_bots(pair, 1)
    async with BoardClient(pair.a.url, pair.human) as human, BoardClient(pair.b.url, token) as bot_b:
        assert (await bot_b.me())["handle"] == "bot00"  # B has the token cached now
        await human.revoke_token("bot00")

        async def refused() -> bool:
            try:
                await bot_b.me()
            except BoardAPIError as exc:
                assert exc.code == "UNAUTHENTICATED", exc
                return True
            return False

        # B's cache would keep the principal longer: refused within 5 s, B was told of the revoke.
        assert TTL_SECONDS[0] > 5
        await eventually(refused, "B to refuse the token revoked on A", timeout=5, interval=0.05)
        before = snapshot(pair.where)
        with pytest.raises(BoardAPIError) as post:
            await bot_b.post("after the revoke", channel="work")
        assert post.value.code == "UNAUTHENTICATED"
        assert snapshot(pair.where) == before


async def test_a_stream_and_a_long_poll_held_on_b_end_at_once_when_a_revokes_their_token(pair: Pair) -> None:
    """B is told of the revocation, and drops the token, before its held requests hear of it:
    asked again at once, they are refused, not answered from B's cache."""
    [token] = await workspace_bots(pair, 1)
    async with BoardClient(pair.a.url, pair.human) as human, BoardClient(pair.b.url, token) as bot_b:
        since = int((await bot_b.me())["cursor"])
        poll = asyncio.create_task(bot_b.inbox(since=since, wait=LONG_WAIT))  # twice WOKEN_WITHIN
        async with await bot_b.wake_stream(since=since, beat=60) as stream:
            await longpolls(pair.b.url, 2)
            await human.revoke_token("bot00")
            async with asyncio.timeout(WOKEN_WITHIN):
                assert [line async for line in stream] == [{"cursor": since, "end": "revoked"}]
                with pytest.raises(BoardAPIError) as refusal:
                    await poll
        assert refusal.value.code == "UNAUTHENTICATED"
        with pytest.raises(BoardAPIError) as again:
            await bot_b.wake_stream(since=since)
        assert again.value.code == "UNAUTHENTICATED"


async def test_watches_recorded_through_a_reach_the_loop_guard_on_b(pair: Pair) -> None:
    """Both bots' tokens are cached on B from their posts there; then their daemons say on A
    that they watch #ops. B is told to forget the cached principals, so the two bots answering
    each other in #ops through B are paused, not let run on for the cache's life."""
    hops = 4
    tokens = await workspace_bots(pair, 2)
    async with aiohttp.ClientSession() as session:
        human = BoardClient(pair.a.url, pair.human, session=session)
        await human.patch_workspace("proj", loop_hops=hops)
        await human.post("ops is open", channel="ops", workspace="proj")
        on_a = [BoardClient(pair.a.url, t, session=session) for t in tokens]
        on_b = [BoardClient(pair.b.url, t, session=session) for t in tokens]
        for bot in on_b:
            await bot.post("before the daemons", channel="ops", workspace="proj")
        for bot in on_a:  # each daemon's wait, watching #ops
            await bot.wake(watch="ops", limit=1, wait=1)
        sent = [
            await on_b[turn % 2].post(f"status {turn}", channel="ops", workspace="proj")
            for turn in range(2 * hops)
        ]
    held = [turn for turn, m in enumerate(sent) if "loop-held" in m["tags"]]
    assert TTL_SECONDS[0] > 5 and held and held[0] <= hops, held


# -- 6. the sweep releases a stalled claim once ---------------------------------------------

SWEEP = {"BOARD_SWEEP_EVERY": "1", "BOARD_STALL_AFTER": "1", "BOARD_RELEASE_AFTER": "2"}


def swept(served: Served) -> list[int]:
    """The threads a process's sweep released, read from its log's ``sweep: {...}`` lines."""
    released = []
    for line in served.output().splitlines():
        with contextlib.suppress(ValueError):
            msg = str(json.loads(line).get("msg", ""))
            if msg.startswith("sweep: "):  # the report's dict, as Python prints it
                released += ast.literal_eval(msg.removeprefix("sweep: "))["released"]
    return released


async def test_the_sweep_releases_a_stalled_claim_once_with_both_processes_sweeping(
    tmp_path: Path, pg_cluster: PgCluster, pg_template: str
) -> None:
    with two_boards(tmp_path, pg_cluster, pg_template, **SWEEP) as pair:
        [token] = await workspace_bots(pair, 1)
        async with BoardClient(pair.a.url, token) as bot, BoardClient(pair.b.url, pair.human) as human:
            threads = []
            for i in range(2):  # the second is released by later passes, while the first stays released
                thread = int((await human.post(f"task {i}", channel="work", workspace="proj"))["id"])
                await bot.claim(thread)
                threads.append(thread)

                async def released(thread: int = thread) -> bool:
                    return (await human.thread(thread))["claim"]["state"] == "open"

                await eventually(released, f"the sweep to release thread {thread}", timeout=30)
        expired = db_rows(
            pair.where,
            "SELECT thread_id, count(*) FROM claim_events WHERE action = 'expire' GROUP BY thread_id",
        )
        assert sorted(expired) == [(t, 1) for t in threads]
        by_process = swept(pair.a) + swept(pair.b)
        assert sorted(by_process) == threads


# -- 7. a retry sent to the other process is not applied twice --------------------------------

RETRIES = 30


async def post_with_id(client: BoardClient, rid: str) -> str:
    """``posted <id>``, or the refusal's status and code."""
    try:
        _, message = await client.call(
            "POST", "/api/messages", json={"channel": "work", "body": rid, "request_id": rid}
        )
    except BoardAPIError as exc:
        return f"{exc.status} {exc.code}"
    return f"posted {message['id']}"


async def test_one_request_id_sent_to_both_processes_at_once_takes_effect_once(pair: Pair) -> None:
    [token] = await workspace_bots(pair, 1)
    async with aiohttp.ClientSession() as session:
        on_a, on_b = split(pair, [token, token], session)
        for i in range(RETRIES):
            rid = f"twice-{i}"
            answers = set(await asyncio.gather(post_with_id(on_a, rid), post_with_id(on_b, rid)))
            # Both answers name the one message, or the second is told the call took effect.
            [stored] = db_rows(pair.where, "SELECT id FROM messages WHERE body = ?", (rid,))
            assert answers - {"409 REQUEST_ID_REUSE"} == {f"posted {stored[0]}"}, answers


# -- 8. one running run of a routine, whichever process starts it -----------------------------

WAITING_RUNS = 6


async def start_status(client: BoardClient, run_id: int) -> str:
    try:
        await client.start_run("tidy", run_id)
    except BoardAPIError as exc:
        return f"{exc.status} {exc.code}"
    return f"started {run_id}"


async def test_runs_of_one_routine_started_on_both_processes_at_once_start_one(
    pair: Pair, tmp_path: Path
) -> None:
    [token] = await workspace_bots(pair, 1)
    printed = subprocess.run(
        command("admin", "runner-token", "--db", str(tmp_path / "board.db")),
        env=board_env(BOARD_DATABASE_URL=pair.url, **UNLIMITED),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    runner_token = printed.strip().splitlines()[-1]
    async with BoardClient(pair.a.url, pair.human) as human, aiohttp.ClientSession() as session:
        bot = BoardClient(pair.a.url, token, session=session)
        on_a, on_b = split(pair, [runner_token, runner_token], session)
        await bot.propose_routine("tidy", workspace="proj", schedule="0 2 * * *", bot="bot00", prompt="Tidy.")
        await human.approve_version("tidy", 1, "go")
        waiting = [
            (await on_a.create_run("tidy", 1, f"2026-11-{day:02d}T02:00:00Z"))["id"]
            for day in range(1, WAITING_RUNS + 1)
        ]
        while waiting:
            before = snapshot(pair.where)
            statuses = await asyncio.gather(*(start_status(c, r) for r in waiting for c in (on_a, on_b)))
            [won] = [s for s in statuses if s.startswith("started")]
            assert sorted(s for s in statuses if s != won) == ["409 VERSION_CONFLICT"] * (
                2 * len(waiting) - 1
            )
            running = db_rows(pair.where, "SELECT id FROM routine_runs WHERE state = 'running'")
            assert running == [(int(won.split()[1]),)]
            after = snapshot(pair.where)
            assert after["messages"] - before["messages"] == 1  # one prompt posted
            await on_b.finish_run("tidy", running[0][0], "timed_out", "ended for the next round")
            waiting.remove(running[0][0])
