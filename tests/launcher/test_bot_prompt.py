"""Each turn's prompt: the board's when it composes one, else the small local one."""

from __future__ import annotations

from typing import Any

import pytest

from board.client import BoardAPIError
from board.launcher.prompt import Prompter, local_prompt


def message(mid: int, body: str = "hello", for_me: bool = True) -> dict[str, Any]:
    return {
        "id": mid,
        "author": "alice",
        "channel": "general",
        "thread_id": mid,
        "body": body,
        "for_me": for_me,
    }


class Board:
    def __init__(self, answer: dict[str, Any] | BoardAPIError) -> None:
        self.answer = answer
        self.asked: list[tuple[str, list[int], bool]] = []

    async def bot_prompt(
        self, handle: str, trigger: list[int], *, first: bool, mcp: bool = False
    ) -> dict[str, Any]:
        assert not mcp, "these prompters have no MCP tools"
        self.asked.append((handle, trigger, first))
        if isinstance(self.answer, BoardAPIError):
            raise self.answer
        return self.answer


def prompter(board: Board, clock: list[float]) -> Prompter:
    return Prompter(
        board,  # type: ignore[arg-type]
        handle="pb",
        board_url="http://b",
        workspace="proj",
        monotonic=lambda: clock[0],
    )


async def test_the_board_composes_the_prompt_when_it_can() -> None:
    board = Board({"first_turn": "RULES", "turn": "BATCH", "covers": [1, 2], "omitted": [3], "bytes": 9})
    p = prompter(board, [0.0])
    first = await p.build([message(1), message(2), message(3)], first=True, notes=["NOTE"])
    assert first.text == "RULES\n\nBATCH\n\nNOTE" and first.source == "board"
    assert first.covers == (1, 2) and first.omitted == (3,)
    later = await p.build([message(4)], first=False)
    assert later.text == "BATCH" and board.asked[-1] == ("pb", [4], False)


async def test_without_the_route_the_local_prompt_is_used_and_the_board_asked_again_later() -> None:
    board = Board(BoardAPIError(404, "NOT_FOUND", "No such route, or it is not visible to you."))
    clock = [0.0]
    p = prompter(board, clock)
    prompt = await p.build([message(5, "fix the login", for_me=False)], first=True)
    assert prompt.source == "local" and "fix the login" in prompt.text and "message 5" in prompt.text
    assert "claim" in prompt.text and "@pb" in prompt.text
    await p.build([message(6)], first=False)
    assert len(board.asked) == 1  # not asked again for a while
    clock[0] = 1000.0
    await p.build([message(7)], first=False)
    assert len(board.asked) == 2


async def test_an_unreachable_board_is_the_caller_s_to_retry() -> None:
    p = prompter(Board(BoardAPIError(0, "UNAVAILABLE", "down", retryable=True)), [0.0])
    with pytest.raises(BoardAPIError):
        await p.build([message(1)], first=False)


def test_the_local_prompt_keeps_to_its_budget_and_lists_what_did_not_fit() -> None:
    batch = [message(i, "x" * 1500) for i in range(1, 11)]
    prompt = local_prompt(
        batch, handle="pb", board_url="http://b", workspace="proj", first=False, budget=4000
    )
    assert prompt.covers == (1, 2) and prompt.omitted == tuple(range(3, 11))
    assert "3, 4, 5" in prompt.text and "covers messages 1, 2, 3" in prompt.text
    long = local_prompt(
        [message(1, "y" * 5000)], handle="pb", board_url="http://b", workspace="p", first=False
    )
    assert "3000 more characters" in long.text
    assert (
        "watched"
        not in local_prompt([message(1)], handle="pb", board_url="b", workspace="p", first=False).text
    )


async def test_a_refused_batch_uses_the_local_prompt_for_that_turn_only() -> None:
    board = Board(BoardAPIError(404, "NOT_FOUND", "No such message, or it is not visible to you."))
    p = prompter(board, [0.0])
    assert (await p.build([message(1)], first=False)).source == "local"
    board.answer = {"first_turn": None, "turn": "BATCH", "covers": [2], "omitted": []}
    assert (await p.build([message(2)], first=False)).source == "board"
