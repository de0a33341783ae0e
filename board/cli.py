"""The ``board`` command: serve, operate, and talk to a board from a shell."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from .client import BoardAPIError, BoardClient
from .doctor.check import MIN_FREE_MB
from .local_board import board_option, refused
from .shown import escaped_controls, last_line
from .token_input import token_option

T = TypeVar("T")


def _run(coro: Awaitable[T]) -> T:
    return asyncio.run(coro)  # type: ignore[arg-type]


def _settings(db: str | None, **overrides: Any) -> Any:
    from .server.settings import load

    try:
        return load({"db": db, **overrides})
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None


async def _with_services(db: str | None, fn: Callable[[Any], Awaitable[T]]) -> T:
    """Run ``fn(ctx)`` against the database directly (the operator's commands)."""
    from .server.errors import BoardError
    from .server.services import remote
    from .server.services.context import Context
    from .server.store.stores import open_store
    from .server.store.writer import StoreError

    settings = _settings(db)
    try:
        database = open_store(settings, readers=1)
        await database.open()
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None
    ctx = Context(db=database, settings=settings)
    remote.connect(ctx)  # a token revoked here stops working on every running board process
    try:
        return await fn(ctx)
    except BoardError as exc:
        raise click.ClickException(f"{exc.code}: {exc.message}") from None
    finally:
        await database.close()


@click.group()
@click.version_option(package_name="bot-board")
def main() -> None:
    """Bot Board: a message board where a fleet of coding-harness bots coordinates."""


db_option = click.option("--db", envvar="BOARD_DB", help="SQLite database file [BOARD_DB].")


@main.command()
@db_option
@click.option(
    "--database-url",
    envvar="BOARD_DATABASE_URL",
    help="postgresql:// URL: run on PostgreSQL instead of the SQLite file [BOARD_DATABASE_URL].",
)
@click.option("--bind", envvar="BOARD_BIND", help="Address to listen on [127.0.0.1].")
@click.option("--port", envvar="BOARD_PORT", type=int, help="Port [8080].")
@click.option("--routines", "with_routines", is_flag=True, help="Run the routines runner in this process.")
def serve(
    db: str | None, database_url: str | None, bind: str | None, port: int | None, with_routines: bool
) -> None:
    """Run the board server."""
    from .server.api.serving import serve as serve_app
    from .server.app import create_app
    from .server.logs import configure as configure_logs
    from .server.store.stores import database_label
    from .server.store.writer import StoreError

    settings = _settings(db, database_url=database_url, bind=bind, port=port)
    configure_logs(settings.log_level, settings.log_file or None)
    if settings.bind not in ("127.0.0.1", "localhost", "::1"):
        click.echo(
            f"warning: listening on {settings.bind}: anyone who can reach this address and post to a "
            "bot can make it run commands on its machine. Keep the board on loopback or a private "
            "network, and name its address in BOARD_PUBLIC_URL.",
            err=True,
        )

    def started() -> None:
        click.echo(
            f"board: serving http://{settings.bind}:{settings.port} (database {database_label(settings)})",
            err=True,
        )

    try:
        app = create_app(settings)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    if with_routines:
        app.cleanup_ctx.append(_routines_runner(settings))
    try:
        asyncio.run(serve_app(app, settings.bind, settings.port, settings.header_timeout, started))
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:  # the address: in use, not ours, not permitted
        raise click.ClickException(
            f"cannot listen on {settings.bind}:{settings.port}: {exc.strerror or exc}; "
            "set BOARD_PORT (or --port, or `port` in board.toml) to a free port, or BOARD_BIND to "
            "another address."
        ) from None


def _routines_runner(settings: Any) -> Any:
    """The runner inside the board, calling it on loopback with a runner token issued at start."""
    from routines.cli import in_process

    from .server.api.keys import CONTEXT
    from .server.services import auth
    from .server.settings import local_url

    async def issue(app: Any) -> str:
        return await auth.runner_token(app[CONTEXT])

    return in_process(local_url(settings), issue, lambda app: app[CONTEXT].db.duty("routines"))


# -- running in the background, backups ----------------------------------------------


@main.group()
def ctl() -> None:
    """Start, stop and look at the board running in the background (systemd user unit or pid file)."""


def _ctl_board(db: str | None) -> Any:
    from .ctl import Board

    return Board(_settings(db))


def _ctl_do(fn: Callable[[], str]) -> None:
    from .ctl import CtlError

    try:
        click.echo(fn())
    except CtlError as exc:
        raise click.ClickException(str(exc)) from None


@ctl.command("start")
@db_option
def ctl_start(db: str | None) -> None:
    """Start the board; succeeds only once the process started answers /healthz with its pid."""
    from . import ctl as control

    _ctl_do(lambda: control.start(_ctl_board(db)))


@ctl.command("stop")
@db_option
def ctl_stop(db: str | None) -> None:
    """Stop the board (SIGTERM, then SIGKILL after a grace period)."""
    from . import ctl as control

    _ctl_do(lambda: control.stop(_ctl_board(db)))


@ctl.command("restart")
@db_option
def ctl_restart(db: str | None) -> None:
    """Stop the board if it runs, then start it."""
    from . import ctl as control

    board = _ctl_board(db)
    _ctl_do(lambda: control.stop(board) + "\n" + control.start(board))


@ctl.command("status")
@db_option
def ctl_status(db: str | None) -> None:
    """Whether the board runs and answers; exits 3 when it does not."""
    from . import ctl as control

    running, line = control.status(_ctl_board(db))
    click.echo(line)
    if not running:
        sys.exit(3)


@ctl.command("logs")
@db_option
@click.option("-n", "--lines", default=50, show_default=True, type=click.IntRange(1))
def ctl_logs(db: str | None, lines: int) -> None:
    """The last lines of the board's log."""
    from . import ctl as control

    click.echo(control.logs(_ctl_board(db), lines))


@main.command()
@db_option
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="The checks as JSON: {ok, checks: [{check, status, detail, fix}]}.",
)
@click.option(
    "--min-free",
    "min_free_mb",
    type=click.IntRange(0),
    default=MIN_FREE_MB,
    show_default=True,
    help="MB free in the data folder below which the disk check fails (warns below twice it).",
)
@click.pass_context
def doctor(ctx: click.Context, db: str | None, as_json: bool, min_free_mb: int) -> None:
    """Check the board, its database, settings, files, disk, keepers, bots, clocks and runner.

    One line per check with what to do; exits 1 when something needs a human.
    """
    import os

    from .doctor.check import as_json as checks_json
    from .doctor.check import ok
    from .doctor.run import diagnose

    flag = ctx.get_parameter_source("db") == click.core.ParameterSource.COMMANDLINE
    checks = diagnose(os.environ, {"db": db if flag else None}, min_free_mb)
    click.echo(checks_json(checks) if as_json else "\n".join(c.line() for c in checks))
    if not ok(checks):
        sys.exit(1)


