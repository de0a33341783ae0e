"""Every check of ``board doctor``, in the order a human reads them."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from .. import __version__
from ..server.settings import load, origins
from ..server.store.writer import StoreError
from . import fleet, host
from .check import MIN_FREE_MB, Check


def diagnose(
    env: Mapping[str, str], overrides: Mapping[str, Any], min_free_mb: int = MIN_FREE_MB
) -> list[Check]:
    try:
        settings = load(overrides, env)
        given = origins(overrides, env)
    except ValueError as exc:
        return [
            Check(
                "config",
                "fail",
                str(exc),
                "fix that setting (the file, or unset the variable), then run board doctor again",
            )
        ]
    found = [host.board(settings)]
    database, readable = host.database(settings)
    found += database
    found.append(host.config(settings, given, env))
    found += host.files(settings, env)
    found.append(host.disk(settings, min_free_mb))
    if not readable:
        found.append(
            Check("fleet", "skip", "keepers, bots, clocks and the runner: the database does not read")
        )
        return found
    try:
        found += asyncio.run(fleet.checks(settings, __version__))
    except StoreError as exc:
        found.append(Check("fleet", "fail", f"cannot read the database: {exc}", host.restore_fix(settings)))
    return found
