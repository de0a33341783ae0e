"""``board serve`` as a real process: loopback by default, one owner per database, kill -9 safe."""

from __future__ import annotations

import asyncio
import random
import signal
import socket
import sqlite3
import subprocess
import time
from pathlib import Path

import aiohttp
import pytest

from board.client import BoardAPIError, BoardClient
from board.server.services import auth
from board.server.services.context import Context
from board.server.settings import Settings
from board.server.store.db import Database
from board.server.store.schema import schema_version
from tests.support.processes import (
    add_human,
    board_env,
    command,
    kill,
    longpolls,
    serve,
    wait_for_output,
    wait_healthy,
)


def test_serve_answers_healthz_on_loopback(tmp_path: Path) -> None:
    served = serve(tmp_path / "board.db")
    try:
        health = wait_healthy(served)
        assert health == {"ok": True, "version": health["version"], "pid": served.proc.pid}
        out = served.output()
        assert f"serving http://127.0.0.1:{served.port}" in out
        assert "warning" not in out
        assert (tmp_path / "board.db.lock").exists()
    finally:
        kill(served.proc)


async def test_the_startup_heap_is_kept_out_of_the_collector(tmp_path: Path) -> None:
    """What the board built to start is frozen (api/serving.py), so a full collection walks
    only what came after: /metrics counts the objects kept out, and the collections run."""
    served = serve(tmp_path / "board.db")
    try:
        wait_healthy(served)
        metrics = f"http://127.0.0.1:{served.port}/metrics"
        async with aiohttp.ClientSession() as http, http.get(metrics) as resp:
            text = await resp.text()
        gauges = {
            name: float(value)
            for name, _, value in (line.rpartition(" ") for line in text.splitlines())
            if name.startswith(("board_heap_", "board_gc_"))
        }
        assert gauges["board_heap_frozen_objects"] > 10_000, gauges  # modules, templates, the app
        assert set(gauges) >= {f'board_gc_collections_total{{generation="{g}"}}' for g in range(3)}
    finally:
        kill(served.proc)


def test_a_second_board_on_the_same_database_refuses_and_the_first_keeps_serving(tmp_path: Path) -> None:
    db = tmp_path / "board.db"
    first = serve(db)
    try:
        wait_healthy(first)
        second = serve(db)
        try:
            status = second.proc.wait(timeout=30)
        finally:
            kill(second.proc)
        out = second.output()
        assert status != 0
        assert "lock" in out and str(db) in out and "another board" in out
        assert "Traceback" not in out
        assert first.proc.poll() is None
        assert wait_healthy(first)["ok"] is True
    finally:
        kill(first.proc)


def test_a_stopped_board_lets_the_next_one_serve(tmp_path: Path) -> None:
    db = tmp_path / "board.db"
    first = serve(db)
    try:
        wait_healthy(first)
    finally:
        status = kill(first.proc, signal.SIGTERM)
    assert status == 0, first.output()
    second = serve(db)
    try:
        wait_healthy(second)
    finally:
        kill(second.proc)


def test_binding_beyond_loopback_prints_a_warning(tmp_path: Path) -> None:
    served = serve(tmp_path / "board.db", "--bind", "0.0.0.0")
    try:
        out = wait_for_output(served, "warning")
    finally:
        kill(served.proc)  # at once: it listened on every interface
    assert "listening on 0.0.0.0" in out
    assert "run commands" in out and "loopback" in out


def test_a_database_newer_than_the_board_is_refused_with_both_versions(tmp_path: Path) -> None:
    db = tmp_path / "board.db"
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {schema_version() + 3}")
    conn.close()
    served = serve(db)
    try:
        status = served.proc.wait(timeout=30)
    finally:
        kill(served.proc)
    out = served.output()
    assert status != 0
    assert f"schema version {schema_version() + 3}" in out and f"({schema_version()})" in out
    assert "Traceback" not in out


def test_a_port_in_use_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        served = serve(tmp_path / "board.db", port=port)
        try:
            status = served.proc.wait(timeout=30)
        finally:
            kill(served.proc)
    out = served.output()
    assert status != 0
    assert f"127.0.0.1:{port}" in out and "in use" in out
    assert "Traceback" not in out


# -- kill -9 ----------------------------------------------------------------------------


async def human_token(db: Path) -> str:
    database = Database(db)
    await database.open()
    try:
        ctx = Context(db=database, settings=Settings(db=str(db)))
        await auth.add_human(ctx, "alice")
        return await auth.human_token(ctx, "alice")
    finally:
        await database.close()


async def post_until_killed(url: str, token: str, round_no: int, acked: dict[int, str]) -> None:
    """Posters write concurrently and record every message the board acknowledged."""
    async with BoardClient(url, token, timeout=10) as client:

        async def poster(k: int) -> None:
            for i in range(100_000):
                body = f"round {round_no} poster {k} message {i}"
                try:
                    message = await client.post(body, channel="lobby", workspace="admin")
                except BoardAPIError as exc:
                    if exc.code == "UNAVAILABLE" and exc.status == 0:
                        return  # the board is gone; this post was never acknowledged
                    raise
                acked[message["id"]] = body

        await asyncio.gather(*(poster(k) for k in range(8)))


