"""The fake harnesses are as strict as the real CLIs, and every adapter gets
along with its fake: start, resume, new session, gone session, errors, and the
board actions a bot performs through its own shell."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from board.launcher.harnesses import TurnRequest, get_adapter
from board.launcher.process import run_turn
from tests.launcher.fakeharness import FAKES_BIN, Fake, read_jsonl

HARNESSES = ["claude", "codex", "opencode", "copilot", "gemini"]
UUID = "5f0c1b7e-2d55-4a57-9d1c-0a4c1f3e8b21"


def run_fake(
    argv: list[str], cwd: Path, env: dict[str, str], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a fake as the launcher would: stdin is /dev/null, or a pipe holding only stdin."""
    return subprocess.run(
        [str(FAKES_BIN / argv[0]), *argv[1:]],
        cwd=cwd,
        env=env,
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        text=True,
        timeout=20,
    )


BAD_ARGV = [
    # unknown options
    ["claude", "-p", "hi", "--bogus"],
    ["codex", "exec", "--bogus", "hi"],
    ["opencode", "run", "--bogus", "hi"],
    ["copilot", "-p", "hi", "--bogus"],
    ["gemini", "-p", "hi", "--bogus"],
    # claude: --session-id never with --resume, ids are UUIDs, print mode only
    ["claude", "-p", "--resume", UUID, "--session-id", UUID, "hi"],
    ["claude", "-p", "--continue", "--session-id", UUID, "hi"],
    ["claude", "-p", "--session-id", "not-a-uuid", "hi"],
    ["claude", "-p", "--resume", "not-a-uuid", "hi"],
    ["claude", "hi"],
    ["claude", "-p", "--output-format", "stream-json", "hi"],
    ["claude", "-p", "--permission-mode", "yes", "hi"],
    ["claude", "-p", "one", "two"],
    ["claude", "-p", "--permission-mode", "bypassPermissions", "--resume", UUID, "--session-id", UUID, "hi"],
    # codex: flags that resume rejects after it; exec only
    ["codex", "exec", "--json", "resume", UUID, "-s", "workspace-write", "hi"],
    ["codex", "exec", "--json", "resume", UUID, "-C", "/tmp", "hi"],
    ["codex", "exec", "--json", "resume", UUID, "--sandbox=danger-full-access", "hi"],
    ["codex", "exec", "-s", "wide-open", "hi"],
    ["codex", "exec", "one", "two"],
    ["codex", "hi"],
    # opencode: run only, format choices
    ["opencode", "hi"],
    ["opencode", "run", "--format", "xml", "hi"],
    # copilot: -p needed, no positionals
    ["copilot", "hi"],
    ["copilot", "-p", "hi", "extra"],
    ["copilot", "-p", "hi", "--output-format", "yaml"],
    ["copilot", "-p", "hi", f"--resume={UUID}", f"--session-id={UUID}"],
    # gemini: -y with --approval-mode, -p with a positional prompt
    ["gemini", "-p", "hi", "-y", "--approval-mode", "yolo"],
    ["gemini", "-p", "hi", "positional"],
    ["gemini", "-p", "hi", "-o", "xml"],
    ["gemini", "-r", UUID, "--session-id", UUID, "-p", "hi"],
]


@pytest.mark.parametrize("argv", BAD_ARGV, ids=lambda a: " ".join(a))
def test_bad_argv_exits_with_a_usage_message(
    argv: list[str], fake: Fake, repo: Path, env: dict[str, str]
) -> None:
    fake.script({"do": "ok"})
    proc = run_fake(argv, repo, env)
    assert proc.returncode == (2 if argv[0] == "codex" else 1), proc.stderr  # as the real ones exit
    assert proc.stderr.strip() and proc.stdout == ""
    call = fake.last_call()
    assert call["argv_error"]
    assert "state.json" not in {p.name for p in fake.root.iterdir()}  # no step consumed


@pytest.mark.parametrize("name", HARNESSES)
def test_adapter_argv_is_accepted_for_start_and_resume(
    name: str, fake: Fake, repo: Path, env: dict[str, str]
) -> None:
    adapter = get_adapter(name)
    env = {**env, **adapter.env(TurnRequest(prompt="p"))}
    start = TurnRequest(prompt="start", model="m1")
    first = run_fake(adapter.argv(start), repo, env, adapter.stdin(start))
    assert first.returncode == 0, first.stderr
    r1 = adapter.parse(first.stdout, first.stderr, first.returncode)
    assert r1.ok and r1.session_id, r1.error
    again = TurnRequest(prompt="again", session_id=r1.session_id)
    second = run_fake(adapter.argv(again), repo, env, adapter.stdin(again))
    r2 = adapter.parse(second.stdout, second.stderr, second.returncode)
    assert r2.ok and r2.session_id == r1.session_id, r2.error
    calls = fake.calls()
    assert calls[0]["prompt"] == "start" and calls[0]["model"] == "m1"
    assert calls[1]["resume"] == r1.session_id and calls[1]["tools_allowed"]


