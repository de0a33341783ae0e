"""Routines for the human: schedules in words, pending versions diffed against the approved one, decisions.

Every decision is a CSRF-protected form calling the routines service the API
calls; the page follows the routines' changes over the live stream and reads
itself again when one arrives.
"""

from __future__ import annotations

import difflib
from typing import Any

from aiohttp import web

from routines import schedule as schedules

from ..errors import InvalidArgument
from ..services import routines, workspaces
from .board import all_workspaces
from .routing import PageCall, PageRoute, redirect

RUNS_SHOWN = 10
#: The fields shown side by side; the prompt is shown as a line diff below them.
FIELDS = ("schedule", "timezone", "bot", "max_run_seconds", "grace_seconds", "quiet_hours")


def version_diff(pending: dict[str, Any], approved: dict[str, Any] | None) -> dict[str, Any]:
    """What a pending version changes: each field's old and new value, and the prompt's line diff."""
    old = approved or {}
    fields = [
        {"name": name, "old": old.get(name), "new": pending[name], "changed": old.get(name) != pending[name]}
        for name in FIELDS
    ]
    lines = difflib.unified_diff(
        (old.get("prompt") or "").splitlines(),
        pending["prompt"].splitlines(),
        fromfile=f"version {old['version']}" if old else "nothing approved",
        tofile=f"version {pending['version']}",
        lineterm="",
    )
    return {"fields": fields, "prompt": list(lines)}


def _words(version: dict[str, Any]) -> str:
    return schedules.parse(version["schedule"], version["timezone"]).words()


async def _routine_view(call: PageCall, summary: dict[str, Any]) -> dict[str, Any]:
    """The card: its runs, its pending versions diffed, and the newest version when it was
    rejected (the decision and its note, which otherwise only the routine's thread tells)."""
    name = summary["name"]
    runs = await routines.list_runs(call.ctx, call.p, name, routines.RunList(limit=RUNS_SHOWN))
    versions = (await routines.get_routine(call.ctx, call.p, name))["versions"]
    newest = max(versions, key=lambda v: v["version"])
    pending = [
        v | {"schedule_words": _words(v), "diff": version_diff(v, summary["approved"])}
        for v in versions
        if v["state"] == "pending"
    ]
    rejected = newest if newest["state"] == "rejected" else None
    return summary | {"runs": runs["runs"], "pending_versions": pending, "rejected": rejected}


async def index(call: PageCall) -> web.StreamResponse:
    listed = await routines.list_routines(call.ctx, call.p, call.query(routines.RoutineList))
    views = [await _routine_view(call, r) for r in listed["routines"]]
    # The stream of a workspace the viewer reads carries the routines' changes (follow=routines).
    live = workspaces.first_to_show(await all_workspaces(call.ctx, call.p))
    return call.render("routines.html", routines=views, live=live)


async def decide(call: PageCall) -> web.StreamResponse:
    """Approve or reject a pending version (a rejection needs its note)."""
    name, number, action = call.arg("name"), call.int_arg("version"), call.arg("action")
    if action == "approve":
        await routines.approve(call.ctx, call.p, name, number, call.parsed_form(routines.Decision))
    elif action == "reject":
        await routines.reject(call.ctx, call.p, name, number, call.parsed_form(routines.Rejection))
    else:
        raise InvalidArgument(f"Unknown decision {action!r}.")
    return redirect(f"/routines#routine-{name}")


async def act(call: PageCall) -> web.StreamResponse:
    """Pause, resume or run a routine now."""
    name, action = call.arg("name"), call.arg("action")
    if action == "pause":
        await routines.pause(call.ctx, call.p, name)
    elif action == "resume":
        await routines.resume(call.ctx, call.p, name)
    elif action == "run-now":
        await routines.run_now(call.ctx, call.p, name)
    else:
        raise InvalidArgument(f"Unknown action {action!r}.")
    return redirect(f"/routines#routine-{name}")


ROUTES = [
    PageRoute("GET", "/routines", index, "Routines: schedules, pending versions diffed, a rejection, runs."),
    PageRoute(
        "POST",
        "/routines/{name}/versions/{version}/{action:approve|reject}",
        decide,
        "Approve or reject a pending version, with a note.",
    ),
    PageRoute(
        "POST", "/routines/{name}/{action:pause|resume|run-now}", act, "Pause, resume or run a routine now."
    ),
]
