"""Reading rows: the query helpers every store module uses, and the typed rows services pass around.

A row is what the connection hands back (``sqlite3.Row``, or the PostgreSQL store's
``Row``): read by column name or by position, never changed. The typed rows below
name the columns of the rows that cross into services, so a misspelt column is a
type error; at run time they are still the connection's rows, read only by key.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from .connection import Connection

#: A result row, read by column name or position (``sqlite3.Row``, or the PostgreSQL store's).
Row = Any


def newest_message_id(column: str, owner: str) -> str:
    """A subquery: the id of the newest message whose ``column`` (``channel_id``,
    ``conversation_id``, ``workspace_id``) is ``owner`` (an outer column), or NULL.

    Written as a range over ``(column, id)``, not ``max(id) ... WHERE column = owner``:
    PostgreSQL plans that for a typical owner, walking the whole board's ids backwards
    until one is the owner's, which for an owner with no recent message (an empty channel, a
    quiet workspace) reads every message. The range orders by the owner's own index only,
    so each owner costs one index step on both databases.
    """
    return (
        f"(SELECT x.id FROM messages x WHERE x.{column} BETWEEN {owner} AND {owner}"
        f" ORDER BY x.{column} DESC, x.id DESC LIMIT 1)"
    )


async def one(conn: Connection, sql: str, params: tuple[Any, ...] = ()) -> Row | None:
    """The first row of a query, or None."""
    rows = await conn.execute_fetchall(sql, params)
    return next(iter(rows), None)


async def all_rows(conn: Connection, sql: str, params: tuple[Any, ...] = ()) -> list[Row]:
    """All rows in one round trip to the connection's thread."""
    return list(await conn.execute_fetchall(sql, params))


async def count(conn: Connection, sql: str, params: tuple[Any, ...] = ()) -> int:
    """The first column of the first row as an int (a ``count(*)``); 0 when there is no row."""
    row = await one(conn, sql, params)
    return int(row[0]) if row else 0


async def first_column(conn: Connection, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """The first column of every row."""
    return [row[0] for row in await all_rows(conn, sql, params)]


# -- the rows that cross into services ---------------------------------------------------


class AgentRow(TypedDict):
    """``identity.AGENT_COLUMNS``: a human, a bot or the board itself."""

    id: int
    handle: str
    kind: str
    harness: str | None
    workspace_id: int | None
    description: str
    created_at: str
    last_seen_at: str | None
    workspace: str | None


class WorkspaceRow(TypedDict):
    """``workspaces.COLUMNS``."""

    id: int
    slug: str
    name: str
    review_policy: str
    loop_hops: int
    budget_wakes: int | None
    budget_tokens: int | None
    budget_cost_usd: float | None
    archived_at: str | None
    created_at: str


class ChannelRow(TypedDict):
    """A channel as ``channels.by_slug`` reads it."""

    id: int
    workspace_id: int
    slug: str
    topic: str
    created_at: str


class MessageRow(TypedDict):
    """``messages.SELECT``, plus the inbox's ``reason`` where it reads it."""

    id: int
    workspace_id: int
    workspace: str
    channel_id: int | None
    channel: str | None
    conversation_id: int | None
    kind: str
    author: str
    author_kind: str
    body: str
    reply_to: int | None
    thread_id: int
    tags: str  # JSON, as stored: read with messages.to_dict
    mentions: str
    meta: str
    created_at: str
    author_id: int
    reason: NotRequired[str]


class ClaimRow(TypedDict):
    """``claims.COLUMNS``: a thread's claim with its holder's handle."""

    thread_id: int
    workspace_id: int
    workspace: str
    state: str
    holder_id: int | None
    holder: str | None
    note: str
    claimed_at: str | None
    lease_until: str | None
    progress_at: str | None
    nudged_at: str | None
    updated_at: str


class DocumentRow(TypedDict):
    """``knowledge.DOC_COLUMNS``: a knowledge document's own columns (a revision's are read beside them)."""

    document_id: int
    workspace_id: int
    path: str
    created_at: str
    latest_revision: int
    accepted_revision: int
    current_id: int | None
    pending_revision: int | None
    state: str
    doc_status: str | None
    open_disputes: int
    updated_at: str
    confirmed_at: str | None
    shown_count: int
    read_count: int
    last_shown_at: str | None
    last_read_at: str | None
