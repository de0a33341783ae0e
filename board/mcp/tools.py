"""The board's MCP tools: a few tools, each a set of actions, each action one API route.

One list serves both transports: ``board mcp`` (stdio, calling the board over
HTTP through :mod:`board.client`) and ``/mcp`` on the board (calling the route
table's handlers in-process). An action names its route and where each
argument goes (the path, the query string or the body); an :class:`Executor`
carries the call. Lists default to the compact view and a smaller byte cap
than the API's, so a tool result costs a bot little context. A refusal comes
back as a tool error holding the API's error envelope: its code and its advice.

Every word here is paid for in every session of every bot that lists the
tools, so descriptions are short and each argument is described once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote

from ..client import BoardAPIError, encode_params

#: The byte cap of a list a tool answers, unless the call asks for less.
RESULT_BYTES = 12_000


@dataclass(frozen=True)
class Op:
    """One API call: the route as the route table declares it, and its arguments."""

    method: str
    route: str
    path: Mapping[str, str] = field(default_factory=dict)
    query: Mapping[str, str] = field(default_factory=dict)
    body: Mapping[str, Any] | None = None
    #: The caller's name for this call: sent again, it takes effect once (a write only).
    request_id: str | None = None

    def url_path(self) -> str:
        """The route with its path arguments filled in, for a call over HTTP.

        Each argument is quoted whole, '/' included: a '/' or '..' left bare would be read (and
        resolved) as the URL's own, and the call would reach another route than its action's.
        The board decodes it back, so the route parses the argument as ``/mcp`` hands it over.
        """
        return PLACEHOLDER.sub(lambda m: quote(self.path[m.group(1)], safe=""), self.route)

    def request_path(self) -> str:
        """The path as the board decodes it from :meth:`url_path`: what a request_id's
        fingerprint holds, so a retry matches across ``/mcp`` and the API."""
        return PLACEHOLDER.sub(lambda m: self.path[m.group(1)], self.route)


PLACEHOLDER = re.compile(r"\{(\w+)(?::[^}]*)?\}")


class Executor(Protocol):
    """Carries an :class:`Op` to the board; raises :class:`BoardAPIError` on a refusal."""

    async def run(self, op: Op) -> Any: ...

    async def handle(self) -> str:
        """The caller's own handle (a resource's route names it)."""
        ...


@dataclass(frozen=True)
class Action:
    method: str
    route: str
    path: tuple[str, ...] = ()
    query: tuple[str, ...] = ()
    body: tuple[str, ...] = ()
    #: Query values sent unless the call gives its own.
    defaults: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    actions: Mapping[str, Action]

    @property
    def args(self) -> list[str]:
        names: dict[str, None] = {}
        for action in self.actions.values():
            names.update(dict.fromkeys(action.path + action.query + action.body))
        return list(names)

    @property
    def writes(self) -> bool:
        return any(action.method in WRITES for action in self.actions.values())

    def input_schema(self) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        required = []
        if len(self.actions) > 1:
            properties["action"] = {"enum": list(self.actions)}
            required.append("action")
        properties.update({name: ARGS[name] for name in self.args})
        if self.writes:
            properties["request_id"] = ARGS_REQUEST_ID
        return {"type": "object", "properties": properties, "required": required}

    def op(self, arguments: Mapping[str, Any]) -> Op:
        """The API call these arguments make; INVALID_ARGUMENT names what to change."""
        args = dict(arguments)
        name = args.pop("action", None) if len(self.actions) > 1 else next(iter(self.actions))
        action = self.actions.get(name) if isinstance(name, str) else None
        if action is None:
            raise _invalid(f"{self.name} takes action one of {', '.join(self.actions)}.")
        writes = action.method in WRITES
        rid = args.pop("request_id", None) if writes else None
        unknown = sorted(set(args) - set(action.path + action.query + action.body))
        # 'claim (action claim)', or 'post': 'claim claim' and 'post post' read as a stutter.
        what = f"{self.name} (action {name})" if len(self.actions) > 1 else self.name
        if unknown:
            raise _invalid(
                f"{what} does not take {', '.join(unknown)}; it takes "
                f"{', '.join(action.path + action.query + action.body) or 'nothing more'}."
            )
        missing = [p for p in action.path if args.get(p) in (None, "")]
        if missing:
            raise _invalid(f"{what} needs {', '.join(missing)}.")
        query = {**action.defaults, **{k: args[k] for k in action.query if k in args}}
        body = {k: args[k] for k in action.body if args.get(k) is not None}
        return Op(
            action.method,
            action.route,
            path={p: str(args[p]) for p in action.path},
            query=encode_params(query),
            body=body if writes else None,
            request_id=None if rid is None else str(rid),
        )


WRITES = ("POST", "PUT", "PATCH", "DELETE")


def _invalid(message: str) -> BoardAPIError:
    return BoardAPIError(422, "INVALID_ARGUMENT", message)


def _arg(kind: str, description: str, **more: Any) -> dict[str, Any]:
    return {"type": kind, "description": description, **more}


ARGS: dict[str, dict[str, Any]] = {
    "id": _arg("integer", "Message or thread id."),
    "since": _arg("integer", "Only after this id; keep the highest id seen."),
    "before": _arg("integer", "Only before this id."),
    "after": _arg("string", "Path to go on after (next_since)."),
    "offset": _arg("integer", "Ranked results to skip (next_offset; a search sends next_before too)."),
    "limit": _arg("integer", "At most this many."),
    "wait": _arg("integer", "Seconds (0-60) to wait for something new."),
    "ack": _arg("boolean", "Mark what is returned seen."),
    "channel": _arg("string", "Channel slug."),
    "thread": _arg("integer", "Thread id (its root's)."),
    "author": _arg("string", "Author handle."),
    "tag": _arg("string", "Tag."),
    "body": _arg("string", "Markdown text."),
    "reply_to": _arg("integer", "Reply in this message's thread."),
    "conversation": _arg("integer", "Conversation id, for a new root there."),
    "tags": _arg("array", "Up to 10 tags.", items={"type": "string"}),
    "note": _arg("string", "What you will do / why."),
    "lease_minutes": _arg("integer", "Claim lease (default 60)."),
    "reason": _arg("string", "Why (required for knowledge writes)."),
    "to": _arg("string", "Handle to hand the claim to."),
    "summary": _arg("string", "What was done."),
    "q": _arg("string", "Words to find; word* for a prefix."),
    "path": _arg("string", "Document path, e.g. decisions/db.md."),
    "revision": _arg("integer", "That revision, not the current one."),
    "lines": _arg("string", "a-b: only these lines."),
    "section": _arg("string", "Only the section under this heading."),
    "prefix": _arg("string", "Paths starting with this."),
    "status": _arg("string", "proposed, settled, disputed, superseded."),
    "base_revision": _arg("integer", "The revision you read (0 creates)."),
    "diff": _arg("string", "Unified diff against base_revision."),
    "sources": _arg(
        "array",
        'References: {"message": id}, {"thread": id}, {"doc": path, "revision": n}, {"url": u}.',
        items={"type": "object"},
    ),
    "valid_to": _arg("string", "Holds until (RFC 3339)."),
    "override_tombstone": _arg("boolean", "Write a deleted path again (say why)."),
    "workspace": _arg("string", "Workspace slug (humans and admin bots)."),
}

ARGS_REQUEST_ID = _arg("string", "Your name for this write (1-128 of A-Za-z0-9_-): sent again, it acts once.")

COMPACT = {"view": "compact", "limit": 10, "max_bytes": RESULT_BYTES}
DOC = "/api/knowledge/{path:.+}"
CLAIM = ("id",)

TOOLS: list[Tool] = [
    Tool(
        "catch_up",
        "What needs you. me: identity, cursor, claims, mandatory reading. inbox: messages for you. "
        "wake: inbox plus watched channels. Compact rows; read a full one by id.",
        {
            "me": Action("GET", "/api/me"),
            "inbox": Action("GET", "/api/inbox", query=("since", "limit", "wait", "ack"), defaults=COMPACT),
            "wake": Action("GET", "/api/wake", query=("since", "limit", "wait"), defaults=COMPACT),
        },
    ),
    Tool(
        "read",
        "message: one message in full. thread: root, replies, claim. messages: a channel's or "
        "thread's messages, compact.",
        {
            "message": Action("GET", "/api/messages/{id}", path=("id",)),
            "thread": Action(
                "GET",
                "/api/threads/{id}",
                path=("id",),
                query=("since", "limit"),
                defaults={"limit": 50, "max_bytes": RESULT_BYTES},
            ),
            "messages": Action(
                "GET",
                "/api/messages",
                query=("channel", "thread", "since", "before", "author", "tag", "limit", "workspace"),
                defaults=COMPACT,
            ),
        },
    ),
    Tool(
        "post",
        "Post a reply (reply_to) or a new root (channel or conversation). @handle mentions.",
        {
            "post": Action(
                "POST",
                "/api/messages",
                body=("body", "reply_to", "channel", "conversation", "tags", "workspace"),
            )
        },
    ),
    Tool(
        "claim",
        "Own a thread before working on it. claim (note; CLAIMED: someone holds it, leave it), "
        "release (reason), handoff (to, note), done (summary). id is the thread's root.",
        {
            "claim": Action("POST", "/api/threads/{id}/claim", path=CLAIM, body=("note", "lease_minutes")),
            "release": Action("POST", "/api/threads/{id}/release", path=CLAIM, body=("reason",)),
            "handoff": Action("POST", "/api/threads/{id}/handoff", path=CLAIM, body=("to", "note")),
            "done": Action("POST", "/api/threads/{id}/done", path=CLAIM, body=("summary",)),
        },
    ),
    Tool(
        "search",
        "Full-text search of messages, ranked, with snippets.",
        {
            "search": Action(
                "GET",
                "/api/search",
                query=("q", "channel", "author", "before", "offset", "limit", "workspace"),
                defaults=COMPACT,
            )
        },
    ),
    Tool(
        "knowledge",
        "The workspace's knowledge base. read: a document. list: documents, or ranked by q. "
        "history: its revisions. write: a whole body on top of base_revision (0 creates). patch: a diff. "
        "delete: a tombstone with reason. dispute: say it is wrong. VERSION_CONFLICT: read again, "
        "merge, retry.",
        {
            "read": Action("GET", DOC, path=("path",), query=("revision", "lines", "section", "workspace")),
            "list": Action(
                "GET",
                "/api/knowledge",
                query=("q", "prefix", "status", "after", "offset", "limit", "workspace"),
                defaults={"limit": 20, "max_bytes": RESULT_BYTES},
            ),
            "history": Action(
                "GET",
                DOC + "/history",
                path=("path",),
                query=("before", "limit", "workspace"),
                defaults=COMPACT,
            ),
            "write": Action(
                "PUT",
                DOC,
                path=("path",),
                body=(
                    "body",
                    "base_revision",
                    "reason",
                    "sources",
                    "valid_to",
                    "override_tombstone",
                    "workspace",
                ),
            ),
            "patch": Action(
                "PATCH", DOC, path=("path",), body=("diff", "base_revision", "reason", "sources", "workspace")
            ),
            "delete": Action("DELETE", DOC, path=("path",), body=("base_revision", "reason", "workspace")),
            "dispute": Action(
                "POST", DOC + "/dispute", path=("path",), body=("reason", "sources", "workspace")
            ),
        },
    ),
]

TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}


@dataclass(frozen=True)
class Resource:
    uri: str
    name: str
    description: str
    mime_type: str
    action: Action


RESOURCES = [
    Resource(
        "board://agents.md",
        "agents.md",
        "The board's house rules for bots.",
        "text/markdown",
        Action("GET", "/agents.md"),
    ),
    Resource(
        "board://knowledge",
        "knowledge index",
        "The current documents of your workspace's knowledge base.",
        "application/json",
        Action("GET", "/api/knowledge", defaults={"limit": 50, "max_bytes": RESULT_BYTES}),
    ),
    Resource(
        "board://prompt",
        "prompt",
        "Your first-turn prompt as the board composes it: who you are, what to read, your skills.",
        "text/markdown",
        Action("GET", "/api/bots/{handle}/prompt", path=("handle",), defaults={"first": True, "mcp": True}),
    ),
]

RESOURCES_BY_URI = {resource.uri: resource for resource in RESOURCES}


async def call_tool(executor: Executor, name: str, arguments: Mapping[str, Any]) -> str:
    """The tool's answer as compact JSON; :class:`BoardAPIError` on a refusal."""
    tool = TOOLS_BY_NAME.get(name)
    if tool is None:
        raise BoardAPIError(404, "NOT_FOUND", f"No tool {name}; the tools are {', '.join(TOOLS_BY_NAME)}.")
    return render(await executor.run(tool.op(arguments)))


async def read_resource(executor: Executor, uri: str) -> str:
    resource = RESOURCES_BY_URI.get(uri)
    if resource is None:
        raise BoardAPIError(404, "NOT_FOUND", f"No resource {uri}.")
    action = resource.action
    path = {"handle": await executor.handle()} if "handle" in action.path else {}
    answer = await executor.run(
        Op(action.method, action.route, path=path, query=encode_params(action.defaults))
    )
    if isinstance(answer, dict) and "first_turn" in answer:
        return str(answer["first_turn"])
    return render(answer)


def render(answer: Any) -> str:
    if isinstance(answer, str):
        return answer
    return json.dumps(answer, ensure_ascii=False, separators=(",", ":"))


def error_text(exc: BoardAPIError) -> str:
    """The API's error envelope, as a refused tool call carries it."""
    error = {"code": exc.code, "message": exc.message, "retryable": exc.retryable, "details": exc.details}
    return render({"error": error})
