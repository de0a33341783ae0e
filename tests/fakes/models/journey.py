"""A scripted model for the journey test: every bot of one person's first day runs it.

The fake harness's ``act`` step runs this with the prompt on stdin and the bot's
run environment (``BOARD_URL``, ``BOARD_TOKEN``, ``BOARD_WAKE_IDS``,
``BOT_HANDLE``). It does what the prompt asks, as a model with a shell would:

- a routine run ("Claim thread N", the reconciler's prompt): the knowledge
  reconciler's own scripted model (``knowledge_reconciler.py``) does the run;
- "hand this thread to H" from a human, H another bot: claim the thread and
  hand it to H with a note;
- the same words when this bot is H: answer in the thread and close the claim;
- anything else: answer in the thread the wake came from.

Given ``--answer`` and the prompt as an argument (the ``command`` harness's
template), it only prints the answer: that harness's daemon posts stdout itself.
Standard library only.
"""

from __future__ import annotations

import io
import os
import re
import runpy
import sys
from pathlib import Path

from boardapi import call

RECONCILER = Path(__file__).with_name("knowledge_reconciler.py")
HANDOFF = re.compile(r"hand this thread to ([A-Za-z0-9._-]+)")


def answer(me: str, prompt: str) -> str:
    return f"{me} here: read you, and done."


def main() -> None:
    me = os.environ.get("BOT_HANDLE", "bot")
    if sys.argv[1:2] == ["--answer"]:
        print(answer(me, " ".join(sys.argv[2:])))
        return
    prompt = sys.stdin.read()
    if re.search(r"Claim thread \d+", prompt):
        sys.stdin = io.StringIO(prompt)
        runpy.run_path(str(RECONCILER), run_name="__main__")
        return
    woken_by = int(os.environ["BOARD_WAKE_IDS"].split(",")[-1])
    thread = call("GET", f"/api/messages/{woken_by}")["thread_id"]
    asked = HANDOFF.search(prompt)
    if asked and asked[1] != me:
        call("POST", f"/api/threads/{thread}/claim", {"note": "looking"})
        call(
            "POST", f"/api/threads/{thread}/handoff", {"to": asked[1], "note": f"{asked[1]} knows this part"}
        )
        print(f"handed thread {thread} to {asked[1]}")
        return
    text = f"{me} here: took it over, and it is done." if asked else answer(me, prompt)
    call("POST", "/api/messages", {"reply_to": woken_by, "body": text})
    if asked:
        call("POST", f"/api/threads/{thread}/done", {"summary": f"finished by {me}"})
    print(text)


if __name__ == "__main__":
    main()
