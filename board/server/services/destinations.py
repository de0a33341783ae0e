"""A human's destinations for notifications out of band: where, which kinds, quiet hours, the log.

Everything here is the caller's own: a destination belongs to the human who made it, and
another's is NOT_FOUND. A bot is refused every call (``notify.manage``): it can neither
read nor set a destination. A destination's secrets (a webhook's signing secret, a Slack
webhook's URL, which is its credential, an email login's password) are written, never
read back: an answer says ``secret_set`` instead, and an update that leaves a secret out
keeps the stored one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..errors import InvalidArgument, NotFound
from ..hub import Signal
from ..outbox import guard
from ..principal import Principal
from ..store import notifications as store
from ..store.connection import Connection
from ..store.rows import Row
from ..store.writer import emit
from ..validation import arg
from . import actions, audit, outbound
from .context import Context
from .paging import Page, bounded_page
from .quietcache import QUIET

DESTINATION_KINDS = ("webhook", "slack", "ntfy", "email")
#: Each kind's settings: the ones it needs, and which of them are secret.
FIELDS: dict[str, tuple[str, ...]] = {
    "webhook": ("url", "secret"),
    "slack": ("url",),
    "ntfy": ("url",),
    "email": ("host", "port", "security", "username", "password", "from", "to"),
}
REQUIRED: dict[str, tuple[str, ...]] = {
    "webhook": ("url", "secret"),
    "slack": ("url",),
    "ntfy": ("url",),
    "email": ("host", "port", "from", "to"),
}
SECRETS = ("secret", "password")
SECRET_URL = ("slack",)  # a Slack incoming webhook's URL is its credential
SECURITY = ("none", "starttls", "tls")
MAX_DESTINATIONS = 20


@dataclass
class DestinationInput:
    """A destination's fields; on an update, the ones left out stay as they are."""

    name: str | None = arg(None, min_len=1, max_len=80, help="What the human calls it.")
    kind: str | None = arg(None, choices=DESTINATION_KINDS, help="Set at creation only.")
    url: str | None = arg(None, max_len=2000, help="webhook, slack, ntfy: where to POST.")
    secret: str | None = arg(None, min_len=16, max_len=200, help="webhook: the HMAC signing secret.")
    host: str | None = arg(None, max_len=255, help="email: the SMTP server.")
    port: int | None = arg(None, min=1, max=65535)
    security: str | None = arg(None, choices=SECURITY, help="email: none, starttls or tls.")
    username: str | None = arg(None, max_len=200)
    password: str | None = arg(None, max_len=200)
    sender: str | None = arg(None, max_len=320, name="from", help="email: the From address.")
    to: str | None = arg(None, max_len=320, help="email: the address to write to.")
    active: bool | None = arg(None, help="false: nothing is sent there until it is turned back on.")


@dataclass
class KindsInput:
    kinds: list[str] = arg(max_items=len(outbound.KINDS), help="The kinds of event sent there.")


@dataclass
class QuietHoursInput:
    start: str = arg(pattern=r"([01][0-9]|2[0-3]):[0-5][0-9]", help="Local time, HH:MM.")
    end: str = arg(pattern=r"([01][0-9]|2[0-3]):[0-5][0-9]", help="Local time, HH:MM; may be the next day.")
    timezone: str = arg(
        "UTC", max_len=64, help="An IANA time zone (Europe/Paris), UTC, or an offset (UTC+02:00)."
    )


@dataclass
class LogQuery:
    before: int | None = arg(None, min=1, help="Notifications older than this id.")
    limit: int = arg(20, min=1, max=200)


def _given(req: DestinationInput) -> dict[str, Any]:
    values = {
        f: getattr(req, f)
        for f in ("url", "secret", "host", "port", "security", "username", "password", "to")
    }
    values["from"] = req.sender
    return {k: v for k, v in values.items() if v is not None}


