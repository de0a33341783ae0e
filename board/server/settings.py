"""The one table of settings: every knob of the board, its default and its help.

Each setting is read from the environment (``BOARD_<NAME>``) and may be
overridden by the caller of :func:`load` (the CLI passes its options here).
The README's settings table is generated from :data:`SETTINGS` and a test
keeps the two in step.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any


def _default_db() -> str:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return str(Path(state) / "bot-board" / "board.db")


@dataclass(frozen=True)
class Settings:
    """Resolved configuration of one board process."""

    db: str = field(default_factory=_default_db, metadata={"help": "SQLite database file."})
    bind: str = field(default="127.0.0.1", metadata={"help": "Address to listen on."})
    public_url: str = field(
        default="",
        metadata={
            "help": "The board's address in documents and prompts; its host is answered besides loopback."
        },
    )
    port: int = field(default=8080, metadata={"help": "TCP port to listen on."})
    max_bytes: int = field(
        default=24_000, metadata={"help": "Byte cap of one list response (a request may lower it)."}
    )
    write_rate: float = field(default=20.0, metadata={"help": "Writes per second per token."})
    write_burst: int = field(default=100, metadata={"help": "Burst of writes per token."})
    max_wait: int = field(
        default=60, metadata={"help": "Longest long-poll hold in seconds (a longer wait= is cut to it)."}
    )
    max_waits: int = field(
        default=8,
        metadata={"help": "Long-polls one token may hold at once; a newer one answers the oldest at once."},
    )
    readers: int = field(default=4, metadata={"help": "Read connections to the database."})
    sweep_every: int = field(default=300, metadata={"help": "Seconds between sweeps."})
    stall_after: int = field(
        default=1800, metadata={"help": "Seconds without progress before a claim is nudged."}
    )
    release_after: int = field(
        default=7200, metadata={"help": "Seconds without progress before a claim is released."}
    )
    log_level: str = field(default="INFO", metadata={"help": "Logging level."})
    log_file: str = field(default="", metadata={"help": "Also write the JSON-lines log to this file."})


SETTINGS = tuple(fields(Settings))


def _coerce(name: str, kind: Any, raw: Any) -> Any:
    if kind in (int, "int"):
        try:
            return int(raw)
        except (TypeError, ValueError):
            raise ValueError(f"BOARD_{name.upper()} must be a whole number, not {raw!r}") from None
    if kind in (float, "float"):
        try:
            return float(raw)
        except (TypeError, ValueError):
            raise ValueError(f"BOARD_{name.upper()} must be a number, not {raw!r}") from None
    return str(raw)


def load(overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None) -> Settings:
    """Settings from the environment, then ``overrides`` (``None`` values are ignored)."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    for f in SETTINGS:
        raw = env.get(f"BOARD_{f.name.upper()}")
        if raw is not None and raw != "":
            values[f.name] = _coerce(f.name, f.type, raw)
    for name, value in (overrides or {}).items():
        if value is not None:
            values[name] = value
    return Settings(**values)
