"""Replies out to the forge: a real board posts back to a fake GitHub and a fake Forgejo on loopback.

A bot's reply tagged ``forge`` and the thread's done summary each become one issue comment,
naming the bot and linking to the thread; the forge's echo webhook of the board's own
comment adds nothing to the thread; a mapping without ``reply_out`` posts nothing; a forge
that fails is tried again, and one that always fails ends ``failed`` with its error on the
thread's page and answer; a restart between two attempts still posts once; the source's
token is in no answer, page or log line.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.boardtest import Board, World, db_rows, eventually, populate, start_board, stop_board
from tests.support.forge import FakeForge
from tests.support.notify_support import fast_retries
from tests.support.pages_support import pages_as

SECRET = "s3cret-webhook-key-of-some-length"
TOKEN = "forge-api-token-1234"
FORGES = ("github", "forgejo")


@pytest.fixture
def board_log(tmp_path: Path) -> Iterator[Path]:
    """Everything the board logs during the test, at every level, in a file (grepped for the token)."""
    path = tmp_path / "board.log"
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield path
    root.removeHandler(handler)
    root.setLevel(level)
    handler.close()
    assert TOKEN not in path.read_text()


class Answers:
    """Every answer the test read, to grep for the token at the end."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def keep(self, answer: Any) -> Any:
        self.seen.append(answer if isinstance(answer, str) else json.dumps(answer))
        return answer

    def check(self) -> None:
        assert self.seen and not [a for a in self.seen if TOKEN in a]


async def add_source(world: World, kind: str, api_url: str, reply_out: bool = True) -> dict[str, Any]:
    mapping = {"repository": "acme/app", "workspace": "proj", "channel": "issues", "bot": "pb"}
    body = {"forge": kind, "secret": SECRET, "api_url": api_url, "api_token": TOKEN}
    answer: dict[str, Any] = await world.human.request(
        "PUT", "/api/intake/sources/acme", json=body | {"mappings": [mapping | {"reply_out": reply_out}]}
    )
    return answer


async def started(world: World, kind: str, reply_out: bool = True) -> tuple[FakeForge, Answers]:
    fake = FakeForge(kind, world.board.url, "acme", SECRET, token=TOKEN)
    api = await fake.start()
    answers = Answers()
    answers.keep(await add_source(world, kind, api, reply_out))
    return fake, answers


@pytest.fixture(params=FORGES)
async def forge(request: pytest.FixtureRequest, world: World, board_log: Path) -> AsyncIterator[FakeForge]:
    fake = FakeForge(request.param, world.board.url, "acme", SECRET, token=TOKEN)
    api = await fake.start()
    await add_source(world, request.param, api)
    yield fake
    await fake.close()


def replies_out(board: Board) -> list[tuple[Any, ...]]:
    return db_rows(
        board.db_path,
        "SELECT kind, state, attempts, last_error, remote_id FROM notifications WHERE source_id IS NOT NULL "
        "ORDER BY id",
    )


async def settled(board: Board, count: int) -> list[tuple[Any, ...]]:
    """The replies out once ``count`` are there and none waits to be sent."""

    def probe() -> list[tuple[Any, ...]] | None:
        found = replies_out(board)
        return found if len(found) == count and all(r[1] in ("sent", "failed") for r in found) else None

    return await eventually(probe, f"{count} replies out settled", timeout=20)


async def opened(world: World, fake: FakeForge, number: int) -> tuple[dict[str, Any], int]:
    issue = fake.issue(number, labels=("bug",))
    sent = await fake.send(fake.opened(issue))
    assert sent.status == 200 and sent.answer["status"] == "accepted", sent.answer
    thread_id = int(sent.answer["thread_id"])
    root = await world.human.request("GET", f"/api/messages/{thread_id}")
    assert root["mentions"] == ["pb"]  # the mapped bot is woken for it
    return issue, thread_id


