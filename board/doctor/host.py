"""The checks of what is on the board's machine: its answer, its database, settings, files, disk.

The database is opened read-only by SQLite itself (``mode=ro``): a check never
creates, migrates or repairs anything. Pid files and lock files are ``flock``
locks (``board.db.lock``, ``keeper.pid``, each bot's ``bot.pid``): the kernel
lets one go when its process dies, so a file left behind blocks nothing; only
a pid file naming another live program, or a lock held by a board that does
not answer, needs a human.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

from .. import __version__, ctl
from ..keeper.config import PID_FILE as KEEPER_PID
from ..keeper.config import keeper_dir
from ..launcher.config import state_root
from ..launcher.daemon import PID_FILE as BOT_PID
from ..launcher.daemon import running_pid
from ..server.settings import Settings, config_path, local_url, state_dir
from ..server.store.backup import integrity, stored_version
from ..server.store.schema import schema_version
from ..server.store.sqlitefile import FILE_ERRORS, lock_path
from ..server.store.urls import redacted
from ..server.store.writer import StoreError
from .check import Check


def restore_fix(settings: Settings) -> str:
    backups = state_dir(settings) / "backups"
    return (
        f"stop the board (board ctl stop), put your latest backup back (board restore BACKUP, "
        f"from {backups}), then board ctl start"
    )


#: Bot pid files looked at, at most (one per bot this machine's keeper ran).
MAX_BOT_PIDS = 500


def board(settings: Settings) -> Check:
    """The board answers ``/healthz`` on its own address, running the version installed here."""
    url = local_url(settings)
    answer = ctl.health(url)
    if answer is None:
        return Check(
            "board",
            "fail",
            f"nothing answers at {url}/healthz",
            "start it: board ctl start (or systemctl --user start board), then look at board ctl logs",
        )
    pid = f" (pid {answer['pid']})" if answer.get("pid") else ""
    shown = f"answers at {url}, version {answer.get('version')}{pid}"
    if answer.get("version") != __version__:
        return Check(
            "board",
            "fail",
            f"{shown}, but version {__version__} is installed",
            "restart it to run the installed version: board ctl restart (or systemctl --user restart board)",
        )
    return Check("board", "ok", shown)


def _schema(version: int, where: str) -> Check:
    known = schema_version()
    if version == known:
        return Check("database schema", "ok", f"version {version}, as this board expects")
    if version > known:
        return Check(
            "database schema",
            "fail",
            f"{where} has version {version}, newer than this board understands ({known})",
            "install the board version that wrote it (install.sh upgrade)",
        )
    return Check(
        "database schema",
        "fail",
        f"{where} has version {version}, older than this board's {known}: no board of this version ran on it",
        "take a backup (board backup DIR), then restart the board, which migrates it: board ctl restart",
    )


def _sqlite(settings: Settings) -> tuple[list[Check], bool]:
    path = Path(settings.db)
    if not path.exists():
        return [
            Check(
                "database",
                "fail",
                f"no database at {path}",
                "start the board, which creates it, or point BOARD_DB (db in board.toml) at yours",
            )
        ], False
    try:
        verdict = integrity(path, most=5)
    except StoreError as exc:  # the check could not be made (no room to play a journal back)
        fix = "the temporary folder (TMPDIR) needs room for a copy of the database"
        return [Check("database integrity", "warn", str(exc), fix)], False
    if verdict != "ok":
        found = Check("database integrity", "fail", f"{path}: {verdict}", restore_fix(settings))
    else:
        found = Check("database integrity", "ok", f"{path}: integrity_check ok")
    try:
        version = stored_version(path)
    except (*FILE_ERRORS, StoreError):
        return [found, Check("database schema", "skip", "the database does not read")], False
    schema = _schema(version, str(path))
    return [found, schema], found.status == "ok" and schema.status == "ok"


def _postgres(url: str) -> tuple[list[Check], bool]:
    import psycopg

    shown = redacted(url)
    skipped = Check(
        "database integrity",
        "skip",
        f"{shown}: PostgreSQL checks its own pages; the board does not (pg_amcheck does, docs/scale.md)",
    )
    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            conn.read_only = True
            found = conn.execute("SELECT to_regclass('board_schema') IS NOT NULL").fetchone()
            row = conn.execute("SELECT version FROM board_schema").fetchone() if found and found[0] else None
    except psycopg.Error as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return [
            skipped,
            Check(
                "database",
                "fail",
                f"cannot read {shown}: {reason}",
                "start PostgreSQL, or fix BOARD_DATABASE_URL (database_url in board.toml)",
            ),
        ], False
    schema = _schema(int(row[0]) if row else 0, shown)
    return [skipped, schema], schema.status == "ok"


def database(settings: Settings) -> tuple[list[Check], bool]:
    """Integrity and schema version, read-only; and whether the other checks can read it."""
    if settings.database_url:
        return _postgres(settings.database_url)
    return _sqlite(settings)


def config(settings: Settings, origins: Mapping[str, str], env: Mapping[str, str]) -> Check:
    """The settings file, and which settings came from it, from the environment or from a flag."""
    path = config_path(env)
    where = str(path) if path.exists() else f"{path} (there is none)"
    shown = []
    for name, origin in sorted(origins.items()):
        value = getattr(settings, name)
        value = redacted(value) if name == "database_url" else value
        source = "the file" if origin == str(path) else origin
        shown.append(f"{name}={value} from {source}")
    given = "; ".join(shown) if shown else "nothing set"
    return Check("config", "ok", f"settings file {where}: {given}; the rest are defaults")


def _pid_in(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _lock_file(path: Path, what: str) -> Check | None:
    """A flock'd pid file: a problem when it names a killed process (it blocks nothing, but misleads)."""
    holder = running_pid(path)
    named = _pid_in(path)
    if holder is not None or named is None:
        return None
    return Check(
        "pid files",
        "warn",
        f"{path} names pid {named}, which no longer holds it: {what} was killed",
        f"remove it (rm {path}); nothing is blocked by it",
    )


