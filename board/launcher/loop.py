"""The wake loop: wait on the board, run one harness turn per batch, account for it.

Two kinds of task share the bot's state:

- the **reader** holds the wake stream (``GET /api/wake/stream?since=<read
  position>``) open, or when it breaks or the board has none long-polls
  ``GET /api/wake?since=...&wait=60`` and tries the stream again a minute later,
  and puts each message it gets in the queue of its **lane** (the bot's one
  session, or in pool mode the session of the message's channel; with
  worktrees, of its thread, also in a pool's project channels);
- each **lane** runs one harness turn at a time for everything queued in it.
  Messages that arrive while its harness runs wait in the queue and make the
  next turn's batch, so nothing is dropped and nothing runs twice at once.

A lane whose queue holds only ``watched`` messages waits a random
0..``BOT_JITTER`` seconds first, so that another bot's claim is visible before
this one acts; a ``for_me`` message ends that wait at once.

As a turn starts the lane sends ``seen`` receipts for the messages addressed
to the bot (while the harness starts, not before it): on the board that is the
message's ``woken`` state. After the turn it records the wake (``POST
/api/wakes``), and only then moves the cursor, which ``state.json`` keeps:
delivery is at least once. The prompt names
the ids it covers (and ``BOARD_WAKE_IDS`` carries them) so a harness that
already answered, in a turn cut short by a crash, can tell.

A failed turn (non-zero exit, an error inside a zero exit, a timeout) is
reported by one reply in the thread of the message that triggered it; the
third failure in a row on a thread releases the bot's claim on it; and the lane
backs off (1 s, 2 s, 4 s ... 5 min) before its next turn. A resume whose
session is gone starts a fresh session once, and says so in the thread.

When the board cannot be reached every call is retried with a capped backoff;
the cursor does not move until the board has the turn's records, and every
write carries a request id, so a retry never posts twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import random
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ..client import BoardAPIError, BoardClient
from ..processes import end_group, same_process, start_time
from .config import BotConfig, ConfigError
from .harnesses import Adapter, TurnRequest, TurnResult
from .harnesses.base import plain, trim
from .logs import EventLog
from .mcp import write_files as write_mcp_files
from .pool import Pool
from .process import ProcessOutcome, child_env, identity_env, run_turn
from .prompt import Prompt, Prompter
from .state import BotState, StateFile
from .threadtrees import ThreadTrees, lane_key, thread_of
from .worktrees import GitError, Repo

T = TypeVar("T")

RELEASE_AFTER = 3  # failures in a row on a thread before its claim is released
RELEASED_NOTE = "I released my claim on it so that someone else can take it."
POOL_CONCURRENCY = 4  # turns at once in pool mode (one per channel)
POOL_REFRESH = 300.0  # seconds between re-reads of the workspace's channels in pool mode
ORPHAN_GRACE = 3.0  # seconds a harness left running by a crashed daemon gets to stop on SIGTERM


class Fatal(Exception):
    """The daemon cannot go on (its token was refused): exit, let the operator act."""


@dataclass(frozen=True)
class Timing:
    """The loop's waits; tests shorten them."""

    wait: int = 60  # long-poll seconds
    beat: int = 20  # the wake stream's heartbeat: three beats of silence and it is dead
    stream_retry: float = 60.0  # the stream broke or is not offered: long-poll this long, then try it again
    retry_first: float = 0.5  # board unreachable: first retry delay ...
    retry_cap: float = 30.0  # ... doubling up to this
    fail_first: float = 1.0  # harness failure: first backoff ...
    fail_cap: float = 300.0  # ... doubling up to this
    batch_max: int = 100  # messages in one turn; the rest make the next
    held_pause: float = 2.0  # held by a budget: seconds between the board's answer and the next poll


def backoff(failures: int, first: float, cap: float) -> float:
    """The delay after ``failures`` failures in a row: first, 2*first, ... capped."""
    if failures <= 0:
        return 0.0
    return min(cap, first * 2.0 ** min(failures - 1, 32))


def jitter_delay(
    batch: Sequence[Mapping[str, Any]], jitter: float, uniform: Callable[[float, float], float]
) -> float:
    """How long to wait before a turn: 0 if anything is for the bot, else random 0..jitter."""
    if not batch or jitter <= 0 or any(m.get("for_me") for m in batch):
        return 0.0
    return uniform(0.0, jitter)


def wake_outcome(result: TurnResult, outcome: ProcessOutcome | None) -> str:
    """The outcome word of POST /api/wakes for a turn."""
    if result.ok:
        return "ok"
    if result.error_kind in ("timeout", "silent"):
        return "timeout"
    if outcome is None:
        return "error"  # never started
    return "failed"


