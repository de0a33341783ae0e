"""Start-up and shutdown around the loop: configuration, the pid lock, signals.

``bot run`` calls :func:`run`. One daemon per bot: the pid file in the bot's
state directory is held with an exclusive ``flock`` for the daemon's life, so
a second ``bot run`` for the same handle refuses to start, and ``bot status``
and ``bot stop`` can tell a live daemon from a stale pid file.

SIGTERM (or SIGINT) stops reading and lets a running turn finish for
``BOT_STOP_GRACE`` seconds (default 10); a second signal, or the end of the
grace, aborts it, which kills the harness's whole process group. Either way
the state is saved, and an aborted turn's messages run again at the next start.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..client import BoardAPIError, BoardClient
from .config import (
    ConfigError,
    Options,
    board_url,
    make_adapter,
    parse_seconds,
    resolve,
    state_dir,
    token_for,
    wake_filters,
)
from .logs import LOG_FILE, EventLog
from .loop import Bot, Fatal, Timing, backoff
from .pool import DEFAULT_CLONE_TIMEOUT, Pool
from .skills import install, install_from_board, prompt_note
from .state import StateFile

PID_FILE = "bot.pid"
# Locked by the keeper that keeps this bot running (board.keeper.supervisor): bot stop refuses then.
KEEPER_FILE = "keeper.pid"
EXIT_OK, EXIT_CONFIG, EXIT_AUTH, EXIT_RUNNING, EXIT_CRASH = 0, 2, 3, 4, 1


class AlreadyRunning(Exception):
    """Another daemon holds this bot's pid lock."""


class PidLock:
    """The bot's pid file, locked while the daemon runs."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise AlreadyRunning(
                f"a bot daemon already runs for this handle (pid {running_pid(self.path)})"
            ) from None
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except BaseException:  # a full disk: closed, the lock goes with it, not held for ever
            os.close(fd)
            raise
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, 0)
            os.close(self.fd)
            self.fd = None


def running_pid(path: Path) -> int | None:
    """The pid of the daemon holding path's lock, or None when none does."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 32, 0).decode(errors="replace").strip()
            return int(text) if text.isdigit() else -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


Retried = Callable[[BoardAPIError, int, float], None]  # the error, the attempt, the delay before the next


async def _until_reachable(fn: Any, retried: Retried, cap: float) -> Any:
    """fn() with retries while the board cannot be reached (start-up must survive that), each
    reported to retried; the waits double from 0.5 s up to cap."""
    attempt = 0
    while True:
        try:
            return await fn()
        except BoardAPIError as exc:
            if exc.code != "UNAVAILABLE":
                raise
            attempt += 1
            delay = backoff(attempt, 0.5, cap)
            retried(exc, attempt, delay)
            await asyncio.sleep(delay)


def _say_retry(url: str) -> Retried:
    """One line on stderr per try that did not reach the board: before the pid lock and the log
    exist, a daemon waiting in silence looks hung, and ``bot status`` calls it stopped."""

    def say(exc: BoardAPIError, attempt: int, delay: float) -> None:
        cause = exc.__cause__
        reason = (str(cause) or type(cause).__name__) if cause is not None else exc.message
        print(
            f"bot: cannot reach the board at {url}: {reason}; retrying in {delay:g} s "
            "(is it running? board ctl status)",
            flush=True,
            file=sys.stderr,
        )

    return say


def _log_retry(log: EventLog, what: str) -> Retried:
    def record(exc: BoardAPIError, attempt: int, delay: float) -> None:
        if attempt in (1, 10, 100):
            log.event("board_retry", call=what, code=exc.code, attempt=attempt, delay_s=delay)

    return record


