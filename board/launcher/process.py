"""Run one harness turn as a subprocess, bounded in time, memory and reach.

What every harness run gets, and why (each of these was learned from a CLI's
issue tracker):

- **stdin is /dev/null, or a pipe closed after the prompt.** Several CLIs read
  piped stdin to EOF before they start; an open pipe that nobody writes to
  hangs them forever. An adapter that passes its prompt on stdin (opencode)
  gets a pipe that is written and closed at once.
- **A new process group** (``start_new_session``), so that a timeout, or the
  end of the turn, can stop the harness together with everything it spawned
  (shells, test runners, MCP servers) by signalling the group.
- **A wall-clock timeout** that sends the group SIGTERM, waits a short grace,
  then SIGKILL, and reaps the harness.
- **A no-output watchdog**: a harness that prints nothing on stdout or stderr
  for the silence limit is ended the same way. Without a network, some CLIs
  retry forever without a word (opencode), and waiting for the wall clock
  would hold the bot for half an hour.
- **stdout and stderr read to EOF, always.** Closing a pipe early kills the
  harness with SIGPIPE in the middle of its work. What is kept in memory is
  capped: the head and the tail, with a note of how much of the middle was
  dropped (a JSONL stream's first line names the session, its last line holds
  the result).
- **Nothing left running.** Members of the group still alive when the harness
  exits get SIGTERM, then SIGKILL; a pipe still held open after that by a
  process that left the group is abandoned after a short wait.
- **A scrubbed environment** (`child_env`): variables a parent harness session
  sets for its own children are removed, so a daemon started from inside a
  Claude Code shell does not make every child claude refuse to start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..processes import end_group, signal_group
from .harnesses.base import (
    TRUNCATION_NOTE,
    Adapter,
    ErrorKind,
    Exit,
    TurnRequest,
    TurnResult,
    trim,
)

log = logging.getLogger(__name__)

DEFAULT_TURN_TIMEOUT = 1800.0  # BOT_TURN_TIMEOUT, seconds
DEFAULT_SILENT_TIMEOUT = 300.0  # BOT_SILENT_TIMEOUT, seconds
DEFAULT_STDOUT_CAP = 4 * 1024 * 1024
DEFAULT_STDERR_CAP = 1024 * 1024
DEFAULT_KILL_GRACE = 3.0  # between SIGTERM and SIGKILL
DRAIN_GRACE = 2.0  # for pipes to reach EOF once the harness is gone
REAP_WAIT = 5.0  # for the kernel to hand back a SIGKILLed harness
READ_CHUNK = 64 * 1024

# The bot's identity, set for the harness so the model's own curl calls (or the
# MCP server) reach the board as this bot. Inherited values are always dropped.
IDENTITY_VARS = ("BOARD_URL", "BOARD_TOKEN", "BOT_HANDLE", "BOARD_WORKSPACE", "BOARD_WAKE_IDS")

# Variables a harness session sets for the processes it runs. Inherited by a
# bot daemon started from such a shell, they would leak into every harness it
# runs. Configuration variables (CLAUDE_CODE_USE_BEDROCK, CLAUDE_CODE_OAUTH_TOKEN,
# CODEX_HOME, OPENCODE_CONFIG, ...) are the user's and are kept.
SCRUBBED_PREFIXES = (
    # CLAUDECODE=1 marks a Claude Code shell; a claude started under it refuses
    # to run ("cannot be launched inside another Claude Code session").
    "CLAUDECODE",
)
SCRUBBED_NAMES = frozenset(
    {
        "CLAUDE_CODE_ENTRYPOINT",  # the parent's entry point (cli, sdk-ts): nesting check
        "CLAUDE_CODE_SSE_PORT",  # the parent session's IDE connection
        "CODEX_SANDBOX",  # set inside codex's sandboxed shells (seatbelt)
        "CODEX_SANDBOX_NETWORK_DISABLED",  # ditto, when that sandbox has no network
        "GEMINI_CLI",  # set to 1 in gemini's shell tool
        "OPENCODE",  # marker of an opencode shell
    }
)
# OPENCODE_* is scrubbed (the parent's server, password, session and run
# state), except these, which are the user's configuration.
OPENCODE_KEPT = frozenset({"OPENCODE_CONFIG", "OPENCODE_CONFIG_DIR", "OPENCODE_CONFIG_CONTENT"})


def scrubbed(name: str) -> bool:
    """Whether an inherited variable is kept out of the harness's environment."""
    if name in IDENTITY_VARS or name in SCRUBBED_NAMES or name.startswith(SCRUBBED_PREFIXES):
        return True
    return name.startswith("OPENCODE_") and name not in OPENCODE_KEPT


