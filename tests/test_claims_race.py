"""K bots race to claim one thread over real HTTP: exactly one wins, every time.

Each bot has its own registered token and its own connection pool, so the K
claims reach the server as K concurrent requests and meet in the writer. The
database is checked afterwards as a second process would read it.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from board.client import BoardAPIError, BoardClient
from tests.support.boardtest import Board, db_rows, start_board, stop_board

ROUNDS = 50
SIZES = (2, 8, 64)


@pytest.fixture
async def race_board(tmp_path: Path) -> AsyncIterator[Board]:
    # The human posts one thread per round (150 in all): more than the default burst.
    b = await start_board(tmp_path, write_burst=1000)
    yield b
    await stop_board(b)


async def _claim(client: BoardClient, thread_id: int) -> tuple[str, float, object]:
    started = time.perf_counter()
    try:
        result: object = await client.claim(thread_id, note="mine")
        outcome = "won"
    except BoardAPIError as exc:
        result, outcome = exc, "lost"
    return outcome, time.perf_counter() - started, result


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


async def test_exactly_one_of_k_racers_wins_every_time(race_board: Board) -> None:
    human = await race_board.human("alice")
    await human.create_workspace("race", "Race")
    handles = [f"racer{i:02d}" for i in range(max(SIZES))]
    racers = {h: await race_board.bot(h, "race") for h in handles}
    # Warm each pool (and its presence write) so the race measures claims, not connects.
    await asyncio.gather(*(c.me() for c in racers.values()))

    threads: dict[int, str] = {}
    latencies: list[float] = []
    winners_per_size: dict[int, Counter[str]] = {}
    shuffle = random.Random(20261130).shuffle
    for k in SIZES:
        contenders = handles[:k]
        wins: Counter[str] = Counter()
        for round_no in range(ROUNDS):
            shuffle(contenders)  # who sends first changes from round to round
            root = await human.post(f"race k={k} round {round_no}", channel="race", workspace="race")
            results = await asyncio.gather(*(_claim(racers[h], root["id"]) for h in contenders))
            won = [(h, r) for h, (outcome, _, r) in zip(contenders, results, strict=True) if outcome == "won"]
            assert len(won) == 1, f"k={k} round {round_no}: {len(won)} winners"
            winner, claim = won[0]
            assert isinstance(claim, dict)
            assert claim["state"] == "claimed" and claim["holder"] == winner
            for outcome, _, result in results:
                if outcome == "lost":
                    assert isinstance(result, BoardAPIError)
                    assert (result.status, result.code) == (409, "CLAIMED"), result
                    assert result.details["holder"] == winner
            threads[root["id"]] = winner
            wins[winner] += 1
            if k == max(SIZES):
                latencies += [elapsed for _, elapsed, _ in results]
        winners_per_size[k] = wins

    # The database agrees: one claim row and one 'claim' history row per thread, the winner's.
    rows = db_rows(
        race_board.db_path,
        """SELECT c.thread_id, a.handle, c.state,
                  (SELECT count(*) FROM claim_events e WHERE e.thread_id = c.thread_id
                     AND e.action = 'claim')
           FROM claims c JOIN agents a ON a.id = c.holder_id""",
    )
    assert {r[0]: r[1] for r in rows} == threads
    assert all(r[2] == "claimed" and r[3] == 1 for r in rows)
    assert db_rows(race_board.db_path, "SELECT count(*) FROM claim_events")[0][0] == len(threads)

    # The claims met inside shared transactions, not one after another.
    assert race_board.ctx.db.stats.largest_batch > 1
    p50, p99 = statistics.median(latencies), _percentile(latencies, 99)
    print(
        f"\nclaim race K={max(SIZES)}: {ROUNDS} rounds, {len(latencies)} claims, exactly 1 winner "
        f"each round; latency p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms; "
        f"largest write batch {race_board.ctx.db.stats.largest_batch}"
    )
    for k, wins in winners_per_size.items():
        print(f"  K={k}: {sum(wins.values())} rounds, {sum(wins.values())} winners, {len(wins)} distinct")
