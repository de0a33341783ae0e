"""Redaction: the text really leaves the database file, its index and its WAL."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from tests.support.boardtest import eventually, sqlite_only
from tests.support.kb_support import World, db_rows
from tests.support.refusals import refused

SECRET = "qqxyzzysecretkey4471"
BODY_1 = f"# Deploy\n\nThe token is {SECRET} for now.\n"
BODY_2 = f"# Deploy\n\nThe token is {SECRET} for now.\n\nRotate it monthly.\n"


def raw_bytes(db_path: Path) -> bytes:
    data = db_path.read_bytes()
    wal = Path(f"{db_path}-wal")
    return data + (wal.read_bytes() if wal.exists() else b"")


async def checkpoint(db_path: Path) -> None:
    """Empty the WAL into the file, once the board's own checkpoint (it folds the WAL on a
    connection of its own every few batches, store/db.py) is not running: two at once make
    the later one give up busy at once, whatever its timeout."""
    await eventually(lambda: _checkpointed(db_path), "a checkpoint that found no other running")


def _checkpointed(db_path: Path) -> bool:
    conn = sqlite3.connect(db_path, timeout=10)
    try:
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return bool(busy == 0)
    finally:
        conn.close()


def index_blocks_with(db_path: Path, needle: bytes) -> int:
    return db_rows(db_path, "SELECT count(*) FROM kb_fts_data WHERE instr(block, ?) > 0", (needle,))[0][0]


@sqlite_only  # reads the database file's bytes, its WAL and the FTS5 index's blocks
async def test_a_redacted_secret_is_gone_from_the_file_the_index_and_the_wal(world: World) -> None:
    db = world.board.db_file
    for i in range(30):  # a populated index, so the secret shares segments with other text
        await world.bot.put_document(
            f"filler/{i}.md", f"# Filler {i}\n\nquarterly report number {i}\n", 0, "r"
        )
    await world.bot.put_document("deploy.md", BODY_1, 0, "r", request_id="with-a-replay-stored")
    await world.bot.put_document("deploy.md", BODY_2, 1, "add rotation")
    await world.bot.put_document("other.md", f"# Other\n\nmentions {SECRET} too\n", 0, "r")

    # first prove the secret is there to be found
    assert {d["path"] for d in (await world.bot.knowledge(q=SECRET))["documents"]} == {
        "deploy.md",
        "other.md",
    }
    await checkpoint(db)
    assert SECRET.encode() in raw_bytes(db)
    assert index_blocks_with(db, SECRET[2:].encode()) > 0

    stub = await world.human.redact("deploy.md", 2, "leaked credential", workspace="proj")
    assert stub["redacted"]["sha256"] == hashlib.sha256(BODY_2.encode()).hexdigest()
    await world.human.redact("deploy.md", 1, "leaked credential", workspace="proj")
    await world.human.redact("other.md", 1, "leaked credential", workspace="proj")

    assert (await world.bot.knowledge(q=SECRET))["documents"] == []
    doc = await world.bot.document("deploy.md")
    assert doc["body"] == "" and doc["revision"] == 2 and doc["title"] == ""
    assert doc["redacted"] == {
        "by": "alice",
        "at": stub["redacted"]["at"],
        "reason": "leaked credential",
        "sha256": hashlib.sha256(BODY_2.encode()).hexdigest(),
    }
    history = await world.bot.document_history("deploy.md")
    assert [r["body"] for r in history["revisions"]] == ["", ""]
    assert all(r["redacted"]["by"] == "alice" for r in history["revisions"])
    assert SECRET not in (await world.bot.document_diff("deploy.md", from_revision=0, to_revision=2))["diff"]
    listed = {d["path"]: d for d in (await world.bot.knowledge(prefix="deploy"))["documents"]}
    assert listed["deploy.md"]["redacted"] and SECRET not in listed["deploy.md"]["excerpt"]

    await checkpoint(db)
    data = raw_bytes(db)
    assert SECRET.encode() not in data
    assert SECRET[2:].encode() not in data  # not even as a prefix-compressed index term
    assert index_blocks_with(db, SECRET[2:].encode()) == 0
    assert Path(f"{db}-wal").stat().st_size == 0  # the board folded its WAL in right after redacting
    integrity = sqlite3.connect(db)
    try:
        integrity.execute("INSERT INTO kb_fts (kb_fts, rank) VALUES ('integrity-check', 1)")
        assert integrity.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        integrity.close()
    actions = [e["action"] for e in (await world.human.audit(action="knowledge.redact"))["entries"]]
    assert actions == ["knowledge.redact"] * 3


async def test_redaction_is_for_humans_and_happens_once(world: World) -> None:
    await world.bot.put_document("r.md", "# R\n\nsomething\n", 0, "r")
    await refused(world.bot.redact("r.md", 1, "mine"), "FORBIDDEN", unchanged=world.board)
    await refused(
        world.admin_bot.redact("r.md", 1, "x", workspace="proj"), "FORBIDDEN", unchanged=world.board
    )
    await refused(world.other.redact("r.md", 1, "x", workspace="proj"), "NOT_FOUND", unchanged=world.board)
    await refused(world.human.redact("r.md", 5, "x", workspace="proj"), "NOT_FOUND", unchanged=world.board)
    await refused(
        world.human.redact("r.md", 1, "", workspace="proj"), "INVALID_ARGUMENT", unchanged=world.board
    )
    await world.human.redact("r.md", 1, "x", workspace="proj")
    await refused(
        world.human.redact("r.md", 1, "again", workspace="proj"),
        "INVALID_ARGUMENT",
        unchanged=world.board,
    )
    await world.bot.delete_document("r.md", 1, "empty now")
    await refused(
        world.human.redact("r.md", 2, "tomb", workspace="proj"),
        "INVALID_ARGUMENT",
        unchanged=world.board,
    )


async def test_a_redacted_document_can_be_written_clean_again(world: World) -> None:
    await world.bot.put_document("c.md", f"# C\n\n{SECRET}\n", 0, "r")
    await world.human.redact("c.md", 1, "secret", workspace="proj")
    await world.bot.put_document("c.md", "# C\n\nclean text\n", 1, "rewritten without the secret")
    assert [d["path"] for d in (await world.bot.knowledge(q="clean"))["documents"]] == ["c.md"]
    await refused(world.bot.document("c.md", section="Missing"), "NOT_FOUND")
