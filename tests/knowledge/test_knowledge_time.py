"""Two timelines: what the knowledge base said then (as_of), what held then (valid_at), expiry."""

from __future__ import annotations

from board.server.clock import ManualClock
from tests.support.kb_support import World
from tests.support.refusals import refused

DAY = 86_400


async def test_as_of_reads_what_the_knowledge_base_said_then(
    clocked_world: World, clock: ManualClock
) -> None:
    world = clocked_world
    t0 = "2026-11-30T04:00:00Z"  # the clock's start
    await world.bot.put_document("plan.md", "# Plan\n\nShip in March.\n", 0, "r")
    clock.advance(DAY)
    await world.bot.put_document("plan.md", "# Plan\n\nShip in May.\n", 1, "slipped")
    await world.bot.put_document("later.md", "# Later\n", 0, "r")
    clock.advance(DAY)
    await world.bot.delete_document("plan.md", 2, "cancelled")

    then = await world.bot.document("plan.md", as_of=t0)
    assert then["revision"] == 1 and "March" in then["body"] and then["as_of"] == t0
    middle = await world.bot.document("plan.md", as_of="2026-12-01T12:00:00+00:00")
    assert middle["revision"] == 2 and "May" in middle["body"]
    await refused(world.bot.document("plan.md"), "TOMBSTONED")
    await refused(world.bot.document("plan.md", as_of="2026-12-02T04:00:00Z"), "NOT_FOUND")
    await refused(world.bot.document("plan.md", as_of="2026-11-29T00:00:00Z"), "NOT_FOUND")

    assert [d["path"] for d in (await world.bot.knowledge(as_of=t0))["documents"]] == ["plan.md"]
    listed = (await world.bot.knowledge(as_of="2026-12-01T05:00:00Z"))["documents"]
    assert [(d["path"], d["revision"]) for d in listed] == [("later.md", 1), ("plan.md", 2)]
    assert [d["path"] for d in (await world.bot.knowledge())["documents"]] == ["later.md"]
    await refused(world.bot.document("plan.md", as_of="last tuesday"), "INVALID_ARGUMENT")
    await refused(world.bot.document("plan.md", as_of=t0, revision=1), "INVALID_ARGUMENT")


async def test_as_of_counts_a_proposal_from_when_it_was_approved(
    clocked_world: World, clock: ManualClock
) -> None:
    world = clocked_world
    await world.bot.put_document("p.md", "# P\n\nfirst\n", 0, "r")
    await world.human.patch_workspace("proj", review="bots")
    clock.advance(DAY)
    await world.bot.put_document("p.md", "# P\n\nsecond\n", 1, "r")
    clock.advance(DAY)
    await world.bot.put_document("p.md", "# P\n\nthird, rejected later\n", 2, "r")
    await world.human.review_revision("p.md", "approve", 2, workspace="proj")
    await world.human.review_revision("p.md", "reject", 3, workspace="proj")
    before_approval = await world.bot.document("p.md", as_of="2026-12-01T12:00:00Z")
    assert before_approval["revision"] == 1  # revision 2 was only proposed then
    assert (await world.bot.document("p.md", as_of="2026-12-02T04:00:00Z"))["revision"] == 2
    listed = await world.bot.knowledge(as_of="2026-12-02T04:00:00Z")
    assert [d["revision"] for d in listed["documents"]] == [2]  # never the rejected third


async def test_valid_at_reads_what_held_in_the_world(clocked_world: World, clock: ManualClock) -> None:
    world = clocked_world
    await world.bot.put_document(
        "freeze.md",
        "# Freeze\n\nNo deploys.\n",
        0,
        "freeze announced",
        valid_from="2026-12-01T00:00:00Z",
        valid_to="2026-12-15T00:00:00Z",
    )
    await world.bot.put_document(
        "freeze.md",
        "# Freeze\n\nDeploys are open again.\n",
        1,
        "thaw",
        valid_from="2026-12-15T00:00:00Z",
        valid_to="",
    )
    assert "No deploys" in (await world.bot.document("freeze.md", valid_at="2026-12-10T00:00:00Z"))["body"]
    assert "open again" in (await world.bot.document("freeze.md", valid_at="2026-12-20T00:00:00Z"))["body"]
    await refused(world.bot.document("freeze.md", valid_at="2026-11-01T00:00:00Z"), "NOT_FOUND")
    held = await world.bot.knowledge(valid_at="2026-12-10T00:00:00Z")
    assert [(d["path"], d["revision"]) for d in held["documents"]] == [("freeze.md", 1)]
    assert (await world.bot.knowledge(valid_at="2026-11-01T00:00:00Z"))["documents"] == []
    await refused(
        world.bot.put_document(
            "bad.md", "# B\n", 0, "r", valid_from="2026-12-15T00:00:00Z", valid_to="2026-12-01T00:00:00Z"
        ),
        "INVALID_ARGUMENT",
        unchanged=world.board,
    )


async def test_validity_is_kept_by_later_writes_unless_changed(clocked_world: World) -> None:
    world = clocked_world
    await world.bot.put_document("v.md", "# V\n", 0, "r", valid_to="2027-01-01T00:00:00Z")
    await world.bot.put_document("v.md", "# V2\n", 1, "edit")
    assert (await world.bot.document("v.md"))["valid_to"] == "2027-01-01T00:00:00Z"
    await world.bot.patch_document("v.md", "@@ -1 +1 @@\n-# V2\n+# V3\n", 2, "patch", valid_to="")
    assert (await world.bot.document("v.md"))["valid_to"] is None


async def test_expired_documents_are_marked(clocked_world: World, clock: ManualClock) -> None:
    world = clocked_world
    await world.bot.put_document(
        "sale.md", "# Sale\n\nHalf price.\n", 0, "r", valid_to="2026-12-01T00:00:00Z"
    )
    await world.bot.put_document("rules.md", "# Rules\n", 0, "r")
    assert (await world.bot.document("sale.md"))["expired"] is False
    clock.advance(2 * DAY)
    doc = await world.bot.document("sale.md")
    assert doc["expired"] is True and doc["body"].startswith("# Sale")
    items = {d["path"]: d["expired"] for d in (await world.bot.knowledge())["documents"]}
    assert items == {"rules.md": False, "sale.md": True}
    assert [d["path"] for d in (await world.bot.knowledge(expired="false"))["documents"]] == ["rules.md"]
    assert [d["path"] for d in (await world.bot.knowledge(expired="true"))["documents"]] == ["sale.md"]
    assert (await world.bot.knowledge(q="half"))["documents"][0]["expired"] is True
