"""Running harness processes for real, with the fake harnesses on PATH."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from board.launcher.harnesses import Exit, TurnRequest, get_adapter
from board.launcher.loop import failure_text
from board.launcher.process import (
    CappedBuffer,
    child_env,
    identity_env,
    run_process,
    run_turn,
    scrubbed,
    silent_timeout,
    turn_timeout,
)
from tests.launcher.fakeharness import FAKES_BIN, Fake
from tests.support.boardtest import eventually

claude = get_adapter("claude")
gemini = get_adapter("gemini")
opencode = get_adapter("opencode")


async def test_ok_turn_runs_in_repo_with_closed_stdin_in_its_own_group(
    fake: Fake, repo: Path, env: dict[str, str]
) -> None:
    started: list[tuple[int, float]] = []
    result, outcome = await run_turn(
        claude,
        TurnRequest(prompt="hello"),
        cwd=repo,
        env=env,
        on_start=lambda pid: started.append((pid, time.time())),
    )
    assert result.ok, result.error
    assert outcome is not None and outcome.exit_code == 0 and not outcome.timed_out
    call = fake.last_call()
    assert call["cwd"] == str(repo)
    assert call["stdin"] == "devnull"
    assert call["pgid"] == call["pid"] == outcome.pid  # a new process group...
    assert call["sid"] == call["pid"]  # ...in a new session
    assert started and started[0][0] == outcome.pid
    assert started[0][1] <= call["time"]  # on_start ran before the harness got going
    assert result.session_id == call["session"]
    assert call["BOARD_WAKE_IDS"] == "7,9" and call["BOT_HANDLE"] == "box3-test"


async def test_stdin_is_closed_so_a_stdin_reader_finishes(
    fake: Fake, repo: Path, env: dict[str, str]
) -> None:
    fake.script({"do": "read_stdin", "text": "read it"})
    result, outcome = await run_turn(gemini, TurnRequest(prompt="p"), cwd=repo, env=env, timeout=10)
    assert result.ok and result.text == "read it"
    assert outcome is not None and outcome.duration < 5
    assert fake.last_call()["stdin_bytes"] == 0


async def test_a_prompt_on_stdin_arrives_whole_and_the_pipe_is_closed(
    fake: Fake, repo: Path, env: dict[str, str]
) -> None:
    prompt = "This turn covers messages: 1, 42.\n-v costs 3.50 " + "x" * 100_000  # more than a pipe holds
    result, _ = await run_turn(opencode, TurnRequest(prompt=prompt), cwd=repo, env=env, timeout=20)
    assert result.ok, result.error
    call = fake.last_call()
    assert call["stdin"] == "pipe" and call["prompt"] == prompt  # read to EOF: the pipe was closed
    assert not any("42" in word for word in call["argv"])


async def test_stdin_data_to_a_harness_that_never_reads_it_does_not_hang(repo: Path) -> None:
    outcome = await run_process(
        [sys.executable, "-c", "print('done')"], cwd=repo, env=dict(os.environ), stdin_data=b"x" * 1_000_000
    )
    assert outcome.exit_code == 0 and outcome.stdout == "done\n" and not outcome.timed_out


def test_the_fake_really_hangs_on_an_open_stdin_pipe(fake: Fake, repo: Path, env: dict[str, str]) -> None:
    """Without this, the test above would prove nothing."""
    argv = claude.argv(TurnRequest(prompt="p"))
    proc = subprocess.Popen(argv, cwd=repo, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=1.0)
    finally:
        proc.kill()
        proc.wait()
        assert proc.stdin is not None
        proc.stdin.close()


async def test_hang_is_killed_at_timeout_with_its_whole_group(
    fake: Fake, repo: Path, env: dict[str, str], alive: Callable[[int], bool]
) -> None:
    fake.script({"do": "hang", "seconds": 60})
    t0 = time.monotonic()
    result, outcome = await run_turn(
        claude, TurnRequest(prompt="p"), cwd=repo, env=env, timeout=3.0, kill_grace=0.5
    )  # 3 s: time for the fake to start and record its call on a loaded machine
    assert time.monotonic() - t0 < 15
    assert outcome is not None and outcome.timed_out
    assert outcome.exit_code == -15  # SIGTERM was enough
    assert result.error_kind == "timeout" and not result.ok
    assert result.exit == Exit(-15, outcome.duration, "timed out after 3 s")
    assert result.error_line() == "timed out after 3 s (killed by SIGTERM)"
    call = fake.last_call()
    assert not alive(call["pid"])
    assert not alive(call["grandchild_pid"])


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
async def test_output_on_either_stream_keeps_the_watchdog_away(stream: str, repo: Path) -> None:
    """Lines a tenth of a second apart for twice the limit: never silent for long."""
    code = (
        "import sys, time\n"
        f"for _ in range(30):\n    print('.', file=sys.{stream}, flush=True)\n    time.sleep(0.1)"
    )
    outcome = await run_process(
        [sys.executable, "-c", code], cwd=repo, env=dict(os.environ), timeout=30, silent_timeout=1.5
    )
    assert outcome.exit_code == 0 and not outcome.went_silent
    assert getattr(outcome, stream).count(".") == 30


async def test_a_harness_ignoring_sigterm_gets_sigkill(
    fake: Fake, repo: Path, env: dict[str, str], alive: Callable[[int], bool]
) -> None:
    fake.script({"do": "hang", "seconds": 60, "ignore_term": True})
    # The timeout leaves the fake time to start and ignore SIGTERM even on a loaded machine;
    # a SIGTERM that lands before that ends it with -15 and proves nothing about the SIGKILL.
    result, outcome = await run_turn(
        claude, TurnRequest(prompt="p"), cwd=repo, env=env, timeout=3.0, kill_grace=0.3
    )
    assert outcome is not None and outcome.timed_out and outcome.exit_code == -9
    assert result.error_kind == "timeout" and result.exit is not None and result.exit.code == -9
    assert (result.error_line() or "").startswith("timed out after 3 s (killed by SIGKILL)")
    call = fake.last_call()
    assert not alive(call["pid"]) and not alive(call["grandchild_pid"])


@pytest.mark.parametrize(
    ("name", "limits", "kind", "says"),
    [
        ("claude", {"timeout": 3.0}, "timeout", "timed out after 3 s"),
        ("gemini", {"timeout": 60, "silent_timeout": 3.0}, "silent", "printed nothing for 3 s"),
    ],
)
async def test_a_stopped_turn_keeps_the_pre_assigned_session(
    name: str,
    limits: dict[str, Any],
    kind: str,
    says: str,
    fake: Fake,
    repo: Path,
    env: dict[str, str],
    alive: Callable[[int], bool],
) -> None:
    """At the wall clock, or the no-output watchdog (its own kind), the group goes and the id stays."""
    fake.script({"do": "hang", "seconds": 60})
    sid = "5f0c1b7e-2d55-4a57-9d1c-0a4c1f3e8b21"
    req = TurnRequest(prompt="p", fresh_session_id=sid)
    result, outcome = await run_turn(get_adapter(name), req, cwd=repo, env=env, kill_grace=0.3, **limits)
    assert outcome is not None and outcome.went_silent == (kind == "silent")
    assert outcome.timed_out == (kind == "timeout")
    assert result.error_kind == kind and result.exit is not None and result.exit.stopped == says
    assert result.session_id == sid
    call = fake.last_call()
    assert call["session"] == sid
    assert not alive(call["pid"]) and not alive(call["grandchild_pid"])


async def test_a_process_left_behind_after_a_normal_exit_is_ended(
    fake: Fake, repo: Path, env: dict[str, str], alive: Callable[[int], bool]
) -> None:
    fake.script({"do": "ok", "linger": 60})
    t0 = time.monotonic()
    result, outcome = await run_turn(claude, TurnRequest(prompt="p"), cwd=repo, env=env)
    assert result.ok and outcome is not None and outcome.exit_code == 0
    assert time.monotonic() - t0 < 5
    assert not alive(fake.last_call()["grandchild_pid"])


async def test_a_pipe_held_open_outside_the_group_is_abandoned(
    fake: Fake, repo: Path, env: dict[str, str], reap_later: list[int]
) -> None:
    fake.script({"do": "ok", "linger": 60, "escape": True})
    t0 = time.monotonic()
    outcome = await run_process(claude.argv(TurnRequest(prompt="p")), cwd=repo, env=env, drain_grace=0.5)
    reap_later.append(fake.last_call()["grandchild_pid"])
    assert time.monotonic() - t0 < 5
    assert outcome.exit_code == 0
    assert claude.parse(outcome.stdout, outcome.stderr, outcome.exit_code).ok


async def test_flood_is_capped_in_memory_and_the_harness_still_finishes(
    fake: Fake, repo: Path, env: dict[str, str]
) -> None:
    fake.script({"do": "flood", "bytes": 8 * 1024 * 1024, "text": "after the flood"})
    cap = 256 * 1024
    result, outcome = await run_turn(claude, TurnRequest(prompt="p"), cwd=repo, env=env, stdout_cap=cap)
    assert outcome is not None
    assert outcome.exit_code == 0  # read to EOF: no SIGPIPE
    assert outcome.truncated
    assert len(outcome.stdout) < cap + 200
    assert "bytes dropped by the launcher" in outcome.stdout
    assert outcome.stdout.startswith("flood x")
    assert result.ok and result.text == "after the flood"  # the result was in the tail


@pytest.mark.parametrize(("sig", "code", "name"), [("KILL", -9, "SIGKILL"), ("SEGV", -11, "SIGSEGV")])
async def test_crash_is_reported(
    fake: Fake, repo: Path, env: dict[str, str], sig: str, code: int, name: str
) -> None:
    fake.script({"do": "crash", "signal": sig})
    result, outcome = await run_turn(claude, TurnRequest(prompt="p"), cwd=repo, env=env)
    assert outcome is not None and outcome.exit_code == code
    assert result.error_kind == "exit" and result.exit == Exit(code, outcome.duration)
    assert (result.error_line() or "").startswith(f"killed by {name}")


@pytest.mark.parametrize("harness", ["claude", "codex", "copilot"])
async def test_a_crash_reply_says_what_happened_without_the_cut_off_output(
    fake: Fake, repo: Path, env: dict[str, str], harness: str
) -> None:
    """Killed partway through a JSON record, the thread reads the signal and when, not the
    record's first characters; a plain stderr line still shows."""
    fake.script({"do": "crash", "signal": "KILL"})
    result, outcome = await run_turn(get_adapter(harness), TurnRequest(prompt="p"), cwd=repo, env=env)
    assert outcome is not None and outcome.exit_code == -9 and outcome.stdout.startswith("{")
    text = failure_text(harness, result, outcome, 1)
    after = f"{round(outcome.duration, 1):g} s"
    assert text.startswith(f"My {harness} turn was killed by SIGKILL after {after}."), text
    assert "{" not in text and "printed nothing" not in text, text

    fake.script({"do": "crash", "signal": "KILL", "stderr": "fatal: out of memory"})
    result, outcome = await run_turn(get_adapter(harness), TurnRequest(prompt="p"), cwd=repo, env=env)
    assert outcome is not None
    text = failure_text(harness, result, outcome, 1)
    assert "fatal: out of memory" in text and "{" not in text, text


