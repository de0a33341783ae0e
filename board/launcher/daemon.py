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
from collections.abc import Mapping
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
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
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


async def _until_reachable(fn: Any, log: EventLog | None, what: str) -> Any:
    """fn() with retries while the board cannot be reached (start-up must survive that)."""
    attempt = 0
    while True:
        try:
            return await fn()
        except BoardAPIError as exc:
            if exc.code != "UNAVAILABLE":
                raise
            attempt += 1
            if log is not None and attempt in (1, 10, 100):
                log.event("board_retry", call=what, code=exc.code, attempt=attempt)
            await asyncio.sleep(backoff(attempt, 0.5, 30.0))


async def _check_handle(client: BoardClient, handle: str) -> None:
    """A handle given with someone else's token (a stand-in copied from a page) would answer that
    bot's wakes under a name the board does not know. A refused token is left to the loop (exit 3)."""
    try:
        me = await _until_reachable(client.me, None, "me")
    except BoardAPIError:
        return
    if me["handle"] != handle:
        raise ConfigError(
            f"this token is {me['handle']}'s, not {handle}'s: "
            f"run with --handle {me['handle']}, or without --handle"
        )


async def _configure(options: Options, environ: Mapping[str, str]) -> tuple[Any, BoardClient]:
    """Resolve the configuration, asking the board for the profile and handle as needed."""
    url = board_url(options, environ)
    handle = options.handle or environ.get("BOT_HANDLE") or None
    token = token_for(handle, environ)
    client = BoardClient(url, token)
    try:
        profile = None
        name = options.profile or environ.get("BOT_PROFILE")
        if name:
            try:
                profile = await _until_reachable(lambda: client.profile(name), None, "profile")
            except BoardAPIError as exc:
                raise ConfigError(f"profile {name!r}: {exc.code}: {exc.message}") from None
        if not handle:
            try:
                me = await _until_reachable(client.me, None, "me")
            except BoardAPIError as exc:
                raise ConfigError(f"cannot learn the bot's handle: {exc.code}: {exc.message}") from None
            handle = str(me["handle"])
        else:
            await _check_handle(client, handle)
        cfg = resolve(options, environ, token=token, handle=handle, profile=profile)
    except BaseException:
        await client.close()
        raise
    return cfg, client


def _refused(exc: ConfigError) -> int:
    """Say why the daemon will not run, in words, as its last line: a terminal shows it, and the
    keeper's card and ``board doctor`` read the last line of its output, not the JSON log."""
    print(f"bot: {exc}", flush=True, file=sys.stderr)
    return EXIT_CONFIG


async def run(options: Options, environ: Mapping[str, str], *, timing: Timing | None = None) -> int:
    """bot run: the daemon's whole life; returns the process exit code."""
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
            log,
            "skills",
        )
        if timing is None:
            retry_cap = parse_seconds("BOT_BOARD_RETRY_MAX", environ.get("BOT_BOARD_RETRY_MAX"), 30.0)
            stream_retry = parse_seconds("BOT_STREAM_RETRY", environ.get("BOT_STREAM_RETRY"), 60.0)
            timing = Timing(retry_cap=max(retry_cap, 0.1), stream_retry=stream_retry)
    except ConfigError as exc:
        log.event("config_error", error=str(exc))
        lock.release()
        await client.close()
        return _refused(exc)
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
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        if stop.is_set():
            bot.abort()
        else:
            log.event("signal", signal=signal.Signals(signum).name)
            stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        await bot.run(stop)
    except Fatal as exc:
        log.event("fatal", error=str(exc))
        return EXIT_AUTH
    except Exception as exc:
        log.event("crashed", error=f"{type(exc).__name__}: {exc}")
        return EXIT_CRASH
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        await client.close()
        lock.release()
    return EXIT_OK
