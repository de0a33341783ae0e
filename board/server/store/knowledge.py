"""Knowledge documents: heads, append-only revisions, disputes, the full-text index.

The head row of a document (``kb_documents``) says which revision it shows and
which number the next write must be based on, so reads of the current set
join one revision per document and never look at history. ``kb_fts`` indexes
exactly the shown revision of each live document; every function here that
moves a head keeps it so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .connection import Connection
from .messages import MAX_BODY
from .rows import DocumentRow, Row, all_rows, count, one
from .search import Terms

DOC_COLUMNS = """d.id AS document_id, d.workspace_id, d.path, d.created_at, d.latest_revision,
    d.accepted_revision, d.current_id, d.pending_revision, d.state, d.status AS doc_status, d.open_disputes,
    d.updated_at, d.confirmed_at, d.shown_count, d.read_count, d.last_shown_at, d.last_read_at"""
#: Stored sources that cannot be read back show as one note saying so (and are logged once),
#: so a damaged row never fails the list or document it is in.
UNREADABLE_SOURCES = '[{"note":"These sources are unreadable: the stored value could not be decoded."}]'


def _sources(table: str, row: str) -> str:
    """The ``sources`` column of ``table`` (as ``row``), read back or marked unreadable."""
    return f"readable_json('{table}', {row}.id, 'sources', {row}.sources, '{UNREADABLE_SOURCES}') AS sources"


REV_COLUMNS = f"""r.id AS revision_id, r.revision, r.base_revision, r.kind, r.status, r.title, r.excerpt,
    r.bytes, r.author, r.author_kind, r.reason, {_sources("kb_revisions", "r")}, r.recorded_at, r.valid_from,
    r.valid_to, r.superseded_by, r.overrides, r.reviewed_by, r.reviewed_at, r.review_note, r.redacted_by,
    r.redacted_at, r.redaction_reason, r.redacted_sha256"""
ACCEPTED = "r.status IN ('settled', 'superseded')"
ACCEPTED_AT = "COALESCE(r.reviewed_at, r.recorded_at)"


# -- documents -------------------------------------------------------------------


async def document_by_path(conn: Connection, workspace_id: int, path: str) -> DocumentRow | None:
    return await one(
        conn,
        f"SELECT {DOC_COLUMNS} FROM kb_documents d WHERE d.workspace_id = ? AND d.path = ?",
        (workspace_id, path),
    )


async def document_by_id(conn: Connection, document_id: int) -> DocumentRow | None:
    return await one(conn, f"SELECT {DOC_COLUMNS} FROM kb_documents d WHERE d.id = ?", (document_id,))


async def insert_document(conn: Connection, workspace_id: int, path: str, now: str) -> int:
    new_id = await conn.insert(
        "INSERT INTO kb_documents (workspace_id, path, created_at, updated_at) VALUES (?,?,?,?)",
        (workspace_id, path, now, now),
    )
    return new_id


async def set_head(conn: Connection, document_id: int, head: dict[str, Any]) -> None:
    sets = ", ".join(f"{name} = ?" for name in head)
    await conn.execute(f"UPDATE kb_documents SET {sets} WHERE id = ?", (*head.values(), document_id))


# -- revisions -------------------------------------------------------------------


async def insert_revision(conn: Connection, values: dict[str, Any]) -> int | None:
    """Append a revision; ``None`` when its number is taken or does not follow the latest."""
    names = ", ".join(values)
    marks = ", ".join("?" * len(values))
    try:
        new_id = await conn.insert(
            f"INSERT INTO kb_revisions ({names}) VALUES ({marks})", tuple(values.values())
        )
    except conn.IntegrityError as exc:
        text = str(exc).lower()
        if "unique" in text or "version conflict" in text:  # the constraint's or the trigger's refusal
            return None
        raise
    return new_id


async def revision_by_number(conn: Connection, document_id: int, revision: int) -> Row | None:
    return await one(
        conn,
        f"SELECT {REV_COLUMNS}, r.body FROM kb_revisions r WHERE r.document_id = ? AND r.revision = ?",
        (document_id, revision),
    )


async def revision_by_id(conn: Connection, revision_id: int | None) -> Row | None:
    """The revision by id; None for none (a document with no current revision yet)."""
    return await one(conn, f"SELECT {REV_COLUMNS}, r.body FROM kb_revisions r WHERE r.id = ?", (revision_id,))


async def newest_accepted(conn: Connection, document_id: int) -> Row | None:
    return await one(
        conn,
        f"""SELECT {REV_COLUMNS} FROM kb_revisions r WHERE r.document_id = ? AND {ACCEPTED}
            ORDER BY r.revision DESC LIMIT 1""",
        (document_id,),
    )


async def newest_proposed(conn: Connection, workspace_id: int, document_id: int, after: int) -> Row | None:
    return await one(
        conn,
        f"""SELECT {REV_COLUMNS} FROM kb_revisions r
            WHERE r.workspace_id = ? AND r.document_id = ? AND r.status = 'proposed' AND r.revision > ?
            ORDER BY r.revision DESC LIMIT 1""",
        (workspace_id, document_id, after),
    )


async def proposed_revisions(conn: Connection, workspace_id: int, document_id: int, after: int) -> list[Row]:
    """Open proposals of a document newer than its accepted revision, oldest first."""
    return await all_rows(
        conn,
        f"""SELECT {REV_COLUMNS} FROM kb_revisions r
            WHERE r.workspace_id = ? AND r.document_id = ? AND r.status = 'proposed' AND r.revision > ?
            ORDER BY r.revision""",
        (workspace_id, document_id, after),
    )


async def decide(conn: Connection, revision_id: int, status: str, by: str, at: str, note: str) -> None:
    await conn.execute(
        "UPDATE kb_revisions SET status = ?, reviewed_by = ?, reviewed_at = ?, review_note = ? WHERE id = ?",
        (status, by, at, note, revision_id),
    )


async def erase(conn: Connection, revision_id: int, by: str, at: str, reason: str, sha256: str) -> None:
    """Blank a revision's body and every text derived from it, leaving the redaction stub."""
    await conn.execute(
        """UPDATE kb_revisions SET body = '', title = '', excerpt = '', redacted_by = ?, redacted_at = ?,
               redaction_reason = ?, redacted_sha256 = ? WHERE id = ?""",
        (by, at, reason, sha256, revision_id),
    )


