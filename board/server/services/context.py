"""What every service acts on: the database, the hub, the clock, the settings, and what they gather."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from ..clock import Clock, iso
from ..hub import Event, Hub, Signal
from ..settings import Settings
from ..store.writer import Store
from .knowledge.counts import ReadCounts
from .quietcache import QUIET, QuietCache
from .ratelimit import RateLimiter
from .reach import WaitMarks
from .rendered import RenderedMessages
from .tokencache import TokenCache, reach_key


@dataclass
class Context:
    """The running board's shared state, built once by the app factory."""

    db: Store
    settings: Settings
    clock: Clock = field(default_factory=Clock)
    hub: Hub = field(init=False)
    tokens: TokenCache = field(default_factory=TokenCache)
    limiter: RateLimiter | None = None
    read_counts: ReadCounts = field(init=False)
    waits: WaitMarks = field(init=False)
    quiet: QuietCache = field(default_factory=QuietCache)
    rendered: RenderedMessages = field(default_factory=RenderedMessages)

    def __post_init__(self) -> None:
        self.hub = Hub(self.settings.max_waits)
        self.db.publish = self.publish  # what a write emits reaches the hub after its commit
        self.tokens.on_reach = lambda agent_id: self.hub.publish(Signal(reach_key(agent_id), 0))
        self.read_counts = ReadCounts(self.db, self.clock)
        self.waits = WaitMarks(self.db, self.clock, self.settings.unreachable_after)
        if self.limiter is None:
            self.limiter = RateLimiter(
                self.settings.write_rate, self.settings.write_burst, self.clock.monotonic
            )

    def publish(self, item: Event | Signal) -> None:
        """A committed item (this process's or another's) to the hub; a change of quiet hours
        drops their cache first."""
        if isinstance(item, Signal) and item.key == QUIET:
            self.quiet.drop()
        self.hub.publish(item)

    def now(self) -> str:
        return iso(self.clock.now())

    def ago(self, seconds: float) -> str:
        return iso(self.clock.now() - timedelta(seconds=seconds))
