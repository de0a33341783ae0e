"""The one schema source builds the same schema on PostgreSQL as on SQLite, and its triggers keep its rules.

Both stores run the same migrations, each rendered by its dialect (store/dialects.py);
SQLite's schema is the reference. What the rendering must keep alike (tables, columns
in order, types as the dialect maps them, keys, foreign keys, checks, indexes, views,
triggers) is compared here, with the differences full-text search brings listed one
by one. Each refusing trigger is shown to refuse (an IntegrityError, SQLite's message,
the row unchanged) and to let through what the SQLite one lets through.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from board.server.services.messages import fts_query
from board.server.store.dialects import SQLITE
from board.server.store.postgres import PostgresStore
from board.server.store.schema import migrations, schema_version
from tests.support.pgcluster import INSTALL_HINT, PgCluster, wanted_stores

# What full-text search and the version table make different, and nothing else.
SQLITE_ONLY_TABLES = {"messages_fts", "kb_fts", "sqlite_sequence"} | {
    f"{fts}_{part}" for fts in ("messages_fts", "kb_fts") for part in ("config", "data", "docsize", "idx")
}
PG_ONLY_TABLES = {"board_schema", "kb_search"}
PG_ONLY_COLUMNS = {("messages", "search_vector")}
PG_ONLY_INDEXES = {"board_schema_one_row", "messages_search", "kb_search_vector"}
SQLITE_ONLY_TRIGGERS = {"messages_fts_insert", "messages_fts_delete"}
#: What FTS5 indexes a message from (its words and its workspace); PostgreSQL reads messages.
SQLITE_ONLY_VIEWS = {"messages_fts_source"}
PG_ONLY_TRIGGERS = {
    "audit_append_only_truncate",
    "kb_revisions_kept_truncate",
    "kb_search_follow_head",
    "kb_search_follow_revision",
}
NOW = "2026-01-01T00:00:00Z"


@pytest.fixture
def pg(pg_cluster: PgCluster, pg_template: str) -> Iterator[psycopg.Connection[Any]]:
    """A copy of the suite's database, migrated by the store's runner."""
    url = pg_cluster.fresh_database(like=pg_template)
    with psycopg.connect(url, autocommit=True) as conn:
        yield conn
    pg_cluster.drop_database(url)


@pytest.fixture(scope="module")
def lite() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    for migration in migrations():
        conn.executescript(SQLITE.render(migration.source))
    yield conn
    conn.close()


def one(conn: psycopg.Connection[Any], query: str, params: tuple[Any, ...] = ()) -> Any:
    row = conn.execute(query, params).fetchone()
    return None if row is None else row[0] if len(row) == 1 else row


def one_lite(lite: sqlite3.Connection, query: str, params: tuple[Any, ...] = ()) -> Any:
    return lite.execute(query, params).fetchone()[0]


def refused(conn: psycopg.Connection[Any], query: str, params: tuple[Any, ...], message: str) -> None:
    """The statement fails as a refusing trigger fails: SQLSTATE 23000, SQLite's message."""
    with pytest.raises(psycopg.IntegrityError) as caught:
        conn.execute(query, params)
    assert caught.value.sqlstate == "23000"
    assert caught.value.diag.message_primary == message


# -- the schema, against SQLite's ----------------------------------------------------------


def test_the_version_is_recorded_in_one_row(pg: psycopg.Connection[Any]) -> None:
    assert pg.execute("SELECT version FROM board_schema").fetchall() == [(schema_version(),)]
    with pytest.raises(psycopg.errors.UniqueViolation):  # one row: the runner only replaces it
        pg.execute("INSERT INTO board_schema (version) VALUES (1)")


def _lite_tables(lite: sqlite3.Connection) -> list[str]:
    rows = lite.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
    return [name for (name,) in rows if name not in SQLITE_ONLY_TABLES]


def _pg_tables(pg: psycopg.Connection[Any]) -> list[str]:
    rows = pg.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        " AND table_type = 'BASE TABLE' ORDER BY table_name"
    )
    return [name for (name,) in rows if name not in PG_ONLY_TABLES]


def _lite_columns(lite: sqlite3.Connection, table: str) -> list[tuple[Any, ...]]:
    """name, type, not null, default of each column, in order."""
    return [
        (name, kind, bool(notnull or pk), default)
        for _, name, kind, notnull, default, pk in lite.execute(f"PRAGMA table_info({table})")
    ]


def _pg_columns(pg: psycopg.Connection[Any], table: str) -> list[tuple[Any, ...]]:
    rows = pg.execute(
        """SELECT column_name, CASE WHEN data_type = 'USER-DEFINED' THEN udt_name ELSE data_type END,
                  is_nullable = 'NO', column_default, is_identity = 'YES'
           FROM information_schema.columns WHERE table_schema = 'public' AND table_name = %s
           ORDER BY ordinal_position""",
        (table,),
    )
    return [row for row in rows if (table, row[0]) not in PG_ONLY_COLUMNS]


