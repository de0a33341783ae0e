"""Property tests of the input parsers: any input gives a value or a clean BoardError."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from board.server.clock import iso, parse_time
from board.server.errors import BoardError, InvalidArgument
from board.server.services.channels import parse_seen
from board.server.services.messages import MAX_WORDS, MessageQuery, fts_query
from board.server.services.posting import PostMessage
from board.server.validation import arg, parse_body, parse_query

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["body", "channel", "reply_to", "tags", "meta", "x"]), json_values))
def test_post_bodies_parse_or_fail_cleanly(data: dict[str, Any]) -> None:
    try:
        parsed = parse_body(PostMessage, data)
    except BoardError as exc:
        assert exc.code in {"INVALID_ARGUMENT", "LIMIT_EXCEEDED"} and exc.message
        return
    assert isinstance(parsed.body, str) and len(parsed.body) <= 16_000
    assert all(isinstance(t, str) and len(t) <= 32 for t in parsed.tags)
    assert set(data) <= {"body", "channel", "reply_to", "tags", "meta"}


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["since", "limit", "wait", "view", "roots", "order", "q"]), st.text(max_size=12)
    )
)
def test_query_strings_parse_or_fail_cleanly(query: dict[str, str]) -> None:
    try:
        parsed = parse_query(MessageQuery, query)
    except BoardError as exc:
        assert exc.code == "INVALID_ARGUMENT" and exc.message
        return
    assert 1 <= parsed.limit <= 500 and 0 <= parsed.wait <= 60
    assert parsed.since is None or parsed.since >= 0


@given(st.text(max_size=200))
@example(" ".join(map(str, range(MAX_WORDS + 1))))  # one word more than a search takes
@example("a* b")  # a prefix of one letter
def test_fts_queries_are_quoted_words(text: str) -> None:
    words = {(w.rstrip("*").casefold(), w.endswith("*")) for w in text.split() if w.rstrip("*")}
    try:
        match = fts_query(text)
    except InvalidArgument as exc:
        if exc.message.startswith("A prefix needs"):
            named = exc.message.rsplit(": ", 1)[1].removesuffix(".").removesuffix("*")
            assert (named.casefold(), True) in words, exc.message
        else:
            assert not words or len(words) > MAX_WORDS
        return
    assert 1 <= len(words) <= MAX_WORDS
    for term in match.fts5().split(" "):
        assert term.startswith('"') and (term.endswith('"') or term.endswith('"*'))


@given(st.text(max_size=100))
def test_seen_lists_parse_or_fail_cleanly(text: str) -> None:
    try:
        seen = parse_seen(text)
    except InvalidArgument:
        return
    assert all(isinstance(v, int) and v >= 0 for v in seen.values())


@dataclass
class Nested:
    name: str = arg(max_len=5)
    count: int = arg(0, min=0, max=3)


@dataclass
class Outer:
    items: list[Nested] = arg([], max_items=2)


def test_nested_bodies_name_the_failing_field() -> None:
    with pytest.raises(InvalidArgument) as caught:
        parse_body(Outer, {"items": [{"name": "ok"}, {"name": "ok", "count": 9}]})
    assert "items[1].count" in caught.value.message
    with pytest.raises(InvalidArgument) as caught:
        parse_body(Outer, {"items": [{"name": "ok", "extra": 1}]})
    assert "extra" in caught.value.message
    assert parse_body(Outer, {"items": [{"name": "abc"}]}).items[0].count == 0


@dataclass
class Sized:
    ahead: int = arg(0, min=0, max=1_000_000)
    name: str = arg("", min_len=2)


@pytest.mark.parametrize(
    ("cls", "data", "said", "field"),
    [
        (
            PostMessage,
            {"body": "x" * 16_053},
            "The body is 16,053 characters; at most 16,000 are allowed.",
            "body",
        ),
        (Outer, {"items": [{}] * 1234}, "The items list has 1,234 items; at most 2 are allowed.", "items"),
        (Outer, {"items": [{"count": 1}]}, "The field items[0].name is required.", "items[0].name"),
        (PostMessage, {"body": 1}, "The body must be a string.", "body"),
        (Sized, {"ahead": 2_000_000}, "The ahead must be at most 1,000,000.", "ahead"),
        (Sized, {"name": "x"}, "The name must have at least 2 characters.", "name"),
    ],
)
def test_refusals_read_as_sentences_naming_the_field_with_counts_grouped(
    cls: type, data: dict[str, Any], said: str, field: str
) -> None:
    """A person reads the message; a program reads ``details.field``, the name as sent."""
    with pytest.raises(BoardError) as caught:
        parse_body(cls, data)
    assert caught.value.message == said
    assert caught.value.to_json()["error"]["details"]["field"] == field


RFC3339_UTC = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")


@given(st.datetimes(timezones=st.just(UTC)))
def test_times_are_rfc3339_with_four_digit_years_and_read_back(moment: datetime) -> None:
    text = iso(moment)
    assert RFC3339_UTC.fullmatch(text), text
    assert parse_time(text) == moment.replace(microsecond=0)


@given(
    st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31)),
    st.integers(min_value=-(24 * 60 - 1), max_value=24 * 60 - 1).map(
        lambda minutes: timedelta(minutes=minutes)
    ),
)
def test_a_time_in_another_zone_is_written_as_the_same_moment_in_utc(
    naive: datetime, offset: timedelta
) -> None:
    moment = naive.replace(tzinfo=timezone(offset))
    text = iso(moment)
    assert RFC3339_UTC.fullmatch(text), text
    assert parse_time(text) == moment.replace(microsecond=0)


def test_year_one_is_written_with_four_digits() -> None:
    assert iso(datetime(1, 1, 1, tzinfo=UTC)) == "0001-01-01T00:00:00Z"
    assert iso(parse_time("0001-01-01T00:00:00Z")) == "0001-01-01T00:00:00Z"