@pytest.mark.parametrize("harness", ["claude", "codex", "opencode", "copilot", "gemini"])
async def test_every_harness_reply_words_its_end_once(
    fake: Fake, repo: Path, env: dict[str, str], harness: str
) -> None:
    """The reply's first line says how the process ended; its Error line is what the harness
    said, never that end again (the exit reaches the reply apart from the detail)."""
    adapter = get_adapter(harness)
    fake.script({"do": "fail", "exit": 3, "stderr": "fatal: disk full"})
    result, outcome = await run_turn(adapter, TurnRequest(prompt="p"), cwd=repo, env=env)
    assert result.error_kind == "exit" and result.exit == Exit(3, outcome.duration if outcome else None)
    text = failure_text(harness, result, outcome, 1)
    assert text.startswith(f"My {harness} turn failed (exit 3).\nError: ") and text.count("exit 3") == 1, text
    assert "fatal: disk full" in text

    fake.script({"do": "hang", "seconds": 60})
    result, outcome = await run_turn(
        adapter, TurnRequest(prompt="p"), cwd=repo, env=env, timeout=1.0, kill_grace=0.3
    )
    text = failure_text(harness, result, outcome, 1)
    assert text.startswith(f"My {harness} turn timed out after 1 s and was stopped."), text
    assert text.count("timed out") == 1 and "SIG" not in text, text


