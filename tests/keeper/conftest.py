"""The keeper's tests reuse the launcher's end-to-end helpers (a live board, the fakes)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "launcher"))

from botrun import live, world  # noqa: F401 - end-to-end fixtures, found by name
