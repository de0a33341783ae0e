"""What SQLite and PostgreSQL do differently in the schema, and nothing else.

Migrations are written once (``migrations/NNNN_name.sql``) in the SQL both databases
share, plus three things a dialect expands:

- placeholders for what a column is: ``{id}`` (a key the database hands out),
  ``{id_never_reused}`` (one it never hands out twice, even after a delete), ``{int}``,
  ``{real}``, ``{nocase}`` (text compared without regard to case), ``{without_rowid}``
  and ``{now}`` (the UTC time as ISO-8601 text); see :attr:`Dialect.words`;
- a refusing trigger, ``CREATE TRIGGER name BEFORE INSERT|UPDATE|DELETE ON table
  [WHEN condition] REFUSE 'message';``: the change is refused with ``message`` as an
  integrity error when the condition (over ``OLD``/``NEW``, standard SQL) holds;
- sections for what has no common form (full-text search, triggers that write): lines
  after ``-- [sqlite]`` or ``-- [postgresql]`` are that dialect's alone, up to ``-- [both]``.

The runner (``schema.py``) asks a dialect for the version a database is at and for the
transaction that applies one migration and records its number.
"""

from __future__ import annotations

import contextlib
import re
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from importlib import resources

from .connection import Connection

SECTION = re.compile(r"^-- \[(sqlite|postgresql|both)\]$")
PLACEHOLDER = re.compile(r"\{(\w+)\}")
REFUSE = re.compile(
    r"CREATE TRIGGER (?P<name>\w+) BEFORE (?P<event>INSERT|UPDATE|DELETE) ON (?P<table>\w+)"
    r"(?:\s+WHEN\s+(?P<condition>[^;]+?))?\s+REFUSE\s+(?P<message>'(?:[^']|'')*')\s*;"
)
COMMENT = re.compile(r"--.*$", re.MULTILINE)

#: PostgreSQL's advisory lock keys: (BOARD, what). The first number keeps the board's
#: locks apart from any other application's on the same database. Migrating takes one;
#: the store (postgres.py) and the copy from SQLite (migrate.py) take the others.
BOARD = 0x0B0A
LOCKS = {"writes": 1, "migrate": 2, "sweep": 3, "routines": 4, "notify": 5}


class SchemaSourceError(ValueError):
    """A migration's source does not render: a section left open, an unknown placeholder..."""


@dataclass(frozen=True)
class Refusal:
    """One ``CREATE TRIGGER ... REFUSE`` statement, parsed."""

    name: str
    event: str
    table: str
    condition: str | None
    message: str  # a quoted SQL string literal, as written


class Dialect(ABC):
    """One database's way of writing the schema, and of keeping its version."""

    name: str
    #: What each placeholder stands for in this dialect.
    words: Mapping[str, str]

    def render(self, source: str) -> str:
        """``source`` (a migration as written) as this dialect runs it; SchemaSourceError if malformed."""
        lines, section = [], "both"
        for line in source.splitlines():
            found = SECTION.match(line)
            if found:
                section = found[1]
            elif section in ("both", self.name):
                lines.append(line)
        if section != "both":
            raise SchemaSourceError(f"-- [{section}] is not closed by -- [both]")
        script = PLACEHOLDER.sub(self._word, "\n".join(lines) + "\n")
        script = REFUSE.sub(lambda m: self.refuse(Refusal(**m.groupdict())), script)
        if re.search(r"\bREFUSE\b", COMMENT.sub("", script)):
            raise SchemaSourceError(
                "a REFUSE that is not CREATE TRIGGER name BEFORE event ON table [WHEN ...] REFUSE '...';"
            )
        return script

    def _word(self, found: re.Match[str]) -> str:
        if found[1] not in self.words:
            raise SchemaSourceError(f"unknown placeholder {found[0]}: one of {', '.join(self.words)}")
        return self.words[found[1]]

    @abstractmethod
    def refuse(self, trigger: Refusal) -> str:
        """The statements of a refusing trigger."""

    @abstractmethod
    async def version(self, conn: Connection) -> int:
        """The number of the last migration applied to the database (0 for a new one)."""

    @abstractmethod
    def transaction(self, script: str, number: int) -> str:
        """One script that applies ``script`` and records ``number``, all or nothing."""

    @contextlib.asynccontextmanager
    async def migrating(self, conn: Connection) -> AsyncIterator[None]:
        """Held while migrating: one process at a time."""
        yield

    @abstractmethod
    async def after(self, conn: Connection) -> None:
        """What runs after every start's migrations, whether any ran or not."""


