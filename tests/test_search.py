"""Searching messages: a window of the newest matches, ranked; one workspace's matches only."""

from __future__ import annotations

import html
import re
import sqlite3
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from playwright.async_api import Browser as Chromium
from playwright.async_api import expect

from board.client import BoardAPIError
from board.server.store import messages as store
from board.server.store.search import (
    SNIPPET_CHARS,
    START,
    STOP,
    Terms,
    _counts,
    _fold,
    bounded,
    relevance,
    snippet,
    start_of,
)
from tests.support.boardtest import World
from tests.support.browser_support import signed_in_tab
from tests.support.pages_support import sign_in


@pytest.fixture
def window_of_five(monkeypatch: pytest.MonkeyPatch) -> int:
    """A window small enough to fill with a few posts."""
    monkeypatch.setattr(store, "WINDOW", 5)
    return 5


async def test_a_busy_workspace_hides_no_older_match_of_a_quiet_one(
    world: World, window_of_five: int
) -> None:
    quiet = [await world.other.post(f"deploy the quiet box {n}", channel="lobby") for n in range(2)]
    busy = [await world.bot.post(f"deploy number {n}", channel="lobby") for n in range(3 * window_of_five)]
    found = await world.human.search("deploy", workspace="other")
    assert [m["id"] for m in found["messages"]] == [quiet[1]["id"], quiet[0]["id"]]
    assert found["has_more"] is False
    # and the busy workspace's matches stay in their own workspace, for its own bots too
    mine = await world.bot.search("deploy")
    assert {m["workspace"] for m in mine["messages"]} == {"proj"}
    assert {m["id"] for m in mine["messages"]} <= {m["id"] for m in busy}


async def test_a_full_window_continues_before_its_oldest_match(world: World, window_of_five: int) -> None:
    posted = [await world.bot.post(f"flaky test run {n}", channel="lobby") for n in range(8)]
    first = await world.bot.search("flaky")
    assert len(first["messages"]) == window_of_five
    assert {m["id"] for m in first["messages"]} == {m["id"] for m in posted[3:]}
    assert first["has_more"] is True and first["next_before"] == posted[3]["id"]
    rest = await world.bot.search("flaky", before=first["next_before"])
    assert {m["id"] for m in rest["messages"]} == {m["id"] for m in posted[:3]}
    assert rest["has_more"] is False and "next_before" not in rest


async def test_pages_of_one_window_do_not_overlap(world: World, window_of_five: int) -> None:
    for n in range(window_of_five):
        await world.bot.post("flaky " * (n + 1) + "run", channel="lobby")
    first = await world.bot.search("flaky", limit=2)
    assert first["next_offset"] == 2
    second = await world.bot.search("flaky", limit=2, offset=2)
    third = await world.bot.search("flaky", limit=2, offset=4)
    ids = [m["id"] for page in (first, second, third) for m in page["messages"]]
    assert len(ids) == len(set(ids)) == window_of_five


async def test_a_match_posted_between_pages_moves_no_page_of_the_window(world: World) -> None:
    """The next page is read before the window's newest match as the first page found it: a
    match posted meanwhile neither shows twice nor pushes one off the window's pages."""
    posted = [await world.bot.post("deploy " * (n % 3 + 1) + f"step {n}", channel="lobby") for n in range(6)]
    first = await world.bot.search("deploy", limit=3)
    assert first["has_more"] is True and first["next_offset"] == 3
    assert first["next_before"] == posted[-1]["id"] + 1
    newer = await world.bot.post("deploy deploy deploy deploy, posted between the pages", channel="lobby")
    second = await world.bot.search(
        "deploy", limit=3, offset=first["next_offset"], before=first["next_before"]
    )
    ids = [m["id"] for page in (first, second) for m in page["messages"]]
    assert sorted(ids) == [m["id"] for m in posted]  # each once, the newer one in none of them
    assert second["has_more"] is False and "next_before" not in second
    assert newer["id"] in [m["id"] for m in (await world.bot.search("deploy"))["messages"]]  # a new search