def child_env(base_env: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """The harness's environment: base_env scrubbed (see `scrubbed`), then extra."""
    env = {k: v for k, v in base_env.items() if not scrubbed(k)}
    env.update(extra)
    return env


def identity_env(
    board_url: str,
    token: str,
    handle: str,
    workspace: str,
    wake_ids: Iterable[int],
) -> dict[str, str]:
    """The bot identity variables the spec gives every harness run."""
    return {
        "BOARD_URL": board_url,
        "BOARD_TOKEN": token,
        "BOT_HANDLE": handle,
        "BOARD_WORKSPACE": workspace,
        "BOARD_WAKE_IDS": ",".join(str(i) for i in wake_ids),
    }


def _positive_seconds(environ: Mapping[str, str], name: str, default: float) -> float:
    """A positive number of seconds from environ[name], or default; ValueError says what is wrong."""
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number of seconds, not {raw!r}") from None
    if not value > 0:
        raise ValueError(f"{name} must be positive, not {raw!r}")
    return value


def turn_timeout(environ: Mapping[str, str]) -> float:
    """BOT_TURN_TIMEOUT in seconds (default 1800)."""
    return _positive_seconds(environ, "BOT_TURN_TIMEOUT", DEFAULT_TURN_TIMEOUT)


def silent_timeout(environ: Mapping[str, str]) -> float:
    """BOT_SILENT_TIMEOUT in seconds (default 300): how long a turn may print nothing."""
    return _positive_seconds(environ, "BOT_SILENT_TIMEOUT", DEFAULT_SILENT_TIMEOUT)


@dataclass(frozen=True)
class ProcessOutcome:
    """How one harness process ran."""

    exit_code: int | None  # negative: killed by that signal; None: never reaped
    stdout: str
    stderr: str
    timed_out: bool  # ended at the wall-clock timeout
    truncated: bool  # stdout or stderr lost its middle to the memory cap
    pid: int
    started_at: float  # time.time()
    ended_at: float
    went_silent: bool = False  # ended by the no-output watchdog

    @property
    def duration(self) -> float:
        """Seconds from spawn to the end of the run."""
        return self.ended_at - self.started_at

    def stderr_tail(self, max_lines: int = 20, max_chars: int = 2000) -> str:
        """The last lines of stderr, trimmed, for a failure message."""
        return trim(self.stderr, max_lines, max_chars)


class CappedBuffer:
    """Bytes from a pipe, keeping the head and the tail within a cap.

    The tail is a deque of chunks, so dropping from its front costs nothing
    however much the harness prints; memory stays under cap plus one chunk.
    """

    def __init__(self, cap: int) -> None:
        if cap < 2:
            raise ValueError("cap must be at least 2 bytes")
        self.head_cap = cap // 2
        self.tail_cap = cap - self.head_cap
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_len = 0
        self.dropped = 0

    def feed(self, chunk: bytes) -> None:
        """Take a chunk, dropping from the middle once over the cap."""
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail.append(chunk)
        self.tail_len += len(chunk)
        while self.tail and self.tail_len - len(self.tail[0]) >= self.tail_cap:
            first = self.tail.popleft()
            self.tail_len -= len(first)
            self.dropped += len(first)

    @property
    def truncated(self) -> bool:
        return self.dropped > 0 or self.tail_len > self.tail_cap

    def text(self) -> str:
        """Everything kept, decoded, with a note where the middle was dropped."""
        tail = b"".join(self.tail)
        extra = len(tail) - self.tail_cap
        if extra > 0:
            tail = tail[extra:]
        dropped = self.dropped + max(extra, 0)
        if not dropped:
            return (bytes(self.head) + tail).decode("utf-8", "replace")
        note = f"\n[... {dropped} {TRUNCATION_NOTE} ...]\n"
        return self.head.decode("utf-8", "replace") + note + tail.decode("utf-8", "replace")


class Activity:
    """When the harness last printed anything, for the no-output watchdog."""

    def __init__(self) -> None:
        self.last = time.monotonic()

    def saw_output(self) -> None:
        self.last = time.monotonic()


async def _drain(stream: asyncio.StreamReader | None, buffer: CappedBuffer, activity: Activity) -> None:
    """Read a pipe to EOF into buffer; never stop early (SIGPIPE)."""
    if stream is None:
        return
    while chunk := await stream.read(READ_CHUNK):
        activity.saw_output()
        buffer.feed(chunk)


async def _feed(stream: asyncio.StreamWriter | None, data: bytes) -> None:
    """Write data to the harness's stdin and close it; a harness that exits unread is fine."""
    if stream is None:
        return
    try:
        stream.write(data)
        await stream.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        stream.close()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            await stream.wait_closed()


async def _wait_exit(
    proc: asyncio.subprocess.Process,
    waiter: asyncio.Task[int],
    timeout: float,
    activity: Activity | None = None,
    silent_timeout: float | None = None,
) -> str | None:
    """Wait for the harness itself to exit: None if it did, else why the wait ended.

    "timeout" after timeout seconds; "silent" once the harness has printed
    nothing for silent_timeout seconds (when given). proc.wait() also waits for
    the pipes to close, which a child left holding them can put off forever, so
    the return code is watched as well.
    """
    deadline = time.monotonic() + timeout
    while proc.returncode is None:
        now = time.monotonic()
        remaining = deadline - now
        if remaining <= 0:
            return "timeout"
        if activity is not None and silent_timeout is not None:
            quiet_left = activity.last + silent_timeout - now
            if quiet_left <= 0:
                return "silent"
            remaining = min(remaining, quiet_left)
        await asyncio.wait({waiter}, timeout=min(remaining, 0.1))
    return None


async def run_process(
    argv: list[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str],
    timeout: float = DEFAULT_TURN_TIMEOUT,
    silent_timeout: float | None = None,
    stdin_data: bytes | None = None,
    stdout_cap: int = DEFAULT_STDOUT_CAP,
    stderr_cap: int = DEFAULT_STDERR_CAP,
    kill_grace: float = DEFAULT_KILL_GRACE,
    drain_grace: float = DRAIN_GRACE,
    on_start: Callable[[int], object] | None = None,
) -> ProcessOutcome:
    """Run argv to the end, the timeout, or silent_timeout seconds without output.

    See the module docstring for the rules. stdin_data, when given, is written
    to the harness's stdin, which is then closed; otherwise stdin is /dev/null.
    on_start(pid) is called as soon as the process exists (the caller measures
    post-to-start latency with it); its errors are logged, never raised.
    Raises OSError when the program cannot be started at all.
    """
    started_at = time.time()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=dict(env),
        stdin=asyncio.subprocess.DEVNULL if stdin_data is None else asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    pgid = proc.pid  # start_new_session makes the harness its group's leader
    if on_start is not None:
        try:
            on_start(proc.pid)
        except Exception:
            log.exception("on_start callback failed for pid %s", proc.pid)

    out_buf, err_buf = CappedBuffer(stdout_cap), CappedBuffer(stderr_cap)
    activity = Activity()
    readers = {
        asyncio.create_task(_drain(proc.stdout, out_buf, activity)),
        asyncio.create_task(_drain(proc.stderr, err_buf, activity)),
    }
    if stdin_data is not None:
        readers.add(asyncio.create_task(_feed(proc.stdin, stdin_data)))
    waiter = asyncio.create_task(proc.wait())
    stopped: str | None = None
    try:
        stopped = await _wait_exit(proc, waiter, timeout, activity, silent_timeout)
        if stopped is not None:
            signal_group(pgid, signal.SIGTERM)
            if await _wait_exit(proc, waiter, kill_grace) is not None:
                signal_group(pgid, signal.SIGKILL)
                await _wait_exit(proc, waiter, REAP_WAIT)
        # The harness is gone; so must be whatever it left behind.
        await end_group(pgid, kill_grace)
        _, pending = await asyncio.wait(readers, timeout=drain_grace)
        if pending:
            # A process that left the group still holds a pipe: stop reading.
            log.warning("pid %s: a pipe stayed open after the harness exited", proc.pid)
            for reader in pending:
                reader.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            transport = getattr(proc, "_transport", None)
            if transport is not None:
                transport.close()
        # Pipes closed (or abandoned): wait() settles now; bounded all the same.
        await asyncio.wait({waiter}, timeout=drain_grace)
    except BaseException:
        # Cancelled (daemon shutting down) or worse: leave nothing running.
        signal_group(pgid, signal.SIGKILL)
        tasks: list[asyncio.Task[Any]] = [*readers, waiter]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*readers, waiter, return_exceptions=True)
        raise
    exit_code = proc.returncode
    if not waiter.done():
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
    return ProcessOutcome(
        exit_code=exit_code,
        stdout=out_buf.text(),
        stderr=err_buf.text(),
        timed_out=stopped == "timeout",
        truncated=out_buf.truncated or err_buf.truncated,
        pid=proc.pid,
        started_at=started_at,
        ended_at=time.time(),
        went_silent=stopped == "silent",
    )


