"""One schema source, one runner: a migration renders to each dialect, and today's boards carry on.

The boards installed before the schema had one source were built by two folders of
hand-kept migrations, one per dialect. Those folders are read from git as they were
last (:data:`LEGACY`), a database is built with them the way their runner did, and the
one runner must open it without running anything, changing neither its rows nor its
schema, and find it the very schema it builds itself.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sqlite3
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from board.server.store import messages, schema
from board.server.store.db import Database
from board.server.store.dialects import PLACEHOLDER, POSTGRESQL, SECTION, SQLITE, Dialect, SchemaSourceError
from board.server.store.postgres import PostgresStore
from board.server.store.schema import Migration, migrations, schema_version
from board.server.store.search import Terms
from board.server.store.writer import Store, StoreError
from tests.support.boardtest import PgDatabase, StoreChoice, Where, db_execute, db_rows

ROOT = Path(__file__).resolve().parents[1]
#: The last commit whose migrations were kept by hand, one folder per dialect.
LEGACY = "4a387abd6c45093a901ceee7d546c2fbc9dd5690"
LEGACY_FOLDERS = {"sqlite": "board/server/store/migrations", "postgresql": "board/server/store/migrations_pg"}

#: A little of everything, written as the board of that day wrote it.
ROWS = """
INSERT INTO workspaces (slug, name, created_at) VALUES ('proj', 'Project', '2026-01-01T00:00:00Z');
INSERT INTO channels (workspace_id, slug, created_at)
    SELECT id, 'dev', created_at FROM workspaces WHERE slug = 'proj';
INSERT INTO agents (handle, kind, workspace_id, created_at)
    SELECT 'Ann', 'bot', id, created_at FROM workspaces WHERE slug = 'proj';
INSERT INTO messages (workspace_id, channel_id, kind, author_id, body, thread_id, created_at)
    SELECT c.workspace_id, c.id, 'channel', a.id, 'deploy the staging box', 0, '2026-01-01T00:00:01Z'
    FROM channels c, agents a WHERE c.slug = 'dev' AND a.handle = 'Ann';
INSERT INTO messages (workspace_id, channel_id, kind, author_id, body, reply_to, thread_id, created_at)
    SELECT workspace_id, channel_id, 'channel', author_id, 'staging is up', id, id, '2026-01-01T00:00:02Z'
    FROM messages WHERE body = 'deploy the staging box';
INSERT INTO kb_documents (workspace_id, path, created_at, updated_at)
    SELECT id, 'ops/Deploy.md', created_at, created_at FROM workspaces WHERE slug = 'proj';
INSERT INTO kb_revisions (document_id, workspace_id, revision, base_revision, kind, status, body, title,
                          author, author_kind, reason, recorded_at)
    SELECT id, workspace_id, 1, 0, 'write', 'settled', 'blue green', 'Deploying', 'Ann', 'bot', 'why',
           created_at FROM kb_documents;
UPDATE kb_documents SET latest_revision = 1, accepted_revision = 1, state = 'live', status = 'settled',
    current_id = (SELECT id FROM kb_revisions);
INSERT INTO audit (at, actor, action) VALUES ('2026-01-01T00:00:03Z', 'Ann', 'message.posted');
INSERT INTO wakes (agent_id, workspace_id, trigger_ids, harness, started_at, outcome, created_at)
    SELECT a.id, a.workspace_id, '[' || m.id || ', 999999]', 'claude', m.created_at, 'ok', m.created_at
    FROM agents a, messages m WHERE a.handle = 'Ann' AND m.body = 'staging is up';
"""


STAGING = Terms((("staging", False),))


# -- a migration, written once -------------------------------------------------------


SOURCE = """CREATE TABLE notes (
    id       {id},
    seq      {id_never_reused},
    owner_id {int} NOT NULL REFERENCES agents(id),
    weight   {real},
    name     {nocase} NOT NULL,
    at       TEXT NOT NULL DEFAULT '{}'
) {without_rowid};
CREATE TRIGGER notes_kept BEFORE DELETE ON notes
WHEN OLD.owner_id IS NOT DISTINCT FROM 1
REFUSE 'notes are kept';
-- [sqlite]
SELECT {now};
-- [postgresql]
SELECT 'only here';
-- [both]
"""


def test_each_migration_number_is_written_once_and_none_is_skipped() -> None:
    """A board records only its last number: two branches that both wrote migration N would
    leave one of them never run on a board that had the other, and a skipped number hides the
    same mistake. (Numbers below 0018 that are missing were never released.)"""
    numbers = [m.number for m in migrations()]
    assert len(numbers) == len(set(numbers))
    assert numbers[numbers.index(18) :] == list(range(18, numbers[-1] + 1))


def test_a_migration_written_once_renders_to_each_dialect() -> None:
    assert (
        SQLITE.render(SOURCE)
        == """CREATE TABLE notes (
    id       INTEGER PRIMARY KEY,
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_id INTEGER NOT NULL REFERENCES agents(id),
    weight   REAL,
    name     TEXT COLLATE NOCASE NOT NULL,
    at       TEXT NOT NULL DEFAULT '{}'
) WITHOUT ROWID;
CREATE TRIGGER notes_kept BEFORE DELETE ON notes
WHEN OLD.owner_id IS 1
BEGIN
    SELECT RAISE(ABORT, 'notes are kept');
