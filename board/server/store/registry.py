"""Skills with their versions, profiles, and the bot-to-profile links."""

from __future__ import annotations

import json
from typing import Any

from .connection import Connection
from .jsoncolumns import read_json
from .rows import Row, all_rows, one


def _skill_select(conn: Connection) -> str:
    """A skill's head with one of its versions (the join's condition may be extended)."""
    size = "octet_length(v.text)" if conn.dialect == "postgresql" else "length(CAST(v.text AS BLOB))"
    return f"""SELECT s.id, s.name, s.version AS latest_version, s.created_at, s.created_by,
    v.version, v.description, v.source, v.text, v.reason, v.author AS updated_by,
    v.created_at AS updated_at, {size} AS bytes
    FROM skills s JOIN skill_versions v ON v.skill_id = s.id"""


PROFILE_SELECT = """SELECT p.id, p.name, p.workspace_id, w.slug AS workspace, w.archived_at, p.harness,
    p.model, p.flags, p.repo, p.watch, p.goal, p.identity, p.mcp, p.command_template, p.command_session_field,
    p.rotate_after_turns, p.rotate_after_tokens, p.budget_wakes, p.budget_tokens, p.budget_cost_usd,
    p.worktrees, p.max_worktrees, p.base_branch, p.version, p.created_at, p.updated_at,
    p.updated_by FROM profiles p JOIN workspaces w ON w.id = p.workspace_id"""

#: Joined to ``profiles p``: the bots that run with each profile (``bp``, ``a``). A link counts
#: only while its bot is in the profile's workspace: one left behind when a bot moved to another
#: workspace does not.
LINKED_BOTS = """JOIN bot_profiles bp ON bp.profile_id = p.id
    JOIN agents a ON a.id = bp.agent_id AND a.workspace_id = p.workspace_id"""


# -- skills ----------------------------------------------------------------------------


async def skill(conn: Connection, name: str, version: int | None = None) -> Row | None:
    """A skill at ``version`` (its latest when None)."""
    if version is None:
        return await one(conn, f"{_skill_select(conn)} AND v.version = s.version WHERE s.name = ?", (name,))
    return await one(conn, f"{_skill_select(conn)} WHERE s.name = ? AND v.version = ?", (name, version))


async def list_skills(conn: Connection, after_name: str, limit: int) -> list[Row]:
    return await all_rows(
        conn,
        f"{_skill_select(conn)} AND v.version = s.version WHERE s.name > ? ORDER BY s.name LIMIT ?",
        (after_name, limit),
    )


async def skills_by_names(conn: Connection, names: list[str]) -> list[Row]:
    if not names:
        return []
    marks = ",".join("?" * len(names))
    return await all_rows(
        conn, f"{_skill_select(conn)} AND v.version = s.version WHERE s.name IN ({marks})", tuple(names)
    )


async def insert_skill(conn: Connection, name: str, author: str, now: str) -> int:
    new_id = await conn.insert(
        "INSERT INTO skills (name, version, created_at, created_by) VALUES (?, 0, ?, ?)",
        (name, now, author),
    )
    return new_id


async def append_skill_version(
    conn: Connection,
    skill_id: int,
    version: int,
    *,
    description: str,
    source: str,
    text: str,
    reason: str,
    author: str,
    now: str,
) -> None:
    await conn.execute(
        """INSERT INTO skill_versions (skill_id, version, description, source, text, reason, author,
               created_at) VALUES (?,?,?,?,?,?,?,?)""",
        (skill_id, version, description, source, text, reason, author, now),
    )
    await conn.execute("UPDATE skills SET version = ? WHERE id = ?", (version, skill_id))


# -- profiles --------------------------------------------------------------------------


def decode_profile(row: Row) -> dict[str, Any]:
    """The stored columns of a profile, lists decoded (``unreadable`` when one cannot be)."""
    item = dict(row)
    for key in ("flags", "watch"):
        item[key], ok = read_json("profiles", row["id"], key, row[key], [])
        if not ok:
            item["unreadable"] = True
    item["mcp"] = bool(row["mcp"])
    item["worktrees"] = bool(row["worktrees"])
    return item


async def profile(conn: Connection, name: str) -> Row | None:
    return await one(conn, f"{PROFILE_SELECT} WHERE p.name = ?", (name,))


async def list_profiles(
    conn: Connection, workspace_ids: list[int] | None, after_name: str, limit: int
) -> list[Row]:
    """Profiles of the given workspaces (every workspace when None), by name."""
    where = "p.name > ?"
    params: list[str | int] = [after_name]
    if workspace_ids is not None:
        where += f" AND p.workspace_id IN ({','.join('?' * len(workspace_ids)) or 'NULL'})"
        params += workspace_ids
    return await all_rows(conn, f"{PROFILE_SELECT} WHERE {where} ORDER BY p.name LIMIT ?", (*params, limit))


async def insert_profile(conn: Connection, name: str, workspace_id: int, values: dict[str, Any]) -> int:
    new_id = await conn.insert(
        """INSERT INTO profiles (name, workspace_id, harness, model, flags, repo, watch, goal, identity,
               mcp, command_template, command_session_field, rotate_after_turns, rotate_after_tokens,
               budget_wakes, budget_tokens, budget_cost_usd, worktrees, max_worktrees, base_branch,
               version, created_at, updated_at, updated_by)
               VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,1,?,?,?)""",
        (name, workspace_id, *_profile_fields(values), values["updated_at"], values["updated_by"]),
    )
    return new_id


