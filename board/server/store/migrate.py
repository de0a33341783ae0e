"""``board migrate-to``: a SQLite board copied onto PostgreSQL, whole or not at all.

The copy runs while no board serves the file (its lock is held throughout) into a
database holding nothing but the rows the first migration seeds. The PostgreSQL
store's own migrations make the schema; then one transaction empties the seeded
rows, copies every table with its ids (COPY, in an order the foreign keys accept,
the schema's triggers switched off so they neither refuse nor redo what the copy
brings: thread summaries, participants, the knowledge search index), rebuilds
what those triggers derive, sets each identity past the last id SQLite handed out,
and commits. Every value is checked against its column before it is sent, since a
SQLite file holds whatever was written to it: a value PostgreSQL cannot hold
aborts the whole copy, naming its table, row and column. After the commit each
table's row count, and a sample of its rows, are read back and compared.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sqlite3
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from .backup import owning
from .dialects import BOARD, LOCKS
from .postgres import PostgresStore, require_utf8
from .schema import schema_version
from .urls import is_postgres, redacted
from .writer import StoreError

#: The rows 0001_core.sql seeds (the admin workspace, its lobby, the board's own
#: agent): a database holding these and nothing else is empty.
SEEDED = {"workspaces": "slug = 'admin'", "channels": "slug = 'lobby'", "agents": "handle = 'board'"}

#: PostgreSQL's tables that SQLite has no counterpart of: the schema version, and the
#: knowledge search index that triggers keep equal to each live document's shown
#: revision, rebuilt here because the triggers are off while the copy runs.
PG_ONLY = {
    "board_schema": None,
    "kb_search": """INSERT INTO kb_search (revision_id, document_id, search_vector)
        SELECT r.id, d.id, kb_search_vector(d.path, r.title, r.body)
        FROM kb_documents d JOIN kb_revisions r ON r.id = d.current_id WHERE d.state = 'live'""",
}

#: The Python type each PostgreSQL column type takes from SQLite.
KINDS: dict[str, type] = {"bigint": int, "double precision": float, "text": str, "citext": str}

SAMPLE = 50  # rows compared after the copy besides each table's first and last
NAME = re.compile(r"[a-z_][a-z0-9_]*")
COPY_LINE = re.compile(r"COPY \w+, line (\d+)")


@dataclass
class Column:
    name: str
    kind: type
    nullable: bool


@dataclass
class Table:
    """One copied table: its columns as PostgreSQL has them, and what the copy saw."""

    name: str
    columns: list[Column]
    key: list[str]  # the primary key: the copy's order, and how a row is named
    identity: str | None  # the column an identity sequence fills
    rows: int = 0
    last_id: int = 0  # the highest id handed out: the copy's or SQLite's sqlite_sequence
    samples: list[tuple[Any, ...]] = field(default_factory=list)
    verified: int = 0  # sampled rows that read back the same
    mismatches: list[str] = field(default_factory=list)

    @property
    def select(self) -> str:
        """The SQLite query of its rows in key order (names checked against PostgreSQL's)."""
        names = ", ".join(f'"{c.name}"' for c in self.columns)
        return f'SELECT {names} FROM "{self.name}" ORDER BY ' + ", ".join(f'"{k}"' for k in self.key)

    def row_name(self, row: Sequence[Any]) -> str:
        names = [c.name for c in self.columns]
        return ", ".join(f"{k}={row[names.index(k)]!r}" for k in self.key)


@dataclass
class Report:
    """What was copied where, how long it took, and what the read-back found."""

    target: str
    tables: list[Table]
    rebuilt: dict[str, int]  # rows of each table PostgreSQL derives, after its rebuild
    seconds: float = 0.0

    @property
    def mismatches(self) -> list[str]:
        return [m for t in self.tables for m in t.mismatches]

    def summary(self) -> str:
        width = max(len(t.name) for t in self.tables)
        lines = [f"{'table':<{width}}  {'rows':>9}  verified"]
        for t in self.tables:
            check = "MISMATCH" if t.mismatches else f"ok: the count, and {t.verified} rows compared"
            lines.append(f"{t.name:<{width}}  {t.rows:>9}  {check}")
        lines += [f"{name:<{width}}  {rows:>9}  rebuilt from the copy" for name, rows in self.rebuilt.items()]
        total = sum(t.rows for t in self.tables)
        lines.append(
            f"copied {total} rows of {len(self.tables)} tables to {self.target} in {self.seconds:.1f}s"
        )
        return "\n".join(lines)


def migrate(db: Path, url: str) -> Report:
    """Copy the board at ``db`` into the empty PostgreSQL database at ``url`` and verify it.

    StoreError, with nothing written, when the copy cannot be made; a report with
    ``mismatches`` when what was committed does not read back the same.
    """
    started = time.monotonic()
    if not is_postgres(url):
        raise StoreError(f"{url.split(':')[0]}: is not PostgreSQL; name the target as a postgresql:// URL")
    if not db.is_file():
        raise StoreError(f"{db} does not exist; there is no board to move")
    target = redacted(url)
    with owning(db), _source(db) as lite:
        _check_source(lite, db)
        with _connect(url) as pg, _refusing(target, "nothing was written"):
            _check_target(pg, target)
        _create_schema(url)
        with _connect(url) as pg:
            with _refusing(target, "nothing was copied"):
                tables = _plan(lite, pg, target)
                report = Report(target, tables, _copy(lite, pg, tables, target))
            with _refusing(target, "the copy is committed but was not all read back"):
                _verify(pg, tables)
                pg.execute(
                    "ANALYZE"
                )  # the planner learns the new tables' sizes now, not at autovacuum's leisure
    report.seconds = time.monotonic() - started
    return report


# -- the two databases -----------------------------------------------------------


@contextlib.contextmanager
def _source(db: Path) -> Iterator[sqlite3.Connection]:
    """The SQLite file, read-only, in one read transaction: every count and row from one snapshot."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None)
    # Bytes that are not UTF-8 come through as surrogates, refused per row, not mid-read.
    conn.text_factory = lambda raw: raw.decode("utf-8", "surrogateescape")
    try:
        conn.execute("BEGIN")
        yield conn
    finally:
        conn.close()


@contextlib.contextmanager
def _refusing(target: str, outcome: str) -> Iterator[None]:
    """What the server refused, as one line saying what became of the copy."""
    try:
        yield
    except psycopg.Error as exc:
        raise StoreError(f"{target}: {_one_line(exc)}; {outcome}") from None


def _connect(url: str) -> psycopg.Connection[Any]:
    """A connection of its own; :func:`_copy` opens the one transaction the copy runs in."""
    try:
        return psycopg.connect(url, autocommit=True, application_name="bot-board migrate-to")
    except psycopg.Error as exc:
        raise StoreError(f"{redacted(url)}: cannot connect: {_one_line(exc)}") from None


def _check_source(lite: sqlite3.Connection, db: Path) -> None:
    version = int(lite.execute("PRAGMA user_version").fetchone()[0])
    if version != schema_version():
        fix = (
            "upgrade the board first"
            if version > schema_version()
            else "start the board on it once to upgrade it"
        )
        raise StoreError(
            f"{db} has schema version {version} and this board's is {schema_version()}; {fix}, then migrate"
        )


def _check_target(pg: psycopg.Connection[Any], target: str) -> None:
    """Refuse a database not in UTF8, or holding data, another application's tables, or a newer schema."""
    require_utf8(pg, target)
    tables = _pg_tables(pg)
    if "board_schema" not in tables:
        if tables:
            raise StoreError(
                f"{target} holds tables that are not a board's ({', '.join(sorted(tables)[:5])}); "
                "name an empty database"
            )
        return
    version = int(_scalar(pg, "SELECT version FROM board_schema"))
    if version > schema_version():
        raise StoreError(
            f"{target} has schema version {version}, newer than this board's ({schema_version()}); "
            "upgrade the board first"
        )
    _check_empty(pg, tables - PG_ONLY.keys(), target)


def _check_empty(pg: psycopg.Connection[Any], tables: set[str], target: str) -> None:
    held = []
    for name in sorted(tables):
        query = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(name))
        if name in SEEDED:
            query = sql.SQL("{} WHERE NOT ({})").format(query, sql.SQL(SEEDED[name]))
        if count := int(_scalar(pg, query)):
            held.append(f"{count} in {name}")
    if held:
        raise StoreError(
            f"{target} already holds board data ({', '.join(held[:4])}{', ...' if len(held) > 4 else ''}); "
            "migrate into a new, empty database"
        )


