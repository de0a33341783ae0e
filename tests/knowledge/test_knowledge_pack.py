"""The pack for a bot's prompt, read counters and stats, and partial reads of large documents."""

from __future__ import annotations

import pytest

from board.server.clock import ManualClock
from tests.support.kb_support import World, db_rows
from tests.support.refusals import refused

SETUP = "# Setup\n\n" + "".join(f"Step {i}: do the thing number {i} carefully.\n" for i in range(200))


async def knowledge_for_dev(world: World) -> int:
    """A dev channel with mandatory reading, documents to rank, and a thread asking about migrations."""
    await world.bot.put_document("rules.md", "# Rules\n\nAlways run the tests.\n", 0, "r")
    await world.bot.put_document("setup.md", SETUP, 0, "r")
    await world.bot.put_document(
        "db/migrations.md",
        "# Migrations\n\nSQLite migrations are numbered files; run them in order.\n",
        0,
        "r",
    )
    await world.bot.put_document("db/sqlite.md", "# SQLite\n\nWe use SQLite in WAL mode.\n", 0, "r")
    await world.bot.put_document("cooking.md", "# Cooking\n\nPasta needs salt.\n", 0, "r")
    await world.bot.create_channel(
        "dev",
        topic="development",
        refs=[
            {"path": "rules.md", "mandatory": True},
            {"path": "setup.md", "mandatory": True},
            {"path": "cooking.md", "mandatory": False},
        ],
    )
    root = await world.peer.post("How do we run the SQLite migrations?", channel="dev")
    await world.bot.post("Good question about migrations order", reply_to=root["id"])
    return int(root["id"])


async def test_mandatory_reading_first_then_ranked_settled_documents(world: World) -> None:
    thread = await knowledge_for_dev(world)
    pack = await world.bot.pack(thread=thread, budget_tokens=3000)
    assert pack["channel"] == "dev"
    paths = [(d["path"], d["mandatory"]) for d in pack["documents"]]
    assert paths[:2] == [("rules.md", True), ("setup.md", True)]
    assert paths[2:] == [("db/migrations.md", False), ("db/sqlite.md", False)]
    assert pack["text"].startswith(
        "## rules.md (revision 1)\n# Rules\n\nAlways run the tests.\n\n## setup.md"
    )
    assert "## db/migrations.md (revision 1)\n" in pack["text"] and "Pasta" not in pack["text"]
    assert "migrations" in pack["query"]
    me = await world.bot.me()
    assert {"channel": "dev", "path": "rules.md"} in me["mandatory_reading"]
    only_channel = await world.bot.pack(channel="dev")
    assert [d["path"] for d in only_channel["documents"]] == ["rules.md", "setup.md"]
    by_words = await world.bot.pack(q="pasta salt")
    assert [d["path"] for d in by_words["documents"]] == ["cooking.md"]


@pytest.mark.parametrize("budget", [50, 64, 100, 250, 1500, 4000])
async def test_the_pack_never_exceeds_its_budget(world: World, budget: int) -> None:
    thread = await knowledge_for_dev(world)
    pack = await world.bot.pack(thread=thread, budget_tokens=budget)
    assert len(pack["text"]) <= budget * 4 and pack["chars"] == len(pack["text"])
    assert pack["used_tokens"] <= budget
    for doc in pack["documents"]:
        assert f"## {doc['path']} (revision {doc['revision']}" in pack["text"]
    if budget <= 250:
        setup = [d for d in pack["documents"] if d["path"] == "setup.md"]
        assert not setup or setup[0]["truncated"]
        assert any(o["why"] == "over budget" for o in pack["omitted"]) or setup


async def test_what_does_not_belong_stays_out_of_the_pack(clocked_world: World, clock: ManualClock) -> None:
    world = clocked_world
    thread = await knowledge_for_dev(world)
    await world.other.put_document("db/theirs.md", "# Theirs\n\nSQLite migrations elsewhere.\n", 0, "r")
    await world.bot.put_document("db/old.md", "# Old\n\nSQLite migrations by hand.\n", 0, "r")
    await world.bot.delete_document("db/old.md", 1, "we automate migrations now")
    await world.bot.put_document(
        "db/temp.md", "# Temp\n\nSQLite migrations frozen.\n", 0, "r", valid_to="2026-12-01T00:00:00Z"
    )
    await world.bot.put_document("db/argued.md", "# Argued\n\nSQLite migrations are optional.\n", 0, "r")
    await world.peer.dispute("db/argued.md", "they are not optional")
    await world.human.patch_workspace("proj", review="bots")
    await world.bot.put_document("db/unverified.md", "# New\n\nSQLite migrations maybe.\n", 0, "r")
    await world.bot.put_document(
        "db/migrations.md", "# Migrations\n\nrejected SQLite migrations text\n", 1, "r"
    )
    await world.human.review_revision("db/migrations.md", "reject", 2, workspace="proj")
    before = await world.bot.pack(thread=thread, budget_tokens=4000)
    assert "db/temp.md" in [d["path"] for d in before["documents"]]  # holds until it expires
    clock.advance(3 * 86_400)
    await world.human.delete_document("rules.md", 1, "merged into setup", workspace="proj")
    pack = await world.bot.pack(thread=thread, budget_tokens=4000)
    paths = [d["path"] for d in pack["documents"]]
    assert paths == ["setup.md", "db/migrations.md", "db/sqlite.md"]
    assert {"path": "rules.md", "mandatory": True, "why": "deleted"} in pack["omitted"]
    for absent in ("Theirs", "by hand", "frozen", "optional", "maybe", "rejected SQLite", "Always run"):
        assert absent not in pack["text"]
    await refused(world.other.pack(workspace="proj", q="sqlite"), "NOT_FOUND")
    await refused(world.other.pack(thread=thread), "NOT_FOUND")
    await refused(world.bot.pack(channel="nope"), "NOT_FOUND")


