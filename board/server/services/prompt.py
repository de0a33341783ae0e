"""The prompt of one harness turn, composed by the board so a human changes it in one place.

``first_turn`` (only when asked) tells a fresh session who it is: the house
rules, its identity, what to read, its knowledge index and its skills.
``turn`` carries the batch: each message compact under its thread with the
thread's claim state, the ids it covers, and what to do. ``turn`` never
exceeds the byte budget: messages that do not fit are listed by id instead,
messages for the bot first, watched ones after.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from ..errors import InvalidArgument, NotFound
from ..principal import Principal
from ..store import channels as channel_store
from ..store import identity as identity_store
from ..store import messages as message_store
from ..store import registry as store
from ..store.connection import Connection
from ..store.jsoncolumns import read_json
from ..validation import arg
from . import claims, registry, scope
from .auth import principal_from_row
from .context import Context
from .handoff import DEFAULT_HANDOFF_BYTES, recent, render_handoff
from .knowledge import prompt as knowledge_prompt
from .turn import BODY_CAP, Calls, Item, Thread, one_line

DEFAULT_BUDGET = 12_000
MIN_BODY = 200  # a body cut shorter than this is listed by id instead
MAX_REFS = 100
MAX_INDEX_BYTES = 16_000
MAX_SKILL_DESCRIPTION = 300


@dataclass
class PromptQuery:
    trigger: list[str] = arg(
        [], max_items=200, pattern=r"[0-9]{1,18}", help="Message ids this turn covers, comma-separated."
    )
    first: bool = arg(False, help="Add the first-turn part (a new session).")
    budget_bytes: int = arg(DEFAULT_BUDGET, min=2_000, max=100_000, help="Byte budget of the turn part.")
    mcp: bool = arg(False, help="Name the board's MCP tools instead of HTTP calls (the bot has them).")
    handoff: bool = arg(
        False, help="Add a handoff part: claim, last messages and cited documents of each thread."
    )
    handoff_bytes: int = arg(DEFAULT_HANDOFF_BYTES, min=500, max=20_000, help="Byte cap of the handoff.")


@cache
def _doc(name: str) -> str:
    return resources.files("board.server.docs").joinpath(name).read_text(encoding="utf-8")


def house_rules(calls: Calls) -> str:
    """The text of /agents.md, or its MCP tools version, with this board's address filled in."""
    return _doc("agents-tools.md" if calls.tools else "agents.md").replace("{{BOARD_URL}}", calls.url)


def _size(text: str) -> int:
    return len(text.encode())


# -- the turn ---------------------------------------------------------------------------


def _id_list(ids: list[int]) -> str:
    return ", ".join(str(i) for i in ids) or "none"


def _head(covers: list[int]) -> str:
    return (
        "# Your turn\n\n"
        f"This turn covers messages: {_id_list(covers)}.\n"
        "If you already answered one of them (look at its thread), do not answer it again.\n"
    )


def _omitted_line(omitted: list[int], calls: Calls) -> str:
    if not omitted:
        return ""
    return f"\nNot shown for lack of room: {_id_list(omitted)}. Read each with {calls.message('<id>')}.\n"


def _instructions(calls: Calls) -> str:
    return (
        "\n## What to do\n"
        '- A message marked "for you" needs your answer: reply in its thread '
        f"({calls.reply()}).\n"
        f"- Before you work on a watched post, claim its thread: {calls.claim()}. "
        "CLAIMED (409) means someone else holds it: leave it.\n"
        "- Leave FYIs alone: a watched post that asks nothing of you needs no reply.\n"
        f"- Read a whole message or thread with {calls.message('<id>')} or {calls.thread('<id>')}.\n"
    )


