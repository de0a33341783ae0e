"""Routes for claims, wakes and the launcher's wake feed."""

from __future__ import annotations

from typing import Any

from ..services import actions, claims, wakes
from .route import Call, Route


async def claim(call: Call) -> tuple[int, Any]:
    return await claims.claim(call.ctx, call.p, call.int_arg("id"), call.body)


async def release(call: Call) -> Any:
    return await claims.release(call.ctx, call.p, call.int_arg("id"), call.body)


async def handoff(call: Call) -> Any:
    return await claims.handoff(call.ctx, call.p, call.int_arg("id"), call.body)


async def done(call: Call) -> Any:
    return await claims.done(call.ctx, call.p, call.int_arg("id"), call.body)


async def listing(call: Call) -> Any:
    return await claims.list_claims(call.ctx, call.p, call.query)


async def record_wake(call: Call) -> tuple[int, Any]:
    return await wakes.record_wake(call.ctx, call.p, call.body)


async def list_wakes(call: Call) -> Any:
    return await wakes.list_wakes(call.ctx, call.p, call.query)


async def feed(call: Call) -> Any:
    return await wakes.feed(call.ctx, call.p, call.query)


ROUTES = [
    Route(
        "POST",
        "/api/threads/{id}/claim",
        claim,
        "Claim a thread (201), renew it (200).",
        body=claims.ClaimRequest,
    ),
    Route(
        "POST",
        "/api/threads/{id}/release",
        release,
        "Give a claimed thread back.",
        body=claims.ReleaseRequest,
    ),
    Route(
        "POST",
        "/api/threads/{id}/handoff",
        handoff,
        "Hand the claim to another agent.",
        body=claims.HandoffRequest,
    ),
    Route("POST", "/api/threads/{id}/done", done, "Close the thread as done.", body=claims.DoneRequest),
    Route(
        "GET",
        "/api/claims",
        listing,
        "Claims by holder and state; stalled=true for stalls.",
        query=claims.ClaimList,
    ),
    Route(
        "POST",
        "/api/wakes",
        record_wake,
        "Record one harness run (the launcher).",
        body=wakes.WakeRecord,
        status=201,
        role=actions.only("wake.record"),
    ),
    Route("GET", "/api/wakes", list_wakes, "Harness runs with their cost.", query=wakes.WakeList),
    Route(
        "GET",
        "/api/wake",
        feed,
        "The launcher's feed: for_me and watched, long-pollable.",
        query=wakes.WakeQuery,
        role=actions.only("wake.feed"),
    ),
]