def _normal_default(value: str | None) -> str | None:
    """'none'::text and 'none' alike; a number bare."""
    if value is None:
        return None
    value = re.sub(r"::[a-z ]+$", "", value)
    return value.strip("'") if re.fullmatch(r"'?-?[0-9.]+'?", value) else value


def _lite_foreign_keys(lite: sqlite3.Connection, table: str) -> set[tuple[Any, ...]]:
    rows = lite.execute(f"PRAGMA foreign_key_list({table})")
    return {(source, target, to, on_delete) for _, _, target, source, to, _, on_delete, _ in rows}


def _pg_foreign_keys(pg: psycopg.Connection[Any], table: str) -> set[tuple[Any, ...]]:
    actions = {"a": "NO ACTION", "c": "CASCADE", "n": "SET NULL", "r": "RESTRICT", "d": "SET DEFAULT"}
    rows = pg.execute(
        """SELECT a.attname, c.confrelid::regclass::text, f.attname, c.confdeltype
           FROM pg_constraint c
           JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
           JOIN pg_attribute f ON f.attrelid = c.confrelid AND f.attnum = c.confkey[1]
           WHERE c.contype = 'f' AND c.conrelid = %s::regclass""",
        (table,),
    )
    return {(source, target, to, actions[action]) for source, target, to, action in rows}


def test_the_same_tables_and_columns_in_the_dialect_s_types(
    lite: sqlite3.Connection, pg: psycopg.Connection[Any]
) -> None:
    tables = _lite_tables(lite)
    assert _pg_tables(pg) == tables
    nocase = {("agents", "handle"), ("kb_documents", "path"), ("machines", "name")}
    types = {"INTEGER": "bigint", "TEXT": "text", "REAL": "double precision"}
    for table in tables:
        borrowed = {source for source, *_ in _lite_foreign_keys(lite, table)}
        ours, theirs = _lite_columns(lite, table), _pg_columns(pg, table)
        assert [c[0] for c in theirs] == [c[0] for c in ours], table
        for (name, kind, notnull, default), (_, pg_kind, pg_notnull, pg_default, identity) in zip(
            ours, theirs, strict=True
        ):
            where = f"{table}.{name}"
            assert pg_kind == ("citext" if (table, name) in nocase else types[kind]), where
            assert pg_notnull == notnull, where
            # An INTEGER PRIMARY KEY is an identity, unless it is another row's id.
            assert identity == (name == _single_integer_key(lite, table) and name not in borrowed), where
            assert _normal_default(pg_default) == _normal_default(default), where
    assert [row[0] for row in _pg_columns(pg, "messages")][-1] == "actor_id"  # search_vector is extra


def _single_integer_key(lite: sqlite3.Connection, table: str) -> str | None:
    keys = [(name, kind) for _, name, kind, _, _, pk in lite.execute(f"PRAGMA table_info({table})") if pk]
    return keys[0][0] if len(keys) == 1 and keys[0][1] == "INTEGER" else None


def _lite_keys(lite: sqlite3.Connection, table: str) -> set[tuple[str, ...]]:
    """Column tuples of the primary key and of every UNIQUE constraint."""
    found: set[tuple[str, ...]] = set()
    integer_key = _single_integer_key(lite, table)
    if integer_key:
        found.add((integer_key,))  # a rowid alias has no index of its own
    for _, name, _, origin, _ in lite.execute(f"PRAGMA index_list({table})"):
        if origin in ("pk", "u"):
            found.add(tuple(row[2] for row in lite.execute(f"PRAGMA index_info({name})")))
    return found


def _pg_keys(pg: psycopg.Connection[Any], table: str) -> set[tuple[str, ...]]:
    rows = pg.execute(
        """SELECT array(SELECT a.attname FROM unnest(c.conkey) WITH ORDINALITY k(num, i)
                        JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.num ORDER BY k.i)
           FROM pg_constraint c WHERE c.contype IN ('p', 'u') AND c.conrelid = %s::regclass""",
        (table,),
    )
    return {tuple(columns) for (columns,) in rows}


