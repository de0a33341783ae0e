"""Issues in from the forge: a signed webhook delivery becomes a thread, a reply, a closed claim.

A source (``/api/intake/<name>``) is one webhook of GitHub or Forgejo. Its credential
is the signature of each delivery under the source's secret (services/forge.py), checked
before anything is read of the delivery or written; an unknown source answers exactly
as a bad signature does, so the answer says nothing of which sources exist. A delivery
acts only in the workspaces its repository is mapped to, and as the board itself (the
system agent ``board``): the forge's user is named in the text and in ``meta.intake``.

Text from the forge mentions nobody: an ``@handle`` in an issue mentions no bot (anyone
who can open an issue could otherwise wake any bot of the workspace). The one mention is
the bot a human mapped to one of the issue's labels, named by the board.

Only humans manage sources (``intake.manage``); a secret and a token are written, never
read back: every answer says ``secret_set`` and ``token_set`` instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ..errors import DeliveryRepeated, InvalidArgument, NotFound, StaleDelivery, Unauthenticated
from ..principal import Principal
from ..store import identity as identity_store
from ..store import intake as store
from ..store import messages as message_store
from ..store import replies as reply_store
from ..store import workspaces as workspace_store
from ..store.connection import Connection
from ..store.rows import MessageRow, Row, WorkspaceRow
from ..validation import arg
from . import actions, audit, claims, forge, replies, scope
from .context import Context
from .paging import Page, bounded_page
from .posting import MAX_BODY, SLUG_PATTERN, append, board_principal, channel_for_post

NAME_PATTERN = SLUG_PATTERN
REPOSITORY_PATTERN = r"[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}"
FORGE_NAMES = {"github": "GitHub", "forgejo": "Forgejo"}
#: How much of an issue's or comment's text a message carries (a message holds 16,000).
TEXT_LIMIT = MAX_BODY - 1000
INTAKE_TAG = "intake"


# -- managing sources (humans) -----------------------------------------------------------


@dataclass
class MappingInput:
    repository: str = arg(pattern=REPOSITORY_PATTERN, help="The repository as owner/name.")
    workspace: str = arg(pattern=SLUG_PATTERN)
    channel: str = arg(pattern=SLUG_PATTERN, help="Where its issues become threads.")
    label: str = arg("", max_len=64, help="Only issues with this label ('' for every other issue).")
    bot: str | None = arg(None, pattern=r"[A-Za-z0-9._-]{2,32}", help="The bot to mention on them.")
    reply_out: bool = arg(
        False, help="A bot's replies tagged forge and the done summary go back to the issue as comments."
    )


@dataclass
class SourceInput:
    forge: str = arg(choices=forge.FORGES)
    secret: str | None = arg(
        None, min_len=16, max_len=256, help="The webhook's secret; required to create, kept if omitted."
    )
    api_url: str = arg("", max_len=500, pattern=r"(https?://\S+)?", help="The forge's API base URL.")
    api_token: str | None = arg(None, min_len=1, max_len=500, help="A token for replies; kept if omitted.")
    mappings: list[MappingInput] | None = arg(
        None, max_items=100, help="Every mapping of the source; kept if omitted."
    )


@dataclass
class SourceList:
    since: str = arg("", max_len=64, help="The source name to continue after (next_since).")
    limit: int = arg(20, min=1, max=500)
    max_bytes: int | None = arg(None, min=1)


@dataclass
class DeliveryList:
    source: str | None = arg(None, pattern=NAME_PATTERN)
    before: int = arg(0, min=0, help="A delivery id to continue below (next_before).")
    limit: int = arg(20, min=1, max=500)
    max_bytes: int | None = arg(None, min=1)


def _source_view(row: Row, mappings: list[Row]) -> dict[str, Any]:
    return {
        "name": row["name"],
        "forge": row["forge"],
        "url": f"/api/intake/{row['name']}",
        "api_url": row["api_url"],
        "secret_set": bool(row["secret_set"]),
        "token_set": bool(row["token_set"]),
        "created_by": row["created_by"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
        "mappings": [
            {
                "repository": m["repository"],
                "label": m["label"],
                "workspace": m["workspace"],
                "channel": m["channel"],
                "bot": m["bot"],
                "reply_out": bool(m["reply_out"]),
            }
            for m in mappings
            if m["source_id"] == row["id"]
        ],
    }


def valid_name(name: str) -> bool:
    return re.fullmatch(NAME_PATTERN, name) is not None


async def _mapping(conn: Connection, p: Principal, m: MappingInput) -> store.Mapping:
    workspace = await scope.resolve(conn, p, m.workspace)
    bot_id = None
    if m.bot is not None:
        bot = await identity_store.agent_by_handle(conn, m.bot)
        if bot is None or bot["kind"] != "bot" or bot["workspace_id"] != workspace["id"]:
            raise InvalidArgument(f"{m.bot} is not a bot of workspace {m.workspace}.", field="mappings")
        bot_id = bot["id"]
    return store.Mapping(m.repository.lower(), m.label, workspace["id"], m.channel, bot_id, m.reply_out)


async def put_source(ctx: Context, p: Principal, name: str, req: SourceInput) -> dict[str, Any]:
    """Create or change a source and set its mappings (kept when not given); a new source
    needs its secret."""
    actions.require(p, "intake.manage")
    if not valid_name(name):
        raise InvalidArgument("A source's name is 2-64 of [a-z0-9._-]; it is the webhook URL's last part.")
    _refuse_repeats(req.mappings or [])

    async def write(conn: Connection) -> dict[str, Any]:
        existing = await store.source(conn, name)
        if existing is None and req.secret is None:
            raise InvalidArgument("A new source needs its webhook secret.", field="secret")
        source_id = await store.put_source(
            conn, name, req.forge, req.api_url, req.secret, req.api_token, p.agent_id, ctx.now()
        )
        if req.mappings is not None:
            await store.set_mappings(conn, source_id, [await _mapping(conn, p, m) for m in req.mappings])
        kept = await store.mappings(conn, [source_id])
        await audit.record(
            conn,
            ctx,
            p,
            "intake.source.create" if existing is None else "intake.source.update",
            name,
            details={
                "forge": req.forge,
                "secret_changed": req.secret is not None,
                "token_changed": req.api_token is not None,
                "repositories": sorted({m["repository"] for m in kept}),
            },
        )
        row = await store.source(conn, name)
        assert row is not None
        return _source_view(row, kept)

    return await ctx.db.write(write)


def _refuse_repeats(mappings: list[MappingInput]) -> None:
    seen = set()
    for m in mappings:
        key = (m.repository.lower(), m.label)
        if key in seen:
            raise InvalidArgument(f"{m.repository} is mapped twice for label '{m.label}'.", field="mappings")
        seen.add(key)


def _as_input(row: Row) -> MappingInput:
    return MappingInput(
        repository=row["repository"],
        workspace=row["workspace"],
        channel=row["channel"],
        label=row["label"],
        bot=row["bot"],
        reply_out=bool(row["reply_out"]),
    )


async def change_mappings(
    ctx: Context,
    p: Principal,
    name: str,
    add: MappingInput | None = None,
    remove: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """Add one mapping to a source, or remove the one of (repository, label): what the page's
    forms do, each as :func:`put_source` with the source's other mappings kept."""
    actions.require(p, "intake.manage")

    async def write(conn: Connection) -> dict[str, Any]:
        row = await store.source(conn, name)
        if row is None:
            raise NotFound("intake source")
        current = [_as_input(m) for m in await store.mappings(conn, [row["id"]])]
        if remove is not None:
            kept = [m for m in current if (m.repository.lower(), m.label) != (remove[0].lower(), remove[1])]
            if len(kept) == len(current):
                raise NotFound("intake mapping")
            current = kept
        if add is not None:
            current.append(add)
        _refuse_repeats(current)
        await store.set_mappings(conn, row["id"], [await _mapping(conn, p, m) for m in current])
        kept_rows = await store.mappings(conn, [row["id"]])
        await audit.record(
            conn,
            ctx,
            p,
            "intake.source.update",
            name,
            details={"repositories": sorted({m["repository"] for m in kept_rows})},
        )
        return _source_view(row, kept_rows)

    return await ctx.db.write(write)


