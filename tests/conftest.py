"""Fixtures shared by every test; the helpers behind them live in boardtest.py."""

import pytest
from boardtest import (  # noqa: F401 - fixtures are found by name
    _no_outbound_network,
    board,
    clock,
    clocked_board,
    clocked_world,
    pg_template,
    store,
    world,
)
from browser_support import chromium  # noqa: F401 - the browser tests' fixture
from pgcluster import pg_cluster  # noqa: F401 - the PostgreSQL tests' cluster
from processes import use_suite_python


def pytest_configure(config: pytest.Config) -> None:
    use_suite_python()
