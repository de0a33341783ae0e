"""One person's first day, through the doors a person uses: install.sh, the printed link,
the pages in Chromium, the README's command lines, and uninstall.

Everything is real (the installer's fresh virtual environment, the board it
starts with its routines runner, the keeper and the bot daemons it starts)
except the models: the strict fake claude and opencode run
``tests/fakes/models/journey.py`` as their model, and a ``command`` harness bot
runs the same program as its command. A screenshot of every step is saved in
the test's folder (``shots/``), numbered, beside what the shell commands printed;
the test prints how long the day took to reach each step.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from playwright.async_api import Browser, Page
from playwright.async_api import Error as PlaywrightError

from tests.keeper.keeperrun import FAST
from tests.launcher.fakeharness import FAKES_BIN, SANDBOX_ENV, Fake
from tests.support.browser_support import Tab
from tests.support.install_support import api, belonging_to, fleet_bots, left_behind, machine, run, sign_in
from tests.support.processes import ROOT, free_port

# One install into a fresh virtual environment, then a day's work in a few minutes.
pytestmark = pytest.mark.timeout(420)

MODEL = ROOT / "tests" / "fakes" / "models" / "journey.py"
T = TypeVar("T")


async def until(check: Callable[[], Awaitable[T | None]], what: str, timeout: float = 60) -> T:
    """The first truthy answer of check, polled; fails naming what never happened."""
    deadline = time.monotonic() + timeout
    while not (value := await check()):
        assert time.monotonic() < deadline, f"never happened: {what}"
        await asyncio.sleep(0.2)
    return value


async def submit(page: Page, form: str, **fields: str) -> None:
    """Fill a form's fields by name and submit it, waiting for the page it leads to."""
    for name, value in fields.items():
        field = page.locator(f"{form} [name={name}]")
        if await field.evaluate("e => e.tagName") == "SELECT":
            await field.select_option(value)
        else:
            await field.fill(value)
    async with page.expect_navigation():
        await page.locator(f"{form} [type=submit]").first.click()
    assert await page.locator(".card.error").count() == 0, await page.locator("main").inner_text()


async def make_profile(page: Page, url: str, **fields: str) -> None:
    """A new profile from /fleet/profiles; saving it opens the profile's own page."""
    await page.goto(f"{url}/fleet/profiles")
    await submit(page, "#profile-form", **fields)
    assert page.url == f"{url}/fleet/profiles/{fields['name']}", page.url


async def mention_answered_live(tab: Tab, url: str, body: str, author: str) -> int:
    """Post body as a new root from the channel page; the bot's reply must arrive without a reload."""
    page = tab.page
    await page.goto(f"{url}/c/lobby?workspace=shop")
    await submit(page, "form.compose", body=body)
    thread = int(re.search(r"thread=(\d+)", page.url)[1])  # type: ignore[index]
    await page.evaluate("window.journeyMarker = 1")  # gone if the page loads again
    reply = page.locator("#thread-messages article", has_text=f"{author} here:")
    await reply.wait_for(timeout=45_000)
    assert await page.evaluate("window.journeyMarker") == 1, "the reply came with a reload"
    return thread


