"""Knowledge documents: write, read, list, search, history, diff, and compare-and-set."""

from __future__ import annotations

import aiohttp
import pytest
from yarl import URL

from board.server.errors import InvalidArgument
from board.server.services.knowledge.text import check_path
from board.server.store.search import SNIPPET_CHARS
from tests.support.boardtest import INTEGRITY_ERRORS, PgDatabase, db_execute
from tests.support.kb_support import World, db_rows, snapshot, write
from tests.support.refusals import refused


async def test_create_read_update_and_conflict(world: World) -> None:
    created = await world.bot.put_document("decisions/db.md", "# Database\n\nWe use SQLite.\n", 0, "first")
    assert (created["revision"], created["created"], created["status"]) == (1, True, "settled")
    doc = await world.bot.document("decisions/db.md")
    assert doc["body"] == "# Database\n\nWe use SQLite.\n"
    assert (doc["title"], doc["author"], doc["reason"], doc["revision"]) == ("Database", "pb", "first", 1)
    assert doc["status"] == "settled" and doc["recorded_at"].endswith("Z")
    updated = await world.peer.put_document("decisions/db.md", "# Database\n\nSQLite in WAL.\n", 1, "wal")
    assert (updated["revision"], updated["created"]) == (2, False)
    assert (await world.bot.document("decisions/db.md"))["author"] == "pb2"

    error = await refused(
        world.bot.put_document("decisions/db.md", "# Mine\n", 1, "stale"),
        "VERSION_CONFLICT",
        unchanged=world.board,
    )
    assert error.status == 409 and error.details["current_revision"] == 2
    assert "read it again, merge, and retry" in error.message
    await refused(
        world.bot.put_document("decisions/db.md", "# x\n", 0, "new?"),
        "VERSION_CONFLICT",
        unchanged=world.board,
    )
    await refused(
        world.bot.put_document("fresh.md", "# x\n", 3, "future"),
        "VERSION_CONFLICT",
        unchanged=world.board,
    )
    old = await world.bot.document("decisions/db.md", revision=1)
    assert old["body"] == "# Database\n\nWe use SQLite.\n" and old["current"] is False


async def test_author_comes_from_the_token_never_the_body(world: World) -> None:
    await refused(
        world.bot.put_document("a.md", "# a\n", 0, "r", author="alice"),
        "INVALID_ARGUMENT",
        unchanged=world.board,
    )
    await world.bot.put_document("a.md", "# a\n", 0, "r")
    assert (await world.human.document("a.md", workspace="proj"))["author"] == "pb"


@pytest.mark.parametrize(
    "path",
    [
        "notes.txt",
        "../etc/passwd.md",
        "a/../b.md",
        "a//b.md",
        "./a.md",
        "a b.md",
        "a/.md/..",
        "x" * 198 + ".md",
        "dir/",
        "émoji.md",
        "a/%2e%2e/b.md",
    ],
)
async def test_bad_paths_are_refused(world: World, path: str) -> None:
    await refused(world.bot.put_document(path, "# x\n", 0, "r"), "INVALID_ARGUMENT", unchanged=world.board)
    with pytest.raises(InvalidArgument):
        check_path(path)


@pytest.mark.parametrize("raw", ["a/%2E%2E/b.md", "%2E%2E/b.md", "a/%2E/b.md", "a/%2Fb.md", "a%00.md"])
async def test_encoded_traversal_reaches_the_check_and_is_refused(world: World, raw: str) -> None:
    """Sent as is (a client that does not fold dot segments): the server refuses the path itself."""
    url = URL(f"{world.board.url}/api/knowledge/{raw}", encoded=True)
    before = snapshot(world.board.db_path)
    async with (
        aiohttp.ClientSession() as http,
        http.put(
            url,
            json={"body": "# x\n", "base_revision": 0, "reason": "r"},
            headers={"Authorization": f"Bearer {world.bot.token}"},
        ) as resp,
    ):
        assert resp.status == 422, await resp.text()
        assert (await resp.json())["error"]["code"] == "INVALID_ARGUMENT"
    assert snapshot(world.board.db_path) == before


@pytest.mark.parametrize("reason", ["", "   ", "\n\t "])
async def test_a_write_deletion_or_dispute_whose_reason_is_blank_is_refused_and_changes_nothing(
    world: World, reason: str
) -> None:
    await world.bot.put_document("decisions/db.md", "# Database\n", 0, "first")
    for call in (
        world.bot.put_document("decisions/db.md", "# Database\n\nWAL.\n", 1, reason),
        world.bot.delete_document("decisions/db.md", 1, reason),
        world.peer.dispute("decisions/db.md", reason),
    ):
        error = await refused(call, "INVALID_ARGUMENT", message="The reason is blank", unchanged=world.board)
        assert error.details.get("field") == "reason"
    doc = await world.bot.document("decisions/db.md")
    assert (doc["revision"], doc["status"], doc["reason"]) == (1, "settled", "first")