def _sqlite_settings(db: str | None) -> Any:
    """The settings of a command that works on the SQLite file only."""
    from .server.services.backups import POSTGRES_BACKUPS

    settings = _settings(db)
    if settings.database_url:
        raise click.ClickException(POSTGRES_BACKUPS)
    return settings


def _store_do(fn: Callable[[], T]) -> T:
    from .server.store.writer import StoreError

    try:
        return fn()
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None


@main.command()
@db_option
@click.argument("dest", type=click.Path(path_type=Path))
def backup(db: str | None, dest: Path) -> None:
    """Copy the database to DEST (a new file, or a folder) while the board keeps running."""
    from .server.store import backup as store

    source = Path(_sqlite_settings(db).db)
    made = _store_do(lambda: store.backup(source, dest))
    click.echo(f"backed up {source} to {made} ({made.stat().st_size} bytes, integrity ok)")


@main.command()
@db_option
@click.argument("source", type=click.Path(path_type=Path))
def restore(db: str | None, source: Path) -> None:
    """Put the backup SOURCE in place of the database; refuses while a board serves it."""
    from .server.store import backup as store

    target = Path(_sqlite_settings(db).db)
    replaced = _store_do(lambda: store.restore(source, target))
    if replaced is not None and replaced.damage is not None:
        click.echo(f"kept the damaged database it replaced ({replaced.damage}) as it was in {replaced.path}")
    elif replaced is not None:
        click.echo(f"saved the database it replaced to {replaced.path}")
    click.echo(f"restored {source} to {target}; start the board to use it")


@main.command("migrate-to")
@db_option
@click.argument("url")
def migrate_to(db: str | None, url: str) -> None:
    """Copy the board (stopped) into the empty PostgreSQL database at URL, then read the copy back."""
    from .server.store import migrate

    report = _store_do(lambda: migrate.migrate(Path(_settings(db).db), url))
    click.echo(report.summary())
    if report.mismatches:
        raise click.ClickException(
            f"the copy is committed but reads back different: {'; '.join(report.mismatches[:3])}. "
            "Keep running on SQLite; drop the PostgreSQL database and migrate again."
        )
    # The settings file, not a shell's BOARD_DATABASE_URL: the board's unit, `board ctl` and every
    # later command read it, where a variable set in one shell would start the board on SQLite again.
    click.echo(
        f"to run on it, with the board stopped: {sys.executable} -m board.server.settings "
        "--set database_url=URL, then board ctl start (docs/scale.md, Moving a SQLite board over)"
    )


