"""What a human's open tab is told of its inbox: the unread count, which messages on the page
became read, which arrivals to highlight, and what to raise a browser notification for.

One :class:`Watch` per live stream. It reads nothing per message: an arrival's kind comes from
the hub's event (its inbox reason and tags); only the notifications raised for replies read
their threads' roots, in one read a batch, to name each thread in its title as the mailed one
does. It reads the unread count when the inbox changed (an arrival, a receipt), the page's
highlighted ids still unread when receipts changed, the pending routine versions and the runs
failed since the tab opened when the routines changed, the crashed or misconfigured bots when
the fleet changed, and the proposals made since the tab opened when one was made
(``knowledge.documents.REVIEWS``), each only while its kind of notification is on. A human is
not told of a proposal of their own.
"""

from __future__ import annotations

from typing import Any

from ..hub import Key, Signal
from ..principal import Principal
from ..store import fleet as fleet_store
from ..store import inbox as store
from ..store import knowledge as knowledge_store
from ..store import messages as message_store
from ..store import routines as routine_store
from ..store.connection import Connection
from ..store.rows import Row
from . import actions, fleet, inbox, messages, outbound, routines
from .context import Context
from .knowledge.documents import REVIEWS
from .live import Arrival

#: At most this many highlighted ids are followed per tab (a page shows fewer).
TRACKED = 500
CRASHED_READ = 500
#: At most this many runs failed, or proposals made, since a tab opened are read per change.
SINCE_READ = 500


