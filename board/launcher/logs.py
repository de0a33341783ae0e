"""The bot's log: one JSON object per line, in its state directory and on stderr.

What happened and how long it took (wakes, turns, latencies, retries), never
what was said: message bodies, prompts and answers stay out, and the token is
scrubbed from any text that might carry it (a harness's stderr can echo its
environment). ``bot logs HANDLE`` prints the tail.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

LOG_FILE = "bot.log"
MAX_BYTES = 5 * 1024 * 1024  # then bot.log becomes bot.log.1 (one old file kept)
TEXT_CAP = 500
# Fields that would carry what people and models wrote: refused outright.
FORBIDDEN = frozenset({"body", "prompt", "text", "token", "answer"})


class EventLog:
    """``log.event("turn", outcome="ok", latency_ms=12)`` appends one JSON line."""

    def __init__(
        self,
        path: Path | None,
        *,
        handle: str,
        secrets: Iterable[str] = (),
        stream: TextIO | None = sys.stderr,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        self.path = path
        self.handle = handle
        self.secrets = [s for s in secrets if s]
        self.stream = stream
        self.max_bytes = max_bytes

    def redact(self, text: str) -> str:
        """Text with every secret replaced (for anything the daemon writes or posts)."""
        for secret in self.secrets:
            text = text.replace(secret, "[token]")
        return text

    def scrub(self, text: str) -> str:
        """Redacted and bounded, for a log line."""
        text = self.redact(text)
        return text if len(text) <= TEXT_CAP else text[: TEXT_CAP - 3] + "..."

    def event(self, name: str, **fields: Any) -> None:
        bad = FORBIDDEN & fields.keys()
        if bad:
            raise ValueError(f"log fields {sorted(bad)} would carry message text or a token")
        record: dict[str, Any] = {
            "at": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "bot": self.handle,
            "event": name,
        }
        for key, value in fields.items():
            record[key] = self.scrub(value) if isinstance(value, str) else value
        line = json.dumps(record, default=str) + "\n"
        if self.path is not None:
            self._append(line)
        if self.stream is not None:
            try:
                self.stream.write(line)
                self.stream.flush()
            except (OSError, ValueError):
                pass  # stderr closed: the file still has it

    def _append(self, line: str) -> None:
        assert self.path is not None
        try:
            if self.path.stat().st_size + len(line) > self.max_bytes:
                os.replace(self.path, self.path.with_name(self.path.name + ".1"))
        except FileNotFoundError:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)


def tail(path: Path, lines: int) -> list[str]:
    """The last lines of a log file (and of its rotated predecessor if needed).

    Reads from the end, so asking for a few lines of a full log costs a few kilobytes.
    """
    out: list[str] = []
    for candidate in (path, path.with_name(path.name + ".1")):
        if len(out) >= lines:
            break
        out = _last_lines(candidate, lines - len(out)) + out
    return out[-lines:] if lines else []


def _last_lines(path: Path, count: int) -> list[str]:
    try:
        f = path.open("rb")
    except FileNotFoundError:
        return []
    with f:
        position = f.seek(0, os.SEEK_END)
        data, step = b"", 8192
        while position > 0 and data.count(b"\n") <= count:
            size = min(step, position)
            position -= size
            f.seek(position)
            data = f.read(size) + data
            step *= 2
    found = data.decode(errors="replace").splitlines()
    if position > 0:
        found = found[1:]  # the first line read is cut
    return found[-count:] if count else []
