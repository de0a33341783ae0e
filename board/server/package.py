"""The board's own package, as a wheel built from the code this process runs.

A machine joining the fleet installs the very version its board runs, from the
board itself, with nothing but the package registry for the dependencies. The
wheel is assembled from the ``board`` and ``routines`` packages on disk (side by
side in a checkout and in site-packages alike) and the installed distribution's
metadata; it is pure Python.
"""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile
from functools import cache
from importlib import metadata
from pathlib import Path

from .. import __version__

DIST = "bot-board"
WHEEL_NAME = f"bot_board-{__version__}-py3-none-any.whl"
PACKAGES = ("board", "routines")  # the wheel's top-level packages, as pyproject.toml lists them
SKIP_DIRS = {"__pycache__"}


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _dist_info() -> dict[str, str]:
    dist = metadata.distribution(DIST)
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {DIST}",
        f"Version: {__version__}",
        f"Summary: {dist.metadata['Summary'] or ''}",
        f"Requires-Python: {dist.metadata['Requires-Python'] or '>=3.11'}",
    ]
    lines += [f"Requires-Dist: {req}" for req in dist.requires or [] if "extra ==" not in req]
    scripts = sorted((ep.name, ep.value) for ep in dist.entry_points if ep.group == "console_scripts")
    entry_points = "[console_scripts]\n" + "".join(f"{name} = {value}\n" for name, value in scripts)
    return {
        "METADATA": "\n".join(lines) + "\n",
        "WHEEL": "Wheel-Version: 1.0\nGenerator: bot-board\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        "entry_points.txt": entry_points,
        "top_level.txt": "".join(f"{name}\n" for name in PACKAGES),
    }


@cache
def wheel() -> bytes:
    """The wheel's bytes (built once per process: the code does not change under it)."""
    root = Path(__file__).resolve().parents[2]
    files: list[tuple[str, bytes]] = []
    for name in PACKAGES:
        package = root / name
        for path in sorted(package.rglob("*")):
            inside = path.relative_to(package)
            if path.is_file() and not SKIP_DIRS & set(inside.parts) and path.suffix != ".pyc":
                files.append((f"{name}/{inside.as_posix()}", path.read_bytes()))
    info_dir = f"bot_board-{__version__}.dist-info"
    files += [(f"{info_dir}/{name}", text.encode()) for name, text in _dist_info().items()]
    record = [_record_line(name, data) for name, data in files] + [f"{info_dir}/RECORD,,"]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out:
        for name, data in files:
            out.writestr(name, data)
        out.writestr(f"{info_dir}/RECORD", "\n".join(record) + "\n")
    return buffer.getvalue()
