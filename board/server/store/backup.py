"""Consistent copies of a live database, and putting one back.

A copy goes through SQLite's online backup API from a connection of its own: it
reads one snapshot (WAL lets the board keep writing meanwhile), lands in a
temporary file beside the destination, passes ``integrity_check``, is synced, and
only then takes its name. So a destination either holds a whole, checked
database or nothing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from .schema import schema_version
from .sqlitefile import (
    FILE_ERRORS,
    error_text,
    flocked,
    lock_path,
    open_lock_path,
    private_dir,
    private_file,
)
from .writer import StoreError


class Damaged(StoreError):
    """A copy failed its integrity check; ``verdict`` is what the check said."""

    def __init__(self, verdict: str, dest: Path) -> None:
        super().__init__(f"the copy failed its integrity check ({verdict}); nothing was written to {dest}")
        self.verdict = verdict


#: The files SQLite keeps beside a database: its WAL and shared memory, or its rollback journal.
SIDE_FILES = ("-wal", "-shm", "-journal")

#: How far above the copy's own marks new ids start when the database a restore replaces is too
#: damaged to say its marks: past any cursor a reader could hold beyond the copy's last id.
UNREAD_MARKS_MARGIN = 1_000_000_000


@contextlib.contextmanager
def _read_only(path: Path) -> Iterator[sqlite3.Connection]:
    """``path`` as the next open of it would read it, without writing to it.

    A rollback journal a crash left beside it (a copy taken in the middle of a write, a
    program that wrote to a backup and died) must be played back before the file reads
    whole, which a read-only connection may not do: it answers every read with ``attempt to
    write a readonly database``, and the copy looked damaged. The journal is then played
    back on a copy of both files in a temporary folder, and that copy is read instead. Not
    being able to (no room there) is a :class:`StoreError`, never a verdict on the database.
    """
    path = path.resolve()  # the journal lies beside the file itself, not beside a link to it
    with contextlib.ExitStack() as stack:
        conn = _opened(stack, f"{path.as_uri()}?mode=ro")
        if _held_by_journal(conn):
            conn.close()
            copy = _played_back(path, stack)
            conn = _opened(stack, copy.as_uri() if copy else f"{path.as_uri()}?mode=ro")
        conn.text_factory = lambda raw: raw.decode("utf-8", "replace")
        yield conn


def _opened(stack: contextlib.ExitStack, uri: str) -> sqlite3.Connection:
    return stack.enter_context(contextlib.closing(sqlite3.connect(uri, uri=True, timeout=5)))


def _held_by_journal(conn: sqlite3.Connection) -> bool:
    """Whether read-only ``conn`` reads nothing until a rollback journal is played back. The
    header is read, not the schema: a schema that does not parse is the caller's to find."""
    try:
        conn.execute("PRAGMA user_version").fetchall()
    except sqlite3.OperationalError as exc:
        if getattr(exc, "sqlite_errorname", "") == "SQLITE_READONLY_ROLLBACK":
            return True
        raise
    return False


_NO_ROOM = ("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_CANTOPEN")  # the copy could not be written


def _played_back(path: Path, stack: contextlib.ExitStack) -> Path | None:
    """A copy of ``path`` and its rollback journal in a temporary folder (removed with
    ``stack``), the journal played back into it; ``None`` when the journal went meanwhile
    (another connection played it back in place). The journal is copied first: played back
    whole, it puts back its pages however far such a playback had gone when the file was
    copied."""
    failed = f"could not play back the rollback journal beside {path} on a copy in"
    try:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="board-journal-")))
    except OSError as exc:  # no usable temporary folder, or no room for one more
        raise StoreError(f"{failed} the temporary folder: {exc}") from exc
    copy = folder / "board.db"
    failed = f"{failed} {folder}"
    try:
        shutil.copyfile(f"{path}-journal", f"{copy}-journal")
        shutil.copyfile(path, copy)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(f"{failed}: {exc}") from exc
    try:
        with contextlib.closing(sqlite3.connect(copy, timeout=5)) as conn:
            conn.execute("PRAGMA user_version").fetchall()
    except sqlite3.OperationalError as exc:  # the copy's own write, not the database's damage
        if getattr(exc, "sqlite_errorname", "").startswith(_NO_ROOM):
            raise StoreError(f"{failed}: {exc}") from exc
        raise
    return copy


def integrity(path: Path, most: int = 100) -> str:
    """``PRAGMA integrity_check`` of a database file: ``ok`` or what is wrong (``most`` problems)."""
    try:
        with _read_only(path) as conn:
            rows = conn.execute(f"PRAGMA integrity_check({int(most)})").fetchall()
    except FILE_ERRORS as exc:
        return error_text(exc)
    return "; ".join(str(row[0]) for row in rows)


def stored_version(path: Path) -> int:
    """The schema version a database file says it holds (``PRAGMA user_version``)."""
    with _read_only(path) as conn:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])


