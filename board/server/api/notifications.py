"""Routes for notifications out of band: a human's destinations, their kinds, quiet hours, the log.

Every route is the ``notify.manage`` action (humans): a bot is FORBIDDEN on each, before
anything is read. The browser notifications of the pages are ``/api/notifications``
(``api/inbox.py``); these are the ones the board sends elsewhere.
"""

from __future__ import annotations

from typing import Any

from ..services import actions, destinations, outbound
from .responses import ANY_OBJECT, BOOL, INT, STR, TIME, array, nullable, obj, page
from .route import Answer, Call, Route


async def list_destinations(call: Call) -> Any:
    return await destinations.list_destinations(call.ctx, call.p)


async def create(call: Call) -> Any:
    return await destinations.create(call.ctx, call.p, call.body)


async def get_destination(call: Call) -> Any:
    return await destinations.get_destination(call.ctx, call.p, call.int_arg("id"))


async def update(call: Call) -> Any:
    return await destinations.update(call.ctx, call.p, call.int_arg("id"), call.body)


async def delete(call: Call) -> Any:
    return await destinations.delete(call.ctx, call.p, call.int_arg("id"))


async def set_kinds(call: Call) -> Any:
    return await destinations.set_kinds(call.ctx, call.p, call.int_arg("id"), call.body)


async def send_test(call: Call) -> Any:
    return await destinations.send_test(call.ctx, call.p, call.int_arg("id"))


async def log(call: Call) -> Any:
    return await destinations.log(call.ctx, call.p, call.int_arg("id"), call.query)


async def set_quiet_hours(call: Call) -> Any:
    return await destinations.set_quiet_hours(call.ctx, call.p, call.body)


async def clear_quiet_hours(call: Call) -> Any:
    return await destinations.clear_quiet_hours(call.ctx, call.p)


KIND = {"enum": list(outbound.KINDS)}
DESTINATION = obj(
    {
        "id": INT,
        "name": STR,
        "kind": {"enum": list(destinations.DESTINATION_KINDS)},
        "active": BOOL,
        "created_at": TIME,
        "kinds": array(KIND),
        "settings": ANY_OBJECT,
        "secret_set": BOOL,
        "failing": nullable(STR),
    }
)
QUIET = nullable(obj({"start": STR, "end": STR, "timezone": STR}))
NOTIFICATION = obj(
    {
        "id": INT,
        "kind": STR,
        "subject": STR,
        "link": STR,
        "state": {"enum": ["pending", "sending", "sent", "failed"]},
        "attempts": INT,
        "next_at": STR,
        "last_error": STR,
        "created_at": TIME,
        "sent_at": nullable(TIME),
    }
)
ROLE = actions.only("notify.manage")

ROUTES = [
    Route(
        "GET",
        "/api/destinations",
        list_destinations,
        "My notification destinations and quiet hours (humans); secrets are never answered.",
        answer=Answer(obj({"destinations": array(DESTINATION), "quiet_hours": QUIET})),
        role=ROLE,
    ),
    Route(
        "POST",
        "/api/destinations",
        create,
        "Add a destination: webhook, slack, ntfy or email (humans).",
        answer=Answer(DESTINATION),
        body=destinations.DestinationInput,
        role=ROLE,
        status=201,
    ),
    Route(
        "GET",
        "/api/destinations/{id}",
        get_destination,
        "One of my destinations (humans).",
        answer=Answer(DESTINATION),
        role=ROLE,
    ),
    Route(
        "PATCH",
        "/api/destinations/{id}",
        update,
        "Change a destination's fields; a secret left out is kept (humans).",
        answer=Answer(DESTINATION),
        body=destinations.DestinationInput,
        role=ROLE,
    ),
    Route(
        "DELETE",
        "/api/destinations/{id}",
        delete,
        "Remove a destination and its log (humans).",
        answer=Answer(obj({"id": INT, "deleted": BOOL})),
        role=ROLE,
    ),
    Route(
        "PUT",
        "/api/destinations/{id}/kinds",
        set_kinds,
        "Which kinds of event are sent to a destination (humans).",
        answer=Answer(DESTINATION),
        body=destinations.KindsInput,
        role=ROLE,
    ),
    Route(
        "POST",
        "/api/destinations/{id}/test",
        send_test,
        "Send a test notification to a destination now (humans).",
        answer=Answer(NOTIFICATION),
        role=ROLE,
        status=201,
    ),
    Route(
        "GET",
        "/api/destinations/{id}/notifications",
        log,
        "A destination's notifications, newest first: state, attempts, error (humans).",
        answer=Answer(page("notifications", NOTIFICATION)),
        query=destinations.LogQuery,
        role=ROLE,
    ),
    Route(
        "PUT",
        "/api/quiet-hours",
        set_quiet_hours,
        "My quiet hours: non-urgent notifications wait for their end (humans).",
        answer=Answer(obj({"quiet_hours": QUIET})),
        body=destinations.QuietHoursInput,
        role=ROLE,
    ),
    Route(
        "DELETE",
        "/api/quiet-hours",
        clear_quiet_hours,
        "No quiet hours (humans).",
        answer=Answer(obj({"quiet_hours": QUIET})),
        role=ROLE,
    ),
]
