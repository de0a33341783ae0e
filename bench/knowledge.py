"""Knowledge at scale: list, get, search, pack and CAS write latency, and lost updates.

    python -m bench knowledge [--documents 1000 10000] [--revisions 20] [--writers 8]

The bulk path for documents: the knowledge base is built through the service
layer's own write function (``knowledge.documents.append``, many revisions per
writer job, so building takes minutes rather than hours), then ``board serve``
starts on that file and a client process times calls over HTTP on loopback,
one at a time. ``get_one_revision`` times documents that have a single
revision, so its ratio to ``get`` shows whether history costs reads anything.
``search`` asks for a word of the vocabulary (each equally likely);
``search_common`` for one of the 50 most used, which match nearly every
document; the pack ranks by six words drawn as often as the documents use them.

Lost updates: ``--writers`` client processes each make ``--edits`` writes to one
document, each a compare-and-set on the revision it read, retried on
VERSION_CONFLICT, each adding a line of its own. Every line a writer was told
was written must be in the final body, and the revision count must match:
``lost_updates`` must be 0.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import random
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

from .common import free_port, percentiles, progress, report, serve, stop, wait_healthy

QUICK = ["--documents", "1000", "--edits", "20"]
TINY = ["--documents", "5", "--revisions", "2", "--writers", "2", "--edits", "2", "-n", "3"]

WORKSPACE = "bench"
JOB_SIZE = 250  # revisions appended per writer job
FRESH = 100  # documents of a single revision
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
    """``documents`` of ``revisions`` each, through ``knowledge.documents.append``; FRESH of one."""
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
    plan += [(f"fresh/f{n:03d}.md", documents + n, 1) for n in range(FRESH)]
    bodies += [writer.body(n) for n in range(documents, documents + FRESH)]
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


async def timed(n: int, call: Callable[[int], Awaitable[None]]) -> dict[str, float]:
    samples = []
    for i in range(n):
        started = time.perf_counter()
        await call(i)
        samples.append(time.perf_counter() - started)
    return percentiles(samples)


async def measure(
    url: str, token: str, built: dict[str, Any], documents: int, rng: random.Random, n: int
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

        for _ in range(max(1, n // 5)):  # warm up connections and caches
            await get("/api/knowledge/" + topic())
        results: dict[str, Any] = {}
        results["get"] = await timed(2 * n, lambda i: get("/api/knowledge/" + topic()))
        results["get_one_revision"] = await timed(
            n, lambda i: get(f"/api/knowledge/fresh/f{i % FRESH:03d}.md")
        )
        results["list"] = await timed(n, lambda i: get("/api/knowledge", after=topic(), limit=20))
        results["search"] = await timed(n, lambda i: get("/api/knowledge", q=any_word(), limit=20))
        results["search_two_words"] = await timed(
            max(1, n * 3 // 5), lambda i: get("/api/knowledge", q=f"{any_word()} {any_word()}")
        )
        results["search_common"] = await timed(
            max(1, n * 3 // 5), lambda i: get("/api/knowledge", q=common_word())
        )
        results["pack"] = await timed(
            max(1, n * 2 // 5), lambda i: get("/api/knowledge/pack", q=" ".join(word() for _ in range(6)))
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
        for i in range(max(1, n * 3 // 5)):
            await write(i)
        results["cas_write"] = percentiles(samples)
    return results


def _measure_child(url: str, built: dict[str, Any], documents: int, seed: int, n: int) -> dict[str, Any]:
    return asyncio.run(measure(url, built["token"], built, documents, random.Random(seed), n))


async def _edits(url: str, token: str, path: str, writer: int, edits: int) -> tuple[list[str], int]:
    """``edits`` compare-and-set writes, each retried until it lands; its lines, and the conflicts."""
    written, conflicts = [], 0
    async with aiohttp.ClientSession(url, headers={"Authorization": f"Bearer {token}"}) as http:
        for i in range(edits):
            line = f"writer {writer} edit {i}"
            while True:
                async with http.get("/api/knowledge/" + path) as resp:
                    doc = await resp.json()
                body = {
                    "body": doc["body"] + line + "\n",
                    "base_revision": doc["latest_revision"],
                    "reason": line,
                }
                async with http.put("/api/knowledge/" + path, json=body) as resp:
                    if resp.status == 200:
                        written.append(line)
                        break
                    if resp.status != 409:
                        raise RuntimeError(f"CAS write: {resp.status} {await resp.text()}")
                    conflicts += 1
    return written, conflicts


def _editor(url: str, token: str, path: str, writer: int, edits: int) -> tuple[list[str], int]:
    return asyncio.run(_edits(url, token, path, writer, edits))


def lost_updates(url: str, token: str, writers: int, edits: int) -> dict[str, Any]:
    """Concurrent CAS writers on one document: every acknowledged write must survive."""
    path = "race/shared.md"

    async def create() -> None:
        async with aiohttp.ClientSession(url, headers={"Authorization": f"Bearer {token}"}) as http:
            body = {"body": "# Shared\n", "base_revision": 0, "reason": "start"}
            async with http.put("/api/knowledge/" + path, json=body) as resp:
                assert resp.status == 201, await resp.text()

    async def final() -> dict[str, Any]:
        auth = {"Authorization": f"Bearer {token}"}
        async with (
            aiohttp.ClientSession(url, headers=auth) as http,
            http.get("/api/knowledge/" + path) as resp,
        ):
            return dict(await resp.json())

    asyncio.run(create())
    with mp.get_context("spawn").Pool(writers) as pool:
        results = pool.starmap(_editor, [(url, token, path, w, edits) for w in range(writers)])
    doc = asyncio.run(final())
    acknowledged = [line for lines, _ in results for line in lines]
    present = set(doc["body"].splitlines())
    lost = sum(1 for line in acknowledged if line not in present)
    return {
        "writers": writers,
        "acknowledged": len(acknowledged),
        "conflicts_retried": sum(c for _, c in results),
        "final_revision": doc["latest_revision"],
        "lost_updates": lost + abs(doc["latest_revision"] - 1 - len(acknowledged)),
    }


def one_size(documents: int, revisions: int, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-knowledge-") as tmp:
        db_path = Path(tmp) / "board.db"
        progress(f"knowledge: building {documents:,} documents x {revisions} revisions")
        built = asyncio.run(build(db_path, documents, revisions, args.seed))
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        board = serve(str(db_path), port, {"BOARD_WRITE_RATE": "1000000", "BOARD_WRITE_BURST": "1000000"})
        try:
            wait_healthy(url, timeout=120)
            progress(f"knowledge: reads at {documents:,} documents")
            with mp.get_context("spawn").Pool(1) as pool:
                results = pool.apply(_measure_child, (url, built, documents, args.seed + 1, args.n))
            progress(f"knowledge: {args.writers} concurrent CAS writers")
            race = lost_updates(url, built["token"], args.writers, args.edits)
        finally:
            stop(board)
        row: dict[str, Any] = {
            "documents": documents,
            "revisions": revisions,
            "build_s": built["build_seconds"],
            "db_mb": round(db_path.stat().st_size / 1e6, 1),
        }
    for name, figure in results.items():
        row[f"{name}_p50_ms"] = figure["p50_ms"]
        row[f"{name}_p99_ms"] = figure["p99_ms"]
    return row | race


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench knowledge", description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--revisions", type=int, default=20)
    parser.add_argument("--writers", type=int, default=8, help="concurrent CAS writers on one document")
    parser.add_argument("--edits", type=int, default=50, help="writes each of them makes")
    parser.add_argument("-n", type=int, default=500, help="timed requests per read")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    rows = [one_size(d, args.revisions, args) for d in args.documents]
    report("knowledge", rows, lost_updates=sum(r["lost_updates"] for r in rows))


if __name__ == "__main__":
    main()
