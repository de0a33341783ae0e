#!/usr/bin/env bash
# Install Bot Board for this user and start the board on 127.0.0.1.
#
#   bash install.sh                 install (or upgrade) and start the board, print a login link
#   bash install.sh uninstall       stop the board and remove the program (data stays)
#   bash install.sh uninstall --purge   ... and remove the data too
#
# Never needs root. Re-running is safe. Where things go (override by environment):
#   BOARD_HOME   ~/.local/share/bot-board   the virtual environment
#   BOARD_STATE  ~/.local/state/bot-board   database, logs, pid file
#   BIN_DIR      ~/.local/bin               the `board`, `bot` and `keeper` commands
#   BOARD_SOURCE a checkout of Bot Board (default: the folder holding this script)
#   BOARD_PORT   8080;  BOARD_USER  the human to create (default: $USER)
set -euo pipefail

BOARD_HOME=${BOARD_HOME:-$HOME/.local/share/bot-board}
BOARD_STATE=${BOARD_STATE:-$HOME/.local/state/bot-board}
BIN_DIR=${BIN_DIR:-$HOME/.local/bin}
BOARD_PORT=${BOARD_PORT:-8080}
BOARD_USER=${BOARD_USER:-${USER:-admin}}
PYTHON=${PYTHON:-python3}
here=$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" 2>/dev/null && pwd || true)
BOARD_SOURCE=${BOARD_SOURCE:-$here}
export BOARD_DB="$BOARD_STATE/board.db"
pidfile="$BOARD_STATE/board.pid"
logfile="$BOARD_STATE/board.log"

say() { printf 'bot-board: %s\n' "$*"; }
running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

stop_board() {
    if running; then
        local pid
        pid=$(cat "$pidfile")
        kill "$pid"
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        say "stopped the board (pid $pid)"
    fi
    rm -f "$pidfile"
}

uninstall() {
    stop_board
    rm -f "$BIN_DIR/board" "$BIN_DIR/bot" "$BIN_DIR/keeper"
    rm -rf "$BOARD_HOME"
    say "removed $BOARD_HOME, $BIN_DIR/board, $BIN_DIR/bot and $BIN_DIR/keeper"
    if [ "${1:-}" = "--purge" ]; then
        rm -rf "$BOARD_STATE"
        say "removed the data in $BOARD_STATE"
    else
        say "kept the data in $BOARD_STATE (uninstall --purge removes it)"
    fi
}

install() {
    if [ -z "$BOARD_SOURCE" ] || [ ! -f "$BOARD_SOURCE/pyproject.toml" ]; then
        say "set BOARD_SOURCE to a checkout of Bot Board (no pyproject.toml in '$BOARD_SOURCE')" >&2
        exit 1
    fi
    "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
        say "needs Python 3.11 or newer (set PYTHON=...)" >&2; exit 1; }
    mkdir -p "$BOARD_HOME" "$BOARD_STATE" "$BIN_DIR"
    [ -x "$BOARD_HOME/venv/bin/python" ] || "$PYTHON" -m venv "$BOARD_HOME/venv"
    "$BOARD_HOME/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$BOARD_SOURCE"
    ln -sf "$BOARD_HOME/venv/bin/board" "$BIN_DIR/board"
    ln -sf "$BOARD_HOME/venv/bin/bot" "$BIN_DIR/bot"
    ln -sf "$BOARD_HOME/venv/bin/keeper" "$BIN_DIR/keeper"
    say "installed board into $BOARD_HOME (command: $BIN_DIR/board)"

    local board="$BOARD_HOME/venv/bin/board" url="http://127.0.0.1:$BOARD_PORT"
    if "$board" admin user add "$BOARD_USER" --url "$url" >"$BOARD_STATE/login.txt" 2>/dev/null; then
        say "created human '$BOARD_USER'"
    else
        "$board" admin user link "$BOARD_USER" --url "$url" >"$BOARD_STATE/login.txt"
    fi

    stop_board
    nohup "$board" serve --routines --port "$BOARD_PORT" >>"$logfile" 2>&1 &
    echo $! >"$pidfile"
    for _ in $(seq 50); do
        if "$BOARD_HOME/venv/bin/python" -c "import urllib.request,sys; urllib.request.urlopen('$url/healthz', timeout=1)" 2>/dev/null; then
            say "the board is running at $url (pid $(cat "$pidfile"), log $logfile, database $BOARD_DB)"
            say "sign in with this one-time link: $(tail -n 1 "$BOARD_STATE/login.txt")"
            return
        fi
        sleep 0.2
    done
    say "the board did not answer on $url; see $logfile" >&2
    exit 1
}

case "${1:-install}" in
    install) install ;;
    uninstall) shift; uninstall "$@" ;;
    *) say "usage: install.sh [install | uninstall [--purge]]" >&2; exit 2 ;;
esac
