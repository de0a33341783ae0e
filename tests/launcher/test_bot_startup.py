"""A real ``bot run`` before its loop runs: waiting for a board that is down, and refusing what
can never work (an address without http://, a human's token) at once, in words.

Before the pid lock and the log exist, stderr is all a daemon has to say it is waiting; a
refusal is one line and exit code 2, and leaves no state folder behind.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.launcher.botrun import BotProcess, LiveBoard, free_port
from tests.launcher.fakeharness import Fake
from tests.support.boardtest import World, eventually

HINT = "(is it running? board ctl status)"


def retry_lines(bot: BotProcess, url: str) -> list[str]:
    """The daemon's lines saying it could not reach the board at url."""
    return [
        line
        for line in bot.output().splitlines()
        if line.startswith(f"bot: cannot reach the board at {url}: ")
    ]


async def test_a_board_down_at_start_is_said_at_each_try_and_the_bot_starts_once_it_is_up(
    tmp_path: Path, live: LiveBoard, world: World, fake: Fake
) -> None:
    assert world.bot.token is not None
    await live.stop()
    bot = BotProcess(tmp_path, board_url=live.url, token=world.bot.token, handle="pb", fake=fake)
    bot.start()
    try:
        lines = await eventually(
            lambda: retry_lines(bot, live.url)[1:] and retry_lines(bot, live.url), "two tries"
        )
        assert lines[0].endswith(f"; retrying in 0.5 s {HINT}"), lines
        assert "Connect call failed" in lines[0]
        await live.start()
        await bot.started()
    finally:
        await bot.close()
    assert "Traceback" not in bot.output()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_a_signal_while_the_board_cannot_be_reached_at_start_exits_0(
    tmp_path: Path, fake: Fake, sig: signal.Signals
) -> None:
    """A daemon that never reached its board has nothing to finish: the documented exit 0, no
    click "Aborted!", no traceback, no state folder."""
    url = f"http://127.0.0.1:{free_port()}"
    bot = BotProcess(tmp_path, board_url=url, token="bb_x", handle="gamma", fake=fake)
    bot.start()
    try:
        await eventually(lambda: retry_lines(bot, url), "the first try to fail")
        bot.signal(sig)
        assert await bot.wait_exit() == 0
    finally:
        await bot.close()
    said = bot.output().splitlines()
    assert said and said == retry_lines(bot, url), said
    assert not bot.state_dir.exists()


async def test_a_board_address_without_http_is_refused_at_once(
    tmp_path: Path, live: LiveBoard, fake: Fake
) -> None:
    """127.0.0.1:PORT names a running board, but no client can call it: an outage retried
    forever is the wrong answer."""
    address = f"127.0.0.1:{live.port}"
    bot = BotProcess(tmp_path, board_url=address, token="bb_x", handle="gamma", fake=fake)
    bot.start()
    try:
        assert await bot.wait_exit(5) == 2
    finally:
        await bot.close()
    assert bot.output().splitlines()[-1] == (
        f"Error: Invalid value for '--board': '{address}' has no http:// or https://: "
        f"give it as http://{address}"
    )
    assert not bot.state_root.exists()


@pytest.mark.parametrize("handle", ["alpha", None])
async def test_a_humans_token_is_refused_with_the_way_to_the_bots_own(
    tmp_path: Path, live: LiveBoard, world: World, fake: Fake, handle: str | None
) -> None:
    """A human's token exported in the shell would get as far as the wake feed, which is a bot's,
    under a state folder named after the human. The daemon says whose token it is, and that
    without BOARD_TOKEN it reads the bot's own token file."""
    assert world.human.token is not None
    bot = BotProcess(
        tmp_path, board_url=live.url, token=world.human.token, handle=handle or "alpha", fake=fake
    )
    if handle is None:
        at = bot.argv.index("--handle")
        del bot.argv[at : at + 2]
    bot.start()
    try:
        assert await bot.wait_exit() == 2
    finally:
        await bot.close()
    where = (
        f"alpha's token file, {bot.state_root / 'alpha' / 'token'}"
        if handle
        else "the bot's token file (name the bot with --handle)"
    )
    assert bot.output().strip() == (
        "bot: BOARD_TOKEN is alice's, a human's token; a bot runs with its own: "
        f"unset BOARD_TOKEN and the daemon reads {where}"
    )
    assert not bot.state_root.exists()
    assert not fake.calls()


@pytest.mark.parametrize("profile", [None, "proj-dev"], ids=["plain", "with-a-profile"])
async def test_a_token_the_board_refuses_at_start_exits_3_not_2(
    tmp_path: Path, world: World, fake: Fake, profile: str | None
) -> None:
    """A keeper fetches a bot a new token on exit 3 and leaves one that exits 2 misconfigured:
    a bot whose token was revoked while it was stopped, started with its profile as the keeper
    starts it, exited 2 and was never given a new one."""
    args = ["--profile", profile] if profile else []
    bot = BotProcess(
        tmp_path, board_url=world.board.url, token="bb_revoked", handle="pb", fake=fake, args=args
    )
    bot.start()
    try:
        assert await bot.wait_exit() == 3
    finally:
        await bot.close()
    said = bot.output()
    assert "bot: the board refused the token: UNAUTHENTICATED" in said and "Traceback" not in said
    assert fake.calls() == []