def render_turn(
    items: list[Item], threads: dict[int, Thread], you: str, calls: Calls, budget: int
) -> tuple[str, list[int], list[int]]:
    """The turn text within ``budget`` bytes, the ids it shows, and the ids it leaves out."""
    ids = sorted(i.id for i in items)
    # Room the id lists may take: each id lands in exactly one of the two lists.
    overhead = (
        _size(_head([]) + _instructions(calls))
        + _size(_omitted_line([0], calls))
        + sum(len(str(i)) + 2 for i in ids)
    )
    if overhead > budget:
        raise InvalidArgument(
            f"budget_bytes={budget} cannot hold even the list of {len(ids)} message ids; "
            f"give at least {overhead}, or fewer trigger ids.",
            field="budget_bytes",
        )
    room = budget - overhead
    batch = {i.id for i in items}
    opened: set[int] = set()
    kept: dict[int, str] = {}
    # Messages for the bot first, then watched ones, then its own; within each rank,
    # whole messages first, then cut ones in what room is left, so more of them show.
    for rank in sorted({i.rank for i in items}):
        ranked = sorted((i for i in items if i.rank == rank), key=lambda i: i.id)
        for whole in (True, False):
            for item in ranked:
                if item.id in kept:
                    continue
                thread = threads[item.thread_id]
                header = 0 if item.thread_id in opened else _size(thread.header(you, item.thread_id in batch))
                text: str | None = item.render(calls)
                if header + _size(text or "") > room:
                    text = None if whole else _cut_to_fit(item, calls, room - header)
                if text is None:
                    continue
                room -= header + _size(text)
                opened.add(item.thread_id)
                kept[item.id] = text
    covers = sorted(kept)
    omitted = sorted(batch - set(kept))
    first_shown: dict[int, int] = {}
    for item in sorted(items, key=lambda i: i.id):
        if item.id in kept:
            first_shown.setdefault(item.thread_id, item.id)
    blocks = []
    for thread_id in sorted(first_shown, key=first_shown.__getitem__):
        thread = threads[thread_id]
        block = thread.header(you, thread_id in batch)
        pack = f"Knowledge pack for this thread:\n{thread.pack.rstrip()}\n" if thread.pack else ""
        if pack and _size(pack) <= room:
            block += pack
            room -= _size(pack)
        block += "".join(kept[i.id] for i in items if i.thread_id == thread_id and i.id in kept)
        blocks.append(block)
    text = _head(covers) + "".join(blocks) + _omitted_line(omitted, calls) + _instructions(calls)
    assert _size(text) <= budget, "the turn outgrew its budget"
    return text, covers, omitted


def _cut_to_fit(item: Item, calls: Calls, room: int) -> str | None:
    """The item with its body cut so it fits ``room`` bytes, or None when too little would show."""
    cap = min(BODY_CAP, len(item.body)) - 1
    while cap >= MIN_BODY:
        text = item.render(calls, cap)
        over = _size(text) - room
        if over <= 0:
            return text
        cap -= max(over, 1)
    return None


# -- the first turn ---------------------------------------------------------------------


def render_first_turn(
    calls: Calls,
    bot: Any,
    profile: dict[str, Any] | None,
    goal: Any | None,
    refs: list[Any],
    index: str | None,
    skills: list[Any],
) -> str:
    url = calls.url
    parts = [house_rules(calls).rstrip() + "\n"]
    who = [
        "# Who you are\n",
        f"You are @{bot['handle']}, a bot in workspace {bot['workspace']} of the board at {url}.",
    ]
    if profile is None:
        who.append(
            "No profile names you yet, so only what is addressed to you wakes you; "
            'a human links one with PUT /api/profiles/<name> {"bots": [...]}.'
        )
    else:
        model = f", model {profile['model']}" if profile["model"] else ""
        who.append(f"You run with profile {profile['name']} (harness {profile['harness']}{model}).")
        watch = ", ".join(f"#{slug}" for slug in profile["watch"])
        who.append(
            f"You watch {watch}: claim a thread there before you work on it."
            if watch
            else "You watch no channel: only what is addressed to you wakes you."
        )
    if goal is not None:
        who.append(
            f"Your goal is thread {goal['thread_id']}: {one_line(goal['body'])} "
            f"({calls.thread(goal['thread_id'])})."
        )
    text = "\n".join(who) + "\n"
    if profile is not None and profile["identity"].strip():
        text += "\n" + profile["identity"].strip() + "\n"
    parts.append(text)

    reading = "# Read before you work\n\n"
    if refs:
        reading += (
            "The channels of your workspace name these documents as mandatory; read each "
            f"({calls.document()}) before you work in that channel:\n"
        )
        reading += "".join(f"- #{r['channel']}: {r['path']}\n" for r in refs[:MAX_REFS])
        if len(refs) > MAX_REFS:
            reading += f"- and {len(refs) - MAX_REFS} more: see mandatory_reading in {calls.me()}\n"
    else:
        reading += "No channel of your workspace names a mandatory document.\n"
    parts.append(reading)

    if index is not None:
        body = index.strip()
        if _size(body) > MAX_INDEX_BYTES:
            body = body.encode()[:MAX_INDEX_BYTES].decode(errors="ignore") + "\n…(cut here)"
        parts.append(f"# Knowledge index of your workspace\n\n{body}\n")

    if skills and profile is not None:
        harness = profile["harness"]
        lines = [
            "# Your skills\n",
            f"Your daemon links each skill at {registry.skill_path(harness, '<name>')}; "
            f"the board keeps the text at GET {url}/api/skills/<name>.",
        ]
        for skill in skills:
            description = one_line(skill["description"], MAX_SKILL_DESCRIPTION)
            lines.append(
                f"- {skill['name']} (version {skill['version']}): {description or 'no description'} "
                f"— {registry.skill_path(harness, skill['name'])}"
            )
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)