@contextlib.contextmanager
def _staged(dest: Path, failing: str) -> Iterator[Path]:
    """A name beside ``dest`` to write it under: renamed onto ``dest`` (its folder synced) when
    the block ends well, removed when it does not. A file system's error is a
    :class:`StoreError` starting with ``failing``."""
    tmp = dest.with_name(f".{dest.name}.partial")
    try:
        tmp.unlink(missing_ok=True)
        private_file(tmp, new=True)
        yield tmp
        tmp.replace(dest)
        _sync_folder(dest.parent)
    except OSError as exc:
        raise StoreError(f"{failing}: {exc}") from exc
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def _copy(path: Path, dest: Path, ids_above: Mapping[str, int] | None = None) -> None:
    """Write a snapshot of the database at ``path`` to ``dest`` through a checked, synced temporary file.

    ``ids_above``: high-water marks the copy's tables hand out new ids above (:func:`_raise_marks`).
    Raises :class:`Damaged` when the database is, and a plain :class:`StoreError` when the copy
    could not be written (a full disk, a read-only folder): then nothing was written.
    """
    with _staged(dest, f"could not write {dest}") as tmp:
        try:
            with contextlib.closing(sqlite3.connect(tmp)) as target, _read_only(path) as source:
                source.backup(target)  # all pages in one step: one read snapshot of the source
                _raise_marks(target, ids_above or {})
                target.execute("PRAGMA journal_mode = DELETE")  # a copy is one self-contained file
        except FILE_ERRORS as exc:  # the source's damage, or the copy's own write failing
            verdict = integrity(path)
            if verdict == "ok":
                raise StoreError(f"could not write {dest}: {error_text(exc)}") from None
            raise Damaged(verdict, dest) from None
        verdict = integrity(tmp)
        if verdict != "ok":  # damaged pages the source's reads did not touch, copied as they were
            raise Damaged(verdict, dest)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())


def _sync_folder(folder: Path) -> None:
    dirfd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dirfd)
    finally:
        os.close(dirfd)


def _dated(folder: Path, tag: str = "") -> Path:
    return folder / f"board-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%fZ')}{tag}.db"


def backup(db: Path, dest: Path) -> Path:
    """Copy the database at ``db`` to ``dest`` (a new file, or a folder to put a dated file in)."""
    if not db.exists():
        raise StoreError(f"{db} does not exist; there is nothing to back up")
    if not db.is_file():
        raise StoreError(f"{db} is not a file")
    if dest.is_dir():
        dest = _dated(dest)
    if dest.exists():
        raise StoreError(f"{dest} already exists; name a new file or a folder")
    if dest.resolve() in {Path(f"{db.resolve()}{suffix}") for suffix in SIDE_FILES}:
        raise StoreError(f"{dest} is the database's own {dest.name.rsplit('-', 1)[-1]} file; name another")
    private_dir(dest.parent)
    _copy(db, dest)
    return dest


def _marks(path: Path) -> dict[str, int]:
    """Each AUTOINCREMENT table's high-water mark (``sqlite_sequence``): the highest id it ever
    handed out, deleted rows included."""
    with _read_only(path) as conn:
        try:
            rows = conn.execute("SELECT name, seq FROM sqlite_sequence").fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" not in str(exc):
                raise
            return {}  # no AUTOINCREMENT table: nothing handed out
    return {str(name): seq for name, seq in rows if isinstance(seq, int)}


def _counted(path: Path) -> list[str]:
    """The AUTOINCREMENT tables of a database: those with a high-water mark, once they have a row."""
    with _read_only(path) as conn:
        rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall()
    return [str(name) for name, sql in rows if _counts_ids(sql)]


def _counts_ids(table_sql: object) -> bool:
    """Whether a table, by its ``CREATE TABLE``, keeps a high-water mark of its ids."""
    return "AUTOINCREMENT" in str(table_sql).upper()


def _settle(db: Path) -> None:
    """Bring what a database's side files hold into the file, as the board's next open would:
    a rollback journal a crash left is played back, the WAL checkpointed and emptied. Removing
    them then loses nothing, wherever a restore stops. A database too damaged for it is left
    as it is (its files were kept first)."""
    with contextlib.suppress(*FILE_ERRORS), contextlib.closing(sqlite3.connect(db, timeout=5)) as conn:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()


def _raise_marks(conn: sqlite3.Connection, marks: Mapping[str, int]) -> None:
    """Raise each AUTOINCREMENT table's high-water mark in ``conn`` to at least ``marks``'s.

    A restore puts back an older copy, whose marks are below ids clients have already seen:
    a bot's ``since`` cursor, an inbox or audit cursor. New rows would take those ids again and
    a reader past them would never see the new rows; above the replaced database's marks, they
    cannot. A table the copy does not have yet (an older schema, which the board's next open
    migrates) gets its mark all the same: SQLite counts from a table's row in
    ``sqlite_sequence`` when the table is made. One it has without AUTOINCREMENT is left alone.
    """
    for name, mark in marks.items():
        sql = conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        ).fetchone()
        if sql is not None and not _counts_ids(sql[0]):
            continue
        raised = conn.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?", (mark, name))
        if not raised.rowcount:
            conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", (name, mark))
    conn.commit()


