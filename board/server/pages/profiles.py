"""Profiles on a page: how the fleet launches a bot, made and changed by the human.

A profile is written through the registry service the API calls, so the same
rules hold: only a human writes one, in a workspace that is not archived, with
skills that exist. The form's inputs are named as the API's fields; lists are
typed as text (skills and watched channels separated by spaces or commas,
flags one per line) and :func:`form_body` turns them into the API's body.

A refused form is rendered again with what was typed and the error beside it;
the service wrote nothing. The edit form carries the version it was read at
(``base_version``), so saving over someone else's change is refused; the page
then shows what is saved now, and saving again, knowingly, replaces it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiohttp import web

from ..errors import BoardError, VersionConflict
from ..services import budgets, registry, workspaces
from ..validation import parse_body
from .board import all_workspaces
from .routing import PageCall, PageRoute, redirect

SHOWN = 100  # profiles one page lists; "More" reads on after the last
SKILLS_NAMED = 100  # the board's skills named beside the skills field
#: The fields a refused save shows as saved now, beside what was typed.
COMPARED = (
    "harness",
    "model",
    "repo",
    "skills",
    "watch",
    "mcp",
    "flags",
    "command_template",
    "command_session_field",
    "rotate_after_turns",
    "rotate_after_tokens",
    *budgets.LIMIT_COLUMNS,
    *registry.WORKTREE_FIELDS,
    "identity",
)
ROTATIONS = ("rotate_after_turns", "rotate_after_tokens")
#: Number fields whose empty box clears the saved value (sent as 0).
CLEARED_BY_EMPTY = (*ROTATIONS, *budgets.LIMIT_COLUMNS)


def _number(text: str) -> int | float | str:
    """A number typed in a box: 0 when empty; text that is not a number is passed on to be refused."""
    text = text.strip()
    if not text:
        return 0
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def _words(text: str) -> list[str]:
    """Names separated by spaces or commas; a channel may be written as #lobby."""
    return [word.removeprefix("#") for word in text.replace(",", " ").split()]


def _checked(text: str) -> bool | str:
    """A checkbox: sent as "true" (or a browser's "on") when ticked; anything else is refused."""
    return {"true": True, "on": True, "false": False, "": False}.get(text, text)


def form_body(form: Mapping[str, str]) -> dict[str, Any]:
    """The API body a profile form stands for: the whole profile.

    An empty text field is empty (it clears the value), an unticked box sends
    nothing and means off; fields the API does not know are passed on, to be
    refused like the API refuses them.
    """
    body: dict[str, Any] = {"mcp": False, "worktrees": False}
    for name, text in form.items():
        if name == "csrf" or (name == "base_version" and not text):
            continue
        text = text.replace("\r\n", "\n")  # a browser's line ends
        if name in ("skills", "watch"):
            body[name] = _words(text)
        elif name == "flags":  # a flag may hold a space or a comma: one per line
            body[name] = [line.strip() for line in text.splitlines() if line.strip()]
        elif name in ("mcp", "worktrees"):
            body[name] = _checked(text)
        elif name == "max_worktrees":  # empty: the default
            body[name] = _number(text) or registry.DEFAULT_MAX_WORKTREES
        elif name == "base_version":
            body[name] = int(text) if text.isdigit() else text
        elif name in CLEARED_BY_EMPTY:  # empty: never rotate, no limit (0 clears a saved one)
            body[name] = _number(text)
        else:
            body[name] = text
    return body


def form_values(profile: dict[str, Any]) -> dict[str, str]:
    """A saved profile as its form shows it: every field as the text typed into it."""
    return {
        "name": profile["name"],
        "workspace": profile["workspace"],
        "harness": profile["harness"],
        "model": profile["model"],
        "repo": profile["repo"],
        "command_template": profile["command_template"],
        "command_session_field": profile["command_session_field"],
        **{key: "" if profile[key] is None else str(profile[key]) for key in CLEARED_BY_EMPTY},
        "skills": " ".join(profile["skills"]),
        "mcp": "true" if profile["mcp"] else "",
        "worktrees": "true" if profile["worktrees"] else "",
        "max_worktrees": str(profile["max_worktrees"]),
        "base_branch": profile["base_branch"] or "",
        "flags": "\n".join(profile["flags"]),
        "watch": " ".join(profile["watch"]),
        "identity": profile["identity"],
        "base_version": str(profile["version"]),
    }


