"""Serializing calls that share a request id, inside this process."""

from __future__ import annotations

import asyncio


class Replays:
    """Serializes concurrent calls with the same request id inside this process."""

    def __init__(self) -> None:
        self._locks: dict[tuple[int, str], asyncio.Lock] = {}

    def lock(self, key: tuple[int, str]) -> asyncio.Lock:
        return self._locks.setdefault(key, asyncio.Lock())

    def release(self, key: tuple[int, str], lock: asyncio.Lock) -> None:
        if not lock.locked() and self._locks.get(key) is lock:
            del self._locks[key]
