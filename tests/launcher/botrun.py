"""End-to-end helpers: a board that can go away and come back on the same port and
database, and a real ``bot run`` process with the fake harnesses on PATH.

The board runs in the test's event loop (so tests can use ``populate`` and the
service layer), on a fixed loopback port; the bot is a separate process that
reaches it over HTTP like any daemon. Tests wait with ``eventually`` (an
``asyncio.sleep`` loop) so the board keeps serving while they wait.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer

from board.client import BoardClient
from board.server.app import create_app
from board.server.settings import Settings
from tests.launcher.fakeharness import FAKES_BIN, SANDBOX_ENV, Fake, read_jsonl
from tests.support.boardtest import Board, World, eventually, populate

ROOT = Path(__file__).resolve().parents[2]
LOG_TAIL = 60  # of a daemon's log lines, and of its other output (a traceback), shown with a failure


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveBoard:
    """A board on a fixed port; stop() and start() again keep its database."""

    def __init__(self, tmp_path: Path) -> None:
        self.db_path = tmp_path / "board.db"
        self.port = free_port()
        self.board: Board | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> Board:
        # The outbox may send to receivers on loopback: the tests' fake forge and webhooks.
        app = create_app(Settings(db=str(self.db_path), notify_allow_local=1))
        server = TestServer(app, host="127.0.0.1", port=self.port)
        await server.start_server(shutdown_timeout=0.5)  # open long-polls end at once
        self.board = Board(server, app, self.db_path, self.db_path.parent)
        return self.board

    async def stop(self) -> None:
        if self.board is not None:
            for client in self.board.clients:
                await client.close()
            await self.board.server.close()
            self.board = None


@pytest.fixture
async def live(tmp_path: Path) -> AsyncIterator[LiveBoard]:
    """A live board for the test; import this fixture (and ``world``) into an end-to-end module."""
    board = LiveBoard(tmp_path)
    await board.start()
    yield board
    await board.stop()


@pytest.fixture
async def world(live: LiveBoard) -> World:
    """The populated world of boardtest, on the live board."""
    assert live.board is not None
    return await populate(live.board)


class BotProcess:
    """``python -m board bot run`` for one bot, with the fakes first on PATH."""

    def __init__(
        self,
        tmp_path: Path,
        *,
        board_url: str,
        token: str,
        handle: str,
        harness: str | None = "claude",
        fake: Fake,
        repo: Path | None = None,
        args: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.tmp_path = tmp_path
        self.handle = handle
        self.fake = fake
        self.repo = repo or tmp_path / "repo"
        self.repo.mkdir(parents=True, exist_ok=True)
        self.state_root = tmp_path / "state"
        self.home = tmp_path / "home"
        self.home.mkdir(exist_ok=True)
        self.argv = [
            sys.executable,
            "-m",
            "board",
            "bot",
            "run",
            "--handle",
            handle,
            *(["--harness", harness] if harness else []),
            "--board",
            board_url,
            "--repo",
            str(self.repo),
            *(args or []),
        ]
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("BOT_", "BOARD_"))},
            "PATH": f"{FAKES_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONPATH": str(ROOT),
            "HOME": str(self.home),
            "FAKE_HARNESS_DIR": str(fake.root),
            "BOT_STATE_DIR": str(self.state_root),
            "BOARD_TOKEN": token,
            "BOT_JITTER": "0",
            "BOT_TURN_TIMEOUT": "20",
            "BOT_BOARD_RETRY_MAX": "0.5",
            "BOT_STOP_GRACE": "5",
            **SANDBOX_ENV,
            **(env or {}),
        }
        self.proc: subprocess.Popen[bytes] | None = None
        self.runs = 0

    @property
    def state_dir(self) -> Path:
        return self.state_root / self.handle

    def start(self) -> BotProcess:
        self.runs += 1
        out = (self.tmp_path / f"bot-{self.handle}-{self.runs}.out").open("wb")
        self.proc = subprocess.Popen(
            self.argv, env=self.env, cwd=self.tmp_path, stdin=subprocess.DEVNULL, stdout=out, stderr=out
        )
        out.close()
        return self

    def output(self) -> str:
        return "".join(
            (self.tmp_path / f"bot-{self.handle}-{n}.out").read_text(errors="replace")
            for n in range(1, self.runs + 1)
        )

    def events(self, name: str | None = None) -> list[dict[str, Any]]:
        rows = read_jsonl(self.state_dir / "bot.log")
        return [r for r in rows if name is None or r["event"] == name]

    def state(self) -> dict[str, Any]:
        path = self.state_dir / "state.json"
        return json.loads(path.read_text()) if path.exists() else {}

    async def started(self, timeout: float = 15.0) -> BotProcess:
        """Wait until the daemon says it is reading the board."""

        async def up() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"bot exited {self.proc.returncode}:\n{self.output()}")
            return bool(self.events("started")) and len(self.events("started")) >= self.runs

        await eventually(up, "the bot daemon to start", timeout)
        return self

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    async def wait_exit(self, timeout: float = 15.0) -> int:
        assert self.proc is not None
        proc = self.proc

        async def gone() -> bool:
            return proc.poll() is not None

        await eventually(gone, "the bot daemon to exit", timeout)
        assert proc.returncode is not None
        return proc.returncode

    async def kill(self) -> None:
        """SIGKILL, as a crash or an OOM killer would."""
        self.signal(signal.SIGKILL)
        await self.wait_exit()

    async def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await self.wait_exit(15)
            except AssertionError:
                self.proc.kill()
                self.proc.wait()


async def replies(client: BoardClient, message_id: int, author: str) -> list[dict[str, Any]]:
    """The replies by author in the thread of message_id."""
    thread = await client.thread(message_id)
    return [m for m in thread["messages"] if m["author"] == author and m["id"] != message_id]


async def wakes(client: BoardClient, bot: str) -> list[dict[str, Any]]:
    return (await client.wakes(bot=bot, limit=100))["wakes"]


def kill_later(pid: int | None) -> None:
    if pid:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
async def make_bot(
    tmp_path: Path, live: LiveBoard, world: World, fake: Fake
) -> AsyncIterator[Callable[..., BotProcess]]:
    """Bots for pb (or its peer pb2, both in proj); stopped at teardown, whatever the test did."""
    made: list[BotProcess] = []

    def make(
        harness: str | None = "claude", args: list[str] | None = None, handle: str = "pb", **env: str
    ) -> BotProcess:
        token = {"pb": world.bot.token, "pb2": world.peer.token}[handle]
        assert token is not None
        bot = BotProcess(
            tmp_path,
            board_url=live.url,
            token=token,
            handle=handle,
            harness=harness,
            fake=fake,
            args=args,
            env=env,
        )
        made.append(bot)
        return bot

    yield make
    for bot in made:
        await bot.close()
    for call in fake.calls():
        kill_later(call.get("grandchild_pid"))
    # What each daemon did and said: pytest shows a test's teardown output when the test failed.
    for handle, bot in {bot.handle: bot for bot in made}.items():  # a handle's runs share a log
        with contextlib.suppress(OSError):
            tail = (bot.state_dir / "bot.log").read_text(errors="replace").splitlines()[-LOG_TAIL:]
            print(f"{handle}'s last {LOG_TAIL} log lines:", *tail, sep="\n")
        said = [line for line in bot.output().splitlines() if not line.startswith("{")]  # not its log
        print(f"{handle}'s other output:", *said[-LOG_TAIL:], sep="\n")


async def mention(world: World, text: str = "please look", channel: str = "general") -> int:
    message = await world.human.post(f"@pb {text}", channel=channel, workspace="proj")
    return int(message["id"])


async def one_reply(world: World, message_id: int, timeout: float = 15.0) -> dict[str, Any]:
    found = await eventually(
        lambda: replies(world.human, message_id, "pb"), f"pb's reply to {message_id}", timeout
    )
    assert len(found) == 1, found
    return found[0]
