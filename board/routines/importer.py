"""``board routines import DIR``: each ``<name>/routine.toml`` plus ``prompt.md`` as a proposal.

The board compares a proposal with the routine's latest version, so importing
the same files again proposes nothing, and changed files propose one new
``pending`` version. Nothing imported runs until a human approves it.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..client import BoardAPIError, BoardClient

#: The fields routine.toml may hold: the API's names (docs/routines.md).
FIELDS = {
    "workspace",
    "schedule",
    "timezone",
    "bot",
    "max_run_seconds",
    "grace_seconds",
    "quiet_hours",
    "why",
}


@dataclass(frozen=True)
class Definition:
    name: str
    workspace: str | None
    fields: dict[str, Any]  # the version's fields, the prompt among them


def read(folder: Path, defaults: dict[str, str] | None = None) -> Definition:
    """One routine's files, or ValueError saying which file to fix.

    ``defaults`` fill what the file leaves out: a shipped definition names no
    workspace or bot, since those are the importing board's own.
    """
    toml_path = folder / "routine.toml"
    try:
        data = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{toml_path}: {exc}") from None
    unknown = sorted(set(data) - FIELDS - {"name"})
    if unknown:
        raise ValueError(f"{toml_path}: unknown field {unknown[0]}; known: {', '.join(sorted(FIELDS))}.")
    prompt_path = folder / "prompt.md"
    try:
        prompt = prompt_path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{prompt_path}: {exc}") from None
    data = {**(defaults or {}), **data}
    if "bot" not in data:
        raise ValueError(f'{toml_path} names no bot; add bot = "<handle>" or import with --bot.')
    name = str(data.pop("name", folder.name))
    workspace = data.pop("workspace", None)
    return Definition(name, workspace, {**data, "prompt": prompt})


def definitions(root: Path, defaults: dict[str, str] | None = None) -> list[Definition]:
    folders = sorted(p for p in root.iterdir() if (p / "routine.toml").is_file())
    if not folders:
        raise ValueError(f"{root} holds no <name>/routine.toml.")
    return [read(folder, defaults) for folder in folders]


async def propose(board: BoardClient, definition: Definition) -> dict[str, Any]:
    """Propose a routine, or a new version of an existing one; the board's answer."""
    try:
        return await board.propose_routine(
            definition.name, workspace=definition.workspace, **definition.fields
        )
    except BoardAPIError as exc:
        if exc.code != "NAME_CONFLICT":
            raise
    return await board.propose_version(definition.name, **definition.fields)