@main.group()
def admin() -> None:
    """Operator commands, run on the board's machine against its database."""


@admin.group()
def user() -> None:
    """Humans."""


login_board_option = board_option(announced=True, renamed=True)


@user.command("add")
@db_option
@click.argument("name")
@login_board_option
def user_add(db: str | None, name: str, board_url: str) -> None:
    """Create a human and print a one-time login link."""
    from .server.services import auth

    token = _run(_with_services(db, lambda ctx: auth.add_human(ctx, name)))
    click.echo(f"Created human {name}. One-time login link:")
    click.echo(f"{board_url.rstrip('/')}/login?token={token}")


@user.command("link")
@db_option
@click.argument("name")
@login_board_option
def user_link(db: str | None, name: str, board_url: str) -> None:
    """Print a new one-time login link for an existing human."""
    from .server.services import auth

    token = _run(_with_services(db, lambda ctx: auth.login_link_token(ctx, name)))
    click.echo(f"One-time login link for {name}:")
    click.echo(f"{board_url.rstrip('/')}/login?token={token}")


@admin.command("token")
@db_option
@click.argument("name")
def admin_token(db: str | None, name: str) -> None:
    """Issue an API token (bh_) for a human; printed once, as the last line."""
    from .server.services import auth

    token = _run(_with_services(db, lambda ctx: auth.human_token(ctx, name)))
    click.echo(f"API token for {name} (shown once):")
    click.echo(token)


@admin.command("runner-token")
@db_option
def admin_runner_token(db: str | None) -> None:
    """Issue a token (br_) for `board routines run`; printed once, as the last line."""
    from .server.services import auth

    token = _run(_with_services(db, auth.runner_token))
    click.echo("Routines runner token (shown once):")
    click.echo(token)


@admin.command("invite")
@db_option
@click.argument("workspace")
@click.option("--uses", default=1, show_default=True, type=click.IntRange(1, 1000))
@click.option(
    "--expires-in",
    default=86400,
    show_default=True,
    type=click.IntRange(60),
    help="Seconds until the invite expires.",
)
def admin_invite(db: str | None, workspace: str, uses: int, expires_in: int) -> None:
    """Issue an invite for bots to join WORKSPACE; the code is the last line."""
    from .server.services import auth

    req = auth.InviteRequest(workspace=workspace, uses=uses, expires_in=expires_in)
    result = _run(_with_services(db, lambda ctx: auth.create_invite(ctx, None, req)))
    click.echo(f"Invite to {workspace} ({uses} use(s), expires {result['expires_at']}):")
    click.echo(result["invite"])


@admin.command("enroll-code")
@db_option
@click.argument("machine")
@click.option("--as", "human", envvar="BOARD_USER", required=True, help="The human issuing it [BOARD_USER].")
@login_board_option
@click.option(
    "--expires-in",
    default=3600,
    show_default=True,
    type=click.IntRange(60, 30 * 86400),
    help="Seconds until the code expires.",
)
def admin_enroll_code(db: str | None, machine: str, human: str, board_url: str, expires_in: int) -> None:
    """A one-time code for MACHINE's keeper to enroll with; the code is the last line."""
    from .server.services import auth, fleet
    from .server.validation import parse_body

    async def issue(ctx: Any) -> dict[str, Any]:
        p = await auth.human_principal(ctx, human)
        req = parse_body(fleet.EnrollCodeRequest, {"machine_name": machine, "expires_in": expires_in})
        return await fleet.create_enroll_code(ctx, p, req, board_url.rstrip("/"))

    result = _run(_with_services(db, issue))
    click.echo(f"Enroll code for machine {machine} (expires {result['expires_at']}):")
    click.echo(result["code"])


# -- client verbs ------------------------------------------------------------------


def _client_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = board_option(renamed=True)(fn)
    return token_option("BOARD_TOKEN", "your token")(fn)


def _result(board_url: str, token: str, fn: Callable[[BoardClient], Awaitable[Any]]) -> Any:
    async def go() -> Any:
        async with BoardClient(board_url, token) as board:
            return await fn(board)

    try:
        return _run(go())
    except BoardAPIError as exc:
        raise refused(exc) from None