async def test_paths_are_unique_without_regard_to_case(world: World) -> None:
    await world.bot.put_document("Guides/Setup.md", "# Setup\n", 0, "r")
    await refused(
        world.bot.put_document("guides/setup.md", "# s\n", 0, "r"),
        "VERSION_CONFLICT",
        unchanged=world.board,
    )
    second = await world.bot.put_document("guides/SETUP.md", "# Setup 2\n", 1, "r")
    assert second["path"] == "Guides/Setup.md" and second["revision"] == 2
    assert (await world.bot.document("GUIDES/setup.md"))["body"] == "# Setup 2\n"
    assert len((await world.bot.knowledge())["documents"]) == 1


async def test_body_rules(world: World) -> None:
    board = world.board
    await refused(world.bot.put_document("big.md", "x" * 200_001, 0, "r"), "LIMIT_EXCEEDED", unchanged=board)
    # 200,000 characters but more bytes: the limit is in bytes of UTF-8
    await refused(world.bot.put_document("wide.md", "é" * 100_001, 0, "r"), "LIMIT_EXCEEDED", unchanged=board)
    for bad in ("nul\x00here", "bell\x07", "lone\rcr", "c1\x85x", "esc\x1b[0m"):
        await refused(world.bot.put_document("ctl.md", bad, 0, "r"), "INVALID_ARGUMENT", unchanged=board)
    await refused(world.bot.put_document("empty.md", " \n", 0, "r"), "INVALID_ARGUMENT", unchanged=board)
    await refused(world.bot.put_document("noreason.md", "# x\n", 0, ""), "INVALID_ARGUMENT", unchanged=board)
    exact = "y" * 200_000
    assert (await world.bot.put_document("max.md", exact, 0, "r"))["bytes"] == 200_000
    await world.bot.put_document("crlf.md", "# T\r\n\tindented\r\nend", 0, "r")
    assert (await world.bot.document("crlf.md"))["body"] == "# T\n\tindented\nend"


async def test_list_prefix_status_and_paging(world: World) -> None:
    for i in range(7):
        await world.bot.put_document(f"lore/p{i}.md", f"# Page {i}\n\nbody {i}\n", 0, "r")
    await world.bot.put_document("INDEX.md", "# Index\n", 0, "r")
    await world.bot.put_document("lore_extra.md", "# Extra\n", 0, "r")
    lore = await world.bot.knowledge(prefix="lore/")
    assert [d["path"] for d in lore["documents"]] == [f"lore/p{i}.md" for i in range(7)]
    item = lore["documents"][0]
    assert item["title"] == "Page 0" and item["excerpt"] == "body 0" and item["status"] == "settled"
    assert {"revision", "latest_revision", "updated_at", "author", "expired"} <= set(item)
    seen, after = [], ""
    while True:
        page = await world.bot.knowledge(limit=3, after=after)
        seen += [d["path"] for d in page["documents"]]
        if not page["has_more"]:
            break
        after = page["next_since"]
    assert seen == sorted(seen, key=str.casefold) and len(seen) == 9
    small = await world.bot.knowledge(max_bytes=10)
    assert len(small["documents"]) == 1 and small["has_more"]
    assert (await world.bot.knowledge(status="proposed"))["documents"] == []


async def test_search_ranks_current_bodies_only(world: World) -> None:
    await world.bot.put_document("a.md", "# Alpha\n\nThe frobnicator spins.\n", 0, "r")
    await world.bot.put_document("b.md", "# Beta\n\nNothing here.\n", 0, "r")
    found = await world.bot.knowledge(q="frobnicator")
    assert [d["path"] for d in found["documents"]] == ["a.md"]
    assert "**frobnicator**" in found["documents"][0]["snippet"]
    await world.bot.put_document("a.md", "# Alpha\n\nThe widget spins.\n", 1, "renamed")
    assert (await world.bot.knowledge(q="frobnicator"))["documents"] == []
    assert [d["path"] for d in (await world.bot.knowledge(q="widget"))["documents"]] == ["a.md"]
    assert [d["path"] for d in (await world.bot.knowledge(q="beta"))["documents"]] == ["b.md"]
    await refused(world.bot.knowledge(q="widget", as_of="2030-01-01T00:00:00Z"), "INVALID_ARGUMENT")
    index = "kb_search" if isinstance(world.board.db_path, PgDatabase) else "kb_fts"
    integrity = db_rows(world.board.db_path, f"SELECT count(*) FROM {index}")
    assert integrity[0][0] == 2


