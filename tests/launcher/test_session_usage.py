"""What a resumed session costs, measured: a real ``bot run`` daemon, the fakes'
usage model, and the wake records the board keeps.

Each resumed turn re-reads the session so far from the provider's cache; the
wake record must show that growth, read out of each CLI's own usage fields.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from tests.fakes.harness import tokens
from tests.launcher.botrun import BotProcess, mention, one_reply, wakes
from tests.launcher.fakeharness import Fake
from tests.support.boardtest import World, eventually

TURNS = 5


@pytest.mark.parametrize("harness", ["claude", "codex", "opencode", "gemini", "copilot"])
async def test_cache_read_grows_turn_by_turn_in_a_resumed_session(
    harness: str, world: World, fake: Fake, make_bot: Callable[..., BotProcess]
) -> None:
    fake.script(*({"do": "reply", "text": f"answer {n} " + "x" * 40 * n} for n in range(1, TURNS + 1)))
    await make_bot(harness).start().started()
    for n in range(TURNS):
        await one_reply(world, await mention(world, f"turn {n + 1}"))

    async def all_recorded() -> list[dict[str, Any]]:
        found = await wakes(world.human, "pb")
        return found if len(found) == TURNS else []

    recorded = await eventually(all_recorded, f"{TURNS} wake records")
    calls = [c for c in fake.calls() if c.get("step")]
    assert len(calls) == TURNS and len({c["session"] for c in calls}) == 1  # one session, resumed
    assert [c["resume"] is None for c in calls] == [True] + [False] * (TURNS - 1)
    if harness == "copilot":
        # Copilot's JSON output reports premium requests, never tokens: nothing to read.
        assert all(w["input_tokens"] is None and w["cache_read_tokens"] is None for w in recorded)
        return
    # The fakes' model: a turn re-reads every earlier prompt and answer.
    history, expected = 0, []
    for call in calls:
        expected.append(history)
        history += tokens(call["prompt"]) + tokens(call["step"]["text"])
    reads = [w["cache_read_tokens"] for w in recorded]
    assert reads == expected and reads[0] == 0
    assert all(b > a for a, b in itertools.pairwise(reads)), reads
    for wake, call in zip(recorded, calls, strict=True):
        assert wake["input_tokens"] == wake["cache_read_tokens"] + tokens(call["prompt"])
        assert wake["output_tokens"] == tokens(call["step"]["text"])
        if harness in ("claude", "opencode"):  # the two that report a cache write, and dollars
            assert wake["cache_write_tokens"] == tokens(call["prompt"])
            assert wake["cost_usd"] and wake["cost_usd"] > 0
        else:
            assert wake["cache_write_tokens"] is None
