"""A short-lived in-memory map from token hash to principal.

Saves a database read on every request. Rotation, revocation and moving a bot
to another workspace drop the agent's entries at once, so a stale entry can
never outlive the credential it stands for. A lookup that read the database
before such a change and finishes after it must not cache what it read: callers
take :attr:`TokenCache.generation` before reading and hand it to :meth:`put`.

Such a change also ends what the agent holds (:func:`reach_key`): a long-poll or a
wake stream resolved its scope when it began, and would otherwise go on answering
from the workspace, watch list or token it had then.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from ..hub import Key
from ..principal import Principal

#: How long a cached principal lives, drawn between these for each entry. Entries put together
#: (a thousand daemons connecting at once, then re-polling after each post) would otherwise
#: expire together, and one post would read each of their tokens again before it is answered.
TTL_SECONDS = (10.0, 20.0)


def reach_key(agent_id: int) -> Key:
    """The hub key an agent's held requests also wait on: told, on every board process, once
    what its token reaches changed (revoked, rotated, moved, its profile's watch, goal or bots) and
    its cached principals are gone. A long-poll answers at once with what it has, a wake
    stream ends (``revoked`` or ``rescoped``): asked again, each resolves its new reach."""
    return ("reach", agent_id)


class TokenCache:
    def __init__(self) -> None:
        self._entries: dict[str, tuple[Principal, float]] = {}
        #: Bumped by every :meth:`drop_agent` and :meth:`drop_all`.
        self.generation = 0
        #: Bumped by every :meth:`drop_all`: a change to any token may have gone untold.
        self.resets = 0
        #: Tells the board's other processes to drop the agent too (``services.remote``).
        self.on_forget: Callable[[int, bool], None] | None = None
        #: Tells this process's held requests of the agent (the hub, wired by the context).
        self.on_reach: Callable[[int], None] | None = None

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
        self._entries[token_hash] = (principal, time.monotonic() + random.uniform(*TTL_SECONDS))

    def forget_agent(self, agent_id: int, *, reach: bool = True) -> None:
        """Drop what is cached for ``agent_id`` here and on every other board process, and with
        ``reach`` end what it holds there (:func:`reach_key`). Without: only a principal's
        cached extras changed (what its daemon watches), and a second daemon of the bot,
        watching otherwise, must not be sent to reconnect by every connection of the first."""
        self.drop_agent(agent_id, reach=reach)
        if self.on_forget is not None:
            self.on_forget(agent_id, reach)

    def drop_all(self) -> None:
        """Forget every entry: a change this cache was to be told of may have been missed."""
        self._entries.clear()
        self.generation += 1
        self.resets += 1

    def drop_agent(self, agent_id: int, *, reach: bool = True) -> None:
        self.generation += 1
        for key in [k for k, (p, _) in self._entries.items() if p.agent_id == agent_id]:
            del self._entries[key]
        if reach and self.on_reach is not None:  # after the drop: what asks again reads anew
            self.on_reach(agent_id)