async def test_history_and_diff(world: World) -> None:
    for n in range(1, 6):
        await write(world.bot, "h.md", "# H\n" + "".join(f"line {i}\n" for i in range(n)), f"step {n}")
    page = await world.bot.document_history("h.md", limit=2)
    assert [r["revision"] for r in page["revisions"]] == [5, 4] and page["next_before"] == 4
    rest = await world.bot.document_history("h.md", before=4, limit=10)
    assert [r["revision"] for r in rest["revisions"]] == [3, 2, 1] and not rest["has_more"]
    assert rest["revisions"][-1]["body"] == "# H\nline 0\n" and rest["revisions"][-1]["reason"] == "step 1"
    compact = await world.bot.document_history("h.md", view="compact")
    assert "body" not in compact["revisions"][0]
    d = await world.bot.document_diff("h.md", from_revision=2, to_revision=4)
    assert d["diff"].startswith("--- h.md@2\n+++ h.md@4\n")
    assert "+line 2\n+line 3\n" in d["diff"]
    last = await world.bot.document_diff("h.md")
    assert (last["from"], last["to"]) == (4, 5) and "+line 4\n" in last["diff"]
    first = await world.bot.document_diff("h.md", from_revision=0, to_revision=1)
    assert "+# H\n+line 0\n" in first["diff"]
    await refused(world.bot.document_diff("h.md", from_revision=1, to_revision=9), "NOT_FOUND")


async def test_sources_are_typed_and_resolve_in_the_workspace(world: World) -> None:
    board = world.board
    root = await world.bot.post("the decision thread", channel="lobby")
    reply = await world.peer.post("agreed", reply_to=root["id"])
    elsewhere = await world.other.post("not yours", channel="lobby")
    await world.bot.put_document("cite.md", "# C\n", 0, "r")
    sources = [
        {"message": reply["id"]},
        {"thread": root["id"]},
        {"doc": "cite.md", "revision": 1},
        {"doc": "CITE.md"},
        {"url": "https://example.org/spec"},
        {"note": "said at standup"},
    ]
    ok = await world.bot.put_document("d.md", "# D\n", 0, "r", sources=sources)
    doc = await world.bot.document("d.md")
    assert [s.get("href") for s in doc["sources"]] == [
        f"/api/messages/{reply['id']}",
        f"/api/threads/{root['id']}",
        "/api/knowledge/cite.md?revision=1",
        "/api/knowledge/cite.md?revision=1",
        "https://example.org/spec",
        None,
    ]
    assert ok["revision"] == 1
    for bad in (
        {"message": elsewhere["id"]},
        {"message": 10**9},
        {"thread": reply["id"]},
        {"doc": "nope.md"},
        {"doc": "cite.md", "revision": 7},
        {"url": "ftp://x"},
        {"message": root["id"], "note": "two kinds"},
        {"note": "x", "revision": 1},
        {},
    ):
        await refused(
            world.bot.put_document("e.md", "# E\n", 0, "r", sources=[bad]),
            "INVALID_ARGUMENT",
            unchanged=board,
        )
    await refused(
        world.bot.put_document("e.md", "# E\n", 0, "r", sources=[{"note": "n"}] * 51),
        "LIMIT_EXCEEDED",
        unchanged=board,
    )


async def test_every_mutation_is_audited(world: World) -> None:
    await world.bot.put_document("au.md", "# A\n", 0, "create it")
    await world.bot.put_document("au.md", "# A2\n", 1, "edit it")
    await world.bot.patch_document("au.md", "@@ -1 +1 @@\n-# A2\n+# A3\n", 2, "patch it")
    await world.bot.dispute("au.md", "wrong")
    await world.peer.resolve_dispute("au.md", "dismissed", "fine")
    await world.human.redact("au.md", 1, "oops", workspace="proj")
    await world.bot.delete_document("au.md", 3, "drop it")
    await world.bot.put_document("au.md", "# back\n", 4, "needed again", override_tombstone=True)
    rows = (await world.human.audit(workspace="proj", limit=50))["entries"]
    kb = [
        (r["action"], r["actor"], r["target"], r["reason"])
        for r in rows
        if r["action"].startswith("knowledge")
    ]
    assert kb == [
        ("knowledge.create", "pb", "au.md", "create it"),
        ("knowledge.write", "pb", "au.md", "edit it"),
        ("knowledge.write", "pb", "au.md", "patch it"),
        ("knowledge.dispute", "pb", "au.md", "wrong"),
        ("knowledge.resolve", "pb2", "au.md", "fine"),
        ("knowledge.redact", "alice", "au.md", "oops"),
        ("knowledge.delete", "pb", "au.md", "drop it"),
        ("knowledge.override", "pb", "au.md", "needed again"),
    ]


