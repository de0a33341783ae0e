"""The one table of settings: every knob of the board, its default and its help.

Each setting is read, lowest first, from a TOML file (``BOARD_CONFIG``, else
``~/.config/bot-board/board.toml``; top-level keys named like the settings),
the environment (``BOARD_<NAME>``), and the caller of :func:`load` (the CLI
passes its options here). :func:`write_file` sets keys of that file and keeps the
rest (``install.sh`` records there what it was told, so that every later shell and
the service read the same board). The README's settings table is generated from
:data:`SETTINGS` (``python -m board.server.settings --readme README.md``
rewrites it) and a test keeps the two in step.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, Field, dataclass, field, fields
from pathlib import Path
from typing import Any


def _default_db() -> str:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return str(Path(state) / "bot-board" / "board.db")


def config_path(env: Mapping[str, str] | None = None) -> Path:
    """The TOML file of settings: ``BOARD_CONFIG``, else ``board.toml`` in the user's config folder."""
    env = os.environ if env is None else env
    if env.get("BOARD_CONFIG"):
        return Path(env["BOARD_CONFIG"]).expanduser()
    config = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "bot-board" / "board.toml"


@dataclass(frozen=True)
class Settings:
    """Resolved configuration of one board process."""

    db: str = field(
        default_factory=_default_db,
        metadata={"help": "SQLite database file.", "shown": "~/.local/state/bot-board/board.db"},
    )
    database_url: str = field(
        default="",
        metadata={
            "help": "A `postgresql://` URL: run on PostgreSQL instead of the SQLite file, so that "
            "several board processes can share one database (docs/scale.md)."
        },
    )
    bind: str = field(
        default="127.0.0.1",
        metadata={
            "help": "Address to listen on (anything else prints a warning: bots run commands for "
            "whoever can post to them)."
        },
    )
    public_url: str = field(
        default="",
        metadata={
            "help": "The board's address in documents and prompts; its host is answered besides loopback."
        },
    )
    port: int = field(default=8080, metadata={"help": "TCP port to listen on."})
    header_timeout: float = field(
        default=10.0,
        metadata={
            "help": "Seconds a request's line and headers may take to arrive; then the connection closes."
        },
    )
    body_timeout: float = field(
        default=30.0,
        metadata={"help": "Seconds a request's body may take to arrive; then the connection closes."},
    )
    max_bytes: int = field(
        default=24_000, metadata={"help": "Byte cap of one list response (a request may lower it)."}
    )
    write_rate: float = field(default=20.0, metadata={"help": "Writes per second per token."})
    write_burst: int = field(default=100, metadata={"help": "Burst of writes per token."})
    max_wait: int = field(
        default=60,
        metadata={
            "help": "Longest long-poll hold in seconds (a longer `wait=` is cut to it, e.g. behind a "
            "proxy with a shorter timeout)."
        },
    )
    max_waits: int = field(
        default=8,
        metadata={"help": "Long-polls one token may hold at once; a newer one answers the oldest at once."},
    )
    stream_buffer: int = field(
        default=1000,
        metadata={
            "help": "Events a daemon's wake stream, or a page's live stream, may fall behind its reader "
            "before the board cuts it (the daemon reconnects with its cursor, the page's event source "
            "with its last event)."
        },
    )
    unreachable_after: int = field(
        default=300,
        metadata={
            "help": "Seconds without a daemon long-polling a bot's wake feed after which a message "
            "to that bot shows as `unreachable` instead of `queued`."
        },
    )
    readers: int = field(default=4, metadata={"help": "Read connections to the database."})
    sweep_every: int = field(default=300, metadata={"help": "Seconds between sweeps."})
    stall_after: int = field(
        default=1800, metadata={"help": "Seconds without progress before a claim is nudged."}
    )
    release_after: int = field(
        default=7200, metadata={"help": "Seconds without progress before a claim is released."}
    )
    intake_window: int = field(
        default=600,
        metadata={
            "help": "Seconds a forge's webhook may be late: an issue or comment last updated "
            "longer ago is refused as stale (forges send no timestamp header; docs/intake.md)."
        },
    )
    login_link_ttl: int = field(
        default=86400, metadata={"help": "Seconds a one-time login link stays valid."}
    )
    session_ttl: int = field(default=30 * 86400, metadata={"help": "Seconds a browser stays signed in."})
    notify_allow_local: int = field(
        default=0,
        metadata={
            "help": "1: notification destinations may be on loopback or link-local addresses (the "
            "board's own machine); 0 refuses to send there (docs/security.md)."
        },
    )
    log_level: str = field(default="INFO", metadata={"help": "Logging level."})
    log_file: str = field(default="", metadata={"help": "Also write the JSON-lines log to this file."})


SETTINGS = tuple(fields(Settings))


def state_dir(settings: Settings) -> Path:
    """Where the board keeps what is not the database: pid file, log, backups (the database's folder)."""
    return Path(settings.db).expanduser().parent