async def test_the_workspace_column_is_not_searched_as_words(world: World) -> None:
    """The index holds each message's workspace as a word of its own column: a search for
    that word finds only bodies that say it."""
    await world.bot.post("nothing to see", channel="lobby")
    for workspace_id in range(1, 10):  # the few workspaces a new board has
        assert (await world.bot.search(f"w{workspace_id}"))["messages"] == []
    said = await world.bot.post("the token w2 in a body", channel="lobby")
    assert [m["id"] for m in (await world.bot.search("w2"))["messages"]] == [said["id"]]


async def test_words_beside_any_punctuation_and_in_any_case_or_accent_are_found_on_every_store(
    world: World,
) -> None:
    """What a bot writes (an em dash, curly quotes, an emoji, a capital with an accent) splits
    and folds alike on SQLite and PostgreSQL, and what is no word of a body stays unfound."""
    fix = await world.bot.post("the fix\u2014a \u201cone-liner\u201d for \u00c9cole", channel="lobby")
    party = await world.bot.post("party\U0001f389 at the cafe\u0301, deploy\u00a0staging", channel="lobby")
    expected = {
        "fix": [fix],
        "one-liner": [fix],
        "ecole": [fix],
        "\u00e9cole": [fix],
        "\u00c9COLE": [fix],
        "party": [party],
        "caf\u00e9": [party],
        "staging": [party],
        "fixa": [],
        "liner-one": [],
    }
    for words, messages in expected.items():
        found = (await world.bot.search(words))["messages"]
        assert [m["id"] for m in found] == [m["id"] for m in messages], words


async def test_a_search_that_would_read_the_whole_index_is_refused_and_a_word_twice_counts_once(
    world: World,
) -> None:
    """One-letter prefixes stand for most of the index's words, and many of them made one short
    query read it all: a prefix needs two letters (of the part the index ends it with), and a
    search holds at most eight words. Words given again count once."""
    said = await world.bot.post("deploy the db to staging", channel="lobby")
    for q, why in [
        ("a*", "A prefix needs at least 2 letters before its *: a*."),
        ("deploy s*", "A prefix needs at least 2 letters before its *: s*."),
        ("db.s*", "A prefix needs at least 2 letters before its *: db.s*."),
        # a part either store's index ends the word with: PostgreSQL's splits at a superscript
        ("x\u00b2a*", "A prefix needs at least 2 letters before its *: x\u00b2a*."),
        (" ".join(f"w{n}" for n in range(9)), "Search for at most 8 words."),
    ]:
        with pytest.raises(BoardAPIError) as refused:
            await world.bot.search(q)
        assert (refused.value.code, refused.value.message) == ("INVALID_ARGUMENT", why), q
    assert (await world.bot.search("e\u0301t*"))["messages"] == []  # an accent typed apart: one letter more
    twice = " ".join(["deploy", "DEPLOY", "db", "de*", "st*"] * 4)  # 20 words, 4 different
    assert [m["id"] for m in (await world.bot.search(twice))["messages"]] == [said["id"]]


def test_relevance_weighs_repeats_rare_words_and_length() -> None:
    deploy = Terms((("deploy", False),))
    repeated, once, none = relevance(deploy, ["deploy deploy deploy", "deploy once", "no"])
    assert repeated > once > none == 0.0
    both = Terms((("deploy", False), ("rollback", False)))
    scores = relevance(both, ["deploy deploy", "deploy rollback", "deploy"])
    assert scores[1] > scores[0] > scores[2]  # the rarer word weighs more than a repeat
    prefix = Terms((("depl", True),))
    assert relevance(prefix, ["Déployed deploy", "x"])[0] > 0  # folded like the index: no accents, any case
    phrase = Terms((("db.py", False),))
    together, apart = relevance(phrase, ["edit db py", "db and py"])
    assert together > apart == 0.0


