"""``board routines import [DIR]``: each ``<name>/routine.toml`` plus ``prompt.md`` as a proposal.

The board compares a proposal with the routine's latest version, so importing
the same files again proposes nothing, and changed files propose one new
``pending`` version. Every definition is checked by the board (``dry_run``)
before any is proposed, so a wrong bot imports nothing. Nothing imported runs
until a human approves it.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from board.client import BoardAPIError, BoardClient

#: The routines shipped in the package, what ``board routines import`` proposes without a folder:
#: an installed board has no checkout's ``docs/`` to name.
SHIPPED = Path(__file__).with_name("shipped")

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


@dataclass(frozen=True)
class Bots:
    """``--bot`` values: ``HANDLE`` for every definition naming none, ``ROUTINE=HANDLE`` for one."""

    default: str | None
    named: dict[str, str]

    @classmethod
    def parse(cls, values: tuple[str, ...] | list[str]) -> Bots:
        default: str | None = None
        named: dict[str, str] = {}
        for value in values:
            routine, _, handle = value.rpartition("=")
            if not handle or (routine and routine in named) or (not routine and default is not None):
                raise ValueError(f"--bot {value}: give HANDLE once and ROUTINE=HANDLE once per routine.")
            if routine:
                named[routine] = handle
            else:
                default = handle
        return cls(default, named)


def read(folder: Path, defaults: dict[str, str] | None = None) -> Definition:
    """One routine's files, or ValueError saying which file to fix.

    ``defaults`` fill what the file leaves out: a shipped definition names no
    workspace or bot, since those are the importing board's own. The bot is
    checked by :func:`definitions`, once ``ROUTINE=HANDLE`` is applied.
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
    name = str(data.pop("name", folder.name))
    workspace = data.pop("workspace", None)
    return Definition(name, workspace, {**data, "prompt": prompt})


def definitions(
    root: Path, workspace: str | None = None, bots: Bots | None = None, only: tuple[str, ...] = ()
) -> list[Definition]:
    """Every definition under ``root`` (of the routines in ``only``, when given), or ValueError
    naming each one to fix.

    ``ROUTINE=HANDLE`` wins over the file's bot (the importer named it for that
    routine); a plain ``HANDLE`` and ``workspace`` fill only what the file leaves out.
    ``only`` lets a board with no admin bot yet take the reconciler without the daily care.
    """
    bots = bots or Bots(None, {})
    folders = sorted(p for p in root.iterdir() if (p / "routine.toml").is_file())
    if not folders:
        raise ValueError(f"{root} holds no <name>/routine.toml.")
    missing = sorted(set(only) - {p.name for p in folders})
    if missing:
        names = ", ".join(p.name for p in folders)
        raise ValueError(
            "\n".join(f"--only {m}: {root} holds no routine {m}; it holds {names}." for m in missing)
        )
    skipped = {p.name for p in folders if only and p.name not in only}  # its --bot is no mistake
    folders = [p for p in folders if p.name not in skipped]
    base = {k: v for k, v in (("workspace", workspace), ("bot", bots.default)) if v is not None}
    found: list[Definition] = []
    problems: list[str] = []
    for folder in folders:
        try:
            read_one = read(folder, base)
        except ValueError as exc:
            problems.append(str(exc))
            continue
        if read_one.name in bots.named:
            read_one = Definition(
                read_one.name, read_one.workspace, {**read_one.fields, "bot": bots.named[read_one.name]}
            )
        if "bot" not in read_one.fields:
            problems.append(
                f'{folder / "routine.toml"} names no bot; add bot = "<handle>" '
                f"or import with --bot {read_one.name}=<handle>."
            )
        found.append(read_one)
    held = sorted({d.name for d in found} | skipped)
    for routine in sorted(set(bots.named) - set(held)):
        problems.append(
            f"--bot {routine}=...: {root} holds no routine {routine}; it holds {', '.join(held)}."
        )
    if problems:
        raise ValueError("\n".join(problems))
    return found


async def propose(board: BoardClient, definition: Definition, *, dry_run: bool = False) -> dict[str, Any]:
    """Propose a routine, or a new version of an existing one; the board's answer.

    With ``dry_run`` the board checks the proposal (workspace, bot, schedule) and writes nothing.
    """
    fields = {**definition.fields, **({"dry_run": True} if dry_run else {})}
    try:
        return await board.propose_routine(definition.name, workspace=definition.workspace, **fields)
    except BoardAPIError as exc:
        if exc.code != "NAME_CONFLICT":
            raise
    return await board.propose_version(definition.name, **fields)
