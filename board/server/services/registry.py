"""The registry: skills (named SKILL.md bundles) and profiles (how to launch a bot).

Skills belong to the whole board: any caller reads them, humans and admin
bots write them, and every write appends a version. Profiles belong to one
workspace: humans write them, a bot reads those of its own workspace, admin
bots read all. A profile names the bots that run with it (``bots``); a bot
runs with at most one profile, and that profile gives the wake feed its
default ``watch`` and ``goal``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgument, LimitExceeded, NameConflict, NotFound, VersionConflict
from ..principal import Principal
from ..store import identity as identity_store
from ..store import messages as message_store
from ..store import registry as store
from ..store import workspaces as workspace_store
from ..store.connection import Connection
from ..store.rows import WorkspaceRow
from ..validation import arg, too_large
from . import actions, audit, budgets, scope
from .context import Context
from .paging import Page, bounded_page

SKILL_NAME = r"[a-z0-9]+(-[a-z0-9]+)*"  # the Agent Skills rule: it is also a directory name
PROFILE_NAME = r"[a-z0-9][a-z0-9._-]{1,63}"
SLUG_PATTERN = r"[a-z0-9._-]{2,64}"
HANDLE_PATTERN = r"[A-Za-z0-9._-]{2,32}"
HARNESSES = ("claude", "codex", "opencode", "copilot", "gemini", "command")
MAX_SKILL_BYTES = 100_000
MAX_IDENTITY = 8_000

#: Where a bot daemon links a skill for each harness: ``<dir>/<name>/SKILL.md``.
SKILL_DIRS = {
    "claude": "~/.claude/skills",
    "codex": "~/.agents/skills",
    "opencode": "~/.config/opencode/skills",
    "copilot": "~/.copilot/skills",
    "gemini": "~/.gemini/skills",
    "command": "~/.agents/skills",
}


def skill_path(harness: str, name: str) -> str:
    return f"{SKILL_DIRS.get(harness, SKILL_DIRS['command'])}/{name}/SKILL.md"


# -- skills ----------------------------------------------------------------------------


def skill_dict(row: Any, *, full: bool = True) -> dict[str, Any]:
    item = {
        "name": row["name"],
        "description": row["description"],
        "source": row["source"],
        "version": row["version"],
        "latest_version": row["latest_version"],
        "bytes": row["bytes"],
        "created_at": row["created_at"],
        "created_by": row["created_by"],
        "updated_at": row["updated_at"],
        "updated_by": row["updated_by"],
    }
    if full:
        item["text"] = row["text"]
        item["reason"] = row["reason"]
    return item


def _check_text(text: str) -> None:
    size = len(text.encode())
    if size > MAX_SKILL_BYTES:
        raise LimitExceeded(
            too_large("SKILL.md", size, MAX_SKILL_BYTES, "bytes"),
            field="text",
            limit=MAX_SKILL_BYTES,
        )
    if not text.strip():
        raise InvalidArgument("The SKILL.md text is empty.", field="text")


@dataclass
class SkillList:
    after: str = arg("", max_len=64, help="Name to continue after.")
    limit: int = arg(20, min=1, max=500)
    max_bytes: int | None = arg(None, min=1)


async def list_skills(ctx: Context, p: Principal, q: SkillList) -> Page:
    """Every skill of the board, without its text (read one for that)."""
    rows = await ctx.db.read(lambda conn: store.list_skills(conn, q.after, q.limit + 1))
    items = [skill_dict(r, full=False) for r in rows]
    return bounded_page(ctx, "skills", items, q.limit, q.max_bytes, descending=False, key="name")


@dataclass
class SkillQuery:
    version: int | None = arg(None, min=1, help="An earlier version; the latest when absent.")


async def get_skill(ctx: Context, p: Principal, name: str, q: SkillQuery) -> dict[str, Any]:
    row = await ctx.db.read(lambda conn: store.skill(conn, name, q.version))
    if row is None:
        raise NotFound("skill" if q.version is None else f"version {q.version} of skill {name}")
    return skill_dict(row)


@dataclass
class NewSkill:
    name: str = arg(max_len=64, pattern=SKILL_NAME, help="1-64 of a-z, 0-9 and single hyphens.")
    text: str = arg(max_len=MAX_SKILL_BYTES, limit=True, multiline=True, help="The SKILL.md text.")
    description: str = arg("", max_len=1024, help="When to use it, one line.")
    source: str = arg("", max_len=500, help="Where it comes from: a git URL or a path.")
    reason: str = arg("", max_len=500)


@dataclass
class SkillUpdate:
    text: str | None = arg(None, max_len=MAX_SKILL_BYTES, limit=True, multiline=True)
    description: str | None = arg(None, max_len=1024)
    source: str | None = arg(None, max_len=500)
    reason: str = arg("", max_len=500)
    base_version: int | None = arg(None, min=1, help="Refuse the write unless this is the latest.")


async def create_skill(ctx: Context, p: Principal, req: NewSkill) -> dict[str, Any]:
    actions.require(p, "skill.write")
    _check_text(req.text)

    async def write(conn: Connection) -> dict[str, Any]:
        if await store.skill(conn, req.name) is not None:
            raise NameConflict(f"Skill {req.name!r} exists; PUT /api/skills/{req.name} to change it.")
        now = ctx.now()
        skill_id = await store.insert_skill(conn, req.name, p.handle, now)
        await store.append_skill_version(
            conn,
            skill_id,
            1,
            description=req.description,
            source=req.source,
            text=req.text,
            reason=req.reason,
            author=p.handle,
            now=now,
        )
        await audit.record(
            conn,
            ctx,
            p,
            "skill.create",
            req.name,
            reason=req.reason,
            details={"version": 1, "bytes": len(req.text.encode())},
        )
        return skill_dict(await store.skill(conn, req.name))

    return await ctx.db.write(write)


async def update_skill(ctx: Context, p: Principal, name: str, req: SkillUpdate) -> dict[str, Any]:
    """A new version; fields left out keep their value."""
    actions.require(p, "skill.write")
    if req.text is not None:
        _check_text(req.text)

    async def write(conn: Connection) -> dict[str, Any]:
        current = await store.skill(conn, name)
        if current is None:
            raise NotFound("skill")
        if req.base_version is not None and req.base_version != current["version"]:
            raise VersionConflict(
                f"Skill {name} is at version {current['version']}, not {req.base_version}: "
                "read it again, merge, and retry.",
                version=current["version"],
            )
        version = current["version"] + 1
        text = current["text"] if req.text is None else req.text
        await store.append_skill_version(
            conn,
            current["id"],
            version,
            description=current["description"] if req.description is None else req.description,
            source=current["source"] if req.source is None else req.source,
            text=text,
            reason=req.reason,
            author=p.handle,
            now=ctx.now(),
        )
        changed = [k for k in ("text", "description", "source") if getattr(req, k) is not None]
        await audit.record(
            conn,
            ctx,
            p,
            "skill.update",
            name,
            reason=req.reason,
            details={"version": version, "changed": changed, "bytes": len(text.encode())},
        )
        return skill_dict(await store.skill(conn, name))

    return await ctx.db.write(write)


# -- profiles --------------------------------------------------------------------------


#: A git worktree per thread for the profile's bots (docs/bots.md); the daemon reads them.
WORKTREE_FIELDS = ("worktrees", "max_worktrees", "base_branch")
DEFAULT_MAX_WORKTREES = 4
WORKTREES_HELP = "Give each thread its bots take its own git worktree, branch and session."
MAX_WORKTREES_HELP = "Live worktrees per bot at most; a wake for one more thread waits."
BASE_BRANCH_HELP = 'The branch worktrees start from; "", null or absent: the checkout\'s current branch.'
BASE_BRANCH = r"(?!-)[A-Za-z0-9._/-]{1,200}"

PROFILE_KEYS = (
    "name",
    "workspace",
    "harness",
    "model",
    "flags",
    "repo",
    "watch",
    "goal",
    "mcp",
    "command_template",
    "command_session_field",
    "rotate_after_turns",
    "rotate_after_tokens",
    *budgets.LIMIT_COLUMNS,
    *WORKTREE_FIELDS,
)
TEMPLATE_HELP = "The command harness's shell-quoted argv template ({prompt}, {session}, {model}, {flags})."
TURNS_HELP = "Start a fresh harness session after this many turns of one; 0 or absent: never."
TOKENS_HELP = (
    "Start a fresh session once it holds this many tokens (its last turn's input, cached included, "
    "and output: what the next turn would re-read); 0 or absent: never."
)
MAX_ROTATE = 1_000_000_000


async def profile_dicts(conn: Connection, rows: list[Any], *, full: bool = True) -> list[dict[str, Any]]:
    ids = [r["id"] for r in rows]
    skills = await store.profile_skill_names(conn, ids)
    bots = await store.profile_bots(conn, ids)
    items = []
    for row in rows:
        decoded = store.decode_profile(row)
        item = {key: decoded[key] for key in PROFILE_KEYS}
        if decoded.get("unreadable"):
            item["unreadable"] = True
        item["skills"] = skills[row["id"]]
        item["bots"] = bots[row["id"]]
        if full:
            item["identity"] = row["identity"]
        else:
            item["identity_chars"] = len(row["identity"])
        for key in ("version", "created_at", "updated_at", "updated_by"):
            item[key] = row[key]
        items.append(item)
    return items


async def _visible_profile(conn: Connection, p: Principal, name: str) -> Any:
    row = await store.profile(conn, name)
    if row is None or not scope.visible(p, row["workspace_id"]):
        raise NotFound("profile")
    return row


@dataclass
class ProfileList:
    workspace: str | None = arg(None, pattern=SLUG_PATTERN)
    after: str = arg("", max_len=64, help="Name to continue after.")
    limit: int = arg(20, min=1, max=500)
    max_bytes: int | None = arg(None, min=1)


async def list_profiles(ctx: Context, p: Principal, q: ProfileList) -> Page:
    """Profiles without their identity text; a bot sees its own workspace's only."""

    async def read(conn: Connection) -> list[dict[str, Any]]:
        workspace = await scope.resolve_optional(conn, p, q.workspace, anywhere=True)
        rows = await store.list_profiles(conn, scope.workspace_ids(p, workspace), q.after, q.limit + 1)
        return await profile_dicts(conn, rows, full=False)

    items = await ctx.db.read(read)
    return bounded_page(ctx, "profiles", items, q.limit, q.max_bytes, descending=False, key="name")


