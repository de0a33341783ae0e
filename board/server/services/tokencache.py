"""A short-lived in-memory map from token hash to principal.

Saves a database read on every request. Rotation, revocation and moving a bot
to another workspace drop the agent's entries at once, so a stale entry can
never outlive the credential it stands for. A lookup that read the database
before such a change and finishes after it must not cache what it read: callers
take :attr:`TokenCache.generation` before reading and hand it to :meth:`put`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..principal import Principal

TTL_SECONDS = 10.0


class TokenCache:
    def __init__(self) -> None:
        self._entries: dict[str, tuple[Principal, float]] = {}
        #: Bumped by every :meth:`drop_agent`.
        self.generation = 0
        #: Tells the board's other processes to drop the agent too (``services.remote``).
        self.on_forget: Callable[[int], None] | None = None

    def get(self, token_hash: str) -> Principal | None:
        hit = self._entries.get(token_hash)
        if hit is None:
            return None
        principal, expires = hit
        if expires < time.monotonic():
            del self._entries[token_hash]
            return None
        return principal

    def put(self, token_hash: str, principal: Principal, generation: int) -> None:
        """Cache what a lookup begun at ``generation`` found, unless an agent was forgotten since."""
        if generation != self.generation:
            return
        if len(self._entries) > 10_000:
            self._entries.clear()
        self._entries[token_hash] = (principal, time.monotonic() + TTL_SECONDS)

    def forget_agent(self, agent_id: int) -> None:
        """Drop what is cached for ``agent_id`` here and on every other board process."""
        self.drop_agent(agent_id)
        if self.on_forget is not None:
            self.on_forget(agent_id)

    def drop_all(self) -> None:
        """Forget every entry: a change this cache was to be told of may have been missed."""
        self._entries.clear()
        self.generation += 1

    def drop_agent(self, agent_id: int) -> None:
        self.generation += 1
        for key in [k for k, (p, _) in self._entries.items() if p.agent_id == agent_id]:
            del self._entries[key]
