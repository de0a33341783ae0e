"""Which board a command talks to when it is not told: this machine's own, from its settings.

Every command that talks to a board takes it as ``--board`` (:func:`board_option`): the
flag, else ``BOARD_URL``, else the board that the settings of this machine describe (its
``board.toml`` under the ``BOARD_*`` variables, as ``board serve`` reads them). So a
board installed on another port is found by every later shell without BOARD_URL.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import click

from .client import BoardAPIError
from .server.settings import announced_url, load, local_url

F = TypeVar("F", bound=Callable[..., Any])


def own_url(environ: Mapping[str, str] | None = None, *, announced: bool = False) -> str:
    """This machine's board: its loopback address, or (``announced``) the one to hand to others.

    Raises ValueError when the settings do not read (the message names the file).
    """
    settings = load(env=os.environ if environ is None else environ)
    return announced_url(settings) if announced else local_url(settings)


BOARD_VAR = "BOARD_URL"  # what every --board reads when the flag is not given
OLD_FLAG = "--url"  # --board's former name on the board command's verbs: accepted for one release, not shown
DEFAULT_SHOWN = "this machine's board from its settings, e.g. http://127.0.0.1:8080"


class _BoardOption(click.Option):
    """An option whose help shows ``--board`` alone, not its old alias."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        opts = self.opts
        self.opts = [o for o in opts if o != OLD_FLAG]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = opts


def check_board_url(url: str) -> str:
    """url, unless it lacks http:// or https://: then ValueError saying what to add. The client
    cannot call such an address at all, and would report it as the board being down."""
    scheme, sep, rest = url.partition("://")
    if sep and scheme.lower() in ("http", "https") and rest:
        return url
    raise ValueError(f"{url!r} has no http:// or https://: give it as http://{rest if sep else url}")


def _checked(ctx: click.Context, param: click.Parameter, value: str) -> str:
    try:
        return check_board_url(value)
    except ValueError as exc:  # named --board alone, as in the help
        raise click.BadParameter(str(exc), ctx, param, param_hint="'--board'") from None


def board_option(*, announced: bool = False, renamed: bool = False) -> Callable[[F], F]:
    """``--board URL`` (or BOARD_URL), else this machine's board, passed as ``board_url``.

    ``announced``: the address to hand to others (BOARD_PUBLIC_URL when set), for links.
    ``renamed``: the command called it ``--url`` before; that name is still accepted.
    """

    def default() -> str:
        try:
            return own_url(announced=announced)
        except ValueError as exc:
            raise click.ClickException(f"{exc}; or name the board with --board or {BOARD_VAR}") from None

    what = "The board's address, for the link" if announced else "The board's address"
    return click.option(
        "--board",
        *([OLD_FLAG] if renamed else []),
        "board_url",
        cls=_BoardOption,
        envvar=BOARD_VAR,
        default=default,
        callback=_checked,
        show_default=("BOARD_PUBLIC_URL, else " if announced else "") + DEFAULT_SHOWN,
        help=f"{what} [{BOARD_VAR}].",
    )


def refused(exc: BoardAPIError) -> click.ClickException:
    """A board's refusal as a terminal says it, with what to do about the two a person mends
    there: a board that does not answer (nothing came back) and a token it does not know."""
    text = f"{exc.code}: {exc.message}"
    if exc.status == 0:
        text += " (is the board running? `board ctl status` on its machine; and is --board its address?)"
    elif exc.code == "UNAUTHENTICATED":
        text += (
            " (is the token this board's? `board admin token NAME` makes a human's; a bot's comes "
            "with its invite)"
        )
    return click.ClickException(text)
