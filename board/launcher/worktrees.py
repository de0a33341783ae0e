"""A git worktree and branch per thread, beside the bot's checkout.

``<repo.parent>/<repo.name>.worktrees/<handle>-t<thread>`` on branch
``bot/<handle>/t<thread>``, started from the base branch (or from a branch a
handoff names). Every git call is a bounded subprocess whose ``-C`` is the
repository or a folder inside its ``.worktrees`` folder: the daemon touches no
other checkout. Nothing here force-deletes work: a branch goes with ``git branch
-d`` (which refuses an unmerged one) and a worktree with ``git worktree remove``
(which refuses a dirty one), and only after ``inspect`` found nothing ahead and
nothing uncommitted.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GIT_TIMEOUT = 60.0  # seconds for one git call; a worktree of a large repository checks out in a few
BRANCH = re.compile(r"[A-Za-z0-9._/-]{1,200}")
MAX_COMMITS = 50  # commits listed in a summary (the board keeps at most 50)
MAX_DIFFSTAT = 4000  # characters of diffstat (the board's limit)
NAMED_DIRTY = 5  # uncommitted paths named in state.json (the fleet page warns with them)


class GitError(RuntimeError):
    """A git call failed or timed out; the message is git's own last line."""


def check_branch_name(name: str) -> str:
    if not BRANCH.fullmatch(name) or name.startswith("-") or ".." in name:
        raise ValueError(f"base branch {name!r} must be 1-200 of [A-Za-z0-9._/-], not starting with '-'")
    return name


@dataclass(frozen=True)
class Summary:
    """What a thread's worktree holds beyond its base."""

    branch: str
    base: str
    path: str
    ahead: int
    commits: list[dict[str, str]] = field(default_factory=list)  # newest first
    diffstat: str = ""
    dirty: int = 0  # uncommitted paths (modified, added or untracked)
    dirty_paths: list[str] = field(default_factory=list)  # the first NAMED_DIRTY of them

    @property
    def clean(self) -> bool:
        return self.ahead == 0 and self.dirty == 0

    def record(self, state: str, detail: str = "") -> dict[str, Any]:
        """The body of PUT /api/threads/{id}/worktree."""
        return {
            "state": state,
            "branch": self.branch,
            "base": self.base,
            "path": self.path,
            "ahead": self.ahead,
            "commits": self.commits,
            "diffstat": self.diffstat,
            "detail": detail[:500],
        }


