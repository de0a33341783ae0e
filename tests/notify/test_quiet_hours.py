"""When a notification found in quiet hours becomes due: the window's end, in the human's zone."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from board.server.services.outbound import quiet_until, zone


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("now", "start", "end", "tz", "due"),
    [
        ("2026-12-04T23:30:00", "22:00", "07:00", "UTC", "2026-12-05T07:00:00"),  # spans midnight, before it
        ("2026-12-05T03:00:00", "22:00", "07:00", "UTC", "2026-12-05T07:00:00"),  # after midnight
        ("2026-12-05T07:00:00", "22:00", "07:00", "UTC", None),  # the end itself is outside
        ("2026-12-05T12:00:00", "22:00", "07:00", "UTC", None),
        ("2026-12-05T13:00:00", "12:00", "14:00", "UTC", "2026-12-05T14:00:00"),  # within one day
        # Paris is UTC+1 in December: 23:30 local is 22:30 UTC; 07:00 local is 06:00 UTC.
        ("2026-12-04T22:30:00", "22:00", "07:00", "Europe/Paris", "2026-12-05T06:00:00"),
        # and UTC+2 in July (daylight saving time)
        ("2026-07-04T21:30:00", "22:00", "07:00", "Europe/Paris", "2026-07-05T05:00:00"),
        ("2026-12-04T20:00:00", "01:00", "02:00", "UTC+05:30", "2026-12-04T20:30:00"),  # 01:30 local
    ],
)
def test_a_notification_in_quiet_hours_is_due_at_their_end(
    now: str, start: str, end: str, tz: str, due: str | None
) -> None:
    minutes = [int(t[:2]) * 60 + int(t[3:]) for t in (start, end)]
    found = quiet_until(at(now), minutes[0], minutes[1], tz)
    assert found == (at(due) if due else None)


def test_an_unknown_zone_is_refused() -> None:
    for name in ("Mars/Olympus", "UTC+25:00", "+02:00", "../etc/passwd"):
        with pytest.raises(ValueError):
            zone(name)
