"""Headless Chromium from Debian's package, driven by Playwright, against a real board.

Playwright's own browser download cannot run here, so the browser is the
system's ``/usr/bin/chromium`` (``.ci/run`` installs it when missing).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Dialog, Page, async_playwright

from tests.support.boardtest import World
from tests.support.pages_support import login_link

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@dataclass
class Tab:
    """A browser tab with what it saw: dialogs opened and errors thrown by scripts."""

    page: Page
    out: Path
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)  # what the page logged: a CSP refusal shows here

    async def shot(self, name: str) -> Path:
        path = self.out / f"{name}.png"
        await self.page.screenshot(path=str(path), full_page=True)
        return path


@pytest.fixture
async def chromium() -> AsyncIterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium")
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        await browser.close()


async def new_tab(browser: Browser, out: Path, width: int = 1280, height: int = 800) -> Tab:
    context = await browser.new_context(viewport={"width": width, "height": height})
    page = await context.new_page()
    tab = Tab(page, out)

    async def dismiss(dialog: Dialog) -> None:
        tab.dialogs.append(dialog.message)
        await dialog.dismiss()

    page.on("dialog", dismiss)
    page.on("pageerror", lambda exc: tab.errors.append(str(exc)))
    page.on("console", lambda message: tab.console.append(message.text))
    page.set_default_timeout(15_000)
    return tab


async def signed_in_tab(
    browser: Browser, world: World, out: Path, width: int = 1280, height: int = 800
) -> Tab:
    """A tab signed in as alice with a one-time link, on the board page it opens."""
    tab = await new_tab(browser, out, width=width, height=height)
    return await use_login_link(tab, world.board.url + await login_link(world.board, "alice"))


async def use_login_link(tab: Tab, link: str) -> Tab:
    """tab, having opened the one-time login link and used it: signed in, on the board page it
    opens. For a tab whose context or page a test set up first (a clock, permissions, a size)."""
    await tab.page.goto(link)
    await tab.page.click("#use-link")
    await tab.page.wait_for_url("**/c/**")
    return tab


#: axe-core as the axe-playwright-python package ships it (the test extra pins it).
AXE = resources.files("axe_playwright_python").joinpath("axe.min.js")


async def axe_findings(page: Page, impacts: tuple[str, ...] = ("serious", "critical")) -> list[str]:
    """What axe-core finds on the page at these impacts, one line per rule with where it hit.

    Evaluated through the DevTools protocol rather than added as a <script>, so the page's
    strict CSP (nothing inline) stays as it is served.
    """
    if not await page.evaluate("typeof window.axe !== 'undefined'"):
        await page.evaluate(AXE.read_text(encoding="utf-8"))
    found: list[dict[str, Any]] = await page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
    )
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes'][:4]]}"
        for v in found
        if v["impact"] in impacts
    ]


async def no_sideways_scroll(tab: Tab) -> None:
    """Nothing wider than the screen, and no command line cut off inside its box."""
    page_width = await tab.page.evaluate("document.documentElement.scrollWidth")
    assert page_width <= await tab.page.evaluate("window.innerWidth"), page_width
    cut = await tab.page.evaluate(
        "Array.from(document.querySelectorAll('pre, code')).filter(e => e.offsetParent !== null"
        " && e.scrollWidth > e.clientWidth + 1).map(e => e.id || e.textContent.slice(0, 40))"
    )
    assert cut == []