def _call(board_url: str, token: str, fn: Callable[[BoardClient], Awaitable[Any]]) -> None:
    click.echo(json.dumps(_result(board_url, token, fn), indent=2, ensure_ascii=False))


# -- knowledge ---------------------------------------------------------------------


@main.group()
def kb() -> None:
    """The knowledge base: read, write, list, search, history, diff."""


workspace_option = click.option("--workspace", help="Workspace (humans, admin bots).")


@kb.command("get")
@_client_options
@workspace_option
@click.argument("path")
@click.option("--revision", type=int, help="One revision instead of the current one.")
@click.option("--lines", help="Only these lines, a-b.")
@click.option("--section", help="Only the section under this heading.")
@click.option("--as-of", help="What the knowledge base said at this time.")
@click.option("--json", "as_json", is_flag=True, help="The whole answer as JSON, not just the body.")
def kb_get(
    board_url: str,
    token: str,
    workspace: str | None,
    path: str,
    revision: int | None,
    lines: str | None,
    section: str | None,
    as_of: str | None,
    as_json: bool,
) -> None:
    """Print a document's body (its revision and status go to stderr)."""
    doc = _result(
        board_url,
        token,
        lambda b: b.document(
            path, workspace=workspace, revision=revision, lines=lines, section=section, as_of=as_of
        ),
    )
    if as_json:
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
        return
    click.echo(
        f"{doc['path']} revision {doc['revision']} (latest {doc['latest_revision']}, {doc['status']})",
        err=True,
    )
    click.echo(doc["body"], nl=False)


@kb.command("put")
@_client_options
@workspace_option
@click.argument("path")
@click.argument("source", type=click.File("r", encoding="utf-8"), default="-")
@click.option(
    "--base", "base_revision", type=int, required=True, help="The latest revision you read (0 creates)."
)
@click.option("--reason", required=True, help="Why this change.")
@click.option("--note", "notes", multiple=True, help="A free-text source.")
@click.option("--message", "messages", type=int, multiple=True, help="A message id as a source.")
@click.option("--url-source", "urls", multiple=True, help="A URL as a source.")
@click.option("--override-tombstone", is_flag=True, help="Write a deleted path again.")
def kb_put(
    board_url: str,
    token: str,
    workspace: str | None,
    path: str,
    source: Any,
    base_revision: int,
    reason: str,
    notes: tuple[str, ...],
    messages: tuple[int, ...],
    urls: tuple[str, ...],
    override_tombstone: bool,
) -> None:
    """Write PATH from SOURCE (a file, or - for stdin) on top of --base."""
    body = source.read()
    sources = [{"note": n} for n in notes] + [{"message": m} for m in messages] + [{"url": u} for u in urls]
    _call(
        board_url,
        token,
        lambda b: b.put_document(
            path,
            body,
            base_revision,
            reason,
            workspace=workspace,
            sources=sources or None,
            override_tombstone=override_tombstone or None,
        ),
    )


@kb.command("ls")
@_client_options
@workspace_option
@click.option("--prefix", help="Paths starting with this.")
@click.option("--status", type=click.Choice(["proposed", "settled", "disputed", "superseded"]))
@click.option("--limit", type=int, default=100, show_default=True)
def kb_ls(
    board_url: str, token: str, workspace: str | None, prefix: str | None, status: str | None, limit: int
) -> None:
    """List current documents: path, revision, status, title."""
    page = _result(
        board_url,
        token,
        lambda b: b.knowledge(workspace=workspace, prefix=prefix, status=status, limit=limit),
    )
    for doc in page["documents"]:
        flags = " expired" if doc["expired"] else ""
        click.echo(f"{doc['path']}\tr{doc['revision']}\t{doc['status']}{flags}\t{doc['title']}")
    if page["has_more"]:
        click.echo(f"... more after {page['next_since']}", err=True)


@kb.command("search")
@_client_options
@workspace_option
@click.argument("query")
@click.option("--limit", type=int, default=20, show_default=True)
def kb_search(board_url: str, token: str, workspace: str | None, query: str, limit: int) -> None:
    """Full-text search of current documents, best first."""
    page = _result(board_url, token, lambda b: b.knowledge(workspace=workspace, q=query, limit=limit))
    for doc in page["documents"]:
        click.echo(f"{doc['path']}\tr{doc['revision']}\t{doc['status']}\t{doc['snippet']}")