def _not_a_bot(me: Mapping[str, Any], handle: str | None, environ: Mapping[str, str]) -> ConfigError:
    """Why a human's (or the runner's) token cannot run a bot, and where the bot's own is."""
    whose = f"{me['handle']}'s, a {me['kind']}'s token; a bot runs with its own"
    if not environ.get("BOARD_TOKEN", "").strip():
        assert handle is not None  # the token file is found by the handle
        return ConfigError(
            f"the token in {state_dir(environ, handle) / 'token'} is {whose}: put {handle}'s there"
        )
    if handle:
        where = f"{handle}'s token file, {state_dir(environ, handle) / 'token'}"
    else:
        where = "the bot's token file (name the bot with --handle)"
    return ConfigError(f"BOARD_TOKEN is {whose}: unset BOARD_TOKEN and the daemon reads {where}")


class _TokenRefused(ConfigError):
    """The board refused the token before the loop ran: exit 3, as the loop exits on one, so
    that a keeper fetches the bot a new token (exit 2 would leave it misconfigured for good)."""

    @classmethod
    def by(cls, exc: BoardAPIError) -> _TokenRefused:
        return cls(f"the board refused the token: {exc.code}: {exc.message}")


async def _identify(
    client: BoardClient, handle: str | None, environ: Mapping[str, str], retried: Retried, cap: float
) -> str:
    """The bot's handle: the token's, and the one given must be it.

    A handle given with someone else's token (a stand-in copied from a page) would answer that
    bot's wakes under a name the board does not know; a human's token would get as far as the
    wake feed, which is a bot's, and leave a state folder named after the human. A refused token
    exits 3 (:class:`_TokenRefused`)."""
    try:
        me = await _until_reachable(client.me, retried, cap)
    except BoardAPIError as exc:
        if exc.code == "UNAUTHENTICATED":
            raise _TokenRefused.by(exc) from None
        if handle:
            return handle
        raise ConfigError(f"cannot learn the bot's handle: {exc.code}: {exc.message}") from None
    if me["kind"] in ("human", "system"):  # a bot's kind is its harness label
        raise _not_a_bot(me, handle, environ)
    if handle and me["handle"] != handle:
        raise ConfigError(
            f"this token is {me['handle']}'s, not {handle}'s: "
            f"run with --handle {me['handle']}, or without --handle"
        )
    return str(me["handle"])


async def _configure(options: Options, environ: Mapping[str, str]) -> tuple[Any, BoardClient]:
    """Resolve the configuration, asking the board who the token is and for the profile."""
    url = board_url(options, environ)
    handle = options.handle or environ.get("BOT_HANDLE") or None
    token = token_for(handle, environ)
    cap = _retry_cap(environ)
    client = BoardClient(url, token)
    try:
        handle = await _identify(client, handle, environ, _say_retry(url), cap)
        profile = None
        name = options.profile or environ.get("BOT_PROFILE")
        if name:
            try:
                profile = await _until_reachable(lambda: client.profile(name), _say_retry(url), cap)
            except BoardAPIError as exc:
                if exc.code == "UNAUTHENTICATED":  # revoked since the look above
                    raise _TokenRefused.by(exc) from None
                raise ConfigError(f"profile {name!r}: {exc.code}: {exc.message}") from None
        cfg = resolve(options, environ, token=token, handle=handle, profile=profile)
    except BaseException:
        await client.close()
        raise
    return cfg, client


def _retry_cap(environ: Mapping[str, str]) -> float:
    """BOT_BOARD_RETRY_MAX: the longest wait between tries to reach the board."""
    return max(parse_seconds("BOT_BOARD_RETRY_MAX", environ.get("BOT_BOARD_RETRY_MAX"), 30.0), 0.1)


def _refused(exc: ConfigError) -> int:
    """Say why the daemon will not run, in words, as its last line: a terminal shows it, and the
    keeper's card and ``board doctor`` read the last line of its output, not the JSON log."""
    print(f"bot: {exc}", flush=True, file=sys.stderr)
    return EXIT_AUTH if isinstance(exc, _TokenRefused) else EXIT_CONFIG


@dataclass
class _Ready:
    """A daemon started up: what :func:`run` runs, and closes."""

    bot: Bot
    client: BoardClient
    lock: PidLock
    log: EventLog


