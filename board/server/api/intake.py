"""Issues in from the forge: the webhook a forge posts to, and the humans' management of its sources."""

from __future__ import annotations

from typing import Any

from ..services import actions, intake
from .responses import BOOL, INT, STR, TIME, array, nullable, obj, page
from .route import Answer, Call, Route


async def verify(call: Call, raw: bytes) -> intake.Signed:
    return await intake.verified(call.ctx, call.arg("source"), call.request.headers, raw)


async def receive(call: Call) -> Any:
    return await intake.take(call.ctx, call.body)


async def put_source(call: Call) -> Any:
    return await intake.put_source(call.ctx, call.p, call.arg("name"), call.body)


async def delete_source(call: Call) -> Any:
    return await intake.delete_source(call.ctx, call.p, call.arg("name"))


async def list_sources(call: Call) -> Any:
    return await intake.list_sources(call.ctx, call.p, call.query)


async def list_deliveries(call: Call) -> Any:
    return await intake.list_deliveries(call.ctx, call.p, call.query)


MAPPING = obj(
    {
        "repository": STR,
        "label": STR,
        "workspace": STR,
        "channel": STR,
        "bot": nullable(STR),
        "reply_out": BOOL,
    }
)
#: A source as every answer shows it: whether its secret and token are set, never what they are.
SOURCE = obj(
    {
        "name": STR,
        "forge": {"enum": ["github", "forgejo"]},
        "url": STR,
        "api_url": STR,
        "secret_set": BOOL,
        "token_set": BOOL,
        "created_by": nullable(STR),
        "created_at": TIME,
        "updated_at": TIME,
        "mappings": array(MAPPING),
    }
)
STATUS = {"enum": ["accepted", "ignored"]}
DELIVERY = obj(
    {
        "id": INT,
        "source": STR,
        "delivery": STR,
        "event": STR,
        "action": STR,
        "repository": STR,
        "issue": nullable(INT),
        "status": STATUS,
        "detail": STR,
        "thread_id": nullable(INT),
        "message_id": nullable(INT),
        "received_at": TIME,
    }
)
MANAGE = actions.only("intake.manage")

ROUTES = [
    Route(
        "POST",
        "/api/intake/{source}",
        receive,
        "A forge's webhook (GitHub, Forgejo): an issue becomes a thread, a comment a reply, a close "
        "closes the claim. No token: the body's signature under the source's secret is the credential.",
        signed=verify,
        answer=Answer(
            obj(
                {
                    "id": INT,
                    "delivery": STR,
                    "status": STATUS,
                    "detail": STR,
                    "thread_id": nullable(INT),
                    "message_id": nullable(INT),
                }
            )
        ),
    ),
    Route(
        "GET",
        "/api/intake/sources",
        list_sources,
        "The forge's intake sources with their mappings (humans); secrets show as set, never as text.",
        query=intake.SourceList,
        answer=Answer(page("sources", SOURCE)),
        role=MANAGE,
    ),
    Route(
        "PUT",
        "/api/intake/sources/{name}",
        put_source,
        "Create or change an intake source and set its mappings (humans); a secret omitted is kept.",
        body=intake.SourceInput,
        answer=Answer(SOURCE),
        role=MANAGE,
    ),
    Route(
        "DELETE",
        "/api/intake/sources/{name}",
        delete_source,
        "Remove an intake source, its mappings and its log (humans); its threads stay.",
        answer=Answer(obj({"name": STR, "deleted": BOOL})),
        role=MANAGE,
    ),
    Route(
        "GET",
        "/api/intake/deliveries",
        list_deliveries,
        "The intake log, newest first: each delivery taken, accepted or ignored and why (humans).",
        query=intake.DeliveryList,
        answer=Answer(page("deliveries", DELIVERY)),
        role=MANAGE,
    ),
]