def _create_schema(url: str) -> None:
    """The PostgreSQL store's migrations, run as a board's first start runs them."""

    async def run() -> None:
        store = PostgresStore(url, readers=1)
        await store.open()
        await store.close()

    asyncio.run(run())


def _plan(lite: sqlite3.Connection, pg: psycopg.Connection[Any], target: str) -> list[Table]:
    """The tables to copy, parents first; StoreError when the two schemas differ."""
    version = int(_scalar(pg, "SELECT version FROM board_schema"))
    if version != schema_version():
        raise StoreError(f"{target} is at schema version {version} after migrating, not {schema_version()}")
    virtual = [
        r[0]
        for r in lite.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL%'"
        )
    ]
    names = {
        r[0]
        for r in lite.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
        if not any(r[0] == v or r[0].startswith(f"{v}_") for v in virtual)
    }
    expected = _pg_tables(pg) - PG_ONLY.keys()
    if names != expected:
        raise StoreError(
            f"the SQLite tables differ from {target}'s: only in SQLite {sorted(names - expected)}, "
            f"only in PostgreSQL {sorted(expected - names)}"
        )
    tables = [_table(lite, pg, name) for name in names]
    return _parents_first(pg, tables)


def _table(lite: sqlite3.Connection, pg: psycopg.Connection[Any], name: str) -> Table:
    rows = pg.execute(
        """SELECT a.attname, format_type(a.atttypid, NULL), NOT a.attnotnull, a.attidentity <> ''
           FROM pg_attribute a WHERE a.attrelid = %s::regclass AND a.attnum > 0
           AND NOT a.attisdropped AND a.attgenerated = '' ORDER BY a.attnum""",
        (name,),
    ).fetchall()
    unknown = [f"{column} {kind}" for column, kind, _, _ in rows if kind not in KINDS]
    if unknown:
        raise StoreError(f"{name}: no copy is known for columns {', '.join(unknown)}")
    columns = [Column(column, KINDS[kind], nullable) for column, kind, nullable, _ in rows]
    in_sqlite = {r[1] for r in lite.execute(f'PRAGMA table_info("{name}")')}
    if in_sqlite != {c.name for c in columns}:
        raise StoreError(
            f"{name}: the SQLite columns {sorted(in_sqlite)} differ from PostgreSQL's "
            f"{sorted(c.name for c in columns)}"
        )
    key = [
        r[0]
        for r in pg.execute(
            """SELECT a.attname FROM pg_index i
               JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) ON true
               JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
               WHERE i.indrelid = %s::regclass AND i.indisprimary ORDER BY k.n""",
            (name,),
        ).fetchall()
    ]
    if not key:
        raise StoreError(f"{name} has no primary key; a copy could not name its rows")
    identity = next((column for column, _, _, is_identity in rows if is_identity), None)
    return Table(name, columns, key, identity)


