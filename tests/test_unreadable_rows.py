"""A stored row the board cannot render is shown as unreadable; the list around it still answers.

The bad values are written straight into the database file, as damage on disk or
an older board would leave them, while the board runs.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from typing import Any

import psycopg
import pytest

from board.server.store import jsoncolumns
from board.server.store.postgres import placeholders
from tests.support.boardtest import PgDatabase, Where, World

BROKEN = {
    "not JSON": '{"a":',
    "NaN": '{"a":NaN}',
    "lone surrogate": '{"a":"\\ud800"}',
    "too deep": '{"a":' * 5000 + "1" + "}" * 5000,
}


def write(where: Where, sql: str, params: tuple[Any, ...], *, table: str = "") -> None:
    """One damaging statement; the guard triggers of ``table`` are lifted around it, as damage would."""
    if isinstance(where, PgDatabase):
        with psycopg.connect(where.url, cursor_factory=psycopg.RawCursor) as pg, pg.transaction():
            if table:
                pg.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
            assert pg.execute(placeholders(sql), params).rowcount == 1
            if table:
                pg.execute(f"ALTER TABLE {table} ENABLE TRIGGER USER")
        return
    conn = sqlite3.connect(where)
    try:
        with conn:
            guards = conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?", (table,)
            ).fetchall()
            for name, _ in guards:
                conn.execute(f"DROP TRIGGER {name}")
            assert conn.execute(sql, params).rowcount == 1
            for _, create in guards:
                conn.execute(create)
    finally:
        conn.close()


def strict(data: Any) -> Any:
    """The answer re-encoded and decoded by a strict parser, as any other client would."""
    return json.loads(json.dumps(data, allow_nan=False), parse_constant=lambda name: 1 / 0)


@pytest.fixture(autouse=True)
def _fresh_log_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Row ids repeat across boards of this suite; each test starts with nothing logged."""
    monkeypatch.setattr(jsoncolumns, "_reported", set())


def unreadable_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("unreadable row")]


CASES: list[tuple[str, str, Any]] = [("meta", stored, {}) for stored in BROKEN.values()] + [
    ("tags", BROKEN["not JSON"], [])
]


@pytest.mark.parametrize(("column", "stored", "empty"), CASES, ids=[*BROKEN, "tags not JSON"])
async def test_a_broken_message_is_shown_unreadable_in_every_list(
    world: World, caplog: pytest.LogCaptureFixture, column: str, stored: str, empty: Any
) -> None:
    caplog.set_level(logging.WARNING, logger="board.store")
    before = await world.bot.post("fine before", channel="general")
    broken = await world.bot.post("needle @ab @alice", channel="general", tags=["t"], meta={"k": 1})
    after = await world.bot.post("fine after", channel="general")
    write(world.board.db_path, f"UPDATE messages SET {column} = ? WHERE id = ?", (stored, broken["id"]))
    kept = {"meta": {"k": 1}, "tags": ["t"], column: empty}

    reads = {
        "messages": (world.human, "GET", "/api/messages", {"workspace": "proj", "channel": "general"}),
        "thread": (world.human, "GET", f"/api/threads/{broken['id']}", {}),
        "message": (world.human, "GET", f"/api/messages/{broken['id']}", {}),
        "search": (world.human, "GET", "/api/search", {"q": "needle"}),
        "human inbox": (world.human, "GET", "/api/inbox", {}),
        "admin inbox": (world.admin_bot, "GET", "/api/inbox", {}),
        "wake feed": (world.admin_bot, "GET", "/api/wake", {}),
    }
    for name, (client, method, path, params) in reads.items():
        answer = strict(await client.request(method, path, params=params))
        found = _messages(answer)
        shown = [m for m in found if m["id"] == broken["id"]]
        assert shown, (name, answer)
        assert shown[0]["unreadable"] is True, name
        assert {key: shown[0][key] for key in kept} == kept, name
        assert shown[0]["body"] == "needle @ab @alice", name
        assert all("unreadable" not in m for m in found if m["id"] in (before["id"], after["id"])), name
    prompt = strict(await world.human.bot_prompt("ab", [broken["id"]]))
    assert "needle @ab @alice" in prompt["turn"] and prompt["covers"] == [broken["id"]]
    (logged,) = unreadable_lines(caplog)  # once, for eight reads
    assert logged.startswith(f"unreadable row: messages {broken['id']}, column {column}: ")


