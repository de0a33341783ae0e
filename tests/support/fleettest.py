"""Test support for the fleet: enroll a machine's keeper through the API, as `keeper enroll` does."""

from __future__ import annotations

from dataclasses import dataclass

from board.client import BoardClient
from tests.support.boardtest import Board


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
