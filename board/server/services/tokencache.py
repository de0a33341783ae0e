"""A short-lived in-memory map from token hash to principal.

Saves a database read on every request. Rotation, revocation and moving a bot
to another workspace drop the agent's entries at once, so a stale entry can
never outlive the credential it stands for.
"""

from __future__ import annotations

import time

from ..principal import Principal

TTL_SECONDS = 10.0


class TokenCache:
    def __init__(self) -> None:
        self._entries: dict[str, tuple[Principal, float]] = {}

    def get(self, token_hash: str) -> Principal | None:
        hit = self._entries.get(token_hash)
        if hit is None:
            return None
        principal, expires = hit
        if expires < time.monotonic():
            del self._entries[token_hash]
            return None
        return principal

    def put(self, token_hash: str, principal: Principal) -> None:
        if len(self._entries) > 10_000:
            self._entries.clear()
        self._entries[token_hash] = (principal, time.monotonic() + TTL_SECONDS)

    def forget_agent(self, agent_id: int) -> None:
        for key in [k for k, (p, _) in self._entries.items() if p.agent_id == agent_id]:
            del self._entries[key]