async def delete_source(ctx: Context, p: Principal, name: str) -> dict[str, Any]:
    """Remove a source with its mappings and its log; the threads it made stay."""
    actions.require(p, "intake.manage")

    async def write(conn: Connection) -> dict[str, Any]:
        row = await store.source(conn, name)
        if row is None:
            raise NotFound("intake source")
        await store.delete_source(conn, row["id"])
        await audit.record(conn, ctx, p, "intake.source.delete", name)
        return {"name": name, "deleted": True}

    return await ctx.db.write(write)


async def list_sources(ctx: Context, p: Principal, q: SourceList) -> Page:
    actions.require(p, "intake.manage")

    async def read(conn: Connection) -> list[dict[str, Any]]:
        rows = await store.sources(conn, q.since, q.limit + 1)
        mappings = await store.mappings(conn, [r["id"] for r in rows])
        return [_source_view(row, mappings) for row in rows]

    items = await ctx.db.read(read)
    return bounded_page(ctx, "sources", items, q.limit, q.max_bytes, descending=False, key="name")


DELIVERY_FIELDS = (
    "id",
    "source",
    "delivery",
    "event",
    "action",
    "repository",
    "issue",
    "status",
    "detail",
    "thread_id",
    "message_id",
    "received_at",
)


def _delivery_view(row: Row) -> dict[str, Any]:
    return {key: row[key] for key in DELIVERY_FIELDS}


