"""``board migrate-to``: a SQLite board moved onto PostgreSQL reads back the same through the API,
and a move that is refused writes nothing.

A board is filled through the API once (threads, a claim, a conversation, a knowledge
document with three revisions and a redaction, wakes, a routine, a deleted workspace whose
ids must never come back), stopped, and copied for each test; the real command runs as a
subprocess, and the board that reads the copy runs on the PostgreSQL database.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner

from board.cli import main
from board.server.store import migrate
from tests.support.boardtest import Board, db_rows, populate, start_board, stop_board
from tests.support.contract import CheckedClient
from tests.support.pgcluster import PgCluster
from tests.support.processes import board_env, command
from tests.support.routines_support import propose_and_approve

DOC = "runbook/deploy.md"


@dataclass
class Filled:
    """A stopped board's file, the tokens of its callers, and what they read before the move."""

    db: Path
    tokens: dict[str, str]
    facts: dict[str, int]
    reads: dict[str, Any]


async def _fill(b: Board) -> tuple[dict[str, str], dict[str, int]]:
    w = await populate(b)
    root = await w.human.post(
        "@pb deploy the release tonight, canary first", channel="lobby", workspace="proj"
    )
    reply = await w.bot.post("on it: running the rollback drill first", reply_to=root["id"])
    await w.peer.post("I can review the rollback", reply_to=reply["id"])
    await w.bot.claim(root["id"], note="deploying")
    await w.other.post("unrelated work elsewhere", channel="lobby")
    talk = (await w.bot.open_conversation(["alice"], topic="private"))["conversation"]
    await w.bot.post("just between us: canary on box3", conversation=talk["id"])

    await w.bot.put_document(DOC, "# Deploy\n\nStep one: canary.\n", 0, "start")
    await w.peer.put_document(DOC, "# Deploy\n\nStep one: canary. token hunter2\n", 1, "more")
    await w.bot.put_document(DOC, "# Deploy\n\nStep one: canary. Step two: rollout.\n", 2, "fix")
    await w.human.redact(DOC, 2, "leaked credential", workspace="proj")
    await w.bot.record_wake(
        harness="claude", started_at="2026-11-30T04:00:00Z", outcome="ok", trigger_ids=[root["id"]]
    )
    await propose_and_approve(w.bot, w.human, "nightly-check", "0 3 * * *")
    # pb's daemon watches #lobby and #ops, which no post has made yet (the loop guard's record)
    await w.bot.wake(watch="lobby,ops", wait=1, limit=1)

    # Last, a workspace with the newest bot and message, deleted: their ids must never come back.
    await w.human.create_workspace("gone", "Short-lived")
    gone = await b.bot("gb", "gone")
    last_gone = await gone.post("soon deleted", channel="lobby")
    [(gone_id,)] = db_rows(b.db_path, "SELECT id FROM agents WHERE handle = 'gb'")
    await w.human.archive_workspace("gone")
    await w.human.delete_workspace("gone", "gone")
    tokens = {"human": str(w.human.token), "bot": str(w.bot.token)}
    facts = {"root": root["id"], "gone_agent": gone_id, "gone_message": last_gone["id"]}
    return tokens, facts


async def _reads(url: str, tokens: dict[str, str], facts: dict[str, int]) -> dict[str, Any]:
    """What the human and the bot read: everything the move must carry over unchanged."""
    human, bot = CheckedClient(url, tokens["human"]), CheckedClient(url, tokens["bot"])
    try:
        found = await bot.search("rollback")
        kb_found = await human.knowledge(workspace="proj", q="rollout")
        agents = (await human.agents(limit=500))["agents"]
        answers = {
            "messages": await human.messages(workspace="proj", limit=500),
            "other": await human.messages(workspace="other", limit=500),
            "thread": await bot.thread(facts["root"]),
            "inbox": await bot.inbox(),
            "document": await human.document(DOC, workspace="proj"),
            "history": await human.document_history(DOC, workspace="proj"),
            "audit": await human.audit(limit=500),
            "claims": await human.claims(),
            "wakes": await human.wakes(),
            "routine": await human.routine("nightly-check"),
            # last_seen_at moves with every call, these reads' own included
            "agents": [{k: v for k, v in a.items() if k not in ("last_seen_at", "presence")} for a in agents],
            "search": [m["id"] for m in found["messages"]],
            "kb_search": [d["path"] for d in kb_found["documents"]],
        }
        # A list's cursor is the highest message id handed out: SQLite counts the deleted newest
        # message (sqlite_sequence), PostgreSQL the highest one it holds. Either way the next
        # message gets an id above both, so no reader holding the higher one misses it.
        return {
            k: {f: v for f, v in a.items() if f != "cursor"} if isinstance(a, dict) else a
            for k, a in answers.items()
        }
    finally:
        await human.close()
        await bot.close()


