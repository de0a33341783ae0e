"""Background duties of a running board, started and stopped with the app."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from aiohttp import web

from . import logs
from .api.keys import CONTEXT, OUTBOX
from .outbox.dispatch import Dispatcher
from .sweep import sweep

log = logging.getLogger(__name__)

#: Seconds a send in flight may take to finish when the board stops, before it is cancelled.
STOP_GRACE = 2.0


async def _sweep_forever(app: web.Application) -> None:
    ctx = app[CONTEXT]
    while True:
        await asyncio.sleep(ctx.settings.sweep_every)
        try:
            async with ctx.db.duty("sweep") as mine:  # one board process at a time sweeps
                if not mine:
                    continue
                report = await sweep(ctx)  # cancelled, and the block left, if the duty's lock is lost
                if report.nudged or report.released or report.flagged:
                    log.info("sweep: %s", report.as_dict())
        except Exception:
            logs.failed(log, "sweep failed; trying again next time")


async def housekeeping(app: web.Application) -> AsyncIterator[None]:
    """The sweep runs while the board does; at the stop, what is gathered in memory is written.

    Registered after the database, so this clean-up runs before the database closes.
    """
    task = asyncio.create_task(_sweep_forever(app), name="board-sweep")
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    try:
        await app[CONTEXT].read_counts.flush()
    except Exception:
        log.exception("could not write knowledge read counts at the stop")


async def outbox(app: web.Application) -> AsyncIterator[None]:
    """The outbox's dispatcher runs while the board does, and stops before the database closes."""
    dispatcher = Dispatcher(app[CONTEXT])
    app[OUTBOX] = dispatcher
    task = asyncio.create_task(dispatcher.run(), name="board-outbox")
    yield
    dispatcher.stop()  # not a cancel alone: a wake racing a cancel may swallow it (wait_for, 3.11)
    done, _ = await asyncio.wait([task], timeout=STOP_GRACE)
    if not done:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
