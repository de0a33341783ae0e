"""The hub hands each waiter every event under its keys exactly once."""

from __future__ import annotations

import asyncio

import pytest

from board.server.hub import EVENT_KEYS, Event, Hub, Signal


def _event(
    message_id: int, *, channel: int = 1, thread: int = 1, recipients: dict[int, str] | None = None
) -> Event:
    message = {"id": message_id, "body": f"message {message_id}"}
    return Event(message, 1, channel, None, thread, recipients or {})


def test_an_event_under_several_of_a_waiters_keys_arrives_once() -> None:
    hub = Hub()
    waiter = hub.subscribe([("workspace", 1), ("channel", 1), ("thread", 7), ("agent", 3)])
    first, second = _event(10, thread=7, recipients={3: "mention"}), _event(11, thread=7)
    hub.publish(first)
    hub.publish(second)
    assert waiter.take() == [first, second]


def test_a_signal_and_a_message_with_the_same_number_both_arrive() -> None:
    """Signals count their own changes: a change id equal to a message id is another event."""
    hub = Hub()
    changes = ("routines", 1)
    waiter = hub.subscribe([("workspace", 1), changes])
    message, signal = _event(5), Signal(changes, 5)
    hub.publish(message)
    hub.publish(signal)
    assert waiter.take() == [message, signal]


def test_a_message_is_published_only_under_keys_that_tell_a_wait_for_messages() -> None:
    hub = Hub()
    event = Event({"id": 4}, 1, None, 2, 3, {5: "mention"})
    assert {kind for kind, _ in event.index_keys()} <= EVENT_KEYS
    waiter = hub.subscribe([("routines", 1)])
    assert not hub.awaits_messages()
    hub.passed(4)
    assert hub.last_id == 4 and waiter.take() == []
    for key in event.index_keys():
        other = hub.subscribe([key])
        assert hub.awaits_messages(), key
        hub.unsubscribe(other)


def test_a_hub_behind_sends_its_message_waiters_to_the_database_and_no_one_else() -> None:
    """More was missed than a read back holds: every waiter for messages drops the messages it
    had and takes no message more (it reads the database from its cursor), signals still, those
    it had too (a hold's lift would wait for the next beat); a
    waiter for a signal alone goes on as before. The head moves past what was missed."""
    hub = Hub()
    stream = hub.subscribe([("agent", 3), ("budget", 1)], pinned=True, bound=10)
    routines = hub.subscribe([("routines", 1)])
    hub.publish(_event(10, recipients={3: "mention"}))
    hub.publish(spent := Signal(("budget", 1), 0))  # buffered before: no read finds it again
    hub.fell_behind(11)
    hub.publish(_event(12, recipients={3: "mention"}))
    hub.publish(lifted := Signal(("budget", 1), 1))
    hub.publish(signal := Signal(("routines", 1), 2))
    assert (stream.behind, stream.take()) == (True, [spent, lifted])
    assert (routines.behind, routines.take()) == (False, [signal])
    assert hub.last_id == 12 and hub.at_head(12)


def test_a_read_back_given_up_leaves_no_reader_at_the_head_until_a_later_message() -> None:
    """What a read back given up missed is committed but not known here: no reader may skip
    its read as at the head, until a message committed after them is heard of."""
    hub = Hub()
    hub.passed(5)
    assert hub.at_head(5)
    hub.fell_behind(None)
    assert not hub.at_head(5) and not hub.at_head(9)
    hub.passed(9)
    assert hub.at_head(9) and not hub.at_head(8)


@pytest.mark.parametrize("ticks", range(5))
async def test_a_cancel_that_comes_with_a_wake_is_not_swallowed(ticks: int) -> None:
    """A PostgreSQL duty's holder is cancelled when its lock goes (store/postgres.py): the
    outbox dispatcher waits here, and a wake landing with the cancel ended the wait as woken
    (asyncio.wait_for, Python 3.11), so it went on dispatching without the lock, beside the
    process that took it."""
    waiter = Hub().subscribe([("workspace", 1)], request=False)
    task = asyncio.create_task(waiter.wait(60))
    await asyncio.sleep(0)
    waiter.wake()
    for _ in range(ticks):  # the cancel a few steps after the wake, however the wait is made
        await asyncio.sleep(0)
    if task.done():
        return
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