@pytest.mark.parametrize("name", HARNESSES)
async def test_turns_through_run_turn(name: str, fake: Fake, repo: Path, env: dict[str, str]) -> None:
    adapter = get_adapter(name)
    fake.script(
        {"do": "ok", "text": "one"},
        {"do": "new_session", "text": "two"},
        {"do": "error_result", "message": "model overloaded"},
        {"do": "session_gone"},
    )

    async def turn(session: str | None) -> Any:
        result, _ = await run_turn(adapter, TurnRequest(prompt="p", session_id=session), cwd=repo, env=env)
        return result

    first = await turn(None)
    assert first.ok and first.text == "one", first.error
    second = await turn(first.session_id)
    assert second.ok and second.text == "two"
    assert second.session_id and second.session_id != first.session_id  # latest wins
    third = await turn(second.session_id)
    # claude, opencode and gemini exit 1 with their structured error; codex and copilot exit 0.
    kind = "error_result" if name in ("codex", "copilot") else "exit"
    assert third.error_kind == kind and "model overloaded" in (third.error or ""), third.error
    gone = await turn(second.session_id)
    assert gone.error_kind == "session_gone", gone.error
    unknown = await turn("5f0c1b7e-0000-4000-8000-000000000000")
    assert unknown.error_kind == "session_gone"


@pytest.mark.parametrize("name", HARNESSES)
async def test_usage_and_cost_come_through(name: str, fake: Fake, repo: Path, env: dict[str, str]) -> None:
    result, _ = await run_turn(get_adapter(name), TurnRequest(prompt="p"), cwd=repo, env=env)
    assert result.ok
    if name == "copilot":
        # its JSON result carries premium requests only, no tokens
        assert result.premium_requests == 1 and result.input_tokens is None
    else:
        assert result.input_tokens and result.output_tokens
    if name in ("claude", "opencode"):
        assert result.cost_usd and result.cost_usd > 0


