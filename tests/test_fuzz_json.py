"""Hostile JSON for every declared body: refused with a 4xx, or readable back by every read.

The bodies come from the route table's declared input types (the same
declarations the OpenAPI document is built from), so a new route is fuzzed the
day it is declared. Each field gets values of its own type, some valid (so that
writes succeed and store something) and some hostile: lone surrogates, NaN and
infinities, numbers past 64 bits, objects nested past the depth limit. Every
answer must parse with a strict parser; a refusal must change no table; and
after all of them every read route must still answer, strictly parseable, as a
human and as a bot.
"""

from __future__ import annotations

import dataclasses
import http.client
import json
import math
import types
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from board.server.api.claims import NDJSON
from board.server.api.route import Route
from board.server.api.table import all_routes
from board.server.jsonvalues import MAX_DEPTH
from board.server.validation import declared
from tests.support.boardtest import snapshot
from tests.support.processes import fuzzed_board

EXAMPLES = 12
SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
GOOD = {"channel": "general", "workspace": "proj", "body": "hello", "reason": "because", "to": "pb"}


def _refuse(name: str) -> Any:
    raise AssertionError(f"the board sent {name}, which standard JSON parsers refuse")


def strict_loads(text: str) -> Any:
    return json.loads(text, parse_constant=_refuse)


def nested(depth: int) -> Any:
    value: Any = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=12)  # any valid text
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=2**63, max_value=2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),  # control characters and U+0000 included: JSON escapes them
)
#: JSON objects a client may store in a free-form field: every one of these must read back.
GOOD_JSON = st.one_of(
    st.dictionaries(
        st.text(max_size=4),
        st.recursive(
            SCALARS,
            lambda inner: (
                st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
            ),
            max_leaves=8,
        ),
        max_size=3,
    ),
    st.sampled_from([MAX_DEPTH - 1, MAX_DEPTH]).map(nested),
)
HOSTILE_SCALARS = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf]),
    st.text(SURROGATES, min_size=1, max_size=2),
)
#: Free-form JSON with at least one thing the board must refuse somewhere in it.
HOSTILE_JSON = st.one_of(
    HOSTILE_SCALARS,
    st.lists(HOSTILE_SCALARS, min_size=1, max_size=2).map(lambda items: {"a": [1, *items]}),
    st.dictionaries(SURROGATES, st.integers(), min_size=1, max_size=2),
    st.sampled_from([MAX_DEPTH + 1, 100]).map(nested),
)


def strings(meta: Mapping[str, Any], name: str, hostile: bool) -> st.SearchStrategy[Any]:
    if hostile:
        return st.builds(lambda a, s, b: a + s + b, TEXT, SURROGATES, TEXT)
    if meta.get("choices"):
        return st.sampled_from(meta["choices"])
    if name in GOOD:
        return st.just(GOOD[name])
    if meta.get("pattern") is not None:
        return st.from_regex(meta["pattern"], fullmatch=True)
    return TEXT


def unwrap_optional(kind: Any) -> tuple[Any, bool]:
    members = [k for k in typing.get_args(kind) if k is not type(None)]
    if typing.get_origin(kind) in (typing.Union, types.UnionType) and len(members) == 1:
        return members[0], True
    return kind, False


def values(kind: Any, meta: Mapping[str, Any], name: str, hostile: bool) -> st.SearchStrategy[Any]:
    """Values for a field declared as ``kind``: of its type, and hostile when asked."""
    kind, optional = unwrap_optional(kind)
    origin = typing.get_origin(kind)
    if origin is list:
        item_meta = {k: v for k, v in meta.items() if k != "max_items"}
        good = values(typing.get_args(kind)[0], item_meta, name, False)
        if not hostile:
            return st.lists(good, max_size=3)
        bad = values(typing.get_args(kind)[0], item_meta, name, True)
        return st.builds(lambda items, item: [*items, item], st.lists(good, max_size=2), bad)
    if origin is dict or kind is dict or kind is Any:
        return HOSTILE_JSON if hostile else GOOD_JSON
    if dataclasses.is_dataclass(kind):
        return bodies(kind, hostile)  # type: ignore[arg-type]
    if kind in (int, float):
        if hostile:
            return st.one_of(HOSTILE_SCALARS, st.integers(min_value=2**63, max_value=2**70))
        return st.integers(min_value=0, max_value=3) if kind is int else st.floats(min_value=0, max_value=3)
    if kind is bool:
        return st.sampled_from([0, "true", None]) if hostile else st.booleans()
    strategy = strings(meta, name, hostile)
    return strategy if hostile or not optional else strategy | st.none()


