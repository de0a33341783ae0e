"""The board's MCP server, driven by the MCP SDK's own client over both transports.

``http`` is ``/mcp`` on the board (streamable HTTP, bearer token); ``stdio`` is a
real ``board mcp`` subprocess calling the board over HTTP. Every test that takes
``transport`` runs on both, so the two cannot drift apart.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from board.client import BoardAPIError
from board.mcp.tools import RESOURCES, TOOLS
from board.server.api.keys import ROUTES
from board.server.validation import _wire_fields
from tests.support.boardtest import Board, World, snapshot

TRANSPORTS = ("http", "stdio")
TOOL_LIST_LIMIT = 8_000  # characters of the serialized tools/list result


@asynccontextmanager
async def connect(board: Board, token: str, transport: str) -> AsyncIterator[Client]:
    if transport == "http":
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers) as http,
            Client(streamable_http_client(board.url + "/mcp", http_client=http)) as client,
        ):
            yield client
    else:
        server = StdioServerParameters(
            command=sys.executable,
            args=["-m", "board", "mcp", "--board", board.url],
            env={"BOARD_TOKEN": token},
        )
        async with Client(server) as client:
            yield client


async def call(client: Client, tool: str, **arguments: Any) -> Any:
    """A tool's answer, decoded; the test fails on a tool error."""
    result = await client.call_tool(tool, arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    assert not result.is_error, f"{tool} {arguments}: {text}"
    return json.loads(text)


async def refused(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool error's envelope; the test fails if the call succeeded."""
    result = await client.call_tool(tool, arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error, f"{tool} {arguments} succeeded: {text}"
    error: dict[str, Any] = json.loads(text)["error"]
    return error


# -- the definitions ----------------------------------------------------------------------


async def test_every_action_names_a_route_and_only_its_fields(board: Board) -> None:
    routes = {(r.method, r.path): r for r in board.app[ROUTES]}
    actions = [a for t in TOOLS for a in t.actions.values()] + [r.action for r in RESOURCES]
    for action in actions:
        route = routes.get((action.method, action.route))
        assert route is not None, f"{action.method} {action.route} is not in the route table"
        query = set(_wire_fields(route.query)) if route.query else set()
        body = set(_wire_fields(route.body)) if route.body else set()
        assert set(action.query) | set(action.defaults) <= query, action
        assert set(action.body) <= body, action
        assert set(action.path) == set(_placeholders(route.path)), action


async def test_every_list_action_takes_the_arguments_its_route_pages_with(board: Board) -> None:
    """A list a bot cannot page is stuck on its first page: a search sent back its
    ``next_before`` without ``next_offset`` (which the tool did not take) got page 1 again."""
    routes = {(r.method, r.path): r for r in board.app[ROUTES]}
    for tool in TOOLS:
        for action in tool.actions.values():
            route = routes[(action.method, action.route)]
            query = set(_wire_fields(route.query)) if route.query else set()
            paging = {"since", "before", "after", "offset"} & query
            assert paging <= set(action.query) | set(action.defaults), (tool.name, action.route)


def _placeholders(path: str) -> list[str]:
    return re.findall(r"\{(\w+)", path)


async def test_the_tool_list_stays_small(world: World) -> None:
    """The whole tools/list result as the client receives it, within 8,000 characters."""
    _, answer = await world.bot.call(
        "POST",
        "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        headers={"Accept": "application/json, text/event-stream"},
    )
    tools = answer["result"]["tools"]
    size = len(json.dumps(answer["result"], separators=(",", ":")))
    assert len(tools) <= 10
    assert size <= TOOL_LIST_LIMIT, f"tools/list is {size} characters"
    assert {t["name"] for t in tools} == {t.name for t in TOOLS}


# -- every action, both transports ---------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_bot_turn_through_every_action(world: World, transport: str) -> None:
    root = await world.human.post("@pb please look at the zebra build", channel="lobby", workspace="proj")
    second = await world.human.post("a second job", channel="lobby", workspace="proj")
    async with connect(world.board, world.bot.token or "", transport) as client:
        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == [t.name for t in TOOLS]

        me = await call(client, "catch_up", action="me")
        assert me["handle"] == "pb" and me["workspace"] == "proj"
        inbox = await call(client, "catch_up", action="inbox", since=0)
        assert [m["id"] for m in inbox["messages"]] == [root["id"]]
        assert "body" not in inbox["messages"][0], "inbox rows are compact"
        wake = await call(client, "catch_up", action="wake", since=0)
        assert root["id"] in [m["id"] for m in wake["messages"]]

        assert (await call(client, "read", action="message", id=root["id"]))["body"] == root["body"]
        thread = await call(client, "read", action="thread", id=root["id"])
        assert thread["thread_id"] == root["id"]
        listing = await call(client, "read", action="messages", channel="lobby")
        assert {root["id"], second["id"]} <= {m["id"] for m in listing["messages"]}
        # "a channel's or thread's messages", as the tool's description says
        in_thread = await call(client, "read", action="messages", thread=second["id"])
        assert [m["id"] for m in in_thread["messages"]] == [second["id"]]

        claimed = await call(client, "claim", action="claim", id=root["id"], note="on it")
        assert claimed["holder"] == "pb"
        await call(client, "claim", action="release", id=root["id"], reason="later")
        await call(client, "claim", action="claim", id=root["id"])
        await call(client, "claim", action="handoff", id=root["id"], to="pb2", note="yours")
        await call(client, "claim", action="claim", id=second["id"])
        await call(client, "claim", action="done", id=second["id"], summary="shipped")

        reply = await call(client, "post", reply_to=root["id"], body="the build is green")
        assert reply["thread_id"] == root["id"] and reply["author"] == "pb"
        new_root = await call(client, "post", channel="lobby", body="a new root", tags=["x"])
        assert new_root["reply_to"] is None and new_root["tags"] == ["x"]

        found = await call(client, "search", q="zebra")
        assert [m["id"] for m in found["messages"]] == [root["id"]]

        written = await call(
            client, "knowledge", action="write", path="notes/build.md", body="# Build\nred\n",
            base_revision=0, reason="what we know", sources=[{"message": root["id"]}],
        )  # fmt: skip
        assert written["revision"] == 1
        document = await call(client, "knowledge", action="read", path="notes/build.md")
        assert document["body"] == "# Build\nred\n"
        diff = "--- a\n+++ b\n@@ -1,2 +1,2 @@\n # Build\n-red\n+green\n"
        patched = await call(
            client, "knowledge", action="patch", path="notes/build.md", diff=diff, base_revision=1,
            reason="it went green",
        )  # fmt: skip
        assert patched["revision"] == 2
        listed_docs = await call(client, "knowledge", action="list")
        assert [d["path"] for d in listed_docs["documents"]] == ["notes/build.md"]
        history = await call(client, "knowledge", action="history", path="notes/build.md")
        assert [r["revision"] for r in history["revisions"]] == [2, 1]
        await call(client, "knowledge", action="dispute", path="notes/build.md", reason="it is red again")
        await call(
            client, "knowledge", action="delete", path="notes/build.md", base_revision=2, reason="moved"
        )

        resources = await client.list_resources()
        assert [r.uri for r in resources.resources] == [r.uri for r in RESOURCES]
        rules = await client.read_resource("board://agents.md")
        assert world.board.url in rules.contents[0].text  # type: ignore[union-attr]
        index = await client.read_resource("board://knowledge")
        assert json.loads(index.contents[0].text)["documents"] == []  # type: ignore[union-attr]
        prompt = await client.read_resource("board://prompt")
        text = prompt.contents[0].text  # type: ignore[union-attr]
        assert "You are @pb" in text and "curl" not in text and "Authorization" not in text

    # What the tools did is on the board, as the JSON API sees it.
    thread = await world.human.thread(root["id"])
    assert reply["id"] in [m["id"] for m in thread["messages"]]
    assert thread["claim"]["holder"] == "pb2"
    assert (await world.human.thread(second["id"]))["claim"]["state"] == "done"
    with pytest.raises(BoardAPIError) as deleted:
        await world.bot.document("notes/build.md")
    assert deleted.value.code == "TOMBSTONED"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_search_pages_through_every_match_as_the_api_does(world: World, transport: str) -> None:
    """Each page's ``next_before`` and ``next_offset`` sent back, a bot reads every match once."""
    posted = [
        (await world.human.post(f"flaky run {n}", channel="lobby", workspace="proj"))["id"] for n in range(25)
    ]
    seen: list[int] = []
    async with connect(world.board, world.bot.token or "", transport) as client:
        arguments: dict[str, Any] = {"q": "flaky"}
        while True:
            page = await call(client, "search", **arguments)
            seen += [m["id"] for m in page["messages"]]
            assert len(seen) <= len(posted), seen
            if not page["has_more"]:
                break
            arguments = {"q": "flaky", "before": page["next_before"], "offset": page["next_offset"]}
    assert sorted(seen) == sorted(posted)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_knowledge_conflict_is_a_tool_error_with_the_apis_advice(
    world: World, transport: str
) -> None:
    await world.peer.put_document("plan.md", "first\n", 0, "start")
    async with connect(world.board, world.bot.token or "", transport) as client:
        error = await refused(
            client, "knowledge", action="write", path="plan.md", body="mine\n", base_revision=0, reason="r"
        )
    assert error["code"] == "VERSION_CONFLICT"
    assert "read it again, merge, and retry" in error["message"]
    assert error["details"]["current_revision"] == 1
    assert (await world.bot.document("plan.md"))["body"] == "first\n"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_bad_arguments_are_tool_errors(world: World, transport: str) -> None:
    async with connect(world.board, world.bot.token or "", transport) as client:
        assert (await refused(client, "claim", action="steal", id=1))["code"] == "INVALID_ARGUMENT"
        missing = await refused(client, "claim", action="claim")
        assert (
            missing["code"] == "INVALID_ARGUMENT" and missing["message"] == "claim (action claim) needs id."
        )
        # The argument a harness guesses from the API's path names the ones the action takes.
        guessed = await refused(client, "claim", action="claim", thread_id=1)
        taken = "claim (action claim) does not take thread_id; it takes id, note, lease_minutes."
        assert guessed["message"] == taken
        extra = await refused(client, "post", body="x", secret=1)
        assert extra["code"] == "INVALID_ARGUMENT" and extra["message"].startswith(
            "post does not take secret;"
        )
        # The route's own strict parsing, unchanged: an over-long body is LIMIT_EXCEEDED.
        too_long = await refused(client, "post", channel="lobby", body="x" * 16_001)
        assert too_long["code"] == "LIMIT_EXCEEDED"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_path_argument_stays_in_its_route(world: World, transport: str) -> None:
    """An id or document path holding '/' or '..' is refused as the route's own parsing
    refuses it, over both transports: over stdio it must not become another route's URL."""
    root = await world.human.post("a thread", channel="lobby", workspace="proj")
    async with connect(world.board, world.bot.token or "", transport) as client:
        before = snapshot(world.board.db_path)
        climbed = await refused(
            client, "read", action="message", id=f"{root['id']}/../../threads/{root['id']}"
        )
        assert climbed["message"] == "The id must be a positive whole number."
        released = await refused(client, "claim", action="release", id=f"../messages/{root['id']}")
        assert released["code"] == "INVALID_ARGUMENT" and "The id " in released["message"]
        doc = await refused(client, "knowledge", action="read", path="../../agents.md")
        assert doc["code"] == "INVALID_ARGUMENT" and doc["details"] == {"field": "path"}
        assert snapshot(world.board.db_path) == before, "a refused call changed nothing"
        await world.peer.put_document("decisions/db.md", "sqlite\n", 0, "start")
        read = await call(client, "knowledge", action="read", path="decisions/db.md")
        assert read["body"] == "sqlite\n", "a path's own '/' still reaches the document"


# -- scope ---------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_another_workspace_is_not_found_like_an_absent_thing(world: World, transport: str) -> None:
    async with connect(world.board, world.bot.token or "", transport) as client:
        absent_doc = await refused(client, "knowledge", action="read", path="secret/plan.md")
        write = {"action": "write", "path": "secret/plan.md", "body": "x", "base_revision": 1, "reason": "r"}
        absent_write = await refused(client, "knowledge", **write)
        # Now the other workspace holds that very path, and a thread whose words could leak.
        await world.other.put_document("secret/plan.md", "the quokka plan\n", 0, "ours")
        theirs = await world.other.post("quokka launch date", channel="ops")
        absent_thread = await refused(client, "read", action="thread", id=theirs["id"] + 1000)
        before = snapshot(world.board.db_path)

        assert await refused(client, "knowledge", action="read", path="secret/plan.md") == absent_doc
        assert absent_doc["code"] == "NOT_FOUND"
        assert await refused(client, "read", action="thread", id=theirs["id"]) == absent_thread
        assert await refused(client, "knowledge", **write) == absent_write
        assert absent_thread["code"] == "NOT_FOUND"
        for tool, arguments in (
            ("read", {"action": "message", "id": theirs["id"]}),
            ("post", {"reply_to": theirs["id"], "body": "hi"}),
            ("claim", {"action": "claim", "id": theirs["id"]}),
            ("knowledge", {"action": "history", "path": "secret/plan.md"}),
            ("knowledge", {"action": "dispute", "path": "secret/plan.md", "reason": "no"}),
        ):  # fmt: skip
            assert (await refused(client, tool, **arguments))["code"] == "NOT_FOUND", (tool, arguments)
        assert snapshot(world.board.db_path) == before, "a refused call changed nothing"

        assert (await call(client, "search", q="quokka"))["messages"] == []
        assert (await call(client, "knowledge", action="list", q="quokka"))["documents"] == []
        assert (await call(client, "knowledge", action="list"))["documents"] == []
        assert (await call(client, "read", action="messages"))["messages"] == []
        index = await client.read_resource("board://knowledge")
        assert "quokka" not in index.contents[0].text  # type: ignore[union-attr]
    # The data is there: its own workspace reads it.
    assert (await world.other.document("secret/plan.md"))["body"] == "the quokka plan\n"


# -- credentials ---------------------------------------------------------------------------


async def test_a_revoked_token_is_refused_over_http(world: World) -> None:
    async with connect(world.board, world.bot.token or "", "http") as client:
        await call(client, "catch_up", action="me")
        await world.human.revoke_token("pb")
        with pytest.raises(MCPError):
            await client.call_tool("catch_up", {"action": "me"})
    status, text = await _raw_status(world, world.bot.token or "")
    assert status == 401 and json.loads(text)["error"]["code"] == "UNAUTHENTICATED"


async def _raw_status(world: World, token: str) -> tuple[int, str]:
    async with httpx2.AsyncClient() as http:
        answer = await http.post(
            world.board.url + "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"},
        )
    return answer.status_code, answer.text


async def test_a_revoked_token_is_refused_over_stdio(world: World) -> None:
    async with connect(world.board, world.bot.token or "", "stdio") as client:
        await call(client, "catch_up", action="me")
        await world.human.revoke_token("pb")
        error = await refused(client, "catch_up", action="me")
    assert error["code"] == "UNAUTHENTICATED"


async def test_a_profile_says_whether_its_bots_get_the_tools(world: World) -> None:
    created = await world.human.create_profile("proj-mcp", "proj", "claude", mcp=True, bots=["pb"])
    assert created["mcp"] is True
    assert (await world.bot.profile("proj-mcp"))["mcp"] is True
    await world.human.update_profile("proj-mcp", identity="still on")
    assert (await world.bot.profile("proj-mcp"))["mcp"] is True, "a field left out keeps its value"
    assert (await world.human.update_profile("proj-mcp", mcp=False))["mcp"] is False


async def test_a_body_that_does_not_decode_as_its_content_encoding_is_refused(world: World) -> None:
    before = snapshot(world.board.db_path)
    headers = {
        "Authorization": f"Bearer {world.bot.token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Content-Encoding": "gzip",
    }
    async with httpx2.AsyncClient() as http:
        answer = await http.post(world.board.url + "/mcp", content=b'{"jsonrpc": "2.0"}', headers=headers)
    assert answer.status_code == 422 and answer.json()["error"]["code"] == "INVALID_ARGUMENT"
    assert snapshot(world.board.db_path) == before
