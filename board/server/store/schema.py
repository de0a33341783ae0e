"""The one migration runner: numbered migrations, rendered by the store's dialect, applied once.

Each migration is ``migrations/NNNN_name.sql``, written once for both stores
(``dialects.py`` says how); the database records the number of the last one applied
(SQLite's ``PRAGMA user_version``, PostgreSQL's ``board_schema``), and a start
applies those above it, each in its own transaction with its number. A database
newer than this code is refused before anything touches it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cache
from importlib import resources

from .connection import Connection
from .dialects import Dialect
from .writer import StoreError

log = logging.getLogger(__name__)

PACKAGE = "board.server.store.migrations"


@dataclass(frozen=True)
class Migration:
    number: int
    name: str  # the file's name, as the log and errors say it
    source: str


@cache
def migrations() -> tuple[Migration, ...]:
    """The numbered migrations shipped with the board, in order."""
    found = [
        Migration(int(entry.name[:4]), entry.name, entry.read_text(encoding="utf-8"))
        for entry in resources.files(PACKAGE).iterdir()
        if entry.name.endswith(".sql") and entry.name[:4].isdigit()
    ]
    return tuple(sorted(found, key=lambda m: m.number))


def schema_version() -> int:
    """The schema version this code knows how to run."""
    return migrations()[-1].number


async def current_version(conn: Connection, dialect: Dialect, where: str) -> int:
    """The database's schema version; StoreError when it is newer than this code."""
    current = await dialect.version(conn)
    known = schema_version()
    if current > known:
        raise StoreError(
            f"{where} has schema version {current}, newer than this board "
            f"understands ({known}); upgrade the board before opening it."
        )
    return current


async def migrate(conn: Connection, dialect: Dialect, where: str) -> None:
    """Apply what is missing; StoreError naming the migration that failed (it left nothing)."""
    async with dialect.migrating(conn):
        current = await current_version(conn, dialect, where)
        for migration in migrations():
            if migration.number <= current:
                continue
            log.info("applying migration %s", migration.name)
            script = dialect.transaction(dialect.render(migration.source), migration.number)
            try:
                await conn.executescript(script)
            except conn.Error as exc:
                if conn.in_transaction:
                    await conn.execute("ROLLBACK")
                raise StoreError(f"migration {migration.name} failed: {exc}") from exc
        await dialect.after(conn)
