"""The keeper's tests reuse the launcher's end-to-end helpers (a live board, the fakes)."""

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.keeper.keeperrun import KeeperProcess, kill_under
from tests.launcher import botrun
from tests.launcher.botrun import LiveBoard
from tests.launcher.fakeharness import Fake
from tests.support.boardtest import World

live, world = botrun.live, botrun.world  # the launcher's end-to-end fixtures, found by name


@pytest.fixture
async def keeper(
    tmp_path: Path,
    live: LiveBoard,
    world: World,
    fake: Fake,
) -> AsyncIterator[KeeperProcess]:
    """An enrolled machine ``box1`` with a running keeper; its bots are killed at teardown."""
    repo = tmp_path / "repo"
    repo.mkdir()
    await world.human.create_profile("proj-dev", "proj", "claude", repo=str(repo))
    code = (await world.human.enroll_code("box1"))["code"]
    keeper = KeeperProcess(tmp_path, fake)
    code_, out = await keeper.enroll(live.url, code)
    assert code_ == 0, out
    keeper.start()
    yield keeper
    if keeper.proc is not None and keeper.proc.poll() is None:
        keeper.proc.kill()
        keeper.proc.wait()
    kill_under(tmp_path)


@pytest.fixture
def fake(tmp_path: Path) -> Fake:
    return Fake(tmp_path / "fake")