def _parents_first(pg: psycopg.Connection[Any], tables: list[Table]) -> list[Table]:
    """``tables`` ordered so that every table comes after the tables its foreign keys name."""
    parents: dict[str, set[str]] = {t.name: set() for t in tables}
    for child, parent in pg.execute(
        "SELECT conrelid::regclass::text, confrelid::regclass::text FROM pg_constraint WHERE contype = 'f'"
    ):
        if child in parents and parent != child:
            parents[child].add(parent)
    by_name = {t.name: t for t in tables}
    ordered: list[Table] = []
    while parents:
        ready = sorted(name for name, needs in parents.items() if not needs & parents.keys())
        if not ready:
            raise StoreError(
                f"the foreign keys of {', '.join(sorted(parents))} form a cycle; no copy order exists"
            )
        for name in ready:
            ordered.append(by_name[name])
            del parents[name]
    return ordered


# -- the copy --------------------------------------------------------------------


def _copy(
    lite: sqlite3.Connection, pg: psycopg.Connection[Any], tables: list[Table], target: str
) -> dict[str, int]:
    """Everything in one transaction; the row counts of the tables rebuilt after the copy."""
    last_ids = _last_ids(lite)
    with pg.transaction():
        pg.execute("SET LOCAL lock_timeout = '30s'")
        # Boards already running on the database write nothing until this commits.
        pg.execute("SELECT pg_advisory_xact_lock(%s, %s)", (BOARD, LOCKS["writes"]))
        _check_empty(pg, {t.name for t in tables}, target)
        for t in tables:
            pg.execute(sql.SQL("ALTER TABLE {} DISABLE TRIGGER USER").format(sql.Identifier(t.name)))
        for t in reversed(tables):
            pg.execute(sql.SQL("DELETE FROM {}").format(sql.Identifier(t.name)))
        for t in tables:
            _copy_table(lite, pg, t)
            t.last_id = max(t.last_id, last_ids.get(t.name, 0))
        rebuilt = {}
        for name, rebuild in PG_ONLY.items():
            if rebuild is not None:
                rebuilt[name] = pg.execute(rebuild).rowcount
        for t in tables:
            pg.execute(sql.SQL("ALTER TABLE {} ENABLE TRIGGER USER").format(sql.Identifier(t.name)))
            if t.identity is not None:
                # The next id is past every id SQLite ever handed out, deleted rows' included.
                pg.execute(
                    "SELECT setval(pg_get_serial_sequence(%s, %s), %s, %s)",
                    (t.name, t.identity, max(t.last_id, 1), t.last_id > 0),
                )
        return rebuilt