async def history(conn: Connection, document_id: int, before: int | None, limit: int) -> list[Row]:
    return await all_rows(
        conn,
        f"""SELECT {REV_COLUMNS}, r.body FROM kb_revisions r
            WHERE r.document_id = ? AND r.revision < ? ORDER BY r.revision DESC LIMIT ?""",
        (document_id, before if before is not None else 2**62, limit),
    )


def _time_clauses(as_of: str | None, valid_at: str | None) -> tuple[str, list[Any]]:
    clauses, params = [ACCEPTED], []
    if as_of is not None:
        clauses.append(f"{ACCEPTED_AT} <= ?")
        params.append(as_of)
    if valid_at is not None:
        clauses.append(
            "(r.valid_from IS NULL OR r.valid_from <= ?) AND (r.valid_to IS NULL OR r.valid_to > ?)"
        )
        params += [valid_at, valid_at]
    return " AND ".join(clauses), params


async def revision_at(
    conn: Connection, document_id: int, as_of: str | None, valid_at: str | None
) -> Row | None:
    """The revision a document showed at ``as_of`` (accepted by then) that held at ``valid_at``."""
    where, params = _time_clauses(as_of, valid_at)
    return await one(
        conn,
        f"""SELECT {REV_COLUMNS}, r.body FROM kb_revisions r WHERE r.document_id = ? AND {where}
            ORDER BY r.revision DESC LIMIT 1""",
        (document_id, *params),
    )


