"""Which store a board runs on: the SQLite file, or PostgreSQL when a URL names one."""

from __future__ import annotations

from ..settings import Settings
from .db import Database
from .urls import is_postgres, redacted
from .writer import Store, StoreError


def database_label(settings: Settings) -> str:
    """Where the board's data is, as it may be shown (no password)."""
    return redacted(settings.database_url) if settings.database_url else settings.db


def open_store(
    settings: Settings, *, readers: int | None = None, exclusive: bool = False, read_only: bool = False
) -> Store:
    """The store ``settings`` name (not opened yet).

    ``read_only`` opens the SQLite file read-only, without migrating it; PostgreSQL's
    reads are read-only transactions already, and its store migrates nothing that is
    current (``board doctor`` opens it only then).

    ``exclusive`` takes the SQLite file's lock, so a second board on the same file
    refuses to start; several processes sharing a PostgreSQL database is the point
    of running on one, so it has no such lock.
    """
    readers = settings.readers if readers is None else readers
    if settings.database_url:
        if not is_postgres(settings.database_url):
            scheme = settings.database_url.split(":")[0]
            raise StoreError(
                "the database URL (--database-url, BOARD_DATABASE_URL or database_url in board.toml) "
                f"must start with postgresql://, not {scheme}:"
            )
        from .postgres import PostgresStore  # psycopg is loaded only by boards that use it

        return PostgresStore(settings.database_url, readers=readers)
    return Database(settings.db, readers=readers, exclusive=exclusive, read_only=read_only)
