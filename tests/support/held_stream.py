"""The fleet page's live stream held in the browser, to replay a render that raced a click.

A render of ``/fleet/events`` can leave the board before an order is recorded and reach the
tab after the person clicked. Waiting for that by chance makes a flaky test; holding the
stream makes it happen every time: the tab's stream connections wait in the test's hands,
the test replays what the page drew before the click as the render that raced it, then lets
the tab connect to the board's stream again.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from playwright.async_api import Page, Route, expect


class HeldStream:
    """Every ``/fleet/events`` connection the page opens waits until replayed or let go."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.holding = True
        self.routes: asyncio.Queue[Route] = asyncio.Queue()
        self.replays = 0

    async def take(self, route: Route) -> None:
        """The page's route for its stream: held, or sent on to the board."""
        if self.holding:
            self.routes.put_nowait(route)
        else:
            await route.continue_()

    async def drawn(self) -> dict[str, Any]:
        """What the page shows now, in the shape of one of the stream's renders."""
        return dict(
            await self.page.evaluate(
                "({html: document.getElementById('machines').innerHTML,"
                " orders: document.getElementById('last-orders').innerHTML})"
            )
        )

    async def replay(self, render: dict[str, Any]) -> None:
        """Answer the held connection with ``render`` and end it; return once it is drawn.

        The tab opens a new connection a moment later, and it is held too until ``let_go``.
        """
        self.replays += 1
        drawn = f'<i class="replayed" data-replay="{self.replays}" hidden></i>'  # in no real render
        await self.send(render | {"html": render["html"] + drawn})
        await expect(self.page.locator(f'i.replayed[data-replay="{self.replays}"]')).to_have_count(1)

    async def send(self, render: dict[str, Any]) -> None:
        """Answer the held connection with ``render`` and end it, drawn or not."""
        route = await asyncio.wait_for(self.routes.get(), 30)
        event = json.dumps({"html": render["html"], "orders": render["orders"]})
        await route.fulfill(
            status=200,
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"},
            body=f"retry: 100\nevent: fleet\ndata: {event}\n\n",
        )

    async def reconnected(self) -> None:
        """Return once the tab has opened its next connection: it has read all the last one sent."""
        async with asyncio.timeout(30):
            while self.routes.empty():
                await asyncio.sleep(0.02)

    async def let_go(self) -> None:
        """The held connections, and every one after, reach the board."""
        self.holding = False
        while not self.routes.empty():
            await self.routes.get_nowait().continue_()


async def hold_fleet_stream(page: Page, url: str) -> HeldStream:
    """Open url (/fleet) in page, its stream connections held from this load on."""
    held = HeldStream(page)
    await page.route("**/fleet/events", held.take)
    await page.goto(url)
    return held