@contextlib.contextmanager
def owning(db: Path) -> Iterator[None]:
    """Hold ``db`` alone: the board's lock (the one ``board serve`` takes) and the open lock,
    both exclusive (sqlitefile's docstring); or refuse, naming who has it."""
    with contextlib.ExitStack() as held:
        served = f"{db} is being served by a running board"
        held.callback(os.close, flocked(lock_path(db), served, "stop it first (board ctl stop)."))
        busy = f"{db} is open in another board command"
        held.callback(os.close, flocked(open_lock_path(db), busy, "run this again when it has finished."))
        yield


@dataclass(frozen=True)
class Replaced:
    """The database a restore replaced: where it was saved, and, if it was damaged, how."""

    path: Path
    damage: str | None = None


def _set_aside(db: Path, source: Path) -> tuple[Replaced, dict[str, int]]:
    """Save the database a restore replaces into ``backups/``; and the marks new ids go above.

    A whole database is copied through the checked path. A damaged one (the case ``board
    doctor`` sends people here for) cannot be: its files are copied there as they are, WAL
    and rollback journal too, for whoever wants to dig in them. When even its marks do not
    read, new ids start :data:`UNREAD_MARKS_MARGIN` above the copy's, in every table that
    counts its ids. Either way the database is then settled (:func:`_settle`).
    """
    folder = db.parent / "backups"
    try:
        private_dir(folder)
        saved = backup(db, folder)
    except Damaged as exc:
        kept = _keep(db, _dated(folder, "-damaged"))
        _settle(db)
        try:
            marks = _marks(db)
        except FILE_ERRORS:
            own = _marks(source)
            marks = {name: own.get(name, 0) + UNREAD_MARKS_MARGIN for name in _counted(source)}
        return Replaced(kept, exc.verdict), marks
    except OSError as exc:
        raise StoreError(f"could not save the database it replaces in {folder}: {exc}") from exc
    _settle(db)
    return Replaced(saved), _marks(saved)


def _keep(db: Path, kept: Path) -> Path:
    """Copy a database's files to ``kept`` as they are, synced; all of them or none."""
    try:
        for suffix in ("", *SIDE_FILES):
            if Path(f"{db}{suffix}").exists():
                private_file(Path(f"{kept}{suffix}"), new=True)
                shutil.copyfile(f"{db}{suffix}", f"{kept}{suffix}")
                with open(f"{kept}{suffix}", "rb") as fh:
                    os.fsync(fh.fileno())
        _sync_folder(kept.parent)
    except OSError as exc:
        for suffix in ("", *SIDE_FILES):
            with contextlib.suppress(OSError):
                Path(f"{kept}{suffix}").unlink(missing_ok=True)
        raise StoreError(f"could not keep the damaged database it replaces in {kept.parent}: {exc}") from exc
    return kept


def restore(source: Path, db: Path) -> Replaced | None:
    """Put the copy at ``source`` in place of ``db``; returns where the replaced database went.

    Refuses while a board serves ``db``, and refuses a copy that is damaged or newer
    than this code. New ids continue above those the replaced database handed out
    (:func:`_raise_marks`), so no cursor a client holds skips what is written next.
    ``db`` and its side files are replaced only once the copy is written and checked
    and what they held is saved: a restore that fails leaves them as they were.
    """
    if not source.is_file():
        raise StoreError(f"{source} is not a file")
    db = db.resolve()  # through a symbolic link, the file the board opens is what is replaced
    for path in (db, *(Path(f"{db}{suffix}") for suffix in SIDE_FILES)):
        if path.exists() and not path.is_file():
            raise StoreError(f"{path} is not a file; move it away first")
    verdict = integrity(source)
    if verdict != "ok":
        raise StoreError(f"{source} failed its integrity check ({verdict}); not restoring it")
    version = stored_version(source)
    if version == 0:  # an empty file, or another program's database: no board wrote it
        raise StoreError(f"{source} is not a board's database (it has no schema version); not restoring it")
    if version > schema_version():
        raise StoreError(
            f"{source} has schema version {version}, newer than this board understands "
            f"({schema_version()}); upgrade the board first"
        )
    try:
        private_dir(db.parent)
        with owning(db):
            replaced, marks = _set_aside(db, source) if db.exists() else (None, None)
            with _staged(db, f"could not restore {source} to {db}") as staged:
                _copy(source, staged, ids_above=marks)
                if db.exists():  # the mode the operator gave the database it replaces
                    shutil.copymode(db, staged)
                for suffix in SIDE_FILES:  # what they held is in what was saved
                    Path(f"{db}{suffix}").unlink(missing_ok=True)
    except OSError as exc:  # the folder or the lock file
        raise StoreError(f"could not restore {source} to {db}: {exc}") from exc
    return replaced
