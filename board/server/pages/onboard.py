"""How to connect a harness by hand: the paragraph to paste and the `bot run` line, for each harness."""

from __future__ import annotations

from aiohttp import web

from ...launcher.harnesses import ADAPTERS
from .routing import PageCall, PageRoute


async def onboard(call: PageCall) -> web.StreamResponse:
    board = f"{call.request.scheme}://{call.request.host}"
    return call.render("onboard.html", board=board, harnesses=sorted(ADAPTERS))


ROUTES = [PageRoute("GET", "/onboard", onboard, "Connect a harness: the paragraph and the bot run line.")]