async def test_stats_find_never_read_shown_never_read_and_stale(
    clocked_world: World, clock: ManualClock
) -> None:
    world = clocked_world
    for name in ("a", "b", "c", "d"):
        await world.bot.put_document(f"{name}.md", f"# {name.upper()}\n\nword{name}\n", 0, "r")
    await world.bot.document("a.md")
    await world.bot.document("a.md", lines="1-1")
    await world.bot.knowledge(q="wordb")
    stats = await world.human.knowledge_stats(workspace="proj")
    assert stats["documents"] == 4 and stats["reads"] == 2 and stats["shown"] == 1
    assert [d["path"] for d in stats["never_read"]["documents"]] == ["c.md", "d.md"]
    assert stats["never_read"]["count"] == 2
    assert [(d["path"], d["shown"]) for d in stats["shown_never_read"]["documents"]] == [("b.md", 1)]
    assert stats["stale"]["count"] == 0 and stats["stale_days"] == 30

    clock.advance(40 * 86_400)
    await world.bot.put_document("d.md", "# D\n\nchanged\n", 1, "refresh")
    await world.peer.dispute("c.md", "is it still true?")
    await world.bot.resolve_dispute("c.md", "dismissed", "checked: still true")
    stats = await world.bot.knowledge_stats()
    assert [d["path"] for d in stats["stale"]["documents"]] == ["a.md", "b.md"]
    assert (await world.bot.knowledge_stats(stale_days=60))["stale"]["count"] == 0
    await world.bot.knowledge()
    listed = await world.bot.knowledge_stats()
    assert listed["never_read"]["count"] == 0 and listed["shown_never_read"]["count"] == 3
    await refused(world.other.knowledge_stats(workspace="proj"), "NOT_FOUND")


async def test_partial_reads_keep_the_whole_documents_revision(world: World) -> None:
    body = (
        "# Guide\n"
        "intro\n"
        "## Setup\n"
        "install it\n"
        "```\n"
        "# not a heading, code\n"
        "```\n"
        "### Details\n"
        "more setup\n"
        "## Usage\n"
        "use it\n"
    )
    await world.bot.put_document("guide.md", body, 0, "r")
    await world.bot.put_document("guide.md", body + "## Notes\nend\n", 1, "r")
    part = await world.bot.document("guide.md", section="setup")
    assert part["revision"] == 2 and part["section"] == "Setup"
    assert part["body"] == "## Setup\ninstall it\n```\n# not a heading, code\n```\n### Details\nmore setup\n"
    assert part["lines"] == {"from": 3, "to": 9, "total": 13}
    assert (await world.bot.document("guide.md", section="Notes"))["body"] == "## Notes\nend\n"
    lines = await world.bot.document("guide.md", lines="2-4")
    assert lines["body"] == "intro\n## Setup\ninstall it\n" and lines["revision"] == 2
    assert (await world.bot.document("guide.md", lines="12-"))["body"] == "## Notes\nend\n"
    assert (await world.bot.document("guide.md", lines="1-1", revision=1))["revision"] == 1
    missing = await refused(world.bot.document("guide.md", section="Nope"), "NOT_FOUND")
    assert "Setup" in missing.details["headings"] and "not a heading, code" not in missing.details["headings"]
    await refused(world.bot.document("guide.md", lines="40-50"), "INVALID_ARGUMENT")
    await refused(world.bot.document("guide.md", lines="3-1"), "INVALID_ARGUMENT")
    await refused(world.bot.document("guide.md", lines="x"), "INVALID_ARGUMENT")
    await refused(world.bot.document("guide.md", lines="1-2", section="Setup"), "INVALID_ARGUMENT")


async def test_counts_reach_the_database_within_seconds(clocked_world: World, clock: ManualClock) -> None:
    world = clocked_world
    await world.bot.put_document("c.md", "# C\n", 0, "r")
    await world.bot.document("c.md")
    counts = "SELECT read_count, shown_count FROM kb_documents WHERE path = 'c.md'"
    assert db_rows(world.board.db_path, counts) == [(0, 0)]  # gathered in memory first
    clock.advance(3)
    await world.bot.knowledge()
    assert db_rows(world.board.db_path, counts) == [(1, 1)]
