"""Skills for the bot's harness: the profile's, from the board, and ``--skill``.

A skill is a directory holding ``SKILL.md`` (the Agent Skills layout). The
daemon links each one, by a symlink named after it, into the folder the
harness reads user skills from (the same table as the board's, which names
``<folder>/<name>/SKILL.md`` in the first prompt of a session):

| harness | folder |
| --- | --- |
| claude | ``~/.claude/skills`` |
| codex, command | ``~/.agents/skills`` |
| opencode | ``~/.config/opencode/skills`` |
| copilot | ``~/.copilot/skills`` |
| gemini | ``~/.gemini/skills`` |

- The profile's skills are fetched from the board at every start
  (``GET /api/skills/{name}``) and written to ``board-skills/<name>/SKILL.md``
  in the bot's state directory, so a new version reaches the bot when it
  restarts.
- ``--skill SOURCE`` is a directory, or a git URL cloned once into the state
  directory's ``skills/``; these are named in the first prompt by the daemon.

A link the daemon made before is replaced; a real directory of the same name
is the user's and is never touched (the daemon refuses to start instead).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..client import BoardAPIError, BoardClient
from .config import ConfigError
from .logs import EventLog
from .pool import clone, git_url
from .state import write_atomic

SKILL_FILE = "SKILL.md"
NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
# Relative to the home directory; kept equal to the board's registry table.
SKILL_DIRS = {
    "claude": ".claude/skills",
    "codex": ".agents/skills",
    "opencode": ".config/opencode/skills",
    "copilot": ".copilot/skills",
    "gemini": ".gemini/skills",
    "command": ".agents/skills",
}
DEFAULT_SKILL_DIR = ".agents/skills"


@dataclass(frozen=True)
class Skill:
    name: str
    path: Path  # where SKILL.md is, as the harness sees it (the link)


def skills_dir(harness: str, home: Path) -> Path:
    """The harness's user-level skills folder."""
    return home / SKILL_DIRS.get(harness, DEFAULT_SKILL_DIR)


def skill_name(directory: Path) -> str:
    """The ``name:`` of SKILL.md's front matter, else the directory's name."""
    text = (directory / SKILL_FILE).read_text(errors="replace")
    if text.startswith("---"):
        for line in text.splitlines()[1:]:
            if line.strip() == "---":
                break
            key, _, value = line.partition(":")
            if key.strip() == "name" and value.strip():
                return value.strip().strip("'\"")
    return directory.name


def link(source: Path, folder: Path, name: str | None = None) -> Skill:
    """Symlink folder/<name> to source; refuse to replace anything but a symlink."""
    if not (source / SKILL_FILE).is_file():
        raise ConfigError(f"--skill {source}: no {SKILL_FILE} there")
    name = name or skill_name(source)
    if not NAME.fullmatch(name) or name in (".", ".."):
        raise ConfigError(f"--skill {source}: skill name {name!r} must be 1-64 of [A-Za-z0-9._-]")
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    if target.exists() and not target.is_symlink():
        if target.resolve() == source.resolve():
            return Skill(name, target / SKILL_FILE)
        raise ConfigError(f"--skill {source}: {target} exists and is not a link; move it away first")
    tmp = folder / f".{name}.link.{os.getpid()}"
    if tmp.is_symlink():
        tmp.unlink()
    os.symlink(source.resolve(), tmp, target_is_directory=True)
    os.replace(tmp, target)
    return Skill(name, target / SKILL_FILE)


async def install(
    sources: Sequence[str],
    *,
    harness: str,
    state_dir: Path,
    home: Path,
    environ: Mapping[str, str],
    clone_timeout: float = 300.0,
) -> list[Skill]:
    """Fetch (git URLs) and link every --skill SOURCE; ConfigError says what is wrong."""
    folder = skills_dir(harness, home)
    linked = []
    for source in sources:
        url = git_url(source)
        if url is not None and url == source:
            base = url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git")
            if not NAME.fullmatch(base):
                raise ConfigError(f"--skill {source}: cannot name a directory after {base!r}")
            local = state_dir / "skills" / base
            if not (local / SKILL_FILE).exists():
                local.parent.mkdir(parents=True, exist_ok=True)
                why = await clone(url, local, timeout=clone_timeout, env=environ)
                if why is not None:
                    raise ConfigError(f"--skill {source}: {why}")
        else:
            local = Path(source).expanduser()
        linked.append(link(local, folder))
    return linked


async def install_from_board(
    client: BoardClient,
    names: Sequence[str],
    *,
    harness: str,
    state_dir: Path,
    home: Path,
    log: EventLog,
) -> list[Skill]:
    """Fetch the profile's skills and link them; a skill the board will not give is logged."""
    folder = skills_dir(harness, home)
    linked = []
    for name in names:
        if not NAME.fullmatch(name) or name in (".", ".."):
            log.event("skill_skipped", skill=name, reason="not a directory name")
            continue
        try:
            skill = await client.skill(name)
        except BoardAPIError as exc:
            if exc.code == "UNAVAILABLE":
                raise
            log.event("skill_skipped", skill=name, reason=f"{exc.code}: {exc.message}")
            continue
        local = state_dir / "board-skills" / name
        write_atomic(local / SKILL_FILE, str(skill.get("text", "")), mode=0o644)
        linked.append(link(local, folder, name))
        log.event("skill_linked", skill=name, version=skill.get("version"), path=str(folder / name))
    return linked


def prompt_note(skills: Sequence[Skill]) -> str:
    """The line that tells a new session which skills it has here."""
    listed = "; ".join(f"{s.name} ({s.path})" for s in skills)
    return f"Skills installed for you on this machine (read a SKILL.md when the work calls for it): {listed}."
