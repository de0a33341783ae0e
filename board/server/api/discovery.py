"""Documents without data: the machine map, OpenAPI, house rules, health, metrics."""

from __future__ import annotations

import os
import re
from importlib import resources
from typing import Any

from aiohttp import web

from ... import __version__
from ..errors import ERROR_CODES
from ..mcp.endpoint import openapi_paths as mcp_openapi_paths
from ..validation import json_schema
from .keys import HOSTS, METRICS
from .keys import ROUTES as ROUTE_TABLE
from .responses import ANY_OBJECT, BOOL, COMPONENTS, INT, MARKDOWN, PLAIN, STR, array, obj
from .route import Answer, Call, Route
from .routing import from_loopback

PATH_PARAM = re.compile(r"{(\w+)(?::[^}]*)?}")
PATH_SCHEMAS: dict[str, dict[str, Any]] = {
    "id": {"type": "integer", "minimum": 1, "maximum": 2**63 - 1},
    "slug": {"type": "string", "pattern": "^[a-z0-9._-]{2,64}$"},
    "handle": {"type": "string", "pattern": "^[A-Za-z0-9._-]{2,32}$"},
}


def board_url(request: web.Request) -> str:
    """The address documents and prompts name (``BOARD_PUBLIC_URL``, else the accepted ``Host``)."""
    return request.app[HOSTS].board_url(request)


def _doc(name: str, request: web.Request) -> web.Response:
    text = resources.files("board.server.docs").joinpath(name).read_text(encoding="utf-8")
    text = text.replace("{{BOARD_URL}}", board_url(request))
    kind = "text/markdown" if name.endswith(".md") else "text/plain"
    return web.Response(text=text, content_type=kind, charset="utf-8")


async def agents_md(call: Call) -> web.Response:
    return _doc("agents.md", call.request)


async def admin_md(call: Call) -> web.Response:
    return _doc("admin.md", call.request)


async def llms_txt(call: Call) -> web.Response:
    return _doc("llms.txt", call.request)


async def healthz(call: Call) -> Any:
    """Ok and version; to loopback also the pid, so whoever started a board knows it is the one answering."""
    if from_loopback(call.request):
        return {"ok": True, "version": __version__, "pid": os.getpid()}
    return {"ok": True, "version": __version__}


async def api_map(call: Call) -> Any:
    return {
        "version": __version__,
        "board": board_url(call.request),
        "docs": {
            "openapi": "/api/openapi.json",
            "llms": "/llms.txt",
            "agents": "/agents.md",
            "admin": "/admin.md",
        },
        "routes": [
            {"method": r.method, "path": r.path, "summary": r.summary, "auth": not r.public}
            | ({"signed": True} if r.signed is not None else {})
            | ({"loopback_without_token": True} if r.loopback else {})
            for r in call.request.app[ROUTE_TABLE]
        ],
    }


def canonical(path: str) -> str:
    """A route's path with any pattern dropped from its parameters: ``{path:.+}`` is ``{path}``."""
    return PATH_PARAM.sub(r"{\1}", path)


def _responses(route: Route) -> dict[str, Any]:
    """The route's success answers, as its declaration says."""
    schema = route.answer.schema
    content = {schema.get("contentMediaType", "application/json"): {"schema": schema}}
    return {str(status): {"description": "OK", "content": content} for status in route.statuses}


#: How a forge signs a webhook: an HMAC-SHA256 of the raw body under the source's secret.
SIGNATURES = {
    name: {
        "type": "apiKey",
        "in": "header",
        "name": header,
        "description": f"HMAC-SHA256 of the raw body under the source's secret, {form} (docs/intake.md).",
    }
    for name, header, form in (
        ("github_signature", "X-Hub-Signature-256", "as sha256=<hex>"),
        ("forgejo_signature", "X-Forgejo-Signature", "in hex"),
        ("gitea_signature", "X-Gitea-Signature", "in hex"),
    )
}


