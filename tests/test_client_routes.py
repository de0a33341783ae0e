"""Every method of ``board.client`` calls a route of the route table, by its method and path.

The client ships to bots and daemons without the server, so it spells its paths itself; this
holds them to the table. Each public method is called with sample arguments on a client that
records the call instead of sending it, and the call must match exactly one declared route
whose path arguments are all values the method was given: a misspelled literal matches no
route, and a misspelled knowledge suffix (``/histroy``) is not taken for part of a document's
``{path:.+}``. The MCP actions name their route as the table declares it and are checked in
tests/test_mcp.py.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any, get_origin, get_type_hints

import pytest

from board.client import BoardClient, Lines
from board.server.api.route import Route
from board.server.api.table import all_routes

#: Values a method's arguments take where their type alone would not reach a route.
SPECIAL: dict[str, Any] = {
    "path": "notes/a.md",  # a document path holds '/', as {path:.+} allows
    "kind": "restart",  # fleet_order: the order kind is the route's last segment
}
WORKSPACE = "ws-1"  # the knowledge methods' keyword for the /api/workspaces/{slug}/knowledge form
NOT_ROUTES = {"request", "request_object", "call", "stream", "close"}  # the plumbing every method uses


class Recorder(BoardClient):
    """A client that keeps each call's method and path and sends nothing."""

    def __init__(self) -> None:
        super().__init__("http://board.invalid")
        self.calls: list[tuple[str, str]] = []

    async def call(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        self.calls.append((method, path))
        return 200, {}

    async def stream(self, method: str, path: str, **kwargs: Any) -> Lines:
        self.calls.append((method, path))
        return Lines(None)


def _sample(name: str, hint: Any) -> Any:
    if name in SPECIAL:
        return SPECIAL[name]
    kind = get_origin(hint) or hint
    samples: dict[Any, Any] = {int: 7, str: f"{name}-1", list: [7], dict: {}}
    return samples[kind]


def _arguments(method: Callable[..., Any]) -> list[dict[str, Any]]:
    """The method's required arguments, sampled; twice with the workspace keyword when it takes one."""
    hints = get_type_hints(method)
    params = inspect.signature(method).parameters
    required = {
        name: _sample(name, hints[name])
        for name, param in params.items()
        if name != "self"
        and param.default is inspect.Parameter.empty
        and param.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    }
    keyword = params.get("workspace")
    if keyword is not None and keyword.kind is inspect.Parameter.KEYWORD_ONLY:
        return [required, {**required, "workspace": WORKSPACE}]
    return [required]


def _pattern(route: Route) -> re.Pattern[str]:
    """The route's path as a regular expression, each argument a named group."""
    pattern = re.sub(r"{(\w+):([^}]*)}", r"(?P<\1>\2)", route.path)
    return re.compile(re.sub(r"{(\w+)}", r"(?P<\1>[^/]+)", pattern))


def routes_called(method: str, path: str, arguments: Mapping[str, Any]) -> list[Route]:
    """The routes this call can be: same method, the path matches, every path argument was given."""
    given = {str(value) for value in arguments.values()}
    found = []
    for route in all_routes():
        match = _pattern(route).fullmatch(path)
        if route.method == method and match and set(match.groupdict().values()) <= given:
            found.append(route)
    return found


def client_methods() -> list[str]:
    return [
        name
        for name, member in inspect.getmembers(BoardClient, inspect.iscoroutinefunction)
        if not name.startswith("_") and name not in NOT_ROUTES
    ]


@pytest.mark.parametrize("name", client_methods())
async def test_a_client_method_calls_one_route_of_the_table(name: str) -> None:
    for arguments in _arguments(getattr(BoardClient, name)):
        client = Recorder()
        await getattr(client, name)(**arguments)
        assert len(client.calls) == 1, f"{name}({arguments}) made {client.calls}"
        ((method, path),) = client.calls
        routes = routes_called(method, path, arguments)
        assert len(routes) == 1, f"{name}: {method} {path} is {[r.path for r in routes] or 'no route'}"


def test_every_client_method_is_checked() -> None:
    """The test above runs on every ``async def`` of the client's class, not on an empty list."""
    (cls,) = ast.parse(inspect.getsource(BoardClient)).body
    assert isinstance(cls, ast.ClassDef)
    defined = {node.name for node in cls.body if isinstance(node, ast.AsyncFunctionDef)}
    assert set(client_methods()) == defined - NOT_ROUTES - {"__aenter__", "__aexit__"}
    assert {"me", "post", "claim", "document_history", "finish_run", "fleet_order"} <= defined


def test_a_misspelled_path_matches_no_route() -> None:
    document = {"path": "notes/a.md"}
    assert [r.path for r in routes_called("GET", "/api/knowledge/notes/a.md/history", document)] == [
        "/api/knowledge/{path:.+}/history"
    ]
    assert routes_called("GET", "/api/knowledge/notes/a.md/histroy", document) == []
    assert routes_called("DELETE", "/api/agent/handle-1/token", {"handle": "handle-1"}) == []
    assert routes_called("POST", "/api/agents/handle-1/token", {"handle": "handle-1"}) == []
