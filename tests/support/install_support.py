"""A fresh user's machine for install.sh: HOME, environment, the installer's output, what is left.

Shared by the install tests and the journey test: run the installer the way a
person does, read what it printed, talk to the board it started, and find every
process and file of that HOME afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import psutil
from playwright.async_api import Browser

from tests.support.browser_support import Tab, new_tab, use_login_link
from tests.support.processes import ROOT

INSTALL = str(ROOT / "install.sh")


def machine(home: Path, port: int, **extra: str) -> dict[str, str]:
    """A fresh user's environment: nothing of ours but PATH and a shared pip download cache."""
    env = {
        "HOME": str(home),
        "USER": "alice",
        "PATH": os.environ["PATH"],
        "BOARD_PORT": str(port),
        "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip")),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    env.update(extra)
    return env


def run(env: dict[str, str], *args: str, script: str = INSTALL) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", script, *args], env=env, capture_output=True, text=True, timeout=600)


def printed_pid(out: str) -> int:
    found = re.search(r"the board is (?:already )?running at \S+ \(pid (\d+)", out)
    assert found, out
    return int(found.group(1))


def api(url: str, token: str, method: str, path: str, body: object = None) -> dict[str, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url + path, data=data, method=method, headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return dict(json.loads(resp.read()))
    except urllib.error.HTTPError as exc:
        raise AssertionError(f"{method} {path}: {exc.code} {exc.read().decode(errors='replace')}") from None


def machines(url: str, token: str, timeout: float = 60) -> dict[str, bool]:
    """The fleet's machines and whether each is online, once every one has reported."""
    deadline = time.monotonic() + timeout
    while True:
        fleet = api(url, token, "GET", "/api/fleet")["machines"]
        found = {m["name"]: m["online"] for m in fleet}
        if all(found.values()) or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


async def sign_in(browser: Browser, link: str, out: Path) -> Tab:
    """A tab that opened the login link and used it: the board's pages, signed in."""
    return await use_login_link(await new_tab(browser, out), link)


async def signed_in_as(browser: Browser, link: str, out: Path) -> str:
    """Open the login link, use it, and read who the board's pages say is signed in."""
    tab = await sign_in(browser, link, out)
    who = await tab.page.locator(".who").inner_text()
    assert tab.errors == [], tab.errors
    return who


def fleet_bots(url: str, token: str, wanted: str, handles: set[str]) -> dict[str, dict[str, object]]:
    """The fleet's bots once every one of handles is in the wanted state with a live pid."""
    deadline = time.monotonic() + 90
    while True:
        fleet = api(url, token, "GET", "/api/fleet")["machines"]
        bots = {b["handle"]: b for m in fleet for b in m["bots"]}
        ready = {h: bots[h] for h in handles if h in bots and bots[h]["state"] == wanted}
        if len(ready) == len(handles) and all(psutil.pid_exists(b["pid"]) for b in ready.values()):
            return ready
        assert time.monotonic() < deadline, f"not all {wanted}: {bots}"
        time.sleep(0.2)


def belonging_to(home: Path) -> list[str]:
    """Live processes whose working directory, HOME or command line is in home."""
    found = []
    for proc in psutil.process_iter(["pid", "status", "cmdline"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            cmdline = " ".join(proc.info["cmdline"] or [])
            if (
                proc.cwd().startswith(str(home))
                or proc.environ().get("HOME") == str(home)
                or str(home) in cmdline
            ):
                found.append(f"{proc.info['pid']}: {cmdline}")
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def carrying(home: Path, secret: str) -> list[str]:
    """Processes of home with secret on their command line or in their environment."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            environ = proc.environ()
            seen = " ".join(proc.info["cmdline"] or []) + str(environ)
            if environ.get("HOME") == str(home) and secret in seen:
                found.append(f"{proc.info['pid']}: {proc.info['cmdline']}")
    return found


def left_behind(home: Path) -> list[str]:
    """Files in the places an install writes to (other tools' dot folders are not ours)."""
    return sorted(
        str(p.relative_to(home))
        for folder in (".local", ".config")
        for p in (home / folder).rglob("*")
        if not p.is_dir()
    )
