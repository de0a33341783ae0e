"""Harness adapters: one module per CLI, one interface.

``argv(TurnRequest) -> list[str]`` builds the command line for one turn (start,
or resume a session); ``parse(stdout, stderr, exit_code, after) -> TurnResult`` says
what the turn came to: how the process ended (``Exit``) apart from what it said.
``board.launcher.process.run_turn`` joins the two around a subprocess.

Configuration comes from the environment (or a profile):

- ``BOT_<HARNESS>_FLAGS``: extra or override flags, shell-quoted
  (``BOT_CLAUDE_FLAGS="--model opus --max-turns 40"``);
- ``BOT_<HARNESS>_BIN``: the executable, when it is not the harness's name on PATH;
- ``BOT_COMMAND_TEMPLATE``: the command harness's argv template, shell-quoted;
- ``BOT_COMMAND_SESSION_FIELD``: the JSON field carrying its session id.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence

from .base import Adapter, Exit, FlagError, TurnRequest, TurnResult
from .claude import ClaudeAdapter
from .codex import CodexAdapter
from .command import CommandAdapter
from .copilot import CopilotAdapter
from .gemini import GeminiAdapter
from .opencode import OpencodeAdapter

__all__ = [
    "ADAPTERS",
    "Adapter",
    "Exit",
    "FlagError",
    "TurnRequest",
    "TurnResult",
    "adapter_from_env",
    "get_adapter",
]

ADAPTERS: dict[str, type[Adapter]] = {
    "claude": ClaudeAdapter,
    "codex": CodexAdapter,
    "opencode": OpencodeAdapter,
    "copilot": CopilotAdapter,
    "gemini": GeminiAdapter,
    "command": CommandAdapter,
}


def get_adapter(
    name: str,
    flags: Sequence[str] = (),
    template: Sequence[str] | None = None,
    session_field: str | None = None,
    executable: str | None = None,
) -> Adapter:
    """The adapter for a harness name, configured; ValueError names what is wrong."""
    if name not in ADAPTERS:
        raise ValueError(f"unknown harness {name!r}; known: {', '.join(sorted(ADAPTERS))}")
    if name == "command":
        return CommandAdapter(template or (), flags=flags, session_field=session_field, executable=executable)
    if template is not None or session_field is not None:
        raise ValueError(f"template and session_field are for the command harness, not {name}")
    return ADAPTERS[name](flags=flags, executable=executable)


def adapter_from_env(name: str, environ: Mapping[str, str]) -> Adapter:
    """The adapter for a harness, configured from BOT_<HARNESS>_* variables."""
    prefix = f"BOT_{name.upper()}_"
    flags = shlex.split(environ.get(prefix + "FLAGS", ""))
    executable = environ.get(prefix + "BIN") or None
    if name == "command":
        template = shlex.split(environ.get("BOT_COMMAND_TEMPLATE", ""))
        field = environ.get("BOT_COMMAND_SESSION_FIELD") or None
        return get_adapter(name, flags, template=template, session_field=field, executable=executable)
    return get_adapter(name, flags, executable=executable)
