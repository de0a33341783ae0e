"""Where a command's secret comes from: the environment or a file of the user's own, not argv.

A command line is readable by every local user (``ps``, /proc/<pid>/cmdline), so a
token (or a keeper's one-time enroll code, which another user could race to spend)
is read from ``--token-file`` (or ``<ENVVAR>_FILE``), a file of mode 0600, else
from the environment variable. ``--token`` still works for a one-off, with a
warning on stderr.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from .launcher.config import ConfigError, read_token_file

F = TypeVar("F", bound=Callable[..., Any])


def token_option(envvar: str, what: str, flag: str = "token") -> Callable[[F], F]:
    """Add ``--<flag>-file`` and ``--<flag>`` to a command, which receives the secret as ``<flag>``."""
    file_key = f"token_input.{flag}_file"

    def remember_file(ctx: click.Context, _param: click.Parameter, value: Path | None) -> None:
        ctx.meta[file_key] = value

    def resolve(ctx: click.Context, _param: click.Parameter, value: str | None) -> str:
        if value:
            click.echo(
                f"warning: --{flag} puts {what} on the command line, readable by every local user; "
                f"set {envvar} or use --{flag}-file (mode 0600).",
                err=True,
            )
            return value
        path = ctx.meta.get(file_key)
        if path is not None:
            return _from_file(path)
        secret = os.environ.get(envvar, "").strip()
        if secret:
            return secret
        raise click.UsageError(
            f"no {flag}: set {envvar}, or {envvar}_FILE or --{flag}-file to a file of mode 0600 holding it."
        )

    def wrap(fn: F) -> F:
        fn = click.option(
            f"--{flag}",
            callback=resolve,
            help=f"{what.capitalize()} on the command line (readable by every local user; "
            f"prefer {envvar} or --{flag}-file).",
        )(fn)
        return click.option(
            f"--{flag}-file",
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
