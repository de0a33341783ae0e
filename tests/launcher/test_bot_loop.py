"""The wake loop's decisions, against an in-memory board and a scripted harness.

Batching, the order of records before the cursor, failure counting and claim
release, retries while the board is away, the jitter rule, and backoff. The
end-to-end tests (test_bot_e2e.py) check the same behaviours with real
processes; these pin the decisions down fast and exactly.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from board.client import BoardAPIError
from board.launcher.config import BotConfig
from board.launcher.harnesses import Exit, TurnRequest, TurnResult, get_adapter
from board.launcher.harnesses.base import ErrorKind
from board.launcher.logs import EventLog
from board.launcher.loop import (
    Bot,
    Fatal,
    Timing,
    backoff,
    failure_text,
    jitter_delay,
    no_mentions,
    wake_outcome,
)
from board.launcher.process import ProcessOutcome
from board.launcher.state import BotState, StateFile

NO_SUCH_PID = 2**22 + 4321  # beyond pid_max on most systems: never a real process


class MemoryBoard:
    """The calls the loop makes, answered from memory, with a log of what it was told."""

    def __init__(self, state_path: Path) -> None:
        self.state_path = state_path
        self.messages: list[dict[str, Any]] = []
        self.arrived = asyncio.Event()
        self.wakes: list[dict[str, Any]] = []
        self.receipted: list[int] = []
        self.posts: list[dict[str, Any]] = []
        self.released: list[int] = []
        self.claims: list[dict[str, Any]] = []
        self.cursor_when_recorded: list[int] = []
        self.unavailable = 0  # fail this many record_wake calls with UNAVAILABLE first
        self.hidden: set[int] = set()  # messages the board no longer shows the bot
        self.stream_tries = 0

    def add(self, body: str = "hi", *, for_me: bool = True, thread: int | None = None) -> int:
        mid = len(self.messages) + 1
        self.messages.append(
            {
                "id": mid,
                "author": "alice",
                "channel": "general",
                "body": body,
                "thread_id": thread or mid,
                "reply_to": thread,
                "kind": "channel",
                "for_me": for_me,
                "watched": not for_me,
                "created_at": "2026-11-30T04:00:00Z",
            }
        )
        self.arrived.set()
        return mid

    async def me(self) -> dict[str, Any]:
        return {"handle": "pb", "workspace": "proj", "cursor": 0, "claims": self.claims}

    async def wake_stream(self, **_: Any) -> Any:
        """A board from before the stream: the daemon long-polls (the stream is tested end to end)."""
        self.stream_tries += 1
        raise BoardAPIError(404, "NOT_FOUND", "No such route.")

    async def wake(self, *, since: int, wait: int, limit: int, **_: Any) -> dict[str, Any]:
        while True:
            found = [m for m in self.messages if m["id"] > since][:limit]
            if found:
                return {"messages": found, "has_more": False}
            self.arrived.clear()
            await self.arrived.wait()

    async def bot_prompt(
        self, handle: str, trigger: list[int], *, first: bool, mcp: bool, handoff: bool
    ) -> dict[str, Any]:
        """As the board composes it, in short; a trigger in ``hidden`` is refused as the board does."""
        if set(trigger) & self.hidden:
            raise BoardAPIError(404, "NOT_FOUND", "No such message, or it is not visible to you.")
        turn = f"This turn covers messages {', '.join(map(str, trigger))}."
        return {
            "first_turn": "RULES" if first else None,
            "handoff": "HANDOFF" if handoff else None,
            "turn": turn,
            "covers": trigger,
            "omitted": [],
        }

    async def record_wake(self, **fields: Any) -> dict[str, Any]:
        if self.unavailable:
            self.unavailable -= 1
            raise BoardAPIError(0, "UNAVAILABLE", "cannot reach the board", retryable=True)
        self.cursor_when_recorded.append(json.loads(self.state_path.read_text())["cursor"])
        self.wakes.append(fields)
        return fields

    async def receipts(self, ids: list[int], state: str) -> dict[str, Any]:
        self.receipted += ids
        return {}

    async def post(self, body: str, **fields: Any) -> dict[str, Any]:
        self.posts.append({"body": body, **fields})
        return {}

    async def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        thread = int(path.split("/")[3])
        self.released.append(thread)
        self.claims = [c for c in self.claims if c["thread_id"] != thread]
        return {}


class ScriptedHarness:
    """A turn runner: each call waits for the test to let it finish with a result."""

    def __init__(self) -> None:
        self.calls: list[tuple[TurnRequest, list[int]]] = []
        self.results: asyncio.Queue[TurnResult] = asyncio.Queue()
        self.started = asyncio.Event()

    def finish(self, ok: bool = True, kind: ErrorKind | None = None, session: str = "s1") -> None:
        code = 0 if ok or kind == "error_result" else 1
        error = None if ok else "boom"
        self.results.put_nowait(
            TurnResult(ok, session, "done", kind, error, 0.01, 10, 5, exit=Exit(code, 1.0))
        )

    async def __call__(self, adapter: Any, req: TurnRequest, *, on_start: Any, **_: Any) -> Any:
        ids = [int(i) for i in _["env"]["BOARD_WAKE_IDS"].split(",")]
        self.calls.append((req, ids))
        on_start(NO_SUCH_PID)
        self.started.set()
        result = await self.results.get()
        assert result.exit is not None
        return result, ProcessOutcome(result.exit.code, "", "boom\n", False, False, NO_SUCH_PID, 1.0, 2.0)


class Harnessed:
    def __init__(self, bot: Bot, board: MemoryBoard, harness: ScriptedHarness, sleeps: list[float]) -> None:
        self.bot, self.board, self.harness, self.sleeps = bot, board, harness, sleeps

    async def turn_started(self, n: int) -> None:
        for _ in range(200):
            if len(self.harness.calls) >= n:
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"turn {n} never started: {len(self.harness.calls)} calls")

    async def settled(self, wakes: int) -> None:
        for _ in range(200):
            if len(self.board.wakes) >= wakes and not self.bot.pending:
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"wanted {wakes} wakes, have {len(self.board.wakes)}")


@contextlib.asynccontextmanager
async def running_bot(
    tmp_path: Path,
    state: BotState | None = None,
    board_cls: type[MemoryBoard] | None = None,
) -> AsyncIterator[Harnessed]:
    """A Bot on a MemoryBoard and a ScriptedHarness, started from state if given."""
    state_dir = tmp_path / "state"
    if state is not None:
        StateFile(state_dir).save(state)
    cfg = BotConfig(
        handle="pb",
        harness="claude",
        board_url="http://127.0.0.1:9",
        token="bb_secret",
        repo=tmp_path,
        state_dir=state_dir,
        jitter=0,
    )
    board = (board_cls or MemoryBoard)(state_dir / "state.json")
    harness = ScriptedHarness()
    sleeps: list[float] = []

    async def sleep(delay: float) -> None:
        sleeps.append(delay)
        await asyncio.sleep(0.001)

    bot = Bot(
        cfg,
        board,  # type: ignore[arg-type]
        get_adapter("claude"),
        log=EventLog(None, handle="pb", stream=None),
        state_file=StateFile(state_dir),
        timing=Timing(wait=1),
        runner=harness,
        sleep=sleep,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(bot.run(stop))
    try:
        yield Harnessed(bot, board, harness, sleeps)
    finally:
        stop.set()
        for _ in range(5):
            harness.finish()
        await asyncio.wait_for(task, 10)


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Harnessed]:
    async with running_bot(tmp_path) as started:
        yield started


async def test_messages_arriving_during_a_turn_make_one_next_batch(rig: Harnessed) -> None:
    first = rig.board.add("one")
    await rig.turn_started(1)
    second, third = rig.board.add("two"), rig.board.add("three")
    await asyncio.sleep(0.05)
    assert len(rig.harness.calls) == 1  # one turn at a time
    rig.harness.finish()
    await rig.turn_started(2)
    rig.harness.finish()
    await rig.settled(2)
    assert [ids for _, ids in rig.harness.calls] == [[first], [second, third]]
    assert [w["trigger_ids"] for w in rig.board.wakes] == [[first], [second, third]]
    assert rig.board.receipted == [first, second, third]
    req = rig.harness.calls[1][0]
    assert req.session_id == "s1" and "covers messages 2, 3" in req.prompt


async def test_a_board_without_the_stream_is_long_polled_and_the_stream_tried_later(rig: Harnessed) -> None:
    first = rig.board.add("on an older board")
    await rig.turn_started(1)
    rig.harness.finish()
    await rig.settled(1)
    second = rig.board.add("and again")
    await rig.turn_started(2)
    rig.harness.finish()
    await rig.settled(2)
    assert [ids for _, ids in rig.harness.calls] == [[first], [second]]
    assert rig.board.stream_tries == 1  # not again before BOT_STREAM_RETRY (60 s) has passed


class StreamLines:
    """One wake stream: the lines a test puts in, then silence until the daemon hangs up."""

    def __init__(self) -> None:
        self.lines: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def __aenter__(self) -> StreamLines:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        while True:
            line = await self.lines.get()
            yield line
            if "end" in line:  # the last line, as the board's stream has it
                return


class StreamBoard(MemoryBoard):
    """A board with the stream: each one the daemon opens, and what it asked for, kept."""

    def __init__(self, state_path: Path) -> None:
        super().__init__(state_path)
        self.streams: list[tuple[dict[str, Any], StreamLines]] = []
        self.opened = asyncio.Event()

    async def wake_stream(self, **params: Any) -> Any:
        self.streams.append((params, StreamLines()))
        self.opened.set()
        return self.streams[-1][1]


HOLD = {"reason": "budget", "which": "bot", "measure": "wakes", "limit": 1, "spent": 1}


async def test_a_stream_that_opens_unheld_ends_a_hold_kept_from_before(tmp_path: Path) -> None:
    """The daemon stopped while held, and the hold ended while it was away: the stream it opens
    has no ``held`` line, and its first line ends the hold it kept, as an unheld long-poll does."""
    state = BotState()
    state.held = dict(HOLD)
    async with running_bot(tmp_path, state=state, board_cls=StreamBoard) as rig:
        board = rig.board
        assert isinstance(board, StreamBoard)
        log = rig.bot.log.stream = io.StringIO()
        await board.opened.wait()
        assert rig.bot.state.held == HOLD
        board.streams[0][1].lines.put_nowait({"cursor": 0, "beat": True})
        for _ in range(200):
            if rig.bot.state.held is None:
                break
            await asyncio.sleep(0.01)
        assert rig.bot.state.held is None and rig.bot.state_file.load().held is None
        assert '"event": "hold_ended"' in log.getvalue()


async def test_a_stream_is_opened_again_when_the_watch_list_moves(tmp_path: Path) -> None:
    """A pool's projects change (a new project channel): the stream opened with the old list is
    opened again with the new one at its next line, from where the first one was."""
    async with running_bot(tmp_path, board_cls=StreamBoard) as rig:
        board = rig.board
        assert isinstance(board, StreamBoard)
        await board.opened.wait()
        first, stream = board.streams[0]
        message = {
            "id": 1,
            "body": "hi",
            "author": "alice",
            "thread_id": 1,
            "for_me": True,
            "kind": "channel",
        }
        board.messages.append(message)
        stream.lines.put_nowait({"cursor": 1, "message": message})
        await rig.turn_started(1)
        board.opened.clear()
        rig.bot.watch = lambda: ("ops",)  # type: ignore[method-assign]
        stream.lines.put_nowait({"cursor": 1, "beat": True})
        await asyncio.wait_for(board.opened.wait(), 5)
        rig.harness.finish()
        await rig.settled(1)
    assert [params["watch"] for params, _ in board.streams] == [list(first["watch"]), ["ops"]]
    assert board.streams[1][0]["since"] == 1


async def test_a_daemon_with_a_profile_reads_it_once_its_stream_is_held(tmp_path: Path) -> None:
    """The board ends a stream ``rescoped`` when the bot's profile changes what it watches, but
    only a stream it holds: a change committed before (while the daemon started, long-polled,
    or reconnected after another end) told nobody. So the daemon reads its profile once each
    stream is held, and opens it again when the watch or goal moved; a read that fails is tried
    again at the next beat, the stream kept meanwhile."""
    profiles: list[tuple[tuple[str, ...], int | None] | BoardAPIError] = [
        (("deploys",), 7),  # changed while the first stream opened
        BoardAPIError(503, "UNAVAILABLE", "The database does not answer."),
        (("deploys", "ops"), 7),  # read at the beat after the failure
        (("deploys", "ops"), 7),
    ]

    async def rescope() -> tuple[tuple[str, ...], int | None]:
        answer = profiles.pop(0)
        if isinstance(answer, BoardAPIError):
            raise answer
        return answer

    async with running_bot(tmp_path, board_cls=StreamBoard) as rig:
        board = rig.board
        assert isinstance(board, StreamBoard)
        rig.bot.rescope = rescope
        for _ in range(500):  # a beat on the newest stream, until every answer was read
            if not profiles:
                break
            if board.streams:
                board.streams[-1][1].lines.put_nowait({"cursor": 0, "beat": True})
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
    assert [(params["watch"], params["goal"]) for params, _ in board.streams] == [
        ([], None),
        (["deploys"], 7),  # its read failed: the stream is kept, and the profile read at its beat
        (["deploys", "ops"], 7),
    ]
    assert profiles == []


async def test_the_cursor_moves_only_after_the_wake_and_receipts(rig: Harnessed) -> None:
    first = rig.board.add()
    await rig.turn_started(1)
    rig.harness.finish()
    await rig.settled(1)
    assert rig.board.cursor_when_recorded == [0]  # recorded while the cursor still held it
    assert rig.bot.state_file.load().cursor == first
    assert not rig.bot.state_file.load().inflight


async def test_the_seen_receipt_is_sent_as_the_turn_starts_and_only_then(rig: Harnessed) -> None:
    first = rig.board.add()
    await rig.turn_started(1)
    for _ in range(200):
        if rig.board.receipted:
            break
        await asyncio.sleep(0.01)
    assert rig.board.receipted == [first] and not rig.board.wakes  # seen while the harness runs
    rig.harness.finish()
    await rig.settled(1)
    assert rig.board.receipted == [first]  # not again after the turn: no request added


async def test_a_message_the_board_no_longer_shows_the_bot_gets_no_turn(rig: Harnessed) -> None:
    hidden = rig.board.add("moved out of the bot's reach")
    rig.board.hidden.add(hidden)
    shown = rig.board.add("still here")
    await rig.turn_started(1)
    req, _ = rig.harness.calls[0]
    assert f"covers messages {shown}." in req.prompt  # the batch without what the board refuses
    rig.harness.finish()
    await rig.settled(1)
    alone = rig.board.add("also hidden")
    rig.board.hidden.add(alone)
    for _ in range(200):
        if rig.bot.state_file.load().cursor == alone:
            break
        await asyncio.sleep(0.01)
    assert rig.bot.state_file.load().cursor == alone and not rig.bot.pending  # passed, not retried
    assert len(rig.harness.calls) == 1 and len(rig.board.wakes) == 1  # no turn, no wake on it


async def test_an_unreachable_board_is_retried_under_one_request_id(rig: Harnessed) -> None:
    rig.board.unavailable = 3
    rig.board.add()
    await rig.turn_started(1)
    rig.harness.finish()
    await rig.settled(1)
    assert len(rig.board.wakes) == 1 and rig.board.wakes[0]["request_id"].startswith("wake-")
    assert rig.sleeps[:3] == [0.5, 1.0, 2.0]


async def test_failures_back_off_post_once_each_and_the_third_releases_the_claim(rig: Harnessed) -> None:
    root = rig.board.add("fix it")
    rig.board.claims = [{"thread_id": root, "holder": "pb"}]
    for n in range(1, 4):
        if n > 1:
            rig.board.add("again?", thread=root)
        await rig.turn_started(n)
        rig.harness.finish(ok=False, kind="exit")
        await rig.settled(n)
        assert len(rig.board.posts) == n
    assert rig.sleeps == [1.0, 2.0]  # before the second and third turns
    assert rig.board.released == [root]
    assert "released my claim" in rig.board.posts[-1]["body"]
    assert all(p["reply_to"] for p in rig.board.posts)
    assert len({p["request_id"] for p in rig.board.posts}) == 3
    rig.board.add("and now?", thread=root)
    await rig.turn_started(4)
    rig.harness.finish()
    await rig.settled(4)
    assert rig.bot.state.failures == {} and rig.bot.state.thread_failures == {}


async def test_a_watched_only_batch_waits_but_a_mention_cuts_the_wait(rig: Harnessed) -> None:
    rig.bot.cfg = BotConfig(**{**rig.bot.cfg.__dict__, "jitter": 30.0})
    rig.bot.uniform = lambda low, high: high  # the longest wait the rule allows
    log = rig.bot.log.stream = io.StringIO()
    watched = rig.board.add("anyone?", for_me=False)
    for _ in range(200):  # until the bot says it waits: the batch is in hand, and no turn began
        if '"event": "jitter"' in log.getvalue():
            break
        await asyncio.sleep(0.01)
    [waiting] = [json.loads(line) for line in log.getvalue().splitlines() if '"event": "jitter"' in line]
    assert waiting["delay_s"] == 30.0
    assert not rig.harness.calls  # waiting out the jitter
    mention = rig.board.add("@pb now")
    await rig.turn_started(1)
    assert rig.harness.calls[0][1] == [watched, mention]
    rig.harness.finish()
    await rig.settled(1)
    assert rig.board.receipted == [mention]  # receipts only for what was addressed


def test_jitter_rule() -> None:
    picked: list[tuple[float, float]] = []

    def uniform(low: float, high: float) -> float:
        picked.append((low, high))
        return 7.5

    watched = {"for_me": False, "watched": True}
    mine = {"for_me": True, "watched": True}
    assert jitter_delay([watched], 20, uniform) == 7.5 and picked == [(0.0, 20)]
    assert jitter_delay([watched, mine], 20, uniform) == 0.0
    assert jitter_delay([watched], 0, uniform) == 0.0
    assert jitter_delay([], 20, uniform) == 0.0
    assert len(picked) == 1


def test_backoff_doubles_and_is_capped() -> None:
    assert [backoff(n, 1.0, 300.0) for n in range(0, 11)] == [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 300]
    assert backoff(10_000, 1.0, 300.0) == 300.0


def test_a_failure_reply_says_what_happened_and_wakes_nobody() -> None:
    stopped = Exit(-9, 5.0, "timed out after 5 s")
    result = TurnResult(False, "s", "", "timeout", "thinking about @alice", None, None, None, exit=stopped)
    outcome = ProcessOutcome(-9, "", "thinking about @alice\n", True, False, 1, 0.0, 5.0)
    text = failure_text("codex", result, outcome, 1)
    assert text.startswith("My codex turn timed out after 5 s and was stopped.\nError: thinking about")
    assert "@alice" not in text and no_mentions("@alice") in text
    assert "released" not in text
    assert "I released my claim" in failure_text("codex", result, outcome, 3, released=True)


def test_a_silent_turn_is_reported_as_silence_and_recorded_as_a_timeout() -> None:
    stopped = Exit(-15, 300.0, "printed nothing for 300 s")
    result = TurnResult(False, "s", "", "silent", None, None, None, None, exit=stopped)
    outcome = ProcessOutcome(-15, "", "", False, False, 1, 0.0, 300.0, went_silent=True)
    text = failure_text("opencode", result, outcome, 1)
    # The silence limit, not the turn's, and said once: SIGTERM is the launcher's business.
    assert text == "My opencode turn printed nothing for 300 s (BOT_SILENT_TIMEOUT) and was stopped."
    assert result.error_line() == "printed nothing for 300 s (killed by SIGTERM)"
    assert wake_outcome(result, outcome) == "timeout"


async def test_a_turn_that_finished_before_a_crash_is_recorded_not_run_again(tmp_path: Path) -> None:
    wake = {
        "harness": "claude",
        "session_id": "s9",
        "started_at": "2026-11-30T04:00:00Z",
        "outcome": "failed",
    }
    done = {"turn_id": "t1", "ids": [1, 2], "done": True, "wake": wake}
    done["report"] = {"reply_to": 2, "thread": 1, "count": 1, "body": "My claude turn failed (exit 1)."}
    async with running_bot(tmp_path, BotState(cursor=0, inflight={"": done})) as rig:
        rig.board.add("one")
        rig.board.add("two")
        third = rig.board.add("three")
        await rig.turn_started(1)
        rig.harness.finish()
        await rig.settled(2)
        assert [ids for _, ids in rig.harness.calls] == [[third]]  # 1 and 2 were not run again
        assert rig.board.wakes[0]["request_id"] == "wake-t1" and rig.board.wakes[0]["trigger_ids"] == [1, 2]
        assert rig.board.posts[0]["request_id"] == "fail-t1"
        assert rig.board.receipted == [third]  # 2's receipt went as its turn started
        assert rig.bot.state_file.load().cursor == third


async def test_a_turn_cut_short_runs_again_with_a_note(tmp_path: Path) -> None:
    cut = {"turn_id": "t2", "ids": [1], "pid": NO_SUCH_PID, "create_time": None, "started_at": 1.0e9}
    async with running_bot(tmp_path, BotState(inflight={"": cut})) as rig:
        rig.board.add("one")
        await rig.turn_started(1)
        assert "interrupted" in rig.harness.calls[0][0].prompt
        rig.harness.finish()
        await rig.settled(2)
        assert [w["outcome"] for w in rig.board.wakes] == ["error", "ok"]
        assert rig.board.wakes[0]["request_id"] == "wake-t2"
        assert not rig.bot.state_file.load().interrupted


async def test_a_stop_while_the_board_is_unreachable_at_start_is_obeyed(tmp_path: Path) -> None:
    class Down(MemoryBoard):
        async def me(self) -> dict[str, Any]:
            raise BoardAPIError(0, "UNAVAILABLE", "connection refused", retryable=True)

    async with running_bot(tmp_path, board_cls=Down) as rig:
        await asyncio.sleep(0.05)
        assert len(rig.sleeps) > 3  # still trying
    assert rig.bot.state_file.load().cursor == 0  # and left when told


async def test_a_refused_token_stops_the_daemon(tmp_path: Path) -> None:
    class Revoked(MemoryBoard):
        async def wake(self, **_: Any) -> dict[str, Any]:
            raise BoardAPIError(401, "UNAUTHENTICATED", "Unknown token.")

        async def me(self) -> dict[str, Any]:
            raise BoardAPIError(401, "UNAUTHENTICATED", "Unknown token.")

    with pytest.raises(Fatal):
        async with running_bot(tmp_path, board_cls=Revoked):
            await asyncio.sleep(0.05)


async def test_a_long_poll_refused_while_the_token_still_signs_in_is_asked_again(tmp_path: Path) -> None:
    """The board refuses a long-poll held while its bot moved to another workspace (what it
    waited for was the old one's). The daemon took that for a revoked token and stopped."""

    class Moved(MemoryBoard):
        refused = 1

        async def wake(self, **params: Any) -> dict[str, Any]:
            if self.refused:
                self.refused -= 1
                raise BoardAPIError(401, "UNAUTHENTICATED", "The credential this wait was held with changed.")
            return await super().wake(**params)

    async with running_bot(tmp_path, board_cls=Moved) as rig:
        first = rig.board.add("in the new workspace")
        await rig.turn_started(1)
        rig.harness.finish()
        await rig.settled(1)
        assert [ids for _, ids in rig.harness.calls] == [[first]]
        assert vars(rig.board)["refused"] == 0  # refused once, then asked again
