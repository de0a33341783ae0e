"""Pool mode (``--pool ROOT``): one bot for every channel of its workspace.

Each channel gets its own harness session, run in ``ROOT/<channel>``, one turn
at a time per channel (channels run side by side, a few at once). A channel
whose topic names a git URL is a project: its checkout is cloned into
``ROOT/<channel>`` when missing, and the bot watches the channel. A channel
without one is not the bot's project: the bot answers only what is addressed
to it there, in a plain directory of that name. Messages outside channels
(conversations) share one session run in ``ROOT`` itself.

Clones run as ``git clone`` subprocesses with a timeout, stdin closed and no
terminal prompts, into a temporary directory that is renamed into place only
when complete, so a clone killed halfway leaves nothing that looks like a
checkout.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..client import BoardAPIError, BoardClient
from ..processes import signal_group
from .logs import EventLog

CONVERSATIONS = "_conversations"  # the session key of messages outside channels
DEFAULT_CLONE_TIMEOUT = 600.0  # BOT_CLONE_TIMEOUT, seconds
SLUG = re.compile(r"[a-z0-9._-]{2,64}")
# What counts as "the topic names a git URL": scp-like git@host:path, any
# ssh/git/file URL, or an http(s) URL ending in .git.
GIT_URL = re.compile(
    r"(?:(?:ssh|git|file)://[^\s<>()\"']+"
    r"|git@[\w.-]+:[^\s<>()\"']+"
    r"|https?://[^\s<>()\"']+?\.git)(?=$|[\s<>()\"',;])"
)


def git_url(topic: str | None) -> str | None:
    """The first git URL named in a channel topic, if any."""
    if not topic:
        return None
    match = GIT_URL.search(topic)
    return match.group(0) if match else None


def redact_url(url: str) -> str:
    """A URL without the credentials it may carry (https://user:secret@host/...)."""
    return re.sub(r"^([a-z+]+://)[^/@\s]+@", r"\1***@", url)


async def clone(url: str, dest: Path, *, timeout: float, env: Mapping[str, str]) -> str | None:
    """``git clone url dest``; None when done, else why not."""
    tmp = dest.with_name(f".{dest.name}.cloning")
    shutil.rmtree(tmp, ignore_errors=True)
    proc = await asyncio.create_subprocess_exec(
        "git",
        "clone",
        "--quiet",
        "--",
        url,
        str(tmp),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env={**env, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"},
        start_new_session=True,
    )
    try:
        _, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        signal_group(proc.pid, signal.SIGKILL)
        await proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
        return f"git clone timed out after {timeout:g}s"
    except BaseException:
        signal_group(proc.pid, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        lines = err.decode(errors="replace").strip().splitlines()
        return f"git clone exited {proc.returncode}: {lines[-1] if lines else ''}"
    with contextlib.suppress(OSError):
        dest.rmdir()  # an empty placeholder made before the topic named a URL
    if dest.exists():
        shutil.rmtree(tmp, ignore_errors=True)
        return f"{dest} appeared during the clone; left as it is"
    os.replace(tmp, dest)
    return None


class Pool:
    """Which channels are projects, where each one's session runs, and their checkouts."""

    def __init__(
        self,
        root: Path,
        client: BoardClient,
        log: EventLog,
        *,
        clone_timeout: float = DEFAULT_CLONE_TIMEOUT,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.root = root
        self.client = client
        self.log = log
        self.clone_timeout = clone_timeout
        self.environ = dict(os.environ if environ is None else environ)
        self.topics: dict[str, str] = {}
        self.failed: dict[
            str, str
        ] = {}  # channel -> why its clone failed (not retried until the topic changes)

    def key(self, message: Mapping[str, Any]) -> str:
        channel = message.get("channel")
        return str(channel) if channel and SLUG.fullmatch(str(channel)) else CONVERSATIONS

    def cwd(self, key: str) -> Path:
        """Where the session of this key runs; made on first use."""
        if key == CONVERSATIONS:
            return self.root
        path = self.root / key
        path.mkdir(parents=True, exist_ok=True)
        return path

    def is_project(self, key: str) -> bool:
        """A channel with a checkout: watched, and every post in it is work."""
        return key != CONVERSATIONS and (self.root / key / ".git").exists()

    def watch(self) -> list[str]:
        return sorted(k for k in self.topics if self.is_project(k))[:50]

    def knows(self, key: str) -> bool:
        return key == CONVERSATIONS or key in self.topics

    async def refresh(self) -> None:
        """Read the workspace's channels and clone the checkouts that are missing."""
        topics: dict[str, str] = {}
        after = ""
        while True:
            page = await self.client.channels(after=after or None, limit=500)
            for channel in page.get("channels", []):
                topics[str(channel["slug"])] = str(channel.get("topic") or "")
            if not page.get("has_more") or not page.get("channels"):
                break
            after = str(page["channels"][-1]["slug"])
        for slug, topic in topics.items():
            if self.topics.get(slug) != topic:
                self.failed.pop(slug, None)
        self.topics = topics
        for slug, topic in topics.items():
            url = git_url(topic)
            if url is None or slug in self.failed or not SLUG.fullmatch(slug):
                continue
            dest = self.root / slug
            if (dest / ".git").exists():
                continue
            if dest.exists() and any(dest.iterdir()):
                self.failed[slug] = f"{dest} exists and is not a git checkout"
                self.log.event("clone_skipped", channel=slug, reason=self.failed[slug])
                continue
            self.log.event("clone_started", channel=slug, url=redact_url(url))
            why = await clone(url, dest, timeout=self.clone_timeout, env=self.environ)
            if why is None:
                self.log.event("clone_done", channel=slug)
            else:
                self.failed[slug] = why
                self.log.event("clone_failed", channel=slug, reason=why)

    async def try_refresh(self) -> None:
        """refresh(), logging rather than raising when the board is away."""
        try:
            await self.refresh()
        except BoardAPIError as exc:
            self.log.event("pool_refresh_failed", code=exc.code, error=exc.message)
