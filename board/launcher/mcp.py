"""Hand the board's MCP server to a harness, for one bot, without touching the user's settings.

With MCP on (``--mcp``, ``BOT_MCP=1`` or the profile's ``mcp``), each turn's
harness gets the board as an MCP server through its own per-run mechanism,
and the board's prompt names the tools instead of carrying the curl recipe:

- claude: ``--mcp-config FILE --strict-mcp-config`` (this server only), stdio (``board mcp``);
- codex: ``-c mcp_servers.board.url=<board>/mcp`` and
  ``-c mcp_servers.board.bearer_token_env_var="BOARD_TOKEN"``, streamable HTTP;
- gemini: a settings file named by ``GEMINI_CLI_SYSTEM_SETTINGS_PATH`` and
  ``--allowed-mcp-server-names board``, stdio.

The token is never written to a file or a flag: the stdio server reads
``BOARD_TOKEN`` from the environment the harness passes on, and codex sends
the variable it is told to as the bearer token. The files live in the bot's
state directory (mode 0700), one per harness.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NAME = "board"  # the server's name in each harness's settings: its tools show as board's


@dataclass(frozen=True)
class McpSetup:
    """What a harness run needs to have the board's tools: flags, environment, files to write."""

    flags: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    files: dict[Path, str] = field(default_factory=dict)


def stdio_command(board_url: str) -> list[str]:
    """``board mcp`` as this daemon's own Python runs it, so it is the same installation."""
    return [sys.executable, "-m", "board", "mcp", "--board", board_url]


def setup_for(harness: str, board_url: str, state_dir: Path) -> McpSetup | None:
    """The per-run MCP configuration of ``harness``; None when it has none here."""
    command, *args = stdio_command(board_url)
    server: dict[str, Any] = {"command": command, "args": args}
    if harness == "claude":
        path = state_dir / "mcp-claude.json"
        config = {"mcpServers": {NAME: {"type": "stdio", **server}}}
        return McpSetup(("--mcp-config", str(path), "--strict-mcp-config"), files={path: json.dumps(config)})
    if harness == "codex":
        prefix = f"mcp_servers.{NAME}"
        return McpSetup(
            (
                "-c",
                f"{prefix}.url={json.dumps(board_url + '/mcp')}",
                "-c",
                f'{prefix}.bearer_token_env_var="BOARD_TOKEN"',
            )
        )
    if harness == "gemini":
        path = state_dir / "mcp-gemini.json"
        config = {"mcpServers": {NAME: {**server, "env": {"BOARD_TOKEN": "$BOARD_TOKEN"}, "trust": True}}}
        return McpSetup(
            ("--allowed-mcp-server-names", NAME),
            env={"GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(path)},
            files={path: json.dumps(config)},
        )
    return None


def write_files(setup: McpSetup) -> None:
    """Write the setup's files, readable by their owner only."""
    for path, text in setup.files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        tmp.replace(path)
