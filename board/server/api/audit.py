"""Audit log route."""

from __future__ import annotations

from typing import Any

from ..services import actions, audit
from .route import Call, Route


async def entries(call: Call) -> Any:
    return await audit.entries(call.ctx, call.p, call.query)


ROUTES = [
    Route(
        "GET",
        "/api/audit",
        entries,
        "Every mutation: who, what, when, why (humans).",
        query=audit.AuditQuery,
        role=actions.only("audit.read"),
    ),
]
