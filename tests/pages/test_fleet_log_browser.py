"""A bot's log tail on its fleet page, in Chromium: the daemon's JSON lines read as a time, a
level, what happened and the other fields (they were shown as raw JSON), hostile text as text,
and a line that is not JSON as it is; at a phone's width, no sideways scroll."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, expect

from tests.support.boardtest import World, eventually
from tests.support.browser_support import axe_findings, no_sideways_scroll, signed_in_tab
from tests.support.fleettest import keeper_with_bots

LINES: list[dict[str, Any]] = [
    {"at": "2026-12-05T11:54:20.123Z", "bot": "fb", "event": "started", "version": "0.9.0", "cursor": 0},
    {
        "at": "2026-12-05T11:54:21.004Z",
        "bot": "fb",
        "event": "wake",
        "trigger_ids": [41, 42],
        "reason": "mention",
    },
    {
        "at": "2026-12-05T11:54:31.560Z",
        "bot": "fb",
        "event": "turn_ended",
        "outcome": "ok",
        "latency_ms": 10512,
    },
    {
        "at": "2026-12-05T11:55:02.000Z",
        "bot": "fb",
        "level": "error",
        "event": "board_retry",
        "call": "<img src=x onerror=alert(1)>",
        "code": "UNAVAILABLE",
        "delay_s": 2.5,
    },
]


async def test_the_log_tail_reads_as_time_level_message_and_fields(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    box1 = await keeper_with_bots(world, "box1", "fb")
    plain = "Traceback (most recent call last): <b>not bold</b>\u202e)"
    tail = [json.dumps(line) for line in LINES] + [plain]
    await box1.client.fleet_report(
        {"bots": [{"handle": "fb", "state": "running", "pid": 11, "log_tail": tail}]}
    )

    tab = await signed_in_tab(chromium, world, tmp_path)
    await tab.page.goto(world.board.url + "/fleet/bots/fb")
    log = tab.page.locator("#log-tail")
    await expect(log.locator(".log-message")).to_have_text(["started", "wake", "turn_ended", "board_retry"])
    await expect(log.locator(".log-at").first).to_have_text("11:54:20")
    await expect(log.locator(".log-at").first).to_have_attribute("title", "2026-12-05T11:54:20.123Z")
    await expect(log.locator(".log-level")).to_have_text(["error"])
    await expect(log.locator(".log-level")).to_have_class("log-level tone-bad")
    text = await log.inner_text()
    assert "11:54:21 wake trigger_ids=[41,42] reason=mention\n" in text, text
    assert '"bot"' not in text and "bot=" not in text  # its own handle, said by the page already
    hostile = 'error board_retry call="<img src=x onerror=alert(1)>" code=UNAVAILABLE delay_s=2.5'
    assert hostile in text, text  # text, not HTML
    # A line that is not JSON as it is, but for a bidirectional override, which would reverse it.
    assert text.rstrip().endswith("Traceback (most recent call last): <b>not bold</b>\\u202e)"), text
    assert await log.locator("img, b").count() == 0
    await tab.shot("fleet-bot-log-tail")
    assert await axe_findings(tab.page) == []

    await tab.page.goto(world.board.url + "/fleet")
    await expect(tab.page.locator("#bot-fb .log-tail .log-message").last).to_have_text("board_retry")

    phone = await signed_in_tab(chromium, world, tmp_path, width=390, height=844)
    await phone.page.goto(world.board.url + "/fleet/bots/fb")
    await expect(phone.page.locator("#log-tail .log-message")).to_have_count(4)
    await phone.shot("fleet-bot-log-tail-phone")
    await no_sideways_scroll(phone)
    # On the card the tail is a box that scrolls (the lines wrap past its height on a phone):
    # it takes the keyboard's focus, so it scrolls without a mouse too.
    await phone.page.goto(world.board.url + "/fleet")
    card_log = phone.page.locator("#bot-fb .log-tail")
    overflows = "box => box.scrollHeight > box.clientHeight"
    await eventually(lambda: card_log.evaluate(overflows), "the card's log tail laid out past its height")
    await card_log.focus()
    await phone.shot("fleet-card-log-tail-phone")
    assert await axe_findings(phone.page) == []
    # Scrolled up to older lines, the box stays there through the next render, and keeps the
    # focus; it used to go back to the newest lines. (Its lines stack from the end: 0 is there.)
    up = await card_log.evaluate("box => (box.scrollTop = box.clientHeight - box.scrollHeight)")
    assert up < 0, up
    later = {**LINES[1], "at": "2026-12-05T11:56:00.000Z", "trigger_ids": [43]}
    await box1.client.fleet_report(
        {"bots": [{"handle": "fb", "state": "running", "pid": 11, "log_tail": [*tail, json.dumps(later)]}]}
    )
    await expect(card_log.locator(".log-at").last).to_have_text("11:56:00")
    assert await card_log.evaluate("box => box.scrollTop") == up
    await expect(card_log).to_be_focused()
    await phone.shot("fleet-card-log-tail-scrolled-up")
    assert tab.errors == [] and phone.errors == []
