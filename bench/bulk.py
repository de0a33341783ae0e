"""The bulk path: months of messages written straight into a board's SQLite file.

Posting 10^6 messages one HTTP call at a time would take the benchmark longer
than it measures, so the loader writes rows with the standard library's
``sqlite3`` while no board holds the file (``BoardProcess.stopped``). It goes
through the schema's own triggers (thread summaries, participants, full-text
index), so the board reads what posting would have left, and fills the inbox of
every mentioned bot as posting does. The workspace, channels and agents are made
over the API first, so only messages take the shortcut.
"""

from __future__ import annotations

import itertools
import json
import random
import sqlite3
from dataclasses import dataclass

from .common import progress

CHUNK = 20_000  # rows per transaction
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
# 4,900 words, used as often as Zipf's law says: a few everywhere, most rarely.
WORDS = [a + b for a in SYLLABLES for b in SYLLABLES]
ZIPF = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(WORDS))))
ROOT_SHARE = 0.7  # the rest are replies to a recent root of the same channel
MENTION_SHARE = 0.01  # messages that mention a bot, which land in its inbox


@dataclass
class Loaded:
    messages: int
    first_id: int
    last_id: int
    busy_root: int  # a root with many replies, for thread reads


def load_messages(
    db: str, workspace: str, channels: list[str], handles: list[str], count: int, seed: int = 1
) -> Loaded:
    """Append ``count`` messages over ``channels`` by ``handles``, mentioning them now and then."""
    rng = random.Random(seed)
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous = OFF")
        workspace_id = conn.execute("SELECT id FROM workspaces WHERE slug = ?", (workspace,)).fetchone()[0]
        marks = ",".join("?" * len(channels))
        channel_ids = [
            row[0]
            for row in conn.execute(
                f"SELECT id FROM channels WHERE workspace_id = ? AND slug IN ({marks})",
                (workspace_id, *channels),
            )
        ]
        marks = ",".join("?" * len(handles))
        agents = conn.execute(f"SELECT id, handle FROM agents WHERE handle IN ({marks})", handles).fetchall()
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'messages'").fetchone()
        next_id = (row[0] if row else 0) + 1
        first_id = next_id
        recent: dict[int, list[int]] = {c: [] for c in channel_ids}
        replies: dict[int, int] = {}
        for start in range(0, count, CHUNK):
            rows, inbox = [], []
            for _ in range(min(CHUNK, count - start)):
                channel_id = rng.choice(channel_ids)
                author_id, _ = rng.choice(agents)
                words = " ".join(rng.choices(WORDS, cum_weights=ZIPF, k=rng.randint(8, 30)))
                mentions: list[str] = []
                if rng.random() < MENTION_SHARE:
                    target_id, target = rng.choice(agents)
                    mentions = [target]
                    words = f"@{target} {words}"
                    inbox.append((target_id, next_id, "mention"))
                roots = recent[channel_id]
                reply_to = None
                if roots and rng.random() > ROOT_SHARE:
                    reply_to = rng.choice(roots)
                    replies[reply_to] = replies.get(reply_to, 0) + 1
                else:
                    roots.append(next_id)
                    del roots[:-20]
                rows.append(
                    (
                        workspace_id,
                        channel_id,
                        author_id,
                        words,
                        reply_to,
                        reply_to or 0,
                        json.dumps(mentions),
                        f"2026-01-01T00:00:{next_id % 60:02d}Z",
                    )
                )
                next_id += 1
            conn.execute("BEGIN")
            conn.executemany(
                """INSERT INTO messages (workspace_id, channel_id, kind, author_id, body, reply_to,
                       thread_id, mentions, created_at) VALUES (?,?,'channel',?,?,?,?,?,?)""",
                rows,
            )
            conn.executemany(
                "INSERT OR IGNORE INTO inbox (agent_id, message_id, reason) VALUES (?,?,?)", inbox
            )
            conn.execute("COMMIT")
            progress(f"bulk load: {start + len(rows):,} of {count:,} messages")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    busy = max(replies, key=lambda root: replies[root]) if replies else first_id
    return Loaded(count, first_id, next_id - 1, busy)
