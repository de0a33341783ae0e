"""A reader's words become a tsquery PostgreSQL always parses: nothing typed is an operator."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql

from board.server.services.messages import fts_query
from board.server.store.postgres import PostgresStore
from board.server.store.search import Terms, index_words
from tests.support.pgcluster import PgCluster


@pytest.fixture(scope="module")
def pg(pg_template: str) -> Iterator[psycopg.Connection]:
    """A connection to the suite's migrated database: the index's own board_words is there."""
    conn = psycopg.connect(pg_template, autocommit=True)
    yield conn
    conn.close()


words = st.text(alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), min_size=1)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(words, st.booleans()), min_size=1, max_size=6), st.booleans())
def test_any_words_make_a_query_the_server_parses(
    pg: psycopg.Connection, terms: list[tuple[str, bool]], any_: bool
) -> None:
    query = Terms(tuple(terms), any=any_).tsquery()
    pg.execute("SELECT to_tsquery('simple', %s)", (query,)).fetchone()


@pytest.mark.parametrize(
    ("typed", "body", "found"),
    [
        ("deploy", "we deploy on fridays", True),
        ("dep*", "we deploy on fridays", True),
        ("dep", "we deploy on fridays", False),
        ("deploy friday*", "we deploy on fridays", True),
        ("deploy monday", "we deploy on fridays", False),
        ("'; DROP TABLE x; --", "we deploy on fridays", False),
        ("a&b|!c", "a b c", True),  # one phrase of three words, as FTS5 reads it: no operator
        ("a&!b", "a c", False),
        ("db.py", "see store/db.py for it", True),  # split at punctuation, as SQLite's tokenizer does
        ("db", "see store/db.py for it", True),
        ("store/db*", "see store/db.py for it", True),
        ("py.db", "see store/db.py for it", False),
        # split at every character that is neither a letter nor a digit, as SQLite's unicode61
        ("fix", "the fix—a one-liner", True),
        ("one-liner", "a “one-liner”", True),
        ("liner one", "a “one-liner”", True),
        ("party", "party🎉 tonight", True),
        ("b", "a«b»c", True),
        ("deploy", "deploy\u00a0staging", True),
        ("snake", "snake_case", True),
        ("fixa", "the fix—a one-liner", False),
        # case folded for every script, Latin accents taken off, whatever the character type
        ("école", "ÉCOLE", True),
        ("ecole", "École", True),
        ("école", "ecole", True),
        ("naive", "cafe\u0301 naïve", True),
        ("café", "cafe\u0301 naïve", True),
        ("σας", "ΣΑΣ", True),
        ("日本語", "日本語のテキスト", False),  # a run of letters is one word, as in unicode61
        ("日本語のテキスト", "日本語のテキスト", True),
        ("σας", "ΣΑΣ'x", True),  # a final sigma is a sigma, whatever follows it in the body
        ("ΣΑΣ*", "σασμος", True),
        ("INFO", "info", True),
    ],
)
def test_words_match_as_on_sqlite(pg: psycopg.Connection, typed: str, body: str, found: bool) -> None:
    """Every word must match, ``word*`` is a prefix, operators are only text."""
    row = pg.execute(
        "SELECT board_words(%s) @@ to_tsquery('simple', %s)", (body, fts_query(typed).tsquery())
    ).fetchone()
    assert row is not None and row[0] is found


#: Every character Python's Unicode knows, but a NUL (no body holds one) and a surrogate.
known = st.characters(exclude_categories=["Cs", "Cn", "Co"], exclude_characters="\x00")


@pytest.fixture(scope="module", params=["C", "C.UTF-8"])
def pg_ctype(request: pytest.FixtureRequest, pg_cluster: PgCluster) -> Iterator[psycopg.Connection]:
    """A database migrated under each character type docs/scale.md allows."""
    name = f"board_ctype_{request.param.replace('.', '_').replace('-', '_').lower()}"
    with psycopg.connect(pg_cluster.url, autocommit=True) as admin:
        admin.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE template0 ENCODING UTF8 LC_COLLATE 'C' LC_CTYPE {}").format(
                sql.Identifier(name), sql.Literal(request.param)
            )
        )
    url = pg_cluster.database_url(name)
    migrated = threading.Thread(target=lambda: asyncio.run(_migrate(url)))
    migrated.start()
    migrated.join()
    conn = psycopg.connect(url, autocommit=True)
    yield conn
    conn.close()
    pg_cluster.drop_database(url)


async def _migrate(url: str) -> None:
    store = PostgresStore(url, readers=1)
    await store.open()
    await store.close()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=known, max_size=40))
def test_a_search_splits_a_word_as_the_index_splits_a_body(pg_ctype: psycopg.Connection, text: str) -> None:
    """index_words (a search's word) reads what board_text (a body, before its words are
    parsed) does, for any text of characters both Unicodes know; and a body is found by
    a search for its own text, through the parser both go through after."""
    row = pg_ctype.execute(
        "SELECT board_text(%s), board_words(%s) @@ to_tsquery('simple', %s)",
        (text, text, Terms(((text, False),)).tsquery()),
    ).fetchone()
    assert row is not None
    assert row[0].split() == index_words(text)
    assert row[1] is bool(index_words(text))
