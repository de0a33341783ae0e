"""A scripted model following routines/shipped/knowledge-reconciler/prompt.md, step by step.

The fake harness's ``act`` step runs this with the prompt on stdin. Like a model
with a shell, it learns the thread and the cursor from the prompt, and makes the
board calls the prompt asks for with ``$BOARD_URL`` and ``$BOARD_TOKEN``. Its
judgement is this test's: a thread is settled when a human's message in it says
"agreed" and nobody objects after; a topic is the thread root's first tag.
Standard library only.
"""

from __future__ import annotations

import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

BASE = os.environ["BOARD_URL"].rstrip("/")
TOKEN = os.environ["BOARD_TOKEN"]
OBJECTION = re.compile(r"\b(but|disagree|not sure|instead|why not)\b", re.IGNORECASE)


def call(method: str, path: str, body: Any = None) -> tuple[int, Any]:
    request = urllib.request.Request(
        BASE + path,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def ok(method: str, path: str, body: Any = None) -> Any:
    status, data = call(method, path, body)
    if status >= 400:
        raise SystemExit(f"{method} {path}: {status} {data}")
    return data


def settled(messages: list[dict[str, Any]]) -> bool:
    agreed = [
        i for i, m in enumerate(messages) if m["author_kind"] == "human" and "agreed" in m["body"].lower()
    ]
    return bool(agreed) and not any(OBJECTION.search(m["body"]) for m in messages[agreed[-1] + 1 :])


def main() -> None:
    prompt = sys.stdin.read()
    asked = re.search(r"Claim thread (\d+)", prompt)
    if asked is None:
        print("No routine run in this turn; nothing to do.")
        return
    thread = int(asked[1])
    found = re.findall(r"cursor: (\d+)", prompt)  # the launcher may quote the message
    cursor = int(found[-1]) if found else 0
    ok("POST", f"/api/threads/{thread}/claim", {"note": "reconciling"})

    new: list[dict[str, Any]] = []
    since = cursor
    while True:
        page = ok("GET", f"/api/messages?since={since}&limit=500")
        new += page["messages"]
        if not page["has_more"]:
            break
        since = page["next_since"]
    new = [m for m in new if m["channel"] != "routines" and m["kind"] != "event"]
    if not new:
        ok(
            "POST",
            f"/api/threads/{thread}/done",
            {"summary": f"No new messages; nothing changed.\ncursor: {cursor}"},
        )
        print("nothing new")
        return
    cursor = max(m["id"] for m in new)

    lines = []
    for thread_id in sorted({m["thread_id"] for m in new}):
        messages = ok("GET", f"/api/threads/{thread_id}")["messages"]
        root = messages[0]
        if not root["tags"]:
            continue
        topic = root["tags"][0]
        path = f"decisions/{topic}.md"
        status, current = call("GET", f"/api/knowledge/{path}")
        base = current["revision"] if status == 200 else 0
        sources = [{"thread": thread_id}] + [{"message": m["id"]} for m in messages]
        if settled(messages):
            if status == 200:
                ok(
                    "POST",
                    f"/api/knowledge/{path}/dispute",
                    {"reason": f"thread {thread_id} settled anew", "sources": sources},
                )
                lines.append(f"{path} revision {base}: disputed (thread {thread_id})")
                continue
            decision = next(
                m for m in messages if m["author_kind"] == "human" and "agreed" in m["body"].lower()
            )
            body = f"# {topic.title()}\n\n{decision['body']}\n"
            written = ok(
                "PUT",
                f"/api/knowledge/{path}",
                {
                    "body": body,
                    "base_revision": 0,
                    "reason": f"settled in thread {thread_id}",
                    "sources": sources,
                },
            )
            lines.append(f"{path} revision {written['revision']}: settled (thread {thread_id})")
        else:
            revision = base
            if status != 200:
                positions = "\n".join(f"- @{m['author']}: {m['body']}" for m in messages)
                body = f"# {topic.title()} (open)\n\nStill debated in thread {thread_id}:\n\n{positions}\n"
                written = ok(
                    "PUT",
                    f"/api/knowledge/{path}",
                    {
                        "body": body,
                        "base_revision": 0,
                        "reason": f"open debate in thread {thread_id}",
                        "sources": sources,
                    },
                )
                revision = written["revision"]
            ok(
                "POST",
                f"/api/knowledge/{path}/dispute",
                {"reason": f"still debated in thread {thread_id}", "sources": sources},
            )
            lines.append(f"{path} revision {revision}: disputed (thread {thread_id})")
    summary = "\n".join([*lines, f"cursor: {cursor}"])
    ok("POST", f"/api/threads/{thread}/done", {"summary": summary})
    print(summary)


if __name__ == "__main__":
    main()
