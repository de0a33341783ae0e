"""Route decisions for the pages: a signed-in human gets the page; nobody else gets data.

``PAGE_DECISIONS`` maps (method, canonical path) to what a signed-in human
gets for a representative call (``path`` names the facts filling the path's
parameters, ``form`` the fields of a POST). Every other caller (no session, a
bot's, an admin bot's or another workspace's bot's token, a signed-out or an
expired session) is sent to ``/login`` with no page of data, except on the
pages marked ``public``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class PageCase:
    human: int
    path: dict[str, str] = field(default_factory=dict)
    form: dict[str, str] | None = None  # a POST's fields (the CSRF token is added)
    query: str = ""
    public: bool = False  # answered without a session (the sign-in page, the static files)
    anon: int = 303


PAGE_DECISIONS: dict[tuple[str, str], PageCase] = {
    ("GET", "/login"): PageCase(303, public=True, anon=200),  # a signed-in human goes on to the board
    ("POST", "/login"): PageCase(401, form={"token": "bl_unknown"}, public=True, anon=401),
    ("POST", "/logout"): PageCase(303, form={}),
    ("GET", "/settings"): PageCase(200),
    ("POST", "/settings/tokens"): PageCase(200, form={}),
    ("POST", "/settings/tokens/{id}/revoke"): PageCase(303, path={"id": "token_id"}, form={}),
    ("POST", "/settings/password"): PageCase(200, form={"password": "a long enough secret"}),
    ("POST", "/settings/notifications"): PageCase(303, form={"mention": "on"}),
    ("POST", "/settings/destinations"): PageCase(
        303, form={"name": "hook", "kind": "ntfy", "url": "http://127.0.0.1:9/t"}
    ),
    ("GET", "/settings/destinations/{id}"): PageCase(200, path={"id": "destination"}),
    ("POST", "/settings/destinations/{id}"): PageCase(303, path={"id": "destination"}, form={"name": "n"}),
    ("POST", "/settings/destinations/{id}/kinds"): PageCase(
        303, path={"id": "destination"}, form={"mention": "on"}
    ),
    ("POST", "/settings/destinations/{id}/test"): PageCase(303, path={"id": "destination"}, form={}),
    ("POST", "/settings/destinations/{id}/remove"): PageCase(303, path={"id": "destination"}, form={}),
    ("POST", "/settings/quiet-hours"): PageCase(
        303, form={"start": "22:00", "end": "07:00", "timezone": "UTC"}
    ),
    ("POST", "/settings/quiet-hours/clear"): PageCase(303, form={}),
    ("GET", "/"): PageCase(303, query="?workspace=proj"),
    ("POST", "/"): PageCase(303, form={"workspace": "proj", "conversation": "conversation_id", "body": "hi"}),
    ("GET", "/c/{slug}"): PageCase(200, path={"slug": "lobby"}, query="?workspace=proj"),
    ("POST", "/c/{slug}"): PageCase(303, path={"slug": "lobby"}, form={"workspace": "proj", "body": "hi"}),
    ("GET", "/t/{id}"): PageCase(200, path={"id": "root"}),
    ("POST", "/t/{id}"): PageCase(303, path={"id": "root"}, form={"body": "a reply"}),
    ("POST", "/t/{id}/{action}"): PageCase(303, path={"id": "claimed", "action": "release"}, form={}),
    ("GET", "/events"): PageCase(200, query="?workspace=proj&since=0"),
    ("GET", "/agents"): PageCase(200),
    ("GET", "/a/{handle}"): PageCase(200, path={"handle": "pb"}),
    ("POST", "/a/{handle}/budget"): PageCase(303, path={"handle": "pb"}, form={"budget_wakes": "5"}),
    ("GET", "/search"): PageCase(200, query="?q=hello"),
    ("GET", "/inbox"): PageCase(200),
    ("POST", "/inbox/mark"): PageCase(303, form={"all": "true", "state": "seen"}),
    ("GET", "/audit"): PageCase(200, query="?actor=alice&from=2026-01-01T00:00:00Z"),
    ("GET", "/onboard"): PageCase(200),
    ("GET", "/intake"): PageCase(200),
    ("POST", "/intake/sources"): PageCase(
        303, form={"name": "gh-pages", "forge": "github", "secret": "a-secret-of-sixteen-plus"}
    ),
    ("POST", "/intake/sources/{name}/mappings"): PageCase(
        404, path={"name": "nope"}, form={"repository": "acme/app", "workspace": "proj", "channel": "issues"}
    ),
    ("POST", "/intake/sources/{name}/mappings/remove"): PageCase(
        404, path={"name": "nope"}, form={"repository": "acme/app"}
    ),
    ("POST", "/intake/sources/{name}/delete"): PageCase(422, path={"name": "nope"}, form={"confirm": ""}),
    ("GET", "/costs"): PageCase(200, query="?workspace=proj&days=90"),
    ("GET", "/fleet"): PageCase(200),
    ("POST", "/fleet/machines"): PageCase(200, form={"machine_name": "box2"}),
    ("POST", "/fleet/bots"): PageCase(404, form={"machine": "box1", "profile": "nope", "handle": "newbot"}),
    ("POST", "/fleet/bots/{handle}/{action}"): PageCase(
        404, path={"handle": "pb", "action": "stop"}, form={}
    ),
    ("GET", "/fleet/bots/{handle}"): PageCase(404, path={"handle": "pb"}),
    ("POST", "/fleet/bots/{handle}/worktrees/{id}/remove"): PageCase(
        404, path={"handle": "pb", "id": "root"}, form={}
    ),
    ("GET", "/fleet/machines/{name}/remove"): PageCase(200, path={"name": "box1"}),
    ("POST", "/fleet/machines/{name}/remove"): PageCase(303, path={"name": "box1"}, form={}),
    ("GET", "/fleet/events"): PageCase(200),
    ("GET", "/fleet/profiles"): PageCase(200),
    ("POST", "/fleet/profiles"): PageCase(
        303, form={"name": "fresh-dev", "workspace": "proj", "harness": "claude"}
    ),
    ("GET", "/fleet/profiles/{name}"): PageCase(200, path={"name": "proj-dev"}),
    ("POST", "/fleet/profiles/{name}"): PageCase(
        303, path={"name": "proj-dev"}, form={"base_version": "1", "harness": "codex"}
    ),
    ("GET", "/kb"): PageCase(200, query="?workspace=proj"),
    ("GET", "/kb/review"): PageCase(200),
    ("POST", "/kb/review"): PageCase(
        303, form={"workspace": "proj", "path": "notes.md", "decision": "approve", "revision": "1"}
    ),
    ("GET", "/kb/{slug}/{path}"): PageCase(
        200, path={"slug": "proj", "path": "notes.md"}, query="?from=1&to=1"
    ),
    ("POST", "/kb/{slug}/{path}/{action}"): PageCase(
        303,
        path={"slug": "proj", "path": "notes.md", "action": "dispute"},
        form={"workspace": "proj", "reason": "it is wrong"},
    ),
    ("GET", "/routines"): PageCase(200),
    ("POST", "/routines/{name}/versions/{version}/{action}"): PageCase(
        303, path={"name": "nightly", "version": "1", "action": "approve"}, form={"note": "fine"}
    ),
    ("POST", "/routines/{name}/{action}"): PageCase(
        303, path={"name": "nightly", "action": "pause"}, form={}
    ),
    ("GET", "/workspaces"): PageCase(200),
    ("POST", "/workspaces"): PageCase(303, form={"slug": "fresh", "name": "Fresh"}),
    ("POST", "/workspaces/{slug}/{action}"): PageCase(
        200, path={"slug": "proj", "action": "invite"}, form={"uses": "2"}
    ),
    ("GET", "/static"): PageCase(200, path={}, query="/app.css", public=True, anon=200),
}
