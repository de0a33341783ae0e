"""Routes for claims, wakes and the launcher's wake feed."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..services import actions, claims, wakes, wakestream
from .access import cutter
from .errors import begin
from .responses import INT, STR, TIME, array, obj, page, ref
from .route import Answer, Call, Route, bearer_token


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


async def stream(call: Call) -> web.StreamResponse:
    """The wake feed as newline-delimited JSON (services/wakestream.py), until either end stops."""
    # The feed is for bots, whose credential is a bearer token: the stream checks it as it goes.
    token = bearer_token(call.request.headers) or ""
    feed = await wakestream.open_stream(call.ctx, call.p, token, call.query)
    feed.on_overflow(cutter(call.request))
    response = web.StreamResponse(
        headers={"Content-Type": NDJSON, "Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    )
    try:
        await begin(call.request, response)
        async for chunk in feed.lines():
            await response.write(chunk)
        await response.write_eof()
    finally:
        feed.close()
    return response


NDJSON = "application/x-ndjson"
#: One JSON object a line; every line has the cursor to reconnect with (docs/api-decisions.md).
STREAM_LINE = {
    "contentMediaType": NDJSON,
    "description": "Lines of {cursor, message | beat | held | end}.",
}


ROUTES = [
    Route(
        "POST",
        "/api/threads/{id}/claim",
        claim,
        "Claim a thread (201), renew it (200).",
        answer=Answer(ref("Claim"), (201, 200)),
        body=claims.ClaimRequest,
        answered_by_write=True,
    ),
    Route(
        "POST",
        "/api/threads/{id}/release",
        release,
        "Give a claimed thread back.",
        answer=Answer(ref("Claim")),
        body=claims.ReleaseRequest,
        answered_by_write=True,
    ),
    Route(
        "POST",
        "/api/threads/{id}/handoff",
        handoff,
        "Hand the claim to another agent.",
        answer=Answer(ref("Claim")),
        body=claims.HandoffRequest,
        answered_by_write=True,
    ),
    Route(
        "POST",
        "/api/threads/{id}/done",
        done,
        "Close the thread as done.",
        answer=Answer(ref("Claim")),
        body=claims.DoneRequest,
        answered_by_write=True,
    ),
    Route(
        "GET",
        "/api/claims",
        listing,
        "Claims by holder and state; stalled=true for stalls.",
        answer=Answer(
            page(
                "claims",
                ref("Claim"),
                {
                    "unseen": array(
                        obj({"handle": STR, "message_id": INT, "thread_id": INT, "flagged_at": TIME})
                    )
                },
            )
        ),
        query=claims.ClaimList,
    ),
    Route(
        "POST",
        "/api/wakes",
        record_wake,
        "Record one harness run (the launcher).",
        answer=Answer(ref("Wake")),
        body=wakes.WakeRecord,
        status=201,
        role=actions.only("wake.record"),
        answered_by_write=True,
    ),
    Route(
        "GET",
        "/api/wakes",
        list_wakes,
        "Harness runs with their cost.",
        answer=Answer(page("wakes", ref("Wake"))),
        query=wakes.WakeList,
    ),
    Route(
        "GET",
        "/api/wake",
        feed,
        "The launcher's feed: for_me and watched, long-pollable; held: a daily budget holds the bot.",
        answer=Answer(page("messages", ref("Message"), {"held": ref("BudgetHold")})),
        query=wakes.WakeQuery,
        role=actions.only("wake.feed"),
    ),
    Route(
        "GET",
        "/api/wake/stream",
        stream,
        "The launcher's feed streamed: NDJSON lines, each with the cursor to resume from.",
        answer=Answer(STREAM_LINE),
        query=wakestream.WakeStreamQuery,
        role=actions.only("wake.feed"),
    ),
]
