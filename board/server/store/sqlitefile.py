"""What anything that opens the board's SQLite file needs: the locks every name of the file
takes, and the errors a damaged file raises, said whatever its bytes.

Two locks, both ``flock`` on files beside the database, which the kernel frees when their
holder dies:

- **The board's lock** (:func:`lock_path`), exclusive: one ``board serve`` a file, and no
  restore or move while one serves it.
- **The open lock** (:func:`open_lock_path`): every process that opens the file to write
  (``board serve``, each ``board admin`` command) holds it shared; a restore or a move to
  PostgreSQL holds it exclusive. So an admin command and a restore refuse each other instead
  of writing into a file that is being replaced (the write would be in neither database).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
from pathlib import Path

from .writer import StoreError

#: What reading a damaged file raises: SQLite's errors, and Python's strict decoding of a
#: message that quotes the damaged bytes (``malformed database schema (...)``).
FILE_ERRORS = (sqlite3.Error, UnicodeDecodeError)


def error_text(exc: Exception) -> str:
    """What SQLite said in one of :data:`FILE_ERRORS`, however damaged its bytes."""
    if isinstance(exc, UnicodeDecodeError):
        return bytes(exc.object).decode("utf-8", "replace")
    return str(exc)


def lock_path(db: str | Path) -> Path:
    """The board's lock file for the database at ``db``: beside the file itself, so that every
    name for it (a symbolic link, a relative path) takes the same lock."""
    return Path(f"{_resolved(db)}.lock")


def open_lock_path(db: str | Path) -> Path:
    """The open lock for the database at ``db`` (the module's docstring), beside it likewise."""
    return Path(f"{_resolved(db)}.open.lock")


def _resolved(db: str | Path) -> Path:
    try:
        return Path(db).resolve()
    except RuntimeError:  # Python 3.11's word for a loop of links (3.13 raises OSError)
        raise StoreError(f"{db}: a loop of symbolic links; name the database's file itself") from None


def flocked(lock: Path, held: str, then: str, *, shared: bool = False) -> int:
    """An open descriptor of ``lock`` holding it (``shared`` or exclusive), never waiting; the
    lock lasts until the descriptor is closed. When another process holds it in a way that
    excludes this one: :class:`StoreError` saying what that means (``held``), the lock, and
    what to do (``then``); one too when the lock file cannot be opened.

    Made by root (an admin command run with sudo), the file is given its folder's owner, as
    SQLite gives a database's own side files: the board's user must be able to take it next."""
    failed = f"cannot open the lock file {lock}"
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise StoreError(f"{failed}: {exc.strerror or exc}") from exc
    try:
        _folder_s_owner(fd, lock)
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except BaseException as exc:
        os.close(fd)
        if isinstance(exc, BlockingIOError):
            raise StoreError(f"{held} (lock {lock} is held); {then}") from None
        if isinstance(exc, OSError):
            raise StoreError(f"{failed}: {exc.strerror or exc}") from exc
        raise
    return fd


def private_file(path: Path, *, new: bool = False) -> None:
    """Make ``path`` an empty file only its owner may read, unless a file is there already
    (``new``: then raise ``FileExistsError``, for a name just cleared, where a file found is
    another's): SQLite then writes the database (or a copy) into it, and gives its WAL and
    shared-memory files the same mode. A board's database holds secrets (a forge's token, a
    mail server's password), so no other local user may read it, nor a copy of it. Any other
    file that cannot be made is left to SQLite to say why."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        if new:
            raise
        if path.is_symlink() and not os.path.exists(path):  # a link to a file not made yet:
            with contextlib.suppress(OSError, RuntimeError):  # SQLite would make it as the umask says
                private_file(path.resolve())  # (a loop of links is left to SQLite to say why)
        return
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):  # a file system that keeps no owners: it is 0600 anyway
            _folder_s_owner(fd, path)
    finally:
        os.close(fd)


def private_dir(path: Path) -> None:
    """Make the folder ``path`` (and any above it) unless it exists, the last one only its
    owner's to open (0700), for the database's files (:func:`private_file`)."""
    if path.is_dir():
        return
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_RDONLY)
    try:
        with contextlib.suppress(OSError):
            _folder_s_owner(fd, path)
    finally:
        os.close(fd)


def _folder_s_owner(fd: int, path: Path) -> None:
    """Run as root (an admin command run with sudo), give the file its folder's owner: the
    board's user, who must be able to open it next."""
    if os.geteuid() == 0:
        folder = path.parent.stat()
        os.fchown(fd, folder.st_uid, folder.st_gid)
