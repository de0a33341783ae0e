"""Every visibility and addressability decision, in one place.

Workspaces: a bot acts in its own workspace, and naming another answers
NOT_FOUND, exactly as if it did not exist. Admin bots and humans name the
workspace they act in; admin bots default to ``admin``, and reach every
workspace's channels.

Conversations: only their members read them, and humans, who see everything.
A conversation one is not in, and everything in it, answers NOT_FOUND, the same
as an absent one, on every route.

Addressing: who a message may reach (mentions, a conversation's inbox rows) and
who may be given a thread (handoff) or a place in a conversation. No one may
address the board's own system agent.

The fleet: humans see every machine; a keeper (a machine's token) its own
machine and the bots assigned to it, and nothing of any workspace.

Every service asks here; no other module decides what a caller may see.
"""

from __future__ import annotations

from typing import Any

from ..errors import Forbidden, InvalidArgument, NotFound
from ..hub import Event
from ..principal import ADMIN_WORKSPACE, Principal
from ..store import channels as channel_store
from ..store import identity as identity_store
from ..store import messages as message_store
from ..store import workspaces as store
from ..store.connection import Connection
from ..store.rows import AgentRow, ChannelRow, MessageRow, WorkspaceRow

# -- workspaces --------------------------------------------------------------------


async def resolve(conn: Connection, p: Principal, slug: str | None) -> WorkspaceRow:
    """The workspace row ``p`` acts in when it names ``slug`` (or none).

    The runner names none: it acts only in the workspace of the run it steps
    (:func:`run_workspace`), never in one it asks for.
    """
    row = await store.by_slug(conn, _acting_in(p, slug))
    if row is None:
        raise NotFound("workspace")
    return row


async def resolve_with_channel(
    conn: Connection, p: Principal, slug: str | None, channel: str
) -> tuple[WorkspaceRow, ChannelRow | None]:
    """:func:`resolve`'s workspace with its channel ``channel`` (None until made), in one read."""
    row, found = await store.by_slug_with_channel(conn, _acting_in(p, slug), channel)
    if row is None:
        raise NotFound("workspace")
    return row, found


def _acting_in(p: Principal, slug: str | None) -> str:
    """The slug of the workspace ``p`` acts in when it names ``slug`` (or none)."""
    if p.is_runner:
        raise Forbidden("A runner token acts only in the workspace of the run it steps.")
    if p.is_bot and not p.is_admin_bot:
        if slug is not None and slug != p.workspace:
            raise NotFound("workspace")
        slug = p.workspace
    elif slug is None:
        if p.is_admin_bot:
            slug = ADMIN_WORKSPACE
        else:
            raise InvalidArgument("Name the workspace: workspace=<slug>.")
    return slug or ""


async def resolve_optional(
    conn: Connection, p: Principal, slug: str | None, *, anywhere: bool = False
) -> WorkspaceRow | None:
    """Like :func:`resolve`, but naming none means every workspace (``None``) for a human.

    ``anywhere``: what is read carries its own workspace (a thread, a conversation,
    a profile by name), so an admin bot naming none is not held to ``admin`` either.
    """
    if slug is None and (p.is_human or (anywhere and p.is_admin_bot)):
        return None
    return await resolve(conn, p, slug)


def visible(p: Principal, workspace_id: int) -> bool:
    return p.sees_all_workspaces or p.workspace_id == workspace_id


async def visible_workspace(conn: Connection, p: Principal, slug: str) -> WorkspaceRow:
    """The workspace row named in a path, or NOT_FOUND when absent or out of reach."""
    row = await store.by_slug(conn, slug)
    if row is None or not visible(p, row["id"]):
        raise NotFound("workspace")
    return row


def require_writable(workspace: WorkspaceRow) -> None:
    if workspace["archived_at"]:
        raise Forbidden(f"Workspace {workspace['slug']} is archived and read-only.")


def workspace_ids(p: Principal, workspace: WorkspaceRow | None) -> list[int] | None:
    """The workspaces a read spans: the named one, or all for those who see all naming none."""
    if workspace is not None:
        return [workspace["id"]]
    return None if p.sees_all_workspaces else [p.workspace_id or 0]


def reaches_every_workspace(p: Principal) -> bool:
    """Humans and admin bots reach every workspace: they list them, and write the shared skills."""
    return p.sees_all_workspaces


def require_every_workspace(p: Principal, refusal: str) -> None:
    """What spans workspaces (their list) is seen by humans and admin bots only."""
    if not reaches_every_workspace(p):
        raise Forbidden(refusal)


def inbox_of(p: Principal, since: int) -> message_store.InboxFilter:
    """``p``'s inbox after ``since``, held to the workspaces ``p`` reaches as a stored read is."""
    reaches_all = p.kind != "bot" or p.is_admin_bot
    return message_store.InboxFilter(p.agent_id, since, home_id=None if reaches_all else p.workspace_id)