async def get_profile(ctx: Context, p: Principal, name: str) -> dict[str, Any]:
    async def read(conn: Connection) -> dict[str, Any]:
        row = await _visible_profile(conn, p, name)
        return (await profile_dicts(conn, [row]))[0]

    return await ctx.db.read(read)


@dataclass
class NewProfile(budgets.Limits):
    name: str = arg(pattern=PROFILE_NAME, help="2-64 of a-z, 0-9, '.', '_', '-'.")
    workspace: str = arg(pattern=SLUG_PATTERN)
    harness: str = arg(choices=HARNESSES)
    model: str = arg("", max_len=200)
    flags: list[str] = arg([], max_items=50, max_len=500, help="Extra harness flags, one per item.")
    repo: str = arg("", max_len=500, help="Working directory or git URL of the bot's checkout.")
    watch: list[str] = arg([], max_items=50, pattern=SLUG_PATTERN, help="Channel slugs to watch.")
    goal: int | None = arg(None, min=1, help="A thread of the workspace to watch.")
    skills: list[str] = arg([], max_items=50, max_len=64, pattern=SKILL_NAME)
    identity: str = arg("", max_len=MAX_IDENTITY, limit=True, multiline=True)
    mcp: bool = arg(False, help="Hand the harness the board's MCP tools (bot run --mcp).")
    command_template: str = arg("", max_len=2000, help=TEMPLATE_HELP)
    command_session_field: str = arg("", max_len=200, help="The JSON field holding its session id.")
    rotate_after_turns: int | None = arg(None, min=0, max=MAX_ROTATE, help=TURNS_HELP)
    rotate_after_tokens: int | None = arg(None, min=0, max=MAX_ROTATE, help=TOKENS_HELP)
    worktrees: bool = arg(False, help=WORKTREES_HELP)
    max_worktrees: int = arg(DEFAULT_MAX_WORKTREES, min=1, max=32, help=MAX_WORKTREES_HELP)
    base_branch: str | None = arg(None, pattern=f"|{BASE_BRANCH}", help=BASE_BRANCH_HELP)
    bots: list[str] = arg([], max_items=100, pattern=HANDLE_PATTERN, help="Bots that run with it.")