def test_keys_foreign_keys_checks_and_indexes_match(
    lite: sqlite3.Connection, pg: psycopg.Connection[Any]
) -> None:
    ours = {}
    for table in _lite_tables(lite):
        assert _pg_keys(pg, table) == _lite_keys(lite, table), table
        assert _pg_foreign_keys(pg, table) == _lite_foreign_keys(lite, table), table
        text = one_lite(lite, "SELECT sql FROM sqlite_master WHERE name = ?", (table,))
        checks = "SELECT count(*) FROM pg_constraint WHERE contype = 'c' AND conrelid = %s::regclass"
        assert one(pg, checks, (table,)) == len(re.findall(r"\bCHECK\b", text)), table
        for _, name, unique, origin, partial in lite.execute(f"PRAGMA index_list({table})"):
            if origin == "c":
                columns = tuple(row[2] for row in lite.execute(f"PRAGMA index_info({name})"))
                ours[name] = (table, columns, bool(unique), bool(partial))
    rows = pg.execute(
        """SELECT i.relname, t.relname,
                  array(SELECT pg_get_indexdef(x.indexrelid, k, true) FROM generate_series(1, x.indnatts) k),
                  x.indisunique, x.indpred IS NOT NULL
           FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
           WHERE t.relnamespace = 'public'::regnamespace AND NOT EXISTS (
               SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid AND c.contype IN ('p', 'u'))"""
    )
    theirs = {name: (table, tuple(cols), unique, partial) for name, table, cols, unique, partial in rows}
    assert set(theirs) - set(ours) == PG_ONLY_INDEXES
    assert {name: theirs[name] for name in ours} == ours


