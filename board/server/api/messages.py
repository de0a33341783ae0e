"""Routes for channels, conversations, messages, threads, inbox, search and receipts."""

from __future__ import annotations

from typing import Any

from ..errors import Forbidden
from ..services import actions, channels, messages, posting, preview, worktrees
from .responses import BOOL, INT, STR, TIME, array, obj, page, ref
from .route import Answer, Call, Route


async def channel_list(call: Call) -> Any:
    return await channels.list_channels(call.ctx, call.p, call.query)


async def channel_create(call: Call) -> tuple[int, Any]:
    result = await channels.upsert(call.ctx, call.p, call.body)
    return (201 if result["created"] else 200), result


async def channel_patch(call: Call) -> Any:
    return await channels.patch(call.ctx, call.p, call.arg("slug"), call.body)


async def conversation_list(call: Call) -> Any:
    return await channels.list_conversations(call.ctx, call.p, call.query)


async def conversation_open(call: Call) -> tuple[int, Any]:
    return await channels.open_conversation(call.ctx, call.p, call.body)


async def post(call: Call) -> Any:
    return await posting.post(call.ctx, call.p, call.body)


async def listing(call: Call) -> Any:
    return await messages.list_messages(call.ctx, call.p, call.query)


async def one(call: Call) -> Any:
    return await messages.get_message(call.ctx, call.p, call.int_arg("id"))


async def thread(call: Call) -> Any:
    return await messages.thread(call.ctx, call.p, call.int_arg("id"), call.query)


async def worktree(call: Call) -> Any:
    return await worktrees.record(call.ctx, call.p, call.int_arg("id"), call.body)


async def inbox(call: Call) -> Any:
    if call.query.ack and call.by_session:
        # A GET with a cookie can be sent by any site's link: it records nothing.
        raise Forbidden("ack=true takes a bearer token; a page marks messages seen with POST /api/receipts.")
    return await messages.inbox(call.ctx, call.p, call.query)


async def search(call: Call) -> Any:
    return await messages.search(call.ctx, call.p, call.query)


async def render_preview(call: Call) -> Any:
    return await preview.preview(call.ctx, call.p, call.body)


async def receipts(call: Call) -> Any:
    return await messages.receipts(call.ctx, call.p, call.body)


ROUTES = [
    Route(
        "GET",
        "/api/channels",
        channel_list,
        "My workspace's channels, with unread counts.",
        answer=Answer(page("channels", ref("Channel"))),
        query=channels.ChannelList,
    ),
    Route(
        "POST",
        "/api/channels",
        channel_create,
        "Create a channel, or change its topic and refs.",
        answer=Answer(ref("Channel"), (201, 200)),
        body=channels.ChannelWrite,
    ),
    Route(
        "PATCH",
        "/api/channels/{slug}",
        channel_patch,
        "Change a channel's topic or refs.",
        answer=Answer(ref("Channel")),
        body=channels.ChannelPatch,
    ),
    Route(
        "GET",
        "/api/conversations",
        conversation_list,
        "The conversations I am in.",
        answer=Answer(page("conversations", ref("Conversation"))),
        query=channels.ConversationList,
    ),
    Route(
        "POST",
        "/api/conversations",
        conversation_open,
        "Open the conversation of these participants (201 new, 200 existing).",
        answer=Answer(obj({"conversation": ref("Conversation"), "created": BOOL}), (201, 200)),
        body=channels.NewConversation,
    ),
    Route(
        "POST",
        "/api/messages",
        post,
        "Post a root in a channel or conversation, or a reply.",
        answer=Answer(ref("Message")),
        body=posting.PostMessage,
        status=201,
        answered_by_write=True,
    ),
    Route(
        "GET",
        "/api/messages",
        listing,
        "Messages, bounded and paged; long-poll with wait.",
        answer=Answer(page("messages", ref("Message"))),
        query=messages.MessageQuery,
    ),
    Route(
        "GET",
        "/api/messages/{id}",
        one,
        "One message, with receipts of its addressees.",
        answer=Answer(ref("Message")),
    ),
    Route(
        "GET",
        "/api/threads/{id}",
        thread,
        "A thread: root, replies, claim and its history, and what went back to its issue.",
        answer=Answer(
            page(
                "messages",
                ref("Message"),
                thread_id=INT,
                paused=BOOL,
                claim=ref("ThreadClaim"),
                claim_history=array(obj({"id": INT, "action": STR, "actor": STR, "at": TIME})),
                worktrees=array(ref("Worktree")),
                forge_replies=array(ref("ForgeReply")),
            )
        ),
        query=messages.ThreadQuery,
    ),
    Route(
        "PUT",
        "/api/threads/{id}/worktree",
        worktree,
        "The calling bot's git worktree for this thread: waiting, live, kept or removed (bots).",
        answer=Answer(ref("Worktree")),
        body=worktrees.WorktreeRecord,
        role=actions.only("thread.worktree"),
    ),
    Route(
        "GET",
        "/api/inbox",
        inbox,
        "What I must read; long-poll with wait, ack=true (a bearer token) to mark seen.",
        answer=Answer(page("messages", ref("Message"))),
        query=messages.InboxQuery,
    ),
    Route(
        "GET",
        "/api/search",
        search,
        "Full-text search, ranked, with snippets.",
        answer=Answer(page("messages", ref("Message"))),
        query=messages.SearchQuery,
    ),
    Route(
        "POST",
        "/api/preview",
        render_preview,
        "A body rendered as a posted message's would be, for the composer's preview (humans).",
        answer=Answer(obj({"html": STR})),
        body=preview.PreviewRequest,
        role=actions.only("message.preview"),
    ),
    Route(
        "POST",
        "/api/receipts",
        receipts,
        "Mark messages addressed to me seen or done.",
        answer=Answer(obj({"message_ids": array(INT), "state": {"enum": ["seen", "done"]}})),
        body=messages.Receipts,
    ),
]
