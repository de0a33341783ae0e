"""Knowledge at scale: list, get, search and pack latency with 10,000 documents of 20 revisions.

    python -m bench.knowledge [--documents 10000] [--revisions 20] [--db PATH] [--keep]

Builds the knowledge base through the service layer's own write function
(``knowledge.documents.append``, many revisions per writer job, so building takes
minutes rather than hours), then starts a board on that file in a separate
process and times calls from this one over HTTP on loopback, one at a time.
Prints one JSON line; ``get_one_revision`` times documents that have a single
revision, so its ratio to ``get`` shows whether history costs reads anything.
``search`` asks for a word of the vocabulary (each equally likely);
``search_common`` for one of the 50 most used, which match nearly every
document; the pack ranks by six words drawn as often as the documents use them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp

from board.server.principal import Principal
from board.server.services import auth, workspaces
from board.server.services.context import Context
from board.server.services.knowledge.documents import Change, append
from board.server.settings import Settings
from board.server.store.db import Database

WORKSPACE = "bench"
JOB_SIZE = 250  # revisions appended per writer job
SYLLABLES = [c + v for c in "bcdfghjklmnprstvz" for v in "aeiou"]


def vocabulary(size: int, rng: random.Random) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


class Writer:
    """Markdown bodies with Zipf-distributed words, each revision a small edit of the last."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.words = vocabulary(5000, rng)
        weights = [1 / (rank + 1) for rank in range(len(self.words))]
        self.cumulative = list(_accumulate(weights))

    def word(self) -> str:
        return self.rng.choices(self.words, cum_weights=self.cumulative)[0]

    def sentence(self) -> str:
        return " ".join(self.word() for _ in range(self.rng.randint(6, 14))).capitalize() + "."

    def body(self, n: int) -> str:
        paragraphs = [" ".join(self.sentence() for _ in range(3)) for _ in range(3)]
        return f"# Topic {n}: {self.word()} {self.word()}\n\n" + "\n\n".join(paragraphs) + "\n"

    def edit(self, body: str, revision: int) -> str:
        return body + f"\n## Revision {revision}\n\n{self.sentence()}\n"


def _accumulate(values: list[float]) -> list[float]:
    total, out = 0.0, []
    for value in values:
        total += value
        out.append(total)
    return out


async def setup(ctx: Context) -> tuple[Principal, str]:
    """A human, the bench workspace, and a bot in it with its token."""
    await auth.add_human(ctx, "benchhuman")
    human = await auth.authenticate(ctx, await auth.human_token(ctx, "benchhuman"))
    await workspaces.create(ctx, human, workspaces.NewWorkspace(slug=WORKSPACE, name="Bench"))
    invite = await auth.create_invite(ctx, None, auth.InviteRequest(workspace=WORKSPACE))
    registered = await auth.register_bot(ctx, auth.Registration(handle="benchbot", invite=invite["invite"]))
    bot = await auth.authenticate(ctx, registered["token"])
    return bot, registered["token"]


async def build(db_path: Path, documents: int, revisions: int, seed: int) -> dict[str, Any]:
    """``documents`` of ``revisions`` each through ``knowledge.documents.append``, and 500 of one revision."""
    rng = random.Random(seed)
    writer = Writer(rng)
    db = Database(db_path, readers=1)
    await db.open()
    ctx = Context(db=db, settings=Settings(db=str(db_path)))
    started = time.monotonic()
    bot, token = await setup(ctx)
    workspace = await db.read(lambda conn: _workspace(conn))
    bodies = [writer.body(n) for n in range(documents)]
    plan = [
        (f"topics/t{n:05d}.md", n, revision) for revision in range(1, revisions + 1) for n in range(documents)
    ]
    plan += [(f"fresh/f{n:03d}.md", documents + n, 1) for n in range(500)]
    bodies += [writer.body(n) for n in range(documents, documents + 500)]
    for start in range(0, len(plan), JOB_SIZE):
        jobs = []
        for path, n, revision in plan[start : start + JOB_SIZE]:
            if revision > 1:
                bodies[n] = writer.edit(bodies[n], revision)
            change = Change(kind="write", base_revision=revision - 1, reason=f"r{revision}", body=bodies[n])
            jobs.append((path, change))

        async def job(conn: Any, jobs: list[tuple[str, Change]] = jobs) -> None:
            for path, change in jobs:
                await append(conn, ctx, bot, workspace, path, change)

        await db.write(job)
    built = time.monotonic() - started
    await db.close()
    return {
        "token": token,
        "build_seconds": round(built, 1),
        "words": writer.words,
        "cumulative": writer.cumulative,
    }


async def _workspace(conn: Any) -> Any:
    from board.server.store import workspaces as workspace_store

    return await workspace_store.by_slug(conn, WORKSPACE)


