"""Real receivers for the board's notifications: an HTTP server and an SMTP server on loopback.

:class:`Receiver` is an aiohttp server recording what reaches ``/hook/{name}`` (a webhook:
it checks the signature as a receiver would, and refuses a bad one), ``/slack/{name}`` and
``/ntfy/{name}``; each path can be told to fail its next N posts, or always.
:class:`Mailbox` is an aiosmtpd server that takes a login and records each mail.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import ssl
import subprocess
import time
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import Message
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, Envelope, LoginPassword, Session

from board.client import BoardClient
from board.server.api.keys import OUTBOX
from tests.support.boardtest import Board

SECRET = "a-signing-secret-of-some-length"
MAX_SKEW_S = 300


def verify(secret: str, headers: Any, body: bytes) -> bool:
    """What a receiver does (docs/notifications.md): a fresh timestamp and a matching HMAC."""
    ts = headers.get("X-Board-Timestamp", "")
    if not ts.isdigit() or abs(time.time() - int(ts)) > MAX_SKEW_S:
        return False
    expected = "sha256=" + hmac.new(secret.encode(), ts.encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, headers.get("X-Board-Signature", ""))


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """An HTTP receiver; ``fail[path] = n`` answers 500 to its next n posts (-1: always)."""

    received: list[Received] = field(default_factory=list)
    refused: list[Received] = field(default_factory=list)
    fail: dict[str, int] = field(default_factory=dict)
    server: TestServer | None = None

    async def start(self) -> Receiver:
        app = web.Application()
        app.router.add_post("/{kind}/{name}", self._take)
        self.server = TestServer(app, host="127.0.0.1")
        await self.server.start_server()
        return self

    async def close(self) -> None:
        if self.server is not None:
            await self.server.close()

    def url(self, path: str) -> str:
        assert self.server is not None
        return str(self.server.make_url(path))

    def at(self, path: str) -> list[Received]:
        return [r for r in self.received if r.path == path]

    async def _take(self, request: web.Request) -> web.Response:
        body = await request.read()
        got = Received(request.path, dict(request.headers), body)
        left = self.fail.get(request.path, 0)
        if left:
            self.fail[request.path] = left - 1 if left > 0 else left
            self.refused.append(got)
            return web.Response(status=500, text="receiver says no")
        if request.match_info["kind"] == "hook" and not verify(SECRET, request.headers, body):
            self.refused.append(got)
            return web.Response(status=401, text="bad signature")
        self.received.append(got)
        return web.Response(status=200, text="ok")


class _Handler:
    def __init__(self, mailbox: Mailbox) -> None:
        self.mailbox = mailbox

    async def handle_DATA(self, server: Any, session: Session, envelope: Envelope) -> str:
        content = envelope.original_content or b""
        # As a mail reader shows it: headers unfolded, encoded words (a subject's "…") decoded.
        self.mailbox.mails.append(message_from_bytes(content, policy=policy.default))
        self.mailbox.logins.append(session.auth_data)
        return "250 OK"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made by the openssl command (the test's CA too)."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


class Mailbox:
    """An SMTP server on loopback that takes the login ``board``/``mail-password``.

    ``security`` as a destination says it: ``none`` (plain text, login allowed), ``starttls``
    (STARTTLS required before the login) or ``tls`` (TLS from the first byte), the latter two
    with ``cert`` and ``key`` (:func:`self_signed`).
    """

    USER, PASSWORD = "board", "mail-password"

    def __init__(self, security: str = "none", cert: Path | None = None, key: Path | None = None) -> None:
        self.mails: list[Message] = []
        self.logins: list[Any] = []
        self.port = _free_port()
        self.security = security
        tls: dict[str, Any] = {"auth_require_tls": False}
        if security != "none":
            assert cert is not None and key is not None
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(cert, key)
            starttls = {"tls_context": context, "require_starttls": True}
            # Over TLS from the first byte aiosmtpd does not know the link is encrypted: it is.
            whole = {"ssl_context": context, "auth_require_tls": False}
            tls = whole if security == "tls" else starttls
        self.controller = Controller(
            _Handler(self),
            hostname="127.0.0.1",
            port=self.port,
            authenticator=self._auth,
            **tls,
        )

    def _auth(
        self, server: Any, session: Session, envelope: Envelope, mechanism: str, data: Any
    ) -> AuthResult:
        ok = isinstance(data, LoginPassword) and (data.login, data.password) == (
            self.USER.encode(),
            self.PASSWORD.encode(),
        )
        return AuthResult(success=ok, auth_data=data.login if ok else None)

    def start(self) -> Mailbox:
        self.controller.start()
        return self

    def stop(self) -> None:
        self.controller.stop()

    def settings(self) -> dict[str, Any]:
        return {
            "host": "127.0.0.1",
            "port": self.port,
            "security": self.security,
            "username": self.USER,
            "password": self.PASSWORD,
            "from": "board@example.org",
            "to": "alice@example.org",
        }


async def add_destinations(
    human: BoardClient, receiver: Receiver, mailbox: Mailbox, kinds: list[str], name: str = "a"
) -> dict[str, int]:
    """One destination of each kind for ``human``, each taking ``kinds``: their ids by kind."""
    made = {
        "webhook": await human.create_destination(
            f"hook-{name}", "webhook", url=receiver.url(f"/hook/{name}"), secret=SECRET
        ),
        "slack": await human.create_destination(f"slack-{name}", "slack", url=receiver.url(f"/slack/{name}")),
        "ntfy": await human.create_destination(f"ntfy-{name}", "ntfy", url=receiver.url(f"/ntfy/{name}")),
        "email": await human.create_destination(f"mail-{name}", "email", **mailbox.settings()),
    }
    for destination in made.values():
        await human.set_destination_kinds(destination["id"], kinds)
    return {kind: int(d["id"]) for kind, d in made.items()}


def fast_retries(board: Board, backoff: float = 0.05, attempts: int = 6) -> None:
    """The board's dispatcher retries within the test's time (backoff doubles from ``backoff``)."""
    dispatcher = board.app[OUTBOX]
    dispatcher.backoff, dispatcher.attempts, dispatcher.timeout = backoff, attempts, 5.0