def _messages(answer: Any) -> list[dict[str, Any]]:
    """Every message-shaped object anywhere in an answer."""
    found = []
    stack = [answer]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "author" in item and "meta" in item:
                found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


async def test_broken_knowledge_sources_are_shown_as_unreadable(world: World) -> None:
    await world.bot.put_document("notes/good.md", "good body", 0, "first")
    await world.bot.put_document("notes/bad.md", "bad body", 0, "first")
    write(
        world.board.db_path,
        "UPDATE kb_revisions SET sources = ? WHERE document_id = "
        "(SELECT id FROM kb_documents WHERE path = 'notes/bad.md')",
        (BROKEN["lone surrogate"],),
        table="kb_revisions",
    )
    listed = strict(await world.bot.knowledge())
    assert {d["path"] for d in listed["documents"]} >= {"notes/good.md", "notes/bad.md"}
    doc = strict(await world.bot.document("notes/bad.md"))
    assert doc["sources"] == [
        {"note": "These sources are unreadable: the stored value could not be decoded."}
    ]
    assert doc["body"] == "bad body"
    assert strict(await world.bot.document("notes/good.md"))["sources"] == []


async def test_a_broken_profile_is_shown_unreadable_in_the_list(world: World) -> None:
    await world.human.create_profile("p-good", "proj", "claude", flags=["--x"])
    await world.human.create_profile("p-bad", "proj", "codex", flags=["--y"])
    write(world.board.db_path, "UPDATE profiles SET flags = ? WHERE name = 'p-bad'", ("[NaN]",))
    profiles = {p["name"]: p for p in strict(await world.human.profiles())["profiles"]}
    assert profiles["p-bad"]["unreadable"] is True and profiles["p-bad"]["flags"] == []
    assert profiles["p-good"]["flags"] == ["--x"] and "unreadable" not in profiles["p-good"]
    assert strict(await world.human.profile("p-bad"))["flags"] == []


async def test_a_broken_audit_row_is_shown_unreadable_in_the_list(world: World) -> None:
    rows = strict(await world.human.audit())["entries"]
    write(
        world.board.db_path,
        "INSERT INTO audit (at, actor, action, details) VALUES (?, 'alice', 'test.damaged', ?)",
        ("2026-01-01T00:00:00Z", "{"),
    )
    again = strict(await world.human.audit())["entries"]
    assert again[: len(rows)] == rows
    assert again[-1]["action"] == "test.damaged" and again[-1]["details"] == {"unreadable": True}


async def test_a_broken_wake_record_is_shown_unreadable(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="board.store")
    run = {"harness": "claude", "started_at": "2026-11-30T04:00:00Z", "outcome": "ok"}
    good = await world.bot.record_wake(**run)
    bad = await world.bot.record_wake(**run)
    write(world.board.db_path, "UPDATE wakes SET trigger_ids = ? WHERE id = ?", (BROKEN["NaN"], bad["id"]))

    for _ in range(2):
        listed = strict(await world.human.wakes())["wakes"]
        by_id = {w["id"]: w for w in listed}
        assert by_id[bad["id"]]["unreadable"] is True and by_id[bad["id"]]["trigger_ids"] == []
        assert "unreadable" not in by_id[good["id"]]
    (logged,) = unreadable_lines(caplog)
    assert logged.startswith(f"unreadable row: wakes {bad['id']}, column trigger_ids: ")
