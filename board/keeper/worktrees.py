"""A bot's git worktrees per thread, as its keeper sees them: listed, measured, removed on order.

The bot daemon keeps its worktrees in its ``state.json`` (``worktrees``: by thread,
each with its path, branch and state, ``live`` or ``kept``). The keeper reports
them with their size on disk, measured by a bounded walk at most once a minute
each (and, for a kept one, the uncommitted paths its daemon counted when keeping it),
tells the board of a kept one whose folder is gone (removed by hand), and
carries out a human's ``remove_worktree`` order for one its bot kept.

Removing is ``git -C <repo> worktree remove <path>`` and nothing else (the branch
stays), and only for a path that is all of: listed in the bot's state as ``kept``
for that thread; named ``<handle>-t<thread>`` inside a folder ``<repo>.worktrees``
(the daemon's layout, with no link on the way); one of ``<repo>``'s own worktrees
by ``git worktree list``; and with nothing uncommitted (the branch keeps commits,
not changes never committed, so those are never dropped unasked). Anything else is
refused with why, and nothing is touched.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from ..launcher.state import STATE_FILE

MAX_LISTED = 50  # worktrees per bot in a report
MEASURE_EVERY_S = 60.0
MAX_ENTRIES = 200_000  # files and folders one measurement walks; more: the size is unknown
GIT_TIMEOUT_S = 60.0
SUFFIX = ".worktrees"
MAX_NAMED = 5  # uncommitted paths named per worktree in a report
MAX_PATH = 300  # characters of each
MAX_COUNT = 2**63 - 1  # the board's largest whole number: a count past it refuses the whole report


def listed(bot_dir: Path) -> dict[int, dict[str, Any]]:
    """The worktrees in the bot's state file, by thread; entries not of the daemon's shape are left out."""
    try:
        data = json.loads((bot_dir / STATE_FILE).read_text())
    except (OSError, ValueError):
        return {}
    entries = data.get("worktrees") if isinstance(data, dict) else None
    found: dict[int, dict[str, Any]] = {}
    for key, entry in (entries or {}).items() if isinstance(entries, dict) else ():
        if str(key).isdigit() and isinstance(entry, dict) and isinstance(entry.get("path"), str):
            found[int(key)] = entry
    return found


def disk_bytes(path: Path, limit: int = MAX_ENTRIES) -> int | None:
    """Bytes of the files under ``path`` (links not followed); None past ``limit`` entries or unreadable."""
    total, seen, folders = 0, 0, [path]
    while folders:
        try:
            with os.scandir(folders.pop()) as entries:
                for entry in entries:
                    seen += 1
                    if seen > limit:
                        return None
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(Path(entry.path))
                    elif entry.is_file(follow_symlinks=False):
                        total += entry.stat(follow_symlinks=False).st_size
        except OSError:
            return None
    return total


class Sizes:
    """Each worktree's size, measured again at most every ``MEASURE_EVERY_S`` seconds."""

    def __init__(self, every: float = MEASURE_EVERY_S) -> None:
        self.every = every
        self._known: dict[str, tuple[float, int | None]] = {}

    def of(self, path: Path) -> int | None:
        now = time.monotonic()
        known = self._known.get(str(path))
        if known is None or now - known[0] >= self.every:
            known = (now, disk_bytes(path))
            self._known[str(path)] = known
        return known[1]

    def keep_only(self, paths: set[str]) -> None:
        """Forget the sizes of worktrees no bot lists any more (the cache stays bounded)."""
        self._known = {p: v for p, v in self._known.items() if p in paths}


def report(bot_dir: Path, sizes: Sizes) -> list[dict[str, Any]]:
    """The bot's worktrees for the board: those whose folder is there, at most ``MAX_LISTED``."""
    items = []
    now = time.time()
    for thread, entry in sorted(listed(bot_dir).items())[:MAX_LISTED]:
        path = Path(entry["path"])
        if entry.get("state") not in ("live", "kept") or not path.is_dir():
            continue  # gone: removed by a human, or not yet made
        created = entry.get("created_at")
        age = now - created if isinstance(created, int | float) and not isinstance(created, bool) else 0.0
        items.append(
            {
                "thread": thread,
                "branch": str(entry.get("branch") or "")[:200],
                "path": entry["path"][:1000],
                "state": entry["state"],
                "age_s": round(max(0.0, age), 1),
                "disk_bytes": sizes.of(path),
                **_uncommitted(entry),
            }
        )
    return items