END;
SELECT strftime('%Y-%m-%dT%H:%M:%SZ', 'now');
"""
    )
    identity = "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
    assert (
        POSTGRESQL.render(SOURCE)
        == f"""CREATE TABLE notes (
    id       {identity},
    seq      {identity},
    owner_id BIGINT NOT NULL REFERENCES agents(id),
    weight   DOUBLE PRECISION,
    name     citext NOT NULL,
    at       TEXT NOT NULL DEFAULT '{{}}'
) ;
CREATE TRIGGER notes_kept BEFORE DELETE ON notes
    FOR EACH ROW WHEN (OLD.owner_id IS NOT DISTINCT FROM 1)
    EXECUTE FUNCTION board_refuse('notes are kept');
CREATE TRIGGER notes_kept_truncate BEFORE TRUNCATE ON notes
    FOR EACH STATEMENT EXECUTE FUNCTION board_refuse('notes are kept');
SELECT 'only here';
"""
    )


def test_a_refusal_that_reads_other_tables_is_a_function_on_postgresql() -> None:
    source = """CREATE TRIGGER rows_follow BEFORE INSERT ON rows
WHEN NEW.n <> (SELECT max(n) FROM heads)
REFUSE 'it''s behind';"""
    assert (
        POSTGRESQL.render(source)
        == """CREATE FUNCTION rows_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.n <> (SELECT max(n) FROM heads) THEN
        PERFORM board_raise('it''s behind');
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER rows_follow BEFORE INSERT ON rows
    FOR EACH ROW EXECUTE FUNCTION rows_follow();
"""
    )


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ("CREATE TABLE t (id {serial});", "unknown placeholder {serial}"),
        ("-- [sqlite]\nCREATE TABLE t (x);\n", "-- [sqlite] is not closed"),
        ("CREATE TRIGGER t_kept AFTER DELETE ON t REFUSE 'no';", "a REFUSE that is not"),
    ],
    ids=["placeholder", "section", "refuse"],
)
@pytest.mark.parametrize("dialect", [SQLITE, POSTGRESQL], ids=lambda d: d.name)
def test_a_source_that_does_not_render_is_refused_by_name(dialect: Dialect, source: str, why: str) -> None:
    with pytest.raises(SchemaSourceError, match=re.escape(why)):
        dialect.render(source)


#: What only one dialect writes: in a shared statement, a placeholder's to say.
DIALECT_WORDS = re.compile(
    r"\b(INTEGER|BIGINT|REAL|DOUBLE PRECISION|AUTOINCREMENT|GENERATED|IDENTITY|COLLATE|citext"
    r"|WITHOUT ROWID|strftime|now\(\)|RAISE|plpgsql)\b"  # keywords in capitals, as the migrations write them
)


def _shared_words(source: str) -> list[str]:
    """The dialect words in the statements of ``source`` outside its dialects' sections."""
    shared, section = [], "both"
    for line in source.splitlines():
        found = SECTION.match(line)
        if found:
            section = found[1]
        elif section == "both":
            shared.append(line)
    code = PLACEHOLDER.sub("", re.sub(r"--.*", "", "\n".join(shared)))
    return DIALECT_WORDS.findall(code)


def test_shared_statements_leave_what_differs_to_the_dialect() -> None:
    assert _shared_words("CREATE TABLE t (n INTEGER, m {int});") == ["INTEGER"]  # the check can fail
    for migration in migrations():
        assert _shared_words(migration.source) == [], migration.name


# -- today's boards --------------------------------------------------------------------


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, (
        f"git {' '.join(args)} (this test reads the checkout's history): {done.stderr}"
    )
    return done.stdout


def legacy_migrations(store: str) -> list[tuple[int, str]]:
    """The hand-kept migrations of ``store``'s dialect as :data:`LEGACY` left them."""
    folder = LEGACY_FOLDERS[store]
    names = _git("ls-tree", "--name-only", f"{LEGACY}:{folder}").split()
    return [
        (int(name[:4]), _git("show", f"{LEGACY}:{folder}/{name}"))
        for name in sorted(names)
        if name[:4].isdigit() and name.endswith(".sql")
    ]