def differences(saved: dict[str, str], typed: Mapping[str, str]) -> list[tuple[str, str, bool]]:
    """Each compared field as saved now, and whether what was typed differs from it."""
    old, new = form_body(saved), form_body(typed)
    return [(name, saved[name], old.get(name) != new.get(name)) for name in COMPARED]


async def _skill_names(call: PageCall) -> list[str]:
    listed = await registry.list_skills(call.ctx, call.p, registry.SkillList(limit=SKILLS_NAMED))
    return [s["name"] for s in listed["skills"]]


async def _listing(
    call: PageCall, values: Mapping[str, str], error: BoardError | None = None
) -> web.Response:
    q = call.query(registry.ProfileList)
    if "limit" not in call.request.query:
        q.limit = SHOWN
    listed = await registry.list_profiles(call.ctx, call.p, q)
    writable = [w for w in await all_workspaces(call.ctx, call.p) if not w["archived"]]
    return call.render(
        "profiles.html",
        status=error.status if error else 200,
        profiles=listed["profiles"],
        more=listed["has_more"],
        filtered=q.workspace,
        workspaces=writable,
        v={"workspace": q.workspace or workspaces.first_to_show(writable), **values},
        harnesses=registry.HARNESSES,
        skills=await _skill_names(call),
        error=error,
    )


async def index(call: PageCall) -> web.StreamResponse:
    return await _listing(call, {})


async def create(call: PageCall) -> web.StreamResponse:
    try:
        req = parse_body(registry.NewProfile, form_body(call.form))
        made = await registry.create_profile(call.ctx, call.p, req)
    except BoardError as exc:
        return await _listing(call, call.form, exc)
    return redirect(f"/fleet/profiles/{made['name']}")


async def _editing(
    call: PageCall,
    profile: dict[str, Any],
    values: Mapping[str, str],
    error: BoardError | None = None,
) -> web.Response:
    archived = {w["slug"] for w in await all_workspaces(call.ctx, call.p) if w["archived"]}
    return call.render(
        "profile.html",
        status=error.status if error else 200,
        profile=profile,
        archived=profile["workspace"] in archived,
        v={**values, "name": profile["name"], "workspace": profile["workspace"]},
        harnesses=registry.HARNESSES,
        skills=await _skill_names(call),
        error=error,
        # After a refused save over another change: what is saved now, to merge with.
        saved=differences(form_values(profile), values) if isinstance(error, VersionConflict) else None,
    )


async def edit(call: PageCall) -> web.StreamResponse:
    profile = await registry.get_profile(call.ctx, call.p, call.arg("name"))
    return await _editing(call, profile, form_values(profile))


async def save(call: PageCall) -> web.StreamResponse:
    name = call.arg("name")
    try:
        req = parse_body(registry.ProfileUpdate, form_body(call.form))
        await registry.update_profile(call.ctx, call.p, name, req)
    except BoardError as exc:
        profile = await registry.get_profile(call.ctx, call.p, name)
        typed = dict(call.form)
        if isinstance(exc, VersionConflict):
            typed["base_version"] = str(profile["version"])  # a second save, knowingly, replaces it
        return await _editing(call, profile, typed, exc)
    return redirect(f"/fleet/profiles/{name}")


ROUTES = [
    PageRoute("GET", "/fleet/profiles", index, "Profiles: how bots are launched, and a form for a new one."),
    PageRoute("POST", "/fleet/profiles", create, "Create a profile."),
    PageRoute("GET", "/fleet/profiles/{name}", edit, "One profile's form, filled in, with its bots."),
    PageRoute("POST", "/fleet/profiles/{name}", save, "Save a profile, refused over a newer version."),
]
