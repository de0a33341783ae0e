"""Which board a command talks to when it is not told: this machine's own, from its settings.

Every ``--url``/``--board`` option comes from :func:`url_option`: the flag, else
``BOARD_URL``, else the board that the settings of this machine describe (its
``board.toml`` under the ``BOARD_*`` variables, as ``board serve`` reads them). So a
board installed on another port is found by every later shell without BOARD_URL.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import click

from .server.settings import announced_url, load, local_url

F = TypeVar("F", bound=Callable[..., Any])


def own_url(environ: Mapping[str, str] | None = None, *, announced: bool = False) -> str:
    """This machine's board: its loopback address, or (``announced``) the one to hand to others.

    Raises ValueError when the settings do not read (the message names the file).
    """
    settings = load(env=os.environ if environ is None else environ)
    return announced_url(settings) if announced else local_url(settings)


def url_option(
    flag: str = "--url", dest: str | None = None, *, announced: bool = False, what: str = "The board"
) -> Callable[[F], F]:
    """``flag`` (or ``BOARD_URL``), else this machine's board; ``announced``: for links others open."""

    def default() -> str:
        try:
            return own_url(announced=announced)
        except ValueError as exc:
            raise click.ClickException(f"{exc}; or name the board with {flag} or BOARD_URL") from None

    shown = "BOARD_PUBLIC_URL, else " if announced else ""
    return click.option(
        flag,
        *([dest] if dest else []),
        envvar="BOARD_URL",
        default=default,
        show_default=f"{shown}this machine's board from its settings, e.g. http://127.0.0.1:8080",
        help=f"{what} [BOARD_URL].",
    )
