"""Each turn's prompt is the board's: the daemon only adds its notes, and has no prompt of its own."""

from __future__ import annotations

from typing import Any

import pytest

from board.client import BoardAPIError
from board.launcher.prompt import Prompter


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
    def __init__(self, answer: dict[str, Any] | BoardAPIError, hidden: frozenset[int] = frozenset()) -> None:
        self.answer = answer
        self.hidden = hidden  # refused as a trigger, as the board refuses a message it does not show
        self.asked: list[tuple[str, list[int], bool]] = []

    async def bot_prompt(
        self, handle: str, trigger: list[int], *, first: bool, mcp: bool = False, handoff: bool = False
    ) -> dict[str, Any]:
        assert not mcp, "these prompters have no MCP tools"
        assert not handoff, "these prompters rotate no session"
        self.asked.append((handle, trigger, first))
        if set(trigger) & self.hidden:
            raise BoardAPIError(404, "NOT_FOUND", "No such message, or it is not visible to you.")
        if isinstance(self.answer, BoardAPIError):
            raise self.answer
        return self.answer


def prompter(board: Board) -> Prompter:
    return Prompter(board, handle="pb")  # type: ignore[arg-type]


async def test_the_board_composes_the_prompt_and_the_daemon_adds_its_notes() -> None:
    board = Board({"first_turn": "RULES", "turn": "BATCH", "covers": [1, 2], "omitted": [3], "bytes": 9})
    p = prompter(board)
    first = await p.build([message(1), message(2), message(3)], first=True, notes=["NOTE", "MORE"])
    assert first.text == "RULES\n\nBATCH\n\nNOTE\nMORE"
    assert first.covers == (1, 2) and first.omitted == (3,)
    later = await p.build([message(4)], first=False)
    assert later.text == "BATCH" and board.asked[-1] == ("pb", [4], False)


@pytest.mark.parametrize(
    "refusal",
    [
        BoardAPIError(0, "UNAVAILABLE", "down", retryable=True),
        BoardAPIError(404, "NOT_FOUND", "No such message, or it is not visible to you."),
        BoardAPIError(404, "NOT_FOUND", "No such route, or it is not visible to you."),
    ],
)
async def test_a_board_that_does_not_compose_the_prompt_is_the_caller_s_to_handle(
    refusal: BoardAPIError,
) -> None:
    """No prompt of the daemon's own: a refusal (or an unreachable board) reaches the caller."""
    board = Board(refusal)
    with pytest.raises(BoardAPIError) as raised:
        await prompter(board).build([message(1, "fix the login")], first=True)
    assert raised.value is refusal and len(board.asked) == 1


async def test_a_batch_is_asked_for_again_without_the_messages_the_board_no_longer_shows() -> None:
    board = Board({"first_turn": "RULES", "turn": "BATCH", "covers": [1, 3], "omitted": []}, frozenset({2}))
    prompt = await prompter(board).build([message(1), message(2), message(3)], first=True)
    assert prompt.text == "RULES\n\nBATCH" and prompt.covers == (1, 3)
    one_by_one = [("pb", [i], False) for i in (1, 2, 3)]
    assert board.asked == [("pb", [1, 2, 3], True), *one_by_one, ("pb", [1, 3], True)]
    nothing = Board({"turn": "BATCH"}, frozenset({1, 2}))
    with pytest.raises(BoardAPIError) as raised:
        await prompter(nothing).build([message(1), message(2)], first=False)
    assert raised.value.code == "NOT_FOUND"
