"""Timed reads from a separate client process, one request at a time.

A probe names a list of (path, query) requests, cycled through: one at a time,
so the figure is a read's own latency rather than a queue's. Given the server's
pid, each probe also gets the server's CPU time per request (``cpu_ms``, psutil),
which the machine's other load disturbs far less than wall time.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import time
from typing import Any

import aiohttp
import psutil

from .common import percentiles

Request = tuple[str, dict[str, Any]]


def _cpu_seconds(server: psutil.Process | None) -> float:
    if server is None:
        return 0.0
    times = server.cpu_times()
    return float(times.user + times.system)


async def _measure(
    url: str, token: str, probes: dict[str, list[Request]], n: int, pid: int | None
) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"}
    out: dict[str, Any] = {}
    server = psutil.Process(pid) if pid is not None else None
    warm = max(3, n // 10)  # the first few requests warm caches and connections
    async with aiohttp.ClientSession(url, headers=headers) as http:
        for name, requests in probes.items():
            samples = []
            cpu = 0.0
            for i in range(n + warm):
                if i == warm:
                    cpu = _cpu_seconds(server)
                path, params = requests[i % len(requests)]
                started = time.perf_counter()
                async with http.get(path, params=params) as resp:
                    await resp.read()
                    if resp.status != 200:
                        raise RuntimeError(f"{name}: {resp.status} {await resp.text()}")
                if i >= warm:
                    samples.append(time.perf_counter() - started)
            out[name] = percentiles(samples)
            if server is not None:
                out[name]["cpu_ms"] = round(1000 * (_cpu_seconds(server) - cpu) / n, 3)
    return out


def _child(url: str, token: str, probes: dict[str, list[Request]], n: int, pid: int | None) -> dict[str, Any]:
    return asyncio.run(_measure(url, token, probes, n, pid))


def measure(
    url: str, token: str, probes: dict[str, list[Request]], n: int, pid: int | None = None
) -> dict[str, Any]:
    """p50/p99/max per probe, and the server's ``cpu_ms`` per request given its pid, from a client process."""
    with mp.get_context("spawn").Pool(1) as pool:
        return pool.apply(_child, (url, token, probes, n, pid))
