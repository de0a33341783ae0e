"""A real board, a real ``bot run`` process, the fake harnesses on PATH.

Each test posts as a human and watches what the bot does on the board and what
the fake harness recorded: the reply, the wake record, the session resumed,
batching, failures, and the daemon or the board going away and coming back.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.launcher.botrun import BotProcess, LiveBoard, mention, one_reply, replies, wakes
from tests.launcher.fakeharness import FAKES_BIN, Fake, alive
from tests.support.boardtest import World, eventually, held

HARNESSES = ["claude", "codex", "opencode", "copilot", "gemini"]


async def _seen_by_pb(world: World, message_id: int) -> bool:
    message = await world.human.message(message_id)
    return any(r["handle"] == "pb" and r["seen_at"] for r in message["receipts"])


def wake_ids(fake: Fake) -> list[list[int]]:
    """The message ids each harness call covered, in order."""
    return [[int(i) for i in c["BOARD_WAKE_IDS"].split(",")] for c in fake.calls() if c.get("step")]


@pytest.mark.parametrize("harness", HARNESSES)
async def test_a_mention_is_answered_recorded_and_the_session_resumed(
    harness: str, world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    fake.script({"do": "reply", "text": f"hello from {harness}"})
    bot = await make_bot(harness).start().started()

    first = await mention(world)
    reply = await one_reply(world, first)
    assert reply["body"] == f"hello from {harness}"
    call = fake.last_call()
    assert call["persona"] == harness and call["resume"] is None
    # opencode gets its prompt on a pipe that is closed after it; the rest read nothing.
    assert call["cwd"] == str(bot.repo) and call["stdin"] == ("pipe" if harness == "opencode" else "devnull")
    session = call["session"]

    recorded = await eventually(lambda: wakes(world.human, "pb"), "the wake record")
    assert recorded[0]["trigger_ids"] == [first]
    assert recorded[0]["outcome"] == "ok" and recorded[0]["exit_code"] == 0
    assert recorded[0]["session_id"] == session and recorded[0]["harness"] == harness
    if harness == "claude":
        assert recorded[0]["cost_usd"] and recorded[0]["cost_usd"] > 0
    if harness in ("claude", "codex", "gemini", "opencode"):
        assert recorded[0]["input_tokens"] and recorded[0]["output_tokens"]
    await eventually(lambda: _seen_by_pb(world, first), "pb's seen receipt")

    second = await mention(world, "and this")
    await one_reply(world, second)
    resumed = fake.last_call()
    assert resumed["resume"] == session and resumed["BOARD_WAKE_IDS"] == str(second)
    assert wake_ids(fake) == [[first], [second]]
    await eventually(lambda: _cursor_at_least(bot, second), "the cursor to pass the second mention")
    assert bot.state()["sessions"] == {"": session}
    started = bot.events("turn_started")
    assert len(started) == 2
    assert started[0]["prompt_bytes"] > started[1]["prompt_bytes"]  # the first turn has the house rules


async def test_an_opencode_turn_on_a_prompt_naming_message_ids_succeeds(
    world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    """The board's prompt names message ids; opencode fails on a bare number in its argv."""
    fake.script({"do": "reply", "text": "answered"})
    await make_bot("opencode").start().started()
    first = await mention(world, "the fix costs 3.50 and closes 42")
    reply = await one_reply(world, first)
    assert reply["body"] == "answered"
    call = fake.last_call()
    assert "refused" not in call and call["step"]["do"] == "reply"
    assert f"covers messages: {first}." in call["prompt"] and "closes 42" in call["prompt"]
    recorded = await eventually(lambda: wakes(world.human, "pb"), "the wake record")
    assert recorded[0]["outcome"] == "ok" and recorded[0]["session_id"] == call["session"]


