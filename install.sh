#!/usr/bin/env bash
# Install Bot Board for this user. Works from a checkout and piped from curl:
#
#   curl -fsSL <board or repo URL>/install.sh | bash                 the board here, with a keeper
#   curl -fsSL <board>/install.sh | KEEPER_ENROLL_CODE=CODE bash -s -- keeper   this machine joins the fleet
#   KEEPER_ENROLL_CODE=CODE bash install.sh keeper --board URL       the same, naming the board
#   bash install.sh bot [ARGS...]                                    only the commands; then `bot ARGS...`
#   bash install.sh upgrade                                          back up, install the new version, restart
#   bash install.sh uninstall [--purge]                              stop and remove it (--purge: the data too)
#
# Never needs root; re-running a mode is safe. It runs the board and the keeper as
# systemd user units where `systemctl --user` works, else as background processes
# with pid files (`board ctl start|stop|status|logs`). Where things go (environment):
#   BOARD_HOME    ~/.local/share/bot-board   the virtual environment
#   BOARD_STATE   ~/.local/state/bot-board   database, logs, pid files, backups, keeper state
#   BIN_DIR       ~/.local/bin               the `board`, `bot` and `keeper` commands
#   BOARD_SOURCE  what to install: a checkout, a wheel or sdist (file or URL), or a git URL.
#                 Default: the checkout holding this script, else the package of the board
#                 that served it, else the project's repository.
#   BOARD_PORT, BOARD_BIND, BOARD_PUBLIC_URL, BOARD_DATABASE_URL  when given, recorded with the
#                 database in board.toml (BOARD_CONFIG, default ~/.config/bot-board/board.toml),
#                 which the board's unit and every later `board`, `bot` and `keeper` command read
#   BOARD_USER    the human to create (default: $USER);  PYTHON  python3
set -euo pipefail

# Filled in when a board serves this script at /install.sh.
SERVED_BY='{{BOARD_URL}}'
SERVED_PACKAGE='{{BOARD_PACKAGE}}'
case "$SERVED_BY" in *'{'*) SERVED_BY="" SERVED_PACKAGE="" ;; esac
REPOSITORY="https://github.com/bot-board/bot-board.git"

BOARD_HOME=${BOARD_HOME:-$HOME/.local/share/bot-board}
BOARD_STATE=${BOARD_STATE:-$HOME/.local/state/bot-board}
BIN_DIR=${BIN_DIR:-$HOME/.local/bin}
BOARD_USER=${BOARD_USER:-${USER:-admin}}
PYTHON=${PYTHON:-python3}
export BOARD_DB="$BOARD_STATE/board.db"
config=${BOARD_CONFIG:-${XDG_CONFIG_HOME:-$HOME/.config}/bot-board/board.toml}
export KEEPER_STATE_DIR="$BOARD_STATE/keeper"
venv="$BOARD_HOME/venv"
units="${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user"
here=""
if [ -n "${BASH_SOURCE[0]:-}" ] && [ -f "${BASH_SOURCE[0]}" ]; then
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fi

say() { printf 'bot-board: %s\n' "$*"; }
die() { printf 'bot-board: %s\n' "$*" >&2; exit 1; }

# -- the package -------------------------------------------------------------------

# What pip installs: a checkout folder, a wheel or sdist, or git+URL.
package_spec() {
    local src=${BOARD_SOURCE:-}
    if [ -z "$src" ]; then
        if [ -n "$here" ] && [ -f "$here/pyproject.toml" ]; then src=$here
        elif [ -n "$SERVED_PACKAGE" ]; then src=$SERVED_PACKAGE
        else src="git+$REPOSITORY"; fi
    fi
    case "$src" in
        git+*) printf '%s\n' "$src" ;;
        http://*.whl | https://*.whl | http://*.tar.gz | https://*.tar.gz) printf '%s\n' "$src" ;;
        http://* | https://* | ssh://*) printf 'git+%s\n' "$src" ;;
        *)
            if [ -d "$src" ] && [ -f "$src/pyproject.toml" ]; then (cd "$src" && pwd)
            elif [ -f "$src" ] && case "$src" in *.whl | *.tar.gz) true ;; *) false ;; esac; then
                printf '%s/%s\n' "$(cd "$(dirname "$src")" && pwd)" "$(basename "$src")"
            else
                die "BOARD_SOURCE=$src is not a checkout (no pyproject.toml), a .whl or .tar.gz, or a git URL"
            fi ;;
    esac
}

