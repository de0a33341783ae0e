"""The sweep prunes sent notifications past their keep; failed and pending ones stay in the log."""

from __future__ import annotations

from datetime import timedelta

from board.server.clock import ManualClock, iso
from board.server.sweep import NOTIFICATIONS_KEPT, sweep
from tests.support.boardtest import World, db_execute, db_rows


async def test_the_sweep_prunes_sent_notifications_older_than_their_keep(
    clocked_world: World, clock: ManualClock
) -> None:
    world = clocked_world
    made = await world.human.create_destination("phone", "ntfy", url="http://127.0.0.1:9/topic")
    old = iso(clock.now() - timedelta(seconds=NOTIFICATIONS_KEPT + 60))
    recent = iso(clock.now() - timedelta(seconds=NOTIFICATIONS_KEPT - 60))
    for key, state, sent_at in (("old", "sent", old), ("recent", "sent", recent), ("bad", "failed", None)):
        db_execute(
            world.board.db_path,
            """INSERT INTO notifications (idem_key, destination_id, kind, subject, text, link, state,
                   attempts, next_at, created_at, sent_at)
               VALUES (?, ?, 'mention', 's', 't', '/', ?, 1, '9999-01-01T00:00:00.000Z', ?, ?)""",
            (key, made["id"], state, old, sent_at),
        )
    report = await sweep(world.board.ctx)
    assert report.pruned_notifications == 1
    kept = db_rows(world.board.db_path, "SELECT idem_key FROM notifications ORDER BY id")
    assert [k for (k,) in kept] == ["recent", "bad"]