def bot_reaches(home_slug: str | None, home_id: int | None, workspace_id: int) -> bool:
    """Whether a bot living in workspace ``home`` reaches ``workspace_id``: its own, or any from admin."""
    return home_slug == ADMIN_WORKSPACE or home_id == workspace_id


# -- conversations -------------------------------------------------------------------


def viewer_id(p: Principal) -> int | None:
    """Whom a stored read filters conversations by: ``p``, or nobody for a human."""
    return None if p.is_human else p.agent_id


async def audience(conn: Connection, conversation_id: int | None) -> frozenset[int] | None:
    """The member ids of a conversation; None for a channel (open to its workspace)."""
    if conversation_id is None:
        return None
    return (await audiences(conn, [conversation_id]))[conversation_id]


async def audiences(conn: Connection, conversation_ids: list[int]) -> dict[int, frozenset[int]]:
    """The member ids of each of these conversations, in one query."""
    members = await channel_store.members(conn, conversation_ids)
    return {c: frozenset(m["id"] for m in members.get(c, [])) for c in conversation_ids}


async def in_conversation(conn: Connection, p: Principal, conversation_id: int | None) -> bool:
    """Whether ``p`` may read a conversation: its members, and humans. A channel (None) is open."""
    if conversation_id is None or p.is_human:
        return True
    return p.agent_id in (await audience(conn, conversation_id) or ())


async def require_conversation(conn: Connection, p: Principal, conversation_id: int) -> Any:
    """The conversation row, or NOT_FOUND as for an absent one when ``p`` is not in it."""
    row = await channel_store.conversation_by_id(conn, conversation_id)
    if row is None or not visible(p, row["workspace_id"]) or not await in_conversation(conn, p, row["id"]):
        raise NotFound("conversation")
    return row


async def message_visible(conn: Connection, p: Principal, row: MessageRow) -> bool:
    """Whether ``p`` may read a stored message row: its workspace, and its conversation if any."""
    return visible(p, row["workspace_id"]) and await in_conversation(conn, p, row["conversation_id"])


async def require_message(conn: Connection, p: Principal, row: MessageRow | None, what: str) -> MessageRow:
    """The message row, or NOT_FOUND as for an absent one when ``p`` may not read it."""
    if row is None or not await message_visible(conn, p, row):
        raise NotFound(what)
    return row


async def visible_message(
    conn: Connection, p: Principal, message_id: int, what: str = "message"
) -> MessageRow:
    """The stored message ``message_id`` if ``p`` may read it, else NOT_FOUND(``what``)."""
    return await require_message(conn, p, await message_store.by_id(conn, message_id), what)


async def visible_root(conn: Connection, p: Principal, message_id: int) -> MessageRow:
    """The root of the thread any of whose messages is ``message_id``, or NOT_FOUND("thread")."""
    row = await message_store.by_id(conn, message_id)
    if row is not None and row["reply_to"] is not None:
        row = await message_store.by_id(conn, row["thread_id"])
    return await require_message(conn, p, row, "thread")


async def require_messages(conn: Connection, p: Principal, message_ids: list[int]) -> None:
    """NOT_FOUND naming the first of ``message_ids`` that is absent or that ``p`` may not read."""
    rows = {r["id"]: r for r in await message_store.by_ids(conn, message_ids)}
    for message_id in message_ids:
        await require_message(conn, p, rows.get(message_id), f"message {message_id}")


def event_visible(p: Principal, event: Event) -> bool:
    """Whether a published message is one ``p`` may read (the hub's copy of message_visible)."""
    if not visible(p, event.workspace_id):
        return False
    return event.audience is None or p.is_human or p.agent_id in event.audience


# -- addressing ----------------------------------------------------------------------


def _of_workspace(agent: AgentRow, workspace_id: int) -> bool:
    """A human (humans join anything), or a bot living in this workspace; never the board."""
    return agent["kind"] == "human" or (agent["kind"] == "bot" and agent["workspace_id"] == workspace_id)


async def mentionable(
    conn: Connection, handles: list[str], workspace_id: int, audience: frozenset[int] | None
) -> dict[int, str]:
    """Which of ``handles`` a message in this workspace (and conversation) reaches: id -> handle.

    In a channel: humans, the workspace's bots, and admin bots, who read every
    workspace. In a conversation only its members (and humans) count: a mention
    must not carry the conversation's words to a bot outside it.
    """
    found = {}
    for agent in await identity_store.agents_by_handles(conn, handles):
        if agent["kind"] == "system":
            continue
        if audience is not None:
            reaches = agent["kind"] == "human" or agent["id"] in audience
        else:
            reaches = _of_workspace(agent, workspace_id) or agent["workspace"] == ADMIN_WORKSPACE
        if reaches:
            found[agent["id"]] = agent["handle"]
    return found