install_package() {  # $1: "upgrade" to reinstall the same version too
    "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
        || die "needs Python 3.11 or newer (set PYTHON=/path/to/python3.11)"
    local spec pip
    spec=$(package_spec)
    mkdir -p "$BOARD_HOME" "$BIN_DIR"
    mkdir -p -m 700 "$BOARD_STATE"  # the database and its backups: no other local user reads them
    if [ ! -x "$venv/bin/python" ]; then
        "$PYTHON" -m venv "$venv" || die "could not create a virtual environment (on Debian: apt install python3-venv)"
        say "created the virtual environment $venv"
    fi
    pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
    build_copy=""
    if [ -d "$spec" ]; then
        # pip builds a checkout in place, and setuptools' build/ keeps every file it ever
        # copied: a migration renamed since an earlier install would ship under both names
        # and stop the board at start. So a checkout is built from a clean copy of it.
        build_copy=$(mktemp -d) || die "could not make a temporary folder"
        trap 'rm -rf "$build_copy"' EXIT
        # Caches stay out: tools write to them while the copy is read (a test run beside it).
        tar -C "$spec" --exclude=./build --exclude=./.venv --exclude=./.git --exclude='*.egg-info' \
            --exclude=./.mypy_cache --exclude=./.ruff_cache --exclude=./.pytest_cache \
            --exclude=./.hypothesis --exclude=./.schemathesis --exclude=__pycache__ -cf - . \
            | tar -C "$build_copy" -xf - || die "could not copy $spec to build it"
    fi
    if [ "${1:-}" = upgrade ]; then
        "${pip[@]}" --force-reinstall --no-deps "${build_copy:-$spec}"
    fi
    "${pip[@]}" "${build_copy:-$spec}"
    if [ -n "$build_copy" ]; then rm -rf "$build_copy"; trap - EXIT; fi  # modes may exec next
    local cmd linked=()
    for cmd in board bot keeper; do
        if [ -x "$venv/bin/$cmd" ]; then ln -sf "$venv/bin/$cmd" "$BIN_DIR/$cmd" && linked+=("$BIN_DIR/$cmd"); fi
    done
    say "installed bot-board $("$venv/bin/board" --version | awk '{print $NF}') from $spec into $venv"
    say "commands: ${linked[*]}"
    case ":$PATH:" in *":$BIN_DIR:"*) ;; *) say "add $BIN_DIR to your PATH to run them by name" ;; esac
}

# -- services ----------------------------------------------------------------------

systemd_works() { command -v systemctl >/dev/null 2>&1 && systemctl --user show-environment >/dev/null 2>&1; }

# write_unit NAME DESCRIPTION COMMAND...: a systemd user unit, enabled; nothing without systemd.
write_unit() {
    local name=$1 what=$2
    shift 2
    systemd_works || return 0
    local exec_line
    exec_line=$(printf '"%s" ' "$@")
    mkdir -p "$units"
    cat >"$units/$name.service" <<EOF
[Unit]
Description=Bot Board: $what

[Service]
ExecStart=${exec_line% }
Environment="BOARD_CONFIG=$config"
Environment="KEEPER_STATE_DIR=$KEEPER_STATE_DIR"
Restart=on-failure
StandardOutput=append:$BOARD_STATE/$name.log
StandardError=inherit

[Install]
WantedBy=default.target
EOF
    systemctl --user daemon-reload
    systemctl --user enable --quiet "$name"
    say "wrote the systemd user unit $units/$name.service"
}

remove_unit() {
    local name=$1
    [ -f "$units/$name.service" ] || return 0
    if systemd_works; then systemctl --user disable --now --quiet "$name" || true; fi
    rm -f "$units/$name.service"
    if systemd_works; then systemctl --user daemon-reload; fi
    say "removed the systemd user unit $name.service"
}

has_keeper() { [ -x "$venv/bin/keeper" ]; }

