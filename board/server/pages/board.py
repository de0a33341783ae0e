"""The board: workspace switcher, channels and conversations, the stream, threads, posting."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from aiohttp import web

from ..errors import NotFound
from ..principal import Principal
from ..services import channels, claims, costs, fleet, inbox, messages, posting, wakes, workspaces
from ..services.context import Context
from ..validation import arg, parse_query
from .routing import NOTHING_KEPT, Kept, PageCall, PageRoute, local_path, redirect

SLUG = r"[a-z0-9._-]{2,64}"
STREAM_PAGE = 30


@dataclass
class BoardQuery:
    workspace: str | None = arg(None, pattern=SLUG)
    conversation: int | None = arg(None, min=1)
    thread: int | None = arg(None, min=1)
    before: int | None = arg(None, min=1, help="Roots older than this id (the older page).")


@dataclass
class ThreadPageQuery:
    since: int = arg(0, min=0, help="Replies after this id (the later page; the root stays first).")


async def all_workspaces(ctx: Context, p: Principal) -> list[dict[str, Any]]:
    """Every workspace for the switcher, paged through the service."""
    found: list[dict[str, Any]] = []
    after = ""
    while True:
        page = await workspaces.list_workspaces(ctx, p, workspaces.WorkspaceList(after=after, limit=500))
        found += page["workspaces"]
        if not page["has_more"]:
            return found
        after = found[-1]["slug"]


def place(workspace: str, channel: str | None = None, **params: Any) -> str:
    """The address of a place on the board (a channel, or a conversation with ``conversation=``)."""
    query = urlencode({"workspace": workspace, **{k: v for k, v in params.items() if v is not None}})
    return f"/c/{channel}?{query}" if channel else f"/?{query}"


async def _sidebar(call: PageCall, spaces: list[dict[str, Any]], workspace: str) -> dict[str, Any]:
    chans = await channels.list_channels(
        call.ctx, call.p, channels.ChannelList(workspace=workspace, limit=500)
    )
    convs = await channels.list_conversations(
        call.ctx, call.p, channels.ConversationList(workspace=workspace)
    )
    return {
        "workspaces": spaces,
        "workspace": workspace,
        "channels": chans["channels"],
        "conversations": convs["conversations"],
    }


def _topic(sidebar: dict[str, Any], channel: str | None, conversation: int | None) -> str:
    """What the place shown is about, under its name: a channel's topic may also name the repo
    its bots clone (docs/bots.md), so a person sees what the bots go by."""
    if channel:
        return next((c["topic"] for c in sidebar["channels"] if c["slug"] == channel), "")
    return next((c["topic"] for c in sidebar["conversations"] if c["id"] == conversation), "")


async def _welcome(call: PageCall, spaces: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The steps to a working fleet, until a bot has joined (the first one alone is no working
    fleet): whether a workspace is made, and the machine of a keeper enrolled to run the bot, if
    any (a board started with a bare ``board serve`` has none)."""
    if any(w["bots"] for w in spaces):
        return None
    machines = (await fleet.fleet(call.ctx, call.p, fleet.FleetQuery(limit=1)))["machines"]
    return {
        "made": any(w["slug"] != "admin" for w in spaces),
        "keeper": machines[0]["name"] if machines else None,
    }


async def _stream(call: PageCall, q: messages.MessageQuery) -> dict[str, Any]:
    """One page of roots, newest page first, shown oldest first, with the link to the older page."""
    page = await messages.list_messages(call.ctx, call.p, q)
    return {
        "roots": list(reversed(page["messages"])),
        "older": page.get("next_before"),
        "cursor": page["cursor"],
    }


async def _board(
    call: PageCall, channel: str | None, q: BoardQuery | None = None, kept: Kept = NOTHING_KEPT
) -> web.StreamResponse:
    q = q or call.query(BoardQuery)
    spaces = await all_workspaces(call.ctx, call.p)
    workspace = q.workspace or workspaces.first_to_show(spaces)
    sidebar = await _sidebar(call, spaces, workspace)
    if channel is None and q.conversation is None:
        first = sidebar["channels"][0]["slug"] if sidebar["channels"] else "lobby"
        return redirect(place(workspace, first))
    roots = messages.MessageQuery(
        workspace=workspace,
        channel=channel,
        conversation=q.conversation,
        roots=True,
        order="desc",
        before=q.before,
        limit=STREAM_PAGE,
    )
    try:
        stream = await _stream(call, roots)
    except NotFound:
        if channel is None:
            raise
        # A channel is created by its first post: a new name shows an empty stream to post in,
        # live from the board's head (from 0, a busy workspace's past would be too much to
        # catch up with, and the page would reload for ever).
        newest = messages.MessageQuery(workspace=workspace, limit=1)
        head = await messages.list_messages(call.ctx, call.p, newest)
        stream = {"roots": [], "older": None, "cursor": head["cursor"]}
    thread = None
    if q.thread is not None:
        thread = await messages.thread(call.ctx, call.p, q.thread, messages.ThreadQuery(limit=200))
    shown = [m["id"] for m in [*stream["roots"], *(thread["messages"] if thread else [])]]
    return call.render(
        "board.html",
        for_me=await inbox.highlighted(call.ctx, call.p, shown),
        channel=channel,
        conversation=q.conversation,
        thread=thread,
        topic=_topic(sidebar, channel, q.conversation),
        place=place,
        here=place(workspace, channel, conversation=q.conversation),
        kept=kept,
        welcome=await _welcome(call, spaces),
        **sidebar,
        **stream,
    )


