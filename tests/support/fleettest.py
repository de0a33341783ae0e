"""Test support for the fleet: enroll a machine's keeper through the API, as `keeper enroll` does."""

from __future__ import annotations

from dataclasses import dataclass

from board.client import BoardClient
from tests.support.boardtest import Board, World


@dataclass
class Keeper:
    """An enrolled machine and a client holding its keeper token."""

    machine: str
    token: str
    client: BoardClient


async def enroll_keeper(board: Board, human: BoardClient, machine: str) -> Keeper:
    code = (await human.enroll_code(machine))["code"]
    enrolled = await board.client().enroll(code, hostname=f"{machine}.local")
    return Keeper(enrolled["machine"], enrolled["token"], board.client(enrolled["token"]))


async def keeper_with_bots(world: World, machine: str, *handles: str, profile: str = "proj-dev") -> Keeper:
    """Enroll ``machine``'s keeper and assign it ``handles`` run by ``profile``: the fleet most tests
    start from, kept in one place so that a change to enrolling or assigning is made once. The
    profile is made (claude, in proj) only if the board has none of that name yet, so a test with
    several machines calls this once a machine, and one that wants other profile fields makes the
    profile itself first."""
    if profile not in {p["name"] for p in (await world.human.profiles())["profiles"]}:
        await world.human.create_profile(profile, "proj", "claude")
    keeper = await enroll_keeper(world.board, world.human, machine)
    for handle in handles:
        await world.human.assign_bot(machine, profile, handle)
    return keeper


#: What a bot's badge says in each state, and its tone (written out here, not read from the board).
BADGES = {
    "running": ("ok", "running"),
    "waking": ("busy", "waking"),
    "starting": ("busy", "starting"),
    "backoff": ("warn", "restarting soon"),
    "held": ("warn", "held"),
    "stopped": ("off", "stopped"),
    "crashed": ("bad", "crashed"),
    "misconfigured": ("bad", "misconfigured"),
    "offline": ("off", "machine offline"),
    "unknown": ("off", "not reported"),
    "start": ("busy", "starting…"),  # an order on its way
}
