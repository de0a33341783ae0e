"""``refused()``: the one way a test says a call must be refused.

A refusal is right only when the code, the status that code carries on the wire and (where the
test names one) the message are right, and (where the test names the board) no table of its
database gained or lost a row. The statuses are written out here from spec 10-api.md rather
than read from the board, so a board that answers a code with the wrong status fails.
"""

from __future__ import annotations

from collections.abc import Awaitable, Collection

import pytest

from board.client import BoardAPIError
from tests.support.boardtest import Board, snapshot

STATUS = {
    "UNAUTHENTICATED": 401,
    "FORBIDDEN": 403,
    "NOT_FOUND": 404,
    "INVALID_ARGUMENT": 422,
    "LIMIT_EXCEEDED": 413,
    "VERSION_CONFLICT": 409,
    "CLAIMED": 409,
    "TOMBSTONED": 409,
    "PATCH_FAILED": 409,
    "NAME_CONFLICT": 409,
    "REQUEST_ID_REUSE": 409,
    "MISDIRECTED_REQUEST": 421,
    "RATE_LIMITED": 429,
    "UNAVAILABLE": 503,
}


async def refused(
    call: Awaitable[object],
    code: str | Collection[str],
    *,
    message: str | None = None,
    unchanged: Board | None = None,
) -> BoardAPIError:
    """Await ``call``, which must fail with ``code`` (or one of several) and that code's status.

    ``message``: a part the error's message must contain. ``unchanged``: a board whose database
    must hold as many rows in each table as before the call.
    """
    codes = {code} if isinstance(code, str) else set(code)
    before = snapshot(unchanged.db_path) if unchanged is not None else None
    with pytest.raises(BoardAPIError) as caught:
        await call
    error = caught.value
    assert error.code in codes, f"{error.status} {error.code}: {error.message}"
    assert error.status == STATUS[error.code], f"{error.status} {error.code}: {error.message}"
    if message is not None:
        assert message in error.message, error.message
    if unchanged is not None:
        assert snapshot(unchanged.db_path) == before, f"{error.code} changed rows: {error.message}"
    return error