def build_legacy(where: Where, upto: int) -> None:
    """A database migrated up to ``upto`` as the runner of that day did it."""
    store = "sqlite" if isinstance(where, Path) else "postgresql"
    scripts = [(number, script) for number, script in legacy_migrations(store) if number <= upto]
    if isinstance(where, Path):
        lite = sqlite3.connect(where, isolation_level=None)
        for number, script in scripts:
            lite.executescript(f"BEGIN IMMEDIATE;\n{script}\nPRAGMA user_version = {number};\nCOMMIT;")
        lite.close()
        return
    with psycopg.connect(where.url, autocommit=True) as pg:
        for number, script in scripts:
            with pg.transaction():
                pg.execute(script)
                pg.execute("UPDATE board_schema SET version = %s", (number,))
        compat = _git("show", f"{LEGACY}:{LEGACY_FOLDERS[store]}/compat.sql")
        pg.execute(compat)


def _one_line(text: str | None) -> str:
    """A definition with its white space folded, and COLLATE NOCASE where the legacy SQL put it:
    ``{nocase}`` writes it right after TEXT, the hand-kept migrations wrote it last (one meaning)."""
    folded = " ".join((text or "").split())
    return re.sub(r"TEXT COLLATE NOCASE((?: NOT NULL| UNIQUE)*)", r"TEXT\1 COLLATE NOCASE", folded)


PG_CATALOG = {
    "columns": """SELECT table_name, ordinal_position, column_name, data_type, udt_name, is_nullable,
                         column_default, is_identity, identity_generation, is_generated, generation_expression
                  FROM information_schema.columns WHERE table_schema = 'public' ORDER BY 1, 2""",
    "constraints": """SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint
                      WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2""",
    "indexes": """SELECT tablename, indexname, indexdef FROM pg_indexes
                  WHERE schemaname = 'public' ORDER BY 1, 2""",
    "triggers": """SELECT tgrelid::regclass::text, tgname, pg_get_triggerdef(oid), tgenabled FROM pg_trigger
                   WHERE NOT tgisinternal ORDER BY 1, 2""",
    "functions": """SELECT proname, pg_get_function_identity_arguments(oid), pg_get_function_result(oid),
                           prosrc, provolatile, proparallel
                    FROM pg_proc WHERE pronamespace = 'public'::regnamespace ORDER BY 1, 2, 3""",
    "views": "SELECT viewname, definition FROM pg_views WHERE schemaname = 'public' ORDER BY 1",
    "extensions": "SELECT extname FROM pg_extension ORDER BY 1",
}


def schema_of(where: Where) -> dict[str, list[tuple[Any, ...]]]:
    """Every object of the database's schema, as its catalog describes it."""
    if isinstance(where, Path):
        rows = db_rows(where, "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")
        return {"sqlite_master": [(*row[:3], _one_line(row[3])) for row in rows]}
    return {
        name: [tuple(_one_line(v) if isinstance(v, str) else v for v in row) for row in db_rows(where, query)]
        for name, query in PG_CATALOG.items()
    }