async def test_a_marked_reply_and_the_done_summary_each_become_one_comment(
    world: World, forge: FakeForge
) -> None:
    answers = Answers()
    issue, thread_id = await opened(world, forge, 1)
    await world.bot.post("Looking into it, just for the board.", reply_to=thread_id)  # not marked: stays
    reply = answers.keep(
        await world.bot.post(
            "Fixed on main by **a1b2c3**.", reply_to=thread_id, tags=["forge"], request_id="r1"
        )
    )
    again = await world.bot.post(
        "Fixed on main by **a1b2c3**.", reply_to=thread_id, tags=["forge"], request_id="r1"
    )
    assert again["id"] == reply["id"]  # a retried write enqueues nothing twice
    await world.bot.claim(thread_id, "fixing")
    await world.bot.done(thread_id, "Released in v2.1.")
    await world.bot.done(thread_id, "Released in v2.1.")  # done twice: the first outcome, one comment
    found = await settled(world.board, 2)
    assert [r[:2] for r in found] == [("reply", "sent"), ("done", "sent")]
    assert len(forge.comments) == 2
    scheme = "token" if forge.kind == "forgejo" else "Bearer"
    accept = "application/json" if forge.kind == "forgejo" else "application/vnd.github+json"
    for posted in forge.comments:
        assert (posted.repository, posted.issue) == ("acme/app", 1)
        assert posted.authorization == f"{scheme} {TOKEN}" and posted.accept == accept
        assert "](http://" in posted.body  # the link to the thread is absolute
        assert f"/t/{thread_id}#m" in posted.body and "<!-- bot-board:" in posted.body
    first, second = forge.comments
    assert first.body.startswith("Fixed on main by **a1b2c3**.") and "Posted by pb" in first.body
    assert f"/t/{thread_id}#m{reply['id']}" in first.body
    assert second.body.startswith("Released in v2.1.") and "Marked done by pb" in second.body

    before = answers.keep(await world.human.thread(thread_id))
    for posted in forge.comments:  # the forge tells the board of the comments it posted
        echo = await forge.send(forge.echo(issue, posted))
        assert echo.status == 200 and echo.answer["status"] == "ignored", echo.answer
        assert "own comment" in echo.answer["detail"] and echo.answer["message_id"] is None
    late = await forge.send(forge.echo(issue, forge.comments[0], comment_id=9999))  # before its id was kept
    assert late.answer["status"] == "ignored"
    after = answers.keep(await world.human.thread(thread_id))
    assert [m["id"] for m in after["messages"]] == [m["id"] for m in before["messages"]]
    assert len(forge.comments) == 2 and len(replies_out(world.board)) == 2  # no echo, no loop
    shown = after["forge_replies"]
    assert [(r["kind"], r["state"], r["issue"], r["last_error"]) for r in shown] == [
        ("reply", "sent", 1, ""),
        ("done", "sent", 1, ""),
    ]
    assert [r["comment_id"] for r in shown] == [str(c.id) for c in forge.comments]
    human_comment = await forge.send(forge.commented(issue, "Thanks!"))  # a person's comment still comes in
    assert human_comment.answer["status"] == "accepted"

    (status, html), (intake_status, intake) = await pages_as(
        world.board, "alice", f"/t/{thread_id}", "/intake?source=acme"
    )
    assert status == 200 and 'id="forge-replies"' in html and html.count('data-state="sent"') == 2
    assert intake_status == 200 and intake.count('data-state="sent"') == 2 and "own comment" in intake
    answers.keep(html)
    answers.keep(intake)
    answers.keep(await world.human.request("GET", "/api/intake/sources"))
    answers.keep(await world.human.request("GET", "/api/intake/deliveries"))
    answers.check()


async def test_a_mapping_without_reply_out_posts_nothing(world: World, board_log: Path) -> None:
    fake, answers = await started(world, "github", reply_out=False)
    try:
        _, thread_id = await opened(world, fake, 2)
        await world.bot.post("Marked, but the mapping keeps replies in.", reply_to=thread_id, tags=["forge"])
        await world.bot.claim(thread_id)
        await world.bot.done(thread_id, "done here")
        thread = answers.keep(await world.human.thread(thread_id))
        assert thread["forge_replies"] == [] and replies_out(world.board) == []
        assert fake.comments == []
        answers.check()
    finally:
        await fake.close()


async def test_a_human_s_or_a_root_s_forge_tag_posts_nothing(world: World, forge: FakeForge) -> None:
    """Only a bot's reply in the issue's thread is marked for the issue."""
    _, thread_id = await opened(world, forge, 3)
    await world.human.post("a human's note", reply_to=thread_id, tags=["forge"])
    await world.bot.post("a new root", channel="issues", workspace="proj", tags=["forge"])
    assert replies_out(world.board) == [] and forge.comments == []