def files(settings: Settings, env: Mapping[str, str]) -> list[Check]:
    """Stale pid files and lock files of the board, this machine's keeper and its bots."""
    found: list[Check] = []
    board_file = ctl.Board(settings).pidfile
    pid = _pid_in(board_file)
    if pid is not None and not ctl.alive(pid):
        found.append(
            Check(
                "pid files",
                "warn",
                f"{board_file} names pid {pid}, which is not running: the board stopped without removing it",
                f"remove it (rm {board_file}); board ctl start writes a new one",
            )
        )
    elif pid is not None and not ctl.is_board(pid):
        found.append(
            Check(
                "pid files",
                "fail",
                f"{board_file} names pid {pid}, which is another program, not a board: "
                "board ctl would refuse to start or act on it",
                f"remove it (rm {board_file}), then board ctl start",
            )
        )
    if not settings.database_url:
        lock = lock_path(settings.db)
        holder = running_pid(lock)
        if holder is not None and ctl.health(local_url(settings)) is None:
            found.append(
                Check(
                    "lock files",
                    "fail",
                    f"pid {holder} holds {lock}, but no board answers at {local_url(settings)}: it hangs",
                    f"stop it (board ctl stop, or kill {holder}), then board ctl start",
                )
            )
    keeper_file = keeper_dir(env) / KEEPER_PID
    bot_files = sorted(state_root(env).glob(f"*/{BOT_PID}"))[:MAX_BOT_PIDS]
    for path, what in [
        (keeper_file, "the keeper"),
        *((p, f"bot {p.parent.name}'s daemon") for p in bot_files),
    ]:
        problem = _lock_file(path, what)
        if problem is not None:
            found.append(problem)
    if found:
        return found
    return [
        Check("pid files", "ok", f"none stale ({board_file.parent}, {keeper_file.parent}, {state_root(env)})")
    ]


def _existing(folder: Path) -> Path:
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def disk(settings: Settings, min_free_mb: int) -> Check:
    """Free space where the database, logs and backups are: fail below the minimum, warn below twice it."""
    folder = state_dir(settings)
    usage = shutil.disk_usage(_existing(folder))
    free_mb = usage.free // 2**20
    detail = f"{free_mb} MB free of {usage.total // 2**20} MB in {folder}"
    fix = "free space there (old backups, logs), or move the data (BOARD_DB) to a larger disk"
    if free_mb < min_free_mb:
        return Check("disk", "fail", f"{detail}, below {min_free_mb} MB", fix)
    if free_mb < 2 * min_free_mb:
        return Check("disk", "warn", f"{detail}, below {2 * min_free_mb} MB", fix)
    return Check("disk", "ok", detail)
