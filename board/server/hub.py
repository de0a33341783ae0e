"""Long-poll waiters, held in memory and indexed by what they wait for.

An event is published only after its write has committed: the write adds it to
its outbox (``store.db.emit``) and the writer calls :meth:`Hub.publish` with it,
in commit order. Publishing looks up the waiters under
each key the event touches (its workspace, channel or conversation, thread,
and every agent whose inbox it lands in) and hands them the event itself, so
waking W waiters costs W list appends and no database query.

Every held request (a long-poll, a page's stream, a daemon's wake stream)
subscribes under its principal, which may hold at most ``max_held`` at once: a
newer one releases the oldest that may be let go, which answers at once with
what it has. A daemon's wake stream is pinned: it is never let go for a newer
request, and a request past the cap whose owner holds only pinned ones is
refused (:class:`Full`). A buggy client looping on requests it never waits out
cannot pile up memory and file descriptors.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict, deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from .errors import RateLimited

Key = tuple[str, int]
#: How many message ids a hub remembers publishing (:meth:`Hub.knows`).
RECENT = 10_000
#: The kinds of key a message's event is published under (:meth:`Event.index_keys`).
EVENT_KEYS = frozenset({"all", "workspace", "channel", "conversation", "thread", "agent"})
#: How soon a request refused for its owner's held streams may try again.
RETRY_FULL = 5.0
T = TypeVar("T")


@dataclass(frozen=True)
class Event:
    """A committed message and everywhere it is visible."""

    message: dict[str, Any]
    workspace_id: int
    channel_id: int | None
    conversation_id: int | None
    thread_id: int
    recipients: dict[int, str] = field(default_factory=dict)  # agent id -> why it is for them
    audience: frozenset[int] | None = None  # conversation members; None for a channel
    author_id: int | None = None  # who wrote it (the message shows the handle)
    _views: dict[Hashable, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def id(self) -> int:
        return int(self.message["id"])

    def view(self, key: Hashable, build: Callable[[], T]) -> T:
        """``build()``, once per ``key`` for this event: what every waiter it wakes would redo.

        A fan-out to W waiters then renders and encodes the message once per distinct
        view (the key names everything the view depends on), not W times.
        """
        if key not in self._views:
            self._views[key] = build()
        return cast(T, self._views[key])

    def index_keys(self) -> Iterable[Key]:
        yield ("all", 0)
        yield ("workspace", self.workspace_id)
        if self.channel_id is not None:
            yield ("channel", self.channel_id)
        if self.conversation_id is not None:
            yield ("conversation", self.conversation_id)
        yield ("thread", self.thread_id)
        for agent_id in self.recipients:
            yield ("agent", agent_id)


@dataclass(frozen=True)
class Signal:
    """A committed change that is not a message (a routine's): it wakes the waiters of one key."""

    key: Key
    id: int

    def index_keys(self) -> Iterable[Key]:
        yield self.key


class Full(RateLimited):
    """The owner holds ``max_held`` pinned requests (streams): none may be let go for a newer one."""

    def __init__(self) -> None:
        super().__init__(RETRY_FULL, "streams held by this token at once (BOARD_MAX_WAITS)")


@dataclass(eq=False)
class Waiter:
    """One held request: collects the events published under its keys."""

    keys: tuple[Key, ...]
    owner: int | None = None
    #: A request held open (counted in ``Hub.waiting``), not a background task's wake-up.
    request: bool = True
    released: bool = False  # let go by a newer request of its owner: answer now
    #: A stream's: never released for a newer request of its owner (see :class:`Full`).
    pinned: bool = False
    #: Events a stream may have buffered, not yet taken, before :attr:`cut` runs: a reader
    #: too slow to keep up is dropped, not followed by a buffer that grows without end.
    bound: int | None = None
    cut: Callable[[], None] | None = None
    overflowed: bool = False
    #: Messages committed for it will not be published here (too many missed at once, or a
    #: read back given up: services/remote.py): it reads them from the database instead, and
    #: is given no message more (signals still, as a held stream's budget's).
    behind: bool = False
    events: list[Event | Signal] = field(default_factory=list)
    _last: Event | Signal | None = None
    _ready: asyncio.Event = field(default_factory=asyncio.Event)

    def deliver(self, event: Event | Signal) -> None:
        """Buffer ``event``, once: publishing hands it over under each of its keys in turn.

        Nothing is published twice, and one publish reaches a waiter under all its keys
        before the next begins, so the last event delivered is all a waiter keeps to
        drop the repeats: a stream held for days holds no record of what it saw.
        """
        if event is self._last or self.overflowed or (self.behind and isinstance(event, Event)):
            return
        self._last = event
        if self.bound is not None and len(self.events) >= self.bound:
            self.overflowed = True
            self.events = []
            if self.cut is not None:
                self.cut()
            self._ready.set()
            return
        self.events.append(event)
        self._ready.set()

    def wake(self) -> None:
        """Return from :meth:`wait` now, with whatever is buffered (maybe nothing)."""
        self._ready.set()

    def release(self) -> None:
        """Stop holding: :meth:`wait` returns now, and the holder should answer."""
        self.released = True
        self._ready.set()

    async def wait(self, timeout: float) -> bool:
        """Wait until at least one event is buffered; False on timeout. A cancel that comes with
        a wake is a cancel (``asyncio.wait_for`` of Python 3.11 would answer the wake instead)."""
        if not self._ready.is_set():
            try:
                async with asyncio.timeout(timeout):
                    await self._ready.wait()
            except TimeoutError:
                return False
        return True

    def take(self) -> list[Event | Signal]:
        events, self.events = self.events, []
        self._ready.clear()
        return events


class Hub:
    """Index of waiters by key; publish hands each matching waiter the event."""

    def __init__(self, max_held: int = 8) -> None:
        self.max_held = max_held
        self._by_key: dict[Key, set[Waiter]] = defaultdict(set)
        self._by_owner: dict[int, deque[Waiter]] = {}
        self.published = 0
        self.waiting = 0
        self.last_id = 0  # highest message id published (or found in the store at start)
        #: Messages may be committed past :attr:`last_id` that will never be published here (a
        #: read back given up), until a later one is: no reader is at the head (:meth:`at_head`).
        self.unsure = False
        self._recent: deque[int] = deque(maxlen=RECENT)  # message ids published or passed, newest last
        self._recent_ids: set[int] = set()
        self.closed = False

    def subscribe(
        self,
        keys: Iterable[Key],
        owner: int | None = None,
        *,
        pinned: bool = False,
        bound: int | None = None,
        request: bool = True,
    ) -> Waiter:
        """A waiter for ``keys``; past ``max_held`` for ``owner``, its oldest unpinned one is
        released, and with none to release :class:`Full` is raised and nothing is held.

        ``request=False`` is a background task's (the outbox's): not counted as a held request.
        """
        waiter = Waiter(tuple(keys), owner, request, pinned=pinned, bound=bound)
        if owner is not None:
            held = self._by_owner.setdefault(owner, deque())
            while len(held) >= self.max_held:
                oldest = next((w for w in held if not w.pinned), None)
                if oldest is None:
                    raise Full()
                held.remove(oldest)
                oldest.release()
            held.append(waiter)
        for key in waiter.keys:
            self._by_key[key].add(waiter)
        self.waiting += waiter.request
        return waiter

    def held(self, owner: int) -> int:
        """How many requests ``owner`` holds now."""
        return len(self._by_owner.get(owner, ()))

    def unsubscribe(self, waiter: Waiter) -> None:
        self.waiting -= waiter.request
        held = self._by_owner.get(waiter.owner) if waiter.owner is not None else None
        if held is not None:
            if waiter in held:
                held.remove(waiter)
            if not held:
                del self._by_owner[waiter.owner]  # type: ignore[arg-type]
        for key in waiter.keys:
            waiters = self._by_key.get(key)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    del self._by_key[key]

    def awaits_messages(self) -> bool:
        """Whether anyone here waits under a key a message's event could be published under."""
        return any(kind in EVENT_KEYS for kind, _ in self._by_key)

    def passed(self, message_id: int) -> None:
        """A committed message nobody here waited for, not published: the head moves past it
        all the same (a reader at the head skips its read, :func:`~.services.longpoll.poll`)."""
        self._heard(message_id)

    def _heard(self, message_id: int) -> None:
        """A message published or passed: the head moves to it. Only a message above the head
        shows that every one before it was heard (ids commit in order), so only such a one ends
        :attr:`unsure`; one at or below it (this process's own, heard late) does not."""
        if message_id > self.last_id:
            self.last_id, self.unsure = message_id, False
        self._remember(message_id)

    def knows(self, message_id: int) -> bool:
        """Whether this message was published or passed here lately (the last :data:`RECENT`):
        what is heard of twice, after a lost notification connection, is taken in once."""
        return message_id in self._recent_ids

    def _remember(self, message_id: int) -> None:
        if len(self._recent) == self._recent.maxlen:
            self._recent_ids.discard(self._recent[0])
        self._recent.append(message_id)
        self._recent_ids.add(message_id)

    def at_head(self, since: int) -> bool:
        """Whether a reader at ``since`` has read every message committed: it may wait without
        reading (:func:`~.services.longpoll.poll`)."""
        return not self.unsure and since >= self.last_id

    def fell_behind(self, upto: int | None) -> None:
        """Messages were committed that this hub will not publish, up to ``upto`` (``None``: not
        known, a read back given up): every waiter for messages is woken :attr:`~Waiter.behind`,
        to read them from the database, where each holder's cursor finds them in order."""
        if upto is None:
            self.unsure = True
        else:
            self.last_id = max(self.last_id, upto)
        held = {w for (kind, _), waiters in self._by_key.items() if kind in EVENT_KEYS for w in waiters}
        for waiter in held:
            waiter.behind = True
            # Its messages are read again; a signal buffered (a hold's lift) is not, so it stays.
            waiter.events = [event for event in waiter.events if isinstance(event, Signal)]
            waiter.wake()

    def publish(self, event: Event | Signal) -> None:
        self.published += 1
        if isinstance(event, Event):
            self._heard(event.id)
        for key in event.index_keys():
            for waiter in self._by_key.get(key, ()):
                waiter.deliver(event)

    def close(self) -> None:
        """Release every held request (the board is shutting down): they answer empty at once."""
        self.closed = True
        for waiter in {w for waiters in self._by_key.values() for w in waiters}:
            waiter.wake()