def serve(db_path: str, port: int) -> None:
    """The board process under test (run as a child: the client's work must not share its loop)."""
    from aiohttp import web

    from board.server.app import create_app

    settings = Settings(db=db_path, port=port, write_rate=100_000.0, write_burst=100_000, log_level="WARNING")
    web.run_app(create_app(settings), host="127.0.0.1", port=port, print=None, access_log=None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {
        "n": len(ordered),
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p99_ms": round(p99 * 1000, 2),
    }


async def timed(n: int, call: Callable[[int], Awaitable[None]]) -> dict[str, float]:
    samples = []
    for i in range(n):
        started = time.perf_counter()
        await call(i)
        samples.append(time.perf_counter() - started)
    return summary(samples)


async def measure(
    url: str, token: str, built: dict[str, Any], documents: int, rng: random.Random
) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"}
    words, cumulative = built["words"], built["cumulative"]

    def word() -> str:
        """A word as often as the documents use it."""
        return rng.choices(words, cum_weights=cumulative)[0]

    def any_word() -> str:
        """A word of the vocabulary, each as likely: the usual query names a specific thing."""
        return rng.choice(words)

    def common_word() -> str:
        """One of the 50 words the documents use most: it matches nearly every document."""
        return rng.choice(words[:50])

    def topic() -> str:
        return f"topics/t{rng.randrange(documents):05d}.md"

    async with aiohttp.ClientSession(headers=headers) as http:

        async def get(path: str, **params: Any) -> Any:
            async with http.get(url + path, params=params) as resp:
                data = await resp.json()
                assert resp.status == 200, data
                return data

        for _ in range(100):  # warm up connections and caches
            await get("/api/knowledge/" + topic())
        results: dict[str, Any] = {}
        results["get"] = await timed(1000, lambda i: get("/api/knowledge/" + topic()))
        results["get_one_revision"] = await timed(
            500, lambda i: get(f"/api/knowledge/fresh/f{i % 500:03d}.md")
        )
        results["list"] = await timed(500, lambda i: get("/api/knowledge", after=topic(), limit=20))
        results["search"] = await timed(500, lambda i: get("/api/knowledge", q=any_word(), limit=20))
        results["search_two_words"] = await timed(
            300, lambda i: get("/api/knowledge", q=f"{any_word()} {any_word()}")
        )
        results["search_common"] = await timed(300, lambda i: get("/api/knowledge", q=common_word()))
        results["pack"] = await timed(
            200, lambda i: get("/api/knowledge/pack", q=" ".join(word() for _ in range(6)))
        )

        async def write(i: int) -> None:
            path = topic()
            doc = await get("/api/knowledge/" + path)
            body = doc["body"] + f"\nbench edit {i}\n"
            started = time.perf_counter()
            async with http.put(
                url + "/api/knowledge/" + path,
                json={"body": body, "base_revision": doc["latest_revision"], "reason": "bench"},
            ) as resp:
                assert resp.status == 200, await resp.text()
            samples.append(time.perf_counter() - started)

        samples: list[float] = []
        for i in range(300):
            await write(i)
        results["cas_write"] = summary(samples)
    return results


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    workdir = Path(args.db).parent if args.db else Path(tempfile.mkdtemp(prefix="bench-knowledge-"))
    db_path = Path(args.db) if args.db else workdir / "board.db"
    try:
        built = await build(db_path, args.documents, args.revisions, args.seed)
        port = free_port()
        child = subprocess.Popen(
            [sys.executable, "-m", "bench.knowledge", "--serve", str(db_path), "--port", str(port)],
            env=os.environ | {"PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
        )
        try:
            url = f"http://127.0.0.1:{port}"
            await wait_for(url)
            results = await measure(url, built["token"], built, args.documents, random.Random(args.seed + 1))
        finally:
            child.terminate()
            child.wait(timeout=30)
        return {
            "scenario": "knowledge",
            "documents": args.documents,
            "revisions_per_document": args.revisions,
            "single_revision_documents": 500,
            "build_seconds": built["build_seconds"],
            "db_megabytes": round(db_path.stat().st_size / 1e6, 1),
            **results,
        }
    finally:
        if not args.keep and not args.db:
            shutil.rmtree(workdir, ignore_errors=True)


async def wait_for(url: str) -> None:
    deadline = time.monotonic() + 60
    async with aiohttp.ClientSession() as http:
        while time.monotonic() < deadline:
            with contextlib.suppress(aiohttp.ClientError):
                async with http.get(url + "/healthz") as resp:
                    if resp.status == 200:
                        return
            await asyncio.sleep(0.2)
    raise RuntimeError(f"the board at {url} did not start")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.knowledge", description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=int, default=10_000)
    parser.add_argument("--revisions", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--db", help="Build into this file (kept) instead of a temporary one.")
    parser.add_argument("--keep", action="store_true", help="Keep the temporary database.")
    parser.add_argument("--serve", metavar="DB", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port)
        return
    print(json.dumps(asyncio.run(main_async(args))), flush=True)


if __name__ == "__main__":
    main()
