"""Decoding the JSON columns of stored rows, so that one bad row never fails a whole list.

The edge refuses JSON the board cannot send back, but a row can still be bad:
written by an older board, by hand, or damaged on disk. Such a column decodes
to its empty value and the row says it is ``unreadable``; the list around it
is answered as usual. Each bad column is logged once per process, not on every
read of it (the memory of what was logged is bounded).
"""

from __future__ import annotations

import logging
from typing import Any

from ..jsonvalues import strict_loads

log = logging.getLogger("board.store")

MAX_REPORTED = 10_000
_reported: set[tuple[str, int, str]] = set()


def read_json(table: str, row_id: int, column: str, raw: Any, empty: Any) -> tuple[Any, bool]:
    """The decoded column and True, or ``empty`` and False when it cannot be read back."""
    # Most rows hold no tags, mentions or meta: skip the parser for the two empty values.
    if raw == "[]":
        return [], True
    if raw == "{}":
        return {}, True
    try:
        if not isinstance(raw, str | bytes):
            raise ValueError(f"a {type(raw).__name__}, not JSON text")
        return strict_loads(raw), True
    except ValueError as exc:
        _report(table, row_id, column, str(exc))
        return empty, False


def readable_json(table: str, row_id: int, column: str, raw: Any, empty: str) -> str:
    """:func:`read_json` for SQL (``readable_json(table, id, column, value, empty)``): JSON text."""
    _, ok = read_json(table, row_id, column, raw, None)
    return raw if ok and isinstance(raw, str) else empty


def _report(table: str, row_id: int, column: str, why: str) -> None:
    key = (table, row_id, column)
    if key in _reported:
        return
    if len(_reported) >= MAX_REPORTED:
        _reported.clear()
    _reported.add(key)
    log.warning("unreadable row: %s %s, column %s: %s", table, row_id, column, why[:200])
