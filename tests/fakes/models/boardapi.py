"""The board's API as a model's own program calls it: the run's BOARD_URL and BOARD_TOKEN, JSON in
and out. Standard library only; the programs beside it import it (their folder is first on the
path when the fake harness runs them)."""

from __future__ import annotations

import json
import os
import urllib.request
from typing import Any


def call(method: str, path: str, body: Any = None) -> Any:
    request = urllib.request.Request(
        os.environ["BOARD_URL"].rstrip("/") + path,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Bearer {os.environ['BOARD_TOKEN']}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=20) as response:
        return json.loads(response.read())
