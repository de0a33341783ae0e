"""A client process that writes steadily and keeps a journal of what the board acknowledged.

Run as ``python tests/support/loadgen.py URL TOKEN NAME JOURNAL STOPFILE``. It posts
roots, claims some of them and writes knowledge documents, every call with a
request id of its own. When the board cannot be reached (it was killed) the
call is retried with the same request id until the board answers, so a retry
after a kill must get the first outcome back and never a second effect. Each
acknowledged write is one JSON line in JOURNAL, flushed before the next call;
the process stops when STOPFILE exists.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from board.client import BoardAPIError, BoardClient

WORKSPACE = "admin"


async def _until_answered(
    client: BoardClient, method: str, path: str, rid: str, body: dict[str, Any], stop: Path
) -> tuple[int, Any, int]:
    """One call, retried with the same request id while the board is unreachable; its answer and retries."""
    retries = 0
    while True:
        try:
            status, data = await client.call(method, path, json=body, headers={"Idempotency-Key": rid})
            return status, data, retries
        except BoardAPIError as exc:
            if exc.status not in (0, 503):
                return exc.status, {"error": exc.code, "details": exc.details or {}}, retries
        if stop.exists() and retries > 600:
            raise SystemExit(f"the board never came back for {rid}")
        retries += 1
        await asyncio.sleep(0.05)


async def run(url: str, token: str, name: str, journal: Path, stop: Path) -> None:
    async with BoardClient(url, token, timeout=10) as client:
        with journal.open("a", encoding="utf-8") as out:

            def ack(**entry: Any) -> None:
                # A retry that learns its call was applied (its answer lost to a kill) is an
                # acknowledgement too, without the answer's fields.
                entry["applied"] = entry["status"] == 409 and entry.pop("data", {}).get("details", {}).get(
                    "applied", False
                )
                out.write(json.dumps(entry) + "\n")
                out.flush()

            i = 0
            while not stop.exists():
                rid = f"{name}-p{i}"
                body = f"{name} root {i}"
                status, data, retries = await _until_answered(
                    client,
                    "POST",
                    "/api/messages",
                    rid,
                    {"body": body, "channel": "lobby", "workspace": WORKSPACE},
                    stop,
                )
                ack(
                    kind="post",
                    rid=rid,
                    status=status,
                    id=data.get("id"),
                    body=body,
                    retries=retries,
                    data=data,
                )
                if status == 201 and i % 3 == 0:
                    rid, thread = f"{name}-c{i}", data["id"]
                    status, data, retries = await _until_answered(
                        client, "POST", f"/api/threads/{thread}/claim", rid, {"note": name}, stop
                    )
                    ack(kind="claim", rid=rid, status=status, thread=thread, retries=retries, data=data)
                if i % 3 == 1:
                    rid = f"{name}-k{i}"
                    path = f"notes/{name}-{i}.md"
                    text = f"# {name} {i}\n\nwritten under load\n"
                    status, data, retries = await _until_answered(
                        client,
                        "PUT",
                        f"/api/workspaces/{WORKSPACE}/knowledge/{path}",
                        rid,
                        {"body": text, "base_revision": 0, "reason": "load"},
                        stop,
                    )
                    ack(kind="kb", rid=rid, status=status, path=path, body=text, retries=retries, data=data)
                i += 1


if __name__ == "__main__":
    url, token, name, journal, stop = sys.argv[1:6]
    asyncio.run(run(url, token, name, Path(journal), Path(stop)))