def free_form(kind: Any) -> bool:
    kind, _ = unwrap_optional(kind)
    return typing.get_origin(kind) is dict or kind is dict or kind is Any


@st.composite
def bodies(
    draw: st.DrawFn, cls: type, hostile: bool = True, base: dict[str, Any] | None = None
) -> dict[str, Any]:
    """An object with the declared fields of ``cls``, at most one of them hostile.

    ``base`` is a body the route accepts: its fields keep their values, others are
    left out, so that most examples are written and what they store is read back.
    Free-form fields always get fresh JSON. Without a base, every field is drawn.
    """
    fields = declared(cls)
    spoiled = draw(st.sampled_from([f[0] for f in fields])) if hostile and draw(st.booleans()) else None
    body: dict[str, Any] = {}
    for name, kind, meta, required in fields:
        if name == spoiled:
            body[name] = draw(values(kind, meta, name, True))
        elif free_form(kind):
            body[name] = draw(GOOD_JSON)
        elif base is not None and name in base:
            body[name] = base[name]
        elif required or (base is None and draw(st.booleans())):
            body[name] = draw(values(kind, meta, name, False))
    return body


#: A body each storing route accepts (fields not named here are left out, or drawn when required).
VALID: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/api/messages"): {"body": "hello", "channel": "general", "workspace": "proj"},
    ("POST", "/api/channels"): {"workspace": "proj"},
    ("POST", "/api/conversations"): {"participants": ["pb"], "topic": "t", "workspace": "proj"},
    ("POST", "/api/wakes"): {"harness": "claude", "started_at": "2026-01-01T00:00:00Z", "outcome": "ok"},
    ("POST", "/api/skills"): {"text": "do it"},
    ("POST", "/api/profiles"): {"workspace": "proj", "harness": "claude"},
    ("PUT", "/api/knowledge/{path:.+}"): {
        "body": "text",
        "base_revision": 0,
        "reason": "r",
        "workspace": "proj",
    },
    ("POST", "/api/knowledge/{path:.+}/dispute"): {
        "reason": "r",
        "sources": [{"note": "see"}],
        "workspace": "proj",
    },
}


class Board:
    """A served board spoken to over one keep-alive connection."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def send(self, method: str, path: str, token: str | None, body: Any = None) -> tuple[int, str, str]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        data = None
        if body is not None:
            data = json.dumps(body, allow_nan=True).encode()  # NaN and \\ud800 escapes as a client may send
            headers["Content-Type"] = "application/json"
        self.conn.request(method, path, body=data, headers=headers)
        resp = self.conn.getresponse()
        return resp.status, resp.getheader("Content-Type") or "", resp.read().decode()

    def first_line(self, path: str, token: str) -> tuple[int, str, str]:
        """A GET of a stream (on a connection of its own, closed after): its first line, or
        its whole answer when it does not stream (a refusal)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.conn.port, timeout=30)
        try:
            conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
            resp = conn.getresponse()
            text = resp.readline() if resp.status == 200 else resp.read()
            return resp.status, resp.getheader("Content-Type") or "", text.decode()
        finally:
            conn.close()

    def call(self, method: str, path: str, token: str | None, body: Any = None) -> Any:
        status, _, text = self.send(method, path, token, body)
        assert status < 300, (method, path, status, text)
        return strict_loads(text)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, Board, dict[str, str]]]:
    db = tmp_path / "board.db"
    with fuzzed_board(db) as (process, human, _):
        board = Board(process.port)
        board.call("POST", "/api/workspaces", human, {"slug": "proj", "name": "Project"})
        invite = board.call("POST", "/api/invites", human, {"workspace": "proj"})["invite"]
        bot = board.call("POST", "/api/agents", None, {"handle": "pb", "invite": invite})["token"]
        try:
            yield db, board, {"human": human, "bot": bot}
        finally:
            board.conn.close()


