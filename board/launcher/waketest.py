"""``bot wake-test HANDLE``: is the bot reachable, and how long does it take to answer?

It posts one probe mentioning the bot (tagged ``wake-test``) and reads the
probe's delivery state for that bot until it is final or the wait runs out,
printing each phase as it is seen: queued, woken (its daemon started a turn),
replied; a turn quicker than a read's interval shows its woken phase at the time
of the bot's ``seen`` receipt. The probe asks for one word and no tools, so it
costs one turn of the bot's harness: its prompt (the bot's turn prompt, plus the
session's context when the session is resumed) in, a word out. The wake's
recorded cost is printed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..client import BoardClient

TAG = "wake-test"
PROBE = (
    "@{handle} wake test from the board: reply with the single word `pong`. Use no tools, do nothing else."
)

#: The exit code of each way a wake test ends.
EXIT = {"replied": 0, "failed": 3, "held": 4, "unreachable": 5, "timeout": 6}
WAKE_RECORD_WAIT = 30.0  # seconds to wait for the turn's wake record after the reply


@dataclass
class Phase:
    state: str
    after_s: float  # since the probe was posted, as this command saw it
    at: str | None  # the board's time of the state
    reason: str | None
    read: bool = True  # seen by a read; else taken from the board's record, to the second


async def wake_test(
    board: BoardClient,
    handle: str,
    *,
    channel: str,
    timeout: float,
    interval: float,
    say: Callable[[str], None],
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Probe ``handle``; print each phase; return the exit code of how it ended (:data:`EXIT`)."""
    bot = await board.agent(handle)  # NOT_FOUND for a bot out of the caller's reach
    if bot["kind"] in ("human", "system"):  # a bot's kind is its harness label
        raise ValueError(f"{handle} is not a bot")
    start = clock()
    probe = await board.post(
        PROBE.format(handle=handle), channel=channel, workspace=bot["workspace"], tags=[TAG]
    )
    say(f"probe {probe['id']} posted in {bot['workspace']}/{channel}, mentioning @{handle}")
    phases: list[Phase] = []
    while True:
        message = await board.message(int(probe["id"]))
        entry = _entry(message, handle)
        if entry is None:
            raise ValueError(f"the probe did not reach {handle}: it is not a bot this channel can mention")
        if not phases or phases[-1].state != entry["state"]:
            seen = Phase(entry["state"], clock() - start, entry.get("at"), entry.get("reason"))
            for phase in (_woken_unseen(phases, seen, message, handle), seen):
                if phase is not None:
                    phases.append(phase)
                    say(_line(phases))
        state = entry["state"]
        if state in ("replied", "failed", "held", "unreachable"):
            break
        if clock() - start >= timeout:
            say(f"no reply within {timeout:g} s (still {state})")
            return EXIT["timeout"]
        await sleep(interval)
    if state in ("replied", "failed"):
        # A reply posted during the turn comes before the wake record, which ends the turn.
        deadline = clock() + min(WAKE_RECORD_WAIT, max(0.0, timeout - (clock() - start)))
        while (wake := await _wake(board, handle, int(probe["id"]))) is None and clock() < deadline:
            await sleep(interval)
        say(_cost(wake))
    return EXIT[state]


def _entry(message: dict[str, Any], handle: str) -> dict[str, Any] | None:
    return next((d for d in message.get("delivery") or [] if d["handle"] == handle), None)


def _woken_unseen(phases: list[Phase], seen: Phase, message: dict[str, Any], handle: str) -> Phase | None:
    """The ``woken`` phase a turn quicker than one read's interval went through unseen: at the
    bot's ``seen`` receipt (which its daemon sends as the turn starts), since the probe's own
    time, both on the board's clock, which keeps whole seconds; within the reads around it."""
    if seen.state not in ("replied", "failed") or any(p.state == "woken" for p in phases):
        return None
    receipt = next((r for r in message.get("receipts") or [] if r["handle"] == handle), None)
    if receipt is None or not receipt.get("seen_at"):
        return None
    after = (
        datetime.fromisoformat(receipt["seen_at"]) - datetime.fromisoformat(message["created_at"])
    ).total_seconds()
    earliest = phases[-1].after_s if phases else 0.0
    return Phase("woken", min(max(after, earliest), seen.after_s), receipt["seen_at"], None, read=False)


def _line(phases: list[Phase]) -> str:
    """The newest phase: when it was seen, and how long the step into it took (between two
    phases a read saw: a phase from the board's record is to the second, and says so)."""
    phase = phases[-1]
    if not phase.read:
        return f"{phase.state:<11} after ~{phase.after_s:.0f} s  (by the bot's seen receipt, to the second)"
    text = f"{phase.state:<11} after {phase.after_s:6.2f} s"
    if len(phases) > 1 and phases[-2].read:
        before = phases[-2]
        text += f"  ({before.state}→{phase.state} {phase.after_s - before.after_s:.2f} s)"
    if phase.reason:
        text += f"  {phase.reason}"
    return text


async def _wake(board: BoardClient, handle: str, probe_id: int) -> dict[str, Any] | None:
    """The wake record of the turn the probe triggered, once the daemon sent it."""
    wakes = (await board.wakes(bot=handle, thread=probe_id, limit=20))["wakes"]
    return next((w for w in wakes if probe_id in w["trigger_ids"]), None)


def _cost(wake: dict[str, Any] | None) -> str:
    """What the probe's turn cost, from its wake record (as far as the harness reported it)."""
    if wake is None:
        return "cost: no wake record names the probe yet"
    cost = "unknown" if wake.get("cost_usd") is None else f"${wake['cost_usd']:.4f}"
    tokens = ", ".join(
        f"{name} {wake[key]}"
        for name, key in (("in", "input_tokens"), ("cached", "cache_read_tokens"), ("out", "output_tokens"))
        if wake.get(key) is not None
    )
    return f"cost: {cost}" + (f" ({tokens} tokens)" if tokens else "") + f", wake {wake['id']}"