class Watch:
    def __init__(self, ctx: Context, p: Principal, shown: list[int]) -> None:
        self.ctx, self.p = ctx, p
        self.tracked = list(dict.fromkeys(shown))[-TRACKED:]
        self.on: dict[str, bool] = {}
        self.pending: set[tuple[str, int]] = set()
        self.crashed: set[tuple[str, str]] = set()
        self.opened = ctx.now()
        self.failed: set[int] = set()
        self.reviews: set[int] = set()

    def keys(self) -> tuple[Key, ...]:
        """The signal keys a stream follows for this watch (besides the inbox's own)."""
        return (inbox.settings_changed(self.p.agent_id), routines.CHANGES, fleet.CHANGES, REVIEWS)

    async def start(self) -> dict[str, Any]:
        """The first frame: the unread count, and which shown ids are unread (the rest read)."""
        await self._read_settings()
        unread = await self.ctx.db.read(lambda conn: self._state(conn, self.tracked))
        return self._frame(unread, [], [])

    async def update(self, arrivals: list[Arrival], signals: set[Key]) -> dict[str, Any] | None:
        """The frame for what a batch brought, or None when it changes nothing the tab shows."""
        if inbox.settings_changed(self.p.agent_id) in signals:
            await self._read_settings()
        notes = await self._notes(arrivals)
        fresh = [a.event.id for a in arrivals if a.reason in inbox.HIGHLIGHTED]
        self.tracked = list(dict.fromkeys([*self.tracked, *fresh]))[-TRACKED:]
        if routines.CHANGES in signals and self.on.get("routine"):
            notes += await self._new_routines()
        if fleet.CHANGES in signals and self.on.get("crashed"):
            notes += await self._new_crashes()
        if routines.CHANGES in signals and self.on.get("run_failed"):
            notes += await self._new_failures()
        if REVIEWS in signals and self.on.get("review"):
            notes += await self._new_reviews()
        receipts = messages.inbox_changes(self.p.agent_id) in signals
        if not (arrivals or receipts or notes):
            return None
        state = await self.ctx.db.read(lambda conn: self._state(conn, self.tracked))
        return self._frame(state, fresh, notes)

    async def _state(self, conn: Connection, ids: list[int]) -> dict[str, Any]:
        unread = await store.unread_among(conn, self.p.agent_id, ids)
        return {"unread": await store.unread_count(conn, self.p.agent_id), "ids": unread}

    def _frame(self, state: dict[str, Any], fresh: list[int], notes: list[dict[str, Any]]) -> dict[str, Any]:
        unread: dict[int, str] = state["ids"]
        read = [i for i in self.tracked if i not in unread]
        self.tracked = [i for i in self.tracked if i in unread]
        return {
            "unread": state["unread"],
            "highlight": [i for i in fresh if i in unread],
            "read": read,
            "notify": notes,
        }

    async def _read_settings(self) -> None:
        self.on = await inbox.notify_settings(self.ctx, self.p)
        if self.on["routine"]:
            self.pending = await self._pending()
        if self.on["crashed"]:
            self.crashed = await self._crashed()
        if self.on["run_failed"]:
            self.failed = {int(r["id"]) for r in await self._failures()}
        if self.on["review"]:
            self.reviews = {int(r["id"]) for r in await self._proposals()}

    async def _notes(self, arrivals: list[Arrival]) -> list[dict[str, Any]]:
        """The notifications of a batch's arrivals whose kinds are on; a mention's or a DM's
        names its thread, the threads' roots read in one go for the whole batch."""
        told = [
            (arrival.event.message, kind)
            for arrival in arrivals
            if (kind := inbox.notice_kind(arrival.reason)) is not None and self.on.get(kind)
        ]
        named = [message for message, kind in told if kind != "held"]
        wanted = outbound.replied_roots(named)
        roots = await self.ctx.db.read(lambda conn: message_store.by_ids(conn, wanted)) if wanted else []
        threads = outbound.thread_names(named, roots)
        notes = []
        for message, kind in told:
            title, url = outbound.message_notice(message, kind, threads.get(message["thread_id"]))
            preview = message["body"][: messages.PREVIEW_CHARS]
            notes.append(note(kind, title, preview, url, f"m{message['id']}"))
        return notes

    async def _pending(self) -> set[tuple[str, int]]:
        listed = await routines.list_routines(self.ctx, self.p, routines.RoutineList())
        return {(r["name"], v) for r in listed["routines"] for v in r["pending"]}

    async def _new_routines(self) -> list[dict[str, Any]]:
        now = await self._pending()
        new, self.pending = sorted(now - self.pending), now
        return [
            note(
                "routine",
                f"Routine {name} version {version} awaits approval",
                "Approve or reject it on the routines page.",
                f"/routines#pending-{name}-{version}",
                f"routine-{name}-{version}",
            )
            for name, version in new
        ]

    async def _crashed(self) -> set[tuple[str, str]]:
        if not actions.allowed(self.p, "fleet.view"):
            return set()
        return await self.ctx.db.read(lambda conn: fleet_store.broken_bots(conn, CRASHED_READ))

    async def _new_crashes(self) -> list[dict[str, Any]]:
        now = await self._crashed()
        new, self.crashed = sorted(now - self.crashed), now
        return [
            note(
                "crashed",
                f"Bot {handle} {state}",
                f"Its keeper reported it {state}; see its log on the fleet page.",
                f"/fleet/bots/{handle}",
                f"{state}-{handle}",
            )
            for handle, state in new
        ]

    async def _failures(self) -> list[Row]:
        return await self.ctx.db.read(lambda conn: routine_store.failed_since(conn, self.opened, SINCE_READ))

    async def _new_failures(self) -> list[dict[str, Any]]:
        new = [r for r in await self._failures() if int(r["id"]) not in self.failed]
        self.failed |= {int(r["id"]) for r in new}
        return [
            note(
                "run_failed",
                f"Run {r['id']} of routine {r['name']} {str(r['state']).replace('_', ' ')}",
                str(r["outcome"])[: messages.PREVIEW_CHARS] or "See the routine's thread.",
                f"/t/{r['thread_id']}",
                f"run-{r['id']}",
            )
            for r in new
        ]

    async def _proposals(self) -> list[Row]:
        return await self.ctx.db.read(
            lambda conn: knowledge_store.proposed_since(conn, self.opened, SINCE_READ)
        )

    async def _new_reviews(self) -> list[dict[str, Any]]:
        new = [r for r in await self._proposals() if int(r["id"]) not in self.reviews]
        self.reviews |= {int(r["id"]) for r in new}
        return [
            note(
                "review",
                f"{r['author']} proposes a change to {r['path']} in {r['workspace']}",
                str(r["reason"] or r["excerpt"])[: messages.PREVIEW_CHARS],
                "/kb/review",
                f"kb-{r['document_id']}-{r['revision']}",
            )
            for r in new
            if r["author_id"] != self.p.agent_id
        ]


def note(kind: str, title: str, body: str, url: str, tag: str) -> dict[str, Any]:
    """One browser notification: ``tag`` lets two tabs raising the same one show it once."""
    return {"kind": kind, "title": title, "body": body, "url": url, "tag": tag}


def signal_keys(batch: list[Any]) -> set[Key]:
    return {item.key for item in batch if isinstance(item, Signal)}
