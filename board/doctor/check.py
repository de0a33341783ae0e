"""One check's answer, and the two ways it is printed: a line for a human, JSON for a script.

The line is ``STATUS CHECK: DETAIL — FIX`` with the status in a column of six
(``ok``, ``warn``, ``FAIL``, ``skip``): scripts grep for ``FAIL``, so the
format is kept as it is.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal

Status = Literal["ok", "warn", "fail", "skip"]
LABELS: dict[str, str] = {"ok": "ok", "warn": "warn", "fail": "FAIL", "skip": "skip"}
#: Below this many MB free in the data folder the disk check fails (warns below twice it).
MIN_FREE_MB = 1024


@dataclass(frozen=True)
class Check:
    """What one check found: ``fix`` says what to do, empty when there is nothing to do."""

    check: str
    status: Status
    detail: str
    fix: str = ""

    def line(self) -> str:
        text = f"{LABELS[self.status]:<6}{self.check}: {self.detail}"
        return f"{text} — {self.fix}" if self.fix else text


def ok(checks: Sequence[Check]) -> bool:
    """Whether nothing needs a human: warnings and skipped checks are allowed."""
    return all(c.status != "fail" for c in checks)


def as_json(checks: Sequence[Check]) -> str:
    return json.dumps({"ok": ok(checks), "checks": [asdict(c) for c in checks]}, indent=2, ensure_ascii=False)


def ago(seconds: float) -> str:
    """A duration as a person reads it: 12 s, 4 min, 3 h, 2 days."""
    for size, unit in ((86400, "days"), (3600, "h"), (60, "min")):
        if seconds >= 2 * size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"