def _last_ids(lite: sqlite3.Connection) -> dict[str, int]:
    """The highest id each AUTOINCREMENT table has handed out, deleted rows' included."""
    found = {}
    for name, seq in lite.execute("SELECT name, seq FROM sqlite_sequence"):
        if type(seq) is not int:
            raise StoreError(f"sqlite_sequence row {name!r}: {_described(seq)} where an integer belongs")
        found[name] = seq
    return found


def _copy_table(lite: sqlite3.Connection, pg: psycopg.Connection[Any], t: Table) -> None:
    t.rows = int(lite.execute(f'SELECT count(*) FROM "{t.name}"').fetchone()[0])
    sampled = _sampled(t.rows)
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(t.name), sql.SQL(", ").join(sql.Identifier(c.name) for c in t.columns)
    )
    at_identity = [c.name for c in t.columns].index(t.identity) if t.identity else None
    try:
        with pg.cursor().copy(statement) as copy:
            for n, row in enumerate(_rows(lite, t)):
                copy.write_row(row)
                if n in sampled:
                    t.samples.append(row)
                if at_identity is not None:
                    t.last_id = max(t.last_id, row[at_identity])
    except psycopg.Error as exc:
        raise StoreError(_refused(lite, t, exc)) from None


def _rows(lite: sqlite3.Connection, t: Table) -> Iterator[tuple[Any, ...]]:
    """The table's rows in key order, each value checked for PostgreSQL; StoreError naming a bad one."""
    for row in lite.execute(t.select):
        try:
            yield tuple(map(_value, row, t.columns))
        except _Refused as exc:
            raise StoreError(
                f"{t.name} row {t.row_name(row)}, column {exc.column}: {exc.why}; nothing was copied"
            ) from None


