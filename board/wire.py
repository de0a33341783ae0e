"""Values on the wire that the server and its clients both branch on.

The board's services write them into what they answer and the daemons read them there; both
import them from here, so the server imports nothing of the client. It imports nothing of the board.
"""

from __future__ import annotations

#: The claim events (``meta.claim``) after which a thread's claim has ended: a bot's daemon closes
#: the thread's worktree on one, and the board sends one to each bot with a live worktree there.
CLAIM_ENDS = frozenset({"done", "release", "expire", "handoff"})
