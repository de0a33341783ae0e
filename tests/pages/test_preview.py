"""The composer's helpers on the API: the preview (POST /api/preview) and the mention lookup
(GET /api/agents?prefix=).

The preview is the board's own renderer on a body a human is writing: only a human asks it, a
body over the message limit is LIMIT_EXCEEDED, hostile Markdown comes back inert, it writes
nothing, and it is under the per-token write limit like any POST. The mention lookup is the
roster narrowed to handles that start with what was typed, within the workspace's scope.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from board.server.services.posting import MAX_BODY
from tests.support.boardtest import World, snapshot, start_board, stop_board
from tests.support.pages_support import pages_as, sign_in
from tests.support.refusals import refused

MIXED = """A table, a link, code and a mention for @pb:

| col | other |
| --- | --- |
| *a* | `b` |

See [the docs](https://example.com/docs).

```python
print("<b>hi</b>")
```
"""


class Tags(HTMLParser):
    """The elements a piece of HTML really holds, with their attributes (text is not a tag)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, tuple[tuple[str, str | None], ...]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen.append((tag, tuple(attrs)))


async def test_the_preview_is_the_body_as_the_posted_message_renders_it(world: World) -> None:
    before = snapshot(world.board.db_path)
    preview = await world.human.request("POST", "/api/preview", json={"body": MIXED})
    assert snapshot(world.board.db_path) == before, "a preview wrote something"
    html = preview["html"]
    assert (
        '<table tabindex="0">' in html
        and '<a href="https://example.com/docs" rel="noopener nofollow">' in html
    )
    assert '<code class="language-python">print(&quot;&lt;b&gt;hi&lt;/b&gt;&quot;)' in html
    assert "@pb" in html
    posted = await world.human.post(MIXED, channel="lobby", workspace="proj")
    [(status, page)] = await pages_as(world.board, "alice", f"/t/{posted['id']}")
    assert status == 200
    body = re.search(rf'id="m{posted["id"]}".*?<div class="body">(.*?)</div>\n', page, re.S)
    assert body is not None
    assert body.group(1) == html


async def test_only_a_human_previews_and_a_refusal_writes_nothing(world: World) -> None:
    for caller in (world.bot, world.admin_bot, world.other):
        await refused(
            caller.request("POST", "/api/preview", json={"body": "hi"}),
            "FORBIDDEN",
            message="Only a human previews messages",
            unchanged=world.board,
        )
    await refused(
        world.anon.request("POST", "/api/preview", json={"body": "hi"}),
        "UNAUTHENTICATED",
        unchanged=world.board,
    )


async def test_a_page_session_previews_with_its_csrf_token_only(world: World) -> None:
    alice = await sign_in(world.board)
    url = world.board.url + "/api/preview"
    try:
        for headers in ({}, {"X-CSRF-Token": "wrong"}):
            async with alice.http.post(url, json={"body": "*hi*"}, headers=headers) as resp:
                assert resp.status == 403 and (await resp.json())["error"]["code"] == "FORBIDDEN"
        async with alice.http.post(url, json={"body": "*hi*"}, headers={"X-CSRF-Token": alice.csrf}) as resp:
            assert resp.status == 200 and await resp.json() == {"html": "<p><em>hi</em></p>\n"}
    finally:
        await alice.close()


async def test_a_body_over_the_message_limit_is_refused_as_too_large(world: World) -> None:
    fits = await world.human.request("POST", "/api/preview", json={"body": "x" * MAX_BODY})
    assert fits["html"] == f"<p>{'x' * MAX_BODY}</p>\n"
    await refused(
        world.human.request("POST", "/api/preview", json={"body": "x" * (MAX_BODY + 1)}),
        "LIMIT_EXCEEDED",
        message="body",
        unchanged=world.board,
    )
    await refused(world.human.request("POST", "/api/preview", json={}), "INVALID_ARGUMENT")
    await refused(
        world.human.request("POST", "/api/preview", json={"body": "hi", "channel": "lobby"}),
        "INVALID_ARGUMENT",
    )


async def test_hostile_markdown_comes_back_inert(world: World) -> None:
    hostile = "\n\n".join(
        [
            "<script>alert(1)</script>",
            '<img src=x onerror="alert(2)">',
            "[click](javascript:alert(3))",
            "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCg0KTwvc2NyaXB0Pg==)",
            "![pixel](https://tracker.example/p.png)",
            '<a href="https://evil.example" onclick="alert(5)">x</a>',
        ]
    )
    html = (await world.human.request("POST", "/api/preview", json={"body": hostile}))["html"]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    tags = Tags()
    tags.feed(html)
    assert {tag for tag, _ in tags.seen} == {"p", "a"}, html  # every <script>, <img>, <a onclick> is text
    assert (
        tags.seen.count(("a", (("href", "https://tracker.example/p.png"), ("rel", "noopener nofollow")))) == 1
    )
    assert len(tags.seen) == 7  # six paragraphs and the one link markdown made
    assert "[click](javascript:alert(3))" in html  # the refused link stays as the text it was
    assert (
        '!<a href="https://tracker.example/p.png" rel="noopener nofollow">pixel</a>' in html
    )  # no image loads


async def test_previews_are_under_the_write_limit(tmp_path: Path) -> None:
    board = await start_board(tmp_path, write_rate=0.01, write_burst=2)
    try:
        human = await board.human("alice")
        for _ in range(2):
            await human.request("POST", "/api/preview", json={"body": "hi"})
        await refused(human.request("POST", "/api/preview", json={"body": "hi"}), "RATE_LIMITED")
    finally:
        await stop_board(board)


async def test_mention_lookup_is_the_workspace_roster_by_prefix(world: World) -> None:
    async def handles(caller_prefix: str, workspace: str = "proj") -> list[str]:
        page = await world.human.request(
            "GET", "/api/agents", params={"workspace": workspace, "prefix": caller_prefix, "limit": 8}
        )
        return [a["handle"] for a in page["agents"]]

    assert await handles("p") == ["pb", "pb2"]
    assert await handles("PB2") == ["pb2"]  # any case
    assert await handles("al") == ["alice"]  # humans are in every workspace's roster
    assert await handles("o") == []  # ob lives in the other workspace
    assert await handles("o", workspace="other") == ["ob"]
    assert await handles("p_") == []  # '_' is a character of handles, not a wildcard
    await refused(
        world.other.request("GET", "/api/agents", params={"workspace": "proj", "prefix": "p"}), "NOT_FOUND"
    )
    await refused(
        world.human.request("GET", "/api/agents", params={"workspace": "proj", "prefix": "@p"}),
        "INVALID_ARGUMENT",
    )