# Pieces that case (the long s, the Kelvin sign, a capital I with a dot), folding, word splits
# and the joined scan can each get wrong; and ASCII alone, scanned in lower case (words in a
# row, prefixes, digits, the ends of a text).
_PIECES = ["de", "ploy", "DÉ", "db", "py", "café", "ﬁ", "ß", "\u017f", "\u212a", "\u0130", "½"]
_PIECES += ["_", " ", ".", "-", "\n", "\x01"]
_WORDS = ["deploy", "dep", "db.py", "DB py", "café", "de_ploy", "fi", "ss", "k", "s", "i", "1/2", "é"]
_ASCII_PIECES = ["de", "ploy", "DE", "db", "py", "2", "_", " ", "  ", ".", "-", "\n", "\x00", "\x01"]
_ASCII_WORDS = ["deploy", "dep", "de", "DE", "db.py", "-db-", "de_ploy", "2", "d", "_", "ploy2"]


@settings(max_examples=300, deadline=None)
@given(st.data())
@pytest.mark.parametrize("pieces, words_of", [(_PIECES, _WORDS), (_ASCII_PIECES, _ASCII_WORDS)])
def test_the_window_is_counted_as_each_body_alone(
    pieces: list[str], words_of: list[str], data: st.DataObject
) -> None:
    """The window's bodies are scanned joined, in lower case when they are ASCII: each body
    still counts what its own scan by each word's pattern finds."""
    words = data.draw(st.lists(st.tuples(st.sampled_from(words_of), st.booleans()), min_size=1, max_size=3))
    bodies = data.draw(
        st.lists(st.lists(st.sampled_from(pieces), max_size=20).map("".join), min_size=1, max_size=8)
    )
    terms = Terms(tuple(words))
    texts = [_fold(body)[0].replace("\x00", " ").replace("\x01", " ") for body in bodies]
    alone = [[len(pattern.findall(text)) for text in texts] for pattern in terms.patterns()]
    assert _counts(terms, [_fold(body)[0] for body in bodies]) == alone


def test_ascii_words_in_a_row_at_the_ends_and_as_prefixes_are_each_counted() -> None:
    bodies = ["de de", "de_de.DE", "dede de2 2de", "de", "deploy de-ploy", "", "x\x00de de"]
    assert _counts(Terms((("de", False),)), bodies) == [[2, 3, 0, 1, 1, 0, 2]]
    assert _counts(Terms((("DE", True),)), bodies) == [[2, 3, 2, 1, 2, 0, 2]]
    assert _counts(Terms((("2", False), ("-de-", False))), bodies) == [
        [0, 0, 0, 0, 0, 0, 0],
        [2, 3, 0, 1, 1, 0, 2],
    ]


def test_a_control_character_in_a_body_splits_words_as_a_space_does() -> None:
    phrase = Terms((("db.py", False),))
    assert _counts(phrase, ["db\x00py", "db\x01py db py", "dbpy"]) == [[1, 2, 0]]
    assert snippet(phrase, "db\x00py") == "**db\x00py**"


def test_a_snippet_is_the_stretch_with_the_matches_marked() -> None:
    words = [f"w{n}" for n in range(40)]
    words[30] = "Deploy"
    text = " ".join(words)
    cut = snippet(Terms((("deploy", False),)), text)
    assert cut.startswith("…") and cut.endswith("…") and "**Deploy**" in cut
    assert len(cut.strip("…").split()) == 16
    short = "deploy, then deploy again"
    assert snippet(Terms((("deploy", False),)), short) == "**deploy**, then **deploy** again"
    # folded as the index folds: the mark lands on the text as written
    assert snippet(Terms((("cafe", False),)), "un café noir") == "un **café** noir"
    assert snippet(Terms((("dep", True),)), "deployed") == "**deployed**"
    assert snippet(Terms((("db.py", False),)), "edit db.py now") == "edit **db.py** now"
    assert snippet(Terms((("x", False),)), "") == ""