async def within_audience(
    conn: Connection, reasons: dict[int, str], audience: frozenset[int] | None
) -> dict[int, str]:
    """The inbox rows a message may have: a conversation's reach only its members and humans."""
    if audience is None:
        return reasons
    kept = {}
    for agent_id, reason in reasons.items():
        agent = await identity_store.agent_by_id(conn, agent_id)
        if agent_id in audience or (agent is not None and agent["kind"] == "human"):
            kept[agent_id] = reason
    return kept


async def handoff_target(conn: Connection, handle: str, root: MessageRow) -> AgentRow:
    """The agent a thread may be handed to, or NOT_FOUND("agent").

    The contract says "same workspace": a human, or a bot of the thread's
    workspace (in a conversation, one of its members). An admin bot may work in
    another workspace's thread it claims itself, but is not handed one there.
    """
    target = await identity_store.agent_by_handle(conn, handle)
    if target is None or not _of_workspace(target, root["workspace_id"]):
        raise NotFound("agent")
    members = await audience(conn, root["conversation_id"])
    if members is not None and target["kind"] != "human" and target["id"] not in members:
        raise NotFound("agent")
    return target


async def conversation_workspace(
    conn: Connection, p: Principal, slug: str | None, handles: list[str]
) -> tuple[WorkspaceRow, list[AgentRow]]:
    """The workspace of a conversation of ``handles`` opened by ``p``, and their agent rows.

    A human naming none opens it where its bots are. A participant that is absent,
    the board, or not a human or bot of that workspace is NOT_FOUND naming the
    handle as given, and only once the workspace is settled: which check answers,
    and how, must not tell a bot that a handle lives elsewhere.
    """
    agents = await identity_store.agents_by_handles(conn, handles)
    by_handle = {a["handle"].lower(): a for a in agents}
    if slug is None and p.is_human:
        # A human sees every agent: an absent handle is named before the workspace is asked for.
        for handle in handles:
            if by_handle.get(handle.lower()) is None:
                raise NotFound(f"agent {handle}")
        slugs = {a["workspace"] for a in agents if a["kind"] == "bot"}
        if len(slugs) != 1:
            raise InvalidArgument("Name the workspace: workspace=<slug>.")
        slug = slugs.pop()
    workspace = await resolve(conn, p, slug)
    for handle in handles:
        agent = by_handle.get(handle.lower())
        if agent is None or not _of_workspace(agent, workspace["id"]):
            raise NotFound(f"agent {handle}")
    return workspace, agents


# -- routines ------------------------------------------------------------------------


def routine_workspace_ids(p: Principal) -> list[int] | None:
    """Whose routines ``p`` reads: every workspace's for humans, admin bots and the runner."""
    if p.sees_all_workspaces or p.is_runner:
        return None
    return [p.workspace_id or 0]


def require_routine(p: Principal, row: Any | None) -> Any:
    """A routine row ``p`` may see, or NOT_FOUND as for an absent one."""
    if row is None:
        raise NotFound("routine")
    ids = routine_workspace_ids(p)
    if ids is not None and row["workspace_id"] not in ids:
        raise NotFound("routine")
    return row


async def run_workspace(conn: Connection, routine: Any) -> WorkspaceRow:
    """The workspace a run acts in: its routine's, whoever steps it (the runner names none)."""
    row = await store.by_id(conn, routine["workspace_id"])
    if row is None:
        raise NotFound("workspace")
    return row


def runs_routine(agent: AgentRow | None, workspace_id: int) -> bool:
    """Whether ``agent`` may be the bot a routine of this workspace mentions: one that reads it."""
    return (
        agent is not None
        and agent["kind"] == "bot"
        and bot_reaches(agent["workspace"], agent["workspace_id"], workspace_id)
    )


# -- agents --------------------------------------------------------------------------


def require_agent(p: Principal, agent: AgentRow | None) -> AgentRow:
    """An agent row ``p`` may see: every human, bots of the workspaces it sees; never the board."""
    if agent is None or agent["kind"] == "system":
        raise NotFound("agent")
    if agent["kind"] == "bot" and not visible(p, agent["workspace_id"] or 0):
        raise NotFound("agent")
    return agent


def require_speaks_for(p: Principal, bot: AgentRow) -> None:
    """Reading a bot's own view (its prompt) is for the bot, humans and admin bots: else NOT_FOUND."""
    if not (p.is_human or p.is_admin_bot or p.agent_id == bot["id"]):
        raise NotFound("bot")


# -- the fleet ------------------------------------------------------------------------


def machine_visible(p: Principal, machine_id: int) -> bool:
    """Humans see every machine of the fleet; a keeper its own machine only; no one else any."""
    return p.is_human or (p.is_keeper and p.machine_id == machine_id)


def require_on_machine(p: Principal, row: Any | None, what: str) -> Any:
    """A row of a machine's (a bot assigned to it), or NOT_FOUND as for an absent one."""
    if row is None or not machine_visible(p, row["machine_id"]):
        raise NotFound(what)
    return row