def _same_hold(one: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
    """Two answers of one hold: the same limit reached, whatever was spent since."""
    return all(one.get(k) == other.get(k) for k in ("source", "measure", "limit", "resets_at"))


def iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def no_mentions(text: str) -> str:
    """Text that wakes nobody when posted: '@' followed by a zero-width space."""
    return text.replace("@", "@\u200b")


def failure_text(
    harness: str,
    result: TurnResult,
    outcome: ProcessOutcome | None,
    count: int,
    released: bool = False,
) -> str:
    """The one reply a failed turn posts in its thread: how the harness ended, then what it said."""
    ended = result.exit
    if ended is None:
        what = "could not be started"
    elif ended.stopped:
        # The silence limit is the less obvious of the two: name its setting.
        setting = " (BOT_SILENT_TIMEOUT)" if result.error_kind == "silent" else ""
        what = f"{ended.stopped}{setting} and was stopped"
    elif ended.killed:
        what = f"was {ended}" + (f" after {round(ended.after, 1):g} s" if ended.after is not None else "")
    elif ended.code != 0:
        what = f"failed ({ended})"
    else:
        what = f"exited 0 but reported a failure ({result.error_kind})"
    lines = [f"My {harness} turn {what}."]
    if result.error:
        lines.append(f"Error: {trim(result.error, 3, 500)}")
    tail = outcome.stderr_tail(max_lines=12, max_chars=1500) if outcome is not None else ""
    if tail and (not result.error or tail not in result.error):
        lines.append("Last lines of stderr:\n```\n" + tail.replace("```", "'''") + "\n```")
    if count > 1:
        lines.append(f"{count} failures in a row on this thread.")
    if released:
        lines.append(RELEASED_NOTE)
    return no_mentions("\n".join(lines))


class TurnRunner(Protocol):
    async def __call__(
        self,
        adapter: Adapter,
        req: TurnRequest,
        *,
        cwd: str | os.PathLike[str],
        env: Mapping[str, str],
        timeout: float,
        silent_timeout: float,
        on_start: Callable[[int], object] | None,
    ) -> tuple[TurnResult, ProcessOutcome | None]: ...


#: Reads the watch and goal the bot's profile gives now (``config.wake_filters``).
Rescope = Callable[[], Awaitable[tuple[tuple[str, ...], int | None]]]


@dataclass
class Lane:
    """One harness session and the messages waiting for its next turn."""

    key: str
    cwd: Path
    queue: list[dict[str, Any]] = field(default_factory=list)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    urgent: asyncio.Event = field(default_factory=asyncio.Event)  # a for_me message is queued
    task: asyncio.Task[None] | None = None
    busy: bool = False
    thread: int | None = None  # with worktrees: the lane's thread
    channel: str | None = None  # pool mode with worktrees: the project channel whose checkout it takes
    closing: bool = False  # with worktrees: the thread's claim ended; close once the queue is empty

    def put(self, message: dict[str, Any]) -> None:
        self.queue.append(message)
        self.ready.set()
        if message.get("for_me"):
            self.urgent.set()

    def take(self, limit: int) -> list[dict[str, Any]]:
        batch, self.queue = self.queue[:limit], self.queue[limit:]
        if not self.queue:
            self.ready.clear()
        if not any(m.get("for_me") for m in self.queue):
            self.urgent.clear()
        return batch


@dataclass
class Run:
    """One harness run of a turn."""

    result: TurnResult
    outcome: ProcessOutcome | None
    started_at: float
    ended_at: float
    turn_id: str  # names its wake record, failure reply and in-flight entry (request ids)


class Bot:
    """One bot's loop. ``await Bot(...).run(stop)`` until stop is set."""

    def __init__(
        self,
        cfg: BotConfig,
        client: BoardClient,
        adapter: Adapter,
        *,
        log: EventLog,
        state_file: StateFile,
        pool: Pool | None = None,
        skills_note: str = "",
        timing: Timing = Timing(),
        runner: TurnRunner = run_turn,
        uniform: Callable[[float, float], float] = random.uniform,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rescope: Rescope | None = None,
    ) -> None:
        self.cfg = cfg
        #: The watch and goal as the profile now gives them (config.wake_filters), read once the
        #: board holds each stream (:meth:`read_stream`); None: the daemon runs with no profile.
        self.rescope = rescope
        self.client = client
        self.adapter = adapter
        self.log = log
        self.state_file = state_file
        self.pool = pool
        self.skills_note = skills_note
        self.timing = timing
        self.runner = runner
        self.uniform = uniform
        self.sleep = sleep
        self.state = BotState()
        self.workspace = ""
        self.read_position = 0
        self.pending: set[int] = set()
        self.arrived: dict[int, float] = {}
        self.lanes: dict[str, Lane] = {}
        self.trees: ThreadTrees | None = None
        if cfg.worktrees:
            self.trees = ThreadTrees(
                None if pool else Repo(cfg.repo),
                handle=cfg.handle,
                base=cfg.base_branch,
                most=cfg.max_worktrees,
                client=client,
                call=self.call,
                log=log,
                state=lambda: self.state,
                save=self.save,
            )
        self.slots = asyncio.Semaphore(
            POOL_CONCURRENCY if pool else cfg.max_worktrees if cfg.worktrees else 1
        )
        self.prompter: Prompter | None = None
        self.fatal: BaseException | None = None
        self._stop: asyncio.Event | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._abort = asyncio.Event()
        self.stopping = False

    def abort(self) -> None:
        """Stop now: running turns are not given their grace (a second SIGTERM)."""
        self._abort.set()

    # -- the board, with retries ----------------------------------------------------

    async def call(self, what: str, fn: Callable[[], Awaitable[T]]) -> T:
        """fn() until the board answers; while it cannot be reached, back off and retry."""
        attempt = 0
        while True:
            try:
                return await fn()
            except BoardAPIError as exc:
                if exc.code == "UNAUTHENTICATED" and not await self.token_stands():
                    raise Fatal(f"the board refused the bot's token ({exc.message})") from exc
                if not (exc.code in ("UNAUTHENTICATED", "UNAVAILABLE", "RATE_LIMITED") or exc.retryable):
                    raise
                attempt += 1
                delay = exc.retry_after or backoff(attempt, self.timing.retry_first, self.timing.retry_cap)
                if attempt == 1 or attempt % 10 == 0:
                    self.log.event("board_retry", call=what, code=exc.code, attempt=attempt, delay_s=delay)
                await self.sleep(delay)

    async def token_stands(self) -> bool:
        """Whether the bot's token still signs it in, after a call was refused as unauthenticated:
        a long-poll held while its bot moved to another workspace is refused so (what it waited
        for was the old workspace's), and is asked again; a revoked token stops the daemon."""
        try:
            await self.client.me()
        except BoardAPIError as exc:
            return exc.code != "UNAUTHENTICATED"
        return True

    def save(self) -> None:
        self.state_file.save(self.state)

    # -- start and stop ---------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """The loop, until stop is set; then let running turns finish, up to the grace."""
        self._stop = stop
        stopper = asyncio.ensure_future(stop.wait())
        starting = asyncio.ensure_future(self.start())
        await asyncio.wait({starting, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if not starting.done():  # stopped while the board could not be reached
            starting.cancel()
            await asyncio.gather(starting, return_exceptions=True)
            self.log.event("stopped", cursor=self.state.cursor)
            return
        starting.result()  # Fatal: the token was refused
        reader = self.spawn(self.read_loop())
        try:
            await asyncio.wait({reader, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if reader.done() and not reader.cancelled() and self.fatal is None:
                self.fatal = reader.exception()
        finally:
            stopper.cancel()
            await self.shutdown()
        if self.fatal is not None:
            raise self.fatal

    async def start(self) -> None:
        """Who the bot is, its state, turns a crash cut short, and (pool) its checkouts."""
        me = await self.call("me", self.client.me)
        self.workspace = str(me.get("workspace") or "")
        self.state = self.state_file.load()
        if forgotten := self.state.take_harness(self.cfg.harness):
            self.log.event("sessions_forgotten", harness=self.cfg.harness, sessions=forgotten)
        if self.state.watch_from is None:
            # A new bot: what was said in watched channels before it existed is history.
            self.state.watch_from = int(me.get("cursor") or 0)
        self.read_position = self.state.cursor
        await self.recover()
        self.save()
        self.prompter = Prompter(self.client, handle=self.cfg.handle, tools=self.cfg.mcp is not None)
        if self.cfg.mcp is not None:
            write_mcp_files(self.cfg.mcp)
        if self.pool is not None:
            await self.pool.try_refresh()
            self.spawn(self.refresh_loop())
        if self.trees is not None:
            await self.adopt_worktrees(self.trees)
        self.log.event(
            "started",
            harness=self.cfg.harness,
            cursor=self.state.cursor,
            workspace=self.workspace,
            pool=str(self.pool.root) if self.pool else None,
            watch=list(self.watch()),
        )

    async def adopt_worktrees(self, trees: ThreadTrees) -> None:
        """The worktrees of a run before this one: adopted, and closed if their thread has ended."""
        if self.pool is not None:
            for channel in self.pool.watch():  # the project channels' checkouts
                try:
                    await trees.register(self.pool.root / channel)
                except GitError as exc:
                    self.log.event("worktree_failed", channel=channel, error=str(exc))
        for thread in await trees.adopt():
            if await trees.claim_ended(thread, self.state.worktrees[str(thread)]):
                self.close_later(thread)

    def spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None and self.fatal is None:
            self.fatal = exc
            if not isinstance(exc, Fatal):
                self.log.event("crashed", error=f"{type(exc).__name__}: {exc}")
            if self._stop is not None:
                self._stop.set()

    async def shutdown(self) -> None:
        """Stop reading; give running turns the grace to finish, then abort them."""
        self.stopping = True
        lanes = [lane.task for lane in self.lanes.values() if lane.task is not None]
        busy = [lane.task for lane in self.lanes.values() if lane.busy and lane.task is not None]
        for task in [*self._tasks, *lanes]:
            if task not in busy:
                task.cancel()
        if busy and self.fatal is None and not self._abort.is_set():
            self.log.event("stopping", running_turns=len(busy), grace_s=self.cfg.stop_grace)
            aborted = asyncio.create_task(self._abort.wait())
            deadline = asyncio.get_running_loop().time() + self.cfg.stop_grace
            while not aborted.done() and not all(t.done() for t in busy):
                left = deadline - asyncio.get_running_loop().time()
                if left <= 0:
                    break
                await asyncio.wait([*busy, aborted], timeout=left, return_when=asyncio.FIRST_COMPLETED)
            aborted.cancel()
        unfinished = [t for t in busy if not t.done()]
        if unfinished:
            self.log.event("aborting", running_turns=len(unfinished))
        for task in unfinished:
            task.cancel()
        await asyncio.gather(*self._tasks, *lanes, return_exceptions=True)
        self.save()
        self.log.event("stopped", cursor=self.state.cursor)

    async def recover(self) -> None:
        """Turns a crash cut short. One whose harness had finished gets its records
        finished and is not run again; one whose harness was still running has the
        harness ended (it outlives the daemon in its own process group), is recorded
        as interrupted, and runs again with a note saying so."""
        for key, info in list(self.state.inflight.items()):
            ids = [int(i) for i in info.get("ids", [])]
            if info.get("done"):
                await self.finish(info)
                self.state.mark_handled(ids, self.state.cursor, set())
                self.state.inflight.pop(key, None)
                self.save()
                continue
            pid = int(info.get("pid") or 0)
            if pid and same_process(pid, info.get("create_time")):
                await end_group(pid, ORPHAN_GRACE)
                self.log.event("orphan_killed", lane=key, pid=pid)
            started = float(info.get("started_at") or time.time())
            if ids:
                await self.record_wake(
                    str(info.get("turn_id") or f"{ids[-1]}-{int(started)}"),
                    ids,
                    harness=self.cfg.harness,
                    session_id=info.get("session"),
                    started_at=iso(started),
                    ended_at=iso(time.time()),
                    outcome="error",
                    error="interrupted: the bot daemon stopped during this turn; its messages run again",
                )
                self.state.interrupted[key] = ids
            self.state.inflight.pop(key, None)

    # -- reading ------------------------------------------------------------------------

    def watch(self) -> tuple[str, ...]:
        return tuple(self.pool.watch()) if self.pool is not None else self.cfg.watch

    async def read_loop(self) -> None:
        """Read the wake stream; while it cannot be had (it broke, or an older board has none),
        long-poll, and try the stream again ``stream_retry`` seconds later."""
        stream_from = 0.0  # monotonic time from which the stream is tried again
        while True:
            if time.monotonic() >= stream_from:
                try:
                    await self.read_stream()
                    continue  # the board ended it (backlog past the limit, a lift, a restart): reconnect
                except BoardAPIError as exc:
                    if exc.code == "UNAUTHENTICATED":
                        raise Fatal(f"the board refused the bot's token ({exc.message})") from exc
                    stream_from = time.monotonic() + self.timing.stream_retry
                    self.log.event(
                        "stream_fallback", code=exc.code, error=exc.message, retry_s=self.timing.stream_retry
                    )
            # The long-poll ends by the time the stream is due again.
            await self.poll_once(max(1, min(self.timing.wait, math.ceil(stream_from - time.monotonic()))))

    def feed_filters(self) -> tuple[list[str], int | None]:
        """The watch and goal the feed is asked for: a pool's projects' channels, else the bot's."""
        return list(self.watch()), (self.cfg.goal if self.pool is None else None)

    async def read_stream(self) -> None:
        """Hold the wake stream until the board ends it: each message as it is published, the
        cursor moving as the long-poll's would. A break raises (UNAVAILABLE) to fall back.

        A stream's first line is ``held`` when the board holds the bot; any other first line
        says it does not, so a hold kept from before (it ended while the daemon was away, or
        the stream broke) ends here, as a long-poll's unheld answer ends it.

        The stream is opened again when the watch or goal it was opened with moved
        (``stream_rewatch``), looked at once it opens, at every beat, and at a line a beat
        after the last look: a pool's watch list moves with its projects
        (:meth:`refresh_loop`), and a profile's watch and goal with the profile. A daemon run
        with a profile reads it once the board holds the stream (its answer began), and at
        every beat until that read succeeds: a change committed before then is read there,
        and one after ends the stream ``rescoped``, so none is missed however the last stream
        ended or the daemon waited meanwhile."""
        watch, goal = opened = self.feed_filters()
        stream = await self.client.wake_stream(
            since=self.read_position,
            limit=self.timing.batch_max,
            watch=watch,
            goal=goal,
            beat=self.timing.beat,
        )
        self.log.event("streaming", since=self.read_position)
        owed = self.rescope is not None

        async def moved() -> bool:
            nonlocal owed
            if owed:
                owed = not await self.follow_profile()
            if (now := self.feed_filters()) != opened:
                self.log.event("stream_rewatch", watch=now[0], goal=now[1])
                return True
            return False

        ended, first = None, True
        look_again = time.monotonic() + self.timing.beat  # the list costs a look at each checkout
        async with stream:
            if await moved():
                return
            async for line in stream:
                if first and "held" not in line:
                    self.note_hold(None)
                first = False
                if "message" in line:
                    self.receive([line["message"]])
                elif "held" in line:
                    self.note_hold(line["held"])  # the stream beats until the hold ends, then ends
                elif "end" in line:
                    ended = line["end"]
                    if ended == "lifted":
                        self.note_hold(None)
                if ended is None and ("beat" in line or time.monotonic() >= look_again):
                    look_again = time.monotonic() + self.timing.beat
                    if await moved():
                        return
        if ended is None:  # cut short without its end line (a proxy?): not a stream to retry at once
            raise BoardAPIError(
                0, "UNAVAILABLE", "the wake stream ended without its end line", retryable=True
            )

    async def follow_profile(self) -> bool:
        """Take the watch and goal the profile gives now; whether it could be read. Unread (the
        board unreachable, the profile gone or refused), the daemon keeps what it had and logs
        why."""
        if self.rescope is None:
            return True
        try:
            watch, goal = await self.rescope()
        except (BoardAPIError, ConfigError) as exc:
            self.log.event("rescope_failed", error=str(exc))
            return False
        if (watch, goal) != (self.cfg.watch, self.cfg.goal):
            self.cfg = replace(self.cfg, watch=watch, goal=goal)
            self.log.event("rescoped", watch=list(watch), goal=goal)
        return True

    async def poll_once(self, wait: int) -> None:
        """One long-poll of the wake feed, up to ``wait`` s, retried while the board cannot be reached."""
        since = self.read_position
        watch, goal = self.feed_filters()
        try:
            page = await self.call(
                "wake",
                lambda: self.client.wake(
                    since=since, wait=wait, limit=self.timing.batch_max, watch=watch, goal=goal
                ),
            )
        except BoardAPIError as exc:  # not a bot's token, a goal out of scope, ...
            raise Fatal(f"the board refused the wake feed: {exc.code}: {exc.message}") from exc
        if self.note_hold(page.get("held")):
            # The board long-polled while held and answers at once on a lift: this pause
            # only bounds the polls of a board that answers held at once.
            await self.sleep(self.timing.held_pause)
            return
        self.receive(page.get("messages") or [])

    def receive(self, messages: list[dict[str, Any]]) -> None:
        """Dispatch what the feed sent, and move the read position past it."""
        messages = sorted(messages, key=lambda m: int(m["id"]))
        now = time.monotonic()
        for message in messages:
            self.dispatch(message, now)
        if messages:
            self.read_position = max(self.read_position, int(messages[-1]["id"]))
            if not self.pending:
                self.state.mark_handled([], self.read_position, self.pending)
                self.save()

    def note_hold(self, held: dict[str, Any] | None) -> bool:
        """Whether the board holds the bot's wakes; logs (and keeps in its state) each hold once."""
        before = self.state.held
        if before is None or held is None:
            if before is held:
                return False
        elif _same_hold(held, before):
            return True
        if held is None:
            assert before is not None
            self.log.event("hold_ended", measure=before.get("measure"))
        else:
            self.log.event(
                "held",
                reason=held.get("reason"),
                which=held.get("which"),
                measure=held.get("measure"),
                limit=held.get("limit"),
                spent=held.get("spent"),
                resets_at=held.get("resets_at"),
            )
        self.state.held = held
        self.save()
        return held is not None

    def dispatch(self, message: dict[str, Any], arrived: float) -> None:
        """Queue a message in its lane, or pass over it (see skip)."""
        mid = int(message["id"])
        if mid <= self.state.cursor or mid in self.pending or mid in self.state.handled:
            return
        ended = self.trees.ends_claim(message) if self.trees is not None else None
        if ended is not None:  # the bot's own act too: look before skipping it
            if self.trees is not None and self.trees.has(ended):
                self.close_later(ended)
            # Closing is all the event asks: a turn of its own would cost a wake, and, run
            # after the close, would check the ended thread's worktree out again.
            return
        if self.skip(message):
            return
        key = self.pool.key(message) if self.pool is not None else ""
        if self.trees is not None and (self.pool is None or self.pool.is_project(key)):
            lane = self.lane(lane_key(thread_of(message)), thread_of(message))
            lane.channel = lane.channel or (key if self.pool is not None else None)
        else:
            lane = self.lane(key)
        self.pending.add(mid)
        self.arrived[mid] = arrived
        lane.put(message)
        if self.pool is not None and not self.pool.knows(key):
            self.spawn(self.pool.try_refresh())

    def skip(self, message: Mapping[str, Any]) -> bool:
        """Messages that are not work: the bot's own, the board's events about the
        bot's own acts, watched history from before the bot's first start, and in
        pool mode watched posts in a channel that is not a project."""
        if message.get("author") == self.cfg.handle:
            return True
        if message.get("for_me"):
            return False
        meta = message.get("meta") or {}
        if message.get("kind") == "event" and isinstance(meta, dict) and meta.get("by") == self.cfg.handle:
            return True
        if self.state.watch_from is not None and int(message["id"]) <= self.state.watch_from:
            return True
        return self.pool is not None and not self.pool.is_project(self.pool.key(message))

    def close_later(self, thread: int) -> None:
        """Close the thread's worktree once its lane has nothing queued."""
        lane = self.lane(lane_key(thread), thread)
        lane.closing = True
        lane.ready.set()

    def lane(self, key: str, thread: int | None = None) -> Lane:
        lane = self.lanes.get(key)
        if lane is None:
            # A thread's lane runs in its worktree (given before each turn), not in a folder named for it.
            cwd = self.pool.cwd(key) if self.pool is not None and thread is None else self.cfg.repo
            lane = self.lanes[key] = Lane(key, cwd, thread=thread)
            lane.task = asyncio.ensure_future(self.lane_loop(lane))
            lane.task.add_done_callback(self._task_done)
        return lane

    async def refresh_loop(self) -> None:
        assert self.pool is not None
        while True:
            await asyncio.sleep(POOL_REFRESH)
            await self.pool.try_refresh()

    # -- turns --------------------------------------------------------------------------

    async def lane_loop(self, lane: Lane) -> None:
        while True:
            await lane.ready.wait()
            if lane.thread is not None and not lane.queue:  # a thread's lane: worktrees are on
                lane.ready.clear()
                if await self.close_lane(lane):
                    return
                continue
            failures = self.state.failures.get(lane.key, 0)
            if failures:
                await self.sleep(backoff(failures, self.timing.fail_first, self.timing.fail_cap))
            delay = jitter_delay(lane.queue, self.cfg.jitter, self.uniform)
            if delay > 0:
                self.log.event("jitter", lane=lane.key, delay_s=round(delay, 3))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(lane.urgent.wait(), delay)
            if lane.thread is not None and not await self.worktree_for(lane):
                continue
            batch = lane.take(self.timing.batch_max)
            if not batch:
                continue
            async with self.slots:
                lane.busy = True
                try:
                    await self.turn(lane, batch)
                finally:
                    lane.busy = False
            if self.trees is not None and lane.thread is not None:
                session = self.state.sessions.get(lane.key)
                lane.closing = await self.trees.after_turn(lane.thread, session) or lane.closing
                if not lane.queue and await self.close_lane(lane):
                    return
            if self.stopping:
                return

    async def worktree_for(self, lane: Lane) -> bool:
        """Give the lane its thread's worktree (waiting for room); False: it failed, back off."""
        assert self.trees is not None and lane.thread is not None
        try:
            checkout = None
            if self.pool is not None and lane.channel is not None:
                checkout = await self.trees.register(self.pool.root / lane.channel)
            lane.cwd = await self.trees.acquire(lane.thread, checkout)
        except GitError as exc:
            self.log.event("worktree_failed", thread=lane.thread, error=str(exc))
            failures = self.state.failures[lane.key] = self.state.failures.get(lane.key, 0) + 1
            if failures == 1:  # the thread says why its messages wait, once per run of failures
                await self.trees.failed(lane.thread, str(exc))
            return False
        return True

    async def close_lane(self, lane: Lane) -> bool:
        """A closing lane with nothing queued: close its worktree and end the lane; whether it ended."""
        assert self.trees is not None
        if not lane.closing or lane.thread is None:
            return False
        thread = lane.thread

        async def post(body: str, reply_to: int, request_id: str) -> None:
            await self.post(no_mentions(body), reply_to=reply_to, request_id=request_id)

        await self.trees.close(thread, post)
        lane.closing = False
        if lane.queue:  # a message came while it closed: the lane goes on (a kept worktree is reused)
            return False
        self.lanes.pop(lane.key, None)
        return True

    async def turn(self, lane: Lane, batch: list[dict[str, Any]]) -> None:
        """One batch: prompt, harness run (and a fresh session once if it is gone), records."""
        assert self.prompter is not None
        ids = [int(m["id"]) for m in batch]
        mine = [m for m in batch if m.get("for_me")]
        trigger = (mine or batch)[-1]
        thread = int(trigger.get("thread_id") or trigger["id"])
        notes = []
        interrupted = sorted(set(ids) & {i for v in self.state.interrupted.values() for i in v})
        if interrupted:
            notes.append(
                f"Note from the bot daemon: a turn on messages {', '.join(map(str, interrupted))} was "
                "interrupted (the daemon restarted). Parts of it may have run: check their threads "
                "before acting again."
            )
        session = self.state.sessions.get(lane.key)
        rotated = self.rotation(lane.key) if session else None
        if rotated is not None:
            use = self.state.session_use.pop(lane.key, {})
            self.log.event(
                "session_rotated",
                lane=lane.key,
                session=session,
                reason=rotated,
                turns=use.get("turns"),
                tokens=use.get("tokens"),
            )
            self.state.sessions.pop(lane.key, None)
            session = None
        run = await self.run_once(lane, batch, ids, session, notes, handoff=rotated is not None)
        if run is None:
            return
        if run.result.error_kind == "session_gone" and session:
            await self.record_wake(run.turn_id, ids, **self.wake_fields(run))
            self.log.event("session_gone", lane=lane.key, session=session)
            self.state.sessions.pop(lane.key, None)
            await self.post(
                no_mentions(
                    f"My {self.cfg.harness} session {session} no longer exists; "
                    "I am starting a fresh session, without the earlier context."
                ),
                reply_to=int(trigger["id"]),
                request_id=f"gone-{run.turn_id}",
            )
            notes = [*notes, "Your earlier session was lost; this is a fresh session."]
            again = await self.run_once(lane, batch, ids, None, notes)
            if again is None:
                return
            run = again
        if run.result.session_id:
            self.state.sessions[lane.key] = run.result.session_id
            self.count_use(lane.key, run.result)
        wake = self.wake_fields(run) | {"rotated": rotated}
        report: dict[str, Any] | None = None
        answer: dict[str, Any] | None = None
        if run.result.ok:
            self.state.failures.pop(lane.key, None)
            for m in batch:
                self.state.thread_failures.pop(str(m.get("thread_id") or m["id"]), None)
            if self.adapter.answers_on_stdout:
                answer = await self.stdout_answer(run.result.text, int(trigger["id"]), thread, max(ids))
        else:
            self.state.failures[lane.key] = self.state.failures.get(lane.key, 0) + 1
            count = self.state.note_thread_failure(thread)
            report = {
                "reply_to": int(trigger["id"]),
                "thread": thread,
                "count": count,
                "body": failure_text(self.cfg.harness, run.result, run.outcome, count),
            }
        self.state.last_wake = {
            "at": iso(run.ended_at),
            "lane": lane.key,
            "trigger_ids": ids,
            "outcome": wake["outcome"],
            "session_id": run.result.session_id,
            "duration_s": round(run.ended_at - run.started_at, 3),
            "cost_usd": wake["cost_usd"],
        }
        # The harness is done: from here a crash must not run it again, only finish the records.
        self.state.inflight[lane.key] = {
            "turn_id": run.turn_id,
            "ids": ids,
            "done": True,
            "wake": wake,
            "answer": answer,
            "report": report,
        }
        self.save()
        await self.finish(self.state.inflight[lane.key])
        self.complete(lane, ids)

    async def finish(self, done: dict[str, Any]) -> None:
        """A finished turn's records: the wake, the answer, and the failure report."""
        turn_id, ids = str(done["turn_id"]), [int(i) for i in done["ids"]]
        await self.record_wake(turn_id, ids, **done["wake"])
        answer = done.get("answer")
        if answer:
            reply_to = int(answer["reply_to"])
            await self.post(str(answer["body"]), reply_to=reply_to, request_id=f"answer-{turn_id}")
        report = done.get("report")
        if report:
            body = str(report["body"])
            if int(report["count"]) >= RELEASE_AFTER and await self.release(
                int(report["thread"]), int(report["count"]), turn_id
            ):
                body += "\n" + RELEASED_NOTE
            await self.post(
                self.log.redact(body), reply_to=int(report["reply_to"]), request_id=f"fail-{turn_id}"
            )

    def rotation(self, key: str) -> str | None:
        """Why the lane's session must give way to a fresh one ("turns", "tokens"), or None."""
        use = self.state.session_use.get(key)
        if use is None or use.get("session") != self.state.sessions.get(key):
            return None
        turns, tokens = self.cfg.rotate_after_turns, self.cfg.rotate_after_tokens
        if turns is not None and int(use.get("turns", 0)) >= turns:
            return "turns"
        if tokens is not None and int(use.get("tokens", 0)) >= tokens:
            return "tokens"
        return None

    def count_use(self, key: str, result: TurnResult) -> None:
        """One more turn of the lane's session, and its length: what its next turn re-reads."""
        use = self.state.session_use.get(key)
        if use is None or use.get("session") != result.session_id:
            use = {"session": result.session_id, "turns": 0, "tokens": 0}
        use["turns"] = int(use["turns"]) + 1
        if result.input_tokens is not None or result.output_tokens is not None:
            use["tokens"] = (result.input_tokens or 0) + (result.output_tokens or 0)
        self.state.session_use[key] = use

    async def run_once(
        self,
        lane: Lane,
        batch: list[dict[str, Any]],
        ids: list[int],
        session: str | None,
        notes: list[str],
        *,
        handoff: bool = False,
    ) -> Run | None:
        """The harness run on batch; None when the board refuses its prompt (the batch is dropped)."""
        assert self.prompter is not None
        first = session is None
        if first and self.skills_note:
            notes = [*notes, self.skills_note]
        try:
            prompt: Prompt = await self.call(
                "prompt",
                lambda: self.prompter.build(batch, first, notes, handoff=handoff),  # type: ignore[union-attr]
            )
        except BoardAPIError as exc:
            # A trigger the board no longer shows the bot (out of its reach since it was
            # delivered): there is nothing the bot may be told about it, so no turn runs.
            self.log.event("prompt_refused", lane=lane.key, ids=ids, code=exc.code, error=exc.message)
            self.complete(lane, ids)
            return None
        req = TurnRequest(
            prompt=prompt.text,
            session_id=session,
            model=self.cfg.model,
            flags=self.cfg.mcp.flags if self.cfg.mcp else (),
            fresh_session_id=None if session else str(uuid.uuid4()),
        )
        env = child_env(
            self.cfg.environ,
            identity_env(self.cfg.board_url, self.cfg.token, self.cfg.handle, self.workspace, ids),
        )
        if self.cfg.mcp is not None:
            env.update(self.cfg.mcp.env)
        newest = max(ids)
        turn_id = uuid.uuid4().hex

        def on_start(pid: int) -> None:
            now_wall, now_mono = time.time(), time.monotonic()
            fields: dict[str, Any] = {
                "lane": lane.key,
                "pid": pid,
                "ids": ids,
                "resume": session is not None,
                "prompt_bytes": len(prompt.text.encode()),
                "wake_to_start_ms": round((now_mono - self.arrived.get(newest, now_mono)) * 1000, 1),
            }
            created = next((m.get("created_at") for m in batch if int(m["id"]) == newest), None)
            if isinstance(created, str):
                with contextlib.suppress(ValueError):
                    posted = datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp()
                    # The board stores seconds: this is within a second of the truth.
                    fields["post_to_start_ms"] = round((now_wall - posted) * 1000)
            self.log.event("turn_started", **fields)
            # Saved so that a daemon killed during the turn can end this harness at its next start.
            self.state.inflight[lane.key] = {
                "pid": pid,
                "create_time": start_time(pid),
                "turn_id": turn_id,
                "ids": ids,
                "session": session,
                "started_at": now_wall,
            }
            self.save()

        started = time.time()
        # The turn starts: its messages for the bot are seen (woken, on the board) while the
        # harness starts, so the receipt adds no wait to the turn. It replaces the receipt
        # sent after the turn: no request is added.
        seen = asyncio.ensure_future(self.receipts([int(m["id"]) for m in batch if m.get("for_me")]))
        try:
            result, outcome = await self.runner(
                self.adapter,
                req,
                cwd=lane.cwd,
                env=env,
                timeout=self.cfg.turn_timeout,
                silent_timeout=self.cfg.silent_timeout,
                on_start=on_start,
            )
        except ValueError as exc:  # the adapter refused the request (prompt too big, ...)
            result = TurnResult(False, session, "", "exit", str(exc), None, None, None)
            outcome = None
        except asyncio.CancelledError:
            seen.cancel()
            raise
        await seen
        ended = time.time()
        if outcome is not None:
            started, ended = outcome.started_at, outcome.ended_at
        self.log.event(
            "turn_ended",
            lane=lane.key,
            ids=ids,
            ok=result.ok,
            error_kind=result.error_kind,
            exit_code=outcome.exit_code if outcome else None,
            duration_s=round(ended - started, 3),
            session=result.session_id,
            cost_usd=result.cost_usd,
            input_tokens=result.input_tokens,
            output_tokens=result.output_tokens,
            cache_read_tokens=result.cache_read_tokens,
            # Only the daemon's own words: a harness's error can quote what it was told.
            error=result.error if outcome is None else None,
        )
        return Run(result, outcome, started, ended, turn_id)

    async def stdout_answer(self, text: str, reply_to: int, thread: int, after: int) -> dict[str, Any] | None:
        """The reply to post for a harness whose answer is its stdout, or None.

        None when stdout is blank, or when the turn already replied in the thread itself
        (a command that calls the board's API on its own): its answer is on the board.
        """
        body = self.log.redact(plain(text).strip())
        if not body:
            return None
        try:
            own = await self.call(
                "thread",
                lambda: self.client.messages(
                    thread=thread, author=self.cfg.handle, since=after, limit=1, view="compact"
                ),
            )
        except BoardAPIError as exc:
            self.log.event("thread_unread", thread=thread, code=exc.code, error=exc.message)
            own = {}
        if own.get("messages"):
            self.log.event("answer_posted_by_turn", thread=thread)
            return None
        return {"reply_to": reply_to, "body": body}

    def wake_fields(self, run: Run) -> dict[str, Any]:
        """The body of POST /api/wakes for a run (without trigger ids and request id)."""
        exit_code = run.outcome.exit_code if run.outcome is not None else None
        error = run.result.error_line()
        return {
            "harness": self.cfg.harness,
            "session_id": run.result.session_id,
            "started_at": iso(run.started_at),
            "ended_at": iso(run.ended_at),
            "exit_code": max(-255, min(255, exit_code)) if exit_code is not None else None,
            "outcome": wake_outcome(run.result, run.outcome),
            "cost_usd": run.result.cost_usd if (run.result.cost_usd or 0) >= 0 else None,
            "input_tokens": run.result.input_tokens,
            "output_tokens": run.result.output_tokens,
            "cache_read_tokens": run.result.cache_read_tokens,
            "cache_write_tokens": run.result.cache_write_tokens,
            "error": self.log.redact(error)[:4000] if error else None,
        }

    async def record_wake(self, turn_id: str, ids: list[int], **fields: Any) -> None:
        """POST /api/wakes once, whatever the retries (the request id is the turn's)."""
        request_id = f"wake-{turn_id}"
        try:
            await self.call(
                "record_wake",
                lambda: self.client.record_wake(trigger_ids=ids[-500:], request_id=request_id, **fields),
            )
        except BoardAPIError as exc:
            # REQUEST_ID_REUSE: recorded already, by the run a crash interrupted.
            if exc.code != "REQUEST_ID_REUSE":
                self.log.event("wake_not_recorded", code=exc.code, error=exc.message)

    async def receipts(self, ids: list[int]) -> None:
        if not ids:
            return
        try:
            await self.call("receipts", lambda: self.client.receipts(ids, "seen"))
        except BoardAPIError as exc:
            self.log.event("receipts_failed", code=exc.code, error=exc.message)

    async def post(self, body: str, *, reply_to: int, request_id: str) -> None:
        try:
            await self.call("post", lambda: self.client.post(body, reply_to=reply_to, request_id=request_id))
        except BoardAPIError as exc:
            self.log.event("post_failed", code=exc.code, error=exc.message, reply_to=reply_to)

    async def release(self, thread: int, count: int, turn_id: str) -> bool:
        """Release the bot's claim on thread if it holds one; whether it did."""
        try:
            me = await self.call("me", self.client.me)
            if not any(int(c.get("thread_id", 0)) == thread for c in me.get("claims") or []):
                return False
            await self.call(
                "release",
                lambda: self.client.request(
                    "POST",
                    f"/api/threads/{thread}/release",
                    json={
                        "reason": f"{count} failed turns in a row",
                        "request_id": f"release-{turn_id}",
                    },
                ),
            )
        except BoardAPIError as exc:
            self.log.event("release_failed", thread=thread, code=exc.code, error=exc.message)
            return False
        self.log.event("claim_released", thread=thread, failures=count)
        return True

    def complete(self, lane: Lane, ids: list[int]) -> None:
        """The turn is on the board: move the cursor past it and forget it was in flight."""
        for i in ids:
            self.pending.discard(i)
            self.arrived.pop(i, None)
        self.state.inflight.pop(lane.key, None)
        done = set(ids)
        for key in list(self.state.interrupted):
            left = [i for i in self.state.interrupted[key] if i not in done]
            if left:
                self.state.interrupted[key] = left
            else:
                del self.state.interrupted[key]
        self.state.mark_handled(ids, self.read_position, self.pending)
        self.save()
