"""Routes for routines: proposals, a human's decisions, and the runner's steps."""

from __future__ import annotations

from typing import Any

from ..services import actions, routines
from .responses import page, ref
from .route import Answer, Call, Route


async def listing(call: Call) -> Any:
    return await routines.list_routines(call.ctx, call.p, call.query)


async def propose(call: Call) -> tuple[int, Any]:
    return await routines.propose(call.ctx, call.p, call.body)


async def get(call: Call) -> Any:
    return await routines.get_routine(call.ctx, call.p, call.arg("name"))


async def propose_version(call: Call) -> tuple[int, Any]:
    return await routines.propose_version(call.ctx, call.p, call.arg("name"), call.body)


async def approve(call: Call) -> Any:
    return await routines.approve(call.ctx, call.p, call.arg("name"), call.int_arg("v"), call.body)


async def reject(call: Call) -> Any:
    return await routines.reject(call.ctx, call.p, call.arg("name"), call.int_arg("v"), call.body)


async def pause(call: Call) -> Any:
    return await routines.pause(call.ctx, call.p, call.arg("name"))


async def resume(call: Call) -> Any:
    return await routines.resume(call.ctx, call.p, call.arg("name"))


async def run_now(call: Call) -> tuple[int, Any]:
    return await routines.run_now(call.ctx, call.p, call.arg("name"))


async def runs(call: Call) -> Any:
    return await routines.list_runs(call.ctx, call.p, call.arg("name"), call.query)


async def create_run(call: Call) -> tuple[int, Any]:
    return await routines.create_run(call.ctx, call.p, call.arg("name"), call.body)


async def start_run(call: Call) -> Any:
    return await routines.start_run(call.ctx, call.p, call.arg("name"), call.int_arg("id"))


async def finish_run(call: Call) -> Any:
    return await routines.finish_run(call.ctx, call.p, call.arg("name"), call.int_arg("id"), call.body)


ROUTES = [
    Route(
        "GET",
        "/api/routines",
        listing,
        "Routines with their approved version, next and last run; long-poll with since and wait.",
        answer=Answer(page("routines", ref("Routine"))),
        query=routines.RoutineList,
        runner=True,
    ),
    Route(
        "POST",
        "/api/routines",
        propose,
        "Propose a routine (its first version, pending).",
        answer=Answer(ref("RoutineVersion"), (201, 200)),
        body=routines.RoutineProposal,
        status=201,
    ),
    Route(
        "GET",
        "/api/routines/{name}",
        get,
        "A routine with every version.",
        answer=Answer(ref("Routine")),
        runner=True,
    ),
    Route(
        "POST",
        "/api/routines/{name}/versions",
        propose_version,
        "Propose a new version (pending); the latest version's fields again propose nothing.",
        answer=Answer(ref("RoutineVersion"), (201, 200)),
        body=routines.VersionProposal,
        status=201,
    ),
    Route(
        "POST",
        "/api/routines/{name}/versions/{v}/approve",
        approve,
        "Approve a pending version (humans).",
        answer=Answer(ref("Routine")),
        body=routines.Decision,
    ),
    Route(
        "POST",
        "/api/routines/{name}/versions/{v}/reject",
        reject,
        "Reject a pending version with a note (humans).",
        answer=Answer(ref("Routine")),
        body=routines.Rejection,
    ),
    Route(
        "POST",
        "/api/routines/{name}/pause",
        pause,
        "Pause a routine (humans).",
        answer=Answer(ref("Routine")),
    ),
    Route(
        "POST",
        "/api/routines/{name}/resume",
        resume,
        "Resume a paused routine (humans).",
        answer=Answer(ref("Routine")),
    ),
    Route(
        "POST",
        "/api/routines/{name}/run-now",
        run_now,
        "Run the approved version now (humans).",
        answer=Answer(ref("Run")),
        status=201,
    ),
    Route(
        "GET",
        "/api/routines/{name}/runs",
        runs,
        "Runs, newest first, with outcome and wake cost.",
        answer=Answer(page("runs", ref("Run"))),
        query=routines.RunList,
        runner=True,
    ),
    Route(
        "POST",
        "/api/routines/{name}/runs",
        create_run,
        "Create the run of a scheduled time (the runner).",
        answer=Answer(ref("Run")),
        body=routines.RunRequest,
        status=201,
        runner=True,
        role=actions.only("routine.step_run"),
    ),
    Route(
        "POST",
        "/api/routines/{name}/runs/{id}/start",
        start_run,
        "Start a scheduled run (the runner).",
        answer=Answer(ref("Run")),
        runner=True,
    ),
    Route(
        "POST",
        "/api/routines/{name}/runs/{id}/finish",
        finish_run,
        "End a running run: done, failed or timed_out (the runner).",
        answer=Answer(ref("Run")),
        body=routines.RunEnd,
        runner=True,
    ),
]
