"""One tool call over MCP (streamable HTTP at /mcp) beside the same call over the JSON API.

Both run in the same process against the same board, interleaved call by call
so the machine's noise falls on both alike: reading one message
(``read`` ``message`` / ``GET /api/messages/{id}``) and posting a reply
(``post`` / ``POST /api/messages``). ``mcp`` is the SDK's own client on one open
session, as a harness holds one; ``jsonrpc`` is the same ``tools/call`` as one
bare JSON-RPC POST from aiohttp, which leaves out the client's own cost and so
shows what the board's side of MCP adds; ``api`` is one aiohttp session.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from .common import board_process, percentiles, report
from .fleet import make_fleet

QUICK = ["-n", "100"]
TINY = ["-n", "3"]

Call = Callable[[], Awaitable[Any]]


async def _timed(call: Call, samples: list[float]) -> None:
    started = time.monotonic()
    await call()
    samples.append(time.monotonic() - started)


async def _compare(url: str, token: str, calls: int) -> list[dict[str, Any]]:
    auth = {"Authorization": f"Bearer {token}"}
    async with (
        aiohttp.ClientSession(url, headers=auth) as http,
        httpx2.AsyncClient(headers=auth) as mcp_http,
        Client(streamable_http_client(url + "/mcp", http_client=mcp_http)) as mcp,
    ):
        async with http.post("/api/messages", json={"channel": "bench", "body": "the root"}) as resp:
            root = (await resp.json())["id"]

        async def api_read() -> None:
            async with http.get(f"/api/messages/{root}") as resp:
                await resp.read()
                assert resp.status == 200, resp.status

        async def mcp_read() -> None:
            result = await mcp.call_tool("read", {"action": "message", "id": root})
            assert not result.is_error, result

        rpc_headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}

        def jsonrpc(tool: str, arguments: dict[str, Any]) -> Call:
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            }

            async def call() -> None:
                async with http.post("/mcp", json=body, headers=rpc_headers) as resp:
                    answer = await resp.json()
                    assert resp.status == 200 and not answer["result"].get("isError"), answer

            return call

        async def api_post() -> None:
            async with http.post("/api/messages", json={"reply_to": root, "body": "api"}) as resp:
                await resp.read()
                assert resp.status == 201, resp.status

        async def mcp_post() -> None:
            result = await mcp.call_tool("post", {"reply_to": root, "body": "mcp"})
            assert not result.is_error, result

        rows = []
        cases = (
            ("read", api_read, mcp_read, jsonrpc("read", {"action": "message", "id": root})),
            ("post", api_post, mcp_post, jsonrpc("post", {"reply_to": root, "body": "jsonrpc"})),
        )
        for what, *ways in cases:
            samples: list[list[float]] = [[] for _ in ways]
            for way in ways:
                await way()  # warm up
            for _ in range(calls):
                for way, kept in zip(ways, samples, strict=True):
                    await _timed(way, kept)
            api = percentiles(samples[0])
            for via, kept in zip(("api", "mcp", "jsonrpc"), samples, strict=True):
                figures = percentiles(kept)
                rows.append(
                    {
                        "call": what,
                        "via": via,
                        "calls": calls,
                        **figures,
                        "p50_ratio": round(figures["p50_ms"] / api["p50_ms"], 2),
                        "p99_ratio": round(figures["p99_ms"] / api["p99_ms"], 2),
                    }
                )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench mcp")
    parser.add_argument("-n", "--calls", type=int, default=300, help="calls of each kind, each way")
    args = parser.parse_args(argv)
    with board_process() as board:
        fleet = asyncio.run(make_fleet(board, 1))
        rows = asyncio.run(_compare(board.url, fleet.bots[0][1], args.calls))
    report("mcp", rows)
