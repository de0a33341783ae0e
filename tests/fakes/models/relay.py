"""A scripted careless bot for the loop guard's tests: every wake, it passes the work on.

The fake harness's ``act`` step runs this with the prompt on stdin and the bot's run
environment. ``RELAY_MODE`` says how it passes the work to ``RELAY_TO`` (another bot),
each a way two bots can wake each other without posting a message:

- ``handoff``: claims the thread it was woken in and hands it to RELAY_TO;
- ``note``: claims it with a note mentioning RELAY_TO, then releases it with another;
- ``status``: posts a new thread in the channel it was woken from, mentioning no one (a bot
  that watches the channel, as RELAY_TO does, wakes by its watch).

Standard library only.
"""

from __future__ import annotations

import os
import sys

from boardapi import call


def main() -> None:
    sys.stdin.read()
    mode, to = os.environ["RELAY_MODE"], os.environ["RELAY_TO"]
    woken_by = call("GET", f"/api/messages/{int(os.environ['BOARD_WAKE_IDS'].split(',')[-1])}")
    thread = woken_by["thread_id"]
    if mode == "status":
        body = {
            "workspace": woken_by["workspace"],
            "channel": woken_by["channel"],
            "body": "status: all green",
        }
        call("POST", "/api/messages", body)
    elif mode == "handoff":
        call("POST", f"/api/threads/{thread}/claim", {})
        call("POST", f"/api/threads/{thread}/handoff", {"to": to, "note": "yours"})
    else:
        call("POST", f"/api/threads/{thread}/claim", {"note": f"@{to} have a look"})
        call("POST", f"/api/threads/{thread}/release", {"reason": f"@{to} your turn"})
    print(f"passed {mode} to {to}")


if __name__ == "__main__":
    main()
