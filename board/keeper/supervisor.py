"""Reconcile what runs with what should: start, stop, restart with backoff, stop a crash loop.

The board's answer to each report says which bots should run here (the desired
state) and sends one-shot orders. The supervisor keeps one :class:`Slot` per
bot and, every ``Timing.check`` seconds, looks at each daemon:

- one that should run and does not is started (after its backoff, if it crashed);
- one that runs and should not is stopped (SIGTERM to its group, SIGKILL after
  the grace period);
- one that exited on its own crashed: it is restarted after 1 s, 2 s, 4 s ...
  up to 5 min, and after 5 crashes in 10 minutes it is left ``crashed`` until a
  human starts or restarts it.

Every change of state is appended to the journal, which the next report carries
to the board (and which survives the board being down, and the keeper's own
restart, in ``state.json``). Orders are taken once, by id, before they run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..launcher.config import state_dir
from ..launcher.daemon import (
    EXIT_AUTH,
    EXIT_CONFIG,
    KEEPER_FILE,
    PID_FILE,
    AlreadyRunning,
    PidLock,
    running_pid,
)
from ..launcher.logs import EventLog
from ..launcher.loop import backoff
from ..launcher.state import write_atomic
from . import processes, worktrees
from .config import STATE_FILE, Timing

MAX_JOURNAL = 2000
MAX_TAKEN = 500
OUTPUT_FILE = "daemon.out"  # the daemon's own stdout and stderr (what it says before its log is open)

TokenSource = Callable[[str], Awaitable[str | None]]


def last_output(path: Path, limit: int = 1000) -> str:
    """The whole lines in the last ``limit`` bytes of a daemon's output: why it exited, shown on
    its fleet page. The file holds its earlier runs too, so the cut falls inside one of their
    lines; that part line is dropped, unless it is all there is."""
    try:
        with path.open("rb") as f:
            start = max(0, path.stat().st_size - limit)
            f.seek(start)
            data = f.read(limit)
    except OSError:
        return ""
    text = data.decode(errors="replace")
    if start and "\n" in text.rstrip("\n"):
        text = text.split("\n", 1)[1]
    return text.strip()


def iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


@dataclass
class Slot:
    """One bot this keeper runs, or ran: what should be, and what is."""

    handle: str
    profile: str = ""
    desired: str = "stopped"  # running | stopped | gone (no longer assigned here: stopped, then dropped)
    state: str = "stopped"
    daemon: processes.Daemon | None = None
    restarts: int = 0  # daemons it started again after one exited unasked (a human's start is none)
    crashes: list[float] = field(default_factory=list)  # when, within the crash window
    in_a_row: int = 0  # crashes since the last stable run: drives the backoff
    next_start: float = 0.0
    last_exit_code: int | None = None
    stopping: bool = False
    error: str = ""
    code: str = ""  # processes.installed_code() when its daemon started; "" when not known

    def to_json(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "desired": self.desired,
            "state": self.state,
            "pid": self.daemon.pid if self.daemon else None,
            "started": self.daemon.started if self.daemon else None,
            "restarts": self.restarts,
            "crashes": self.crashes,
            "in_a_row": self.in_a_row,
            "last_exit_code": self.last_exit_code,
            "error": self.error,
            "code": self.code,
        }


class Supervisor:
    """The bots of this machine and the journal of what happened to them."""

    def __init__(
        self,
        directory: Path,
        board: str,
        timing: Timing,
        environ: Mapping[str, str],
        log: EventLog,
        token: TokenSource,
    ) -> None:
        self.directory = directory
        self.board = board
        self.timing = timing
        self.environ = dict(environ)
        self.log = log
        self.token = token
        self.slots: dict[str, Slot] = {}
        self.journal: list[dict[str, Any]] = []
        self.seq = 0
        self.acks: list[dict[str, Any]] = []
        self.taken: list[int] = []
        self.changed = asyncio.Event()  # something the board should hear about soon
        self._stops: dict[str, asyncio.Task[None]] = {}
        self._removals: set[asyncio.Task[None]] = set()
        self._claims: dict[str, PidLock] = {}  # the bots this keeper keeps running: see _claim
        self.sizes = worktrees.Sizes()  # each bot worktree's size on disk, measured at most once a minute
        self.code = processes.installed_code()

    # -- persistence -----------------------------------------------------------------

    @property
    def state_path(self) -> Path:
        return self.directory / STATE_FILE

    def save(self) -> None:
        data = {
            "seq": self.seq,
            "journal": self.journal,
            "acks": self.acks,
            "taken": self.taken,
            "bots": {h: s.to_json() for h, s in self.slots.items()},
        }
        write_atomic(self.state_path, json.dumps(data, indent=1, sort_keys=True) + "\n")

    def load(self) -> None:
        """What the last keeper left; its daemons are adopted if they still run, never started twice."""
        try:
            data = json.loads(self.state_path.read_text())
        except FileNotFoundError:
            return
        self.seq = int(data.get("seq", 0))
        self.journal = list(data.get("journal", []))
        self.acks = list(data.get("acks", []))
        self.taken = [int(i) for i in data.get("taken", [])]
        for handle, saved in data.get("bots", {}).items():
            slot = Slot(
                handle,
                profile=saved.get("profile", ""),
                desired=saved.get("desired", "stopped"),
                state=saved.get("state", "stopped"),
                restarts=int(saved.get("restarts", 0)),
                crashes=[float(t) for t in saved.get("crashes", [])],
                in_a_row=int(saved.get("in_a_row", 0)),
                last_exit_code=saved.get("last_exit_code"),
                error=saved.get("error", ""),
                code=saved.get("code", ""),
            )
            self.slots[handle] = slot
            daemon = processes.find(self.bot_dir(handle), saved.get("pid"), saved.get("started"))
            if daemon is not None:
                self._take_over(slot, daemon, "adopted by a new keeper")
            elif slot.state in ("running", "starting"):
                self.note(slot, "stopped", detail="not running when the keeper started")

    def _take_over(self, slot: Slot, daemon: processes.Daemon, how: str) -> None:
        """Go on with a daemon found running for the slot's bot when it runs the slot's profile.
        One started by hand, or with another profile, is stopped, and the next check starts
        the daemon the board assigned: what the fleet page shows must be what runs."""
        slot.daemon = daemon
        profile = processes.profile_of(daemon)
        if profile in (None, slot.profile):
            self.note(slot, "running", detail=f"pid {daemon.pid} {how}")
            return
        runs = f"profile {profile}" if profile else "no profile"
        why = f"pid {daemon.pid} runs with {runs}, not {slot.profile}: stopping it to run {slot.profile}"
        self.note(slot, "starting", detail=why)
        self._stop(slot)

    # -- the journal and orders ------------------------------------------------------

    def bot_dir(self, handle: str) -> Path:
        return state_dir(self.environ, handle)

    def note(self, slot: Slot, state: str, *, exit_code: int | None = None, detail: str = "") -> None:
        """A change of state: kept for the board, logged, and saved."""
        slot.state = state
        self.seq += 1
        self.journal.append(
            {
                "seq": self.seq,
                "at": iso(time.time()),
                "handle": slot.handle,
                "state": state,
                "exit_code": exit_code,
                "detail": detail[:500],
            }
        )
        del self.journal[:-MAX_JOURNAL]
        self.log.event("state", bot=slot.handle, state=state, exit_code=exit_code, detail=detail[:200])
        self.changed.set()
        self.save()

    def reported(self, event_seq: int, acks: int) -> None:
        """The board recorded the journal up to ``event_seq`` and the first ``acks`` acks."""
        self.journal = [e for e in self.journal if e["seq"] > event_seq]
        del self.acks[:acks]
        self.save()

    def apply(self, answer: Mapping[str, Any]) -> None:
        """The board's desired state and orders (each order runs once, whatever the retries)."""
        wanted = {b["handle"]: b for b in answer.get("bots", [])}
        for handle, bot in wanted.items():
            slot = self.slots.setdefault(handle, Slot(handle))
            slot.profile = bot["profile"]
            slot.desired = bot["desired"]
        for handle, slot in self.slots.items():
            if handle not in wanted and slot.desired != "gone":
                slot.desired = "gone"
        for order in answer.get("orders", []):
            if order["id"] in self.taken:
                continue
            self.taken.append(int(order["id"]))
            del self.taken[:-MAX_TAKEN]
            self.save()  # taken before it runs: a keeper dying now does not run it twice
            self.execute(order)
        self.save()

    def execute(self, order: Mapping[str, Any]) -> None:
        slot = self.slots.get(order["handle"])
        kind = order["kind"]
        self.log.event("order", id=order["id"], kind=kind, bot=order["handle"])
        if slot is None:
            self.acknowledge(order, False, "no such bot on this machine")
            return
        if kind == "remove_worktree":
            self._remove_worktree(order)
            return
        if kind in ("start", "restart"):
            slot.crashes, slot.in_a_row, slot.next_start, slot.error = [], 0, 0.0, ""
            if slot.state in ("crashed", "misconfigured"):
                self.note(slot, "stopped", detail=f"{kind} by a human clears the {slot.state} state")
        if slot.stopping:
            self.acknowledge(order, True, "already stopping")
            return
        if kind == "restart" and slot.daemon is not None:
            self._stop(slot, then=lambda: self.acknowledge(order, True, "restarted"))
            return
        if kind == "stop" and slot.daemon is not None:
            self._stop(slot, then=lambda: self.acknowledge(order, True, "stopped"))
            return
        self.acknowledge(
            order, True, {"start": "will run", "restart": "will run", "stop": "not running"}[kind]
        )

    def _remove_worktree(self, order: Mapping[str, Any]) -> None:
        """Remove a kept worktree in the background (git may take a while); ack with what happened."""
        target = order.get("target")
        if not isinstance(target, int) or isinstance(target, bool):
            self.acknowledge(order, False, "the order names no thread")
            return

        async def run() -> None:
            ok, detail = await worktrees.remove(order["handle"], target, self.bot_dir(order["handle"]))
            self.log.event("worktree", bot=order["handle"], thread=target, ok=ok, detail=detail[:200])
            self.acknowledge(order, ok, detail[:500])

        task = asyncio.ensure_future(run())
        self._removals.add(task)
        task.add_done_callback(self._removals.discard)

    def acknowledge(self, order: Mapping[str, Any], ok: bool, detail: str) -> None:
        self.acks.append({"id": int(order["id"]), "ok": ok, "detail": detail})
        self.changed.set()
        self.save()

    # -- reconciling -----------------------------------------------------------------

    async def check(self) -> None:
        """One look at every bot: reap, restart, start, stop."""
        now = time.monotonic()
        for slot in list(self.slots.values()):
            if slot.stopping:
                continue
            if slot.daemon is not None:
                done, code = slot.daemon.exited()
                if done:
                    self._crashed(slot, code, now)
                elif slot.desired != "running":
                    self._stop(slot)
                elif slot.state == "starting" and self._locked_by(slot):
                    self.note(slot, "running", detail=f"pid {slot.daemon.pid}")
                elif slot.code not in ("", self.code) and slot.daemon.harness() is None:
                    self._renew(slot)
                elif time.time() - slot.daemon.started >= self.timing.stable_after:
                    slot.in_a_row = 0  # it ran long enough: the next crash starts the backoff over
                continue
            if slot.desired == "gone" and slot.state in ("stopped", "crashed", "misconfigured", "backoff"):
                del self.slots[slot.handle]
                with contextlib.suppress(FileNotFoundError):
                    (self.bot_dir(slot.handle) / "token").unlink()  # the board revoked it anyway
                self.note(slot, "unassigned", detail="no longer assigned to this machine")
            elif slot.desired == "stopped" and slot.state == "backoff":
                self.note(slot, "stopped", detail="a human stopped it during its backoff")
            elif (
                slot.desired == "running"
                and slot.state not in ("crashed", "misconfigured")
                and now >= slot.next_start
            ):
                await self._start(slot)
        self._claim()

    def _claim(self) -> None:
        """Hold ``keeper.pid`` in the state directory of each bot this keeper keeps running (the
        board wants it running, and it is not left crashed or misconfigured), and of no other:
        ``bot stop`` reads it and refuses, since this keeper would start the daemon again at its
        next look.

        A lock the keeper holds, rather than a mark on the daemon (a variable in its environment,
        its parent's pid): it covers a daemon adopted from the keeper before, or started by hand,
        the same as one this keeper started, and the kernel lets it go the moment the keeper
        ends, so a keeper that was killed leaves nothing behind that would refuse a stop it
        would not undo.
        """
        for handle, slot in self.slots.items():
            keeps = slot.desired == "running" and slot.state not in ("crashed", "misconfigured")
            if keeps and handle not in self._claims:
                lock = PidLock(self.bot_dir(handle) / KEEPER_FILE)
                with contextlib.suppress(AlreadyRunning, OSError):  # tried again at the next look
                    lock.acquire()
                    self._claims[handle] = lock
            elif not keeps and handle in self._claims:
                self._claims.pop(handle).release()
        for handle in set(self._claims) - set(self.slots):
            self._claims.pop(handle).release()

    def _renew(self, slot: Slot) -> None:
        """Restart, between two turns, a daemon running the code from before an upgrade: the
        keeper adopts its bots when it restarts, and they would run the old code to their end
        (while the files under them are the new)."""
        assert slot.daemon is not None
        why = f"pid {slot.daemon.pid} runs the code installed before this one: restarting it between turns"
        self.note(slot, "starting", detail=why)
        self._stop(slot)

    def _locked_by(self, slot: Slot) -> bool:
        """Whether the daemon holds its bot's pid lock: configured, and reading the board."""
        assert slot.daemon is not None
        return running_pid(self.bot_dir(slot.handle) / PID_FILE) == slot.daemon.pid

    async def _start(self, slot: Slot) -> None:
        bot_dir = self.bot_dir(slot.handle)
        running = processes.find(bot_dir, None, None)
        if running is not None:  # a daemon for this bot already holds its lock: start no twin
            slot.code = ""  # started by hand, with whichever code
            self._take_over(slot, running, "adopted: it was already running")
            return
        token_file = bot_dir / "token"
        if not token_file.exists():
            token = await self.token(slot.handle)
            if token is None:
                slot.next_start = time.monotonic() + self.timing.backoff_min
                return
            bot_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            write_atomic(token_file, token + "\n", mode=0o600)
        slot.daemon = processes.spawn(
            slot.handle,
            slot.profile,
            self.board,
            environ=self.environ,
            cwd=self.directory / "work" / slot.handle,
            output=bot_dir / OUTPUT_FILE,
        )
        slot.code = self.code
        self.note(slot, "starting", detail=f"pid {slot.daemon.pid}")

    def _crashed(self, slot: Slot, code: int | None, now: float) -> None:
        """The daemon exited without being asked to: back off, or stop a crash loop."""
        slot.daemon, slot.last_exit_code = None, code
        if code == EXIT_AUTH:  # the board refused its token: mint a new one at the next start
            with contextlib.suppress(FileNotFoundError):
                (self.bot_dir(slot.handle) / "token").unlink()
        slot.error = last_output(self.bot_dir(slot.handle) / OUTPUT_FILE)
        if slot.desired != "running":
            self.note(slot, "stopped", exit_code=code, detail="exited")
            return
        if code == EXIT_CONFIG:  # starting it again would fail the same way: a human fixes the profile
            self.note(
                slot,
                "misconfigured",
                exit_code=code,
                detail=slot.error.splitlines()[-1:][0][:500] if slot.error else "exited 2",
            )
            return
        slot.crashes = [t for t in slot.crashes if time.time() - t < self.timing.crash_window] + [time.time()]
        slot.in_a_row += 1
        if len(slot.crashes) >= self.timing.crash_limit:
            self.note(
                slot,
                "crashed",
                exit_code=code,
                detail=f"{len(slot.crashes)} crashes within {self.timing.crash_window:g} s; "
                "left stopped until a human starts it",
            )
            return
        delay = backoff(slot.in_a_row, self.timing.backoff_min, self.timing.backoff_max)
        slot.next_start = now + delay
        slot.restarts += 1
        self.note(slot, "backoff", exit_code=code, detail=f"exited; restarting in {delay:g} s")

    def _stop(self, slot: Slot, then: Callable[[], None] | None = None) -> None:
        """Stop the daemon in the background; ``then`` runs once it is gone."""
        daemon = slot.daemon
        assert daemon is not None
        slot.stopping = True

        async def run() -> None:
            try:
                code = await processes.stop(daemon, self.timing.stop_grace)
            finally:
                slot.stopping = False
            slot.daemon, slot.last_exit_code = None, code
            slot.next_start = 0.0
            self.note(slot, "stopped", exit_code=code, detail=f"pid {daemon.pid} stopped")
            if then is not None:
                then()

        self._stops[slot.handle] = asyncio.ensure_future(run())

    async def close(self) -> None:
        """Wait for stops under way; the bots that run keep running (the keeper may be restarting)."""
        if self._stops or self._removals:
            await asyncio.gather(*self._stops.values(), *self._removals, return_exceptions=True)
        for lock in self._claims.values():
            lock.release()
        self._claims.clear()
        self.save()
