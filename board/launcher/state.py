"""The bot's memory between runs: cursor, sessions, failures, the turn in flight.

One JSON file, ``state.json`` in the bot's state directory, replaced atomically
(written to a temporary file, flushed to disk, renamed over the old one), so a
``kill -9`` at any moment leaves either the old state or the new one, never a
torn file. The loop saves it after every step that must survive a crash.

Why each field is kept:

- ``cursor``: every message with an id at or below it has been handled; the
  next wake asks ``since=cursor``. It only moves after the turn's wake record
  and receipts are on the board (at least once delivery).
- ``handled``: ids above the cursor already handled (in pool mode one channel
  can finish before another that started earlier), so a restart does not run
  them again.
- ``sessions``: the latest harness session id per session key ("" for a
  single bot, the channel in pool mode).
- ``session_use``: per session key, the session these counts are of, the
  turns it has run and its length in tokens after its last turn
  (``{"session": id, "turns": n, "tokens": n}``), so that session rotation
  survives a restart.
- ``failures`` / ``thread_failures``: consecutive failed turns per session key
  (drives the backoff) and per thread (the third in a row releases the claim).
- ``inflight``: the turns running now, with their harness's pid and start
  time, so a daemon restarted after a crash can end an orphaned harness and
  tell the next turn that these messages were interrupted.
- ``worktrees``: with ``--worktrees``, each thread's worktree (its folder,
  branch, base, ``live`` or ``kept``, when it was made, its session, and
  whether the bot was seen holding the thread's claim), so a restarted daemon
  adopts them instead of making second ones; the keeper reads it too.
- ``watch_from``: the board's cursor when the bot first started; older watched
  messages are history, not work.
- ``harness``: the harness the sessions are of. A bot started with another
  forgets them (:meth:`BotState.take_harness`): the new one cannot resume them.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

STATE_FILE = "state.json"
MAX_HANDLED = 10_000  # ids kept above the cursor; far more than any backlog of turns
MAX_THREAD_FAILURES = 200


@dataclass
class BotState:
    cursor: int = 0
    handled: list[int] = field(default_factory=list)
    sessions: dict[str, str] = field(default_factory=dict)
    session_use: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    thread_failures: dict[str, int] = field(default_factory=dict)
    inflight: dict[str, dict[str, Any]] = field(default_factory=dict)
    interrupted: dict[str, list[int]] = field(default_factory=dict)
    last_wake: dict[str, Any] | None = None
    watch_from: int | None = None
    # Per thread id, its worktree: path, branch, base, state (live|kept), created_at, session, held.
    worktrees: dict[str, dict[str, Any]] = field(default_factory=dict)
    held: dict[str, Any] | None = None  # the board holds the bot's wakes: its daily budget (the feed's held)
    harness: str | None = None  # the sessions' harness (a file from before it was kept: unknown)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BotState:
        """Known fields only, so an older or newer daemon's file still loads."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def take_harness(self, harness: str) -> list[str]:
        """Run with ``harness`` from now on; the session keys forgotten because they were
        another harness's. Resumed by this one, each failed its turn and cost a second, fresh
        one (codex told to resume a claude session)."""
        if self.harness in (None, harness):
            self.harness = harness
            return []
        self.harness = harness
        forgotten = sorted(self.sessions) + sorted(
            f"t{thread}" for thread, tree in self.worktrees.items() if tree.get("session")
        )
        self.sessions.clear()
        self.session_use.clear()
        for tree in self.worktrees.values():
            tree["session"] = None
        return forgotten

    def mark_handled(self, ids: list[int], read_position: int, pending: set[int]) -> None:
        """Ids are done; move the cursor as far as nothing pending holds it back."""
        done = set(self.handled) | set(ids)
        limit = min(pending) - 1 if pending else read_position
        self.cursor = max(self.cursor, limit)
        self.handled = sorted(i for i in done if i > self.cursor)[-MAX_HANDLED:]

    def note_thread_failure(self, thread_id: int) -> int:
        """One more failure in a row on this thread; returns the count."""
        key = str(thread_id)
        count = self.thread_failures.pop(key, 0) + 1
        self.thread_failures[key] = count  # re-inserted: most recent last
        while len(self.thread_failures) > MAX_THREAD_FAILURES:
            self.thread_failures.pop(next(iter(self.thread_failures)))
        return count


class StateFile:
    """Load and save one bot's state.json, atomically."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / STATE_FILE

    def load(self) -> BotState:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return BotState()
        if not isinstance(data, dict):
            raise ValueError(f"{self.path} does not hold a JSON object")
        return BotState.from_json(data)

    def save(self, state: BotState) -> None:
        write_atomic(self.path, json.dumps(state.to_json(), indent=1, sort_keys=True) + "\n")


def write_atomic(path: Path, text: str, mode: int = 0o600) -> None:
    """Replace path with text so that a crash leaves the old file or the new, whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