@kb.command("history")
@_client_options
@workspace_option
@click.argument("path")
@click.option("--limit", type=int, default=20, show_default=True)
def kb_history(board_url: str, token: str, workspace: str | None, path: str, limit: int) -> None:
    """Revisions of a document, newest first."""
    page = _result(
        board_url, token, lambda b: b.document_history(path, workspace=workspace, limit=limit, view="compact")
    )
    for rev in page["revisions"]:
        redacted = " [redacted]" if rev["redacted"] else ""
        click.echo(
            f"r{rev['revision']}\t{rev['recorded_at']}\t{rev['author']}\t{rev['kind']}/{rev['status']}"
            f"{redacted}\t{rev['reason']}"
        )


@kb.command("diff")
@_client_options
@workspace_option
@click.argument("path")
@click.option("--from", "from_revision", type=int, help="Default: the revision before --to.")
@click.option("--to", "to_revision", type=int, help="Default: the latest revision.")
def kb_diff(
    board_url: str,
    token: str,
    workspace: str | None,
    path: str,
    from_revision: int | None,
    to_revision: int | None,
) -> None:
    """A unified diff between two revisions."""
    result = _result(
        board_url,
        token,
        lambda b: b.document_diff(
            path, workspace=workspace, from_revision=from_revision, to_revision=to_revision
        ),
    )
    click.echo(result["diff"], nl=False)


@main.command()
@_client_options
@click.argument("body")
@click.option("--channel", help="Channel of a new root.")
@click.option("--reply-to", type=int, help="Reply in this message's thread.")
@click.option("--workspace", help="Workspace (humans, admin bots).")
@click.option("--tag", "tags", multiple=True)
def post(
    board_url: str,
    token: str,
    body: str,
    channel: str | None,
    reply_to: int | None,
    workspace: str | None,
    tags: tuple[str, ...],
) -> None:
    """Post a message (BODY, or - to read it from stdin)."""
    if body == "-":
        body = sys.stdin.read()
    _call(
        board_url,
        token,
        lambda b: b.post(
            body, channel=channel, reply_to=reply_to, workspace=workspace, tags=list(tags) or None
        ),
    )


@main.command()
@_client_options
@click.option("--channel")
@click.option("--workspace")
@click.option("--thread", type=int)
@click.option("--since", type=int)
@click.option("--limit", type=int, default=20, show_default=True)
@click.option("--compact", is_flag=True, help="Triage rows instead of full messages.")
def read(
    board_url: str,
    token: str,
    channel: str | None,
    workspace: str | None,
    thread: int | None,
    since: int | None,
    limit: int,
    compact: bool,
) -> None:
    """Read messages."""
    _call(
        board_url,
        token,
        lambda b: b.messages(
            channel=channel,
            workspace=workspace,
            thread=thread,
            since=since,
            limit=limit,
            view="compact" if compact else None,
        ),
    )


@main.command()
@_client_options
@click.option("--since", type=int, default=0)
@click.option("--wait", type=click.IntRange(0, 60), default=0)
@click.option("--ack", is_flag=True, help="Mark what is shown as seen.")
def inbox(board_url: str, token: str, since: int, wait: int, ack: bool) -> None:
    """What is waiting for you."""
    _call(board_url, token, lambda b: b.inbox(since=since, wait=wait or None, ack=ack, view="compact"))


@main.command()
@_client_options
@click.argument("query")
@click.option("--workspace")
@click.option("--limit", type=int, default=20, show_default=True)
def search(board_url: str, token: str, query: str, workspace: str | None, limit: int) -> None:
    """Full-text search of messages."""
    _call(board_url, token, lambda b: b.search(query, workspace=workspace, limit=limit, view="compact"))


@main.command()
@_client_options
@click.argument("thread_id", type=int)
@click.option("--note", default="")
def claim(board_url: str, token: str, thread_id: int, note: str) -> None:
    """Claim a thread."""
    _call(board_url, token, lambda b: b.claim(thread_id, note))


@main.command()
@board_option()
def mcp(board_url: str) -> None:
    """The board's MCP server on stdin/stdout, with the token in BOARD_TOKEN (see docs/mcp.md)."""
    import os

    from .mcp.stdio import serve_stdio

    token = os.environ.get("BOARD_TOKEN", "")
    if not token:
        raise click.UsageError("Set BOARD_TOKEN to the bot's token (never a flag: it would show in ps).")
    asyncio.run(serve_stdio(board_url, token))


# -- the fleet -----------------------------------------------------------------------


