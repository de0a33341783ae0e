"""Every answer the suite receives is checked against the route's schema in the OpenAPI document.

:class:`CheckedClient` is the client ``boardtest`` hands to tests: whatever a test asks,
a 2xx answer must use a documented status and match that status's schema, so the whole
suite exercises the published contract.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator

from board.client import BoardClient
from board.server.api.discovery import canonical, openapi
from board.server.api.table import all_routes
from board.server.mcp.endpoint import openapi_paths as mcp_openapi_paths


@cache
def _spec() -> dict[str, Any]:
    return openapi(all_routes())


@cache
def _routes() -> list[tuple[str, re.Pattern[str], str]]:
    """(method, path pattern, documented path), the most specific paths first."""
    found = []
    for route in all_routes():
        pattern = re.sub(r"{(\w+):([^}]*)}", r"(?:\2)", route.path)
        pattern = re.sub(r"{(\w+)}", r"[^/]+", pattern)
        found.append((route.path.count("{"), route.method, re.compile(pattern + "$"), canonical(route.path)))
    for path, operations in mcp_openapi_paths().items():
        found.extend((0, method.upper(), re.compile(re.escape(path) + "$"), path) for method in operations)
    found.sort(key=lambda item: item[0])
    return [(method, pattern, path) for _, method, pattern, path in found]


@cache
def _validator(method: str, path: str, status: int) -> Draft202012Validator:
    responses = _spec()["paths"][path][method.lower()]["responses"]
    documented = sorted(code for code in responses if code != "default")
    assert str(status) in responses, f"{method} {path} answered {status}; it documents {documented}"
    (content,) = responses[str(status)]["content"].values()
    return Draft202012Validator({"components": _spec()["components"], **content["schema"]})


def check_answer(method: str, url_path: str, status: int, data: Any) -> None:
    """Fail when a success answer is not what the OpenAPI document says the route answers."""
    path = url_path.split("?", 1)[0]
    for route_method, pattern, documented in _routes():
        if route_method == method and pattern.match(path):
            errors = sorted(_validator(method, documented, status).iter_errors(data), key=str)
            assert not errors, f"{method} {path} ({status}) breaks its schema: " + "; ".join(
                f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message[:300]}" for e in errors[:5]
            )
            return
    raise AssertionError(f"{method} {path} answered {status} but matches no documented route")


class CheckedClient(BoardClient):
    """A :class:`BoardClient` that checks every success answer against the contract."""

    async def call(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        status, data = await super().call(method, path, **kwargs)
        check_answer(method, path, status, data)
        return status, data
