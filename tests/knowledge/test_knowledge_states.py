"""Trust states: tombstones, review policies and the queue, disputes, supersession."""

from __future__ import annotations

from tests.support.kb_support import World, db_rows, snapshot
from tests.support.refusals import refused


async def test_a_tombstone_is_a_decision_quoted_back(clocked_world: World) -> None:
    world = clocked_world
    await world.bot.put_document("ideas/cache.md", "# Cache\n\nUse a memcache layer.\n", 0, "idea")
    gone = await world.bot.delete_document("ideas/cache.md", 1, "Measured: SQLite is fast enough; no cache.")
    assert gone["revision"] == 2 and gone["kind"] == "tombstone" and gone["deleted"]
    assert (await world.bot.knowledge())["documents"] == []
    assert (await world.bot.knowledge(q="memcache"))["documents"] == []
    error = await refused(world.peer.document("ideas/cache.md"), "TOMBSTONED")
    assert error.status == 409

    error = await refused(
        world.peer.put_document("ideas/cache.md", "# Cache\n\nAgain!\n", 2, "new idea"),
        "TOMBSTONED",
        unchanged=world.board,
    )
    assert error.details == {
        "path": "ideas/cache.md",
        "revision": 2,
        "reason": "Measured: SQLite is fast enough; no cache.",
        "author": "pb",
        "deleted_at": "2026-11-30T04:00:00Z",
    }
    assert "Measured: SQLite is fast enough" in error.message and "pb" in error.message
    await refused(
        world.peer.delete_document("ideas/cache.md", 2, "again"), "TOMBSTONED", unchanged=world.board
    )
    history = await world.peer.document_history("ideas/cache.md")
    assert [r["kind"] for r in history["revisions"]] == ["tombstone", "write"]
    assert history["revisions"][1]["body"].startswith("# Cache")  # history keeps what was deleted

    back = await world.peer.put_document(
        "ideas/cache.md",
        "# Cache\n\nNow with 10x the load.\n",
        2,
        "Load grew tenfold",
        override_tombstone=True,
    )
    assert back["revision"] == 3 and not back["created"]
    doc = await world.bot.document("ideas/cache.md")
    assert doc["overrides"] == 2 and doc["reason"] == "Load grew tenfold"
    await refused(
        world.peer.put_document("ideas/cache.md", "# x\n", 3, "x", override_tombstone=True),
        "INVALID_ARGUMENT",
        unchanged=world.board,
    )


async def test_deleting_needs_a_reason_and_the_latest_revision(world: World) -> None:
    await world.bot.put_document("d.md", "# D\n", 0, "r")
    await world.bot.put_document("d.md", "# D2\n", 1, "r")
    await refused(world.bot.delete_document("d.md", 2, ""), "INVALID_ARGUMENT", unchanged=world.board)
    await refused(world.bot.delete_document("d.md", 1, "stale"), "VERSION_CONFLICT", unchanged=world.board)
    await refused(world.bot.delete_document("nothing.md", 1, "x"), "NOT_FOUND", unchanged=world.board)
    await world.bot.delete_document("d.md", 2, "done")


async def test_review_policy_bots_makes_bot_writes_proposals(world: World) -> None:
    await world.bot.put_document("rules.md", "# Rules\n\nBe kind.\n", 0, "seed")
    await world.human.patch_workspace("proj", review="bots")
    proposal = await world.bot.put_document("rules.md", "# Rules\n\nBe kind. Be brief.\n", 1, "shorter")
    assert proposal["status"] == "proposed" and proposal["document_status"] == "settled"
    doc = await world.peer.document("rules.md")
    assert doc["revision"] == 1 and doc["body"] == "# Rules\n\nBe kind.\n" and doc["latest_revision"] == 2
    assert doc["proposal"]["revision"] == 2 and doc["proposal"]["author"] == "pb"
    assert "+Be kind. Be brief.\n" in doc["proposal"]["diff"]
    listed = (await world.peer.knowledge())["documents"][0]
    assert listed["revision"] == 1 and listed["proposed_revision"] == 2 and listed["status"] == "settled"

    new = await world.admin_bot.put_document("fresh.md", "# Fresh\n", 0, "by admin bot", workspace="proj")
    assert new["status"] == "proposed"
    fresh = await world.bot.document("fresh.md")
    assert fresh["status"] == "proposed" and fresh["body"] == "# Fresh\n"  # readable at once, unverified
    assert (await world.bot.knowledge(status="proposed"))["documents"][0]["path"] == "fresh.md"

    human = await world.human.put_document(
        "rules.md", "# Rules\n\nBe kind, brief, exact.\n", 2, "merge", workspace="proj"
    )
    assert human["status"] == "settled"
    assert (await world.bot.document("rules.md"))["revision"] == 3
    queue = await world.human.review_queue(workspace="proj")
    assert [g["path"] for g in queue["documents"]] == ["fresh.md"]  # the overtaken proposal left the queue