async def test_failure_keeps_stderr_tail(fake: Fake, repo: Path, env: dict[str, str]) -> None:
    fake.script({"do": "fail", "exit": 3, "stderr": "\n".join(f"trace {i}" for i in range(50))})
    result, outcome = await run_turn(claude, TurnRequest(prompt="p"), cwd=repo, env=env)
    assert outcome is not None and outcome.exit_code == 3
    assert outcome.stderr_tail(max_lines=2) == "trace 48\ntrace 49"
    assert result.error_kind == "exit" and "trace 49" in (result.error or "")
    assert "trace 0\n" not in (result.error or "")


async def test_environment_of_a_parent_harness_session_is_scrubbed(
    fake: Fake, repo: Path, make_env: Callable[..., dict[str, str]]
) -> None:
    parent = {
        **os.environ,
        "CLAUDECODE": "1",
        "CLAUDE_CODE_ENTRYPOINT": "cli",
        "CLAUDE_CODE_SSE_PORT": "4242",
        "CLAUDE_CODE_OAUTH_TOKEN": "keep-me",
        "CODEX_SANDBOX": "seatbelt",
        "CODEX_SANDBOX_NETWORK_DISABLED": "1",
        "CODEX_HOME": "/keep/codex",
        "OPENCODE_SERVER_PASSWORD": "hunter2",
        "OPENCODE_CONFIG": "/keep/opencode.json",
        "BOARD_TOKEN": "the-parent-bots-token",
        "BOARD_WAKE_IDS": "1,2,3",
    }
    env = make_env(parent)
    result, _ = await run_turn(claude, TurnRequest(prompt="p"), cwd=repo, env=env)
    assert result.ok, result.error  # claude refuses to start under CLAUDECODE
    call = fake.last_call()
    keys = set(call["env_keys"])
    for gone in (
        "CLAUDECODE",
        "CLAUDE_CODE_ENTRYPOINT",
        "CLAUDE_CODE_SSE_PORT",
        "CODEX_SANDBOX",
        "CODEX_SANDBOX_NETWORK_DISABLED",
        "OPENCODE_SERVER_PASSWORD",
    ):
        assert gone not in keys
    for kept in (
        "CLAUDE_CODE_OAUTH_TOKEN",
        "CODEX_HOME",
        "OPENCODE_CONFIG",
        "PATH",
        "BOARD_URL",
        "BOARD_TOKEN",
        "BOT_HANDLE",
        "BOARD_WORKSPACE",
        "BOARD_WAKE_IDS",
    ):
        assert kept in keys
    assert call["BOARD_WAKE_IDS"] == "7,9"  # the bot's, not the parent's
    assert env["BOARD_TOKEN"] == "tok-secret"


