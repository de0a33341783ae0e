"""The loop's side of worktrees per thread (``bot run --worktrees``).

A thread's lane (key ``t<thread>``) gets its worktree before its first turn,
waiting while ``max_worktrees`` are live (all checkouts together); in pool mode
each project channel's checkout has its worktrees beside it, registered when a
thread there first needs one; after each turn its record on the board
says what the branch holds; when the thread's claim ends the worktree is removed
if it holds nothing, or kept and described in one reply in the thread. The
board's record route may be missing (an older board): the loop then logs
``worktree_record_failed`` once per thread and goes on.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ..client import BoardAPIError, BoardClient
from ..wire import CLAIM_ENDS
from .logs import EventLog
from .state import BotState
from .worktrees import GitError, Repo, Summary

T = TypeVar("T")

OWN_FOLDER = re.compile(r"(?P<handle>.+)-t(?P<thread>[0-9]+)")


def lane_key(thread: int) -> str:
    return f"t{thread}"


def thread_of(message: Mapping[str, Any]) -> int:
    return int(message.get("thread_id") or message["id"])


def kept_text(summary: Summary) -> str:
    """The one reply a kept worktree posts in its thread (mentions defused by the caller)."""
    lines = [f"I kept my worktree for this thread: branch `{summary.branch}` in `{summary.path}`."]
    if summary.ahead:
        plural = "" if summary.ahead == 1 else "s"
        lines.append(f"{summary.ahead} commit{plural} ahead of `{summary.base}`:")
        lines += [f"- {c['sha']} {c['subject']}" for c in summary.commits]
        lines.append("```\n" + summary.diffstat.replace("```", "'''") + "\n```")
    if summary.dirty:
        lines.append(f"{summary.dirty} uncommitted path{'' if summary.dirty == 1 else 's'} in the worktree.")
    return "\n".join(lines)


class Caller(Protocol):
    async def __call__(self, what: str, fn: Callable[[], Awaitable[T]]) -> T: ...


class ThreadTrees:
    """The bot's worktrees: made, adopted, counted, recorded and closed."""

    def __init__(
        self,
        repo: Repo | None,
        *,
        handle: str,
        base: str,
        most: int,
        client: BoardClient,
        call: Caller,
        log: EventLog,
        state: Callable[[], BotState],
        save: Callable[[], None],
    ) -> None:
        self.repo = repo  # the bot's one checkout; None in pool mode (a checkout per channel)
        self.handle = handle
        self.base = base  # the base branch asked for; in pool mode "" is each checkout's current branch
        self.most = most
        self.checkouts: dict[Path, tuple[Repo, str]] = {}  # worktrees folder -> (checkout, its base)
        if repo is not None:
            self.checkouts[repo.root] = (repo, base)
        self.client = client
        self.call = call
        self.log = log
        self._state = state
        self.save = save
        self.freed = asyncio.Condition()
        self.unrecorded: set[int] = set()  # threads whose record the board refused (logged once)
        self.sparing: dict[Path, asyncio.Task[None]] = {}  # by worktrees folder
        self.making = asyncio.Lock()  # one thread's worktree at a time: two must not take one spare

    @property
    def entries(self) -> dict[str, dict[str, Any]]:
        return self._state().worktrees

    def live(self) -> int:
        return sum(1 for e in self.entries.values() if e.get("state") == "live")

    def has(self, thread: int) -> bool:
        return str(thread) in self.entries

    async def git(self, fn: Callable[..., T], *args: Any) -> T:
        """A git step off the event loop (each call inside is bounded by its timeout)."""
        return await asyncio.to_thread(fn, *args)

    def checkout_of(self, entry: Mapping[str, Any]) -> Repo | None:
        """The checkout whose worktrees folder holds this entry's folder."""
        found = self.checkouts.get(Path(str(entry.get("path"))).parent)
        return found[0] if found else None

    async def register(self, path: Path) -> Repo:
        """Pool mode: a project channel's checkout, its base checked, its worktrees adopted."""
        repo = Repo(path)
        if repo.root not in self.checkouts:
            try:
                base = await self.git(repo.base, self.base or None)
            except ValueError as exc:
                raise GitError(str(exc)) from None
            self.checkouts[repo.root] = (repo, base)
            await self.adopt_in(repo, base)
            self.save()
        return repo

    # -- start ----------------------------------------------------------------------------

    async def adopt(self) -> list[int]:
        """After a restart: forget entries whose folder is gone, adopt this bot's worktrees
        git lists that state.json lacks; returns the live threads to check."""
        await self.forget_gone()
        for repo, base in list(self.checkouts.values()):
            await self.adopt_in(repo, base)
        self.save()
        return [
            int(k)
            for k, e in self.entries.items()
            if e.get("state") == "live" and self.checkout_of(e) is not None
        ]

    async def adopt_in(self, repo: Repo, base: str) -> None:
        for path, branch in (await self.git(repo.listed)).items():
            match = OWN_FOLDER.fullmatch(path.name)
            if match is None or match["handle"] != self.handle or self.has(int(match["thread"])):
                continue
            thread = int(match["thread"])
            self.entries[str(thread)] = self.entry(path, branch or repo.branch_for(self.handle, thread), base)
            self.log.event("worktree_adopted", thread=thread, path=str(path), branch=branch)
        self.prepare_spare(repo, base)

    def prepare_spare(self, repo: Repo, base: str) -> None:
        """Check out the next thread's worktree now, in the background, unless that is under way."""
        task = self.sparing.get(repo.root)
        if task is None or task.done():
            self.sparing[repo.root] = asyncio.ensure_future(self._make_spare(repo, base))

    async def _make_spare(self, repo: Repo, base: str) -> None:
        started = time.monotonic()
        try:
            made = await self.git(repo.make_spare, self.handle, base)
        except GitError as exc:
            self.log.event("worktree_spare_failed", error=str(exc))
            return
        if made:
            self.log.event("worktree_spare_ready", seconds=round(time.monotonic() - started, 3))

    async def forget_gone(self) -> None:
        """Forget worktrees whose folder is gone (removed by hand, or by the fleet page); of a kept
        one, tell the board first, so its thread no longer reads kept (a record already removed
        stays): a daemon stopped while the board is away still has the entry, and tells it next time."""
        for key, entry in list(self.entries.items()):
            if entry.get("branch") and not Path(str(entry.get("path"))).is_dir():
                if entry.get("state") == "kept":
                    await self.gone(int(key))
                del self.entries[key]
                self.log.event("worktree_forgotten", thread=int(key), path=entry.get("path"))

    async def gone(self, thread: int) -> None:
        try:
            await self.call("worktree_gone", lambda: self.client.worktree_gone(self.handle, thread))
        except BoardAPIError as exc:
            self.log.event("worktree_gone_failed", thread=thread, code=exc.code, error=exc.message)

    def entry(self, path: Path, branch: str, base: str) -> dict[str, Any]:
        return {
            "path": str(path),
            "branch": branch,
            "base": base,
            "state": "live",
            "created_at": time.time(),
            "session": None,
            "held": False,
        }

    # -- before a turn ---------------------------------------------------------------------------

    async def acquire(self, thread: int, repo: Repo | None = None) -> Path:
        """The thread's worktree folder: its own (live or kept), else a new one of repo (the bot's
        checkout unless given) once one is free."""
        key = str(thread)
        entry = self.entries.get(key)
        if entry is not None and Path(str(entry["path"])).is_dir():
            if entry.get("state") != "live":
                await self.wait_for_room(thread, str(entry.get("base") or ""))
                entry["state"] = "live"
                self.save()
            return Path(str(entry["path"]))
        self.entries.pop(key, None)
        repo = repo or self.repo
        if repo is None or repo.root not in self.checkouts:
            raise GitError(f"no checkout for thread {thread}'s worktree")
        base = self.checkouts[repo.root][1]
        await self.wait_for_room(thread, base)
        # Reserved before the first await, so lanes starting together do not overshoot the limit.
        self.entries[key] = self.entry(repo.path_for(self.handle, thread), "", base)
        try:
            start = await self.start_point(thread, repo, base)
            sparing = self.sparing.get(repo.root)
            if sparing is not None and not sparing.done():
                # Half checked out already: sooner done than a second checkout begun beside it.
                await asyncio.shield(sparing)
            async with self.making:
                path, branch, made = await self.git(repo.ensure, self.handle, thread, start)
        except (GitError, OSError) as exc:
            del self.entries[key]
            await self.notify()
            raise GitError(str(exc)) from exc
        self.entries[key].update(path=str(path), branch=branch, start=start)
        self.save()
        self.prepare_spare(repo, base)
        self.log.event(
            "worktree_made" if made else "worktree_adopted", thread=thread, path=str(path), start=start
        )
        return path

    async def wait_for_room(self, thread: int, base: str) -> None:
        """Until fewer than max_worktrees are live; recorded as ``waiting`` on the board meanwhile."""
        if self.live() < self.most:
            return
        detail = f"all {self.most} of @{self.handle}'s worktrees are in use"
        self.log.event("worktree_waiting", thread=thread, live=self.live())
        await self.record(
            thread, {"state": "waiting", "branch": "", "base": base, "path": "", "detail": detail}
        )
        async with self.freed:
            await self.freed.wait_for(lambda: self.live() < self.most)

    async def failed(self, thread: int, error: str) -> None:
        """Record ``waiting`` with git's error: the board shows the thread's messages held, and
        why, rather than queued with no word while the daemon tries again (a checkout gone)."""
        detail = f"no worktree: {error}"[:500]
        await self.record(
            thread, {"state": "waiting", "branch": "", "base": "", "path": "", "detail": detail}
        )

    async def notify(self) -> None:
        async with self.freed:
            self.freed.notify_all()

    async def start_point(self, thread: int, repo: Repo, base: str) -> str:
        """Base, or the branch another bot's record on the thread names (a handoff), if it is here."""
        try:
            info = await self.call("thread", lambda: self.client.thread(thread, limit=1))
        except BoardAPIError:
            return base
        for record in info.get("worktrees") or []:  # newest first
            if record.get("bot") == self.handle or record.get("state") not in ("kept", "live"):
                continue
            branch = str(record.get("branch") or "")
            here: bool = bool(branch) and await self.git(repo.has_branch, branch)
            if here:
                return branch
            self.log.event("handoff_branch_missing", thread=thread, branch=branch, start=base)
            break
        return base

    # -- after a turn -------------------------------------------------------------------------------

    async def after_turn(self, thread: int, session: str | None) -> bool:
        """Record what the worktree holds now; whether the thread's claim has ended."""
        entry = self.entries.get(str(thread))
        if entry is None:
            return False
        entry["session"] = session
        await self.forget_gone()
        summary = await self.summary(entry)
        self.save()
        if summary is not None:
            await self.record(thread, summary.record("live"))
        return await self.claim_ended(thread, entry)

    async def summary(self, entry: Mapping[str, Any]) -> Summary | None:
        repo = self.checkout_of(entry)
        if repo is None:
            return None  # a pool checkout not registered again yet since a restart
        try:
            return await self.git(repo.inspect, Path(str(entry["path"])), str(entry["branch"]), entry["base"])
        except GitError as exc:
            self.log.event("worktree_git_failed", path=entry.get("path"), error=str(exc))
            return None

    async def claim_ended(self, thread: int, entry: dict[str, Any]) -> bool:
        """Done, or held by the bot once and now not: the thread needs its worktree no more."""
        try:
            info = await self.call("thread", lambda: self.client.thread(thread, limit=1))
        except BoardAPIError as exc:
            self.log.event("thread_unread", thread=thread, code=exc.code, error=exc.message)
            return False
        claim = info.get("claim") or {}
        mine = claim.get("state") == "claimed" and claim.get("holder") == self.handle
        if mine and not entry.get("held"):
            entry["held"] = True
            self.save()
        return claim.get("state") == "done" or (bool(entry.get("held")) and not mine)

    def ends_claim(self, message: Mapping[str, Any]) -> int | None:
        """The thread whose claim a claim event ends (done, released, expired, handed off away)."""
        meta = message.get("meta")
        if message.get("kind") != "event" or not isinstance(meta, dict):
            return None
        if meta.get("claim") not in CLAIM_ENDS:
            return None
        if message.get("for_me") and message.get("reason") == "handoff":
            return None  # handed to this bot: the thread is its to work on
        return int(meta.get("thread_id") or thread_of(message))

    # -- the end -----------------------------------------------------------------------------------

    async def close(self, thread: int, post: Callable[[str, int, str], Awaitable[None]]) -> None:
        """Remove a worktree with nothing in it (and its branch); keep one with work and say so."""
        entry = self.entries.get(str(thread))
        if entry is None or entry.get("state") != "live":
            return
        path, branch = Path(str(entry["path"])), str(entry["branch"])
        repo = self.checkout_of(entry)
        summary: Summary | None
        try:
            if repo is None:
                raise GitError(f"{path} is in none of the bot's checkouts' worktrees folders")
            summary = await self.git(repo.close, path, branch, str(entry["base"]))
        except GitError as exc:
            self.log.event("worktree_close_failed", thread=thread, path=str(path), error=str(exc))
            summary = await self.summary(entry)
        if summary is None or (summary.clean and path.is_dir()):
            return  # not closed, not described: it stays live and is tried again at the next end
        if summary.clean:
            del self.entries[str(thread)]
            self.save()
            self.log.event("worktree_removed", thread=thread, path=str(path), branch=branch)
            await self.record(thread, summary.record("removed"))
        else:
            # What the keeper reports, so the fleet page warns before a Remove its keeper would refuse.
            entry.update(state="kept", uncommitted=summary.dirty, uncommitted_paths=summary.dirty_paths)
            self.save()
            self.log.event(
                "worktree_kept",
                thread=thread,
                path=str(path),
                branch=branch,
                ahead=summary.ahead,
                dirty=summary.dirty,
            )
            await self.record(thread, summary.record("kept"))
            head = summary.commits[0]["sha"] if summary.commits else f"dirty{summary.dirty}"
            await post(kept_text(summary), thread, f"kept-{thread}-{head}")
        await self.notify()

    async def record(self, thread: int, fields: dict[str, Any]) -> None:
        """PUT the thread's worktree record; a board without the route is logged once and let be."""
        self.log.event(
            "worktree_record",
            thread=thread,
            **{k: fields[k] for k in ("state", "branch", "ahead") if k in fields},
        )
        try:
            await self.call("set_worktree", lambda: self.client.set_worktree(thread, **fields))
        except BoardAPIError as exc:
            if thread not in self.unrecorded:
                self.unrecorded.add(thread)
                self.log.event("worktree_record_failed", thread=thread, code=exc.code, error=exc.message)
