"""Timed reads from a separate client process, one request at a time.

A probe names a list of (path, query) requests, cycled through: one at a time,
so the figure is a read's own latency rather than a queue's. Given the server's
pid, each probe also gets the server's CPU time per request (``cpu_ms``, psutil),
which the machine's other load disturbs far less than wall time; given a database
server's pid, its CPU too (``db_cpu_ms``, with its backends). Probes run one after
another, or ``interleaved``: one request of each in turn, so that probes compared by a
ratio share whatever load the machine's neighbours put on it (and no ``cpu_ms``, which
psutil counts in ticks too coarse for one request).
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import time
from dataclasses import dataclass
from typing import Any

import aiohttp

from .common import cpu_seconds, percentiles

Request = tuple[str, dict[str, Any]]


def _cpu(pid: int | None) -> float:
    return sum(cpu_seconds([pid]).values()) if pid is not None else 0.0


@dataclass(frozen=True)
class _Run:
    """What one measure is asked, whole: the spawned client process is handed it as it is."""

    url: str
    token: str
    probes: dict[str, list[Request]]
    n: int
    pid: int | None
    interleaved: bool
    db_pid: int | None


async def _measure(run: _Run) -> dict[str, Any]:
    probes, n, interleaved = run.probes, run.n, run.interleaved
    headers = {"Authorization": f"Bearer {run.token}"}
    server = run.pid if not interleaved else None
    database = run.db_pid if not interleaved else None
    warm = max(3, n // 10)  # the first few requests warm caches and connections
    samples: dict[str, list[float]] = {name: [] for name in probes}
    cpu: dict[str, float] = {}
    db_cpu: dict[str, float] = {}
    turns = [list(probes)] * (n + warm) if interleaved else [[name] * (n + warm) for name in probes]
    async with aiohttp.ClientSession(run.url, headers=headers) as http:
        for turn in turns:
            for name in turn:
                at = len(samples[name])
                if at == warm:
                    cpu[name], db_cpu[name] = _cpu(server), _cpu(database)
                path, params = probes[name][at % len(probes[name])]
                started = time.perf_counter()
                async with http.get(path, params=params) as resp:
                    await resp.read()
                    if resp.status != 200:
                        raise RuntimeError(f"{name}: {resp.status} {await resp.text()}")
                samples[name].append(time.perf_counter() - started)
            if not interleaved and server is not None:
                cpu[turn[0]] = _cpu(server) - cpu[turn[0]]
                db_cpu[turn[0]] = _cpu(database) - db_cpu[turn[0]]
    out: dict[str, Any] = {}
    for name, taken in samples.items():
        out[name] = percentiles(taken[warm:])
        if server is not None:
            out[name]["cpu_ms"] = round(1000 * cpu[name] / n, 3)
        if server is not None and database is not None:
            out[name]["db_cpu_ms"] = round(1000 * db_cpu[name] / n, 3)
    return out


def _child(run: _Run) -> dict[str, Any]:
    """The client process's entry point (spawn wants a top-level function)."""
    return asyncio.run(_measure(run))


def measure(
    url: str,
    token: str,
    probes: dict[str, list[Request]],
    n: int,
    pid: int | None = None,
    interleaved: bool = False,
    db_pid: int | None = None,
) -> dict[str, Any]:
    """p50/p99/max per probe, and the server's ``cpu_ms`` per request given its pid (not
    ``interleaved``), and the database server's ``db_cpu_ms`` (its processes') given its
    pid, from a client process."""
    with mp.get_context("spawn").Pool(1) as pool:
        return pool.apply(_child, (_Run(url, token, probes, n, pid, interleaved, db_pid),))
