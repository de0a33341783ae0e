"""The pinned real harness CLIs, installed from the npm registry into a cache outside the checkout.

Bumping a version here is how the project learns whether its adapters still fit a new release:
the real-CLI suite runs each adapter's argv against exactly these builds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Cli:
    """One pinned CLI: its npm package, version, and the executable it installs."""

    harness: str
    package: str
    version: str
    binary: str

    @property
    def folder_name(self) -> str:
        return f"{self.package.replace('@', '').replace('/', '-')}-{self.version}"


PINNED: dict[str, Cli] = {
    cli.harness: cli
    for cli in (
        Cli("claude", "@anthropic-ai/claude-code", "2.1.332", "claude"),
        Cli("codex", "@openai/codex", "0.171.0", "codex"),
        Cli("opencode", "opencode-ai", "1.18.33", "opencode"),
        Cli("gemini", "@google/gemini-cli", "0.61.0", "gemini"),
        Cli("copilot", "@github/copilot", "1.0.102", "copilot"),
    )
}

INSTALL_TIMEOUT = 1800.0
PROBE_TIMEOUT = 60.0


def cache_root() -> Path:
    """Where installs are kept between runs: BOT_REALCLI_CACHE, else a per-user or system cache.

    As root the default is /var/cache, because the CLIs then run as an unprivileged user, who
    cannot enter root's home directory.
    """
    explicit = os.environ.get("BOT_REALCLI_CACHE")
    if explicit:
        return Path(explicit)
    if os.geteuid() == 0:
        return Path("/var/cache/bot-board/realcli")
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "bot-board" / "realcli"


def binary_path(cli: Cli, root: Path | None = None) -> Path:
    return (root or cache_root()) / cli.folder_name / "node_modules" / ".bin" / cli.binary


def registry_unreachable() -> str | None:
    """Why the registry cannot be used here, or None when `npm` answers for a pinned package."""
    if shutil.which("npm") is None:
        return "npm is not installed"
    probe = next(iter(PINNED.values()))
    try:
        done = subprocess.run(
            ["npm", "view", f"{probe.package}@{probe.version}", "version"],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "the npm registry did not answer within a minute"
    if done.returncode != 0 or probe.version not in done.stdout:
        return f"the npm registry cannot be reached: {done.stderr.strip()[-300:]}"
    return None


def install(cli: Cli, root: Path | None = None) -> Path:
    """Install one pinned CLI unless its cached copy is complete; return its executable.

    Installs go to a temporary folder renamed into place, so an interrupted install never
    leaves a half-filled folder that later runs would trust, and two runs installing at
    once both end with the same complete folder.
    """
    root = root or cache_root()
    target = binary_path(cli, root)
    if target.exists():
        return target
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    staging = Path(tempfile.mkdtemp(prefix=f".{cli.folder_name}.", dir=root))
    try:
        subprocess.run(
            [
                "npm",
                "install",
                "--prefix",
                str(staging),
                "--no-audit",
                "--no-fund",
                "--no-save",
                "--loglevel=error",
                f"{cli.package}@{cli.version}",
            ],
            check=True,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
        )
        staging.chmod(0o755)
        try:
            staging.rename(root / cli.folder_name)
        except OSError:
            if not target.exists():  # not another run finishing the same install first
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target


if __name__ == "__main__":  # warm the cache: python3 tests/realcli/clis.py
    for pinned in PINNED.values():
        print(pinned.harness, install(pinned))