def _check(kind: str, settings: dict[str, Any]) -> dict[str, Any]:
    """The settings a destination of ``kind`` keeps, checked; INVALID_ARGUMENT names what to change."""
    unknown = sorted(set(settings) - set(FIELDS[kind]))
    if unknown:
        raise InvalidArgument(f"A {kind} destination takes no {', '.join(unknown)}.", field=unknown[0])
    missing = [f for f in REQUIRED[kind] if not settings.get(f)]
    if missing:
        raise InvalidArgument(f"A {kind} destination needs {', '.join(missing)}.", field=missing[0])
    if "url" in settings:
        url = urlsplit(settings["url"])
        if url.scheme not in ("http", "https") or not url.hostname:
            raise InvalidArgument("url must be an http or https URL.", field="url")
    if kind == "email":
        settings.setdefault("security", "starttls")
        for f in ("from", "to"):
            if "@" not in settings[f] or any(c in settings[f] for c in "\r\n"):
                raise InvalidArgument(f"{f} must be one email address.", field=f)
    return settings


def _reachable(given: dict[str, Any], allow_local: bool) -> None:
    """Refuse, when saved, a URL or mail server given as an address the board does not send to.

    Only a literal address is known now; a name is checked on the addresses it resolves to
    when a notification is sent (:mod:`..outbox.guard`), since what it resolves to can change.
    """
    if allow_local:
        return
    for f, host in (("url", urlsplit(given.get("url") or "").hostname), ("host", given.get("host"))):
        kind = guard.why_refused(host) if host else None
        if kind is not None:
            raise InvalidArgument(
                f"{host} is a {kind} address: the board does not send there unless {guard.SETTING}.",
                field=f,
            )


def _audited(given: dict[str, Any]) -> dict[str, Any]:
    """What the audit log keeps of settings given: no secret, and of a URL (which may hold a
    token, in its path or its query) only that one was given."""
    hidden = (*SECRETS, "url")
    return {
        **{f: v for f, v in given.items() if f not in hidden},
        **{f"{f}_set": True for f in hidden if given.get(f)},
    }


async def _audit(conn: Connection, ctx: Context, p: Principal, action: str, row: Row, **details: Any) -> None:
    await audit.record(
        conn,
        ctx,
        p,
        action,
        f"destination:{row['id']}",
        details={"name": row["name"], "kind": row["kind"], **details},
    )


def _public(row: Row, kinds: list[str], failing: dict[int, str]) -> dict[str, Any]:
    """A destination as answered: its settings without their secrets, and ``failing``, the
    error of its newest notification tried when that one has not gone through (else None):
    what tells its human, on Settings, that this way of reaching them is broken."""
    settings = json.loads(row["settings"])
    hidden = SECRETS + (("url",) if row["kind"] in SECRET_URL else ())
    return {
        "id": int(row["id"]),
        "name": row["name"],
        "kind": row["kind"],
        "active": bool(row["active"]),
        "created_at": row["created_at"],
        "kinds": kinds,
        "settings": {k: v for k, v in settings.items() if k not in hidden},
        "secret_set": any(settings.get(k) for k in hidden),
        "failing": failing.get(int(row["id"])),
    }


async def _own(conn: Connection, p: Principal, destination_id: int) -> Row:
    row = await store.destination(conn, destination_id)
    if row is None or row["agent_id"] != p.agent_id:
        raise NotFound("destination")
    return row


async def _answer(conn: Connection, row: Row) -> dict[str, Any]:
    ids = [int(row["id"])]
    kinds = await store.kinds_of(conn, ids)
    return _public(row, kinds[ids[0]], await store.failing(conn, ids))


async def list_destinations(ctx: Context, p: Principal) -> dict[str, Any]:
    """The caller's destinations, oldest first, and their quiet hours."""
    actions.require(p, "notify.manage")

    async def read(conn: Connection) -> dict[str, Any]:
        rows = await store.destinations_of(conn, p.agent_id)
        ids = [int(r["id"]) for r in rows]
        kinds, failing = await store.kinds_of(conn, ids), await store.failing(conn, ids)
        return {
            "destinations": [_public(r, kinds[int(r["id"])], failing) for r in rows],
            "quiet_hours": _quiet(await store.quiet_hours(conn, p.agent_id)),
        }

    return await ctx.db.read(read)


