"""Routes for the inbox by thread, marking a thread or all of it, and notification settings."""

from __future__ import annotations

from typing import Any

from ..services import actions, inbox
from .responses import BOOL, INT, STR, nullable, obj, page, ref
from .route import Answer, Call, Route


async def groups(call: Call) -> Any:
    return await inbox.groups(call.ctx, call.p, call.query)


async def mark(call: Call) -> Any:
    return await inbox.mark(call.ctx, call.p, call.body)


async def notify_settings(call: Call) -> Any:
    return await inbox.notify_settings(call.ctx, call.p)


async def set_notify_settings(call: Call) -> Any:
    return await inbox.set_notify_settings(call.ctx, call.p, call.body)


GROUP = obj(
    {
        "thread_id": INT,
        "workspace": STR,
        "latest_id": INT,
        "messages": INT,
        "unread": INT,
        "root": ref("CompactMessage"),
        "latest": ref("FullMessage"),
    }
)
SETTINGS = obj(dict.fromkeys(inbox.KINDS, BOOL))

ROUTES = [
    Route(
        "GET",
        "/api/inbox/threads",
        groups,
        "My inbox by thread, newest first, with counts; done messages left out.",
        answer=Answer(page("groups", GROUP, unread=INT)),
        query=inbox.GroupsQuery,
    ),
    Route(
        "POST",
        "/api/inbox/mark",
        mark,
        "Mark a thread's messages in my inbox, or all of them, seen or done.",
        answer=Answer(
            obj(
                {
                    "state": {"enum": ["seen", "done"]},
                    "thread_id": nullable(INT),
                    "marked": INT,
                    "unread": INT,
                }
            )
        ),
        body=inbox.MarkInbox,
    ),
    Route(
        "GET",
        "/api/notifications",
        notify_settings,
        "Which browser notifications I get, per kind (humans).",
        answer=Answer(SETTINGS),
        role=actions.only("notifications"),
    ),
    Route(
        "PUT",
        "/api/notifications",
        set_notify_settings,
        "Turn kinds of browser notification on or off (humans).",
        answer=Answer(SETTINGS),
        body=inbox.NotifySettings,
        role=actions.only("notifications"),
    ),
]