# -- the full-text index -----------------------------------------------------------
# SQLite's kb_fts is kept by hand. On PostgreSQL, triggers keep kb_search equal to
# the shown revision of each live document: there is nothing to do here.


async def index(conn: Connection, revision_id: int, path: str) -> None:
    if conn.dialect == "postgresql":
        return
    await conn.execute(
        """INSERT INTO kb_fts (rowid, path, title, body)
           SELECT id, ?, title, body FROM kb_revisions WHERE id = ?""",
        (path, revision_id),
    )


async def unindex(conn: Connection, revision_id: int, path: str) -> None:
    """Drop a revision from the index; call it while its row still holds what was indexed."""
    if conn.dialect == "postgresql":
        return
    await conn.execute(
        """INSERT INTO kb_fts (kb_fts, rowid, path, title, body)
           SELECT 'delete', id, ?, title, body FROM kb_revisions WHERE id = ?""",
        (path, revision_id),
    )


async def optimize_index(conn: Connection) -> None:
    """Merge the index into one segment, so no old segment keeps deleted tokens."""
    if conn.dialect == "postgresql":
        return
    await conn.execute("INSERT INTO kb_fts (kb_fts) VALUES ('optimize')")


# -- current documents -------------------------------------------------------------

LIST_FROM = "kb_documents d JOIN kb_revisions r ON r.id = d.current_id"


def _filters(
    prefix: str | None,
    status: str | None,
    expired: bool | None,
    now: str,
    status_column: str = "d.status",
) -> tuple[str, list[Any]]:
    """Extra WHERE clauses for a list: path prefix, status, and whether ``valid_to`` has passed."""
    clauses, params = [], []
    if prefix:
        clauses.append("d.path >= ? AND d.path < ?")
        params += [prefix, prefix + "\U0010ffff"]
    if status:
        clauses.append(f"{status_column} = ?")
        params.append(status)
    if expired is True:
        clauses.append("r.valid_to IS NOT NULL AND r.valid_to <= ?")
        params.append(now)
    elif expired is False:
        clauses.append("(r.valid_to IS NULL OR r.valid_to > ?)")
        params.append(now)
    return "".join(f" AND {c}" for c in clauses), params


@dataclass
class ListFilter:
    """What a list of current documents is narrowed to."""

    prefix: str | None = None
    status: str | None = None
    expired: bool | None = None
    now: str = ""


async def list_current(
    conn: Connection, workspace_id: int, flt: ListFilter, *, after: str, limit: int
) -> list[Row]:
    where, params = _filters(flt.prefix, flt.status, flt.expired, flt.now)
    return await all_rows(
        conn,
        f"""SELECT {DOC_COLUMNS}, {REV_COLUMNS} FROM {LIST_FROM}
            WHERE d.workspace_id = ? AND d.state = 'live' AND d.path > ?{where}
            ORDER BY d.path LIMIT ?""",
        (workspace_id, after, *params, limit),
    )


def _matching(conn: Connection, match: Terms) -> tuple[str, str, str, str]:
    """FROM, WHERE, ORDER BY and the query text of a search of shown revisions.

    SQLite searches start from the index (CROSS JOIN keeps that order): the planner
    would otherwise walk a workspace's documents and query the index once for each.
    """
    if conn.dialect == "postgresql":
        return (  # kb_search holds the shown revision of each live document (weights as bm25's)
            "to_tsquery('simple', ?) AS q(query) CROSS JOIN kb_search s "
            "JOIN kb_documents d ON d.current_id = s.revision_id JOIN kb_revisions r ON r.id = d.current_id",
            "s.search_vector @@ q.query AND ",
            "ts_rank('{0.1, 0.2, 0.6, 1.0}', s.search_vector, q.query) DESC, d.path",
            match.tsquery(),
        )
    return (
        "kb_fts CROSS JOIN kb_documents d ON d.current_id = kb_fts.rowid "
        "JOIN kb_revisions r ON r.id = d.current_id",
        "kb_fts MATCH ? AND ",
        "kb_fts.rank",
        match.fts5(),
    )


