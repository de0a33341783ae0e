"""Issues in from the forge: sources, their mappings, the deliveries taken, the issue behind a thread.

A source's secret is read by :func:`credentials` only, for checking a signature, and its
API token by ``store/replies.py`` only, when a reply out is sent; every other read answers
whether they are set.
"""

from __future__ import annotations

from dataclasses import dataclass

from .connection import Connection
from .rows import Row, all_rows, one

SOURCE_COLUMNS = """s.id, s.name, s.forge, s.api_url, s.secret != '' AS secret_set,
    s.api_token != '' AS token_set, s.created_at, s.updated_at,
    (SELECT a.handle FROM agents a WHERE a.id = s.created_by) AS created_by"""
MAPPING_COLUMNS = """m.id, m.source_id, m.repository, m.label, m.workspace_id, w.slug AS workspace,
    m.channel, m.bot_id, b.handle AS bot, m.reply_out"""
MAPPINGS = f"""SELECT {MAPPING_COLUMNS} FROM intake_mappings m
    JOIN workspaces w ON w.id = m.workspace_id LEFT JOIN agents b ON b.id = m.bot_id"""
DELIVERY_COLUMNS = """d.id, s.name AS source, d.delivery, d.event, d.action, d.repository, d.issue,
    d.status, d.detail, d.thread_id, d.message_id, d.received_at"""


@dataclass(frozen=True)
class Mapping:
    """One row of a source's mappings, as a human set it (handles and slugs resolved to ids)."""

    repository: str
    label: str
    workspace_id: int
    channel: str
    bot_id: int | None
    reply_out: bool


async def source(conn: Connection, name: str) -> Row | None:
    return await one(conn, f"SELECT {SOURCE_COLUMNS} FROM intake_sources s WHERE s.name = ?", (name,))


async def credentials(conn: Connection, name: str) -> Row | None:
    """The source's id, forge and secret: for checking a delivery's signature, nothing else."""
    return await one(conn, "SELECT id, name, forge, secret FROM intake_sources WHERE name = ?", (name,))


async def sources(conn: Connection, after: str, limit: int) -> list[Row]:
    return await all_rows(
        conn,
        f"SELECT {SOURCE_COLUMNS} FROM intake_sources s WHERE s.name > ? ORDER BY s.name LIMIT ?",
        (after, limit),
    )