async def home(call: PageCall) -> web.StreamResponse:
    return await _board(call, None)


async def channel_page(call: PageCall) -> web.StreamResponse:
    return await _board(call, call.arg("slug"))


async def thread_page(call: PageCall, kept: Kept = NOTHING_KEPT) -> web.StreamResponse:
    thread_id = call.int_arg("id")
    since = call.query(ThreadPageQuery).since
    thread = await messages.thread(call.ctx, call.p, thread_id, messages.ThreadQuery(since=since, limit=200))
    if since:
        # A later page is headed by the root as the first is: the claim and the place come from it.
        head = await messages.thread(call.ctx, call.p, thread_id, messages.ThreadQuery(limit=1))
        thread["messages"] = [head["messages"][0], *thread["messages"]]
    root = thread["messages"][0]
    woken = await wakes.list_wakes(
        call.ctx, call.p, wakes.WakeList(thread=thread_id, workspace=root["workspace"], limit=100)
    )
    return call.render(
        "thread.html",
        for_me=await inbox.highlighted(call.ctx, call.p, [m["id"] for m in thread["messages"]]),
        thread=thread,
        root=root,
        wakes=[(w, costs.of_wakes([w])) for w in woken["wakes"]],
        cost=costs.of_wakes(woken["wakes"]),
        workspace=root["workspace"],
        place=place,
        kept=kept,
    )


async def post_root(call: PageCall) -> web.StreamResponse:
    """A new root in a channel or conversation; the page opens on its thread."""
    fields: dict[str, str] = {}
    if "channel" not in call.form and call.request.match_info.get("slug"):
        fields["channel"] = call.arg("slug")
    req = call.parsed_form(posting.PostMessage, **fields)
    posted = await posting.post(call.ctx, call.p, req)
    workspace = posted["workspace"]
    return redirect(
        place(workspace, posted["channel"], conversation=posted["conversation"], thread=posted["id"])
    )


async def post_root_again(call: PageCall, kept: Kept) -> web.StreamResponse:
    """A refused new root: its channel or conversation again, the text typed still in the form."""
    q = parse_query(BoardQuery, {k: call.form[k] for k in ("workspace", "conversation") if call.form.get(k)})
    return await _board(call, call.request.match_info.get("slug"), q, kept)


async def reply(call: PageCall) -> web.StreamResponse:
    """A reply in a thread; back to where the form was (the board's panel or the thread page)."""
    thread_id = call.int_arg("id")
    back = call.form.pop("back", "")
    req = call.parsed_form(posting.PostMessage, reply_to=str(thread_id))
    await posting.post(call.ctx, call.p, req)
    return redirect(local_path(back, f"/t/{thread_id}"))


async def reply_again(call: PageCall, kept: Kept) -> web.StreamResponse:
    """A refused reply: the page it was written on again (the board's panel or the thread
    page), the text typed still in the form."""
    back = urlsplit(local_path(call.form.get("back"), ""))
    if back.path == "/" or back.path.startswith("/c/"):
        q = parse_query(BoardQuery, dict(parse_qsl(back.query)))
        return await _board(call, back.path.removeprefix("/c/") or None, q, kept)
    return await thread_page(call, kept)


async def claim_action(call: PageCall) -> web.StreamResponse:
    """A human ends or moves a claim from the thread page: release, done or hand off."""
    thread_id = call.int_arg("id")
    action = call.arg("action")
    if action == "release":
        await claims.release(call.ctx, call.p, thread_id, call.parsed_form(claims.ReleaseRequest))
    elif action == "done":
        await claims.done(call.ctx, call.p, thread_id, call.parsed_form(claims.DoneRequest))
    elif action == "handoff":
        await claims.handoff(call.ctx, call.p, thread_id, call.parsed_form(claims.HandoffRequest))
    else:
        raise NotFound("action")
    return redirect(f"/t/{thread_id}")


ROUTES = [
    PageRoute("GET", "/", home, "The board of the default (or named) workspace."),
    PageRoute("GET", "/c/{slug}", channel_page, "A channel's stream, with a thread panel."),
    PageRoute("POST", "/c/{slug}", post_root, "Post a new root in this channel.", refill=post_root_again),
    PageRoute("POST", "/", post_root, "Post a new root in a conversation.", refill=post_root_again),
    PageRoute("GET", "/t/{id}", thread_page, "A thread with its claim history and wakes."),
    PageRoute("POST", "/t/{id}", reply, "Reply in a thread.", refill=reply_again),
    PageRoute("POST", "/t/{id}/{action}", claim_action, "Release, finish or hand off a thread's claim."),
]