def _uncommitted(entry: dict[str, Any]) -> dict[str, Any]:
    """The uncommitted paths the daemon counted (and named, the first few) when it kept the
    worktree; None when it is not kept or the daemon said nothing of them. A name that is no
    one line of printable text is left out (git quotes such names; the board refuses them)."""
    count, paths = entry.get("uncommitted"), entry.get("uncommitted_paths")
    kept = entry.get("state") == "kept"
    if not kept or not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= MAX_COUNT:
        return {"uncommitted": None, "uncommitted_paths": []}
    given = paths if isinstance(paths, list) else []
    named = [p[:MAX_PATH] for p in given if isinstance(p, str) and p.isprintable()]
    return {"uncommitted": count, "uncommitted_paths": named[:MAX_NAMED]}


def gone(bot_dir: Path) -> dict[int, str]:
    """The bot's kept worktrees whose folder is gone (removed by hand), by thread: their paths."""
    return {
        thread: entry["path"]
        for thread, entry in sorted(listed(bot_dir).items())[:MAX_LISTED]
        if entry.get("state") == "kept" and not Path(entry["path"]).is_dir()
    }


class Refused(Exception):
    """A removal the keeper will not do; the message says why."""


def _checked_path(handle: str, thread: int, bot_dir: Path) -> tuple[Path, Path]:
    """The kept worktree's path and its repo, or Refused: the rules of the module's docstring."""
    entry = listed(bot_dir).get(thread)
    if entry is None:
        raise Refused(f"@{handle} lists no worktree for thread {thread}")
    if entry.get("state") != "kept":
        raise Refused(f"@{handle}'s worktree for thread {thread} is {entry.get('state')!r}, not kept")
    path = Path(entry["path"])
    if not path.is_absolute() or path.resolve() != path:
        raise Refused(f"{str(path)[:300]} is not an absolute path free of links")
    folder = path.parent
    if path.name != f"{handle}-t{thread}" or not folder.name.endswith(SUFFIX) or folder.name == SUFFIX:
        raise Refused(f"{str(path)[:300]} is not inside a <repo>{SUFFIX} folder as {handle}-t{thread}")
    if not path.is_dir():
        raise Refused(f"{str(path)[:300]} is not there")
    return path, folder.with_name(folder.name[: -len(SUFFIX)])


def _git_env() -> dict[str, str]:
    """The keeper's environment without git's own variables, which would point git elsewhere."""
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}


async def _git(repo: Path, *args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        "git",
        "-C",
        str(repo),
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=_git_env(),
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), GIT_TIMEOUT_S)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return -1, f"git {args[0]} took more than {GIT_TIMEOUT_S:g} s"
    return proc.returncode or 0, out.decode(errors="replace").strip()


async def remove(handle: str, thread: int, bot_dir: Path) -> tuple[bool, str]:
    """Carry out a ``remove_worktree`` order: (ok, what happened or why not)."""
    try:
        path, repo = _checked_path(handle, thread, bot_dir)
    except Refused as why:
        return False, str(why)
    code, out = await _git(repo, "worktree", "list", "--porcelain")
    if code != 0:
        return False, f"{str(repo)[:300]} is not a git checkout: {out[:200]}"
    if f"worktree {path}" not in out.splitlines():
        return False, f"{str(path)[:300]} is not a worktree of {str(repo)[:300]}"
    code, out = await _git(path, "status", "--porcelain", "--untracked-files=all")
    if code != 0:
        return False, f"git status failed in {str(path)[:300]}: {out[:200]}"
    if dirty := sum(1 for line in out.splitlines() if line.strip()):
        return False, (
            f"{str(path)[:300]} has {dirty} uncommitted path{'' if dirty == 1 else 's'}: "
            "commit them to its branch or remove the folder by hand"
        )
    code, out = await _git(repo, "worktree", "remove", str(path))
    if code != 0:
        return False, f"git worktree remove failed: {out[:300]}"
    return True, f"removed {str(path)[:300]}; its branch stays"
