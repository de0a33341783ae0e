"""Who may call each registry route: the expected status per role, on populated data.

Roles: ``human`` (alice), ``bot`` (pb, in proj), ``admin_bot`` (ab, in admin),
``other_bot`` (ob, in another workspace), ``anon`` (no token). The data: a
skill ``review``, a profile ``proj-dev`` of proj that pb runs with, and a
message in proj mentioning pb; each call is the representative one that
``test_registry_scope.py`` makes. Paths are the templates exactly as registered.
"""

from __future__ import annotations

ROLES = ("human", "bot", "admin_bot", "other_bot", "anon")


def _decide(human: int, bot: int, admin_bot: int, other_bot: int) -> dict[str, int]:
    return {"human": human, "bot": bot, "admin_bot": admin_bot, "other_bot": other_bot, "anon": 401}


REGISTRY_DECISIONS: dict[tuple[str, str], dict[str, int]] = {
    # Skills belong to the whole board: everyone reads, humans and admin bots write.
    ("GET", "/api/skills"): _decide(200, 200, 200, 200),
    ("POST", "/api/skills"): _decide(201, 403, 201, 403),
    ("GET", "/api/skills/{name}"): _decide(200, 200, 200, 200),
    ("PUT", "/api/skills/{name}"): _decide(200, 403, 200, 403),
    # Profiles belong to a workspace: humans write; a bot of another workspace cannot see them.
    ("GET", "/api/profiles"): _decide(200, 200, 200, 200),
    ("POST", "/api/profiles"): _decide(201, 403, 403, 404),
    ("GET", "/api/profiles/{name}"): _decide(200, 200, 200, 404),
    ("PUT", "/api/profiles/{name}"): _decide(200, 403, 403, 404),
    # A bot's prompt: the bot itself, humans and admin bots; any other bot sees no such bot.
    ("GET", "/api/bots/{handle}/prompt"): _decide(200, 200, 200, 404),
}