# -- composing --------------------------------------------------------------------------


def _where(row: Any) -> str:
    return f"#{row['channel']}" if row["channel"] else f"conversation {row['conversation_id']}"


async def _batch(
    conn: Connection, p: Principal, bot: Principal, ids: list[int], now: str, shown: list[int]
) -> tuple[list[Item], dict[int, Thread]]:
    """The batch's messages and threads; ``shown`` collects the knowledge documents packed.

    Each trigger must be one the bot may read, and one the caller (a human, an
    admin bot, the bot itself) may read too: a prompt is no side door.
    """
    await scope.require_messages(conn, bot, ids)
    await scope.require_messages(conn, p, ids)
    rows = await message_store.by_ids(conn, ids)
    reasons = await message_store.inbox_reasons(conn, ids, bot.agent_id)
    items = []
    for row in rows:
        if row["author"] == bot.handle:
            mark, rank = "your own post", 2
        elif reason := reasons[row["id"]].get(bot.agent_id):
            mark, rank = f"for you ({reason})", 0
        else:
            mark, rank = "watched", 1
        items.append(_item(row, mark, rank))
    thread_ids = sorted({i.thread_id for i in items})
    roots = {r["id"]: r for r in await message_store.by_ids(conn, thread_ids)}
    states = await claims.claims_for_threads(conn, thread_ids)
    threads = {}
    for thread_id in thread_ids:
        root = roots[thread_id]
        pack, packed, documents = await knowledge_prompt.knowledge_pack(
            conn, bot, root["workspace_id"], thread_id, now
        )
        shown += packed
        threads[thread_id] = Thread(
            id=thread_id,
            where=_where(root),
            claim=states[thread_id],
            root=_item(root, "", 0),
            pack=pack,
            documents=documents,
        )
    return items, threads


def _item(row: Any, mark: str, rank: int) -> Item:
    return Item(
        id=row["id"],
        thread_id=row["thread_id"],
        author=row["author"],
        author_kind=row["author_kind"],
        where=_where(row),
        created_at=row["created_at"],
        reply_to=row["reply_to"],
        tags=read_json("messages", row["id"], "tags", row["tags"], [])[0],
        body=row["body"],
        mark=mark,
        rank=rank,
    )


async def compose(ctx: Context, p: Principal, handle: str, q: PromptQuery, url: str) -> dict[str, Any]:
    """The prompt of ``handle``'s next turn; the bot itself, humans and admin bots may ask."""
    ids = sorted({int(i) for i in q.trigger})
    calls = Calls(url, tools=q.mcp)
    now = ctx.now()
    shown: list[int] = []

    async def read(conn: Connection) -> dict[str, Any]:
        row = await identity_store.agent_by_handle(conn, handle)
        if row is None or row["kind"] != "bot" or row["workspace_id"] is None:  # a bot has a workspace
            raise NotFound("bot")
        scope.require_speaks_for(p, row)
        bot = principal_from_row(row)
        items, threads = await _batch(conn, p, bot, ids, now, shown)
        first = None
        if q.first:
            profile = await registry.bot_profile(conn, bot.agent_id)
            goal = None
            if profile is not None and profile["goal"] is not None:
                goal = next(iter(await message_store.by_ids(conn, [profile["goal"]])), None)
            skills = []
            if profile is not None and profile["skills"]:
                by_name = {s["name"]: s for s in await store.skills_by_names(conn, profile["skills"])}
                skills = [by_name[n] for n in profile["skills"] if n in by_name]
            first = render_first_turn(
                calls,
                row,
                profile,
                goal,
                await channel_store.mandatory_refs_for_workspace(conn, row["workspace_id"]),
                await knowledge_prompt.knowledge_index(conn, row["workspace_id"], now),
                skills,
            )
        turn, covers, omitted = render_turn(items, threads, bot.handle, calls, q.budget_bytes)
        handoff = None
        if q.handoff:
            ordered = [threads[t] for t in sorted(threads)]
            last = [[_item(r, "", 0) for r in await recent(conn, bot, t.id)] for t in ordered]
            handoff, _ = render_handoff(
                list(zip(ordered, last, strict=True)), bot.handle, calls, q.handoff_bytes
            )
        whole = "\n\n".join(part for part in (first, handoff, turn) if part is not None)
        return {
            "bot": bot.handle,
            "first_turn": first,
            "handoff": handoff,
            "turn": turn,
            "covers": covers,
            "omitted": omitted,
            "bytes": _size(whole),
            "budget_bytes": q.budget_bytes,
            "handoff_bytes": q.handoff_bytes,
        }

    result = await ctx.db.read(read)
    await ctx.read_counts.add(shown, "shown")
    return result
