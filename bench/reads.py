"""Timed reads from a separate client process, one request at a time.

A probe names a list of (path, query) requests, cycled through: one at a time,
so the figure is a read's own latency rather than a queue's.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import time
from typing import Any

import aiohttp

from .common import percentiles

Request = tuple[str, dict[str, Any]]


async def _measure(url: str, token: str, probes: dict[str, list[Request]], n: int) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"}
    out: dict[str, Any] = {}
    async with aiohttp.ClientSession(url, headers=headers) as http:
        for name, requests in probes.items():
            samples = []
            for i in range(n + max(3, n // 10)):  # the first few warm caches and connections
                path, params = requests[i % len(requests)]
                started = time.perf_counter()
                async with http.get(path, params=params) as resp:
                    await resp.read()
                    if resp.status != 200:
                        raise RuntimeError(f"{name}: {resp.status} {await resp.text()}")
                if i >= max(3, n // 10):
                    samples.append(time.perf_counter() - started)
            out[name] = percentiles(samples)
    return out


def _child(url: str, token: str, probes: dict[str, list[Request]], n: int) -> dict[str, Any]:
    return asyncio.run(_measure(url, token, probes, n))


def measure(url: str, token: str, probes: dict[str, list[Request]], n: int) -> dict[str, Any]:
    """p50/p99/max per probe, timed from a client process of its own."""
    with mp.get_context("spawn").Pool(1) as pool:
        return pool.apply(_child, (url, token, probes, n))