async def list_deliveries(ctx: Context, p: Principal, q: DeliveryList) -> Page:
    """The intake log, newest first: what each delivery taken did, or why it was ignored."""
    actions.require(p, "intake.manage")

    async def read(conn: Connection) -> list[dict[str, Any]]:
        source_id = None
        if q.source is not None:
            row = await store.source(conn, q.source)
            if row is None:
                raise NotFound("intake source")
            source_id = row["id"]
        return [_delivery_view(r) for r in await store.deliveries(conn, source_id, q.before, q.limit + 1)]

    items = await ctx.db.read(read)
    return bounded_page(ctx, "deliveries", items, q.limit, q.max_bytes, descending=True)


async def list_replies(ctx: Context, p: Principal, source: str | None, limit: int) -> list[dict[str, Any]]:
    """The newest replies out to the forge (services/replies.py), of one source or of all,
    with how each went."""
    actions.require(p, "intake.manage")

    async def read(conn: Connection) -> list[dict[str, Any]]:
        source_id = None
        if source is not None:
            row = await store.source(conn, source)
            if row is None:
                raise NotFound("intake source")
            source_id = int(row["id"])
        return [replies.view(r) for r in await reply_store.of_source(conn, source_id, limit)]

    return await ctx.db.read(read)


# -- taking a delivery (the forge) -------------------------------------------------------


@dataclass(frozen=True)
class Signed:
    """A delivery whose signature matched its source's secret, read."""

    source_id: int
    source: str
    kind: str  # the forge: github or forgejo
    delivery: forge.Delivery


async def verified(ctx: Context, name: str, headers: Any, raw: bytes) -> Signed:
    """The delivery, once its signature is checked: UNAUTHENTICATED for a bad or missing one
    and for an unknown source alike. Nothing is written here."""
    row = await ctx.db.read(lambda conn: store.credentials(conn, name)) if valid_name(name) else None
    if row is None:
        raise Unauthenticated(forge.REFUSAL)
    forge.verify(row["forge"], row["secret"], headers, raw)
    try:
        payload = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise InvalidArgument(
            "The delivery's body is not JSON; set the content type to application/json."
        ) from None
    return Signed(row["id"], row["name"], row["forge"], forge.read(row["forge"], headers, payload))


@dataclass
class Outcome:
    status: str
    detail: str
    thread_id: int | None = None
    message_id: int | None = None