@pytest.mark.parametrize(
    ("word", "body"),
    [
        ("e\u0301te\u0301", "un été chaud"),  # the accents typed apart, as combining marks
        ("été", "un e\u0301te\u0301 chaud"),
        ("हिन्दी", "हिन्दी भाषा"),  # vowel signs and a virama: marks within the word
    ],
)
def test_a_word_with_combining_marks_is_counted_where_the_index_matched_it(word: str, body: str) -> None:
    terms = Terms(((word, False),))
    with sqlite3.connect(":memory:") as db:  # the index's own reading (unicode61, as messages_fts)
        db.execute("CREATE VIRTUAL TABLE f USING fts5(body, tokenize = 'unicode61')")
        db.execute("INSERT INTO f (body) VALUES (?)", (body,))
        assert db.execute("SELECT count(*) FROM f WHERE f MATCH ?", (terms.fts5(),)).fetchone() == (1,)
    assert _counts(terms, [_fold(body)[0]]) == [[1]]
    assert relevance(terms, [body, "nothing here"])[0] > 0


def test_a_snippet_marks_a_word_with_the_marks_typed_after_its_letters() -> None:
    assert snippet(Terms((("cafe", False),)), "le cafe\u0301 noir") == "le **cafe\u0301** noir"
    assert snippet(Terms((("cafe", False),)), "cafe\u0301") == "**cafe\u0301**"
    assert snippet(Terms((("fi", True),)), "a ﬁle") == "a **ﬁle**"  # one character folded into two


def test_a_snippet_escapes_the_text_s_own_asterisks_and_backslashes() -> None:
    """A snippet is Markdown: only its marks read as ``**``, whatever the text holds."""
    deploy = Terms((("deploy", False),))
    assert snippet(deploy, "compute 2 ** 8 then deploy") == r"compute 2 \*\* 8 then **deploy**"
    assert snippet(deploy, r"in C:\ci\ run deploy") == r"in C:\\ci\\ run **deploy**"
    assert snippet(deploy, "**deploy** now") == r"**deploy**\*\* now"  # the stretch begins at a word


def test_a_snippet_of_a_text_with_no_word_python_knows_is_escaped_and_bounded() -> None:
    """An emoji is a word to the index (PostgreSQL under C, SQLite for some) and none to
    Python: such a text came back whole, its own ``*`` and ``\\`` unescaped."""
    smile = Terms((("🙂", False),))
    assert snippet(smile, "🙂 ** 🙂 \\") == "🙂 \\*\\* 🙂 \\\\"
    long = snippet(smile, "🙂 " * 5000 + "** *")
    assert len(long) <= SNIPPET_CHARS + 1 and long.endswith("…") and "**" not in long


def test_a_word_written_with_its_marks_apart_is_one_word_of_the_snippet() -> None:
    """A text in decomposed form (NFD: a letter, then its accent) gives the snippet its
    composed form gives, decomposed: an accent inside a word split it in two, and the
    snippet began in the middle of one."""
    composed = (
        "Hier soir, mais nous avons déjà noté que la réunion du comité a été reportée à la "
        "semaine prochaine, comme prévu par le règlement intérieur de l'équipe."
    )
    week = Terms((("semaine", False),))
    expected = unicodedata.normalize("NFD", snippet(week, composed))
    assert snippet(week, unicodedata.normalize("NFD", composed)) == expected