@dataclass
class ProfileUpdate(budgets.Limits):
    harness: str | None = arg(None, choices=HARNESSES)
    model: str | None = arg(None, max_len=200)
    flags: list[str] | None = arg(None, max_items=50, max_len=500)
    repo: str | None = arg(None, max_len=500)
    watch: list[str] | None = arg(None, max_items=50, pattern=SLUG_PATTERN)
    goal: int | None = arg(None, min=0, help="A thread of the workspace to watch; 0 clears it.")
    skills: list[str] | None = arg(None, max_items=50, max_len=64, pattern=SKILL_NAME)
    identity: str | None = arg(None, max_len=MAX_IDENTITY, limit=True, multiline=True)
    mcp: bool | None = arg(None, help="Hand the harness the board's MCP tools (bot run --mcp).")
    command_template: str | None = arg(None, max_len=2000, help=TEMPLATE_HELP)
    command_session_field: str | None = arg(None, max_len=200)
    rotate_after_turns: int | None = arg(None, min=0, max=MAX_ROTATE, help=TURNS_HELP)
    rotate_after_tokens: int | None = arg(None, min=0, max=MAX_ROTATE, help=TOKENS_HELP)
    worktrees: bool | None = arg(None, help=WORKTREES_HELP)
    max_worktrees: int | None = arg(None, min=1, max=32, help=MAX_WORKTREES_HELP)
    base_branch: str | None = arg(
        None,
        pattern=f"|{BASE_BRANCH}",
        help='The branch worktrees start from; "" clears it (the checkout\'s).',
    )
    bots: list[str] | None = arg(None, max_items=100, pattern=HANDLE_PATTERN)
    base_version: int | None = arg(None, min=1, help="Refuse the write unless this is the latest.")