async def test_a_forge_failing_three_times_then_answering_201_gets_one_comment(
    world: World, forge: FakeForge
) -> None:
    fast_retries(world.board)
    forge.fail = 3
    _, thread_id = await opened(world, forge, 4)
    await world.bot.post("Once, after three refusals.", reply_to=thread_id, tags=["forge"])
    (row,) = await settled(world.board, 1)
    assert row[1:4] == ("sent", 4, "") and forge.failed == 3
    assert len(forge.comments) == 1 and forge.comments[0].body.startswith("Once, after three refusals.")


async def test_comments_on_one_issue_land_in_order_across_a_refusal(world: World, forge: FakeForge) -> None:
    """The done summary waits while the reply before it is retried: the issue reads as the thread."""
    fast_retries(world.board, backoff=0.3)
    forge.fail = 2
    _, thread_id = await opened(world, forge, 9)
    await world.bot.post("First: the cause.", reply_to=thread_id, tags=["forge"])
    await world.bot.claim(thread_id, "fixing")
    await world.bot.done(thread_id, "Second: the fix is out.")
    found = await settled(world.board, 2)
    assert [r[:2] for r in found] == [("reply", "sent"), ("done", "sent")] and forge.failed == 2
    assert [c.body.split("\n")[0] for c in forge.comments] == ["First: the cause.", "Second: the fix is out."]


async def test_a_forge_that_always_fails_ends_failed_with_its_error_on_the_thread(
    world: World, forge: FakeForge
) -> None:
    fast_retries(world.board, attempts=3)
    forge.fail = -1
    _, thread_id = await opened(world, forge, 5)
    await world.bot.post("Nobody will read this on the forge.", reply_to=thread_id, tags=["forge"])
    (row,) = await settled(world.board, 1)
    assert row[1:4] == ("failed", 3, "HTTP 500 Internal Server Error") and forge.comments == []
    (shown,) = (await world.human.thread(thread_id))["forge_replies"]
    assert (shown["state"], shown["attempts"], shown["last_error"]) == ("failed", 3, row[3])
    assert shown["comment_id"] is None and shown["sent_at"] is None
    bot_view = await world.bot.thread(thread_id)  # the bot that wrote it sees it failed too
    assert bot_view["forge_replies"][0]["state"] == "failed"
    (_, html), (_, intake) = await pages_as(world.board, "alice", f"/t/{thread_id}", "/intake")
    assert 'data-state="failed"' in html and "Failed: HTTP 500 Internal Server Error" in html
    assert '<tr id="reply-' in intake and "HTTP 500 Internal Server Error" in intake
    assert TOKEN not in html and TOKEN not in intake


async def test_a_wrong_token_fails_without_showing_any_token(world: World, board_log: Path) -> None:
    fake, answers = await started(world, "forgejo")
    fake.token = "the-token-the-forge-expects"
    try:
        fast_retries(world.board, attempts=2)
        _, thread_id = await opened(world, fake, 6)
        await world.bot.post("refused", reply_to=thread_id, tags=["forge"])
        (row,) = await settled(world.board, 1)
        assert row[1:4] == ("failed", 2, "HTTP 401 Unauthorized")
        answers.keep(await world.human.thread(thread_id))
        answers.check()
    finally:
        await fake.close()


async def test_a_restart_in_the_middle_of_a_retry_still_posts_once(tmp_path: Path, board_log: Path) -> None:
    board = await start_board(tmp_path)
    fake = FakeForge("github", board.url, "acme", SECRET, token=TOKEN)
    try:
        world = await populate(board)
        await add_source(world, "github", await fake.start())
        fast_retries(board, backoff=1.0)  # the retry is due a second later: the board stops before
        fake.fail = 1
        _, thread_id = await opened(world, fake, 7)
        await world.bot.post("Across a restart.", reply_to=thread_id, tags=["forge"])
        await eventually(lambda: fake.failed, "the first attempt")
        await eventually(
            lambda: [r for r in replies_out(board) if r[1:3] == ("pending", 1)], "a retry scheduled"
        )
    finally:
        await stop_board(board)
    board = await start_board(tmp_path)
    try:
        (row,) = await settled(board, 1)
        assert row[1:3] == ("sent", 2) and len(fake.comments) == 1
        assert fake.comments[0].body.startswith("Across a restart.")
    finally:
        await stop_board(board)
        await fake.close()