@main.group()
def fleet() -> None:
    """Machines and the bots on them: list, assign, start, stop, restart, unassign, remove a machine."""


def _bot_line(bot: dict[str, Any]) -> str:
    """One bot as ``/fleet`` shows it, in the words the answer carries for the page: its state
    (its keeper's last word beside it when the page says otherwise: an offline machine, a held
    bot), why a crashed or misconfigured one stopped (the last line of what its daemon printed,
    escaped: a keeper's report is hostile text) and an order on its way."""
    state = bot["state"]
    said = bot["shown_words"]
    if bot["shown"] != state:
        said += f", its keeper last said {state}"
    pid = f" pid {bot['pid']}" if bot.get("pid") else ""
    hold = f" ({bot['hold']})" if bot.get("hold") else ""
    reason = last_line(bot.get("error")) if state in ("misconfigured", "crashed") else ""
    why = f" ({escaped_controls(reason, keep='')})" if reason else ""
    pending = f"; {bot['pending_words']}" if bot.get("pending_words") else ""
    wake = bot.get("last_wake") or {}
    last = f"; last wake {wake['at']}" if wake.get("at") else ""
    if last and wake.get("outcome"):
        last += f" {escaped_controls(wake['outcome'], keep='')}"  # from a keeper's report: hostile
    return (
        f"  {bot['handle']} ({bot['workspace']}/{bot['profile']}): {said}{pid}{hold}{why}, "
        f"should be {bot['desired']}{pending}; restarts {bot.get('restarts') or 0}{last}"
    )


@fleet.command("ls")
@_client_options
@click.option("--json", "as_json", is_flag=True, help="The whole answer as JSON.")
def fleet_ls(board_url: str, token: str, as_json: bool) -> None:
    """Every machine, online or stale, with its bots and their states."""
    answer = _result(board_url, token, lambda b: b.fleet(limit=500))
    if as_json:
        click.echo(json.dumps(answer, indent=2, ensure_ascii=False))
        return
    if not answer["machines"]:
        click.echo("no machines; add one with an enroll code (POST /api/fleet/enroll-codes)")
    for machine in answer["machines"]:
        status = machine["status"]
        if machine.get("stale_for_s") is not None:
            status += f" for {machine['stale_for_s']:.0f} s"
        load = ", ".join(f"{x:g}" for x in machine.get("load", []))
        click.echo(f"{machine['name']} ({machine['hostname']}): {status}; load {load or '-'}")
        for row in machine["bots"]:
            click.echo(_bot_line(row))


@fleet.command("assign")
@_client_options
@click.argument("handle")
@click.option("--machine", required=True, help="The machine to run it on.")
@click.option("--profile", required=True, help="The launch profile it runs with.")
def fleet_assign(board_url: str, token: str, handle: str, machine: str, profile: str) -> None:
    """Put HANDLE (a new bot, or one of the profile's workspace) on a machine; it starts."""
    _call(board_url, token, lambda b: b.assign_bot(machine, profile, handle))


def _order_command(kind: str, help_text: str) -> None:
    @fleet.command(kind, help=help_text)
    @_client_options
    @click.argument("handle")
    def send(board_url: str, token: str, handle: str) -> None:
        _call(board_url, token, lambda b: b.fleet_order(handle, kind))


for _kind, _help in (
    ("start", "Start HANDLE (and clear a crash loop)."),
    ("stop", "Stop HANDLE; it stays assigned."),
    ("restart", "Restart HANDLE (and clear a crash loop)."),
):
    _order_command(_kind, _help)


@fleet.command("unassign")
@_client_options
@click.argument("handle")
def fleet_unassign(board_url: str, token: str, handle: str) -> None:
    """Stop HANDLE and take it off its machine; its tokens are revoked."""
    _call(board_url, token, lambda b: b.unassign_bot(handle))


@fleet.command("remove-machine")
@_client_options
@click.argument("name")
@click.confirmation_option(
    prompt="Its bots are unassigned and stopped, and its keeper's token stops. Remove it?"
)
def fleet_remove_machine(board_url: str, token: str, name: str) -> None:
    """Remove machine NAME: its bots are unassigned first, then its keeper is refused (--yes: do not ask)."""
    _call(board_url, token, lambda b: b.remove_machine(name))


from routines.cli import routines  # noqa: E402 - the `routines` group lives with the runner

from .launcher.cli import main as bot  # noqa: E402 - the `bot` group lives with the daemon

main.add_command(bot)
main.add_command(routines)


if __name__ == "__main__":
    main()
