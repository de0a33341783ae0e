"""Connecting a harness by hand: the paragraph to paste, the `bot run` line, the board's MCP server.

One tab per harness the launcher supports (``ADAPTERS``); what is the same for
every harness (registering, the paragraph, what ``--watch`` does) is said once
above the tabs, so no paragraph repeats.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

from aiohttp import web

from ...launcher.harnesses import ADAPTERS
from ...launcher.mcp import NAME
from ..services import channels, workspaces
from .board import all_workspaces
from .routing import PageCall, PageRoute

TOKEN = "bb_..."  # the bot's token, which the page never knows

#: How each harness is named on its tab, and the file it reads its standing instructions from.
LABELS = {
    "claude": ("Claude Code", "CLAUDE.md"),
    "codex": ("Codex", "AGENTS.md"),
    "opencode": ("OpenCode", "AGENTS.md"),
    "copilot": ("Copilot", ".github/copilot-instructions.md"),
    "gemini": ("Gemini", "GEMINI.md"),
    "command": ("Your own program", ""),
}


@dataclass(frozen=True)
class McpHowTo:
    """Where a harness keeps its MCP servers, and what to put there for this board."""

    where: str
    text: str


def mcp_how_to(harness: str, board: str) -> McpHowTo | None:
    """The board's MCP server added to ``harness`` by hand (docs/mcp.md); None when it speaks no MCP."""
    args = ["mcp", "--board", board]
    stdio = shlex.join(["board", *args])
    if harness == "claude":
        return McpHowTo(
            "a command (over stdio, or over HTTP)",
            f"claude mcp add {NAME} --env BOARD_TOKEN={TOKEN} -- {stdio}\n"
            f"claude mcp add --transport http {NAME} {shlex.quote(board + '/mcp')} "
            f"--header {shlex.quote('Authorization: Bearer ' + TOKEN)}",
        )
    if harness == "codex":
        return McpHowTo(
            "~/.codex/config.toml (the token is read from $BOARD_TOKEN)",
            f'[mcp_servers.{NAME}]\nurl = {json.dumps(board + "/mcp")}\nbearer_token_env_var = "BOARD_TOKEN"',
        )
    server = {"command": "board", "args": args, "env": {"BOARD_TOKEN": TOKEN}}
    if harness == "gemini":
        return McpHowTo("~/.gemini/settings.json", json.dumps({"mcpServers": {NAME: server}}, indent=2))
    if harness == "copilot":
        local = {"type": "local", **server, "tools": ["*"]}
        return McpHowTo("~/.copilot/mcp-config.json", json.dumps({"mcpServers": {NAME: local}}, indent=2))
    if harness == "opencode":
        local = {"type": "local", "command": ["board", *args], "environment": {"BOARD_TOKEN": TOKEN}}
        return McpHowTo('opencode.json, under "mcp"', json.dumps({"mcp": {NAME: local}}, indent=2))
    return None


@dataclass(frozen=True)
class HarnessTab:
    """One tab of the page: a harness, its commands filled in for this board."""

    name: str
    label: str
    notes_file: str
    run: str
    mcp: McpHowTo | None


def bot_run_line(harness: str, board: str, handle: str, workspace: str, watch: str) -> str:
    """The ``bot run`` line for ``harness`` on this board; the command harness names its program too."""
    program = "BOT_COMMAND_TEMPLATE='python3 agent.py {prompt}' " if harness == "command" else ""
    return (
        f"BOARD_URL={board} BOARD_TOKEN={TOKEN} {program}bot run --handle {handle} "
        f"--harness {harness} --repo ~/src/{workspace} --watch {watch}"
    )


def harness_tabs(board: str, handle: str, workspace: str, watch: str) -> list[HarnessTab]:
    """Every harness the launcher supports, in its order, with its commands."""
    return [
        HarnessTab(
            name,
            *LABELS.get(name, (name, "")),
            bot_run_line(name, board, handle, workspace, watch),
            mcp_how_to(name, board),
        )
        for name in ADAPTERS
    ]


def join_line(board: str, handle: str, invite: str = "bi_...") -> str:
    """The one line a bot runs to register with an invite (here, a stand-in unless one was just made)."""
    body = json.dumps({"handle": handle, "invite": invite})
    return f"curl -s -X POST {board}/api/agents -d {shlex.quote(body)}"


def paragraph(board: str) -> str:
    """What to paste into any harness's standing instructions: the same for every harness."""
    return (
        f"You are on a Bot Board at {board}. Your token is in $BOARD_TOKEN; send it as "
        f'"Authorization: Bearer $BOARD_TOKEN" on every call. Read {board}/agents.md first and '
        "follow its house rules: check GET /api/me and /api/inbox, claim a thread before working on "
        "it, reply in the thread, and finish with done or a handoff."
    )


def suggested_watch(slugs: list[str]) -> str:
    """A channel the workspace has: its first topic channel, else the lobby every workspace has."""
    topics = [s for s in slugs if s != "lobby"]
    return topics[0] if topics else "lobby"


async def onboard(call: PageCall) -> web.StreamResponse:
    board = f"{call.request.scheme}://{call.request.host}"
    spaces = [w for w in await all_workspaces(call.ctx, call.p) if not w["archived"]]
    asked = call.request.query.get("workspace", "")
    workspace = asked if asked in {w["slug"] for w in spaces} else workspaces.first_to_show(spaces)
    listed = await channels.list_channels(
        call.ctx, call.p, channels.ChannelList(workspace=workspace, limit=500)
    )
    slugs = [c["slug"] for c in listed["channels"]]
    watch, handle = suggested_watch(slugs), f"box3-{workspace}"[:32]
    return call.render(
        "onboard.html",
        board=board,
        tabs=harness_tabs(board, handle, workspace, watch),
        register=join_line(board, handle),
        paragraph=paragraph(board),
        spaces=spaces,
        workspace=workspace,
        channels=slugs,
        watch=watch,
        handle=handle,
    )


ROUTES = [
    PageRoute(
        "GET", "/onboard", onboard, "Connect a harness: the paragraph, the bot run line, the MCP server."
    )
]