async def get_destination(ctx: Context, p: Principal, destination_id: int) -> dict[str, Any]:
    actions.require(p, "notify.manage")

    async def read(conn: Connection) -> dict[str, Any]:
        return await _answer(conn, await _own(conn, p, destination_id))

    return await ctx.db.read(read)


async def create(ctx: Context, p: Principal, req: DestinationInput) -> dict[str, Any]:
    """A new destination, active, sent no kind until kinds are chosen (unless ``kinds`` given)."""
    actions.require(p, "notify.manage")
    if req.kind is None or req.name is None:
        raise InvalidArgument("A destination needs a name and a kind.", field="kind" if req.name else "name")
    name, kind = req.name, req.kind
    settings = _check(kind, _given(req))
    _reachable(settings, bool(ctx.settings.notify_allow_local))

    async def write(conn: Connection) -> dict[str, Any]:
        if len(await store.destinations_of(conn, p.agent_id)) >= MAX_DESTINATIONS:
            raise InvalidArgument(f"At most {MAX_DESTINATIONS} destinations; remove one first.")
        destination_id = await store.insert_destination(
            conn, p.agent_id, name, kind, settings, req.active is not False, ctx.now()
        )
        row = await _own(conn, p, destination_id)
        await _audit(
            conn, ctx, p, "destination.create", row, active=bool(row["active"]), **_audited(settings)
        )
        return await _answer(conn, row)

    return await ctx.db.write(write)


async def update(ctx: Context, p: Principal, destination_id: int, req: DestinationInput) -> dict[str, Any]:
    """Change the fields given; a secret left out keeps its stored value."""
    actions.require(p, "notify.manage")
    _reachable(_given(req), bool(ctx.settings.notify_allow_local))

    async def write(conn: Connection) -> dict[str, Any]:
        row = await _own(conn, p, destination_id)
        if req.kind is not None and req.kind != row["kind"]:
            raise InvalidArgument("A destination's kind is set at creation; add a new one.", field="kind")
        settings = _check(str(row["kind"]), json.loads(row["settings"]) | _given(req))
        active = bool(row["active"]) if req.active is None else req.active
        await store.update_destination(conn, destination_id, req.name or row["name"], settings, active)
        changed = await _own(conn, p, destination_id)
        given = _given(req) | ({"name": req.name} if req.name else {})
        await _audit(conn, ctx, p, "destination.update", changed, active=active, **_audited(given))
        return await _answer(conn, changed)

    return await ctx.db.write(write)


async def delete(ctx: Context, p: Principal, destination_id: int) -> dict[str, Any]:
    """Remove a destination with its kinds and its log."""
    actions.require(p, "notify.manage")

    async def write(conn: Connection) -> dict[str, Any]:
        row = await _own(conn, p, destination_id)
        await store.delete_destination(conn, destination_id)
        await _audit(conn, ctx, p, "destination.delete", row)
        return {"id": destination_id, "deleted": True}

    return await ctx.db.write(write)


async def set_kinds(ctx: Context, p: Principal, destination_id: int, req: KindsInput) -> dict[str, Any]:
    """Which kinds of event go to this destination (the whole set)."""
    actions.require(p, "notify.manage")
    unknown = sorted(set(req.kinds) - set(outbound.KINDS))
    if unknown:
        raise InvalidArgument(
            f"No kind {', '.join(unknown)}; the kinds are {', '.join(outbound.KINDS)}.", field="kinds"
        )

    async def write(conn: Connection) -> dict[str, Any]:
        row = await _own(conn, p, destination_id)
        await store.set_kinds(conn, destination_id, sorted(set(req.kinds)))
        await _audit(conn, ctx, p, "destination.kinds", row, kinds=sorted(set(req.kinds)))
        return await _answer(conn, row)

    return await ctx.db.write(write)


