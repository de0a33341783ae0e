"""Shared helpers of the knowledge tests: the board fixtures' helpers, and small callers."""

from __future__ import annotations

from typing import Any

from board.client import BoardAPIError, BoardClient
from tests.support.boardtest import Board, World, db_rows, populate, snapshot, start_board, stop_board

__all__ = [
    "Board",
    "World",
    "db_rows",
    "populate",
    "snapshot",
    "start_board",
    "stop_board",
    "write",
]


async def write(client: BoardClient, path: str, body: str, reason: str = "note", **fields: Any) -> Any:
    """Write ``body`` on top of whatever the latest revision is."""
    try:
        base = (await client.document_history(path, limit=1, view="compact", **_ws(fields)))[
            "latest_revision"
        ]
    except BoardAPIError as exc:
        if exc.code != "NOT_FOUND":
            raise
        base = 0
    return await client.put_document(path, body, base, reason, **fields)


def _ws(fields: dict[str, Any]) -> dict[str, Any]:
    return {"workspace": fields["workspace"]} if "workspace" in fields else {}