def test_the_same_views_and_triggers(lite: sqlite3.Connection, pg: psycopg.Connection[Any]) -> None:
    views = [name for (name,) in lite.execute("SELECT name FROM sqlite_master WHERE type = 'view'")]
    views = [name for name in views if name not in SQLITE_ONLY_VIEWS]
    assert views == ["kb_current"]
    pg_views = pg.execute("SELECT table_name FROM information_schema.views WHERE table_schema = 'public'")
    assert [name for (name,) in pg_views] == views
    view_columns = pg.execute("SELECT * FROM kb_current LIMIT 0").description or []
    assert [c.name for c in view_columns] == [row[1] for row in lite.execute("PRAGMA table_info(kb_current)")]
    triggers = {name for (name,) in lite.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    pg_triggers = pg.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")
    assert {name for (name,) in pg_triggers} - PG_ONLY_TRIGGERS == triggers - SQLITE_ONLY_TRIGGERS


def test_the_seed_rows_are_there_with_utc_timestamps(pg: psycopg.Connection[Any]) -> None:
    stamp = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
    workspace = one(pg, "SELECT slug, created_at FROM workspaces")
    assert workspace[0] == "admin" and stamp.fullmatch(workspace[1])
    assert one(pg, "SELECT slug, created_at FROM channels") == ("lobby", workspace[1])
    board = one(pg, "SELECT handle, kind, created_at, harness FROM agents")
    assert board[:2] == ("board", "system") and stamp.fullmatch(board[2]) and board[3] is None


# -- trigger behaviour -------------------------------------------------------------------------


def workspace(pg: psycopg.Connection[Any], slug: str = "w") -> int:
    return int(
        one(
            pg,
            "INSERT INTO workspaces (slug, name, created_at) VALUES (%s, %s, %s) RETURNING id",
            (slug, slug, NOW),
        )
    )


def bot(pg: psycopg.Connection[Any], handle: str, workspace_id: int) -> int:
    return int(
        one(
            pg,
            "INSERT INTO agents (handle, kind, workspace_id, created_at) VALUES (%s, 'bot', %s, %s)"
            " RETURNING id",
            (handle, workspace_id, NOW),
        )
    )


def post(
    pg: psycopg.Connection[Any], author: int, body: str, reply_to: int | None = None, kind: str = "channel"
) -> tuple[int, int]:
    """Insert a message the way the store does (a root with thread_id 0); its id and thread id."""
    thread = 0 if reply_to is None else one(pg, "SELECT thread_id FROM messages WHERE id = %s", (reply_to,))
    return one(
        pg,
        """INSERT INTO messages (workspace_id, channel_id, kind, author_id, body, reply_to, thread_id,
               created_at)
           SELECT workspace_id, id, %s, %s, %s, %s, %s, %s FROM channels WHERE slug = 'lobby'
           RETURNING id, thread_id""",
        (kind, author, body, reply_to, thread, NOW),
    )


@pytest.fixture
def lobby_bots(pg: psycopg.Connection[Any]) -> tuple[int, int]:
    admin = int(one(pg, "SELECT id FROM workspaces WHERE slug = 'admin'"))
    return bot(pg, "ann", admin), bot(pg, "bob", admin)


def test_a_root_is_its_own_thread_and_replies_fill_summary_and_participants(
    pg: psycopg.Connection[Any], lobby_bots: tuple[int, int]
) -> None:
    ann, bob = lobby_bots
    root, thread = post(pg, ann, "root")
    assert thread == root == one(pg, "SELECT thread_id FROM messages WHERE id = %s", (root,))
    assert one(pg, "SELECT count(*) FROM threads") == 0  # a root alone has no summary
    first, first_thread = post(pg, bob, "first reply", reply_to=root)
    assert first_thread == root
    assert one(pg, "SELECT reply_count, last_id FROM threads WHERE root_id = %s", (root,)) == (1, first)
    last, _ = post(pg, ann, "second reply", reply_to=root)
    summary = one(pg, "SELECT reply_count, last_id, last_at FROM threads WHERE root_id = %s", (root,))
    assert summary == (2, last, one(pg, "SELECT created_at FROM messages WHERE id = %s", (last,)))
    people = pg.execute("SELECT agent_id FROM thread_participants WHERE thread_id = %s ORDER BY 1", (root,))
    assert [a for (a,) in people] == sorted([ann, bob])  # ann twice, listed once


def test_a_board_event_neither_counts_nor_takes_part(
    pg: psycopg.Connection[Any], lobby_bots: tuple[int, int]
) -> None:
    ann, _ = lobby_bots
    board = int(one(pg, "SELECT id FROM agents WHERE handle = 'board'"))
    root, _ = post(pg, ann, "root")
    post(pg, board, "claimed", reply_to=root, kind="event")
    event_root, event_thread = post(pg, board, "an event root", kind="event")
    assert event_thread == event_root  # its own thread all the same
    assert one(pg, "SELECT count(*) FROM threads") == 0
    assert one(pg, "SELECT count(*) FROM thread_participants WHERE agent_id = %s", (board,)) == 0


def test_handles_paths_and_machine_names_are_unique_without_regard_to_case(
    pg: psycopg.Connection[Any],
) -> None:
    w = workspace(pg)
    ann = bot(pg, "Ann", w)
    with pytest.raises(psycopg.errors.UniqueViolation):
        bot(pg, "ann", w)
    assert one(pg, "SELECT id FROM agents WHERE handle = %s", ("ANN",)) == ann
    assert one(pg, "SELECT handle FROM agents WHERE id = %s", (ann,)) == "Ann"  # kept as written
    document(pg, w, "Runbooks/Deploy.md")
    with pytest.raises(psycopg.errors.UniqueViolation):
        document(pg, w, "runbooks/deploy.md")
    pg.execute("INSERT INTO machines (name, enrolled_at) VALUES ('Box', %s)", (NOW,))
    with pytest.raises(psycopg.errors.UniqueViolation):
        pg.execute("INSERT INTO machines (name, enrolled_at) VALUES ('BOX', %s)", (NOW,))
    assert one(pg, "SELECT count(*) FROM agents WHERE handle = 'ann'") == 1
    assert one(pg, "SELECT count(*) FROM machines") == 1


def test_audit_rows_are_append_only(pg: psycopg.Connection[Any]) -> None:
    message = "audit rows are append-only"
    row = one(pg, "INSERT INTO audit (at, actor, action) VALUES (%s, 'ann', 'x.made') RETURNING id", (NOW,))
    refused(pg, "UPDATE audit SET action = 'x.hidden' WHERE id = %s", (row,), message)
    refused(pg, "DELETE FROM audit WHERE id = %s", (row,), message)
    refused(pg, "TRUNCATE audit", (), message)
    assert pg.execute("SELECT id, action FROM audit").fetchall() == [(row, "x.made")]
    pg.execute("INSERT INTO audit (at, actor, action) VALUES (%s, 'ann', 'x.next')", (NOW,))
    assert one(pg, "SELECT count(*) FROM audit") == 2


def test_claim_history_and_skill_versions_are_append_only(
    pg: psycopg.Connection[Any], lobby_bots: tuple[int, int]
) -> None:
    ann, _ = lobby_bots
    root, _ = post(pg, ann, "task")
    event = one(
        pg,
        "INSERT INTO claim_events (thread_id, action, at) VALUES (%s, 'claim', %s) RETURNING id",
        (root, NOW),
    )
    refused(
        pg,
        "UPDATE claim_events SET action = 'release' WHERE id = %s",
        (event,),
        "claim history is append-only",
    )
    assert one(pg, "SELECT action FROM claim_events WHERE id = %s", (event,)) == "claim"
    skill = one(
        pg,
        "INSERT INTO skills (name, version, created_at, created_by) VALUES ('s', 1, %s, 'ann') RETURNING id",
        (NOW,),
    )
    pg.execute(
        "INSERT INTO skill_versions (skill_id, version, text, author, created_at) VALUES (%s, 1, 'v1',"
        " 'ann', %s)",
        (skill, NOW),
    )
    refused(
        pg,
        "UPDATE skill_versions SET text = 'v2' WHERE skill_id = %s",
        (skill,),
        "skill versions are append-only",
    )
    assert one(pg, "SELECT text FROM skill_versions WHERE skill_id = %s", (skill,)) == "v1"
    pg.execute("DELETE FROM claim_events WHERE id = %s", (event,))  # SQLite lets a delete through too
    assert one(pg, "SELECT count(*) FROM claim_events") == 0


# -- knowledge -----------------------------------------------------------------------------------

FOLLOW = "version conflict: a revision must follow the latest one"
APPEND_ONLY = "knowledge revisions are append-only: only a review or a redaction changes one"
KEPT = "knowledge revisions are kept: they go only with their archived workspace"


def document(pg: psycopg.Connection[Any], w: int, path: str) -> int:
    return int(
        one(
            pg,
            "INSERT INTO kb_documents (workspace_id, path, created_at, updated_at)"
            " VALUES (%s, %s, %s, %s) RETURNING id",
            (w, path, NOW, NOW),
        )
    )


def revise(
    pg: psycopg.Connection[Any],
    doc: int,
    revision: int,
    *,
    title: str = "",
    body: str = "",
    status: str = "settled",
    kind: str = "write",
) -> int:
    """Append a revision and move the head to show it (what the store's write does)."""
    rev = int(
        one(
            pg,
            """INSERT INTO kb_revisions (document_id, workspace_id, revision, base_revision, kind, status,
               body, title, author, author_kind, reason, recorded_at)
           SELECT id, workspace_id, %s, %s, %s, %s, %s, %s, 'ann', 'bot', 'why', %s
           FROM kb_documents WHERE id = %s
           RETURNING id""",
            (revision, revision - 1, kind, status, body, title, NOW, doc),
        )
    )
    state = "live" if kind == "write" else "tombstoned"
    pg.execute(
        "UPDATE kb_documents SET latest_revision = %s, current_id = %s, state = %s WHERE id = %s",
        (revision, rev, state, doc),
    )
    return rev


def test_a_revision_must_follow_the_latest_one(pg: psycopg.Connection[Any]) -> None:
    doc = document(pg, workspace(pg), "a.md")
    insert = """INSERT INTO kb_revisions (document_id, workspace_id, revision, base_revision, kind, status,
                    author, author_kind, reason, recorded_at)
                SELECT id, workspace_id, %s, %s, 'write', 'settled', 'ann', 'bot', 'why', %s
                FROM kb_documents WHERE id = %s"""
    refused(pg, insert, (2, 1, NOW, doc), FOLLOW)  # latest is 0: only revision 1 may come
    assert one(pg, "SELECT count(*) FROM kb_revisions") == 0
    revise(pg, doc, 1, body="one")
    refused(pg, insert, (1, 0, NOW, doc), FOLLOW)  # two writers on base 0: the second is refused
    refused(pg, insert, (3, 2, NOW, doc), FOLLOW)
    revise(pg, doc, 2, body="two")
    assert [r for (r,) in pg.execute("SELECT revision FROM kb_revisions ORDER BY 1")] == [1, 2]


def test_a_revision_changes_only_by_one_review_or_one_redaction(pg: psycopg.Connection[Any]) -> None:
    doc = document(pg, workspace(pg), "a.md")
    rev = revise(pg, doc, 1, body="secret words", status="proposed")
    before = one(pg, "SELECT body, reason, status FROM kb_revisions WHERE id = %s", (rev,))
    refused(pg, "UPDATE kb_revisions SET reason = 'rewritten' WHERE id = %s", (rev,), APPEND_ONLY)
    refused(pg, "UPDATE kb_revisions SET body = 'other' WHERE id = %s", (rev,), APPEND_ONLY)
    refused(
        pg, "UPDATE kb_revisions SET status = 'settled' WHERE id = %s", (rev,), APPEND_ONLY
    )  # no reviewer
    assert one(pg, "SELECT body, reason, status FROM kb_revisions WHERE id = %s", (rev,)) == before
    review = "UPDATE kb_revisions SET status = %s, reviewed_by = 'hu', reviewed_at = %s WHERE id = %s"
    pg.execute(review, ("settled", NOW, rev))
    refused(pg, review, ("rejected", "2026-01-02T00:00:00Z", rev), APPEND_ONLY)  # decided once
    redact = """UPDATE kb_revisions SET body = '', title = '', excerpt = '', redacted_by = 'hu',
                    redacted_at = %s, redaction_reason = 'leak', redacted_sha256 = 'abc' WHERE id = %s"""
    pg.execute(redact, (NOW, rev))
    refused(pg, redact, ("2026-01-02T00:00:00Z", rev), APPEND_ONLY)  # redacted once
    assert one(pg, "SELECT status, body, redacted_at FROM kb_revisions WHERE id = %s", (rev,)) == (
        "settled",
        "",
        NOW,
    )


def test_revisions_go_only_with_their_archived_workspace(pg: psycopg.Connection[Any]) -> None:
    w = workspace(pg)
    doc = document(pg, w, "a.md")
    revise(pg, doc, 1, body="kept")
    refused(pg, "DELETE FROM kb_revisions WHERE document_id = %s", (doc,), KEPT)
    refused(pg, "DELETE FROM workspaces WHERE id = %s", (w,), KEPT)  # not even through the cascade
    refused(pg, "TRUNCATE kb_revisions CASCADE", (), KEPT)
    assert one(pg, "SELECT count(*) FROM kb_revisions") == 1
    pg.execute("UPDATE workspaces SET archived_at = %s WHERE id = %s", (NOW, w))
    # As in SQLite, the cascade runs once the workspace row is gone: knowledge is purged first.
    refused(pg, "DELETE FROM workspaces WHERE id = %s", (w,), KEPT)
    pg.execute("DELETE FROM kb_revisions WHERE workspace_id = %s", (w,))
    pg.execute("DELETE FROM workspaces WHERE id = %s", (w,))
    assert one(pg, "SELECT count(*) FROM kb_revisions") == 0
    assert one(pg, "SELECT count(*) FROM kb_search") == 0


def test_a_dispute_is_resolved_once(pg: psycopg.Connection[Any]) -> None:
    doc = document(pg, workspace(pg), "a.md")
    dispute = one(
        pg,
        """INSERT INTO kb_disputes (document_id, workspace_id, revision, opened_by, reason, opened_at)
                         SELECT id, workspace_id, 1, 'ann', 'wrong', %s FROM kb_documents WHERE id = %s
                         RETURNING id""",
        (NOW, doc),
    )
    message = "a dispute is resolved once and otherwise never changes"
    refused(pg, "UPDATE kb_disputes SET reason = 'other' WHERE id = %s", (dispute,), message)
    refused(
        pg, "UPDATE kb_disputes SET outcome = 'upheld' WHERE id = %s", (dispute,), message
    )  # who resolved?
    pg.execute("UPDATE kb_disputes SET outcome = 'upheld', resolved_by = 'hu' WHERE id = %s", (dispute,))
    refused(pg, "UPDATE kb_disputes SET outcome = 'dismissed' WHERE id = %s", (dispute,), message)
    assert one(pg, "SELECT outcome, reason FROM kb_disputes WHERE id = %s", (dispute,)) == ("upheld", "wrong")


def indexed(pg: psycopg.Connection[Any]) -> list[tuple[int, int]]:
    return pg.execute("SELECT revision_id, document_id FROM kb_search ORDER BY 1").fetchall()


def matches(pg: psycopg.Connection[Any], words: str) -> list[str]:
    """Paths of the documents matching every word, best first, as the store would rank them."""
    rows = pg.execute(
        """SELECT d.path FROM kb_search s JOIN kb_documents d ON d.current_id = s.revision_id,
                  plainto_tsquery('simple', %s) q
           WHERE s.search_vector @@ q AND d.state = 'live'
           ORDER BY ts_rank('{0.1, 0.2, 0.6, 1.0}', s.search_vector, q) DESC, d.path""",
        (words,),
    )
    return [path for (path,) in rows]


def test_the_search_index_holds_exactly_the_shown_revision_of_each_live_document(
    pg: psycopg.Connection[Any],
) -> None:
    w = workspace(pg)
    doc = document(pg, w, "ops/deploy.md")
    assert indexed(pg) == []  # hidden: nothing shown yet
    first = revise(pg, doc, 1, title="Deploying", body="blue green rollout")
    assert indexed(pg) == [(first, doc)]
    assert matches(pg, "rollout") == ["ops/deploy.md"]
    second = revise(pg, doc, 2, title="Deploying", body="canary rollout")
    assert indexed(pg) == [(second, doc)]
    assert matches(pg, "blue") == [] and matches(pg, "canary") == ["ops/deploy.md"]
    pg.execute("UPDATE kb_documents SET shown_count = shown_count + 1 WHERE id = %s", (doc,))
    assert indexed(pg) == [(second, doc)]
    pg.execute(
        """UPDATE kb_revisions SET body = '', title = '', excerpt = '', redacted_by = 'hu', redacted_at = %s,
                      redacted_sha256 = 'abc' WHERE id = %s""",
        (NOW, second),
    )
    assert matches(pg, "canary") == [] and matches(pg, "deploying") == []
    assert matches(pg, "deploy") == ["ops/deploy.md"]  # the path stays searchable, as in kb_fts
    revise(pg, doc, 3, kind="tombstone")
    assert indexed(pg) == [] and matches(pg, "deploy") == []
    assert one(pg, "SELECT count(*) FROM kb_current") == 0


def test_search_ranks_path_over_title_over_body_with_snippets(pg: psycopg.Connection[Any]) -> None:
    w = workspace(pg)
    revise(pg, document(pg, w, "notes/misc.md"), 1, title="Misc", body="how the backup runs at night")
    revise(pg, document(pg, w, "notes/other.md"), 1, title="Backup schedule", body="see the wiki")
    revise(pg, document(pg, w, "runbooks/backup.md"), 1, title="Runbook", body="steps")
    revise(pg, document(pg, w, "notes/none.md"), 1, title="Nothing", body="unrelated")
    assert matches(pg, "backup") == ["runbooks/backup.md", "notes/other.md", "notes/misc.md"]
    # a path is its words, as SQLite's tokenizer splits it (the store splits a search alike)
    assert matches(pg, "runbooks backup md") == ["runbooks/backup.md"]
    snippet = one(
        pg,
        """SELECT ts_headline('simple', r.body, plainto_tsquery('simple', 'backup'),
                              'StartSel=**, StopSel=**, MaxWords=16, MinWords=8')
           FROM kb_documents d JOIN kb_revisions r ON r.id = d.current_id WHERE d.path = 'notes/misc.md'""",
    )
    assert snippet == "how the **backup** runs at night"


def test_the_index_rebuilt_from_the_heads_is_the_one_the_triggers_keep(pg: psycopg.Connection[Any]) -> None:
    """What a copy with its triggers off runs afterwards (docs/postgresql.md)."""
    w = workspace(pg)
    revise(pg, document(pg, w, "a.md"), 1, title="A", body="alpha")
    doc = document(pg, w, "b.md")
    revise(pg, doc, 1, title="B", body="beta")
    revise(pg, doc, 2, title="B", body="beta two")
    revise(pg, document(pg, w, "c.md"), 1, kind="tombstone")
    document(pg, w, "hidden.md")
    kept = pg.execute("SELECT * FROM kb_search ORDER BY revision_id").fetchall()
    assert len(kept) == 2
    pg.execute("DELETE FROM kb_search")
    pg.execute(
        """INSERT INTO kb_search SELECT d.current_id, d.id, kb_search_vector(d.path, r.title, r.body)
           FROM kb_documents d JOIN kb_revisions r ON r.id = d.current_id WHERE d.state = 'live'"""
    )
    assert pg.execute("SELECT * FROM kb_search ORDER BY revision_id").fetchall() == kept


def test_message_search_finds_the_body_s_words(
    pg: psycopg.Connection[Any], lobby_bots: tuple[int, int]
) -> None:
    ann, bob = lobby_bots
    hit, _ = post(pg, ann, "The Deploy failed on staging")
    post(pg, bob, "lunch at noon")
    found = pg.execute(
        "SELECT id FROM messages WHERE search_vector @@ plainto_tsquery('simple', 'deploy staging')"
    )
    assert [m for (m,) in found] == [hit]


#: board_words as migrations 0001 to 0032 had it: split at ASCII punctuation only.
WORDS_BEFORE_0033 = """CREATE OR REPLACE FUNCTION board_words(text TEXT) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_tsvector('simple', regexp_replace(text, '[[:punct:]]+', ' ', 'g'))
$$"""


async def test_the_upgrade_reads_every_stored_message_and_document_anew(
    pg: psycopg.Connection[Any], lobby_bots: tuple[int, int]
) -> None:
    """Migration 0033 computes again what a board before it stored with the old words."""
    ann, _ = lobby_bots
    pg.execute(WORDS_BEFORE_0033)
    pg.execute("DROP FUNCTION board_text(TEXT); DROP FUNCTION board_text_wide(TEXT)")  # 0033 made them
    pg.execute("ALTER TABLE messages DROP COLUMN search_vector")
    pg.execute(
        "ALTER TABLE messages ADD COLUMN search_vector tsvector"
        " GENERATED ALWAYS AS (board_words(body)) STORED"
    )
    pg.execute("CREATE INDEX messages_search ON messages USING gin (search_vector)")
    hit, _ = post(pg, ann, "the fix\u2014a \u201cone-liner\u201d for \u00c9cole")
    revise(pg, document(pg, workspace(pg), "notes/steps.md"), 1, title="D\u00e9ploiement\u2014\u00e9tapes")
    pg.execute("ALTER TABLE tokens DROP COLUMN name")  # 0034 and 0035, which a board at 32 has not run
    pg.execute("DROP INDEX notifications_sent")
    pg.execute("UPDATE board_schema SET version = 32")

    def found(words: str) -> tuple[list[int], list[str]]:
        query = fts_query(words).tsquery()
        messages = pg.execute(
            "SELECT id FROM messages WHERE search_vector @@ to_tsquery('simple', %s)", (query,)
        )
        documents = pg.execute(
            """SELECT d.path FROM kb_search s JOIN kb_documents d ON d.id = s.document_id
               WHERE s.search_vector @@ to_tsquery('simple', %s)""",
            (query,),
        )
        return [m for (m,) in messages], [path for (path,) in documents]

    assert found("fix") == ([], []) and found("etapes") == ([], [])
    info = pg.info
    store = PostgresStore(f"postgresql://{info.user}@{info.host}:{info.port}/{info.dbname}", readers=1)
    await store.open()
    await store.close()
    assert one(pg, "SELECT version FROM board_schema") == schema_version()
    # the column's statistics, which dropping it took, are there again: the planner reads them
    stats = "SELECT count(*) FROM pg_stats WHERE tablename = 'messages' AND attname = 'search_vector'"
    assert one(pg, stats) == 1
    assert found("fix") == found("ecole") == found("one-liner") == ([hit], [])
    assert found("etapes") == found("d\u00e9ploiement") == ([], ["notes/steps.md"])


def test_a_new_boards_empty_messages_table_is_left_for_autovacuum_to_analyze(
    pg: psycopg.Connection[Any],
) -> None:
    """Statistics taken of the empty table (as migration 0033 took them on every board) say it
    stays empty: the planner scanned it whole as it filled, about 0.15 ms of the database's CPU
    a post more at once (python -m bench post --store postgresql)."""
    assert one(pg, "SELECT reltuples FROM pg_class WHERE oid = 'messages'::regclass") == -1  # never


def test_a_dump_restores_into_an_empty_database_and_its_search_still_works(
    pg: psycopg.Connection[Any], pg_cluster: PgCluster, lobby_bots: tuple[int, int], tmp_path: Path
) -> None:
    """The backup docs/scale.md gives (pg_dump, then pg_restore into an empty database):
    pg_restore runs with no search path, so a function the messages table computes its
    search vector with must name what it calls as itself (board_words, migration 0033)."""
    ann, _ = lobby_bots
    hit, _ = post(pg, ann, "the fix\u2014a one-liner for \u00c9cole")
    info = pg.info
    source = f"postgresql://{info.user}@{info.host}:{info.port}/{info.dbname}"
    dump = tmp_path / "board.dump"
    bindir = pg_cluster.bindir
    subprocess.run([str(bindir / "pg_dump"), "--format=custom", f"--file={dump}", source], check=True)
    target = pg_cluster.fresh_database()
    try:
        restored = subprocess.run(
            [str(bindir / "pg_restore"), "--no-owner", "--exit-on-error", f"--dbname={target}", str(dump)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert restored.returncode == 0, restored.stderr
        with psycopg.connect(target, autocommit=True) as copy:
            query = fts_query("ecole fix").tsquery()
            found = copy.execute(
                "SELECT id FROM messages WHERE search_vector @@ to_tsquery('simple', %s)", (query,)
            ).fetchall()
            assert found == [(hit,)]
            assert one(copy, "SELECT version FROM board_schema") == schema_version()
    finally:
        pg_cluster.drop_database(target)


# -- the cluster fixture -----------------------------------------------------------------------------

TEST_USING_THE_CLUSTER = """
from tests.support import pgcluster
from tests.support.pgcluster import pg_cluster

{patch}

def test_uses_it(pg_cluster):
    pass
"""


def run_pytest(tmp_path: Path, env: dict[str, str], patch: str = "") -> str:
    (tmp_path / "test_it.py").write_text(TEST_USING_THE_CLUSTER.format(patch=patch), encoding="utf-8")
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_it.py"],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root), **env},
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout + done.stderr


def test_board_test_stores_sqlite_skips_without_starting_a_cluster(tmp_path: Path) -> None:
    # Starting a cluster would fail here: the skip comes first.
    out = run_pytest(tmp_path, {"BOARD_TEST_STORES": "sqlite"}, patch="pgcluster.running_cluster = None")
    assert "1 skipped" in out, out


def test_missing_server_binaries_fail_with_one_clear_line(tmp_path: Path) -> None:
    out = run_pytest(tmp_path, {}, patch="pgcluster.server_bindir = lambda: None")
    assert INSTALL_HINT in out and "1 error" in out, out
    assert "Traceback" not in out


def test_board_test_stores_names_known_stores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BOARD_TEST_STORES", raising=False)
    assert wanted_stores() == ("sqlite", "postgresql")
    monkeypatch.setenv("BOARD_TEST_STORES", " sqlite ")
    assert wanted_stores() == ("sqlite",)
    for wrong in ("sqlite,mysql", "", "postgres"):
        monkeypatch.setenv("BOARD_TEST_STORES", wrong)
        with pytest.raises(ValueError, match="BOARD_TEST_STORES"):
            wanted_stores()
