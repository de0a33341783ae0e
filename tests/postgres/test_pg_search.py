"""A reader's words become a tsquery PostgreSQL always parses: nothing typed is an operator."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from board.server.services.messages import fts_query
from board.server.store.search import Terms


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
    ],
)
def test_words_match_as_on_sqlite(pg: psycopg.Connection, typed: str, body: str, found: bool) -> None:
    """Every word must match, ``word*`` is a prefix, operators are only text."""
    row = pg.execute(
        "SELECT board_words(%s) @@ to_tsquery('simple', %s)", (body, fts_query(typed).tsquery())
    ).fetchone()
    assert row is not None and row[0] is found
