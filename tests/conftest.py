"""Fixtures shared by every test; they live in the tests/support modules loaded as plugins here."""

import pytest

# Before anything imports them: helpers' asserts report their values as the tests' own do.
pytest.register_assert_rewrite("tests.support")

from tests.support.processes import use_suite_python  # noqa: E402 - after the rewrite is registered

pytest_plugins = [
    "tests.support.boardtest",  # a board on each store, its clock, a world of principals on it
    "tests.support.browser_support",  # the browser tests' Chromium
    "tests.support.pgcluster",  # the PostgreSQL tests' cluster
]


def pytest_configure(config: pytest.Config) -> None:
    use_suite_python()