PROFILE_FIELDS = (
    "harness",
    "model",
    "flags",
    "repo",
    "watch",
    "goal",
    "skills",
    "identity",
    "mcp",
    "command_template",
    "command_session_field",
    "rotate_after_turns",
    "rotate_after_tokens",
    *budgets.LIMIT_COLUMNS,
    *WORKTREE_FIELDS,
    "bots",
)


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


async def _goal(conn: Connection, workspace: WorkspaceRow, goal: int | None) -> int | None:
    """The root of the goal thread, which must be a channel thread of the profile's workspace."""
    if not goal:
        return None
    row = await message_store.by_id(conn, goal)
    if row is None or row["workspace_id"] != workspace["id"]:
        raise NotFound("thread")
    if row["conversation_id"] is not None:
        raise InvalidArgument("A goal is a channel thread, not a conversation.", field="goal")
    return int(row["thread_id"])


async def _skill_ids(conn: Connection, names: list[str]) -> list[int]:
    found = {r["name"]: r["id"] for r in await store.skills_by_names(conn, names)}
    for name in names:
        if name not in found:
            raise NotFound(f"skill {name}")
    return [found[n] for n in names]


async def _bot_ids(
    conn: Connection, workspace: WorkspaceRow, handles: list[str], profile: str | None
) -> list[int]:
    """The bots named, each a bot of the workspace and not running with another profile."""
    agents = {a["handle"].lower(): a for a in await identity_store.agents_by_handles(conn, handles)}
    ids = []
    for handle in handles:
        agent = agents.get(handle.lower())
        if agent is None or agent["kind"] != "bot" or agent["workspace_id"] != workspace["id"]:
            raise NotFound(f"bot {handle}")
        ids.append(agent["id"])
    current = await store.profiles_of_bots(conn, ids)
    for agent_id, handle in zip(ids, handles, strict=True):
        other = current.get(agent_id)
        if other is not None and other != profile:
            raise NameConflict(
                f"{handle} runs with profile {other}; take it out of that profile first.",
                bot=handle,
                profile=other,
            )
    return ids


async def create_profile(ctx: Context, p: Principal, req: NewProfile) -> dict[str, Any]:
    async def write(conn: Connection) -> tuple[dict[str, Any], list[int]]:
        workspace = await scope.resolve(conn, p, req.workspace)
        actions.require(p, "profile.write")  # once the workspace is seen: out of scope stays NOT_FOUND
        scope.require_writable(workspace)
        if await store.profile(conn, req.name) is not None:
            raise NameConflict(f"Profile {req.name!r} exists; PUT /api/profiles/{req.name} to change it.")
        skills, bots = _unique(req.skills), _unique(req.bots)
        skill_ids = await _skill_ids(conn, skills)
        bot_ids = await _bot_ids(conn, workspace, bots, None)
        values = {
            "harness": req.harness,
            "model": req.model,
            "flags": req.flags,
            "repo": req.repo,
            "watch": _unique(req.watch),
            "goal": await _goal(conn, workspace, req.goal),
            "identity": req.identity,
            "mcp": req.mcp,
            "command_template": req.command_template,
            "command_session_field": req.command_session_field,
            "rotate_after_turns": req.rotate_after_turns or None,
            "rotate_after_tokens": req.rotate_after_tokens or None,
            "worktrees": req.worktrees,
            "max_worktrees": req.max_worktrees,
            "base_branch": req.base_branch or None,
            **budgets.changed_limits(req, {column: None for column in budgets.LIMIT_COLUMNS}),
            "updated_at": ctx.now(),
            "updated_by": p.handle,
        }
        profile_id = await store.insert_profile(conn, req.name, workspace["id"], values)
        await store.set_profile_skills(conn, profile_id, skill_ids)
        await store.set_profile_bots(conn, profile_id, bot_ids)
        await audit.record(
            conn,
            ctx,
            p,
            "profile.create",
            req.name,
            workspace=workspace["slug"],
            details={"harness": req.harness, "skills": skills, "bots": bots},
        )
        return (await profile_dicts(conn, [await store.profile(conn, req.name)]))[0], bot_ids

    answer, bot_ids = await ctx.db.write(write)
    for agent_id in bot_ids:  # their wake feeds take the profile's watch and goal now
        ctx.tokens.forget_agent(agent_id)
    return answer


