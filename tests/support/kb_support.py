"""Shared helpers of the knowledge tests: the board fixtures' helpers, and small callers."""

from __future__ import annotations

from typing import Any

try:  # the fixtures' helpers live in boardtest.py when it exists, else in conftest.py
    from tests.support.boardtest import Board, World, db_rows, populate, snapshot, start_board, stop_board
except ImportError:
    from tests.support.boardtest import Board, World, db_rows, populate, snapshot, start_board, stop_board

import pytest

from board.client import BoardAPIError, BoardClient

__all__ = [
    "Board",
    "World",
    "db_rows",
    "expect_error",
    "populate",
    "refused",
    "snapshot",
    "start_board",
    "stop_board",
    "write",
]


async def expect_error(code: str | set[str], call: Any) -> BoardAPIError:
    """Await ``call`` and return the board's error, which must carry ``code`` (or one of them)."""
    with pytest.raises(BoardAPIError) as caught:
        await call
    codes = {code} if isinstance(code, str) else code
    assert caught.value.code in codes, f"{caught.value.code}: {caught.value.message}"
    return caught.value


async def refused(board: Board, code: str | set[str], call: Any) -> BoardAPIError:
    """The call fails with ``code`` and changes no row of any table."""
    before = snapshot(board.db_path)
    error = await expect_error(code, call)
    assert snapshot(board.db_path) == before
    return error


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
