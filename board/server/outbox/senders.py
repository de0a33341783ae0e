"""The senders, one per kind of destination, and the registry they are found in.

Every sender gets a :class:`Delivery` and either returns (sent; a sender may return the
id the receiver gave what it took, kept in the row's ``remote_id``) or raises
:class:`SendFailed` (retried until the last attempt). Error texts are written to the
log page: they say what went wrong (a status, a refusal) and never carry a secret.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import smtplib
import socket
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate
from typing import Any

import aiohttp

from . import guard


class SendFailed(Exception):
    """A send that did not go through; its message is shown on the log page."""


@dataclass(frozen=True)
class Note:
    """What is sent: one outbox row, its link made absolute."""

    id: int
    idem_key: str
    kind: str
    subject: str
    text: str
    link: str
    created_at: str
    #: The absolute link of its destination's page, where a human chooses what it is sent or
    #: pauses it ("" for a reply out to the forge, which has none).
    manage: str = ""


@dataclass(frozen=True)
class Delivery:
    note: Note
    #: The destination's kind and its settings, secrets included (decoded JSON).
    kind: str
    settings: dict[str, Any]
    #: Refuses loopback and link-local addresses unless the board allows them (``guard.py``).
    http: aiohttp.ClientSession
    timeout: float
    #: Whether a sender may reach loopback and link-local addresses (``BOARD_NOTIFY_ALLOW_LOCAL``).
    allow_local: bool = False


Sender = Callable[[Delivery], Awaitable[str | None]]
SENDERS: dict[str, Sender] = {}


def sender(kind: str) -> Callable[[Sender], Sender]:
    """Register the decorated function as the sender of destinations of ``kind``."""

    def register(fn: Sender) -> Sender:
        SENDERS[kind] = fn
        return fn

    return register


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """The webhook signature header's value: ``sha256=`` HMAC-SHA256 of ``<ts>.<body>``."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


async def _post(d: Delivery, data: bytes, headers: dict[str, str]) -> None:
    timeout = aiohttp.ClientTimeout(total=d.timeout)
    try:
        async with d.http.post(d.settings["url"], data=data, headers=headers, timeout=timeout) as resp:
            if resp.status >= 300:
                raise SendFailed(f"HTTP {resp.status} {resp.reason or ''}".strip())
    except aiohttp.ClientError as exc:
        raise SendFailed(f"{type(exc).__name__}: {exc}"[:500]) from exc


@sender("webhook")
async def webhook(d: Delivery) -> None:
    """A generic JSON body, signed with the destination's secret (see docs/notifications.md)."""
    n = d.note
    body = json.dumps(
        {
            "id": n.idem_key,
            "kind": n.kind,
            "subject": n.subject,
            "text": n.text,
            "link": n.link,
            "created_at": n.created_at,
        }
    ).encode()
    ts = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "X-Board-Timestamp": ts,
        "X-Board-Delivery": n.idem_key,
        "X-Board-Signature": signature(str(d.settings.get("secret", "")), ts, body),
    }
    await _post(d, body, headers)


@sender("slack")
async def slack(d: Delivery) -> None:
    """A Slack incoming webhook: ``{"text": ...}``, the link in Slack's own markup."""
    n = d.note
    text = f"*{n.subject}*\n{n.text}\n<{n.link}|Open on the board>"
    await _post(d, json.dumps({"text": text}).encode(), {"Content-Type": "application/json"})


@sender("ntfy")
async def ntfy(d: Delivery) -> None:
    """ntfy: the text as the body of a POST to the topic's URL, title and link in headers."""
    n = d.note
    headers = {"Title": _header(n.subject), "Click": n.link, "Tags": n.kind}
    await _post(d, n.text.encode(), headers)


def _header(value: str) -> str:
    """A header value on one line (ntfy takes UTF-8 in its Title)."""
    return " ".join(value.split())


@sender("email")
async def email(d: Delivery) -> None:
    """Plain text mail over SMTP (STARTTLS, TLS or none) with a login when one is set.

    The standard library's smtplib, in a thread: one short exchange per mail needs no
    new dependency, and the thread keeps its blocking calls off the event loop.
    """
    try:
        await asyncio.wait_for(asyncio.to_thread(_smtp_send, d), d.timeout)
    except TimeoutError as exc:
        raise SendFailed(f"no answer from the mail server in {d.timeout:g} s") from exc
    except (smtplib.SMTPException, OSError) as exc:
        raise SendFailed(f"{type(exc).__name__}: {exc}"[:500]) from exc


class _GuardedSMTP(smtplib.SMTP):
    """smtplib's client connecting only to an address a destination may reach (guard.connect);
    TLS still checks the certificate against the server's name."""

    def _get_socket(self, host: str, port: int, timeout: float) -> socket.socket:
        return guard.connect(host, port, timeout)


class _GuardedSMTPSSL(smtplib.SMTP_SSL, _GuardedSMTP):
    """The same for TLS from the first byte: SMTP_SSL wraps the socket :class:`_GuardedSMTP` makes."""


def _smtp_send(d: Delivery) -> None:
    s, n = d.settings, d.note
    message = EmailMessage()
    message["Subject"] = _header(n.subject)
    message["From"] = s["from"]
    message["To"] = s["to"]
    message["Date"] = formatdate(usegmt=True)  # required by RFC 5322; a client files the mail by it
    message["Message-ID"] = f"<{n.idem_key.replace(':', '.')}@bot-board>"
    manage = f"\nStop or change these mails: {n.manage}\n" if n.manage else ""
    message.set_content(f"{n.text}\n\nOpen on the board: {n.link}\n{manage}")
    host, port, security = s["host"], int(s["port"]), s.get("security", "starttls")
    context = ssl.create_default_context()
    smtp: smtplib.SMTP
    if security == "tls":
        tls = smtplib.SMTP_SSL if d.allow_local else _GuardedSMTPSSL
        smtp = tls(host, port, timeout=d.timeout, context=context)
    else:
        smtp = (smtplib.SMTP if d.allow_local else _GuardedSMTP)(host, port, timeout=d.timeout)
    with smtp:
        if security == "starttls":
            smtp.starttls(context=context)
        if s.get("username"):
            smtp.login(s["username"], s.get("password", ""))
        smtp.send_message(message)