#: Characters of a document's body its snippet is cut from on PostgreSQL: a message's most, so
#: a page of documents costs what a page of messages does (a body may hold 200,000). One more
#: is read, to tell a body cut there (``search.start_of``) from one that ends there.
SNIPPET_FROM = MAX_BODY


def _snippet(conn: Connection) -> str:
    """What a document's snippet is cut from: SQLite's own snippet of its body, its matches
    between ``search.START`` and ``search.STOP`` (``search.bounded`` makes it Markdown); on
    PostgreSQL the body's first :data:`SNIPPET_FROM` characters and one (``snippet_text``), which
    ``search.snippet`` cuts as it cuts a message's: ``ts_headline`` reads words by the
    database's character type, not as the index does (migration 0033), and would mark no
    ``École`` for ``ecole``. A match past them leaves the snippet the body's first words."""
    if conn.dialect == "postgresql":
        return f"NULL AS snippet, left(r.body, {SNIPPET_FROM + 1}) AS snippet_text"
    return "snippet(kb_fts, 2, char(2), char(3), '…', 16) AS snippet, NULL AS snippet_text"


async def search(
    conn: Connection, workspace_id: int, match: Terms, flt: ListFilter, *, limit: int, offset: int
) -> list[Row]:
    where, params = _filters(flt.prefix, flt.status, flt.expired, flt.now)
    found, matching, rank, terms = _matching(conn, match)
    return await all_rows(
        conn,
        f"""SELECT {DOC_COLUMNS}, {REV_COLUMNS}, {_snippet(conn)} FROM {found}
            WHERE {matching}d.workspace_id = ? AND d.state = 'live'{where}
            ORDER BY {rank} LIMIT ? OFFSET ?""",
        (terms, workspace_id, *params, limit, offset),
    )


async def list_at(
    conn: Connection,
    workspace_id: int,
    flt: ListFilter,
    *,
    as_of: str | None,
    valid_at: str | None,
    after: str,
    limit: int,
) -> list[Row]:
    """Documents as they were at ``as_of`` and as they held at ``valid_at`` (accepted revisions only)."""
    where, params = _time_clauses(as_of, valid_at)
    extra, extra_params = _filters(flt.prefix, None, None, flt.now)
    late, late_params = _filters(None, flt.status, flt.expired, flt.now, status_column="r.status")
    return await all_rows(
        conn,
        f"""WITH picks AS (
                SELECT d.id AS pick_id, (SELECT r.id FROM kb_revisions r WHERE r.document_id = d.id
                    AND {where} ORDER BY r.revision DESC LIMIT 1) AS pick_rev
                FROM kb_documents d WHERE d.workspace_id = ? AND d.path > ?{extra}
            )
            SELECT {DOC_COLUMNS}, {REV_COLUMNS} FROM picks p JOIN kb_documents d ON d.id = p.pick_id
            JOIN kb_revisions r ON r.id = p.pick_rev
            WHERE r.kind = 'write'{late} ORDER BY d.path LIMIT ?""",
        (*params, workspace_id, after, *extra_params, *late_params, limit),
    )


async def search_ranked(
    conn: Connection, workspace_id: int, match: Terms, exclude: list[int], limit: int
) -> list[Row]:
    """Settled live documents best matching ``match``, with their bodies (for the pack)."""
    skip = f" AND d.id NOT IN ({','.join('?' * len(exclude))})" if exclude else ""
    found, matching, rank, terms = _matching(conn, match)
    return await all_rows(
        conn,
        f"""SELECT {DOC_COLUMNS}, {REV_COLUMNS}, r.body FROM {found}
            WHERE {matching}d.workspace_id = ? AND d.state = 'live' AND d.status = 'settled'{skip}
            ORDER BY {rank} LIMIT ?""",
        (terms, workspace_id, *exclude, limit),
    )


