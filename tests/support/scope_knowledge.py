"""Route decisions for the knowledge routes: who gets what, on populated data.

``KNOWLEDGE_DECISIONS`` maps (method, path as the router registers it, which
is aiohttp's canonical form: ``{path:.+}`` becomes ``{path}``) to the HTTP
status each role gets for a representative call; ``route.resource.canonical``
of each route is its key. ``KNOWLEDGE_CASES`` holds the same decisions with
the call itself: ``prepare(world, facts)`` runs once on a fresh board, then
each role calls in ``ROLE_ORDER`` (refusals first) with ``body(role, facts)``
and ``params``. ``ROUTE_TEMPLATES`` maps each key to the template as written
in the route table.

Calls that succeed for several roles are built to succeed each time: writes
name the revision the previous role's write produced, and DELETE runs where
the review policy is ``all``, so each deletion is a proposal and the document
stays for the next role.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

ROLE_ORDER = ("anon", "other_bot", "admin_bot", "bot", "human")
# Base revision each succeeding role writes on, after prepare left the document at revision 1.
WRITE_BASE = {"anon": 1, "other_bot": 1, "admin_bot": 1, "bot": 2, "human": 3}

Prepare = Callable[[Any, dict[str, Any]], Awaitable[None]]


@dataclass
class KnowledgeCase:
    """One representative call of a route and what each role gets."""

    expect: dict[str, int]
    path: dict[str, str] = field(default_factory=dict)
    body: Callable[[str, dict[str, Any]], Any] | None = None
    params: dict[str, str] = field(default_factory=dict)
    prepare: Prepare | None = None


def scoped(status: int = 200) -> dict[str, int]:
    """The workspace's bot, admin bots and humans; NOT_FOUND to another workspace's bot."""
    return {"human": status, "bot": status, "admin_bot": status, "other_bot": 404, "anon": 401}


HUMANS_ON_PROJ = {"human": 200, "bot": 403, "admin_bot": 403, "other_bot": 404, "anon": 401}


async def documents(world: Any, facts: dict[str, Any]) -> None:
    """notes.md at revision 2 (with a history to diff), put.md and patch.md at revision 1."""
    await world.bot.put_document("notes.md", "# Notes\n\nfirst\n", 0, "start")
    await world.bot.put_document("notes.md", "# Notes\n\nsecond\n", 1, "more")
    await world.bot.put_document("put.md", "# Put\n", 0, "start")
    await world.bot.put_document("patch.md", "# Patch\n", 0, "start")
    await world.bot.create_channel("dev", refs=[{"path": "notes.md", "mandatory": True}])


async def with_dispute(world: Any, facts: dict[str, Any]) -> None:
    await documents(world, facts)
    await world.peer.dispute("notes.md", "is it right?")


async def with_proposal(world: Any, facts: dict[str, Any]) -> None:
    await documents(world, facts)
    await world.human.patch_workspace("proj", review="bots")
    await world.bot.put_document("notes.md", "# Notes\n\nproposed\n", 2, "proposal")


async def reviewed_deletes(world: Any, facts: dict[str, Any]) -> None:
    await documents(world, facts)
    await world.human.patch_workspace("proj", review="all")


def _routes(prefix: str, ws: dict[str, str]) -> dict[tuple[str, str], KnowledgeCase]:
    """Cases for one form: ``ws`` is what the bot form adds; the slug form names proj in its path."""
    doc = prefix + "/{path:.+}"
    notes = {"path": "notes.md"} | ({"slug": "proj"} if "{slug}" in prefix else {})

    def body(fields: dict[str, Any]) -> Callable[[str, dict[str, Any]], Any]:
        return lambda role, facts: fields | ws

    def on(path: str) -> dict[str, str]:
        return notes | {"path": path}

    return {
        ("GET", prefix): KnowledgeCase(scoped(), path=notes, params=ws, prepare=documents),
        ("GET", prefix + "/review"): KnowledgeCase(
            HUMANS_ON_PROJ, path=notes, params=ws, prepare=with_proposal
        ),
        ("GET", prefix + "/pack"): KnowledgeCase(
            scoped(), path=notes, params=ws | {"channel": "dev", "q": "notes"}, prepare=documents
        ),
        ("GET", prefix + "/stats"): KnowledgeCase(scoped(), path=notes, params=ws, prepare=documents),
        ("GET", doc + "/history"): KnowledgeCase(scoped(), path=notes, params=ws, prepare=documents),
        ("GET", doc + "/diff"): KnowledgeCase(
            scoped(), path=notes, params=ws | {"from": "1", "to": "2"}, prepare=documents
        ),
        ("POST", doc + "/dispute"): KnowledgeCase(
            scoped(201), path=notes, body=body({"reason": "looks wrong"}), prepare=documents
        ),
        ("POST", doc + "/resolve"): KnowledgeCase(
            scoped(), path=notes, body=body({"outcome": "dismissed", "note": "fine"}), prepare=with_dispute
        ),
        ("POST", doc + "/review"): KnowledgeCase(
            HUMANS_ON_PROJ, path=notes, body=body({"decision": "approve"}), prepare=with_proposal
        ),
        ("POST", doc + "/redact"): KnowledgeCase(
            HUMANS_ON_PROJ, path=notes, body=body({"revision": 1, "reason": "leak"}), prepare=documents
        ),
        ("GET", doc): KnowledgeCase(scoped(), path=notes, params=ws, prepare=documents),
        ("PUT", doc): KnowledgeCase(
            scoped(),
            path=on("put.md"),
            body=lambda role, facts: (
                {
                    "body": f"# Put\n\nby {role}\n",
                    "base_revision": WRITE_BASE[role],
                    "reason": "edit",
                }
                | ws
            ),
            prepare=documents,
        ),
        ("PATCH", doc): KnowledgeCase(
            scoped(),
            path=on("patch.md"),
            body=lambda role, facts: (
                {
                    "diff": f"@@ -0,0 +1 @@\n+{role}\n",
                    "base_revision": WRITE_BASE[role],
                    "reason": "edit",
                }
                | ws
            ),
            prepare=documents,
        ),
        ("DELETE", doc): KnowledgeCase(
            scoped(),
            path=on("put.md"),
            body=lambda role, facts: {"base_revision": WRITE_BASE[role], "reason": "obsolete"} | ws,
            prepare=reviewed_deletes,
        ),
    }


def canonical(template: str) -> str:
    """aiohttp's canonical form of a registered path: ``{path:.+}`` is ``{path}``."""
    return template.replace("{path:.+}", "{path}")


_CASES = _routes("/api/knowledge", {"workspace": "proj"}) | _routes("/api/workspaces/{slug}/knowledge", {})

KNOWLEDGE_CASES: dict[tuple[str, str], KnowledgeCase] = {
    (method, canonical(template)): case for (method, template), case in _CASES.items()
}
KNOWLEDGE_DECISIONS: dict[tuple[str, str], dict[str, int]] = {
    key: case.expect for key, case in KNOWLEDGE_CASES.items()
}
ROUTE_TEMPLATES: dict[tuple[str, str], str] = {
    (method, canonical(template)): template for method, template in _CASES
}
