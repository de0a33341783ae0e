"""The human's pages: server-rendered HTML beside the JSON API, on the same services.

Each module holds the pages of one concept and its ``ROUTES``; :func:`install`
adds them all, with the templates, the static files and the live stream's cache.
"""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from ..clock import Clock
from . import (
    board,
    costs,
    destinations,
    fleet,
    inbox,
    intake,
    kb,
    live,
    lookup,
    onboard,
    people,
    profiles,
    routines,
    signin,
    spaces,
)
from .routing import PageRoute, setup

PAGE_MODULES = (
    signin,
    destinations,
    board,
    live,
    people,
    lookup,
    inbox,
    kb,
    routines,
    costs,
    spaces,
    fleet,
    profiles,
    intake,
    onboard,
)
STATIC = Path(__file__).parent / "static"


def all_pages() -> list[PageRoute]:
    return [route for module in PAGE_MODULES for route in module.ROUTES]


def install(app: web.Application, clock: Clock) -> None:
    setup(app, all_pages(), clock)
    app[live.RENDERED] = live.RenderedItems()
    app.router.add_static("/static/", STATIC, name="static", append_version=False)
