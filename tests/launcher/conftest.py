"""Fixtures for the launcher tests: the fake harnesses on PATH, their script and
their records, a repo directory to run them in, and a live board for real bots."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from board.launcher.process import child_env, identity_env
from tests.launcher.botrun import live, make_bot, world  # noqa: F401 - end-to-end fixtures, found by name
from tests.launcher.fakeharness import FAKES_BIN, SANDBOX_ENV, Fake
from tests.launcher.fakeharness import alive as is_alive


@pytest.fixture
def fake(tmp_path: Path) -> Fake:
    return Fake(tmp_path / "fake")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    return path


@pytest.fixture
def make_env(fake: Fake) -> Callable[..., dict[str, str]]:
    """The child environment a bot would build, with the fakes first on PATH."""

    def build(base: dict[str, str] | None = None, **extra: str) -> dict[str, str]:
        parent = dict(os.environ if base is None else base)
        env = child_env(
            parent,
            {
                **identity_env("http://127.0.0.1:9", "tok-secret", "box3-test", "main", [7, 9]),
                "FAKE_HARNESS_DIR": str(fake.root),
                "PATH": f"{FAKES_BIN}{os.pathsep}{parent.get('PATH', '')}",
                **SANDBOX_ENV,
                **extra,
            },
        )
        return env

    return build


@pytest.fixture
def env(make_env: Callable[..., dict[str, str]]) -> dict[str, str]:
    return make_env()


@pytest.fixture
def alive() -> Callable[[int], bool]:
    """Whether a pid is a running process (a zombie is not: it runs nothing)."""
    return is_alive


@pytest.fixture
def reap_later() -> Iterator[list[int]]:
    """Pids a test started outside the launcher's reach: killed at teardown."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)