async def update_profile(ctx: Context, p: Principal, name: str, req: ProfileUpdate) -> dict[str, Any]:
    """Change a profile; fields left out keep their value."""

    async def write(conn: Connection) -> tuple[dict[str, Any], set[int]]:
        row = await _visible_profile(conn, p, name)
        actions.require(p, "profile.write")
        workspace = await workspace_store.by_id(conn, row["workspace_id"])
        assert workspace is not None  # the profile's own workspace
        scope.require_writable(workspace)
        if req.base_version is not None and req.base_version != row["version"]:
            raise VersionConflict(
                f"Profile {name} is at version {row['version']}, not {req.base_version}: "
                "read it again, merge, and retry.",
                version=row["version"],
            )
        current = store.decode_profile(row)
        values = {
            key: current[key] if getattr(req, key) is None else getattr(req, key)
            for key in (
                "harness",
                "model",
                "flags",
                "repo",
                "watch",
                "identity",
                "mcp",
                "command_template",
                "command_session_field",
                "worktrees",
                "max_worktrees",
            )
        }
        # "" clears the base branch: worktrees start from the checkout's current branch.
        values["base_branch"] = (
            current["base_branch"] if req.base_branch is None else (req.base_branch or None)
        )
        values["watch"] = _unique(values["watch"])
        for key in ("rotate_after_turns", "rotate_after_tokens"):  # 0 clears: never rotate
            asked = getattr(req, key)
            values[key] = current[key] if asked is None else (asked or None)
        values |= budgets.changed_limits(req, current)
        values["goal"] = current["goal"] if req.goal is None else await _goal(conn, workspace, req.goal)
        values["updated_at"] = ctx.now()
        values["updated_by"] = p.handle
        if req.skills is not None:
            await store.set_profile_skills(conn, row["id"], await _skill_ids(conn, _unique(req.skills)))
        changed = [f for f in PROFILE_FIELDS if getattr(req, f) is not None]
        before = set(await store.profile_bot_ids(conn, row["id"]))
        after = before
        if req.bots is not None:
            ids = await _bot_ids(conn, workspace, _unique(req.bots), name)
            await store.set_profile_bots(conn, row["id"], ids)
            after = set(ids)
        # The bots whose wake feed it shaped or now shapes, if what it gives them moved (a page
        # saves every field, changed or not): their streams end, to be opened anew.
        moved = (set(values["watch"]), values["goal"]) != (set(current["watch"]), current["goal"])
        rescoped = (before | after) if moved else before ^ after
        await store.update_profile(conn, row["id"], values)
        if any(f in budgets.LIMIT_COLUMNS for f in changed):
            budgets.changed(await store.profile_bot_ids(conn, row["id"]))
        await audit.record(
            conn,
            ctx,
            p,
            "profile.update",
            name,
            workspace=workspace["slug"],
            details={"version": row["version"] + 1, "changed": changed},
        )
        fresh = await store.profile(conn, name)
        assert fresh is not None  # updated in this transaction
        return (await profile_dicts(conn, [fresh]))[0], rescoped

    answer, rescoped = await ctx.db.write(write)
    for agent_id in rescoped:
        ctx.tokens.forget_agent(agent_id)
    return answer


# -- what other services ask of the registry -------------------------------------------


async def bot_profile(conn: Connection, agent_id: int) -> dict[str, Any] | None:
    """The profile a bot runs with, decoded, with its skill names; None without one."""
    row = await store.profile_for_bot(conn, agent_id)
    if row is None:
        return None
    item = store.decode_profile(row)
    item["skills"] = (await store.profile_skill_names(conn, [row["id"]]))[row["id"]]
    return item


async def wake_defaults(conn: Connection, p: Principal) -> tuple[list[str], int | None]:
    """The watch and goal a bot's profile gives its wake feed (nothing without a profile)."""
    if not p.is_bot:
        return [], None
    profile = await store.profile_for_bot(conn, p.agent_id)
    if profile is None:
        return [], None
    return store.decode_profile(profile)["watch"], profile["goal"]
