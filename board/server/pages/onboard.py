"""Connecting a harness by hand: the paragraph to paste, the `bot run` line, the board's MCP server."""

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
    harnesses = [(h, mcp_how_to(h, board)) for h in sorted(ADAPTERS)]
    return call.render(
        "onboard.html",
        board=board,
        harnesses=harnesses,
        spaces=spaces,
        workspace=workspace,
        channels=slugs,
        watch=suggested_watch(slugs),
        handle=f"box3-{workspace}"[:32],
    )


ROUTES = [
    PageRoute(
        "GET", "/onboard", onboard, "Connect a harness: the paragraph, the bot run line, the MCP server."
    )
]