def _ignored(detail: str, thread_id: int | None = None) -> Outcome:
    """Nothing done; ``thread_id`` is the issue's thread when the detail speaks of it (the log links it)."""
    return Outcome("ignored", detail, thread_id)


async def take(ctx: Context, signed: Signed) -> dict[str, Any]:
    """Do what the delivery says, once: its delivery id is logged in the same write.

    Refused (and nothing written): a delivery id taken already (DELIVERY_REPEATED), a
    repository this source maps nowhere (NOT_FOUND), an issue or comment last updated
    before the intake window (STALE_DELIVERY). Anything else is logged, ``accepted`` when it
    made a thread or a reply or closed a claim, ``ignored`` (with why) when not.
    """
    d = signed.delivery

    async def write(conn: Connection) -> dict[str, Any]:
        if await store.delivery_taken(conn, signed.source_id, d.delivery):
            raise DeliveryRepeated(
                f"Delivery {d.delivery} was taken already; a redelivery does nothing twice.",
                delivery=d.delivery,
            )
        if d.event == "ping":
            outcome = _ignored("ping: the webhook reaches the board")
        else:
            repository = d.repository.lower()  # forges compare owner and name case-insensitively
            rows = await store.mappings_for(conn, signed.source_id, repository) if repository else []
            if not rows:
                raise NotFound(
                    message=f"Source {signed.source} maps no repository {d.repository or '(none named)'}; "
                    "the board's human maps one with PUT /api/intake/sources/<name> (docs/intake.md)."
                )
            outcome = await _act(conn, ctx, signed, rows)
        delivery_id = await store.log_delivery(
            conn,
            store.Delivery(
                source_id=signed.source_id,
                delivery=d.delivery,
                event=d.event,
                action=d.action,
                repository=d.repository,
                issue=d.number,
                status=outcome.status,
                detail=outcome.detail,
                thread_id=outcome.thread_id,
                message_id=outcome.message_id,
                received_at=ctx.now(),
            ),
        )
        return {
            "id": delivery_id,
            "delivery": d.delivery,
            "status": outcome.status,
            "detail": outcome.detail,
            "thread_id": outcome.thread_id,
            "message_id": outcome.message_id,
        }

    return await ctx.db.write(write)


def _check_fresh(ctx: Context, d: forge.Delivery) -> None:
    updated = d.updated_at()
    if updated is None:
        raise InvalidArgument("The delivery carries no updated_at for its issue or comment.")
    window = ctx.settings.intake_window
    if updated < ctx.clock.now() - timedelta(seconds=window):
        raise StaleDelivery(
            f"The {d.event} delivery is about something last updated at {updated.isoformat()}, "
            f"more than {window} s ago (BOARD_INTAKE_WINDOW); it is refused as a possible replay.",
            updated_at=updated.isoformat(),
            window=window,
        )


async def _act(conn: Connection, ctx: Context, signed: Signed, rows: list[Row]) -> Outcome:
    d = signed.delivery
    handled = {
        ("issues", "opened"),
        ("issues", "labeled"),
        ("issues", "label_updated"),
        ("issues", "closed"),
        ("issue_comment", "created"),
    }
    if (d.event, d.action) not in handled:
        return _ignored(f"{d.event} {d.action or '(no action)'} is not taken")
    if d.number is None:
        raise InvalidArgument("The delivery names no issue number.")
    _check_fresh(ctx, d)
    thread_id = await store.issue_thread(conn, signed.source_id, d.repository.lower(), d.number)
    if d.event == "issues" and d.action == "opened" and thread_id is not None:
        return _ignored(f"issue #{d.number} has its thread {thread_id} already", thread_id)
    if d.event == "issues" and d.action != "closed" and thread_id is None:
        return await _open_thread(conn, ctx, signed, rows)
    if thread_id is None:
        return _ignored(f"issue #{d.number} has no thread here")
    root = await message_store.by_id(conn, thread_id)
    if root is None or root["workspace_id"] not in {r["workspace_id"] for r in rows}:
        return _ignored(f"issue #{d.number}'s thread is not in a workspace its repository maps to")
    workspace = await workspace_store.by_id(conn, root["workspace_id"])
    assert workspace is not None
    if workspace["archived_at"]:
        return _ignored(f"workspace {workspace['slug']} is archived")
    if d.event == "issue_comment":
        return await _reply(conn, ctx, signed, root, workspace)
    if d.action != "closed":
        return await _labelled(conn, ctx, signed, rows, root, workspace)
    return await _close(conn, ctx, signed, root, workspace)