async def test_claude_sessions_belong_to_their_directory(
    fake: Fake, repo: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    claude = get_adapter("claude")
    first, _ = await run_turn(claude, TurnRequest(prompt="p"), cwd=repo, env=env)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    moved, _ = await run_turn(
        claude, TurnRequest(prompt="p", session_id=first.session_id), cwd=elsewhere, env=env
    )
    assert moved.error_kind == "session_gone"


async def test_claude_session_id_already_in_use(fake: Fake, repo: Path, env: dict[str, str]) -> None:
    claude = get_adapter("claude")
    req = TurnRequest(prompt="p", fresh_session_id=UUID)
    first, _ = await run_turn(claude, req, cwd=repo, env=env)
    assert first.ok and first.session_id == UUID
    again, _ = await run_turn(claude, req, cwd=repo, env=env)
    assert again.error_kind == "exit" and "already in use" in (again.error or "")


async def test_opencode_gets_the_prompt_verbatim(fake: Fake, repo: Path, env: dict[str, str]) -> None:
    prompt = '-- first line says "hi"\n  indented  twice\n- last'
    result, _ = await run_turn(get_adapter("opencode"), TurnRequest(prompt=prompt), cwd=repo, env=env)
    assert result.ok
    assert fake.last_call()["prompt"] == prompt


@pytest.mark.parametrize("name", ["claude", "codex", "copilot", "gemini"])
async def test_prompt_starting_with_a_dash_arrives(
    name: str, fake: Fake, repo: Path, env: dict[str, str]
) -> None:
    result, _ = await run_turn(get_adapter(name), TurnRequest(prompt="-v please"), cwd=repo, env=env)
    assert result.ok, result.error
    assert fake.last_call()["prompt"].strip() == "-v please"


async def test_codex_outside_a_git_repo_needs_the_skip_flag(
    fake: Fake, repo: Path, env: dict[str, str]
) -> None:
    proc = run_fake(["codex", "exec", "--json", "hi"], repo, env)
    assert proc.returncode == 1 and "skip-git-repo-check" in proc.stderr
    (repo / ".git").mkdir()
    assert run_fake(["codex", "exec", "--json", "hi"], repo, env).returncode == 0


async def test_gemini_refuses_an_untrusted_folder(fake: Fake, repo: Path, env: dict[str, str]) -> None:
    proc = run_fake(["gemini", "-p", "hi", "-o", "json", "--approval-mode", "yolo"], repo, env)
    assert proc.returncode == 55 and "not running in a trusted directory" in proc.stderr
    trusted = run_fake(["gemini", "-p", "hi", "-o", "json", "--skip-trust"], repo, env)
    assert trusted.returncode == 0


def test_unknown_persona(repo: Path, env: dict[str, str], tmp_path: Path) -> None:
    link = tmp_path / "aider"
    link.symlink_to(FAKES_BIN.parent / "harness.py")
    proc = subprocess.run([str(link)], cwd=repo, env=env, capture_output=True, text=True)
    assert proc.returncode == 2 and "run me as one of" in proc.stderr


# -- board actions -------------------------------------------------------------


@pytest.fixture
async def board(aiohttp_server: Callable[..., Any]) -> Any:
    """A stand-in for the two board routes the fakes call."""
    seen: list[dict[str, Any]] = []

    async def messages(request: web.Request) -> web.Response:
        seen.append(
            {
                "path": request.path,
                "auth": request.headers.get("Authorization"),
                "body": await request.json(),
            }
        )
        return web.json_response({"id": 101}, status=201)

    async def claim(request: web.Request) -> web.Response:
        seen.append(
            {
                "path": request.path,
                "auth": request.headers.get("Authorization"),
                "body": await request.json(),
            }
        )
        return web.json_response({"thread_id": int(request.match_info["id"]), "held_by": "me"})

    app = web.Application()
    app.router.add_post("/api/messages", messages)
    app.router.add_post("/api/threads/{id}/claim", claim)
    server = await aiohttp_server(app)
    server.seen = seen
    return server


@pytest.mark.parametrize("name", HARNESSES)
async def test_reply_and_claim_reach_the_board_as_the_bot(
    name: str, board: Any, fake: Fake, repo: Path, make_env: Callable[..., dict[str, str]]
) -> None:
    env = make_env(BOARD_URL=str(board.make_url("")).rstrip("/"))
    fake.script({"do": "claim"}, {"do": "reply", "text": "on it"})
    adapter = get_adapter(name)
    for _ in range(2):
        result, _ = await run_turn(adapter, TurnRequest(prompt="p"), cwd=repo, env=env)
        assert result.ok, result.error
    assert board.seen == [
        {"path": "/api/threads/9/claim", "auth": "Bearer tok-secret", "body": {}},
        {
            "path": "/api/messages",
            "auth": "Bearer tok-secret",
            "body": {"reply_to": 9, "body": "on it"},
        },
    ]
    assert [a["status"] for a in fake.actions()] == [200, 201]


@pytest.mark.parametrize(
    ("argv", "kind"),
    [
        (["claude", "-p", "p", "--output-format", "json"], "error_result"),
        (["codex", "exec", "--json", "--skip-git-repo-check", "p"], None),
        (["codex", "exec", "--json", "--skip-git-repo-check", "-s", "workspace-write", "p"], None),
        (["opencode", "run", "--format", "json", "p"], "error_result"),
        (["copilot", "-p", "p", "-s", "--output-format", "json"], None),
        (["gemini", "-p", "p", "-o", "json", "--approval-mode", "default"], None),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else str(v),
)
async def test_without_unattended_flags_the_board_is_never_reached(
    argv: list[str],
    kind: str | None,
    board: Any,
    fake: Fake,
    repo: Path,
    make_env: Callable[..., dict[str, str]],
) -> None:
    env = make_env(BOARD_URL=str(board.make_url("")).rstrip("/"), GEMINI_CLI_TRUST_WORKSPACE="true")
    fake.script({"do": "reply", "text": "on it"})
    adapter = get_adapter(argv[0])
    proc = run_fake(argv, repo, env)
    result = adapter.parse(proc.stdout, proc.stderr, proc.returncode)
    assert result.error_kind == kind, result.error
    assert board.seen == []
    assert fake.actions()[0]["allowed"] is False


@pytest.mark.parametrize("word", ["1", "42", "3.50", "2.", "-7", ".5", "1e3", "0x1f"])
def test_opencode_dies_on_a_message_word_that_looks_like_a_number(
    word: str, fake: Fake, repo: Path, env: dict[str, str]
) -> None:
    proc = run_fake(["opencode", "run", "--format", "json", "--", "covers", word], repo, env)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "G.includes is not a function" in proc.stderr
    piped = run_fake(["opencode", "run", "--format", "json"], repo, env, stdin=f"covers {word}")
    assert piped.returncode == 0 and fake.last_call()["prompt"] == f"covers {word}"
    # what 1.18.33 leaves as words
    assert (
        run_fake(
            ["opencode", "run", "--format", "json", "--", "ids:", "1,", "3.50.", "0123"], repo, env
        ).returncode
        == 0
    )


def test_opencode_prints_no_done_event_and_fails_with_exit_1(
    fake: Fake, repo: Path, env: dict[str, str]
) -> None:
    fake.script({"do": "ok"}, {"do": "error_result", "message": "rate limited"})
    ok = run_fake(["opencode", "run", "--format", "json", "--auto"], repo, env, stdin="p")
    kinds = [json.loads(line)["type"] for line in ok.stdout.splitlines()]
    assert ok.returncode == 0 and kinds[-1] == "step_finish" and "done" not in kinds
    failed = run_fake(["opencode", "run", "--format", "json", "--auto"], repo, env, stdin="p")
    assert failed.returncode == 1 and json.loads(failed.stdout)["type"] == "error"


def test_gemini_writes_its_errors_to_stderr_with_their_exit_codes(
    fake: Fake, repo: Path, env: dict[str, str]
) -> None:
    fake.script({"do": "logged_out"}, {"do": "error_result", "message": "quota"})
    argv = ["gemini", "--session-id", UUID, "-p", "hi", "-o", "json", "--skip-trust"]
    auth = run_fake(argv, repo, env)
    assert auth.returncode == 41 and auth.stdout == ""
    assert '"session_id": "' + UUID in auth.stderr and "Please set an Auth method" in auth.stderr
    during = run_fake(argv[:1] + argv[3:], repo, env)
    assert during.returncode == 1 and during.stdout == "" and "[ERROR] {" in during.stderr
    gone = run_fake(["gemini", "-r", UUID, "-p", "hi", "-o", "json", "--skip-trust"], repo / "..", env)
    assert gone.returncode == 42 and "No previous sessions found" in gone.stderr


def test_claude_not_logged_in_reports_success_with_is_error(
    fake: Fake, repo: Path, env: dict[str, str]
) -> None:
    fake.script({"do": "logged_out"})
    proc = run_fake(["claude", "--output-format", "json", "-p", "hi"], repo, env)
    result = json.loads(proc.stdout)
    assert proc.returncode == 1 and result["subtype"] == "success" and result["is_error"] is True
    assert result["result"] == "Not logged in · Please run /login"


@pytest.mark.skipif(os.geteuid() != 0, reason="claude's refusal is of root")
def test_claude_as_root_refuses_bypass_unless_told_it_is_a_sandbox(
    fake: Fake, repo: Path, make_env: Callable[..., dict[str, str]]
) -> None:
    argv = ["claude", "--permission-mode", "bypassPermissions", "-p", "hi"]
    env = {k: v for k, v in make_env().items() if k != "IS_SANDBOX"}
    proc = run_fake(argv, repo, env)
    assert proc.returncode == 1 and "cannot be used with root/sudo privileges" in proc.stderr
    assert run_fake(argv, repo, {**env, "IS_SANDBOX": "1"}).returncode == 0
    assert run_fake(["claude", "--permission-mode", "acceptEdits", "-p", "hi"], repo, env).returncode == 0


@pytest.mark.parametrize("name", ["copilot", "gemini"])
async def test_a_pre_assigned_session_id_becomes_the_session(
    name: str, fake: Fake, repo: Path, env: dict[str, str]
) -> None:
    adapter = get_adapter(name)
    first, _ = await run_turn(adapter, TurnRequest(prompt="p", fresh_session_id=UUID), cwd=repo, env=env)
    assert first.ok and first.session_id == UUID and fake.last_call()["session"] == UUID
    again, _ = await run_turn(adapter, TurnRequest(prompt="p", session_id=UUID), cwd=repo, env=env)
    assert again.ok and fake.last_call()["resume"] == UUID


def test_a_record_still_being_appended_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    assert read_jsonl(path) == []
    path.write_text('{"n": 1}\n{"n": 2, "prompt": "half of a lo')  # a fake mid-write
    assert read_jsonl(path) == [{"n": 1}]
    with path.open("a") as f:
        f.write('ng one"}\n')
    assert read_jsonl(path) == [{"n": 1}, {"n": 2, "prompt": "half of a long one"}]