class Sqlite(Dialect):
    """The version is ``PRAGMA user_version``; a file has one writer, so no lock is needed."""

    name = "sqlite"
    words = {
        "id": "INTEGER PRIMARY KEY",
        "id_never_reused": "INTEGER PRIMARY KEY AUTOINCREMENT",
        "int": "INTEGER",
        "real": "REAL",
        "nocase": "TEXT COLLATE NOCASE",
        "without_rowid": "WITHOUT ROWID",
        "now": "strftime('%Y-%m-%dT%H:%M:%SZ', 'now')",
    }

    def refuse(self, trigger: Refusal) -> str:
        when = ""
        if trigger.condition is not None:  # SQLite before 3.39 knows IS NOT DISTINCT FROM only as IS
            when = "\nWHEN " + trigger.condition.replace(" IS NOT DISTINCT FROM ", " IS ")
        return (
            f"CREATE TRIGGER {trigger.name} BEFORE {trigger.event} ON {trigger.table}{when}\n"
            f"BEGIN\n    SELECT RAISE(ABORT, {trigger.message});\nEND;"
        )

    async def version(self, conn: Connection) -> int:
        cur = await conn.execute("PRAGMA user_version")
        return int((await cur.fetchone())[0])

    async def after(self, conn: Connection) -> None:
        """Nothing: the functions SQLite lacks are registered on every connection (db.py)."""

    def transaction(self, script: str, number: int) -> str:
        return f"BEGIN IMMEDIATE;\n{script}\nPRAGMA user_version = {number};\nCOMMIT;"


class Postgres(Dialect):
    """The version is the one row of ``board_schema``; an advisory lock lets one process migrate.

    Keys are identities BY DEFAULT (a copy from SQLite keeps its ids), integers BIGINT,
    ``{nocase}`` is citext. A refusal raises SQLSTATE 23000 with the message through
    ``board_refuse`` (0001), or through a function of the trigger's name when its
    condition reads other tables, which a trigger's WHEN cannot; TRUNCATE skips row
    triggers, so a table that refuses a DELETE refuses TRUNCATE outright.
    """

    name = "postgresql"
    words = {
        "id": "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
        "id_never_reused": "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
        "int": "BIGINT",
        "real": "DOUBLE PRECISION",
        "nocase": "citext",
        "without_rowid": "",
        "now": "to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')",
    }
    #: SQLite's functions the shared SQL calls, replaced at every start (not a migration).
    COMPAT = "postgresql_compat.sql"

    def refuse(self, trigger: Refusal) -> str:
        head = f"CREATE TRIGGER {trigger.name} BEFORE {trigger.event} ON {trigger.table}\n    FOR EACH ROW"
        if trigger.condition is None:
            statements = [f"{head} EXECUTE FUNCTION board_refuse({trigger.message});"]
        elif not re.search(r"\bSELECT\b", trigger.condition, re.IGNORECASE):
            statements = [
                f"{head} WHEN ({trigger.condition})\n    EXECUTE FUNCTION board_refuse({trigger.message});"
            ]
        else:
            row = "OLD" if trigger.event == "DELETE" else "NEW"
            statements = [
                f"CREATE FUNCTION {trigger.name}() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n"
                f"    IF {trigger.condition} THEN\n        PERFORM board_raise({trigger.message});\n"
                f"    END IF;\n    RETURN {row};\nEND $$;",
                f"{head} EXECUTE FUNCTION {trigger.name}();",
            ]
        if trigger.event == "DELETE":
            truncate = trigger.name.removesuffix("_delete") + "_truncate"
            statements.append(
                f"CREATE TRIGGER {truncate} BEFORE TRUNCATE ON {trigger.table}\n"
                f"    FOR EACH STATEMENT EXECUTE FUNCTION board_refuse({trigger.message});"
            )
        return "\n".join(statements)

    async def version(self, conn: Connection) -> int:
        cur = await conn.execute("SELECT to_regclass('board_schema') IS NOT NULL")
        if not (await cur.fetchone())[0]:
            return 0
        cur = await conn.execute("SELECT version FROM board_schema")
        row = await cur.fetchone()
        return int(row[0]) if row is not None else 0

    def transaction(self, script: str, number: int) -> str:
        # board_schema holds one row (a unique index on a constant refuses a second).
        return (
            f"BEGIN;\n{script}\n;\n"
            "CREATE TABLE IF NOT EXISTS board_schema (version BIGINT NOT NULL);\n"
            "CREATE UNIQUE INDEX IF NOT EXISTS board_schema_one_row ON board_schema ((true));\n"
            f"DELETE FROM board_schema;\nINSERT INTO board_schema (version) VALUES ({number});\nCOMMIT;"
        )

    @contextlib.asynccontextmanager
    async def migrating(self, conn: Connection) -> AsyncIterator[None]:
        """The other processes wait here, then find the migrations done."""
        await conn.execute("SELECT pg_advisory_lock(?, ?)", (BOARD, LOCKS["migrate"]))
        try:
            yield
        finally:
            await conn.execute("SELECT pg_advisory_unlock(?, ?)", (BOARD, LOCKS["migrate"]))

    async def after(self, conn: Connection) -> None:
        """Replace the compatibility functions, so a fix there needs no new schema version."""
        package = resources.files("board.server.store.migrations")
        await conn.executescript(package.joinpath(self.COMPAT).read_text(encoding="utf-8"))


SQLITE = Sqlite()
POSTGRESQL = Postgres()
