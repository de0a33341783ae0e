"""Session rotation with a real ``bot run`` daemon and the strict fakes.

A profile's ``rotate_after_turns`` or ``rotate_after_tokens`` makes the daemon
start a fresh harness session instead of resuming; that turn's prompt carries
the board's handoff within its byte cap, and its wake record says why.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from board.server.services.handoff import DEFAULT_HANDOFF_BYTES
from tests.fakes.harness import tokens
from tests.launcher.botrun import BotProcess, wakes
from tests.launcher.fakeharness import Fake
from tests.support.boardtest import World, eventually


def handoff_of(prompt: str) -> str | None:
    """The handoff part of a prompt: from its heading to the turn's."""
    if "# Handoff\n" not in prompt:
        return None
    return prompt.split("# Handoff\n", 1)[1].split("\n\n# Your turn", 1)[0]


async def run_thread(world: World, turns: int) -> tuple[int, list[dict[str, Any]]]:
    """A thread of ``turns`` mentions of pb, each waiting for pb's turn on it; its wakes."""
    root = 0
    for n in range(1, turns + 1):
        text = f"@pb step {n}: carry on"
        if root:
            posted = await world.human.post(text, reply_to=root)
        else:
            posted = await world.human.post(text, channel="general", workspace="proj")
        root = root or int(posted["id"])

        async def recorded(count: int = n) -> list[dict[str, Any]]:
            found = await wakes(world.human, "pb")
            return found if len(found) >= count else []

        await eventually(recorded, f"the wake of turn {n}", 20)
    return root, await wakes(world.human, "pb")


def sessions(calls: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(c["session"] for c in calls))


async def test_thirty_turns_rotated_every_ten_make_three_sessions_each_handed_over(
    world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    await world.human.create_channel("general", workspace="proj")
    await world.human.create_profile("pb-rot", "proj", "claude", rotate_after_turns=10, bots=["pb"])
    fake.script({"do": "reply", "text": "done, next please"})
    bot = await make_bot(None, args=["--profile", "pb-rot"]).start().started()

    root, recorded = await run_thread(world, 30)
    calls = [c for c in fake.calls() if c.get("step")]
    assert len(calls) == 30 and len(recorded) == 30
    assert len(sessions(calls)) == 3
    fresh = [n for n, c in enumerate(calls) if c["resume"] is None]
    assert fresh == [0, 10, 20]
    assert [c["session"] for c in calls] == [s for s in sessions(calls) for _ in range(10)]
    # The rotated turns carry the handoff, within its cap; the bot's very first turn has none.
    assert handoff_of(calls[0]["prompt"]) is None
    for n in (10, 20):
        handoff = handoff_of(calls[n]["prompt"])
        assert handoff is not None, calls[n]["prompt"][:500]
        assert len(("# Handoff\n" + handoff).encode()) <= DEFAULT_HANDOFF_BYTES
        assert f"## Thread {root} in #general: open" in handoff
        assert f"step {n}: carry on" in handoff and "by pb" in handoff  # its last messages, both sides
        assert "You are @pb" in calls[n]["prompt"]  # a fresh session's first part too
    assert not any(handoff_of(c["prompt"]) for n, c in enumerate(calls) if n not in (10, 20))
    # The wake records say which turns rotated, and why.
    assert [w["rotated"] for w in recorded] == [None] * 10 + ["turns"] + [None] * 9 + ["turns"] + [None] * 9
    assert [w["session_id"] for w in recorded] == [c["session"] for c in calls]
    rotated = bot.events("session_rotated")
    assert [(e["reason"], e["turns"]) for e in rotated] == [("turns", 10), ("turns", 10)]

    # What rotation saves, from the fakes' usage model: a fresh session re-reads nothing.
    reads = [w["cache_read_tokens"] for w in recorded]
    assert reads[0] == reads[10] == reads[20] == 0
    # Never rotated, the same thread re-reads every earlier turn; a rotated turn would have sent
    # only its turn part (from "# Your turn") had it been resumed.
    unrotated, history = [], 0
    for n, call in enumerate(calls):
        unrotated.append(history)
        sent = (
            call["prompt"] if n not in (10, 20) else "# Your turn" + call["prompt"].split("# Your turn", 1)[1]
        )
        history += tokens(sent) + tokens(call["step"]["text"])
    extra = sum(tokens(calls[n]["prompt"]) - tokens(calls[n - 1]["prompt"]) for n in (10, 20))
    print(
        f"30 turns: cache read {sum(reads)} rotated, {sum(unrotated)} never; peaks {max(reads)}, "
        f"{max(unrotated)}; rotated first turns {extra} tokens more"
    )
    assert sum(reads) < sum(unrotated) / 2, (sum(reads), sum(unrotated))


async def test_a_session_past_its_token_limit_rotates_for_tokens(
    world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    await world.human.create_channel("general", workspace="proj")
    fake.script({"do": "reply", "text": "done"})
    limit = 1_500  # tokens: a first turn (house rules and all) holds about 950, each next one ~230 more
    await world.human.create_profile("pb-tok", "proj", "codex", rotate_after_tokens=limit, bots=["pb"])
    await make_bot(None, args=["--profile", "pb-tok"]).start().started()

    _, recorded = await run_thread(world, 6)
    calls = [c for c in fake.calls() if c.get("step")]
    # A session's length after a turn: what its next turn would re-read.
    lengths = [w["input_tokens"] + w["output_tokens"] for w in recorded]
    expected = [None] + ["tokens" if before >= limit else None for before in lengths[:-1]]
    assert [w["rotated"] for w in recorded] == expected
    assert "tokens" in expected and None in expected[1:], lengths  # it rotated, and it resumed
    for n, why in enumerate(expected):
        assert (calls[n]["resume"] is None) == (n == 0 or why == "tokens")
        assert (handoff_of(calls[n]["prompt"]) is not None) == (why == "tokens")