async def test_a_retry_with_the_same_request_id_writes_once(world: World) -> None:
    first = await world.bot.put_document("r.md", "# R\n", 0, "r", request_id="kb-1")
    again = await world.bot.put_document("r.md", "# R\n", 0, "r", request_id="kb-1")
    assert first == again
    assert (await world.bot.document_history("r.md"))["latest_revision"] == 1
    await refused(
        world.bot.put_document("r.md", "# other\n", 0, "r", request_id="kb-1"),
        "REQUEST_ID_REUSE",
        unchanged=world.board,
    )


async def test_the_database_refuses_a_second_revision_on_one_base(world: World) -> None:
    """Compare-and-set does not rest on the service alone: any process writing the file is held to it."""
    await world.bot.put_document("cas.md", "# one\n", 0, "r")
    await world.bot.put_document("cas.md", "# two\n", 1, "r")
    where = world.board.db_path
    [(doc_id, ws_id)] = db_rows(where, "SELECT id, workspace_id FROM kb_documents WHERE path = 'cas.md'")
    insert = """INSERT INTO kb_revisions (document_id, workspace_id, revision, base_revision, kind,
                    status, author, author_kind, reason, recorded_at)
                VALUES (?, ?, ?, ?, 'write', 'settled', 'x', 'bot', 'r', 't')"""
    for revision in (2, 4, 1):
        with pytest.raises(INTEGRITY_ERRORS):
            db_execute(where, insert, (doc_id, ws_id, revision, revision - 1))
    with pytest.raises(INTEGRITY_ERRORS, match="append-only"):
        db_execute(where, "UPDATE kb_revisions SET body = 'rewritten' WHERE document_id = ?", (doc_id,))
    with pytest.raises(INTEGRITY_ERRORS, match="kept"):
        db_execute(where, "DELETE FROM kb_revisions WHERE document_id = ?", (doc_id,))


async def test_deleting_a_workspace_removes_its_knowledge(world: World) -> None:
    await world.human.create_workspace("gone")
    await world.human.put_document("x.md", "# X\n\nzyzzyva\n", 0, "r", workspace="gone")
    await world.human.dispute("x.md", "hm", workspace="gone")
    await world.bot.put_document("keep.md", "# K\n\nzyzzyva too\n", 0, "r")
    await world.human.archive_workspace("gone")
    result = await world.human.delete_workspace("gone", "gone")
    assert result["removed"]["documents"] == 1
    assert db_rows(world.board.db_path, "SELECT count(*) FROM kb_documents")[0][0] == 1
    assert db_rows(world.board.db_path, "SELECT count(*) FROM kb_revisions")[0][0] == 1
    assert db_rows(world.board.db_path, "SELECT count(*) FROM kb_disputes")[0][0] == 0
    assert [d["path"] for d in (await world.bot.knowledge(q="zyzzyva"))["documents"]] == ["keep.md"]


async def test_the_slug_form_and_the_workspace_field_agree(world: World) -> None:
    await world.human.put_document("s.md", "# S\n", 0, "r", workspace="proj")
    assert (await world.bot.document("s.md"))["author"] == "alice"
    await refused(world.human.request("GET", "/api/knowledge/s.md"), "INVALID_ARGUMENT")
    both = world.human.request("GET", "/api/workspaces/proj/knowledge/s.md", params={"workspace": "other"})
    await refused(both, "INVALID_ARGUMENT")
    same = await world.human.request("GET", "/api/knowledge/s.md", params={"workspace": "proj"})
    assert same["workspace"] == "proj"
    mixed = world.human.put_document("s.md", "# S2\n", 1, "r", workspace="other")
    error = await refused(
        mixed, "VERSION_CONFLICT", unchanged=world.board
    )  # the body names other, which has no s.md
    assert error.details["current_revision"] == 0
    slug_and_body = world.human.request(
        "PUT",
        "/api/workspaces/proj/knowledge/s.md",
        json={"body": "# S2\n", "base_revision": 1, "reason": "r", "workspace": "other"},
    )
    await refused(slug_and_body, "INVALID_ARGUMENT", unchanged=world.board)
    await refused(world.bot.document("s.md", workspace="other"), "NOT_FOUND")
    await refused(world.other.document("s.md", workspace="proj"), "NOT_FOUND")
    assert (await world.admin_bot.document("s.md", workspace="proj"))["body"] == "# S\n"
    mine = await world.admin_bot.put_document("seed.md", "# Seed\n", 0, "seeding", workspace="other")
    assert mine["workspace"] == "other"
    assert (await world.other.document("seed.md"))["author"] == "ab"