async def test_acknowledged_posts_survive_kill_9_under_load(tmp_path: Path) -> None:
    db = tmp_path / "board.db"
    token = await human_token(db)
    env = board_env(BOARD_WRITE_RATE="1000000", BOARD_WRITE_BURST="1000000")
    acked: dict[int, str] = {}
    rng = random.Random(7)
    for round_no in range(4):
        served = serve(db, env=env)
        try:
            await asyncio.to_thread(wait_healthy, served)
            load = asyncio.create_task(post_until_killed(served.url, token, round_no, acked))
            before = len(acked)
            await asyncio.sleep(0.5 + rng.random() * 0.5)
            assert not load.done(), "the posters stopped before the kill"
            assert len(acked) > before, "no post was acknowledged while the board ran"
            kill(served.proc, signal.SIGKILL)
            assert served.proc.returncode == -signal.SIGKILL
            await asyncio.wait_for(load, 15)
        finally:
            kill(served.proc)

    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        stored = dict(conn.execute("SELECT id, body FROM messages"))
    finally:
        conn.close()
    lost = {i: body for i, body in acked.items() if stored.get(i) != body}
    assert not lost, f"{len(lost)} of {len(acked)} acknowledged messages are missing"

    # And the board serves it again, every acknowledged message readable through the API.
    served = serve(db, env=env)
    try:
        await asyncio.to_thread(wait_healthy, served)
        async with BoardClient(served.url, token) as client:
            seen: set[int] = set()
            since = 0
            while True:
                page = await client.messages(workspace="admin", since=since, limit=500)
                seen.update(m["id"] for m in page["messages"])
                if not page["has_more"]:
                    break
                since = page["next_since"]
        assert set(acked) <= seen
    finally:
        kill(served.proc)


def test_the_serve_command_is_documented(tmp_path: Path) -> None:
    out = subprocess.run(
        command("serve", "--help"),
        env=board_env(),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    for option in ("--db", "--bind", "--port"):
        assert option in out


async def test_stopping_the_board_releases_held_long_polls_at_once(tmp_path: Path) -> None:
    import time

    db = tmp_path / "board.db"
    env = board_env()
    token = add_human(db, "al", env)
    served = serve(db)
    try:
        wait_healthy(served)
        async with BoardClient(served.url, token) as human:
            held = asyncio.create_task(human.inbox(wait=60))
            await longpolls(served.url, 1)
            stopped_at = time.monotonic()
            served.proc.send_signal(signal.SIGTERM)
            page = await held
            assert page["messages"] == []
            assert time.monotonic() - stopped_at < 10
        assert served.proc.wait(timeout=10) == 0
    finally:
        kill(served.proc)


async def test_a_caller_who_hangs_up_frees_its_long_poll(tmp_path: Path) -> None:
    db = tmp_path / "board.db"
    env = board_env()
    token = add_human(db, "al", env)
    served = serve(db)
    try:
        wait_healthy(served)
        leaving = BoardClient(served.url, token)
        polling = asyncio.create_task(leaving.inbox(wait=60))
        await longpolls(served.url, 1)  # the board holds it
        polling.cancel()
        await leaving.close()  # the caller hangs up
        await longpolls(served.url, 0)  # and the board lets it go, long before the 60 s
    finally:
        kill(served.proc)


@pytest.mark.parametrize("path", ["/events?workspace=admin", "/fleet/events"])
async def test_stopping_the_board_ends_a_signed_in_tabs_live_stream_at_once(
    tmp_path: Path, path: str
) -> None:
    """A tab left open on a live page (the board's, or /fleet's) does not hold a stopping board."""
    db = tmp_path / "board.db"
    env = board_env()
    add_human(db, "al", env)
    link = subprocess.run(
        command("admin", "user", "link", "al", "--db", str(db)),
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.splitlines()[-1]
    served = serve(db)
    try:
        wait_healthy(served)
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(cookie_jar=jar) as tab:
            token = link.split("token=", 1)[1]
            async with tab.post(f"{served.url}/login", data={"token": token, "next": "/"}) as signed:
                assert signed.status == 200, await signed.text()
            async with tab.get(served.url + path) as stream:
                assert stream.status == 200 and await stream.content.readline() == b": open\n"
                stopped_at = time.monotonic()
                served.proc.send_signal(signal.SIGTERM)
                assert await asyncio.wait_for(asyncio.to_thread(served.proc.wait), 90) == 0
                took = time.monotonic() - stopped_at
        assert took < 5, f"the board took {took:.1f} s to stop:\n{served.output()}"
    finally:
        kill(served.proc)