async def run_turn(
    adapter: Adapter,
    req: TurnRequest,
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str],
    timeout: float = DEFAULT_TURN_TIMEOUT,
    silent_timeout: float = DEFAULT_SILENT_TIMEOUT,
    on_start: Callable[[int], object] | None = None,
    stdout_cap: int = DEFAULT_STDOUT_CAP,
    stderr_cap: int = DEFAULT_STDERR_CAP,
    kill_grace: float = DEFAULT_KILL_GRACE,
) -> tuple[TurnResult, ProcessOutcome | None]:
    """One harness turn: argv, run, parse. The outcome is None if it never started.

    env should already be the child's (see `child_env`); the adapter's own
    extra variables are added on top.
    """
    argv = adapter.argv(req)
    stdin_text = adapter.stdin(req)
    try:
        outcome = await run_process(
            argv,
            cwd=cwd,
            env={**env, **adapter.env(req)},
            timeout=timeout,
            silent_timeout=silent_timeout,
            stdin_data=None if stdin_text is None else stdin_text.encode("utf-8"),
            stdout_cap=stdout_cap,
            stderr_cap=stderr_cap,
            kill_grace=kill_grace,
            on_start=on_start,
        )
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return (
            TurnResult(
                ok=False,
                session_id=req.session_id,
                text="",
                error_kind="exit",
                error=f"could not start {argv[0]!r} in {os.fspath(cwd)}: {reason}",
                cost_usd=None,
                input_tokens=None,
                output_tokens=None,
            ),
            None,
        )
    result = adapter.parse(outcome.stdout, outcome.stderr, outcome.exit_code, outcome.duration)
    if outcome.timed_out or outcome.went_silent:
        session_id = result.session_id
        if session_id is None and not req.session_id and adapter.assigns_session_ids:
            session_id = req.fresh_session_id
        kind: ErrorKind
        if outcome.went_silent:
            kind, stopped = "silent", f"printed nothing for {silent_timeout:g} s"
        else:
            kind, stopped = "timeout", f"timed out after {timeout:g} s"
        result = replace(
            result,
            ok=False,
            session_id=session_id or req.session_id,
            error_kind=kind,
            error=outcome.stderr_tail(max_lines=10) or None,
            exit=Exit(outcome.exit_code, outcome.duration, stopped),
        )
    return result, outcome
