"""A real ``bot run --harness command`` with a real program as the command.

A command has no board tools of its own: its stdout is its answer, which the daemon posts
in the thread that woke it. A command that replies through the board's API on its own
gets nothing more posted.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from board.launcher.harnesses.base import TEXT_CAP
from board.server.services.posting import MAX_BODY
from tests.launcher.botrun import BotProcess, replies, wakes
from tests.support.boardtest import World, eventually

# Prints what it was asked to; with POST_ITSELF set, first replies through the API itself.
AGENT = """
import json, os, sys, urllib.request

prompt = sys.argv[-1]
if os.environ.get("POST_ITSELF"):
    woken_by = int(os.environ["BOARD_WAKE_IDS"].split(",")[-1])
    body = json.dumps({"body": "posted by the command", "reply_to": woken_by})
    request = urllib.request.Request(
        os.environ["BOARD_URL"] + "/api/messages",
        data=body.encode(),
        headers={"Authorization": "Bearer " + os.environ["BOARD_TOKEN"], "Content-Type": "application/json"},
    )
    urllib.request.urlopen(request, timeout=10).read()
print(os.environ.get("ANSWER", "the answer from stdout"), end="")
sys.exit(int(os.environ.get("EXIT", "0")))
"""


@pytest.fixture
def command_bot(tmp_path: Path, make_bot: Callable[..., BotProcess]) -> Callable[..., BotProcess]:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)

    def make(**env: str) -> BotProcess:
        template = shlex.join([sys.executable, str(agent), "{prompt}"])
        return make_bot("command", **{"BOT_COMMAND_TEMPLATE": template, **env}).start()

    return make


async def turn_recorded(world: World, count: int = 1) -> None:
    await eventually(lambda: _wakes_at_least(world, count), f"{count} wake record(s) of pb")


async def _wakes_at_least(world: World, count: int) -> bool:
    return len(await wakes(world.human, "pb")) >= count


async def finished(bot: BotProcess, message_id: int) -> None:
    """The daemon has finished every record of the turn on message_id (its cursor passed it)."""

    async def past() -> bool:
        return int(bot.state().get("cursor") or 0) >= message_id and not bot.state().get("inflight")

    await eventually(past, f"the daemon to finish the turn on {message_id}")


async def test_stdout_of_a_successful_turn_is_the_reply(
    world: World, command_bot: Callable[..., BotProcess]
) -> None:
    bot = await command_bot().started()
    asked = await world.human.post("@pb what is it?", channel="general", workspace="proj")
    await finished(bot, int(asked["id"]))
    found = await replies(world.human, int(asked["id"]), "pb")
    assert [m["body"] for m in found] == ["the answer from stdout"]
    assert found[0]["reply_to"] == asked["id"]
    assert (await wakes(world.human, "pb"))[0]["outcome"] == "ok"


async def test_a_command_that_replied_itself_gets_nothing_more_posted(
    world: World, command_bot: Callable[..., BotProcess]
) -> None:
    bot = await command_bot(POST_ITSELF="1").started()
    asked = await world.human.post("@pb what is it?", channel="general", workspace="proj")
    await finished(bot, int(asked["id"]))
    await turn_recorded(world)
    found = await replies(world.human, int(asked["id"]), "pb")
    assert [m["body"] for m in found] == ["posted by the command"]
    assert bot.events("answer_posted_by_turn")


async def test_blank_stdout_posts_nothing_and_a_failed_turn_posts_its_failure(
    world: World, command_bot: Callable[..., BotProcess]
) -> None:
    bot = await command_bot(ANSWER=" \n").started()
    asked = await world.human.post("@pb anything?", channel="general", workspace="proj")
    await finished(bot, int(asked["id"]))
    assert await replies(world.human, int(asked["id"]), "pb") == []
    await bot.close()

    failing = await command_bot(ANSWER="half an answer", EXIT="3").started()
    asked = await world.human.post("@pb and now?", channel="general", workspace="proj")
    await finished(failing, int(asked["id"]))
    bodies = [m["body"] for m in await replies(world.human, int(asked["id"]), "pb")]
    # One reply: the failure report (which quotes the output), not the output as an answer.
    assert len(bodies) == 1 and bodies[0].startswith("My command turn failed (exit 3).")


async def test_stdout_longer_than_a_message_is_posted_cut_to_one(
    world: World, command_bot: Callable[..., BotProcess]
) -> None:
    assert TEXT_CAP == MAX_BODY
    bot = await command_bot(ANSWER="x" * (MAX_BODY * 2)).started()
    asked = await world.human.post("@pb a long one", channel="general", workspace="proj")
    await finished(bot, int(asked["id"]))
    (reply,) = await replies(world.human, int(asked["id"]), "pb")
    assert len(reply["body"]) == MAX_BODY and reply["body"].endswith("[truncated]")