async def test_one_persons_first_day(tmp_path: Path, chromium: Browser) -> None:
    home = tmp_path / "home"
    home.mkdir()
    shots = tmp_path / "shots"
    shots.mkdir()
    port = free_port()
    assert port != 8080
    url = f"http://127.0.0.1:{port}"
    fake = Fake(tmp_path / "fake")
    fake.script({"do": "act", "program": str(MODEL)})
    bin_dir = home / ".local" / "bin"
    env = machine(
        home,
        port,
        BOARD_SOURCE=str(ROOT),
        PATH=os.pathsep.join([str(bin_dir), str(FAKES_BIN), os.environ["PATH"]]),
        FAKE_HARNESS_DIR=str(fake.root),
        **SANDBOX_ENV,
        **FAST,
    )

    def shell(line: str, **extra: str) -> subprocess.CompletedProcess[str]:
        """A line as a person types it in a shell, from the checkout (the README's paths are its)."""
        return subprocess.run(
            ["bash", "-c", line], cwd=ROOT, env={**env, **extra}, capture_output=True, text=True, timeout=60
        )

    began = time.monotonic()
    steps: list[str] = []

    async def shot(step: str) -> None:
        """The page as the person sees it at this step, numbered, with the time it took to get here."""
        steps.append(step)
        print(f"{time.monotonic() - began:4.0f} s  {len(steps):02d}-{step}")
        await tab.shot(f"{len(steps):02d}-{step}")

    def said(step: str, output: str) -> None:
        """What a command printed, saved beside the screenshots."""
        steps.append(step)
        (shots / f"{len(steps):02d}-{step}.txt").write_text(output)

    try:
        # Install on a port of its own; the printed link signs the person in.
        installed = run(env)
        assert installed.returncode == 0, installed.stdout + installed.stderr
        link = re.search(rf"sign in with this one-time link: ({url}/login\?token=bl_\S+)", installed.stdout)
        assert link, installed.stdout
        tab = await sign_in(chromium, link[1], shots)
        page = tab.page
        await shot("signed-in")

        # A workspace whose bots' knowledge writes wait for review, and an invite for an admin bot.
        await page.goto(f"{url}/workspaces")
        await submit(page, "#new-workspace", slug="shop", name="The shop")
        await submit(page, "form[action='/workspaces/shop/settings']", review="bots")
        await submit(page, "form[action='/workspaces/admin/invite']")
        invite_line = (await page.locator("#invite-line").inner_text()).replace("my-bot", "care-bot")
        await shot("workspace-and-invite")
        joined = shell(invite_line)
        assert joined.returncode == 0, joined.stderr
        assert json.loads(joined.stdout)["agent"]["handle"] == "care-bot", joined.stdout
        token = shell("board admin token alice").stdout.splitlines()[-1]
        assert token.startswith("bh_")

        # Three profiles made on the page, and the keeper runs a bot of each, assigned on /fleet.
        template = f"python3 {shlex.quote(str(MODEL))} --answer {{prompt}}"
        await make_profile(page, url, name="shop-claude", workspace="shop", harness="claude")
        await make_profile(page, url, name="shop-opencode", workspace="shop", harness="opencode")
        await make_profile(
            page, url, name="shop-command", workspace="shop", harness="command", command_template=template
        )
        await shot("profile-made")
        await page.goto(f"{url}/fleet")
        bots = {"jclaude": "shop-claude", "jopen": "shop-opencode", "jcmd": "shop-command"}
        for handle, profile in bots.items():
            await submit(page, "#add-bot", handle=handle, profile=profile)
        fleet_bots(url, token, "running", set(bots))
        await page.reload()
        await shot("fleet-three-bots")

        # Each answers a mention posted from the page, live.
        for handle in bots:
            await mention_answered_live(tab, url, f"@{handle} hello, are you there?", handle)
            await shot(f"answered-{handle}")

        # One hands a thread to another; the thread shows the claims and the wakes with their cost.
        thread = await mention_answered_live(tab, url, "@jclaude please hand this thread to jopen", "jopen")

        async def both_woken() -> tuple[str, str] | None:
            """The thread page, once jopen closed the claim and its wake is recorded (after its turn)."""
            await page.goto(f"{url}/t/{thread}")
            history = await page.locator("#claim-history").inner_text()
            wakes = await page.locator("table.wakes").inner_text() if "done" in history else ""
            return (history, wakes) if re.search(r"^jopen\s+opencode\s", wakes, re.M) else None

        history, wakes = await until(both_woken, "the handoff's claims and both wakes on the thread page")
        assert re.search(r"claim → jclaude by jclaude .*: looking", history), history
        assert re.search(r"handoff → jopen by jclaude .*: jopen knows this part", history), history
        assert re.search(r"done → jopen by jopen .*: finished by jopen", history), history
        # Each wake shows the cost its record holds (the fakes price their usage); the total adds them.
        row = r"^(jclaude|jopen)\s+(?:claude|opencode)\s+ok\t.*\t\$(\d+\.\d{4})$"  # harness under the handle
        shown = dict(re.findall(row, wakes, re.M))
        recorded = 0.0
        for handle in ("jclaude", "jopen"):
            records = api(url, token, "GET", f"/api/wakes?bot={handle}")["wakes"]
            costs = {f"{w['cost_usd']:.4f}": w["cost_usd"] for w in records if w["cost_usd"]}
            assert shown[handle] in costs, (handle, shown[handle], sorted(costs), wakes)
            recorded += costs[shown[handle]]
        assert re.search(rf"^total\t\${recorded:.4f}$", wakes, re.M), wakes
        await shot("handoff-thread")

        # A decision the reconciler will fold into the knowledge base.
        asked = shell(
            "board post 'Which database do we run?' --channel lobby --workspace shop --tag database",
            BOARD_TOKEN=token,
        )
        assert asked.returncode == 0, asked.stderr
        question = json.loads(asked.stdout)["id"]
        await page.goto(f"{url}/t/{question}")
        await submit(page, "form.compose", body="We use PostgreSQL 16, agreed.")

        # The shipped routines, imported as the README says, approved and run on /routines.
        token_file = home / ".board" / "token"
        token_file.parent.mkdir()
        token_file.write_text(token + "\n")
        token_file.chmod(0o600)
        readme = (ROOT / "README.md").read_text()
        line = next(x for x in readme.splitlines() if "board routines import --workspace" in x)
        imported = shell(line.replace("myproject", "shop").replace("box3-wordsnap", "jclaude"))
        assert imported.returncode == 0, imported.stdout + imported.stderr
        await page.goto(f"{url}/routines")
        await shot("routines-imported")
        await submit(page, "#pending-knowledge-reconciler-1 form[action$='/approve']", note="go ahead")
        # Its quiet hours (08:00-20:00 UTC) hold the schedule's runs, not a Run now.
        run_now = "#routine-knowledge-reconciler form[action$='/run-now']"
        await submit(page, run_now)
        # Pressed again once the page shows the first run started (before, that run is the answer).
        await page.locator("#routine-knowledge-reconciler tr.run:not(.run-scheduled)").wait_for()
        await submit(page, run_now)

        async def two_ended() -> list[dict[str, Any]] | None:
            runs = api(url, token, "GET", "/api/routines/knowledge-reconciler/runs")["runs"]
            ended = [r for r in runs if r["state"] not in ("scheduled", "running")]
            return ended if len(ended) >= 2 else None

        second, first = await until(two_ended, "two runs of the reconciler to end", timeout=120)
        assert first["state"] == second["state"] == "done", (first, second)
        assert "decisions/database.md revision 1: settled" in first["outcome"], first
        assert second["outcome"].startswith("No new messages; nothing changed."), second
        await page.reload()
        await shot("two-runs")

        # The reconciler's document waits for review; the person approves it.
        await page.goto(f"{url}/kb/review")
        proposal = page.locator(".review-group[data-path='decisions/database.md']")
        assert "PostgreSQL 16" in await proposal.inner_text()
        await shot("review-queue")
        await submit(
            page, ".review-group[data-path='decisions/database.md'] .proposal form:has(button.primary)"
        )
        document = api(url, token, "GET", "/api/knowledge/decisions/database.md?workspace=shop")
        assert document["status"] == "settled", document
        await page.goto(f"{url}/kb/shop/decisions/database.md")
        await shot("document-settled")

        # The doctor finds nothing wrong; a bot broken on purpose is named on /fleet and by the doctor.
        doctor = shell("board doctor")
        said("doctor-clean", doctor.stdout + doctor.stderr)
        assert doctor.returncode == 0 and "FAIL" not in doctor.stdout, doctor.stdout + doctor.stderr
        missing = home / "no-such-repo"
        await make_profile(
            page, url, name="shop-broken", workspace="shop", harness="claude", repo=str(missing)
        )
        await page.goto(f"{url}/fleet")
        await submit(page, "#add-bot", handle="jbroken", profile="shop-broken")
        why = page.locator("#bot-jbroken .why")
        await why.wait_for(timeout=30_000)
        assert await why.inner_text() == f"bot: repo {missing} is not a directory", await why.inner_text()
        await shot("fleet-broken-bot")
        doctor = shell("board doctor")
        said("doctor-broken-bot", doctor.stdout + doctor.stderr)
        failing = [x for x in doctor.stdout.splitlines() if x.startswith("FAIL")]
        assert doctor.returncode == 1 and len(failing) == 1, doctor.stdout + doctor.stderr
        assert "jbroken" in failing[0] and str(missing) in failing[0], failing
        assert tab.errors == [], tab.errors
    finally:
        gone = run(env, "uninstall", "--purge")
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert belonging_to(home) == []
    assert left_behind(home) == []
    with pytest.raises(PlaywrightError, match="ERR_CONNECTION_REFUSED"):
        await page.goto(url)
    await shot("uninstalled")
