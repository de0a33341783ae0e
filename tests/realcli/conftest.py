"""Fixtures for the real-CLI suite: the pinned CLIs, installed once, and a fresh sandbox per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realcli.clis import PINNED, binary_path, cache_root, install, registry_unreachable
from tests.realcli.sandbox import Sandbox, sandbox


@pytest.fixture(scope="session")
def real_clis() -> dict[str, Path]:
    """harness -> the pinned CLI's executable, installing what the cache lacks.

    Skipped only when an install is needed and npm or its registry cannot be reached.
    """
    missing = [cli for cli in PINNED.values() if not binary_path(cli).exists()]
    if missing:
        why = registry_unreachable()
        if why is not None:
            pytest.skip(f"real-CLI suite skipped: {why} (cache: {cache_root()})")
    return {name: install(cli) for name, cli in PINNED.items()}


@pytest.fixture
def jail() -> Iterator[Sandbox]:
    with sandbox() as box:
        yield box


@pytest.fixture
def root_jail() -> Iterator[Sandbox]:
    with sandbox(as_root=True) as box:
        yield box