def _profile_fields(values: dict[str, Any]) -> tuple[Any, ...]:
    """The profile's fields in column order, as the columns hold them."""
    return (
        values["harness"],
        values["model"],
        json.dumps(values["flags"]),
        values["repo"],
        json.dumps(values["watch"]),
        values["goal"],
        values["identity"],
        int(values["mcp"]),
        values["command_template"],
        values["command_session_field"],
        values["rotate_after_turns"],
        values["rotate_after_tokens"],
        values["budget_wakes"],
        values["budget_tokens"],
        values["budget_cost_usd"],
        int(values["worktrees"]),
        values["max_worktrees"],
        values["base_branch"],
        values["updated_at"],
    )


async def update_profile(conn: Connection, profile_id: int, values: dict[str, Any]) -> None:
    """Write the profile's fields and count one more version."""
    await conn.execute(
        """UPDATE profiles SET harness = ?, model = ?, flags = ?, repo = ?, watch = ?, goal = ?,
               identity = ?, mcp = ?, command_template = ?, command_session_field = ?,
               rotate_after_turns = ?, rotate_after_tokens = ?,
               budget_wakes = ?, budget_tokens = ?, budget_cost_usd = ?,
               worktrees = ?, max_worktrees = ?, base_branch = ?,
               version = version + 1, updated_at = ?, updated_by = ? WHERE id = ?""",
        (
            *_profile_fields(values),
            values["updated_by"],
            profile_id,
        ),
    )


async def profile_skill_names(conn: Connection, profile_ids: list[int]) -> dict[int, list[str]]:
    if not profile_ids:
        return {}
    marks = ",".join("?" * len(profile_ids))
    rows = await all_rows(
        conn,
        f"""SELECT ps.profile_id, s.name FROM profile_skills ps JOIN skills s ON s.id = ps.skill_id
            WHERE ps.profile_id IN ({marks}) ORDER BY ps.profile_id, ps.position""",
        tuple(profile_ids),
    )
    found: dict[int, list[str]] = {i: [] for i in profile_ids}
    for row in rows:
        found[row["profile_id"]].append(row["name"])
    return found


async def set_profile_skills(conn: Connection, profile_id: int, skill_ids: list[int]) -> None:
    await conn.execute("DELETE FROM profile_skills WHERE profile_id = ?", (profile_id,))
    await conn.executemany(
        "INSERT INTO profile_skills (profile_id, skill_id, position) VALUES (?,?,?)",
        [(profile_id, skill_id, position) for position, skill_id in enumerate(skill_ids)],
    )


async def profile_bots(conn: Connection, profile_ids: list[int]) -> dict[int, list[str]]:
    """Handles of the bots that run with each profile (:data:`LINKED_BOTS`)."""
    if not profile_ids:
        return {}
    marks = ",".join("?" * len(profile_ids))
    rows = await all_rows(
        conn,
        f"""SELECT bp.profile_id, a.handle FROM profiles p {LINKED_BOTS}
            WHERE bp.profile_id IN ({marks}) ORDER BY bp.profile_id, a.handle""",
        tuple(profile_ids),
    )
    found: dict[int, list[str]] = {i: [] for i in profile_ids}
    for row in rows:
        found[row["profile_id"]].append(row["handle"])
    return found


async def profile_bot_ids(conn: Connection, profile_id: int) -> list[int]:
    """The ids of the bots that run with a profile (:data:`LINKED_BOTS`)."""
    rows = await all_rows(
        conn,
        f"SELECT bp.agent_id FROM profiles p {LINKED_BOTS} WHERE bp.profile_id = ?",
        (profile_id,),
    )
    return [int(r["agent_id"]) for r in rows]


async def profiles_of_bots(conn: Connection, agent_ids: list[int]) -> dict[int, str]:
    """The profile of its own workspace each of these bots runs with, by bot id (:data:`LINKED_BOTS`)."""
    if not agent_ids:
        return {}
    marks = ",".join("?" * len(agent_ids))
    rows = await all_rows(
        conn,
        f"SELECT bp.agent_id, p.name FROM profiles p {LINKED_BOTS} WHERE bp.agent_id IN ({marks})",
        tuple(agent_ids),
    )
    return {row["agent_id"]: row["name"] for row in rows}


async def set_profile_bots(conn: Connection, profile_id: int, agent_ids: list[int]) -> None:
    """Link exactly these bots to the profile (replacing a stale link a moved bot left behind)."""
    await conn.execute("DELETE FROM bot_profiles WHERE profile_id = ?", (profile_id,))
    await conn.executemany(
        """INSERT INTO bot_profiles (agent_id, profile_id) VALUES (?,?)
           ON CONFLICT (agent_id) DO UPDATE SET profile_id = excluded.profile_id""",
        [(agent_id, profile_id) for agent_id in agent_ids],
    )


async def profile_for_bot(conn: Connection, agent_id: int) -> Row | None:
    """The profile a bot runs with, if it is linked to one of its own workspace."""
    return await one(
        conn,
        f"{PROFILE_SELECT} {LINKED_BOTS} WHERE bp.agent_id = ?",
        (agent_id,),
    )


# -- prompt ----------------------------------------------------------------------------


async def link_bot(conn: Connection, profile_id: int, agent_id: int) -> None:
    """Run one bot with this profile (its earlier link, if any, is replaced)."""
    await conn.execute(
        """INSERT INTO bot_profiles (agent_id, profile_id) VALUES (?,?)
           ON CONFLICT (agent_id) DO UPDATE SET profile_id = excluded.profile_id""",
        (agent_id, profile_id),
    )