async def current_by_paths(conn: Connection, workspace_id: int, paths: list[str]) -> list[Row]:
    """The shown revision (with body) of each of these paths that has one."""
    if not paths:
        return []
    marks = ",".join("?" * len(paths))
    return await all_rows(
        conn,
        f"""SELECT {DOC_COLUMNS}, {REV_COLUMNS}, r.body FROM {LIST_FROM}
            WHERE d.workspace_id = ? AND d.path IN ({marks})""",
        (workspace_id, *paths),
    )


# -- disputes ---------------------------------------------------------------------


async def insert_dispute(
    conn: Connection,
    document_id: int,
    workspace_id: int,
    revision: int,
    by: str,
    reason: str,
    sources: list[dict[str, Any]],
    now: str,
) -> int:
    new_id = await conn.insert(
        """INSERT INTO kb_disputes
               (document_id, workspace_id, revision, opened_by, reason, sources, opened_at)
           VALUES (?,?,?,?,?,?,?)""",
        (document_id, workspace_id, revision, by, reason, json.dumps(sources), now),
    )
    return new_id


async def open_disputes(conn: Connection, document_id: int, limit: int = 50) -> list[Row]:
    return await all_rows(
        conn,
        f"""SELECT id, revision, opened_by, reason, {_sources("kb_disputes", "kb_disputes")}, opened_at
           FROM kb_disputes WHERE document_id = ? AND outcome IS NULL ORDER BY id LIMIT ?""",
        (document_id, limit),
    )


async def count_open_disputes(conn: Connection, document_id: int) -> int:
    return await count(
        conn, "SELECT count(*) FROM kb_disputes WHERE document_id = ? AND outcome IS NULL", (document_id,)
    )


async def last_resolved_dispute(conn: Connection, document_id: int) -> Row | None:
    return await one(
        conn,
        f"""SELECT id, revision, opened_by, reason, {_sources("kb_disputes", "kb_disputes")}, opened_at,
                  outcome, resolved_by, resolved_at, note
           FROM kb_disputes WHERE document_id = ? AND outcome IS NOT NULL
           ORDER BY resolved_at DESC, id DESC LIMIT 1""",
        (document_id,),
    )


async def resolve_disputes(
    conn: Connection, document_id: int, outcome: str, by: str, at: str, note: str
) -> int:
    cur = await conn.execute(
        """UPDATE kb_disputes SET outcome = ?, resolved_by = ?, resolved_at = ?, note = ?
           WHERE document_id = ? AND outcome IS NULL""",
        (outcome, by, at, note, document_id),
    )
    return cur.rowcount


# -- the review queue ----------------------------------------------------------------


async def review_groups(
    conn: Connection, workspace_ids: list[int] | None, since: int, limit: int
) -> list[Row]:
    """Documents with open proposals, by their oldest open proposal (the cursor), oldest first."""
    where, params = "", []
    if workspace_ids is not None:
        where = f" AND r.workspace_id IN ({','.join('?' * len(workspace_ids)) or 'NULL'})"
        params = list(workspace_ids)
    return await all_rows(
        conn,
        f"""SELECT {DOC_COLUMNS}, w.slug AS workspace, min(r.id) AS first_id, count(*) AS proposals
            FROM kb_revisions r JOIN kb_documents d ON d.id = r.document_id
            JOIN workspaces w ON w.id = d.workspace_id
            WHERE r.status = 'proposed' AND r.revision > d.accepted_revision{where}
            GROUP BY d.id, w.slug HAVING min(r.id) > ? ORDER BY first_id LIMIT ?""",
        (*params, since, limit),
    )


