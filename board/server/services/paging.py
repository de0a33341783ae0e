"""Bounded lists: a row limit and a byte cap, the first item always kept.

Every list answer is built here so each one carries ``has_more`` and the
cursor to continue from, whatever the concept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..jsonvalues import EncodedList, encode, encoded_size

if TYPE_CHECKING:
    from .context import Context

Page = dict[str, Any]


def byte_cap(ctx: Context, requested: int | None) -> int:
    """The byte cap of one answer: the caller may lower the server's cap, never raise it."""
    cap = ctx.settings.max_bytes
    return min(cap, requested) if requested else cap


def trim(items: list[Any], limit: int, max_bytes: int) -> tuple[list[Any], bool]:
    """Keep at most ``limit`` items within ``max_bytes``; True when something was left out.

    ``items`` may hold one more than ``limit`` (fetched to learn whether more exist).
    The usual page fits whole: it is encoded once, and that encoding is the answer's
    (an :class:`EncodedList`); item by item only when it does not fit (the whole list
    is longer than the sum of its items, so the answer is the same).
    """
    whole = encode(items[:limit])
    if len(whole) <= max_bytes:
        return EncodedList(items[:limit], whole), len(items) > limit
    kept: list[Any] = []
    used = 0
    for item in items[:limit]:
        size = encoded_size(item)
        if kept and used + size > max_bytes:
            return kept, True
        kept.append(item)
        used += size
    return kept, len(items) > limit


def bounded_page(
    ctx: Context,
    noun: str,
    items: list[dict[str, Any]],
    limit: int,
    max_bytes: int | None,
    *,
    descending: bool,
    key: str = "id",
    cursor: int | None = None,
) -> Page:
    """The list answer: ``{noun: [...], has_more, next_since|next_before, cursor}``.

    ``cursor`` is the message head the list's own read saw; a list that reads no
    messages gets the highest id published so far, which never runs ahead of a commit.
    """
    kept, has_more = trim(items, limit, byte_cap(ctx, max_bytes))
    page: Page = {noun: kept, "has_more": has_more}
    page["cursor"] = ctx.hub.last_id if cursor is None else cursor
    if has_more and kept:
        page["next_before" if descending else "next_since"] = kept[-1][key]
    return page