def seed(board: Board, tokens: dict[str, str]) -> dict[str, str]:
    """Things the routes' paths name: a thread, a document, a skill, a profile."""
    human, bot = tokens["human"], tokens["bot"]
    root = board.call("POST", "/api/messages", bot, {"body": "a thread", "channel": "general"})
    board.call("PUT", "/api/knowledge/notes/fuzz.md", bot, {"body": "doc", "base_revision": 0, "reason": "r"})
    board.call("POST", "/api/skills", human, {"name": "fuzz-skill", "text": "do it"})
    board.call(
        "POST", "/api/profiles", human, {"name": "fuzz-profile", "workspace": "proj", "harness": "claude"}
    )
    return {"id": str(root["id"]), "path": "notes/fuzz.md", "handle": "pb", "workspace": "proj"}


def concrete(route: Route, names: dict[str, str]) -> str:
    path = route.path.replace("{path:.+}", names["path"]).replace("{id}", names["id"])
    path = path.replace("{handle}", names["handle"])
    path = path.replace("/channels/{slug}", "/channels/general").replace("{slug}", names["workspace"])
    return path.replace("{name}", "fuzz-skill" if "/skills/" in path else "fuzz-profile")


def streams(route: Route) -> bool:
    """A route that answers JSON lines until its client leaves (the wake stream)."""
    return route.answer.schema.get("contentMediaType") == NDJSON


def read_everything(board: Board, tokens: dict[str, str], names: dict[str, str]) -> None:
    """Every read route, as each caller: it answers below 500, in standard JSON (a stream's
    first line, a heartbeat within a second if nothing else comes first)."""
    for route in all_routes():
        if route.method != "GET":
            continue
        path = concrete(route, names)
        if streams(route):
            for token in tokens.values():
                status, _, first = board.first_line(path + "?beat=1", token)
                assert status < 500, (path, first)
                strict_loads(first)
            continue
        for token in tokens.values():
            for query in ("", "?workspace=proj"):
                status, kind, text = board.send("GET", path + query, token)
                assert status < 500, (path + query, text)
                if kind.startswith("application/json"):
                    strict_loads(text)


WRITES = [r for r in all_routes() if r.body is not None]


def _unscoped(route: Route) -> tuple[str, str]:
    return route.method, route.path.replace("/workspaces/{slug}/knowledge", "/knowledge")


def fuzz(
    db: Path,
    board: Board,
    tokens: dict[str, str],
    route: Route,
    path: str,
    statuses: list[tuple[tuple[str, str], int]],
) -> None:
    """Hostile bodies for one route: answered below 500 in strict JSON; a refusal changes nothing."""
    assert route.body is not None
    base = VALID.get(_unscoped(route))
    tables = [snapshot(db)]  # the row counts as they stand

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(body=bodies(route.body, base=base), caller=st.sampled_from(sorted(tokens)))
    def attempt(body: dict[str, Any], caller: str) -> None:
        where = path.replace("{new}", f"notes/new-{len(statuses)}.md")  # a write that creates, each time
        status, _, text = board.send(route.method, where, tokens[caller], body)
        assert status < 500, (route.method, where, body, text)
        strict_loads(text)
        statuses.append((_unscoped(route), status))
        if status >= 400:
            assert snapshot(db) == tables[0], (route.method, where, body, text)
        else:
            tables[0] = snapshot(db)

    attempt()


def test_hostile_json_is_refused_or_read_back(served: tuple[Path, Board, dict[str, str]]) -> None:
    db, board, tokens = served
    names = seed(board, tokens)
    statuses: list[tuple[tuple[str, str], int]] = []
    for route in WRITES:
        path = concrete(route, names)
        if route.method == "PUT" and "/knowledge/" in route.path:
            path = path.replace(names["path"], "{new}")
        fuzz(db, board, tokens, route, path, statuses)
    written = {route for route, status in statuses if status < 300}
    assert set(VALID) <= written, set(VALID) - written  # what hostile JSON is stored is read back below
    # What any of them stored is still there: every read must render it.
    read_everything(board, tokens, names)