keeper_pid() {  # the running keeper's pid, or nothing
    local pidfile="$KEEPER_STATE_DIR/keeper.pid"
    if [ -f "$units/keeper.service" ] && systemd_works; then
        systemctl --user show --property MainPID --value keeper | grep -v '^0$' || true
    elif [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
        cat "$pidfile"
    fi
}

start_keeper() {
    if [ -n "$(keeper_pid)" ]; then
        say "the keeper is already running (pid $(keeper_pid))"
        return
    fi
    write_unit keeper "the keeper of this machine's bots" "$venv/bin/keeper" run
    if [ -f "$units/keeper.service" ] && systemd_works; then
        systemctl --user start keeper
    else
        mkdir -p "$KEEPER_STATE_DIR"
        nohup "$venv/bin/keeper" run >>"$BOARD_STATE/keeper.log" 2>&1 </dev/null &
    fi
    local _
    for _ in $(seq 100); do
        if "$venv/bin/keeper" status >/dev/null 2>&1 && [ -n "$(keeper_pid)" ]; then
            say "the keeper is running (pid $(keeper_pid), log $BOARD_STATE/keeper.log)"
            return
        fi
        sleep 0.2
    done
    die "the keeper did not start; see $BOARD_STATE/keeper.log"
}

stop_keeper() {
    local pid
    pid=$(keeper_pid)
    remove_unit keeper
    pid=${pid:-$(keeper_pid)}
    if [ -n "$pid" ] && kill "$pid" 2>/dev/null; then
        local _
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        say "stopped the keeper (pid $pid)"
    fi
}

# The keeper starts each bot daemon in a session of its own and leaves it running when it
# stops (a new keeper adopts it), so uninstall stops them itself, from their pid locks:
# TERM each daemon's group, wait, then KILL every group it and its harnesses had.
stop_bots() {  # every daemon of this machine, one the keeper started a moment ago included
    [ -x "$venv/bin/python" ] || return 0
    "$venv/bin/python" -c 'import asyncio, os
from board.keeper.processes import stop_all
print("bot-board: " + asyncio.run(stop_all(os.environ)))' || say "could not stop the bot daemons (see above)"
}

# -- modes ---------------------------------------------------------------------------

# What this install was told, into board.toml (its other keys kept): the board, its unit and
# every later shell's commands then agree on the database, the port and the addresses.
write_settings() {
    local key var args=(--set "db=$BOARD_DB")
    for key in port bind public_url database_url; do
        var=BOARD_${key^^}
        if [ -n "${!var:-}" ]; then args+=(--set "$key=${!var}"); fi
    done
    say "$(BOARD_CONFIG="$config" "$venv/bin/python" -m board.server.settings "${args[@]}")"
}

login_link() {  # prints the link (with the board's address from its settings); what it did goes to stderr
    local board="$venv/bin/board"
    if "$board" admin user add "$BOARD_USER" >"$BOARD_STATE/login.txt" 2>/dev/null; then
        say "created the human '$BOARD_USER'" >&2
    else
        "$board" admin user link "$BOARD_USER" >"$BOARD_STATE/login.txt"
    fi
    tail -n 1 "$BOARD_STATE/login.txt"
}

start_board() {
    write_unit board "the board, with its routines runner" "$venv/bin/board" serve --routines
    local started
    started=$("$venv/bin/board" ctl start) || die "the board did not start (see above)"
    say "$started"
}

enroll_keeper() {  # enroll_keeper URL CODE: once per machine; no URL: this machine's board
    if "$venv/bin/keeper" status >/dev/null 2>&1; then
        say "this machine's keeper is already enrolled ($KEEPER_STATE_DIR)"
    else
        local enrolled
        # The code goes in the environment, not on a command line another local user could read and race.
        enrolled=$(KEEPER_ENROLL_CODE="$2" "$venv/bin/keeper" enroll ${1:+--board "$1"}) ||
            die "the keeper could not enroll (see above)"
        say "$(printf '%s\n' "$enrolled" | head -n 1)"
    fi
}

mode_install() {
    install_package
    write_settings
    local link
    link=$(login_link)
    start_board
    if has_keeper; then
        if ! "$venv/bin/keeper" status >/dev/null 2>&1; then
            local code
            code=$("$venv/bin/board" admin enroll-code "$(hostname)" --as "$BOARD_USER" | tail -n 1)
            enroll_keeper "" "$code"
        fi
        start_keeper
    fi
    if [ -n "$(database_url)" ]; then
        say "database $(database_label), backups with pg_dump (docs/scale.md#backups)"
    else
        say "database $BOARD_DB, backups with: board backup DEST"
    fi
    say "sign in with this one-time link: $link"
}

mode_keeper() {
    local board=${SERVED_BY:-} code=${KEEPER_ENROLL_CODE:-}
    unset KEEPER_ENROLL_CODE  # spent by the enrolment; the keeper and its bots need not carry it
    while [ $# -gt 0 ]; do
        case "$1" in
            --board) board=${2:?--board needs a URL}; shift 2 ;;
            --code) code=${2:?--code needs the enroll code}; shift 2 ;;  # on the command line: prefer the variable
            *) die "keeper mode takes --board URL (and KEEPER_ENROLL_CODE), not '$1'" ;;
        esac
    done
    [ -n "$board" ] || die "name the board: keeper --board URL"
    install_package
    has_keeper || die "this version of bot-board has no keeper command"
    if ! "$venv/bin/keeper" status >/dev/null 2>&1; then
        [ -n "$code" ] || die "this machine is not enrolled yet: set KEEPER_ENROLL_CODE (a code from the board's /fleet page)"
    fi
    enroll_keeper "$board" "$code"
    start_keeper
    say "this machine's keeper reports to $board"
}