def test_a_database_s_snippet_is_cut_to_whole_marks() -> None:
    """``bounded`` writes the database's marks (control characters) as ``**``: a cut inside a
    match closes or opens it, a cut right after a mark leaves no empty match, a stray mark
    (the text's own) is dropped, and the text's ``*`` is escaped."""
    long = "y " * 40 + START + "one" + STOP + "z" * 144 + START + "two" + STOP + " tail" * 50
    cut = bounded(long)
    assert cut.startswith("…") and cut.endswith("z…") and "**one**" in cut and "****" not in cut
    assert bounded("a " + START + "hit" + STOP + " 2*3") == r"a **hit** 2\*3"
    assert bounded(STOP + "x " + START + START + "y" + STOP) == "x **y**"


async def test_the_search_page_marks_only_the_hits_of_a_body_with_its_own_asterisks(
    chromium: Chromium, world: World, tmp_path: Path
) -> None:
    await world.bot.post("compute 2 ** 8, then **really** deploy from C:\\ci\\", channel="lobby")
    tab = await signed_in_tab(chromium, world, tmp_path)
    await tab.page.goto(world.board.url + "/search?q=deploy&workspace=proj")
    snippet_shown = tab.page.locator("p.snippet")
    await expect(snippet_shown).to_have_text(
        "compute 2 ** 8, then **really** deploy from C:\\ci"
    )  # to a word
    await expect(snippet_shown.locator("mark")).to_have_text(["deploy"])
    await tab.shot("search-a-body-with-its-own-asterisks")
    assert tab.errors == []


async def test_a_snippet_of_long_words_is_bounded_and_keeps_its_match(world: World) -> None:
    """Sixteen words are no bound when a word is thousands of characters (a log line, a hash,
    base64): the snippet is cut to characters too, around the match, so a search answer stays
    small whatever was posted."""
    long_word = "a" * 7_000
    await world.human.post(f"{long_word} deploy {long_word}", channel="lobby", workspace="proj")
    await world.human.post(f"see deploy {long_word} later", channel="lobby", workspace="proj")
    found = await world.bot.search("deploy")
    snippets = [m["snippet"] for m in found["messages"]]
    assert len(snippets) == 2
    for cut in snippets:
        assert len(cut) <= SNIPPET_CHARS + 6, len(cut)  # the two marks and the ellipses
        assert cut.startswith("…") or cut.startswith("see **deploy"), cut[:20]
        assert "**deploy" in cut and cut.endswith("…"), cut[:20]


async def test_the_search_page_goes_on_down_the_window_then_to_the_older_one(
    world: World, window_of_five: int
) -> None:
    posted = [(await world.bot.post(f"flaky test run {n}", channel="lobby"))["id"] for n in range(8)]
    alice = await sign_in(world.board)
    seen: list[int] = []
    link: str | None = "/search?q=flaky&workspace=proj&limit=3"
    while link is not None:
        status, page = await alice.get(link)
        assert status == 200
        seen += [int(i) for i in re.findall(r'<a href="/t/(\d+)">', page)]
        more = re.search(r'<a href="([^"]+)" id="more">', page)
        link = html.unescape(more.group(1)) if more else None
        assert link is None or ("workspace=proj" in link and "limit=3" in link)  # the filters go along
    assert sorted(seen) == sorted(posted)  # each match once: the window's pages, then the older window
    await alice.close()


def test_the_start_a_snippet_is_cut_from_leaves_out_a_word_the_limit_falls_inside() -> None:
    assert start_of("one two", 7) == ("one two", False)
    assert start_of("one two three", 8) == ("one two ", True)  # at the limit: the word begins
    assert start_of("one two three", 9) == ("one two ", True)  # "t" of "three": left out
    assert start_of("one two three", 7) == ("one two", True)  # at the limit: a space
    assert start_of("Ecole e\u0301cole", 8) == ("Ecole ", True)  # a mark belongs to its letter
    assert start_of("Ecole e\u0301cole", 7) == ("Ecole ", True)
    assert start_of("a" * 20, 10) == ("a" * 10, True)  # one word past the limit: cut inside it
    assert start_of("  " + "a" * 20, 10) == ("  " + "a" * 8, True)