class _Refused(Exception):
    def __init__(self, column: str, why: str) -> None:
        self.column, self.why = column, why


def _value(value: Any, column: Column) -> Any:
    """``value`` as PostgreSQL's column takes it; _Refused when it cannot be."""
    if value is None:
        if not column.nullable:
            raise _Refused(column.name, "empty (NULL), and the column may not be")
        return None
    if column.kind is str and isinstance(value, str):
        if "\x00" in value:
            raise _Refused(column.name, "a NUL character, which PostgreSQL text cannot hold")
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise _Refused(column.name, "bytes that are not UTF-8 text") from None
        return value
    if column.kind is int and type(value) is int:
        return value
    if column.kind is float and type(value) in (int, float):
        return float(value)
    wanted = {int: "an integer", float: "a number", str: "text"}[column.kind]
    raise _Refused(column.name, f"{_described(value)} where {wanted} belongs")


def _described(value: Any) -> str:
    if isinstance(value, bytes):
        return f"a blob of {len(value)} bytes"
    if isinstance(value, str):
        return f"text {value[:20]!r}"
    return f"{type(value).__name__} {value!r}"


def _sampled(rows: int) -> set[int]:
    """The positions compared after the copy: the first, the last and SAMPLE evenly spaced between."""
    if rows <= SAMPLE + 2:
        return set(range(rows))
    return {0, rows - 1} | {i * (rows - 1) // (SAMPLE + 1) for i in range(1, SAMPLE + 1)}


def _refused(lite: sqlite3.Connection, t: Table, exc: psycopg.Error) -> str:
    """What PostgreSQL refused, on one line, naming the row when its message says which line."""
    where = ""
    found = COPY_LINE.search(exc.diag.context or "")
    if found:
        row = lite.execute(f"{t.select} LIMIT 1 OFFSET ?", (int(found[1]) - 1,)).fetchone()
        if row is not None:
            where = f" row {t.row_name(row)}"
    detail = exc.diag.message_detail or ""
    detail = f" ({detail[:200]})" if detail and not detail.startswith("Failing row") else ""
    primary = exc.diag.message_primary or _one_line(exc)
    return f"{t.name}{where}: PostgreSQL refused it: {primary}{detail}; nothing was copied"


# -- after the commit ------------------------------------------------------------


def _verify(pg: psycopg.Connection[Any], tables: list[Table]) -> None:
    """Compare every table's count and its sampled rows with what PostgreSQL now holds."""
    for t in tables:
        count = int(_scalar(pg, sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(t.name))))
        if count != t.rows:
            t.mismatches.append(f"{t.name}: {count} rows in PostgreSQL, {t.rows} in SQLite")
        names = [c.name for c in t.columns]
        query = sql.SQL("SELECT {} FROM {} WHERE {}").format(
            sql.SQL(", ").join(map(sql.Identifier, names)),
            sql.Identifier(t.name),
            sql.SQL(" AND ").join(sql.SQL("{} = %s").format(sql.Identifier(k)) for k in t.key),
        )
        for row in t.samples:
            back = pg.execute(query, [row[names.index(k)] for k in t.key]).fetchone()
            if back == row:
                t.verified += 1
            else:
                t.mismatches.append(f"{t.name} row {t.row_name(row)} reads back different")


def _pg_tables(pg: psycopg.Connection[Any]) -> set[str]:
    found = {r[0] for r in pg.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")}
    bad = [name for name in found if not NAME.fullmatch(name)]
    if bad:
        raise StoreError(f"unexpected table names {bad!r}")
    return found


def _scalar(pg: psycopg.Connection[Any], query: Any) -> Any:
    row = pg.execute(query).fetchone()
    return row[0] if row else None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())
