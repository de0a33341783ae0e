"""What anything that opens the board's SQLite file needs: the one lock every name of the
file takes, and the errors a damaged file raises, said whatever its bytes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

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
    return Path(f"{Path(db).resolve()}.lock")
