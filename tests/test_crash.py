"""kill -9 under load, again and again: nothing acknowledged is lost, no retry takes effect twice."""

from __future__ import annotations

import random
import signal
import sqlite3
import time
from pathlib import Path

from tests.support.load import LOAD_ENV, humans, integrity, load, missing
from tests.support.processes import board_env, free_port, kill, serve, wait_healthy

KILLS = 20
CLIENTS = 3


def _wait_for_more(acked_now: int, count: int, load_acked: object, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while len(load_acked()) < acked_now + count:  # type: ignore[operator]
        assert time.monotonic() < deadline, "the clients stopped getting answers"
        time.sleep(0.02)


def test_acknowledged_writes_survive_repeated_kill_9_and_retries_take_effect_once(tmp_path: Path) -> None:
    db = tmp_path / "board.db"
    tokens = humans(db, [f"c{n}" for n in range(CLIENTS)])
    env = board_env(**LOAD_ENV)
    port = free_port()
    rng = random.Random(13)
    kills = 0
    with load(f"http://127.0.0.1:{port}", tokens, tmp_path / "load") as clients:
        for _ in range(KILLS):
            served = serve(db, port=port, env=env)
            try:
                wait_healthy(served, timeout=60)
                _wait_for_more(len(clients.acknowledged()), 5, clients.acknowledged)
                time.sleep(rng.random() * 0.4)  # a random moment of the load
                assert kill(served.proc, signal.SIGKILL) == -signal.SIGKILL
                kills += 1
            finally:
                kill(served.proc)
        served = serve(db, port=port, env=env)
        try:
            wait_healthy(served, timeout=60)
            clients.finish()  # every call retried across the last kill gets its answer
        finally:
            assert kill(served.proc, signal.SIGTERM) == 0, served.output()
        acked = clients.acknowledged()

    assert kills == KILLS
    assert integrity(db) == [("ok",)]
    refused = [e for e in acked if e["status"] not in (200, 201) and not e["applied"]]
    assert not refused, f"retried calls that did not get their first outcome back: {refused[:5]}"
    lost = missing(db, acked)
    retried = [e for e in acked if e["retries"]]
    applied = [e for e in acked if e["applied"]]
    print(
        f"kills {kills}, acknowledged writes {len(acked)}, found {len(acked) - len(lost)}, "
        f"retried after a kill {len(retried)} (of which answered 'applied' {len(applied)})"
    )
    assert not lost, f"{len(lost)} of {len(acked)} acknowledged writes are missing: {lost[:5]}"
    assert retried, "no call was cut by a kill; the test proved nothing about retries"

    conn = sqlite3.connect(db)
    try:
        doubled = conn.execute(
            "SELECT body, count(*) FROM messages WHERE body LIKE 'c_ root %' "
            "GROUP BY body HAVING count(*) > 1"
        ).fetchall()
        renewed = conn.execute("SELECT count(*) FROM claim_events WHERE action = 'renew'").fetchone()[0]
        revised = conn.execute(
            "SELECT path FROM kb_documents WHERE path LIKE 'notes/c%' AND latest_revision > 1"
        ).fetchall()
    finally:
        conn.close()
    assert doubled == [], f"posts that took effect twice: {doubled[:5]}"
    assert renewed == 0, "a retried claim took effect a second time"
    assert revised == [], f"documents written twice: {revised[:5]}"
