"""Messages, threads, tags, the inbox fan-out, receipts and full-text search."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..hub import Event
from .connection import Connection
from .inbox import REACHED
from .jsoncolumns import read_json
from .rows import MessageRow, Row, all_rows, count, one
from .search import WINDOW, Terms, relevance

#: A message body's most characters: a longer post is refused (services/posting.py).
MAX_BODY = 16_000

SELECT = """SELECT m.id, m.workspace_id, w.slug AS workspace, m.channel_id, c.slug AS channel,
    m.conversation_id, m.kind, a.handle AS author, a.kind AS author_kind, m.body, m.reply_to,
    m.thread_id, m.tags, m.mentions, m.meta, m.created_at, m.author_id"""
FROM = """messages m JOIN agents a ON a.id = m.author_id JOIN workspaces w ON w.id = m.workspace_id
    LEFT JOIN channels c ON c.id = m.channel_id"""


@dataclass
class MessageFilter:
    """What a list of messages is restricted to; ``None`` means no restriction.

    :meth:`where` is the stored read's restriction and :meth:`matches` the same one
    asked of a published message (a long-poll's wake): change them together.
    """

    workspace_ids: list[int] | None = None
    viewer_id: int | None = None  # conversations only where this agent is a member
    channel_id: int | None = None
    conversation_id: int | None = None
    thread_id: int | None = None
    author_id: int | None = None
    not_author_id: int | None = None  # a reader's own messages left out
    tag: str | None = None
    without_tags: tuple[str, ...] = ()  # messages carrying any of these left out
    roots: bool = False
    since: int | None = None
    before: int | None = None

    def where(self) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if self.workspace_ids is not None:
            clauses.append(f"m.workspace_id IN ({','.join('?' * len(self.workspace_ids)) or 'NULL'})")
            params += self.workspace_ids
        if self.viewer_id is not None:
            clauses.append(
                "(m.conversation_id IS NULL OR m.conversation_id IN "
                "(SELECT conversation_id FROM conversation_members WHERE agent_id = ?))"
            )
            params.append(self.viewer_id)
        for column, value in (
            ("m.channel_id", self.channel_id),
            ("m.conversation_id", self.conversation_id),
            ("m.thread_id", self.thread_id),
            ("m.author_id", self.author_id),
        ):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if self.not_author_id is not None:
            clauses.append("m.author_id != ?")
            params.append(self.not_author_id)
        if self.tag is not None:
            clauses.append("m.id IN (SELECT message_id FROM message_tags WHERE tag = ?)")
            params.append(self.tag)
        if self.without_tags:
            marks = ",".join("?" * len(self.without_tags))
            clauses.append(f"m.id NOT IN (SELECT message_id FROM message_tags WHERE tag IN ({marks}))")
            params += self.without_tags
        if self.roots:
            clauses.append("m.reply_to IS NULL")
        if self.since is not None:
            clauses.append("m.id > ?")
            params.append(self.since)
        if self.before is not None:
            clauses.append("m.id < ?")
            params.append(self.before)
        return " AND ".join(clauses) or "TRUE", params

    def matches(self, event: Event) -> bool:
        """Whether :meth:`where` selects the published message, clause for clause."""
        message = event.message
        return (
            (self.workspace_ids is None or event.workspace_id in self.workspace_ids)
            and (self.viewer_id is None or event.audience is None or self.viewer_id in event.audience)
            and (self.channel_id is None or event.channel_id == self.channel_id)
            and (self.conversation_id is None or event.conversation_id == self.conversation_id)
            and (self.thread_id is None or event.thread_id == self.thread_id)
            and (self.author_id is None or event.author_id == self.author_id)
            and (self.not_author_id is None or event.author_id != self.not_author_id)
            and (self.tag is None or self.tag in message["tags"])
            and not any(tag in message["tags"] for tag in self.without_tags)
            and (not self.roots or message["reply_to"] is None)
            and (self.since is None or event.id > self.since)
            and (self.before is None or event.id < self.before)
        )


@dataclass(frozen=True)
class InboxFilter:
    """An agent's inbox after a cursor: :meth:`where` for the stored read, :meth:`matches` for a wake."""

    agent_id: int
    since: int
    #: The one workspace the inbox's bot reaches (None: every one, for a human or an admin bot),
    #: as :data:`REACHED` keeps a stored read to it: a bot moved out of a workspace may still
    #: be among a message's recipients there (a conversation it was in, a thread it held).
    home_id: int | None = None

    def where(self) -> tuple[str, list[Any]]:
        return f"i.agent_id = ? AND i.message_id > ? AND {REACHED}", [self.agent_id, self.since]

    def matches(self, event: Event) -> bool:
        """Whether the published message landed in this inbox after the cursor."""
        return (
            self.agent_id in event.recipients
            and event.id > self.since
            and (self.home_id is None or event.workspace_id == self.home_id)
        )

    def reason(self, event: Event) -> str | None:
        """Why a matching message is in the inbox (the stored read's ``reason``)."""
        return event.recipients.get(self.agent_id) if self.matches(event) else None


@dataclass(frozen=True)
class Draft:
    """A message being posted: the fields its row and its API object share, said once."""

    kind: str
    body: str
    reply_to: int | None
    thread_id: int | None  # None: a root, its own thread
    tags: list[str]
    mentions: list[str]
    meta: dict[str, Any]
    created_at: str

    def written(
        self,
        message_id: int,
        *,
        workspace: str,
        channel: str | None,
        conversation: int | None,
        author: str,
        author_kind: str,
    ) -> dict[str, Any]:
        """The API's object for this draft once written as ``message_id``, as a read would render it."""
        return message_object(
            id=message_id,
            workspace=workspace,
            channel=channel,
            conversation=conversation,
            kind=self.kind,
            author=author,
            author_kind=author_kind,
            body=self.body,
            reply_to=self.reply_to,
            thread_id=self.thread_id or message_id,
            tags=list(self.tags),
            mentions=list(self.mentions),
            meta=self.meta,
            created_at=self.created_at,
        )


def message_object(
    *,
    id: int,
    workspace: str,
    channel: str | None,
    conversation: int | None,
    kind: str,
    author: str,
    author_kind: str,
    body: str,
    reply_to: int | None,
    thread_id: int,
    tags: list[Any],
    mentions: list[Any],
    meta: dict[str, Any],
    created_at: str,
    unreadable: bool = False,
) -> dict[str, Any]:
    """The API's message object (without the root-only fields): the one place its shape is written.

    Posting renders what it wrote with it (the answer to a post, and the live event
    every long-poll answers with); every read renders stored rows with it (:func:`to_dict`).
    """
    item = {
        "id": id,
        "workspace": workspace,
        "channel": channel,
        "conversation": conversation,
        "kind": kind,
        "author": author,
        "author_kind": author_kind,
        "body": body,
        "reply_to": reply_to,
        "thread_id": thread_id,
        "tags": tags,
        "mentions": mentions,
        "meta": meta,
        "created_at": created_at,
    }
    if unreadable:
        item["unreadable"] = True
    return item


def no_replies(authors: list[str]) -> dict[str, Any]:
    """The reply summary of a thread nobody answered yet."""
    return {"count": 0, "last_id": None, "last_at": None, "authors": authors}


def to_dict(row: Row) -> dict[str, Any]:
    """A stored message as the API shows it (:func:`message_object`), from a row that starts with ``SELECT``.

    The columns are taken by position, in ``SELECT``'s order: a page of fifty rows
    is read several times faster than column by name. A stored column that cannot
    be read back shows as its empty value, and the message as ``unreadable``: one
    bad row never fails the list it is in.
    """
    id_, _, workspace, _, channel, conversation, kind, author, author_kind = row[:9]
    body, reply_to, thread_id, tags_text, mentions_text, meta_text, created_at = row[9:16]
    tags, tags_ok = read_json("messages", id_, "tags", tags_text, [])
    mentions, mentions_ok = read_json("messages", id_, "mentions", mentions_text, [])
    meta, meta_ok = read_json("messages", id_, "meta", meta_text, {})
    return message_object(
        id=id_,
        workspace=workspace,
        channel=channel,
        conversation=conversation,
        kind=kind,
        author=author,
        author_kind=author_kind,
        body=body,
        reply_to=reply_to,
        thread_id=thread_id,
        tags=tags,
        mentions=mentions,
        meta=meta,
        created_at=created_at,
        unreadable=not (tags_ok and mentions_ok and meta_ok),
    )


@dataclass(frozen=True)
class WatchFilter:
    """What a bot watches besides its inbox: its channels and goal thread, but not its own
    messages nor the quiet ones (those the loop guard holds, a budget hold's notice).

    A watched channel not created yet is named by ``pending`` slug: :meth:`matches`
    knows it by name, :meth:`sources` by the ids of those created since.
    """

    workspace_id: int
    channel_ids: tuple[int, ...]
    pending: tuple[str, ...]
    thread_id: int | None
    since: int
    reader_id: int
    quiet_tags: tuple[str, ...]  # a message carrying one wakes no bot

    def sources(self, created: list[int]) -> list[MessageFilter]:
        """One filter per watched channel (with those ``created`` since) and for the goal thread."""
        found = [self._source(channel_id=i) for i in sorted({*self.channel_ids, *created})]
        if self.thread_id is not None:
            found.append(self._source(thread_id=self.thread_id))
        return found

    def _source(self, channel_id: int | None = None, thread_id: int | None = None) -> MessageFilter:
        return MessageFilter(
            channel_id=channel_id,
            thread_id=thread_id,
            since=self.since,
            not_author_id=self.reader_id,
            without_tags=self.quiet_tags,
        )

    def matches(self, event: Event) -> bool:
        """Whether the published message is one :meth:`sources` would select."""
        watched = (
            event.channel_id in self.channel_ids
            or (self.thread_id is not None and event.thread_id == self.thread_id)
            or (event.workspace_id == self.workspace_id and event.message["channel"] in self.pending)
        )
        return (
            watched
            and event.id > self.since
            and event.author_id != self.reader_id
            and not any(tag in event.message["tags"] for tag in self.quiet_tags)
        )


async def select(conn: Connection, flt: MessageFilter, *, descending: bool, limit: int) -> list[MessageRow]:
    return await all_rows(conn, *_selected(SELECT, flt, descending, limit))


async def select_ids(conn: Connection, flt: MessageFilter, *, descending: bool, limit: int) -> list[int]:
    """The ids :func:`select` would read: one value a row, for a reader that has the messages."""
    return [int(row[0]) for row in await all_rows(conn, *_selected("SELECT m.id", flt, descending, limit))]


def _selected(columns: str, flt: MessageFilter, descending: bool, limit: int) -> tuple[str, tuple[Any, ...]]:
    where, params = flt.where()
    order = "DESC" if descending else "ASC"
    return f"{columns} FROM {FROM} WHERE {where} ORDER BY m.id {order} LIMIT ?", (*params, limit)


async def by_id(conn: Connection, message_id: int) -> MessageRow | None:
    return await one(conn, f"{SELECT} FROM {FROM} WHERE m.id = ?", (message_id,))


async def by_ids(conn: Connection, message_ids: list[int]) -> list[MessageRow]:
    if not message_ids:
        return []
    marks = ",".join("?" * len(message_ids))
    return await all_rows(
        conn, f"{SELECT} FROM {FROM} WHERE m.id IN ({marks}) ORDER BY m.id", tuple(message_ids)
    )


async def ids_after(conn: Connection, after: int, limit: int) -> list[int]:
    """The ids of the first ``limit`` messages after ``after``, in order."""
    rows = await all_rows(conn, "SELECT id FROM messages WHERE id > ? ORDER BY id LIMIT ?", (after, limit))
    return [int(row[0]) for row in rows]


async def max_id(conn: Connection) -> int:
    """The highest message id handed out so far."""
    if conn.dialect == "postgresql":
        row = await one(conn, "SELECT COALESCE(MAX(id), 0) FROM messages")
    else:  # the AUTOINCREMENT high-water mark counts deleted messages too
        row = await one(conn, "SELECT seq FROM sqlite_sequence WHERE name = 'messages'")
    return int(row[0]) if row else 0


async def thread_info(conn: Connection, root_ids: list[int]) -> dict[int, dict[str, Any]]:
    """Reply summaries of roots: count, last reply, who took part."""
    if not root_ids:
        return {}
    marks = ",".join("?" * len(root_ids))
    info = {root: no_replies([]) for root in root_ids}
    for row in await all_rows(
        conn,
        f"SELECT root_id, reply_count, last_id, last_at FROM threads WHERE root_id IN ({marks})",
        tuple(root_ids),
    ):
        info[row["root_id"]].update(count=row["reply_count"], last_id=row["last_id"], last_at=row["last_at"])
    for row in await all_rows(
        conn,
        f"""SELECT tp.thread_id, a.handle FROM thread_participants tp JOIN agents a ON a.id = tp.agent_id
            WHERE tp.thread_id IN ({marks}) ORDER BY a.handle""",
        tuple(root_ids),
    ):
        info[row["thread_id"]]["authors"].append(row["handle"])
    return info


async def insert(
    conn: Connection,
    draft: Draft,
    *,
    workspace_id: int,
    channel_id: int | None,
    conversation_id: int | None,
    author_id: int,
    actor_id: int | None = None,
) -> int:
    """Append a message; a root (no ``thread_id``) becomes its own thread.

    ``actor_id`` is who caused an event message (the board writes it for them).

    The thread bookkeeping (a root's own thread id, the reply summary, who took
    part) is done by triggers inside the database: one statement instead of four.
    """
    new_id = await conn.insert(
        """INSERT INTO messages (workspace_id, channel_id, conversation_id, kind, author_id, actor_id,
               body, reply_to, thread_id, tags, mentions, meta, created_at)
           VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)""",
        (
            workspace_id,
            channel_id,
            conversation_id,
            draft.kind,
            author_id,
            actor_id,
            draft.body,
            draft.reply_to,
            draft.thread_id or 0,
            json.dumps(draft.tags),
            json.dumps(draft.mentions),
            json.dumps(draft.meta, separators=(",", ":")),
            draft.created_at,
        ),
    )
    if draft.tags:
        await conn.executemany(
            "INSERT INTO message_tags (tag, message_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
            [(tag, new_id) for tag in draft.tags],
        )
    return new_id


async def thread_participants(conn: Connection, thread_id: int) -> list[Row]:
    """Who posted in the thread (``agent_id``, ``kind``), with the workspace each lives in now
    (``workspace_id``, ``workspace``): a bot that moved since may no longer reach the thread."""
    return await all_rows(
        conn,
        """SELECT tp.agent_id, a.kind, a.workspace_id, s.slug AS workspace
             FROM thread_participants tp JOIN agents a ON a.id = tp.agent_id
             LEFT JOIN workspaces s ON s.id = a.workspace_id
            WHERE tp.thread_id = ?""",
        (thread_id,),
    )


async def on_thread(conn: Connection, thread_id: int, agent_id: int) -> bool:
    """Whether the agent posted in the thread or was mentioned in it."""
    row = await one(
        conn,
        """SELECT 1 FROM thread_participants WHERE thread_id = ? AND agent_id = ?
           UNION ALL
           SELECT 1 FROM inbox i JOIN messages m ON m.id = i.message_id
           WHERE m.thread_id = ? AND i.agent_id = ? AND i.reason = 'mention'""",
        (thread_id, agent_id, thread_id, agent_id),
    )
    return row is not None


async def add_to_inboxes(conn: Connection, message_id: int, reasons: dict[int, str]) -> None:
    await conn.executemany(
        "INSERT INTO inbox (agent_id, message_id, reason) VALUES (?,?,?) ON CONFLICT DO NOTHING",
        [(agent_id, message_id, reason) for agent_id, reason in reasons.items()],
    )


async def inbox_reasons(
    conn: Connection, message_ids: list[int], agent_id: int | None = None
) -> dict[int, dict[int, str]]:
    """Whose inbox each of these messages landed in, and why, in one query (with
    ``agent_id``, only that agent's inbox: a message not in it maps to ``{}``)."""
    if not message_ids:
        return {}
    marks = ",".join("?" * len(message_ids))
    sql = f"SELECT message_id, agent_id, reason FROM inbox WHERE message_id IN ({marks})"
    params: tuple[int, ...] = tuple(message_ids)
    if agent_id is not None:
        sql, params = sql + " AND agent_id = ?", (*params, agent_id)
    found: dict[int, dict[int, str]] = {m: {} for m in message_ids}
    for r in await all_rows(conn, sql, params):
        found[int(r["message_id"])][int(r["agent_id"])] = str(r["reason"])
    return found


async def inbox(conn: Connection, flt: InboxFilter, limit: int) -> list[MessageRow]:
    where, params = flt.where()
    return await all_rows(
        conn,
        f"""{SELECT}, i.reason FROM inbox i JOIN messages m ON m.id = i.message_id
            JOIN agents a ON a.id = m.author_id JOIN workspaces w ON w.id = m.workspace_id
            LEFT JOIN channels c ON c.id = m.channel_id
            WHERE {where} ORDER BY i.message_id LIMIT ?""",
        (*params, limit),
    )


async def unseen_count(conn: Connection, agent_id: int) -> int:
    return await count(
        conn,
        f"""SELECT count(*) FROM inbox i WHERE i.agent_id = ? AND {REACHED} AND NOT EXISTS
           (SELECT 1 FROM receipts r WHERE r.agent_id = i.agent_id AND r.message_id = i.message_id)""",
        (agent_id,),
    )


async def addressed(conn: Connection, agent_id: int, message_ids: list[int]) -> set[int]:
    """Which of these messages are in this agent's inbox."""
    if not message_ids:
        return set()
    marks = ",".join("?" * len(message_ids))
    rows = await all_rows(
        conn,
        f"SELECT message_id FROM inbox i WHERE agent_id = ? AND message_id IN ({marks}) AND {REACHED}",
        (agent_id, *message_ids),
    )
    return {row[0] for row in rows}


async def in_archived_workspaces(conn: Connection, message_ids: list[int]) -> set[int]:
    """Which of these messages are in an archived (read-only) workspace."""
    if not message_ids:
        return set()
    marks = ",".join("?" * len(message_ids))
    rows = await all_rows(
        conn,
        f"""SELECT m.id FROM messages m JOIN workspaces w ON w.id = m.workspace_id
            WHERE m.id IN ({marks}) AND w.archived_at IS NOT NULL""",
        tuple(message_ids),
    )
    return {row[0] for row in rows}


async def add_receipts(conn: Connection, agent_id: int, message_ids: list[int], state: str, now: str) -> None:
    await conn.executemany(
        "INSERT INTO receipts (message_id, agent_id, state, at) VALUES (?,?,?,?) ON CONFLICT DO NOTHING",
        [(message_id, agent_id, state, now) for message_id in message_ids],
    )


async def receipts_for(conn: Connection, message_id: int) -> list[Row]:
    """Each addressee of a message with when it saw and finished with it."""
    return await all_rows(
        conn,
        """SELECT a.handle, a.kind, i.reason,
                  (SELECT at FROM receipts r WHERE r.message_id = i.message_id
                     AND r.agent_id = i.agent_id AND r.state = 'seen') AS seen_at,
                  (SELECT at FROM receipts r WHERE r.message_id = i.message_id
                     AND r.agent_id = i.agent_id AND r.state = 'done') AS done_at
           FROM inbox i JOIN agents a ON a.id = i.agent_id WHERE i.message_id = ? ORDER BY a.handle""",
        (message_id,),
    )


class Found(NamedTuple):
    """A page of a search's window, and where the window lies."""

    rows: list[MessageRow]
    older: int | None  # the window's oldest id when it is full: the next window is before it
    newest: int | None  # the window's newest id: a page further down it reads before newest + 1


async def search(conn: Connection, match: Terms, flt: MessageFilter, limit: int, offset: int) -> Found:
    """The window's matches (store/search.py) ranked by relevance, then newest first,
    ``limit`` from ``offset``."""
    if flt.workspace_ids == []:
        return Found([], None, None)
    window = await _window(conn, match, flt)
    scores = relevance(match, [row[1] for row in window])
    ranked = sorted((-score, -row[0]) for score, row in zip(scores, window, strict=True))
    older = window[-1][0] if len(window) == WINDOW else None
    newest = window[0][0] if window else None
    ids = [-negated for _, negated in ranked[offset : offset + limit]]
    if not ids:
        return Found([], older, newest)
    marks = ",".join("?" * len(ids))
    rows = await all_rows(conn, f"{SELECT} FROM {FROM} WHERE m.id IN ({marks})", tuple(ids))
    by_id = {row["id"]: row for row in rows}
    return Found([by_id[i] for i in ids if i in by_id], older, newest)


async def _window(conn: Connection, match: Terms, flt: MessageFilter) -> list[Row]:
    """The newest :data:`WINDOW` matches of the filter: (id, body), newest first."""
    where, params = flt.where()
    if conn.dialect == "postgresql":
        return await all_rows(
            conn,
            f"""SELECT m.id, m.body FROM messages m
                WHERE m.search_vector @@ to_tsquery('simple', ?) AND {where}
                ORDER BY m.id DESC LIMIT {WINDOW}""",
            (match.tsquery(), *params),
        )
    before = "" if flt.before is None else f" AND messages_fts.rowid < {int(flt.before)}"
    return await all_rows(
        conn,
        f"""SELECT m.id, m.body FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid
            WHERE messages_fts MATCH ?{before} AND {where}
            ORDER BY messages_fts.rowid DESC LIMIT {WINDOW}""",
        (match.fts5_in(flt.workspace_ids), *params),
    )