mode_bot() {
    install_package
    if [ $# -gt 0 ]; then
        say "running: bot $*"
        exec "$venv/bin/bot" "$@"
    fi
    say "run a bot with: $BIN_DIR/bot run --handle ... (see bot --help)"
}

settings_python() {  # python -c CODE with the board's settings file named, when there is one
    if [ -f "$config" ]; then
        BOARD_CONFIG="$config" "$venv/bin/python" -c "$1"
    else  # a keeper's machine has none: the settings are then the defaults and the environment
        env -u BOARD_CONFIG "$venv/bin/python" -c "$1"
    fi
}

database_url() {  # the PostgreSQL database the board's settings name, if any (the environment, then the file)
    settings_python 'from board.server.settings import load; print(load().database_url or "")'
}

database_label() {  # where the board's data is, as it may be shown (no password)
    settings_python 'from board.server.settings import load; from board.server.store.stores import database_label
print(database_label(load()))'
}

hosts_board() {  # whether this machine runs the board: its SQLite file, or a PostgreSQL database set
    [ -f "$BOARD_DB" ] || [ -n "$(database_url)" ]
}

mode_upgrade() {
    [ -x "$venv/bin/board" ] || die "nothing to upgrade in $BOARD_HOME; run install.sh first"
    local on_postgresql
    on_postgresql=$(database_url)
    if [ -n "$on_postgresql" ]; then  # the SQLite file a move left behind is not the board's
        say "the board runs on PostgreSQL: no backup taken here; pg_dump takes one (docs/scale.md#backups)"
    elif [ -f "$BOARD_DB" ]; then
        mkdir -p -m 700 "$BOARD_STATE/backups"
        "$venv/bin/board" backup "$BOARD_STATE/backups"
    fi
    local keeper_ran=""
    [ -n "$(keeper_pid)" ] && keeper_ran=1
    say "$("$venv/bin/board" ctl stop)"
    install_package upgrade
    if [ -n "$on_postgresql" ] || [ -f "$BOARD_DB" ]; then
        write_settings
        start_board  # this machine hosts the board: migrations apply as it opens the database
    fi
    if [ -n "$keeper_ran" ]; then
        stop_keeper
        start_keeper
    fi
}

mode_uninstall() {
    local elsewhere=""  # the PostgreSQL database the board ran on: no file here, so kept either way
    if [ -x "$venv/bin/python" ] && [ -n "$(database_url)" ]; then elsewhere=$(database_label); fi
    if [ -x "$venv/bin/board" ] && hosts_board; then
        say "$("$venv/bin/board" ctl stop 2>&1 || true)"
        say "the routines runner stopped with the board (it runs inside the board's process)"
    fi
    remove_unit board
    stop_keeper
    stop_bots
    rm -f "$BIN_DIR/board" "$BIN_DIR/bot" "$BIN_DIR/keeper"
    rmdir "$BIN_DIR" "$units" 2>/dev/null || true  # only when nothing else is in them
    rm -rf "$BOARD_HOME"
    say "removed $BOARD_HOME and the board, bot and keeper commands from $BIN_DIR"
    if [ "${1:-}" = "--purge" ]; then
        rm -rf "$BOARD_STATE"
        rm -f "$config"
        rmdir "$(dirname "$config")" 2>/dev/null || true
        say "removed the data in $BOARD_STATE and the settings $config"
    else
        say "kept the data in $BOARD_STATE and the settings $config (uninstall --purge removes them)"
    fi
    if [ -n "$elsewhere" ]; then
        say "the board's messages, knowledge and fleet stay in the PostgreSQL database $elsewhere; drop it (dropdb) to remove them"
    fi
}

mode=${1:-install}
if [ $# -gt 0 ]; then shift; fi
case "$mode" in
    install) mode_install ;;
    keeper) mode_keeper "$@" ;;
    bot) mode_bot "$@" ;;
    upgrade) mode_upgrade ;;
    uninstall) mode_uninstall "$@" ;;
    *) die "usage: install.sh [install | keeper --board URL | bot ARGS | upgrade | uninstall [--purge]]" ;;
esac
