"""What a request must be before any route sees it: a known ``Host``, a URL of at most 8 KiB.

The address documents name comes from here too.

**Host.** A page on an attacker's site can rebind its own name to 127.0.0.1 and then
read what the board serves to loopback (``/metrics``) or the documents it
would fill with that name. A rebinding always arrives with the attacker's name
in ``Host``, so the board answers only to names it knows:

- loopback, always: ``localhost``, ``127.0.0.0/8`` and ``[::1]``, with any port;
- the host of ``BOARD_PUBLIC_URL``, when set;
- the bind address, when it names one address or host;
- bound to every interface (``0.0.0.0``, ``::``) without a public URL: any IP
  literal (a rebinding needs a name) and this machine's own host name.

Anything else is ``MISDIRECTED_REQUEST`` (421), and so is any ``Host`` that is not
an address a board can have: a DNS name, an IPv4 address or a bracketed IPv6
address without a zone id, each with an optional port. Documents and the
installer repeat the accepted ``Host``, so nothing else (quotes, ``$``, ``%``)
may pass. A request without ``Host`` (HTTP/1.0) cannot come from a browser page
and is answered; its documents name the address the connection arrived on.

**URL length.** A URL over :data:`MAX_URL` bytes is ``LIMIT_EXCEEDED`` in the
JSON envelope. The HTTP parser itself accepts request lines up to
:data:`MAX_LINE` (:data:`SERVER_ARGS`, used by ``board serve`` and the tests),
so that it is this check, not the parser's plain-text 400 echoing the line,
that answers.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from ..errors import LimitExceeded, Misdirected
from ..settings import Settings
from ..validation import too_large

WILDCARDS = ("", "0.0.0.0", "::")
MAX_URL = 8192
MAX_LINE = 1024 * 1024  # as large as a body may be
#: Arguments of the aiohttp server running the board.
SERVER_ARGS: dict[str, Any] = {
    "handler_cancellation": True,  # a caller who hangs up frees its long-poll at once
    "max_line_size": MAX_LINE,
}


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
#: A Host a board can have: a DNS name or IPv4 address, or "[IPv6]" (no zone id), and a port.
HOST_SYNTAX = re.compile(rf"(?:{LABEL}(?:\.{LABEL})*\.?|\[[0-9a-f:.]+\])(?::[0-9]{{1,5}})?", re.IGNORECASE)


def well_formed(host: str) -> bool:
    """Whether ``host`` is a name or address with an optional port, and nothing else."""
    if len(host) > 255 or not HOST_SYNTAX.fullmatch(host):
        return False
    if host.startswith("["):
        return isinstance(_ip(host[1:].partition("]")[0]), ipaddress.IPv6Address)
    return True


def host_name(authority: str) -> str:
    """The host of a ``Host`` header or URL authority: no port, no brackets, lower case."""
    authority = authority.strip().lower()
    if authority.startswith("["):
        inside, bracket, port = authority[1:].partition("]")
        # Only "[ip]" or "[ip]:port": "[::1].evil.example" is a name, not loopback.
        ok = bracket and (not port or (port[:1] == ":" and port[1:].isdigit()))
        return inside if ok else authority
    name, colon, port = authority.rpartition(":")
    if colon and port.isdigit() and ":" not in name:
        authority = name
    return authority.rstrip(".")


def public_url(text: str) -> str:
    """``BOARD_PUBLIC_URL`` checked: an http(s) URL with a host; without its trailing slash."""
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(
            f"BOARD_PUBLIC_URL must be an http(s) URL like https://board.example:8080, not {text!r}"
        )
    return text.rstrip("/")


#: How many distinct accepted ``Host`` values are remembered (a board is asked under a few).
ACCEPTED_KEPT = 64


@dataclass(frozen=True)
class Hosts:
    """The names this board answers to (see the module's docstring)."""

    names: frozenset[str]
    any_ip: bool
    public_url: str
    # Host values already accepted, so the usual request skips parsing its address. Only
    # accepted ones, and a bounded number: a caller sending made-up names fills nothing.
    _accepted: set[str] = field(default_factory=set, compare=False, repr=False)

    @classmethod
    def from_settings(cls, settings: Settings) -> Hosts:
        names = {"localhost"}
        url = public_url(settings.public_url) if settings.public_url else ""
        if url:
            names.add(host_name(urlsplit(url).netloc.rpartition("@")[2]))
        wildcard = settings.bind in WILDCARDS
        if not wildcard:
            names.add(host_name(settings.bind))
        elif not url:
            me = socket.gethostname().lower()
            names.update({me, f"{me}.local"})
        return cls(frozenset(names), wildcard and not url, url)

    def accepts(self, host: str | None) -> bool:
        if host is None or host in self._accepted:
            return True
        if not well_formed(host):
            return False
        name = host_name(host)
        ip = _ip(name)
        accepted = (ip is not None and (ip.is_loopback or self.any_ip)) or name in self.names
        if accepted and len(self._accepted) < ACCEPTED_KEPT:
            self._accepted.add(host)
        return accepted

    def board_url(self, request: web.Request) -> str:
        """The address documents and prompts name: the public URL, else the (accepted) ``Host``
        asked, else (HTTP/1.0 without ``Host``) the address and port the connection arrived on."""
        if self.public_url:
            return self.public_url
        host = request.headers.get("Host")
        bound = request.transport.get_extra_info("sockname") if request.transport else None
        if host is None and bound:
            address, port = bound[:2]
            host = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
        return f"{request.scheme}://{host or request.host}"


def gate_middleware(hosts: Hosts) -> Callable[..., Awaitable[web.StreamResponse]]:
    @web.middleware
    async def gate(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if not hosts.accepts(request.headers.get("Host")):
            raise Misdirected(
                "This board does not answer to that host name; use its address "
                "(BOARD_PUBLIC_URL names the one it answers to besides loopback)."
            )
        if len(request.raw_path) > MAX_URL:
            raise LimitExceeded(too_large("The URL", len(request.raw_path), MAX_URL, "bytes"), limit=MAX_URL)
        return await handler(request)

    return gate