async def test_review_policy_all_covers_humans_and_none_covers_nobody(world: World) -> None:
    await world.human.patch_workspace("proj", review="all")
    assert (await world.human.put_document("h.md", "# H\n", 0, "r", workspace="proj"))["status"] == "proposed"
    await world.human.patch_workspace("proj", review="none")
    assert (await world.bot.put_document("b.md", "# B\n", 0, "r"))["status"] == "settled"


async def test_the_review_queue_groups_by_document_with_diffs(world: World) -> None:
    await world.bot.put_document("a.md", "# A\n\none\n", 0, "seed")
    await world.human.patch_workspace("proj", review="bots")
    await world.bot.put_document("a.md", "# A\n\ntwo\n", 1, "second", sources=[{"note": "from the retro"}])
    await world.peer.put_document("b.md", "# B\n", 0, "new doc")
    await world.peer.put_document("a.md", "# A\n\nthree\n", 2, "third")
    await world.human.patch_workspace("other", review="all")
    await world.other.put_document("o.md", "# O\n", 0, "elsewhere")

    await refused(world.bot.review_queue(), "FORBIDDEN")
    await refused(world.admin_bot.review_queue(workspace="proj"), "FORBIDDEN")
    await refused(world.other.review_queue(workspace="proj"), "NOT_FOUND")
    queue = await world.human.review_queue(workspace="proj")
    groups = queue["documents"]
    assert [g["path"] for g in groups] == ["a.md", "b.md"]
    a = groups[0]
    assert a["settled_revision"] == 1 and [r["revision"] for r in a["revisions"]] == [2, 3]
    assert a["revisions"][0]["reason"] == "second" and a["revisions"][0]["sources"] == [
        {"note": "from the retro"}
    ]
    assert "-one\n+two\n" in a["revisions"][0]["diff"] and "-one\n+three\n" in a["revisions"][1]["diff"]
    everything = await world.human.review_queue()
    assert [g["path"] for g in everything["documents"]] == ["a.md", "b.md", "o.md"]
    page = await world.human.review_queue(limit=1)
    assert page["has_more"] and [g["path"] for g in page["documents"]] == ["a.md"]
    rest = await world.human.review_queue(since=page["next_since"])
    assert [g["path"] for g in rest["documents"]] == ["b.md", "o.md"]

    await refused(world.bot.review_revision("a.md", "approve", 2), "FORBIDDEN", unchanged=world.board)
    await refused(
        world.admin_bot.review_revision("a.md", "approve", 2, workspace="proj"),
        "FORBIDDEN",
        unchanged=world.board,
    )
    decided = await world.human.review_revision("a.md", "reject", 2, "no", workspace="proj")
    assert decided["decisions"] == [{"revision": 2, "status": "rejected"}]
    await refused(
        world.human.review_revision("a.md", "approve", 2, workspace="proj"),
        "INVALID_ARGUMENT",
        unchanged=world.board,
    )
    approved = await world.human.review_revision("a.md", "approve", 3, "yes", workspace="proj")
    assert approved["shown_revision"] == 3 and approved["document_status"] == "settled"
    doc = await world.bot.document("a.md")
    assert doc["body"] == "# A\n\nthree\n" and doc["review"]["by"] == "alice" and doc["proposal"] is None
    group = await world.human.review_revision("b.md", "approve", note="batch", workspace="proj")
    assert group["decisions"] == [{"revision": 1, "status": "settled"}]
    remaining = await world.human.review_queue(workspace="proj")
    assert remaining["documents"] == []
    history = await world.bot.document_history("a.md")
    assert [(r["revision"], r["status"]) for r in history["revisions"]] == [
        (3, "settled"),
        (2, "rejected"),
        (1, "settled"),
    ]


async def test_rejecting_a_first_proposal_hides_the_document(world: World) -> None:
    await world.human.patch_workspace("proj", review="bots")
    await world.bot.put_document("maybe.md", "# Maybe\n\nquixotic plan\n", 0, "try")
    assert [d["path"] for d in (await world.peer.knowledge(q="quixotic"))["documents"]] == ["maybe.md"]
    await world.human.review_revision("maybe.md", "reject", 1, "no", workspace="proj")
    assert (await world.peer.knowledge())["documents"] == []
    assert (await world.peer.knowledge(q="quixotic"))["documents"] == []
    await refused(world.peer.document("maybe.md"), "NOT_FOUND")
    assert (await world.peer.document("maybe.md", revision=1))["status"] == "rejected"
    again = await world.bot.put_document("maybe.md", "# Maybe\n\nbetter plan\n", 1, "retry")
    assert again["revision"] == 2 and (await world.peer.document("maybe.md"))["revision"] == 2