def _mapping_for(d: forge.Delivery, rows: list[Row]) -> Row | None:
    """The mapping an issue follows: that of its mapped label first by code point (the order
    :func:`~..store.intake.mappings_for` gives), else the repository's own.

    A ``labeled`` delivery opens a thread only for a mapped label (the one added, on GitHub).
    """
    labelled = _labelled_rows(d, rows)
    if labelled:
        return labelled[0]
    if d.action in ("labeled", "label_updated"):
        return None
    return next((row for row in rows if not row["label"]), None)


def _labelled_rows(d: forge.Delivery, rows: list[Row]) -> list[Row]:
    """The mappings of the delivery's labels, in the labels' order: on GitHub's ``labeled``
    the one label added; otherwise every label the issue has now (Forgejo's
    ``label_updated`` names no label added, only the labels as they are)."""
    labels = set(d.labels)
    if d.action == "labeled" and d.added_label is not None:
        labels = {d.added_label}
    return [row for row in rows if row["label"] and row["label"] in labels]


def _meta(signed: Signed, url: str, by: str) -> dict[str, Any]:
    d = signed.delivery
    return {
        "intake": {
            "source": signed.source,
            "forge": signed.kind,
            "repository": d.repository,
            "issue": d.number,
            "url": url,
            "by": by,
        }
    }


async def _open_thread(conn: Connection, ctx: Context, signed: Signed, rows: list[Row]) -> Outcome:
    d = signed.delivery
    row = _mapping_for(d, rows)
    if row is None:
        return _ignored("none of the issue's labels is mapped")
    workspace = await workspace_store.by_id(conn, row["workspace_id"])
    assert workspace is not None
    if workspace["archived_at"]:
        return _ignored(f"workspace {workspace['slug']} is archived")
    board = await board_principal(conn)
    channel = await channel_for_post(conn, ctx, board, workspace, row["channel"])
    url = forge.text(d.issue.get("html_url"), 500)
    title = forge.text(d.issue.get("title"), 300) or f"Issue #{d.number}"
    by = forge.login(d.issue)
    where = f"[{d.repository}#{d.number}]({url})"
    head = f"**{_inline(title)}**\n\n{where} opened by {by} on {FORGE_NAMES[signed.kind]}"
    mention = [row["bot"]] if row["bot"] else []
    if mention:
        head += f"\n\n@{row['bot']}" + (f" (label {_inline(row['label'])})" if row["label"] else "")
    text = forge.text(d.issue.get("body"), TEXT_LIMIT)
    event = await append(
        conn,
        ctx,
        workspace=workspace,
        author=board,
        body=head + (f"\n\n---\n\n{text}" if text.strip() else ""),
        kind="channel",
        channel=channel,
        tags=[INTAKE_TAG],
        meta=_meta(signed, url, by),
        mention=mention,
    )
    message_id = int(event.message["id"])
    await store.link_issue(
        conn, signed.source_id, d.repository.lower(), d.number or 0, message_id, url, ctx.now()
    )
    return Outcome("accepted", f"issue #{d.number} opened a thread", message_id, message_id)


async def _reply(
    conn: Connection, ctx: Context, signed: Signed, root: MessageRow, workspace: WorkspaceRow
) -> Outcome:
    d = signed.delivery
    if await _own_comment(conn, signed.source_id, d.comment):
        return _ignored(
            f"the board's own comment on issue #{d.number} (a reply out), not taken back in", root["id"]
        )
    url = forge.text(d.comment.get("html_url"), 500)
    by = forge.login(d.comment)
    text = forge.text(d.comment.get("body"), TEXT_LIMIT)
    board = await board_principal(conn)
    event = await append(
        conn,
        ctx,
        workspace=workspace,
        author=board,
        body=f"[{by} commented]({url}) on {FORGE_NAMES[signed.kind]}:\n\n{text}",
        kind="channel",
        parent=root,
        tags=[INTAKE_TAG],
        meta=_meta(signed, url, by),
        mention=[],
    )
    return Outcome("accepted", f"a comment on issue #{d.number}", root["id"], int(event.message["id"]))


