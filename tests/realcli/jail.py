"""Run a command as a stranger to this machine: unprivileged, fresh HOME, no network but loopback.

Used as ``unshare -n python3 jail.py UID GID -- ARGV...`` (as root), where it brings the
namespace's loopback up, drops to UID/GID and execs ARGV with the environment it was given.
Standard library only, so it runs under any python3.
"""

from __future__ import annotations

import fcntl
import os
import socket
import struct
import sys

SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1


def loopback_up() -> None:
    """Bring `lo` up in a fresh network namespace, where it starts down."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))


def main(argv: list[str]) -> None:
    uid, gid, sep, *command = argv
    if sep != "--" or not command:
        raise SystemExit("usage: jail.py UID GID -- ARGV...")
    if os.geteuid() == 0:
        loopback_up()
        os.setgroups([])
        os.setgid(int(gid))
        os.setuid(int(uid))
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
