"""Audit log route."""

from __future__ import annotations

from typing import Any

from ..services import actions, audit
from .responses import page, ref
from .route import Answer, Call, Route


async def entries(call: Call) -> Any:
    return await audit.entries(call.ctx, call.p, call.query)


ROUTES = [
    Route(
        "GET",
        "/api/audit",
        entries,
        "Every mutation: who, what, when, why (humans).",
        answer=Answer(page("entries", ref("AuditEntry"))),
        query=audit.AuditQuery,
        role=actions.only("audit.read"),
    ),
]