async def test_an_archived_workspace_is_read_only(world: World) -> None:
    await world.human.create_workspace("old")
    await world.human.put_document("o.md", "# O\n", 0, "r", workspace="old")
    await world.human.archive_workspace("old")
    await refused(
        world.human.put_document("o.md", "# O2\n", 1, "r", workspace="old"),
        "FORBIDDEN",
        unchanged=world.board,
    )
    assert (await world.human.document("o.md", workspace="old"))["revision"] == 1


async def test_a_search_snippet_marks_only_the_hits_of_a_body_with_its_own_asterisks(world: World) -> None:
    """A snippet is Markdown whichever database made it: the document's own ``*`` and ``\\``
    are escaped, so its ``**bold**`` never reads as a hit."""
    await world.bot.put_document("calc.md", "**Note**: 2 ** 8 in C:\\tmp, then frobnicate it\n", 0, "r")
    found = await world.bot.knowledge(q="frobnicate")
    [cut] = [d["snippet"] for d in found["documents"]]
    assert "**frobnicate**" in cut, cut
    assert cut.replace("**frobnicate**", "").count("**") == 0, cut  # no other mark
    assert "Note\\*\\*" in cut and "2 \\*\\* 8" in cut and "C:\\\\tmp" in cut, cut


async def test_a_search_snippet_marks_a_word_found_beside_punctuation_or_without_its_accent(
    world: World,
) -> None:
    """The snippet marks what the search matched, as the index reads words: PostgreSQL's own
    headline would read ``fix\u2014a`` as one word and ``\u00c9cole`` as no ``ecole``."""
    body = "Intro words that come first.\n\n" + "filler " * 40 + "the fix\u2014a one-liner for \u00c9cole\n"
    await world.bot.put_document("notes.md", body, 0, "r")
    for words, marked in (("ecole", "**\u00c9cole**"), ("fix", "**fix**")):
        [cut] = [d["snippet"] for d in (await world.bot.knowledge(q=words))["documents"]]
        assert marked in cut and cut.count("**") == 2, (words, cut)


async def test_a_search_snippet_of_long_words_is_bounded_and_keeps_its_match(world: World) -> None:
    """The database's snippet is sixteen words, which a word of thousands of characters (a log
    line, a hash) makes as long as the document: it is cut to characters around its match."""
    long_word = "a" * 15_000
    await world.bot.put_document("ops.md", f"# Ops\n\nrun deploy {long_word} deploy again\n", 0, "r")
    found = await world.bot.knowledge(q="deploy")
    [cut] = [d["snippet"] for d in found["documents"]]
    assert len(cut) <= SNIPPET_CHARS + 6, len(cut)  # two marks and the ellipses
    assert "**deploy**" in cut and cut.count("**") % 2 == 0, cut  # PostgreSQL's leaves the word out


async def test_a_search_snippet_at_the_cut_ends_in_whole_words_and_says_the_body_goes_on(
    world: World,
) -> None:
    """PostgreSQL's snippet is cut from the body's first 16,000 characters: a hit that ends
    there is followed by ``…``, as the body goes on, and a word the cut falls inside is no
    half word in the snippet (a prefix search would mark ``implemen``)."""
    filler = "filler " * 2284  # 15,988 characters
    ends_there = filler + "abcde deploy after the cut " + "filler " * 50  # "deploy": 15,994 to 16,000
    split_there = filler + "abc implementation after " + "filler " * 50  # 15,992 to 16,006
    await world.bot.put_document("ends.md", ends_there, 0, "r")
    await world.bot.put_document("split.md", split_there, 0, "r")
    for q, path, body in (("deploy", "ends.md", ends_there), ("implem*", "split.md", split_there)):
        [cut] = [d["snippet"] for d in (await world.bot.knowledge(q=q))["documents"] if d["path"] == path]
        assert cut.endswith("…"), (q, cut[-40:])
        assert set(cut.replace("**", "").strip("…").split()) <= set(body.split()), (q, cut[-40:])
        assert "implemen**" not in cut, cut[-40:]
    [cut] = [d["snippet"] for d in (await world.bot.knowledge(q="deploy"))["documents"]]
    assert "**deploy**" in cut, cut[-40:]  # PostgreSQL's ends with it: "filler abcde **deploy**…"