async def test_messages_posted_during_a_turn_make_the_next_batch(
    world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    fake.script({"do": "reply", "delay": 1.5}, {"do": "reply"})
    await make_bot().start().started()
    first = await mention(world)
    await eventually(fake.calls, "the first turn to start")
    second = await mention(world, "two")
    third = await mention(world, "three")
    await one_reply(world, first)
    await one_reply(world, third)  # the fake replies to the last id of its batch
    assert wake_ids(fake) == [[first], [second, third]]
    recorded = await wakes_recorded(world.human, 2)
    assert [w["trigger_ids"] for w in recorded] == [[first], [second, third]]


async def wakes_recorded(client: Any, n: int) -> list[dict[str, Any]]:
    """pb's wake records, once there are at least n of them."""

    async def enough() -> list[dict[str, Any]] | None:
        found = await wakes(client, "pb")
        return found if len(found) >= n else None

    return await eventually(enough, f"{n} wake records", timeout=20)


async def test_a_hanging_harness_is_killed_at_the_timeout_and_the_failure_posted(
    world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    fake.script({"do": "hang", "seconds": 120})
    await make_bot(BOT_TURN_TIMEOUT="1.5").start().started()
    first = await mention(world)
    report = await one_reply(world, first, timeout=20)
    assert "timed out after 1.5 s" in report["body"]
    call = fake.last_call()
    assert not alive(call["pid"]) and not alive(call["grandchild_pid"])
    recorded = (await wakes(world.human, "pb"))[0]
    assert recorded["outcome"] == "timeout" and recorded["trigger_ids"] == [first]


async def test_an_error_inside_a_zero_exit_is_a_failure(
    world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    fake.script({"do": "error_result", "message": "the model is overloaded"})
    await make_bot("codex").start().started()  # codex reports turn.failed with exit 0
    first = await mention(world)
    report = await one_reply(world, first)
    assert "reported a failure" in report["body"] and "the model is overloaded" in report["body"]
    recorded = await eventually(lambda: wakes(world.human, "pb"), "the wake record")
    assert recorded[0]["outcome"] == "failed" and recorded[0]["exit_code"] == 0


async def test_stdin_is_closed_so_a_harness_reading_it_finishes(
    world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    fake.script({"do": "read_stdin", "text": "read it all"})
    await make_bot("gemini").start().started()
    first = await mention(world)
    recorded = await eventually(lambda: wakes(world.human, "pb"), "the wake record")
    assert recorded[0]["outcome"] == "ok" and recorded[0]["trigger_ids"] == [first]
    assert fake.last_call()["stdin_bytes"] == 0


async def test_sigkill_while_idle_then_restart_loses_nothing_and_answers_nothing_twice(
    world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    fake.script({"do": "reply"})
    bot = await make_bot().start().started()
    first = await mention(world)
    await one_reply(world, first)
    await eventually(lambda: _cursor_at_least(bot, first), "the cursor to pass the first mention")
    await bot.kill()
    second = await mention(world, "while you were down")
    third = await mention(world, "and this too")
    await bot.start().started()
    await one_reply(world, third)
    assert wake_ids(fake) == [[first], [second, third]]
    assert len(await replies(world.human, first, "pb")) == 1


async def _cursor_at_least(bot: BotProcess, message_id: int) -> bool:
    return int(bot.state().get("cursor", 0)) >= message_id


async def test_sigkill_during_a_turn_ends_the_orphan_and_runs_the_batch_once_more(
    world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    fake.script({"do": "reply", "delay": 4}, {"do": "reply"})
    bot = await make_bot().start().started()
    first = await mention(world)
    orphan = (await eventually(fake.calls, "the turn to start"))[0]
    await bot.kill()
    assert alive(orphan["pid"])  # in its own process group: the daemon's death leaves it running
    await bot.start().started()
    await one_reply(world, first)
    assert not alive(orphan["pid"])
    assert wake_ids(fake) == [[first], [first]]
    assert "interrupted" in fake.last_call()["prompt"]
    # The second turn's wake is recorded after its reply was posted, and the orphan is dead:
    # nothing is left that could answer again.
    outcomes = [w["outcome"] for w in await wakes_recorded(world.human, 2)]
    assert outcomes == ["error", "ok"]
    assert len(await replies(world.human, first, "pb")) == 1  # the orphan never got to answer


async def test_the_board_going_away_and_coming_back_loses_nothing(
    live: LiveBoard, world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    fake.script({"do": "reply"}, {"do": "ok", "delay": 1.5}, {"do": "reply"})
    assert world.human.token is not None
    human_token = world.human.token
    bot = await make_bot().start().started()
    first = await mention(world)
    await one_reply(world, first)

    second = await mention(world, "a long one")
    await eventually(lambda: len(fake.calls()) >= 2, "the second turn to start")
    await live.stop()  # mid-turn: the wake record and receipts must wait for the board
    await eventually(
        lambda: any(e["call"] == "record_wake" for e in bot.events("board_retry")),
        "the second turn's wake record to find the board gone",
    )
    board = await live.start()
    human = board.client(human_token)
    recorded = await wakes_recorded(human, 2)
    assert [w["trigger_ids"] for w in recorded] == [[first], [second]]

    await held(board)  # the daemon's long-poll is back
    third = await human.post("@pb after the outage", channel="general", workspace="proj")
    await eventually(lambda: replies(human, int(third["id"]), "pb"), "the reply after the outage")
    assert wake_ids(fake) == [[first], [second], [int(third["id"])]]
    await wakes_recorded(human, 3)
    assert bot.proc is not None and bot.proc.poll() is None


async def test_watched_posts_wait_a_jitter_and_mentions_do_not(
    world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    fake.script({"do": "ok"})
    # The channel exists before the bot starts watching it (a long-poll resolves
    # the channels it watches when it begins).
    await world.human.create_channel("general", workspace="proj")
    bot = await make_bot(args=["--watch", "general", "--jitter", "1.5"]).start().started()
    watched = await world.human.post("anyone around?", channel="general", workspace="proj")
    await eventually(lambda: bot.events("turn_started"), "the watched turn", 30)
    jitter = bot.events("jitter")
    assert len(jitter) == 1 and 0 <= jitter[0]["delay_s"] <= 1.5
    started = bot.events("turn_started")[0]
    assert started["ids"] == [int(watched["id"])]
    assert started["wake_to_start_ms"] >= jitter[0]["delay_s"] * 1000 - 50
    await wakes_recorded(world.human, 1)

    first = await mention(world)
    await eventually(lambda: len(bot.events("turn_started")) == 2, "the mention's turn")
    assert bot.events("turn_started")[1]["ids"] == [first]
    assert len(bot.events("jitter")) == 1  # for_me skips it


async def test_sigterm_lets_a_running_turn_finish_and_stop_status_logs_work(
    world: World, fake: Fake, make_bot: Callable[..., BotProcess], tmp_path: Path
) -> None:
    import subprocess
    import sys

    fake.script({"do": "reply", "delay": 1})
    bot = await make_bot().start().started()
    first = await mention(world, "a secret plan")
    await eventually(fake.calls, "the turn to start")
    bot.signal(signal.SIGTERM)
    assert await bot.wait_exit() == 0
    await one_reply(world, first)
    assert bot.state()["cursor"] >= first and not bot.state()["inflight"]

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "board", "bot", *args],
            env=bot.env,
            capture_output=True,
            text=True,
            timeout=30,
        )

    status = cli("status", "pb")
    assert status.returncode == 0 and "pb: stopped" in status.stdout and "ok" in status.stdout
    logs = cli("logs", "pb", "-n", "200")
    assert '"event": "turn_started"' in logs.stdout and "post_to_start_ms" in logs.stdout
    assert "secret plan" not in logs.stdout and bot.env["BOARD_TOKEN"] not in logs.stdout

    bot.start()
    await bot.started()
    assert '"running": true' in cli("status", "pb", "--json").stdout
    stopped = cli("stop", "pb")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert bot.proc is not None and bot.proc.poll() == 0


#: A daemon that winds down slowly: it lets its pid lock go on SIGTERM, as ``bot run`` does
#: when its loop ends, and exits a while later, as an interpreter on a loaded machine may.
SLOW_EXIT = """
import signal, sys, time
from pathlib import Path
from board.launcher.daemon import PidLock
lock = PidLock(Path(sys.argv[1]))
lock.acquire()
signal.signal(signal.SIGTERM, lambda *_: (lock.release(), time.sleep(1.5), sys.exit(0)))
print("ready", flush=True)
time.sleep(60)
"""


def test_bot_stop_returns_once_the_daemon_is_gone_not_when_its_lock_is(tmp_path: Path) -> None:
    import subprocess
    import sys

    env = {**os.environ, "BOT_STATE_DIR": str(tmp_path)}
    pid_file = tmp_path / "pb" / "bot.pid"
    with subprocess.Popen(
        [sys.executable, "-c", SLOW_EXIT, str(pid_file)], stdout=subprocess.PIPE, text=True
    ) as daemon:
        try:
            assert daemon.stdout is not None and daemon.stdout.readline() == "ready\n"
            stopped = subprocess.run(
                [sys.executable, "-m", "board", "bot", "stop", "pb"],
                env=env,
                capture_output=True,
                text=True,
                timeout=30,
            )
            assert stopped.returncode == 0 and f"pb: stopped (pid {daemon.pid})" in stopped.stdout, stopped
            assert daemon.poll() == 0  # gone when bot stop said so, not still winding down
        finally:
            daemon.kill()


async def test_a_third_failure_in_a_row_on_a_thread_releases_the_claim(
    world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    fake.script(
        {"do": "claim", "then": "fail", "stderr": "boom one"},
        {"do": "fail", "stderr": "boom two"},
        {"do": "fail", "exit": 3, "stderr": "boom three"},
    )
    await make_bot().start().started()
    first = await mention(world, "fix the build")
    report = await one_reply(world, first)
    assert "failed (exit 1)" in report["body"] and "boom one" in report["body"]
    assert (await world.human.thread(first))["claim"]["holder"] == "pb"

    for n, word in ((2, "two"), (3, "three")):
        await world.human.post("still broken?", reply_to=first)

        async def reported(n: int = n) -> list[dict[str, Any]] | None:
            return await _at_least(replies(world.human, first, "pb"), n)

        found = await eventually(reported, f"failure report {n}", 20)
        assert len(found) == n and f"boom {word}" in found[-1]["body"]
        if n == 2:
            assert "2 failures in a row" in found[-1]["body"]
            assert (await world.human.thread(first))["claim"]["holder"] == "pb"
    assert "exit 3" in found[-1]["body"] and "released my claim" in found[-1]["body"]
    assert "released" not in found[-2]["body"]
    claim = (await world.human.thread(first))["claim"]
    assert claim["state"] == "open"
    assert [w["outcome"] for w in await wakes_recorded(world.human, 3)] == ["failed"] * 3


async def _at_least(found: Any, n: int) -> Any:
    items = await found
    return items if len(items) >= n else None


async def test_a_gone_session_starts_fresh_once_and_says_so(
    world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    fake.script({"do": "reply"}, {"do": "session_gone"}, {"do": "reply", "text": "fresh answer"})
    bot = await make_bot("codex").start().started()
    first = await mention(world)
    await one_reply(world, first)
    old = fake.last_call()["session"]
    second = await mention(world, "again")
    found = await eventually(lambda: _at_least(replies(world.human, second, "pb"), 2), "note and answer")
    assert "no longer exists" in found[0]["body"] and old in found[0]["body"]
    assert found[1]["body"] == "fresh answer"
    calls = [c for c in fake.calls() if c.get("step") or c.get("refused")]
    assert [c["resume"] for c in calls] == [None, old, None]
    new = calls[-1]["session"]
    await eventually(lambda: bot.state().get("sessions") == {"": new}, "the new session kept")
    assert [w["outcome"] for w in await wakes_recorded(world.human, 3)] == ["ok", "failed", "ok"]


async def test_a_bot_started_with_another_harness_starts_its_sessions_afresh(
    world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    """Its sessions were the old harness's: codex told to resume a claude session failed the
    turn, posted that its session no longer existed, and ran the batch again, a paid turn more."""
    fake.script({"do": "reply", "text": "from claude"}, {"do": "reply", "text": "from codex"})
    bot = await make_bot("claude").start().started()
    first = await mention(world)
    await one_reply(world, first)
    await eventually(lambda: bot.state().get("sessions") == {"": fake.last_call()["session"]}, "kept")
    bot.signal(signal.SIGTERM)
    assert await bot.wait_exit() == 0
    bot.argv[bot.argv.index("--harness") + 1] = "codex"
    await bot.start().started()
    second = await mention(world, "and now")
    assert (await one_reply(world, second))["body"] == "from codex"
    call = fake.last_call()
    assert call["persona"] == "codex" and call["resume"] is None
    assert [(e["harness"], e["sessions"]) for e in bot.events("sessions_forgotten")] == [("codex", [""])]
    assert len([c for c in fake.calls() if c.get("step")]) == 2  # no turn failed and ran again
    await eventually(lambda: bot.state().get("harness") == "codex", "the harness kept")


def _git(*args: str, cwd: Path) -> None:
    import subprocess

    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        timeout=30,
    )


async def test_pool_mode_one_session_per_channel_cloned_from_the_topic(
    world: World, fake: Fake, make_bot: Callable[..., BotProcess], tmp_path: Path
) -> None:
    origin = tmp_path / "origin.git"
    origin.mkdir()
    _git("init", "--bare", "-q", cwd=origin)
    work = tmp_path / "work"
    _git("clone", "-q", str(origin), str(work), cwd=tmp_path)
    (work / "README").write_text("wordsnap\n")
    _git("add", "README", cwd=work)
    _git("commit", "-q", "-m", "first", cwd=work)
    _git("push", "-q", "origin", "HEAD", cwd=work)
    await world.human.create_channel("wordsnap", topic=f"The game. Repo: file://{origin}", workspace="proj")
    await world.human.create_channel("misc", topic="anything else", workspace="proj")
    skill = tmp_path / "skill-src"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: board-etiquette\ndescription: how to post\n---\nBe brief.\n")

    pool = tmp_path / "pool"
    fake.script({"do": "ok"})
    bot = await make_bot(args=["--pool", str(pool), "--skill", str(skill)]).start().started()
    assert (pool / "wordsnap" / "README").read_text() == "wordsnap\n"
    linked = bot.home / ".claude" / "skills" / "board-etiquette"
    assert linked.is_symlink() and (linked / "SKILL.md").exists()

    watched = await world.human.post("the score is wrong", channel="wordsnap", workspace="proj")
    await world.human.post("lunch?", channel="misc", workspace="proj")  # not a project: not watched
    asked = await world.human.post("@pb what is 2+2", channel="misc", workspace="proj")
    await eventually(lambda: len(fake.calls()) >= 2, "a turn in each channel")
    again = await world.human.post("@pb and the score?", channel="wordsnap", workspace="proj")
    await eventually(lambda: len(fake.calls()) >= 3, "the third turn")
    await eventually(lambda: _cursor_at_least(bot, int(again["id"])), "the cursor past everything")
    calls = fake.calls()
    by_id = {c["BOARD_WAKE_IDS"]: c for c in calls}
    assert set(by_id) == {str(watched["id"]), str(asked["id"]), str(again["id"])}
    assert by_id[str(watched["id"])]["cwd"] == str(pool / "wordsnap")
    assert by_id[str(asked["id"])]["cwd"] == str(pool / "misc")
    assert by_id[str(again["id"])]["resume"] == by_id[str(watched["id"])]["session"]
    assert by_id[str(asked["id"])]["session"] != by_id[str(watched["id"])]["session"]
    assert "board-etiquette" in by_id[str(asked["id"])]["prompt"]  # a first turn names the skills
    assert "board-etiquette" not in by_id[str(again["id"])]["prompt"]  # a resumed one does not
    # The state file is saved again after each turn: the misc turn's may end after the third began.
    await eventually(
        lambda: set(bot.state().get("sessions", {})) == {"wordsnap", "misc"}, "both channels' sessions saved"
    )


async def test_sigterm_aborts_a_turn_past_its_grace_and_the_next_start_runs_it_again(
    world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    fake.script({"do": "hang", "seconds": 60}, {"do": "reply"})
    bot = await make_bot(BOT_STOP_GRACE="0.5").start().started()
    first = await mention(world)
    hung = (await eventually(fake.calls, "the turn to start"))[0]
    bot.signal(signal.SIGTERM)
    assert await bot.wait_exit() == 0
    assert not alive(hung["pid"]) and not alive(hung["grandchild_pid"])
    assert bot.state()["cursor"] < first and bot.state()["inflight"]
    await bot.start().started()
    await one_reply(world, first)
    assert wake_ids(fake) == [[first], [first]] and "interrupted" in fake.last_call()["prompt"]


async def test_a_profile_on_the_board_sets_the_harness_watch_identity_and_skills(
    world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    await world.human.create_skill("review-rules", "---\nname: review-rules\ndescription: d\n---\nBe kind.\n")
    await world.human.create_channel("general", workspace="proj")
    await world.human.create_profile(
        "pb-dev",
        "proj",
        "codex",
        watch=["general"],
        skills=["review-rules"],
        identity="You review pull requests for the proj team.",
        bots=["pb"],
    )
    fake.script({"do": "ok"})
    bot = await make_bot(None, args=["--profile", "pb-dev"]).start().started()
    skill = bot.home / ".agents" / "skills" / "review-rules" / "SKILL.md"
    assert skill.read_text().endswith("Be kind.\n")

    watched = await world.human.post("the diff is up", channel="general", workspace="proj")
    await eventually(fake.calls, "a turn on the watched post")
    call = fake.last_call()
    assert call["persona"] == "codex" and call["BOARD_WAKE_IDS"] == str(watched["id"])
    assert "You review pull requests for the proj team." in call["prompt"]  # composed by the board
    assert "review-rules" in call["prompt"] and "the diff is up" in call["prompt"]


async def test_a_harness_that_is_not_installed_is_refused_at_start_and_answers_nothing(
    tmp_path: Path, world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    """Started anyway, the daemon answered every mention with a post saying it could not start
    codex. It exits 2 instead (a keeper then shows it misconfigured), naming what to set."""
    fake.script({"do": "reply", "text": "codex, found by its variable"})
    first = await mention(world)
    path = f"{tmp_path / 'bin'}{os.pathsep}{Path(sys.executable).parent}"  # python3 for the fake; no codex
    bot = make_bot("codex", PATH=path).start()
    assert await bot.wait_exit() == 2
    assert bot.output().splitlines()[-1] == (  # the line a keeper shows as the reason
        "bot: cannot run codex: no 'codex' on PATH; install codex, or set BOT_CODEX_BIN to its full path "
        f"(PATH is {path})"
    )
    assert not fake.calls() and await replies(world.human, first, "pb") == []

    bot = make_bot("codex", PATH=path, BOT_CODEX_BIN=str(FAKES_BIN / "codex")).start()
    assert (await one_reply(world, first))["body"] == "codex, found by its variable"
    await bot.close()

    agent = make_bot("command", PATH=path, BOT_COMMAND_TEMPLATE="no-such-agent {prompt}").start()
    assert await agent.wait_exit() == 2
    assert (
        agent.output()
        .splitlines()[-1]
        .startswith("bot: cannot run command: no 'no-such-agent' on PATH; start ")
    )


async def test_a_handle_that_is_not_the_tokens_is_refused_at_start(
    tmp_path: Path, live: LiveBoard, world: World, fake: Fake
) -> None:
    """The invite's join line and Onboard's bot run line each hold a stand-in handle: run with
    one that is not its token's, the daemon would answer the token's wakes under a name the
    board does not know, prompts and logs and all. It says which handle the token is."""
    assert world.bot.token is not None
    bot = BotProcess(tmp_path, board_url=live.url, token=world.bot.token, handle="box3-proj", fake=fake)
    bot.start()
    try:
        assert await bot.wait_exit() == 2
    finally:
        await bot.close()
    assert (
        bot.output().strip()
        == "bot: this token is pb's, not box3-proj's: run with --handle pb, or without --handle"
    )
    assert not fake.calls()
