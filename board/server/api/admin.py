"""Operator routes over HTTP: what the daily care routine may ask of the board."""

from __future__ import annotations

from typing import Any

from ..services import actions, backups
from .responses import INT, STR, TIME, obj
from .route import Answer, Call, Route


async def backup(call: Call) -> Any:
    return await backups.take(call.ctx, call.p)


ROUTES = [
    Route(
        "POST",
        "/api/admin/backup",
        backup,
        "Take a consistent backup under the state directory (humans).",
        answer=Answer(obj({"path": STR, "bytes": INT, "started_at": TIME})),
        status=201,
        role=actions.only("backup.take"),
    ),
]
