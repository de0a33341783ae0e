"""Negative evals: deleted, foreign, rejected, redacted and expired text stays where it belongs.

Each test first shows the text where it is meant to be seen, so a check that
could never fail (a typo in a marker, an empty list) fails here instead.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from board.client import BoardAPIError, BoardClient
from board.server.api.discovery import canonical
from board.server.api.knowledge import ROUTES
from board.server.clock import ManualClock
from tests.support.kb_support import World

DELETED, FOREIGN, REJECTED, REDACTED, EXPIRED = (
    "velociraptor",
    "quetzalcoatl",
    "brontosaurus",
    "archaeopteryx",
    "ankylosaurus",
)
MARKS = (DELETED, FOREIGN, REJECTED, REDACTED, EXPIRED)


async def surfaces(client: BoardClient, *, history: bool = True, **ws: Any) -> str:
    """Everything a caller can get from lists, search, pack and reads of the documents it can list."""
    seen: list[Any] = []
    paths = []
    after = ""
    while True:
        page = await client.knowledge(after=after, limit=500, **ws)
        seen.append(page)
        paths += [d["path"] for d in page["documents"]]
        if not page["has_more"]:
            break
        after = page["next_since"]
    packs = []
    for word in MARKS:
        seen.append(await client.knowledge(q=word, **ws))
        packs.append(await client.pack(q=word, budget_tokens=20_000, **ws))
    packs.append(await client.pack(q=" ".join(MARKS), budget_tokens=20_000, **ws))
    seen += [{k: v for k, v in pack.items() if k != "query"} for pack in packs]  # not the words we sent
    for path in paths:
        seen.append(await client.document(path, **ws))
        if history:
            seen.append(await client.document_history(path, limit=500, **ws))
    return json.dumps(seen)


async def populate(world: World, clock: ManualClock) -> None:
    bot, human = world.bot, world.human
    await bot.put_document("plain.md", "# Plain\n\nnothing to see\n", 0, "r")
    await bot.put_document("dropped.md", f"# Dropped\n\n{DELETED} approach\n", 0, "r")
    await world.other.put_document("theirs.md", f"# Theirs\n\n{FOREIGN} notes\n", 0, "r")
    await bot.put_document("secret.md", f"# Secret\n\n{REDACTED} key\n", 0, "r")
    await bot.put_document(
        "promo.md", f"# Promo\n\n{EXPIRED} sale\n", 0, "r", valid_to="2026-12-01T00:00:00Z"
    )
    await human.patch_workspace("proj", review="bots")
    await bot.put_document("plain.md", f"# Plain\n\n{REJECTED} rewrite\n", 1, "proposal")
    await human.patch_workspace("proj", review="none")


async def test_each_marker_is_visible_where_it_belongs_before_it_goes(
    clocked_world: World, clock: ManualClock
) -> None:
    world = clocked_world
    await populate(world, clock)
    text = await surfaces(world.bot)
    for word in (DELETED, REJECTED, REDACTED, EXPIRED):
        assert word in text, word
    assert FOREIGN not in text and FOREIGN in await surfaces(world.other)
    assert FOREIGN in await surfaces(world.admin_bot, workspace="other")
    assert FOREIGN in await surfaces(world.human, workspace="other")


async def test_gone_text_stays_out_of_every_list_search_pack_and_read(
    clocked_world: World, clock: ManualClock
) -> None:
    world = clocked_world
    await populate(world, clock)
    await world.bot.delete_document("dropped.md", 1, "abandoned")
    await world.human.review_revision("plain.md", "reject", 2, workspace="proj")
    await world.human.redact("secret.md", 1, "leak", workspace="proj")
    clock.advance(3 * 86_400)

    callers: tuple[tuple[BoardClient, dict[str, Any]], ...] = (
        (world.bot, {}),
        (world.peer, {}),
        (world.admin_bot, {"workspace": "proj"}),
    )
    for client, ws in callers:
        current = await surfaces(client, history=False, **ws)
        for word in MARKS:
            if word != EXPIRED:
                assert word not in current, (word, ws)
        full = await surfaces(client, **ws)
        assert REDACTED not in full and FOREIGN not in full
        assert REJECTED in full and '"status": "rejected"' in full  # kept in history, marked
    human = await surfaces(world.human, history=False, workspace="proj")
    assert all(word not in human for word in (DELETED, FOREIGN, REJECTED, REDACTED))

    listed = {d["path"]: d for d in (await world.bot.knowledge())["documents"]}
    assert listed["promo.md"]["expired"] is True  # shown, and marked
    assert "promo.md" not in {d["path"] for d in (await world.bot.knowledge(expired="false"))["documents"]}
    pack = await world.bot.pack(q=EXPIRED, budget_tokens=20_000)
    assert pack["documents"] == [] and EXPIRED not in pack["text"]
    assert (await world.bot.knowledge(valid_at="2026-12-02T00:00:00Z", prefix="promo"))["documents"] == []
    # what the deleted document said stays in its own history, and only there
    history = await world.bot.document_history("dropped.md")
    assert DELETED in json.dumps(history)


async def test_no_knowledge_route_shows_another_workspace_anything(
    clocked_world: World, clock: ManualClock
) -> None:
    """Walk every knowledge route as a bot of another workspace: answers carry none of its text."""
    world = clocked_world
    await populate(world, clock)
    await world.bot.create_channel("dev", refs=[{"path": "secret.md", "mandatory": True}])
    thread = await world.bot.post(f"about the {REDACTED}", channel="dev")
    texts = []
    async with aiohttp.ClientSession() as http:
        for route in ROUTES:
            if route.method != "GET":
                continue
            for path in ("secret.md", "plain.md", "promo.md"):
                url = canonical(route.path).replace("{slug}", "proj").replace("{path}", path)
                for params in ({}, {"workspace": "proj"}, {"thread": str(thread["id"])}, {"channel": "dev"}):
                    status, body = await _get(http, world.board.url + url, params, world.other.token)
                    texts.append(body)
                    if "/workspaces/proj/" in url + "/" or params.get("workspace") == "proj":
                        # the answer is the one a workspace that does not exist gets
                        absent_url = url.replace("/workspaces/proj/", "/workspaces/nosuch/")
                        absent_params = {k: "nosuch" if v == "proj" else v for k, v in params.items()}
                        absent = await _get(
                            http, world.board.url + absent_url, absent_params, world.other.token
                        )
                        assert (status, body) == absent and status in (404, 422), (url, params, status, body)
    joined = "\n".join(texts)
    assert all(word not in joined for word in (DELETED, REJECTED, REDACTED, EXPIRED, "secret.md"))
    try:
        await world.other.document("secret.md", workspace="proj")
    except BoardAPIError as exc:
        missing = await _error(world.other, "never-was.md")
        assert (exc.status, exc.code, exc.message) == missing  # the same shape as a missing document
    else:
        raise AssertionError("another workspace's document was readable")


async def _get(
    http: aiohttp.ClientSession, url: str, params: dict[str, str], token: str | None
) -> tuple[int, str]:
    async with http.get(url, params=params, headers={"Authorization": f"Bearer {token}"}) as resp:
        return resp.status, await resp.text()


async def _error(client: BoardClient, path: str) -> tuple[int, str, str]:
    try:
        await client.document(path, workspace="proj")
    except BoardAPIError as exc:
        return exc.status, exc.code, exc.message
    raise AssertionError("no error")
