"""Who may do what: every action not every caller may take, named once with its rule and refusal.

A service asks here at the moment it decides, once :mod:`.scope` has let the
caller see what it acts on (out of scope stays NOT_FOUND, as for an absent
row): ``require(p, "claim.release", claim=row)``. A refused action is
FORBIDDEN with the action's refusal, formatted with the facts given.

Visibility (which workspace, conversation, machine a caller sees) is
:mod:`.scope`'s; this table is about doing. A route whose every call is one of
these actions for one role only says so (``Route(role=...)``): the endpoint
refuses other callers up front, the OpenAPI document shows the role
(``x-role``), and the service still asks here, for the pages and MCP.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import Forbidden
from ..principal import Principal
from . import scope

Facts = Mapping[str, Any]


@dataclass(frozen=True)
class Rule:
    """Who is allowed; ``name`` is how the OpenAPI document and the docs say it."""

    name: str
    allows: Callable[[Principal, Facts], bool]


def _holds_or_human(p: Principal, facts: Facts) -> bool:
    claim = facts["claim"]
    return p.is_human or claim["state"] != "claimed" or claim["holder_id"] == p.agent_id


HUMAN = Rule("human", lambda p, facts: p.is_human)
BOT = Rule("bot", lambda p, facts: p.is_bot)
KEEPER = Rule("keeper", lambda p, facts: p.is_keeper)
RUNNER = Rule("runner", lambda p, facts: p.is_runner)
NOT_RUNNER = Rule("anyone but the runner", lambda p, facts: not p.is_runner)
BOT_OR_KEEPER = Rule("bot or keeper", lambda p, facts: p.is_bot or p.is_keeper)
EVERY_WORKSPACE = Rule("human or admin bot", lambda p, facts: scope.reaches_every_workspace(p))
HOLDER_OR_HUMAN = Rule("the claim's holder or a human", _holds_or_human)

#: The rules a whole route may declare (``Route(role=...)``): they need no facts of a call.
ROLES = (HUMAN, BOT, KEEPER, RUNNER)


@dataclass(frozen=True)
class Action:
    name: str
    rule: Rule
    #: The FORBIDDEN message, a ``str.format`` template over the facts ``require`` is given.
    refusal: str


def _routine(doing: str) -> str:
    return f"Only a human may {doing} a routine; bots propose, humans decide."


def _claim(doing: str) -> str:
    return f"Only the holder ({{claim[holder]}}) or a human may {doing} this claim."


ACTIONS: dict[str, Action] = {
    action.name: action
    for action in (
        # Identity and tokens.
        Action("invite.create", HUMAN, "Only a human may invite bots."),
        Action("bot.revoke_token", HUMAN, "Only a human may revoke a bot's token."),
        Action("token.manage", HUMAN, "Only a human manages API tokens here."),
        Action("password.set", HUMAN, "Only a human has a password."),
        Action("notifications", HUMAN, "Browser notifications are a human's; a bot reads its inbox."),
        Action(
            "notify.manage",
            HUMAN,
            "Notification destinations are a human's; a bot can neither read nor set one.",
        ),
        # Writing: the composer's preview is a page's.
        Action("message.preview", HUMAN, "Only a human previews messages; a bot posts what it means."),
        # Workspaces.
        Action("workspace.create", HUMAN, "Only a human may create workspaces."),
        Action("workspace.update", HUMAN, "Only a human may change workspace settings."),
        Action("workspace.archive", HUMAN, "Only a human may archive workspaces."),
        Action("workspace.delete", HUMAN, "Only a human may delete workspaces."),
        Action("workspace.set_bots", HUMAN, "Only a human may change workspace membership."),
        # Claims: the holder or a human; closing an unclaimed thread is a human's.
        Action("claim.release", HOLDER_OR_HUMAN, _claim("release")),
        Action("claim.handoff", HOLDER_OR_HUMAN, _claim("hand off")),
        Action("claim.close", HOLDER_OR_HUMAN, _claim("close")),
        Action("thread.close_unclaimed", HUMAN, "Claim thread {thread} before closing it."),
        # Wakes are a bot's.
        Action("wake.feed", BOT, "The wake feed is a bot's; humans read /api/inbox."),
        Action("wake.record", BOT, "Wakes are recorded by a bot's launcher, with the bot's token."),
        Action(
            "thread.worktree",
            BOT,
            "A thread's worktree is recorded by its bot's daemon, with the bot's token.",
        ),
        # The registry.
        Action(
            "skill.write",
            EVERY_WORKSPACE,
            "Only humans and admin bots write skills; ask one in the admin workspace.",
        ),
        Action("profile.write", HUMAN, "Only a human writes profiles."),
        # Budgets: a bot never raises its own.
        Action("budget.set", HUMAN, "Only a human may change or lift a bot's budget."),
        # Knowledge.
        Action("kb.review", HUMAN, "Only a human reviews knowledge."),
        Action("kb.redact", HUMAN, "Only a human redacts knowledge."),
        # Routines: bots propose, a human decides, the runner runs.
        Action("routine.propose", NOT_RUNNER, "The runner runs approved routines; it proposes none."),
        Action("routine.approve", HUMAN, _routine("approve")),
        Action("routine.reject", HUMAN, _routine("reject")),
        Action("routine.pause", HUMAN, _routine("pause")),
        Action("routine.resume", HUMAN, _routine("resume")),
        Action("routine.run_now", HUMAN, _routine("run")),
        Action(
            "routine.step_run",
            RUNNER,
            "Runs are created and finished by the routines runner (board routines run).",
        ),
        # The fleet: humans steer it; a keeper speaks for its machine.
        Action("fleet.enroll_code", HUMAN, "Only a human may add a machine."),
        Action("fleet.view", HUMAN, "Only a human may see the fleet."),
        Action("fleet.assign", HUMAN, "Only a human may assign bots to machines."),
        Action("fleet.order", HUMAN, "Only a human may start, stop or restart bots."),
        Action("fleet.remove_worktree", HUMAN, "Only a human may remove a bot's kept worktree."),
        Action("fleet.unassign", HUMAN, "Only a human may unassign bots."),
        Action("fleet.remove_machine", HUMAN, "Only a human may remove a machine."),
        Action(
            "fleet.worktree_gone",
            BOT_OR_KEEPER,
            "A worktree's folder is said gone by its bot's daemon or by its keeper.",
        ),
        Action("fleet.keeper_call", KEEPER, "Only a machine's keeper (a bk_ token) makes this call."),
        # Issues in from the forge: its sources hold a webhook secret and an API token.
        Action("intake.manage", HUMAN, "Only a human manages the forge's intake: its secrets and tokens."),
        # The operator's care.
        Action("audit.read", HUMAN, "Only a human may read the audit log."),
        Action("backup.take", HUMAN, "Only a human may take a backup."),
    )
}


def allowed(p: Principal, name: str, **facts: Any) -> bool:
    return ACTIONS[name].rule.allows(p, facts)


def require(p: Principal, name: str, **facts: Any) -> None:
    """FORBIDDEN with the action's refusal unless ``p`` may take action ``name`` on ``facts``."""
    action = ACTIONS[name]
    if not action.rule.allows(p, facts):
        raise Forbidden(action.refusal.format(**facts))


def only(name: str) -> Action:
    """The action a whole route is, for ``Route(role=...)``: its rule must be a role alone."""
    action = ACTIONS[name]
    assert action.rule in ROLES, f"{name}: a route's role is one of {[r.name for r in ROLES]}"
    return action