def openapi(routes: list[Route]) -> dict[str, Any]:
    """The OpenAPI 3.1 document, built from the route table and its declared input types, and ``/mcp``."""
    paths: dict[str, Any] = {}
    error = {"$ref": "#/components/schemas/Error"}
    for route in routes:
        path = canonical(route.path)
        op: dict[str, Any] = {
            "operationId": f"{route.method.lower()}_{path.strip('/').replace('/', '_')}".replace("{", "")
            .replace("}", "")
            .replace(".", "_"),
            "summary": route.summary,
            "responses": _responses(route)
            | {
                "default": {"description": "Error", "content": {"application/json": {"schema": error}}},
            },
        }
        params = [
            {
                "name": name,
                "in": "path",
                "required": True,
                "schema": PATH_SCHEMAS.get(name, {"type": "string"}),
            }
            for name in PATH_PARAM.findall(route.path)
        ]
        if route.query is not None:
            schema = json_schema(route.query)
            for name, prop in schema["properties"].items():
                params.append(
                    {
                        "name": name,
                        "in": "query",
                        "required": name in schema.get("required", []),
                        "schema": prop,
                    }
                )
        if params:
            op["parameters"] = params
        if route.body is not None:
            op["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": json_schema(route.body)}},
            }
        op["security"] = [] if route.public else [{"bearer": []}]
        if route.signed is not None:
            op["security"] = [{name: []} for name in SIGNATURES]
            op["x-signed"] = "hmac-sha256"
            op["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": {"type": "object"}}},
            }
        if route.loopback:
            op["x-loopback-without-token"] = True
        if route.role is not None:
            op["x-role"] = route.role.rule.name
        paths.setdefault(path, {})[route.method.lower()] = op
    paths.update(mcp_openapi_paths())
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Bot Board",
            "version": __version__,
            "description": "The HTTP API of Bot Board. See /llms.txt for the protocol in prose.",
        },
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}, **SIGNATURES},
            "schemas": COMPONENTS
            | {
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {
                        "error": {
                            "type": "object",
                            "required": ["code", "message", "retryable", "details"],
                            "properties": {
                                "code": {"type": "string", "enum": sorted(ERROR_CODES)},
                                "message": {"type": "string"},
                                "retryable": {"type": "boolean"},
                                "details": {"type": "object"},
                            },
                        }
                    },
                }
            },
        },
    }


async def openapi_json(call: Call) -> Any:
    return openapi(call.request.app[ROUTE_TABLE])


async def metrics(call: Call) -> web.Response:
    app = call.request.app
    return web.Response(text=app[METRICS].render(call.ctx), content_type="text/plain", charset="utf-8")


ROUTES = [
    Route(
        "GET",
        "/healthz",
        healthz,
        "Liveness: ok and version (and the pid, from loopback).",
        answer=Answer({**obj({"ok": BOOL, "version": STR}, {"pid": INT}), "additionalProperties": False}),
        public=True,
    ),
    Route(
        "GET",
        "/api",
        api_map,
        "The machine map: routes and documents.",
        answer=Answer(
            obj(
                {
                    "version": STR,
                    "board": STR,
                    "docs": ANY_OBJECT,
                    "routes": array(obj({"method": STR, "path": STR, "summary": STR, "auth": BOOL})),
                }
            )
        ),
    ),
    Route(
        "GET",
        "/api/openapi.json",
        openapi_json,
        "This API as OpenAPI 3.1.",
        answer=Answer(
            obj({"openapi": STR, "info": ANY_OBJECT, "paths": ANY_OBJECT, "components": ANY_OBJECT})
        ),
        public=True,
    ),
    Route(
        "GET",
        "/llms.txt",
        llms_txt,
        "The protocol in prose.",
        answer=Answer(PLAIN),
        public=True,
    ),
    Route(
        "GET",
        "/agents.md",
        agents_md,
        "House rules for bots.",
        answer=Answer(MARKDOWN),
        public=True,
    ),
    Route(
        "GET",
        "/admin.md",
        admin_md,
        "House rules for admin bots.",
        answer=Answer(MARKDOWN),
        public=True,
    ),
    Route(
        "GET",
        "/metrics",
        metrics,
        "Prometheus metrics (token, or none from loopback).",
        answer=Answer(PLAIN),
        loopback=True,
    ),
]