async def _start(options: Options, environ: Mapping[str, str], timing: Timing | None) -> _Ready | int:
    """Everything before the loop: the configuration, the pid lock, the log, the skills; an exit
    code when the daemon will not run. What it made is undone when it is cancelled."""
    try:
        cfg, client = await _configure(options, environ)
    except ConfigError as exc:
        return _refused(exc)
    lock = PidLock(state_dir(environ, cfg.handle) / PID_FILE)
    try:
        lock.acquire()
    except AlreadyRunning as exc:
        await client.close()
        print(f"bot: {exc}", flush=True, file=sys.stderr)
        return EXIT_RUNNING
    cfg.state_dir.chmod(0o700)
    log = EventLog(cfg.state_dir / LOG_FILE, handle=cfg.handle, secrets=[cfg.token])
    try:
        cap = _retry_cap(environ)
        adapter = make_adapter(cfg)
        clone_timeout = parse_seconds(
            "BOT_CLONE_TIMEOUT", environ.get("BOT_CLONE_TIMEOUT"), DEFAULT_CLONE_TIMEOUT
        )
        skills = await install(
            cfg.skills,
            harness=cfg.harness,
            state_dir=cfg.state_dir,
            home=Path(environ.get("HOME") or Path.home()),
            environ=environ,
            clone_timeout=clone_timeout,
        )
        await _until_reachable(
            lambda: install_from_board(
                client,
                cfg.profile_skills,
                harness=cfg.harness,
                state_dir=cfg.state_dir,
                home=Path(environ.get("HOME") or Path.home()),
                log=log,
            ),
            _log_retry(log, "skills"),
            cap,
        )
        if timing is None:
            stream_retry = parse_seconds("BOT_STREAM_RETRY", environ.get("BOT_STREAM_RETRY"), 60.0)
            timing = Timing(retry_cap=cap, stream_retry=stream_retry)
    except ConfigError as exc:
        log.event("config_error", error=str(exc))
        lock.release()
        await client.close()
        return _refused(exc)
    except BaseException:
        lock.release()
        await client.close()
        raise
    pool = None
    if cfg.pool is not None:
        pool = Pool(cfg.pool, client, log, clone_timeout=clone_timeout, environ=environ)
    profile = cfg.profile

    async def rescope() -> tuple[tuple[str, ...], int | None]:
        assert profile is not None  # given only with one
        return wake_filters(options, environ, await client.profile(profile))

    bot = Bot(
        cfg,
        client,
        adapter,
        log=log,
        state_file=StateFile(cfg.state_dir),
        pool=pool,
        # The board's first turn names the profile's skills; the daemon names its own.
        skills_note=prompt_note(skills) if skills else "",
        timing=timing,
        rescope=rescope if profile is not None else None,
    )
    return _Ready(bot, client, lock, log)


async def run(options: Options, environ: Mapping[str, str], *, timing: Timing | None = None) -> int:
    """bot run: the daemon's whole life; returns the process exit code.

    SIGTERM and SIGINT are taken from the first moment: one that comes while the daemon still
    starts (waiting for a board that is down, cloning a skill) ends the start and exits 0."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    ready: _Ready | None = None

    def on_signal(signum: int) -> None:
        if ready is not None and stop.is_set():
            ready.bot.abort()
        elif not stop.is_set():
            if ready is not None:
                ready.log.event("signal", signal=signal.Signals(signum).name)
            stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        stopper = asyncio.ensure_future(stop.wait())
        starting = asyncio.ensure_future(_start(options, environ, timing))
        await asyncio.wait({starting, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if not starting.done():
            starting.cancel()
            await asyncio.gather(starting, return_exceptions=True)
            return EXIT_OK
        stopper.cancel()
        started = starting.result()
        if isinstance(started, int):
            return started
        ready = started
        try:
            await ready.bot.run(stop)
        except Fatal as exc:
            ready.log.event("fatal", error=str(exc))
            return EXIT_AUTH
        except Exception as exc:
            ready.log.event("crashed", error=f"{type(exc).__name__}: {exc}")
            return EXIT_CRASH
        finally:
            await ready.client.close()
            ready.lock.release()
        return EXIT_OK
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