async def put_source(
    conn: Connection,
    name: str,
    forge: str,
    api_url: str,
    secret: str | None,
    api_token: str | None,
    created_by: int,
    now: str,
) -> int:
    """Create the source, or change it; a secret or token given as None keeps the one set."""
    existing = await one(conn, "SELECT id FROM intake_sources WHERE name = ?", (name,))
    if existing is None:
        return await conn.insert(
            """INSERT INTO intake_sources (name, forge, secret, api_url, api_token, created_by,
                   created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
            (name, forge, secret or "", api_url, api_token or "", created_by, now, now),
        )
    source_id = int(existing["id"])
    await conn.execute(
        """UPDATE intake_sources SET forge = ?, api_url = ?, secret = COALESCE(?, secret),
               api_token = COALESCE(?, api_token), updated_at = ? WHERE id = ?""",
        (forge, api_url, secret, api_token, now, source_id),
    )
    return source_id


async def set_mappings(conn: Connection, source_id: int, mappings: list[Mapping]) -> None:
    """The source's mappings become exactly these."""
    await conn.execute("DELETE FROM intake_mappings WHERE source_id = ?", (source_id,))
    for m in mappings:
        await conn.execute(
            """INSERT INTO intake_mappings (source_id, repository, label, workspace_id, channel,
                   bot_id, reply_out) VALUES (?, ?, ?, ?, ?, ?, ?)""",
            (source_id, m.repository, m.label, m.workspace_id, m.channel, m.bot_id, int(m.reply_out)),
        )


async def delete_source(conn: Connection, source_id: int) -> None:
    """The source with its mappings, deliveries and issue links; the threads stay."""
    await conn.execute("DELETE FROM intake_sources WHERE id = ?", (source_id,))


async def mappings(conn: Connection, source_ids: list[int]) -> list[Row]:
    if not source_ids:
        return []
    marks = ", ".join("?" * len(source_ids))
    rows = await all_rows(conn, f"{MAPPINGS} WHERE m.source_id IN ({marks})", tuple(source_ids))
    return sorted(rows, key=lambda row: (row["source_id"], row["repository"], row["label"]))


async def mappings_for(conn: Connection, source_id: int, repository: str) -> list[Row]:
    """A repository's mappings by label, the one without a label first. The labels are put in
    order here, by their characters' code points, not by the database: PostgreSQL orders
    text by its collation (``api`` before ``Bug`` in most), SQLite by code point (``Bug``
    first), and an issue with both labels would go to another bot on each."""
    rows = await all_rows(
        conn, f"{MAPPINGS} WHERE m.source_id = ? AND m.repository = ?", (source_id, repository)
    )
    return sorted(rows, key=lambda row: row["label"])


async def delivery_taken(conn: Connection, source_id: int, delivery: str) -> bool:
    row = await one(
        conn, "SELECT 1 FROM intake_deliveries WHERE source_id = ? AND delivery = ?", (source_id, delivery)
    )
    return row is not None


@dataclass(frozen=True)
class Delivery:
    """A delivery as it is logged."""

    source_id: int
    delivery: str
    event: str
    action: str
    repository: str
    issue: int | None
    status: str
    detail: str
    thread_id: int | None
    message_id: int | None
    received_at: str


async def log_delivery(conn: Connection, d: Delivery) -> int:
    return await conn.insert(
        """INSERT INTO intake_deliveries (source_id, delivery, event, action, repository, issue,
               status, detail, thread_id, message_id, received_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (
            d.source_id,
            d.delivery,
            d.event,
            d.action,
            d.repository,
            d.issue,
            d.status,
            d.detail,
            d.thread_id,
            d.message_id,
            d.received_at,
        ),
    )


async def deliveries(conn: Connection, source_id: int | None, before: int, limit: int) -> list[Row]:
    """The newest deliveries first, of one source or all, below id ``before`` (0: from the newest)."""
    where = ["1 = 1"]
    params: list[object] = []
    if before:
        where.append("d.id < ?")
        params.append(before)
    if source_id is not None:
        where.append("d.source_id = ?")
        params.append(source_id)
    return await all_rows(
        conn,
        f"""SELECT {DELIVERY_COLUMNS} FROM intake_deliveries d JOIN intake_sources s ON s.id = d.source_id
            WHERE {" AND ".join(where)} ORDER BY d.id DESC LIMIT ?""",
        (*params, limit),
    )


async def prune_deliveries(conn: Connection, before: str, at_most: int) -> int:
    """Forget at most ``at_most`` deliveries received before ``before``; how many."""
    cur = await conn.execute(
        """DELETE FROM intake_deliveries WHERE id IN
           (SELECT id FROM intake_deliveries WHERE received_at < ? LIMIT ?)""",
        (before, at_most),
    )
    return cur.rowcount


async def issue_thread(conn: Connection, source_id: int, repository: str, issue: int) -> int | None:
    row = await one(
        conn,
        "SELECT thread_id FROM intake_issues WHERE source_id = ? AND repository = ? AND issue = ?",
        (source_id, repository, issue),
    )
    return int(row["thread_id"]) if row is not None else None


async def link_issue(
    conn: Connection, source_id: int, repository: str, issue: int, thread_id: int, url: str, now: str
) -> None:
    await conn.execute(
        """INSERT INTO intake_issues (source_id, repository, issue, thread_id, url, created_at)
           VALUES (?, ?, ?, ?, ?, ?)""",
        (source_id, repository, issue, thread_id, url, now),
    )
