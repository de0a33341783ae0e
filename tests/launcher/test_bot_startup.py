"""A real ``bot run`` before its loop runs: waiting for a board that is down, and refusing what
can never work (an address without http://, a human's token) at once, in words.

Before the pid lock and the log exist, stderr is all a daemon has to say it is waiting; a
refusal is one line and exit code 2, and leaves no state folder behind.
"""

from __future__ import annotations

from pathlib import Path

from tests.launcher.botrun import BotProcess, LiveBoard
from tests.launcher.fakeharness import Fake


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