async def test_without_scrubbing_claude_refuses_to_nest(fake: Fake, repo: Path, env: dict[str, str]) -> None:
    result, _ = await run_turn(claude, TurnRequest(prompt="p"), cwd=repo, env={**env, "CLAUDECODE": "1"})
    assert result.error_kind == "exit"
    assert "cannot be launched inside another Claude Code session" in (result.error or "")


async def test_adapter_environment_is_added(fake: Fake, repo: Path, env: dict[str, str]) -> None:
    result, _ = await run_turn(gemini, TurnRequest(prompt="p"), cwd=repo, env=env)
    assert result.ok, result.error  # the fake gemini exits 55 in an untrusted folder
    assert "GEMINI_CLI_TRUST_WORKSPACE" in fake.last_call()["env_keys"]


async def test_missing_executable(repo: Path, env: dict[str, str]) -> None:
    adapter = get_adapter("claude", executable=str(repo / "no-such-claude"))
    result, outcome = await run_turn(adapter, TurnRequest(prompt="p", session_id="s"), cwd=repo, env=env)
    assert outcome is None
    assert result.error_kind == "exit" and "could not start" in (result.error or "")
    assert result.session_id == "s"


async def test_cancelling_the_turn_kills_the_group(
    fake: Fake, repo: Path, env: dict[str, str], alive: Callable[[int], bool]
) -> None:
    fake.script({"do": "hang", "seconds": 60})
    task = asyncio.create_task(run_turn(claude, TurnRequest(prompt="p"), cwd=repo, env=env))
    await eventually(fake.calls, "the fake's call", 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    call = fake.last_call()
    for _ in range(40):
        if not alive(call["pid"]) and not alive(call["grandchild_pid"]):
            break
        await asyncio.sleep(0.05)
    assert not alive(call["pid"]) and not alive(call["grandchild_pid"])


async def test_concurrent_turns_each_take_their_own_step(fake: Fake, repo: Path, env: dict[str, str]) -> None:
    fake.script(*[{"do": "ok", "text": f"answer {i}"} for i in range(6)])
    runs = await asyncio.gather(
        *[run_turn(claude, TurnRequest(prompt="p"), cwd=repo, env=env) for _ in range(6)]
    )
    assert sorted(r.text for r, _ in runs) == [f"answer {i}" for i in range(6)]


def test_capped_buffer_keeps_head_and_tail_within_bounds() -> None:
    buf = CappedBuffer(1000)
    chunk = bytes(range(256)) * 256  # 64 KiB
    for _ in range(200):
        buf.feed(chunk)
        assert len(buf.head) + buf.tail_len <= 1000 + len(chunk)
    text = buf.text()
    assert buf.truncated
    assert f"[... {200 * len(chunk) - 1000} bytes dropped by the launcher ...]" in text
    assert text.startswith(chunk[:10].decode())


def test_capped_buffer_under_the_cap_is_exact() -> None:
    buf = CappedBuffer(100)
    buf.feed(b"hello ")
    buf.feed("wörld".encode())
    assert buf.text() == "hello wörld" and not buf.truncated


def test_child_env_and_identity() -> None:
    env = child_env(
        {"PATH": "/bin", "CLAUDECODE_X": "1", "OPENCODE_PID": "3", "BOT_HANDLE": "old"},
        identity_env("http://b", "t", "h", "w", [3, 4]),
    )
    assert env == {
        "PATH": "/bin",
        "BOARD_URL": "http://b",
        "BOARD_TOKEN": "t",
        "BOT_HANDLE": "h",
        "BOARD_WORKSPACE": "w",
        "BOARD_WAKE_IDS": "3,4",
    }
    assert scrubbed("OPENCODE_SESSION") and not scrubbed("OPENCODE_CONFIG_DIR")
    assert not scrubbed("CLAUDE_CODE_USE_BEDROCK") and not scrubbed("HOME")


@pytest.mark.parametrize(
    ("read", "name", "default"),
    [(turn_timeout, "BOT_TURN_TIMEOUT", 1800), (silent_timeout, "BOT_SILENT_TIMEOUT", 300)],
)
def test_timeouts_from_environment(
    read: Callable[[dict[str, str]], float], name: str, default: float
) -> None:
    assert read({}) == default
    assert read({name: "90"}) == 90
    for bad in ("soon", "0", "-5"):
        with pytest.raises(ValueError, match=name):
            read({name: bad})


def test_fakes_are_executable_symlinks() -> None:
    for name in ("claude", "codex", "opencode", "copilot", "gemini"):
        path = FAKES_BIN / name
        assert path.is_symlink() and os.access(path, os.X_OK)
    # They run under `/usr/bin/env python3`: the suite's own interpreter (tests/conftest.py).
    assert Path(shutil.which("python3") or "/").parent == Path(sys.executable).parent