def _in_a_thread(fn: Callable[[], Awaitable[Any]]) -> Any:
    """``fn()`` on a loop of its own, in a thread of its own (a test's loop may run in this one)."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(asyncio.run(fn()))  # type: ignore[arg-type]
        except BaseException as exc:
            out.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    if isinstance(out[0], BaseException):
        raise out[0]
    return out[0]


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Filled:
    """The board filled once, stopped; each test copies its file."""
    where = tmp_path_factory.mktemp("filled")

    async def build() -> Filled:
        b = await start_board(where)
        try:
            tokens, facts = await _fill(b)
            reads = await _reads(b.url, tokens, facts)
        finally:
            await stop_board(b)
        return Filled(b.db_path, tokens, facts, reads)  # type: ignore[arg-type]

    return _in_a_thread(build)


def _copy_of(filled: Filled, tmp_path: Path) -> Path:
    db = tmp_path / "board.db"
    shutil.copy(filled.db, db)
    return db


def migrate_to(db: Path, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command("migrate-to", url, "--db", str(db)),
        env=board_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def counts(url: str) -> dict[str, int]:
    """Row counts of every table of the database at ``url``: compared around a refused move."""
    with psycopg.connect(url) as pg:
        tables = [r[0] for r in pg.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        return {t: pg.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}  # type: ignore[index]


@pytest.fixture
def seeded(pg_template: str) -> dict[str, int]:
    """The row counts of a database the board migrated and nothing wrote to: an empty board."""
    return counts(pg_template)


def rows(db: Path, url: str) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """Every row of every copied table, sorted, as SQLite and as PostgreSQL hold it."""
    lite = sqlite3.connect(db)
    try:
        tables = [
            r[0]
            for r in lite.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                "AND name NOT LIKE 'messages_fts%' AND name NOT LIKE 'kb_fts%'"
            )
        ]
        columns = {t: [r[1] for r in lite.execute(f'PRAGMA table_info("{t}")')] for t in tables}
        before = {
            t: sorted(lite.execute(f"SELECT {', '.join(columns[t])} FROM {t}"), key=repr) for t in tables
        }
    finally:
        lite.close()
    with psycopg.connect(url) as pg:
        after = {t: sorted(pg.execute(f"SELECT {', '.join(columns[t])} FROM {t}"), key=repr) for t in tables}
    return before, after


async def test_a_moved_board_holds_every_row_and_goes_on_past_its_last_ids(
    filled: Filled, tmp_path: Path, pg_cluster: PgCluster
) -> None:
    db, url = _copy_of(filled, tmp_path), pg_cluster.fresh_database()
    moved = migrate_to(db, url)
    assert moved.returncode == 0, moved.stderr
    table_lines = {line.split()[0]: line for line in moved.stdout.splitlines()[1:-2]}
    assert "ok: the count, and" in table_lines["messages"] and "MISMATCH" not in moved.stdout
    # what to do next puts the URL where the board's unit and `board ctl` read it, not in a shell
    advice = moved.stdout.splitlines()[-1]
    assert f"{sys.executable} -m board.server.settings --set database_url=URL" in advice, advice
    assert "BOARD_DATABASE_URL" not in advice, advice
    before, after = rows(db, url)
    assert max(a[0] for a in before["agents"]) < filled.facts["gone_agent"]  # its id is SQLite's alone
    assert set(table_lines) == set(before) | {"kb_search"}
    assert before == after and len(before["kb_revisions"]) == 3 and before["audit"]
    assert len(before["bot_watches"]) == 2
    with psycopg.connect(url) as pg:
        indexed = pg.execute("SELECT d.path FROM kb_search s JOIN kb_documents d ON d.id = s.document_id")
        assert indexed.fetchall() == [(DOC,)]

    b = await start_board(tmp_path / "pg", database_url=url)
    try:
        human = b.client(filled.tokens["human"])
        newest = max(m["id"] for part in ("messages", "other") for m in filled.reads[part]["messages"])
        post = await human.post("first words on PostgreSQL", channel="lobby", workspace="proj")
        assert post["id"] > max(newest, filled.facts["gone_message"])
        await b.bot("newcomer", "proj")
        with psycopg.connect(url) as pg:
            [(newcomer,)] = pg.execute("SELECT id FROM agents WHERE handle = 'newcomer'").fetchall()
        assert newcomer > filled.facts["gone_agent"]
        assert [m["id"] for m in (await human.search("PostgreSQL"))["messages"]] == [post["id"]]
    finally:
        await stop_board(b)


async def test_the_moved_board_answers_every_read_as_the_sqlite_one_did(
    filled: Filled, tmp_path: Path, pg_cluster: PgCluster
) -> None:
    url = pg_cluster.fresh_database()
    assert migrate_to(_copy_of(filled, tmp_path), url).returncode == 0
    assert filled.reads["search"] and filled.reads["kb_search"] == [DOC]
    assert [r["revision"] for r in filled.reads["history"]["revisions"]] == [3, 2, 1]
    b = await start_board(tmp_path / "pg", database_url=url)
    try:
        assert await _reads(b.url, filled.tokens, filled.facts) == filled.reads
    finally:
        await stop_board(b)


def _other_tables(url: str) -> None:
    with psycopg.connect(url) as pg:
        pg.execute("CREATE TABLE notes (id BIGINT PRIMARY KEY, body TEXT)")
        pg.execute("INSERT INTO notes VALUES (1, 'mine')")


def _newer_schema(url: str) -> None:
    with psycopg.connect(url) as pg:
        pg.execute("CREATE TABLE board_schema (version BIGINT NOT NULL)")
        pg.execute("INSERT INTO board_schema VALUES (99)")


@pytest.mark.parametrize(
    ("prepare", "said"),
    [
        ("moved once", "already holds board data"),
        (_other_tables, "holds tables that are not a board's (notes)"),
        (_newer_schema, "has schema version 99, newer than this board's"),
    ],
    ids=["board data", "another application", "newer schema"],
)
def test_a_target_that_is_not_empty_is_refused_and_left_as_it_was(
    filled: Filled, tmp_path: Path, pg_cluster: PgCluster, prepare: Any, said: str
) -> None:
    db, url = _copy_of(filled, tmp_path), pg_cluster.fresh_database()
    if prepare == "moved once":
        assert migrate_to(db, url).returncode == 0
    else:
        prepare(url)
    before = counts(url)
    refused = migrate_to(db, url)
    assert refused.returncode != 0 and refused.stdout == ""
    assert said in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert counts(url) == before


async def test_a_file_a_board_is_serving_is_refused(tmp_path: Path, pg_cluster: PgCluster) -> None:
    b = await start_board(tmp_path)
    try:
        url = pg_cluster.fresh_database()
        refused = migrate_to(b.db_path, url)  # type: ignore[arg-type]
        assert refused.returncode != 0
        assert "being served by a running board" in refused.stderr and "board ctl stop" in refused.stderr
        assert counts(url) == {}  # not even the schema
    finally:
        await stop_board(b)


def test_a_database_not_in_utf8_is_refused_before_anything_is_written(
    filled: Filled, tmp_path: Path, pg_cluster: PgCluster
) -> None:
    url = pg_cluster.fresh_database(encoding="SQL_ASCII")  # what createdb gives under the C locale
    refused = migrate_to(_copy_of(filled, tmp_path), url)
    assert refused.returncode != 0 and refused.stdout == ""
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "encoding is SQL_ASCII" in refused.stderr and "-E UTF8" in refused.stderr
    assert counts(url) == {}  # not even the schema


def test_a_url_that_is_not_postgresql_is_refused(filled: Filled, tmp_path: Path) -> None:
    refused = migrate_to(_copy_of(filled, tmp_path), f"sqlite:///{tmp_path / 'other.db'}")
    assert refused.returncode != 0 and "postgresql://" in refused.stderr
    assert not (tmp_path / "other.db").exists()


def test_an_older_sqlite_file_is_refused(filled: Filled, tmp_path: Path, pg_cluster: PgCluster) -> None:
    db, url = _copy_of(filled, tmp_path), pg_cluster.fresh_database()
    lite = sqlite3.connect(db)
    lite.execute("PRAGMA user_version = 11")
    lite.close()
    refused = migrate_to(db, url)
    assert refused.returncode != 0 and "schema version 11" in refused.stderr
    assert counts(url) == {}


@pytest.mark.parametrize(
    ("table", "column", "value", "said"),
    [
        ("messages", "body", "'deploy' || char(0) || 'now'", "a NUL character"),
        ("kb_documents", "read_count", "'often'", "text 'often' where an integer belongs"),
        ("agents", "description", "CAST(x'c328' AS TEXT)", "bytes that are not UTF-8 text"),
        ("wakes", "harness", "x'00ff'", "a blob of 2 bytes where text belongs"),
        ("messages", "kind", "'bogus'", "PostgreSQL refused it"),  # a CHECK only PostgreSQL applies here
    ],
    ids=["NUL in text", "text for an integer", "not UTF-8", "blob for text", "a refused check"],
)
def test_a_row_postgresql_cannot_hold_aborts_the_whole_copy(
    filled: Filled,
    tmp_path: Path,
    pg_cluster: PgCluster,
    seeded: dict[str, int],
    table: str,
    column: str,
    value: str,
    said: str,
) -> None:
    db, url = _copy_of(filled, tmp_path), pg_cluster.fresh_database()
    lite = sqlite3.connect(db)
    lite.execute("PRAGMA ignore_check_constraints = ON")
    [(row_id,)] = lite.execute(f"SELECT max(id) FROM {table}").fetchall()
    lite.execute(f"UPDATE {table} SET {column} = {value} WHERE id = ?", (row_id,))
    lite.commit()
    lite.close()
    refused = migrate_to(db, url)
    assert refused.returncode != 0 and refused.stdout == ""
    assert f"{table} row id={row_id}" in refused.stderr and said in refused.stderr
    assert "nothing was copied" in refused.stderr
    assert counts(url) == seeded  # the schema, and not one copied row


def test_a_copy_that_reads_back_different_is_reported_and_fails(
    filled: Filled, tmp_path: Path, pg_cluster: PgCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check after the commit compares for real: a row changed and a row added behind its back."""
    db, url = _copy_of(filled, tmp_path), pg_cluster.fresh_database()
    copy = migrate._copy

    def and_then_tamper(lite: Any, pg: psycopg.Connection[Any], *args: Any) -> dict[str, int]:
        rebuilt = copy(lite, pg, *args)
        pg.execute("UPDATE messages SET body = 'tampered' WHERE id = (SELECT max(id) FROM messages)")
        pg.execute("INSERT INTO audit (at, actor, action) VALUES ('2026-12-01T00:00:00Z', 'x', 'x')")
        return rebuilt

    monkeypatch.setattr(migrate, "_copy", and_then_tamper)
    result = CliRunner().invoke(main, ["migrate-to", url, "--db", str(db)])
    assert result.exit_code == 1
    [last] = db_rows(db, "SELECT max(id) FROM messages")
    assert f"messages row id={last[0]} reads back different" in result.output
    assert "audit: " in result.output and "rows in PostgreSQL" in result.output
    table_lines = {line.split()[0]: line for line in result.output.splitlines()[1:]}
    assert table_lines["messages"].endswith("MISMATCH") and table_lines["audit"].endswith("MISMATCH")
    assert "MISMATCH" not in table_lines["threads"]
