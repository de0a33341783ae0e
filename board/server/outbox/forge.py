"""The ``forge`` sender: a reply out posted as a comment on its GitHub or Forgejo issue.

``POST {api_url}/repos/{owner}/{repo}/issues/{n}/comments`` with ``{"body": ...}``, the same
path on both forges (Forgejo's api_url ends in ``/api/v1``); GitHub takes the token as
``Authorization: Bearer``, Forgejo as ``Authorization: token``. The settings are the intake
source's, read when the row is sent (the token is never in the outbox row). The forge's
comment id is returned so intake knows the comment's echo; errors never carry the token.
"""

from __future__ import annotations

import json

import aiohttp

from ..services.replies import MARKER
from .senders import Delivery, SendFailed, sender

ACCEPT = {"github": "application/vnd.github+json", "forgejo": "application/json"}
SCHEME = {"github": "Bearer", "forgejo": "token"}


def comment(d: Delivery) -> str:
    """The comment: the text, then who wrote it with a link to the thread, then the board's marker."""
    n = d.note
    footer = f"*{n.subject} on Bot Board, in [its thread]({n.link}).*"
    return f"{n.text}\n\n---\n{footer}\n\n{MARKER}{n.idem_key} -->\n"


@sender("forge")
async def forge(d: Delivery) -> str:
    """Post the comment; the id the forge gave it."""
    s = d.settings
    if not s["token"]:
        raise SendFailed(f"source {s['source']} has no API token: set one (docs/intake.md, replies out)")
    if not s["api_url"]:
        raise SendFailed(f"source {s['source']} has no API URL: set api_url (docs/intake.md, replies out)")
    url = f"{s['api_url'].rstrip('/')}/repos/{s['repository']}/issues/{s['issue']}/comments"
    headers = {
        "Authorization": f"{SCHEME[s['forge']]} {s['token']}",
        "Accept": ACCEPT[s["forge"]],
        "User-Agent": "bot-board",
    }
    if s["forge"] == "github":
        headers["X-GitHub-Api-Version"] = "2022-11-28"
    timeout = aiohttp.ClientTimeout(total=d.timeout)
    try:
        async with d.http.post(url, json={"body": comment(d)}, headers=headers, timeout=timeout) as resp:
            if resp.status >= 300:
                raise SendFailed(f"HTTP {resp.status} {resp.reason or ''}".strip())
            raw = await resp.read()
    except aiohttp.ClientError as exc:
        raise SendFailed(f"{type(exc).__name__}: {exc}"[:500]) from exc
    return _comment_id(raw)


def _comment_id(raw: bytes) -> str:
    """The id the forge gave the comment; "" if its answer names none (it is posted all the same:
    trying again would post it twice, and the marker still tells its echo)."""
    try:
        answer = json.loads(raw)
    except ValueError:
        return ""
    found = answer.get("id") if isinstance(answer, dict) else None
    return str(found) if isinstance(found, int | str) and not isinstance(found, bool) else ""