def _minutes(hhmm: str) -> int:
    hours, minutes = hhmm.split(":")
    return int(hours) * 60 + int(minutes)


def _quiet(row: Row | None) -> dict[str, Any] | None:
    if row is None:
        return None
    start, end = int(row["start_min"]), int(row["end_min"])
    return {
        "start": f"{start // 60:02d}:{start % 60:02d}",
        "end": f"{end // 60:02d}:{end % 60:02d}",
        "timezone": row["timezone"],
    }


async def set_quiet_hours(ctx: Context, p: Principal, req: QuietHoursInput) -> dict[str, Any]:
    """The caller's quiet hours: non-urgent kinds wait for their end (``outbound.URGENT`` do not)."""
    actions.require(p, "notify.manage")
    try:
        outbound.zone(req.timezone)
    except ValueError as exc:
        raise InvalidArgument(
            f"{exc}; give an IANA name such as Europe/Paris, or an offset such as UTC+02:00.",
            field="timezone",
        ) from exc
    start, end = _minutes(req.start), _minutes(req.end)
    if start == end:
        raise InvalidArgument("start and end are the same time: no quiet hours. Delete them instead.")

    async def write(conn: Connection) -> dict[str, Any] | None:
        await store.set_quiet_hours(conn, p.agent_id, start, end, req.timezone)
        emit(Signal(QUIET, p.agent_id))
        quiet = _quiet(await store.quiet_hours(conn, p.agent_id))
        await audit.record(conn, ctx, p, "quiet_hours.set", p.handle, details=quiet)
        return quiet

    return {"quiet_hours": await ctx.db.write(write)}


async def clear_quiet_hours(ctx: Context, p: Principal) -> dict[str, Any]:
    actions.require(p, "notify.manage")

    async def write(conn: Connection) -> None:
        await store.clear_quiet_hours(conn, p.agent_id)
        emit(Signal(QUIET, p.agent_id))
        await audit.record(conn, ctx, p, "quiet_hours.clear", p.handle)

    await ctx.db.write(write)
    return {"quiet_hours": None}


async def send_test(ctx: Context, p: Principal, destination_id: int) -> dict[str, Any]:
    """Put a test notification in this destination's outbox now (whatever its kinds and quiet hours)."""
    actions.require(p, "notify.manage")

    async def write(conn: Connection) -> dict[str, Any]:
        row = await _own(conn, p, destination_id)
        now = outbound.stamp(ctx.clock.now())
        test = store.Outgoing(
            idem_key=f"test:{now}:{destination_id}",
            destination_id=destination_id,
            kind="test",
            subject=f"Test from the board to {row['name']}",
            text=f"{p.handle} sent this test; when you read it, the destination works.",
            link="/settings",
            next_at=now,
        )
        await store.enqueue(conn, test, ctx.now())
        outbound.wake()
        found = await store.by_idem_key(conn, test.idem_key)
        return notification_dict(found)

    return await ctx.db.write(write)


def notification_dict(row: Row) -> dict[str, Any]:
    return {
        "id": int(row["id"]),
        "kind": row["kind"],
        "subject": row["subject"],
        "link": row["link"],
        "state": row["state"],
        "attempts": int(row["attempts"]),
        "next_at": row["next_at"],
        "last_error": row["last_error"],
        "created_at": row["created_at"],
        "sent_at": row["sent_at"],
    }


async def log(ctx: Context, p: Principal, destination_id: int, q: LogQuery) -> Page:
    """A destination's notifications, newest first: state, attempts and error of each."""
    actions.require(p, "notify.manage")

    async def read(conn: Connection) -> Page:
        await _own(conn, p, destination_id)
        rows = await store.log(conn, destination_id, q.before, q.limit + 1)
        items = [notification_dict(r) for r in rows]
        return bounded_page(ctx, "notifications", items, q.limit, None, descending=True)

    return await ctx.db.read(read)
