"""Consistent copies of a live database, and putting one back.

A copy goes through SQLite's online backup API from a connection of its own: it
reads one snapshot (WAL lets the board keep writing meanwhile), lands in a
temporary file beside the destination, passes ``integrity_check``, is synced, and
only then takes its name. So a destination either holds a whole, checked
database or nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path

from .schema import schema_version
from .writer import StoreError


@contextlib.contextmanager
def _read_only(path: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        yield conn
    finally:
        conn.close()


def integrity(path: Path) -> str:
    """``PRAGMA integrity_check`` of a database file: ``ok`` or what is wrong."""
    with _read_only(path) as conn:
        try:
            rows = conn.execute("PRAGMA integrity_check").fetchall()
        except sqlite3.DatabaseError as exc:
            return str(exc)
    return "; ".join(str(row[0]) for row in rows)


def _copy(path: Path, dest: Path, ids_above: Mapping[str, int] | None = None) -> None:
    """Write a snapshot of the database at ``path`` to ``dest`` through a checked, synced temporary file.

    ``ids_above``: high-water marks the copy's tables hand out new ids above (:func:`_raise_marks`).
    """
    tmp = dest.with_name(f".{dest.name}.partial")
    tmp.unlink(missing_ok=True)
    target = sqlite3.connect(tmp)
    try:
        with _read_only(path) as source:
            source.backup(target)  # all pages in one step: one read snapshot of the source
        _raise_marks(target, ids_above or {})
        target.execute("PRAGMA journal_mode = DELETE")  # a copy is one self-contained file
    finally:
        target.close()
    verdict = integrity(tmp)
    if verdict != "ok":
        tmp.unlink(missing_ok=True)
        raise StoreError(f"the copy failed its integrity check ({verdict}); nothing was written to {dest}")
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    tmp.replace(dest)
    dirfd = os.open(dest.parent, os.O_RDONLY)
    try:
        os.fsync(dirfd)
    finally:
        os.close(dirfd)


def backup(db: Path, dest: Path) -> Path:
    """Copy the database at ``db`` to ``dest`` (a new file, or a folder to put a dated file in)."""
    if not db.exists():
        raise StoreError(f"{db} does not exist; there is nothing to back up")
    if dest.is_dir():
        from datetime import UTC, datetime

        dest = dest / f"board-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%fZ')}.db"
    if dest.exists():
        raise StoreError(f"{dest} already exists; name a new file or a folder")
    dest.parent.mkdir(parents=True, exist_ok=True)
    _copy(db, dest)
    return dest


def _marks(path: Path) -> dict[str, int]:
    """Each AUTOINCREMENT table's high-water mark (``sqlite_sequence``): the highest id it ever
    handed out, deleted rows included."""
    with _read_only(path) as conn:
        try:
            rows = conn.execute("SELECT name, seq FROM sqlite_sequence").fetchall()
        except sqlite3.OperationalError:  # no AUTOINCREMENT table: nothing handed out
            return {}
    return {str(name): int(seq) for name, seq in rows}


def _raise_marks(conn: sqlite3.Connection, marks: Mapping[str, int]) -> None:
    """Raise each AUTOINCREMENT table's high-water mark in ``conn`` to at least ``marks``'s.

    A restore puts back an older copy, whose marks are below ids clients have already seen:
    a bot's ``since`` cursor, an inbox or audit cursor. New rows would take those ids again and
    a reader past them would never see the new rows; above the replaced database's marks, they
    cannot. Tables the copy does not have, or has without AUTOINCREMENT, are left alone.
    """
    for name, mark in marks.items():
        sql = conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        ).fetchone()
        if sql is None or "AUTOINCREMENT" not in str(sql[0]).upper():
            continue
        raised = conn.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?", (mark, name))
        if not raised.rowcount:
            conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", (name, mark))
    conn.commit()


@contextlib.contextmanager
def owning(db: Path) -> Iterator[None]:
    """Hold the board's lock on ``db`` (the one ``board serve`` takes), or refuse: it is being served."""
    lock_path = f"{db}.lock"
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StoreError(
                f"{db} is being served by a running board (lock {lock_path} is held); "
                "stop it first (board ctl stop)."
            ) from None
        yield
    finally:
        os.close(fd)


def restore(source: Path, db: Path) -> Path | None:
    """Put the copy at ``source`` in place of ``db``; returns where the replaced database was saved.

    Refuses while a board serves ``db``, and refuses a copy that is damaged or newer
    than this code. New ids continue above those the replaced database handed out
    (:func:`_raise_marks`), so no cursor a client holds skips what is written next.
    """
    if not source.is_file():
        raise StoreError(f"{source} is not a file")
    verdict = integrity(source)
    if verdict != "ok":
        raise StoreError(f"{source} failed its integrity check ({verdict}); not restoring it")
    with _read_only(source) as conn:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version > schema_version():
        raise StoreError(
            f"{source} has schema version {version}, newer than this board understands "
            f"({schema_version()}); upgrade the board first"
        )
    db.parent.mkdir(parents=True, exist_ok=True)
    with owning(db):
        saved = None
        if db.exists():
            (db.parent / "backups").mkdir(exist_ok=True)
            saved = backup(db, db.parent / "backups")
        for leftover in (Path(f"{db}-wal"), Path(f"{db}-shm")):
            leftover.unlink(missing_ok=True)  # the saved copy holds what they held
        _copy(source, db, ids_above=_marks(saved) if saved is not None else None)
    return saved