class Repo:
    """One checkout and its folder of worktrees."""

    def __init__(self, path: Path, timeout: float = GIT_TIMEOUT) -> None:
        self.path = path.resolve()
        self.root = self.path.parent / f"{self.path.name}.worktrees"
        self.timeout = timeout

    def git(self, where: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """git -C where args, bounded; where must be the checkout or inside its worktrees folder."""
        where = where.resolve() if where.exists() else where
        if where != self.path and self.root not in where.parents:
            raise GitError(f"refusing to run git in {where}: not {self.path} nor under {self.root}")
        try:
            done = subprocess.run(
                ["git", "-C", str(where), *args],
                capture_output=True,
                text=True,
                timeout=self.timeout,
                stdin=subprocess.DEVNULL,
                env=_git_env(),
            )
        except subprocess.TimeoutExpired:
            raise GitError(f"git {args[0]} in {where} took more than {self.timeout:g} s") from None
        if check and done.returncode != 0:
            said = (done.stderr.strip() or done.stdout.strip()).splitlines()
            raise GitError(f"git {' '.join(args[:2])}: {said[-1] if said else f'exit {done.returncode}'}")
        return done

    # -- the checkout ---------------------------------------------------------------------

    def base(self, wanted: str | None) -> str:
        """The base branch: wanted (it must exist), else the checkout's current branch.

        Raises ValueError with one line naming what is wrong.
        """
        probe = self.git(self.path, "rev-parse", "--show-toplevel", check=False)
        if probe.returncode != 0 or Path(probe.stdout.strip()).resolve() != self.path:
            raise ValueError(f"repo {self.path} is not a git checkout (worktrees need one)")
        if wanted:
            check_branch_name(wanted)
            if not self.has_branch(wanted):
                raise ValueError(f"base branch {wanted!r} does not exist in {self.path}")
            return wanted
        head = self.git(self.path, "symbolic-ref", "--quiet", "--short", "HEAD", check=False)
        if head.returncode != 0:
            raise ValueError(f"repo {self.path} has no current branch (detached HEAD); give --base-branch")
        return head.stdout.strip()

    def has_branch(self, name: str) -> bool:
        done = self.git(self.path, "rev-parse", "--verify", "--quiet", f"refs/heads/{name}", check=False)
        return done.returncode == 0

    def listed(self) -> dict[Path, str]:
        """The checkout's worktrees under its worktrees folder: path -> branch ("" if detached)."""
        out = self.git(self.path, "worktree", "list", "--porcelain").stdout
        found: dict[Path, str] = {}
        path: Path | None = None
        for line in out.splitlines():
            if line.startswith("worktree "):
                path = Path(line[len("worktree ") :])
                if self.root in path.parents:
                    found[path] = ""
                else:
                    path = None
            elif line.startswith("branch refs/heads/") and path is not None:
                found[path] = line[len("branch refs/heads/") :]
        return found

    # -- one thread's worktree -----------------------------------------------------------------

    def path_for(self, handle: str, thread: int) -> Path:
        return self.root / f"{handle}-t{thread}"

    @staticmethod
    def branch_for(handle: str, thread: int) -> str:
        return f"bot/{handle}/t{thread}"

    def spare_path(self, handle: str, suffix: str = "") -> Path:
        """The bot's spare worktree: checked out ahead of time, so a new thread need not wait for it."""
        return self.root / f".{handle}.spare{suffix}"

    def make_spare(self, handle: str, base: str) -> bool:
        """Check out a spare worktree (detached at base) unless one is ready; whether one was made.

        Made under a temporary name and renamed when whole, so a half-made one is never taken.
        """
        spare, making = self.spare_path(handle), self.spare_path(handle, "-new")
        listed = self.listed()
        if spare in listed:
            return False
        if making in listed and listed[making] == "":  # a daemon stopped while making it
            self.git(self.path, "worktree", "remove", "--force", str(making))  # detached, no commits
        self.root.mkdir(exist_ok=True)
        self.git(self.path, "worktree", "add", "--detach", str(making), base)
        self.git(self.path, "worktree", "move", str(making), str(spare))
        return True

    def ensure(self, handle: str, thread: int, start: str) -> tuple[Path, str, bool]:
        """The thread's worktree, made from start or adopted as it is; (path, branch, made).

        A clean spare is renamed into place and switched to the new branch (only the files
        that differ from the spare's commit are written); else the worktree is checked out.
        """
        path, branch = self.path_for(handle, thread), self.branch_for(handle, thread)
        listed = self.listed()
        if path in listed and not path.is_dir():  # its folder was deleted by hand
            self.git(self.path, "worktree", "prune")
            listed = self.listed()
        made = path not in listed
        if made:
            spare = self.spare_path(handle)
            if spare in listed and listed[spare] == "" and self.clean(spare):
                self.git(self.path, "worktree", "move", str(spare), str(path))
                listed[path] = ""
            else:
                self.root.mkdir(exist_ok=True)
                if self.has_branch(branch):  # kept earlier, its worktree removed by hand: go on with it
                    self.git(self.path, "worktree", "add", str(path), branch)
                else:
                    self.git(self.path, "worktree", "add", "-b", branch, str(path), start)
                return path, branch, True
        if listed[path] == "":  # a spare moved here (or a switch cut short): on to the thread's branch
            if self.has_branch(branch):
                self.git(path, "switch", "--quiet", branch)
            else:
                self.git(path, "switch", "--quiet", "-c", branch, start)
        return path, branch, made

    def clean(self, path: Path) -> bool:
        return not self.git(path, "status", "--porcelain").stdout.strip()

    def inspect(self, path: Path, branch: str, base: str) -> Summary:
        """Commits ahead of base, the diffstat of base...branch, and uncommitted paths."""
        ahead = int(self.git(self.path, "rev-list", "--count", f"{base}..{branch}").stdout.strip() or 0)
        commits: list[dict[str, str]] = []
        diffstat = ""
        if ahead:
            log = self.git(
                self.path, "log", f"--max-count={MAX_COMMITS}", "--format=%h%x09%s", f"{base}..{branch}"
            ).stdout
            for line in log.splitlines():
                sha, _, subject = line.partition("\t")
                commits.append({"sha": sha, "subject": subject[:200]})
            diffstat = self.git(self.path, "diff", "--stat", f"{base}...{branch}").stdout.rstrip()
            if len(diffstat) > MAX_DIFFSTAT:
                diffstat = diffstat[: MAX_DIFFSTAT - 4].rsplit("\n", 1)[0] + "\n..."
        changed: list[str] = []
        if path.is_dir():
            status = self.git(path, "status", "--porcelain", "--untracked-files=normal").stdout
            changed = [line[3:] for line in status.splitlines() if line.strip()]  # "XY path"
        return Summary(branch, base, str(path), ahead, commits, diffstat, len(changed), changed[:NAMED_DIRTY])

    def close(self, path: Path, branch: str, base: str) -> Summary:
        """Remove a clean worktree and its branch; leave one with work in it. Its summary."""
        summary = self.inspect(path, branch, base)
        if not summary.clean:
            return summary
        if path in self.listed():
            self.git(self.path, "worktree", "remove", str(path))
        self.git(self.path, "branch", "-d", branch)
        return summary


def _git_env() -> dict[str, str]:
    """The daemon's environment, with git kept from asking anything on a terminal."""
    return {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}