async def _labelled(
    conn: Connection, ctx: Context, signed: Signed, rows: list[Row], root: MessageRow, workspace: WorkspaceRow
) -> Outcome:
    """A mapped label added to an issue that has its thread: a reply there mentions the label's
    bot, once. Issues are labelled after they are opened, as a maintainer triages them; with a
    row for the whole repository the thread is made first, and the label's bot never heard.

    Where the forge names no label added (Forgejo), every mapped label's bot not on the thread
    yet is mentioned: the one added may sort after one whose bot heard already."""
    d = signed.delivery
    already = f"issue #{d.number} has its thread {root['id']} already"
    wanted: dict[str, Row] = {}  # each bot by its first mapped label
    for row in _labelled_rows(d, rows):
        if row["bot"] and row["workspace_id"] == root["workspace_id"]:
            wanted.setdefault(row["bot"], row)
    if not wanted:
        return _ignored(already, root["id"])
    found = await scope.mentionable(conn, list(wanted), workspace["id"], None)
    heard = {
        handle
        for agent_id, handle in found.items()
        if await message_store.on_thread(conn, root["id"], agent_id)
    }
    new = [row for handle, row in wanted.items() if handle in found.values() and handle not in heard]
    if not new:
        return _ignored(f"{already}, with {_handles(wanted)} on it", root["id"])
    labels = ", ".join(_inline(row["label"]) for row in new)
    board = await board_principal(conn)
    url = forge.text(d.issue.get("html_url"), 500)
    by = forge.login({"user": d.payload.get("sender")})
    event = await append(
        conn,
        ctx,
        workspace=workspace,
        author=board,
        body=f"[{d.repository}#{d.number}]({url}) labelled {labels} by {by} on "
        f"{FORGE_NAMES[signed.kind]}: {_handles(row['bot'] for row in new)}",
        kind="channel",
        parent=root,
        tags=[INTAKE_TAG],
        meta=_meta(signed, url, by),
        mention=[row["bot"] for row in new],
    )
    return Outcome(
        "accepted",
        f"issue #{d.number} labelled {', '.join(row['label'] for row in new)}",
        root["id"],
        int(event.message["id"]),
    )


def _handles(handles: Iterable[str]) -> str:
    return " ".join(f"@{handle}" for handle in handles)


async def _own_comment(conn: Connection, source_id: int, comment: dict[str, Any]) -> bool:
    """Whether a comment is one the board posted (services/replies.py): by the id the forge
    answered when it was posted, or, should its webhook come before that answer, by the
    board's marker in its body. Taking it in would post it back out again, and again."""
    comment_id = comment.get("id")
    if isinstance(comment_id, int | str) and await reply_store.own_comment(conn, source_id, str(comment_id)):
        return True
    body = comment.get("body")
    return isinstance(body, str) and replies.MARKER in body


async def _close(
    conn: Connection, ctx: Context, signed: Signed, root: MessageRow, workspace: WorkspaceRow
) -> Outcome:
    d = signed.delivery
    board = await board_principal(conn)
    closer = forge.login({"user": d.payload.get("sender")})
    why = f"the issue was closed by {closer} on {FORGE_NAMES[signed.kind]}"
    if not await claims.close_by_board(conn, ctx, board, root, workspace, why):
        return _ignored(f"issue #{d.number}'s thread is done already", root["id"])
    return Outcome("accepted", f"issue #{d.number} closed its thread", root["id"])


def _inline(text: str) -> str:
    """A title on one line, its Markdown link and emphasis marks shown as text."""
    flat = " ".join(text.split())
    for mark in "\\`*_[]<>#!|~":
        flat = flat.replace(mark, "\\" + mark)
    return flat
