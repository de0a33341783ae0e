"""Where a command's token comes from: the environment or a file of the user's own, not argv.

A command line is readable by every local user (``ps``, /proc/<pid>/cmdline), so a
token is read from ``--token-file`` (or ``<ENVVAR>_FILE``), a file of mode 0600,
else from the environment variable. ``--token`` still works for a one-off, with
a warning on stderr.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from .launcher.config import ConfigError, read_token_file

F = TypeVar("F", bound=Callable[..., Any])

_FILE_KEY = "token_input.file"


def token_option(envvar: str, what: str) -> Callable[[F], F]:
    """Add ``--token-file`` and ``--token`` to a command, which receives the token as ``token``."""

    def remember_file(ctx: click.Context, _param: click.Parameter, value: Path | None) -> None:
        ctx.meta[_FILE_KEY] = value

    def resolve(ctx: click.Context, _param: click.Parameter, value: str | None) -> str:
        if value:
            click.echo(
                f"warning: --token puts {what} on the command line, readable by every local user; "
                f"set {envvar} or use --token-file (mode 0600).",
                err=True,
            )
            return value
        path = ctx.meta.get(_FILE_KEY)
        if path is not None:
            return _from_file(path)
        token = os.environ.get(envvar, "").strip()
        if token:
            return token
        raise click.UsageError(f"no token: set {envvar}, or give --token-file PATH (a file of mode 0600).")

    def wrap(fn: F) -> F:
        fn = click.option(
            "--token",
            callback=resolve,
            help=f"{what.capitalize()} on the command line (readable by every local user; "
            f"prefer {envvar} or --token-file).",
        )(fn)
        return click.option(
            "--token-file",
            envvar=f"{envvar}_FILE",
            type=click.Path(dir_okay=False, path_type=Path),
            is_eager=True,
            expose_value=False,
            callback=remember_file,
            help=f"A file of mode 0600 holding {what} [{envvar}_FILE]; else {envvar} is read.",
        )(fn)

    return wrap


def _from_file(path: Path) -> str:
    if not path.exists():
        raise click.UsageError(f"{path}: no such token file.")
    try:
        return read_token_file(path)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