def rows_of(where: Where) -> dict[str, list[str]]:
    """Every row of every table, in an order of their own; a full-text index's own tables
    (SQLite's shadow tables) are how it stores the rows it indexes, and a rebuild may change them."""
    if isinstance(where, Path):
        tables = "type = 'table' AND schema = 'main' AND name NOT LIKE 'sqlite_%'"
        names = db_rows(where, f"SELECT name FROM pragma_table_list WHERE {tables}")
    else:
        names = db_rows(where, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    return {name: sorted(map(repr, db_rows(where, f'SELECT * FROM "{name}"'))) for (name,) in names}


def version_of(where: Where) -> int:
    query = "PRAGMA user_version" if isinstance(where, Path) else "SELECT version FROM board_schema"
    return int(db_rows(where, query)[0][0])


@pytest.fixture
def new_database(store: StoreChoice, tmp_path: Path) -> Iterator[Callable[[], Where]]:
    """New, empty databases of the store under test (PostgreSQL's dropped afterwards)."""
    if store.cluster is None:
        files = iter(tmp_path / f"board{n}.db" for n in range(100))
        yield lambda: next(files)
        return
    cluster, made = store.cluster, list[PgDatabase]()

    def make() -> Where:
        made.append(PgDatabase(cluster.fresh_database()))
        return made[-1]

    yield make
    for database in made:
        cluster.drop_database(database.url)


def store_on(where: Where) -> Store:
    return PostgresStore(where.url, readers=1) if isinstance(where, PgDatabase) else Database(where)


@asynccontextmanager
async def running(where: Where) -> AsyncIterator[Store]:
    store = store_on(where)
    await store.open()
    try:
        yield store
    finally:
        await store.close()


#: What a later migration fills from rows the board had: 0022 indexes the one wake's trigger.
BACKFILLED = {"wake_triggers": 1}


def rows_kept(before: dict[str, list[str]], after: dict[str, list[str]]) -> None:
    """Every table keeps as many rows as it had; a table a later migration added holds only
    what it backfilled (BACKFILLED), none otherwise."""
    assert {name: len(after[name]) for name in before} == {name: len(rows) for name, rows in before.items()}
    added = {name: len(rows) for name, rows in after.items() if name not in before}
    assert added == {name: BACKFILLED.get(name, 0) for name in added}, added


def applied(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("applying migration")]


async def test_a_board_at_the_hand_kept_schema_runs_only_what_came_after(
    new_database: Callable[[], Where], caplog: pytest.LogCaptureFixture
) -> None:
    """A board the hand-kept migrations built opens at their last number, and runs only the
    migrations written since: nothing it had is run again, no row changes."""
    caplog.set_level(logging.INFO, logger="board.server.store.schema")
    today = new_database()
    build_legacy(today, upto=10**6)
    await asyncio.to_thread(_write, today, ROWS)
    store_name = "sqlite" if isinstance(today, Path) else "postgresql"
    last_legacy = max(number for number, _ in legacy_migrations(store_name))
    assert version_of(today) == last_legacy  # the numbers carried over
    rows = rows_of(today)

    async with running(today) as store:
        staging = (
            await store.read(lambda conn: messages.search(conn, STAGING, messages.MessageFilter(), 9, 0))
        ).rows
    # Only what the one source added since the hand-kept runner: nothing it had is run again.
    assert applied(caplog) == [f"applying migration {m.name}" for m in migrations() if m.number > last_legacy]
    assert version_of(today) == schema_version()
    rows_kept(rows, rows_of(today))
    described = schema_of(today)
    assert sorted(row["body"] for row in staging) == ["deploy the staging box", "staging is up"]

    fresh = new_database()
    async with running(fresh):
        pass
    assert schema_of(fresh) == described  # the one source builds the schema today's boards have


async def test_an_older_board_gets_the_missing_migrations_from_the_one_source(
    new_database: Callable[[], Where], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="board.server.store.schema")
    older = new_database()
    build_legacy(older, upto=12)
    await asyncio.to_thread(_write, older, ROWS)
    before = rows_of(older)

    async with running(older):
        pass
    assert applied(caplog) == [f"applying migration {m.name}" for m in migrations() if m.number > 12]
    assert version_of(older) == schema_version()
    after = rows_of(older)
    assert after["workspaces"] != before["workspaces"]  # loop_hops (0018) was added with its default
    rows_kept(before, after)

    fresh = new_database()
    async with running(fresh):
        pass
    assert schema_of(older) == schema_of(fresh)


async def test_a_failing_migration_leaves_the_database_as_it_was(
    new_database: Callable[[], Where], monkeypatch: pytest.MonkeyPatch
) -> None:
    where = new_database()
    async with running(where):
        pass
    described, known = schema_of(where), schema_version()
    broken = Migration(
        known + 1,
        f"{known + 1:04d}_broken.sql",
        "CREATE TABLE half (x {int});\nINSERT INTO nowhere VALUES (1);",
    )
    shipped = migrations()
    monkeypatch.setattr(schema, "migrations", lambda: (*shipped, broken))

    with pytest.raises(StoreError, match=f"migration {broken.name} failed"):
        await store_on(where).open()
    assert version_of(where) == known
    assert schema_of(where) == described  # no half table


async def test_a_newer_database_is_refused_and_left_alone(new_database: Callable[[], Where]) -> None:
    where = new_database()
    async with running(where):
        pass
    newer = schema_version() + 7
    if isinstance(where, Path):
        db_execute(where, f"PRAGMA user_version = {newer}")
    else:
        db_execute(where, f"UPDATE board_schema SET version = {newer}")
    described = schema_of(where)

    with pytest.raises(
        StoreError, match=rf"schema version {newer}, newer than this board understands \({newer - 7}\)"
    ):
        await store_on(where).open()
    assert version_of(where) == newer and schema_of(where) == described


def _write(where: Where, script: str) -> None:
    if isinstance(where, Path):
        lite = sqlite3.connect(where, isolation_level=None)
        lite.executescript(script)
        lite.close()
        return
    with psycopg.connect(where.url, autocommit=True) as pg:
        pg.execute(script)