async def proposed_since(conn: Connection, since: str, limit: int) -> list[Row]:
    """Proposals recorded at or after ``since`` that still wait for review, oldest first."""
    return await all_rows(
        conn,
        """SELECT r.id, r.document_id, r.revision, r.author_id, r.author, r.reason, r.excerpt,
                  d.path, w.slug AS workspace
             FROM kb_revisions r JOIN kb_documents d ON d.id = r.document_id
             JOIN workspaces w ON w.id = r.workspace_id
            WHERE r.status = 'proposed' AND r.recorded_at >= ? ORDER BY r.id LIMIT ?""",
        (since, limit),
    )


# -- read counters and stats -------------------------------------------------------


async def add_counts(conn: Connection, counts: list[tuple[int, int, int, str | None, str | None]]) -> None:
    """Add (document, shown, read, last shown, last read) to the documents' counters."""
    await conn.executemany(
        """UPDATE kb_documents SET shown_count = shown_count + ?, read_count = read_count + ?,
               last_shown_at = COALESCE(?, last_shown_at), last_read_at = COALESCE(?, last_read_at)
           WHERE id = ?""",
        [(shown, read, shown_at, read_at, doc) for doc, shown, read, shown_at, read_at in counts],
    )


#: When a document was last written or confirmed, whichever is later.
FRESHEST = "CASE WHEN d.confirmed_at > d.updated_at THEN d.confirmed_at ELSE d.updated_at END"
STATS_LISTS = {
    "never_read": "d.read_count = 0 AND d.shown_count = 0",
    "shown_never_read": "d.read_count = 0 AND d.shown_count > 0",
    "stale": f"{FRESHEST} < ?",
}


async def stats_list(
    conn: Connection, workspace_id: int, which: str, stale_before: str, limit: int
) -> list[Row]:
    params: tuple[Any, ...] = (stale_before,) if which == "stale" else ()
    return await all_rows(
        conn,
        f"""SELECT {DOC_COLUMNS}, {REV_COLUMNS} FROM {LIST_FROM}
            WHERE d.workspace_id = ? AND d.state = 'live' AND {STATS_LISTS[which]}
            ORDER BY {FRESHEST}, d.path LIMIT ?""",
        (workspace_id, *params, limit),
    )


def _count_of(condition: str) -> str:
    """How many rows meet ``condition`` (a truth is an integer on SQLite only)."""
    return f"COALESCE(sum(CASE WHEN {condition} THEN 1 ELSE 0 END), 0)"


async def stats_totals(conn: Connection, workspace_id: int, stale_before: str) -> Row | None:
    return await one(
        conn,
        f"""SELECT count(*) AS documents, COALESCE(sum(d.read_count), 0) AS reads,
                   COALESCE(sum(d.shown_count), 0) AS shown,
                   {_count_of(STATS_LISTS["never_read"])} AS never_read,
                   {_count_of(STATS_LISTS["shown_never_read"])} AS shown_never_read,
                   {_count_of(STATS_LISTS["stale"])} AS stale
            FROM kb_documents d WHERE d.workspace_id = ? AND d.state = 'live'""",
        (stale_before, workspace_id),
    )


# -- workspace deletion --------------------------------------------------------------


async def purge_workspace(conn: Connection, workspace_id: int) -> int:
    """Remove an (archived) workspace's knowledge, its index entries included; the document count."""
    documents = await count(conn, "SELECT count(*) FROM kb_documents WHERE workspace_id = ?", (workspace_id,))
    if not documents:
        return 0
    if conn.dialect == "sqlite":
        await conn.execute(
            """INSERT INTO kb_fts (kb_fts, rowid, path, title, body)
               SELECT 'delete', r.id, d.path, r.title, r.body FROM kb_documents d
               JOIN kb_revisions r ON r.id = d.current_id WHERE d.workspace_id = ? AND d.state = 'live'""",
            (workspace_id,),
        )
    for table in ("kb_disputes", "kb_revisions", "kb_documents"):
        await conn.execute(f"DELETE FROM {table} WHERE workspace_id = ?", (workspace_id,))
    await optimize_index(conn)
    return documents
