"""Operator routes over HTTP: what the daily care routine may ask of the board."""

from __future__ import annotations

from typing import Any

from ..services import actions, backups
from .route import Call, Route


async def backup(call: Call) -> Any:
    return await backups.take(call.ctx, call.p)


ROUTES = [
    Route(
        "POST",
        "/api/admin/backup",
        backup,
        "Take a consistent backup under the state directory (humans).",
        status=201,
        role=actions.only("backup.take"),
    ),
]