async def test_a_proposed_deletion_waits_for_review(world: World) -> None:
    await world.bot.put_document("keep.md", "# Keep\n", 0, "r")
    await world.human.patch_workspace("proj", review="bots")
    pending = await world.bot.delete_document("keep.md", 1, "obsolete?")
    assert pending["status"] == "proposed" and not pending["deleted"]
    assert [d["path"] for d in (await world.bot.knowledge())["documents"]] == ["keep.md"]
    await world.human.review_revision("keep.md", "approve", 2, workspace="proj")
    assert (await world.bot.knowledge())["documents"] == []
    await refused(world.bot.document("keep.md"), "TOMBSTONED")


async def test_disputes_mark_a_document_until_resolved(world: World) -> None:
    await world.bot.put_document("fact.md", "# Fact\n\nThe sky is green.\n", 0, "r")
    msg = await world.peer.post("I looked: blue", channel="lobby")
    opened = await world.peer.dispute("fact.md", "It is blue.", [{"message": msg["id"]}])
    assert opened["status"] == "disputed" and opened["dispute"]["revision"] == 1
    doc = await world.bot.document("fact.md")
    assert doc["status"] == "disputed" and doc["revision_status"] == "settled"
    assert doc["disputes"][0]["by"] == "pb2" and doc["disputes"][0]["sources"][0]["message"] == msg["id"]
    assert (await world.bot.knowledge(status="disputed"))["documents"][0]["path"] == "fact.md"
    await world.human.dispute("fact.md", "Also wrong about clouds", workspace="proj")
    assert len((await world.bot.document("fact.md"))["disputes"]) == 2

    await refused(
        world.bot.resolve_dispute("fact.md", "upheld", "fixed?"),
        "INVALID_ARGUMENT",
        unchanged=world.board,
    )
    await refused(world.bot.resolve_dispute("fact.md", "maybe"), "INVALID_ARGUMENT", unchanged=world.board)
    await refused(
        world.other.resolve_dispute("fact.md", "dismissed", workspace="proj"),
        "NOT_FOUND",
        unchanged=world.board,
    )
    await world.bot.put_document("fact.md", "# Fact\n\nThe sky is blue.\n", 1, "corrected per dispute")
    assert (await world.bot.document("fact.md"))["status"] == "disputed"  # until someone resolves it
    resolved = await world.bot.resolve_dispute("fact.md", "upheld", "corrected in revision 2")
    assert resolved["resolved"] == 2 and resolved["status"] == "settled"
    doc = await world.bot.document("fact.md")
    assert doc["disputes"] == [] and doc["last_dispute"]["outcome"] == "upheld"
    before = snapshot(world.board.db_path)
    late = await world.peer.resolve_dispute("fact.md", "dismissed")  # already resolved: nothing to do
    assert late["resolved"] == 0 and late["status"] == "settled" and snapshot(world.board.db_path) == before

    await world.peer.dispute("fact.md", "blue is a lie")
    dismissed = await world.human.resolve_dispute("fact.md", "dismissed", "it is blue", workspace="proj")
    assert dismissed["status"] == "settled"


async def test_deleting_a_disputed_document_closes_its_disputes(world: World) -> None:
    await world.bot.put_document("x.md", "# X\n", 0, "r")
    await world.peer.dispute("x.md", "wrong")
    await world.bot.delete_document("x.md", 1, "wrong indeed")
    rows = db_rows(world.board.db_path, "SELECT outcome FROM kb_disputes")
    assert rows == [("upheld",)]
    await refused(world.peer.dispute("x.md", "still wrong"), "TOMBSTONED", unchanged=world.board)


async def test_superseded_documents_name_their_replacement(world: World) -> None:
    await world.bot.put_document("old.md", "# Old way\n", 0, "r")
    await refused(
        world.bot.put_document("old.md", "# Old\n", 1, "r", superseded_by="new.md"),
        "INVALID_ARGUMENT",
        unchanged=world.board,
    )
    await world.bot.put_document("new.md", "# New way\n", 0, "r")
    moved = await world.bot.put_document(
        "old.md", "# Old way\n\nSee new.md.\n", 1, "replaced", superseded_by="NEW.md"
    )
    assert moved["status"] == "superseded"
    item = (await world.bot.knowledge(status="superseded"))["documents"][0]
    assert item["path"] == "old.md" and item["superseded_by"] == "new.md"
    await refused(
        world.bot.put_document("new.md", "# N\n", 1, "r", superseded_by="new.md"),
        "INVALID_ARGUMENT",
        unchanged=world.board,
    )
