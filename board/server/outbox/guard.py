"""Where a destination may not point: the board's own machine and its link.

A human may point a destination at any URL or mail server. Without a guard the board would
post to whatever listens on its own loopback (an admin port, a database's HTTP face) or on
the link-local range (a cloud's metadata service at 169.254.169.254), reading nothing back
but still acting there. So by default a send to a loopback, link-local, unspecified or
multicast address is refused; private networks (a LAN's ntfy or mail server) are allowed.
``BOARD_NOTIFY_ALLOW_LOCAL=1`` lifts the refusal (a receiver on the board's own machine).

The check is made on the addresses a name resolves to, when it is sent, not on the name, and
the address connected to is one checked: HTTP goes through :class:`GuardedConnector`, mail
through :func:`connect` (smtplib would try every address of the name, loopback ones too).
"""

from __future__ import annotations

import errno
import ipaddress
import socket
from typing import Any

import aiohttp
from aiohttp.abc import ResolveResult

#: The setting that allows them, as the refusal names it.
SETTING = "BOARD_NOTIFY_ALLOW_LOCAL=1"


class Refused(OSError):
    """A destination's host is an address the board does not send to."""

    def __init__(self, message: str) -> None:
        super().__init__(errno.EACCES, message)  # aiohttp shows an OSError's strerror


def why_refused(address: str) -> str | None:
    """What kind of address this is, when a destination may not reach it; None when it may."""
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return None  # a name: checked once it is resolved
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    for kind in ("loopback", "link_local", "unspecified", "multicast"):
        if getattr(ip, f"is_{kind}"):
            return kind.replace("_", "-")
    return None


def refusal(host: str, address: str, kind: str) -> Refused:
    shown = host if host == address else f"{host} ({address})"
    return Refused(f"{shown} is a {kind} address: the board does not send there unless {SETTING}")


def check_address(host: str) -> None:
    """Refuse a host given as a literal address the board does not send to."""
    kind = why_refused(host)
    if kind is not None:
        raise refusal(host, host, kind)


def connect(host: str, port: int, timeout: float) -> socket.socket:
    """A TCP connection to ``host`` at the first of its addresses a destination may reach that
    answers; refused when it has none (the addresses it has beside them are never tried)."""
    check_address(host)
    found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    kept = [info for info in found if why_refused(str(info[4][0])) is None]
    if not kept:  # getaddrinfo answers at least one address, or raises
        address = str(found[0][4][0])
        raise refusal(host, address, why_refused(address) or "refused")
    failed = OSError(f"no address of {host} answered")
    for family, kind, proto, _, sockaddr in kept:
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(timeout)
            sock.connect(sockaddr)
            return sock
        except BaseException as exc:
            sock.close()
            if not isinstance(exc, OSError):
                raise
            failed = exc
    raise failed


class GuardedConnector(aiohttp.TCPConnector):
    """aiohttp's connector, connecting only to addresses a destination may reach: a literal
    address is checked as given, a name's addresses once resolved (the ones connected to)."""

    async def _resolve_host(self, host: str, port: int, traces: Any = None) -> list[ResolveResult]:
        check_address(host)
        found = await super()._resolve_host(host, port, traces=traces)
        kept = [r for r in found if why_refused(r["host"]) is None]
        if not kept:
            address = found[0]["host"]
            raise refusal(host, address, why_refused(address) or "refused")
        return kept