def local_url(settings: Settings) -> str:
    """The board as a command on its own machine reaches it: its port on loopback for a wildcard bind."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(settings.bind, settings.bind)
    return f"http://{f'[{host}]' if ':' in host else host}:{settings.port}"


def announced_url(settings: Settings) -> str:
    """The address to hand to a person or another machine: ``public_url``, else :func:`local_url`."""
    return settings.public_url.rstrip("/") or local_url(settings)


def _coerce(name: str, kind: Any, raw: Any) -> Any:
    if kind in (int, "int"):
        try:
            return int(raw)
        except (TypeError, ValueError):
            raise ValueError(f"{name} (BOARD_{name.upper()}) must be a whole number, not {raw!r}") from None
    if kind in (float, "float"):
        try:
            return float(raw)
        except (TypeError, ValueError):
            raise ValueError(f"{name} (BOARD_{name.upper()}) must be a number, not {raw!r}") from None
    return str(raw)


def _from_file(path: Path, explicit: bool) -> dict[str, Any]:
    """The settings a TOML file names; a missing file is no settings unless it was named."""
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        if explicit:
            raise ValueError(f"BOARD_CONFIG names {path}, which does not exist") from None
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"cannot read the settings file {path}: {exc}") from None
    known = {f.name: f for f in SETTINGS}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ValueError(f"{path}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return {name: _coerce(name, known[name].type, value) for name, value in data.items()}


def _resolve(
    overrides: Mapping[str, Any] | None, env: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The values set by the file, the environment and ``overrides``, and where each came from."""
    path = config_path(env)
    values = _from_file(path, explicit=bool(env.get("BOARD_CONFIG")))
    origins = {name: str(path) for name in values}
    for f in SETTINGS:
        raw = env.get(f"BOARD_{f.name.upper()}")
        if raw is not None and raw != "":
            values[f.name] = _coerce(f.name, f.type, raw)
            origins[f.name] = f"BOARD_{f.name.upper()}"
    for name, value in (overrides or {}).items():
        if value is not None:
            values[name] = value
            origins[name] = "flag"
    if "db" in values:
        values["db"] = str(Path(values["db"]).expanduser())
    return values, origins


def load(overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None) -> Settings:
    """Settings from the file, the environment, then ``overrides`` (``None`` values are ignored)."""
    values, _ = _resolve(overrides, os.environ if env is None else env)
    return Settings(**values)


def origins(
    overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Where :func:`load` takes each setting that is not its default from: the file's path,
    ``BOARD_<NAME>``, or ``flag``; raises ValueError as :func:`load` does."""
    return _resolve(overrides, os.environ if env is None else env)[1]


def _setting_line(name: str, value: Any) -> str:
    # A JSON string is a TOML basic string (write_file's reading back catches the rare exception).
    return f"{name} = {json.dumps(value, ensure_ascii=False) if isinstance(value, str) else repr(value)}"


def _line_key(line: str) -> str | None:
    """The setting a line of the file sets on its own (``key = value``), else None."""
    try:
        parsed = tomllib.loads(line)
    except tomllib.TOMLDecodeError:
        return None
    return next(iter(parsed)) if len(parsed) == 1 else None


def write_file(values: Mapping[str, str], env: Mapping[str, str] | None = None) -> Path:
    """Set ``values`` (setting name to text) in the settings file, keeping its other lines.

    A value replaces the line that set it, or is appended. The new text is read back before
    it is written to a temporary file of mode 0600 beside the old one and renamed over it,
    so a reader sees the old file or the new one, and never a file others may read.
    """
    env = os.environ if env is None else env
    path = config_path(env)
    known = {f.name: f for f in SETTINGS}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ValueError(f"unknown setting(s) {', '.join(unknown)}; known: {', '.join(known)}")
    wanted = {name: _coerce(name, known[name].type, raw) for name, raw in values.items()}
    old = _from_file(path, explicit=False)  # a file that does not read is refused, not replaced
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    keys = [_line_key(line) for line in lines]
    out = [
        line if key not in wanted else _setting_line(key, wanted[key])
        for key, line in zip(keys, lines, strict=True)
    ]
    out += [_setting_line(name, value) for name, value in wanted.items() if name not in keys]
    text = "\n".join(out) + "\n"
    try:
        same = tomllib.loads(text) == {**old, **wanted}
    except tomllib.TOMLDecodeError:
        same = False
    if not same:  # a value over several lines, or one the JSON quoting does not make TOML
        raise ValueError(f"cannot rewrite {path} line by line; set {', '.join(wanted)} in it by hand")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return path


README_START = "<!-- settings table: generated by python -m board.server.settings --readme README.md -->"
README_END = "<!-- end of settings table -->"


def _shown_default(f: Field[Any]) -> str:
    if "shown" in f.metadata:
        return f"`{f.metadata['shown']}`"
    value = f.default if f.default is not MISSING else None
    return "(none)" if value in (None, "") else f"`{value}`"


def markdown_table() -> str:
    """The README's settings table, one row per setting in declaration order."""
    rows = ["| variable | in board.toml | default | meaning |", "| --- | --- | --- | --- |"]
    for f in SETTINGS:
        rows.append(f"| `BOARD_{f.name.upper()}` | `{f.name}` | {_shown_default(f)} | {f.metadata['help']} |")
    return "\n".join(rows) + "\n"


def with_table(readme: str) -> str:
    """``readme`` with the text between the table's markers replaced by :func:`markdown_table`."""
    head, start, rest = readme.partition(README_START)
    _, end, tail = rest.partition(README_END)
    if not start or not end:
        raise ValueError(f"the README lacks the markers {README_START!r} ... {README_END!r}")
    return f"{head}{start}\n{markdown_table()}{end}{tail}"


def _assignment(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    return name.strip(), value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Print or write the README's settings table, or set settings."
    )
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--readme", metavar="PATH", help="rewrite the table in this file")
    what.add_argument(
        "--set",
        dest="assignments",
        metavar="NAME=VALUE",
        type=_assignment,
        action="append",
        help="set NAME in the settings file (BOARD_CONFIG, else ~/.config/bot-board/board.toml); repeatable",
    )
    args = parser.parse_args(argv)
    if args.assignments:
        values = dict(args.assignments)
        try:
            path = write_file(values)
        except ValueError as exc:
            parser.exit(1, f"{parser.prog}: {exc}\n")
        sys.stdout.write(f"wrote {', '.join(values)} to {path}\n")
        return 0
    if args.readme is None:
        sys.stdout.write(markdown_table())
        return 0
    path = Path(args.readme)
    path.write_text(with_table(path.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
