"""The pieces routes build their answers' JSON Schemas from, and the shared components.

Each route declares its own answer (``Route(answer=...)``, :class:`.route.Answer`); the
OpenAPI document publishes it with :data:`COMPONENTS`, and the test suite checks every
answer its clients receive against it, so a field that changes shape or disappears fails
a test instead of surprising a bot. Objects list the fields a caller may rely on as
``required``; extra fields are allowed, so adding one is not a breaking change.
"""

from __future__ import annotations

from typing import Any

from ..services.fleet_view import BADGES, PENDING
from ..services.routines import RUN_STATES

Schema = dict[str, Any]

STR: Schema = {"type": "string"}
INT: Schema = {"type": "integer"}
NUM: Schema = {"type": "number"}
BOOL: Schema = {"type": "boolean"}
TIME: Schema = {"type": "string", "format": "date-time"}
ANY_OBJECT: Schema = {"type": "object"}
MARKDOWN: Schema = {"type": "string", "contentMediaType": "text/markdown"}
PLAIN: Schema = {"type": "string", "contentMediaType": "text/plain"}
SHELL: Schema = {"type": "string", "contentMediaType": "text/x-shellscript"}
WHEEL: Schema = {"contentMediaType": "application/zip"}  # bytes: no JSON type to check


def nullable(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


def array(items: Schema) -> Schema:
    return {"type": "array", "items": items}


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def obj(required: dict[str, Schema], optional: dict[str, Schema] | None = None) -> Schema:
    """An object with these fields always present and ``optional`` ones sometimes."""
    return {
        "type": "object",
        "required": sorted(required),
        "properties": {**required, **(optional or {})},
    }


def page(noun: str, item: Schema, optional: dict[str, Schema] | None = None, **extra: Schema) -> Schema:
    """A bounded list (10-api.md): the items under a plural noun, ``has_more`` and ``cursor``."""
    return obj(
        {noun: array(item), "has_more": BOOL, "cursor": INT, **extra},
        {
            "next_since": {"type": ["integer", "string"]},
            "next_before": INT,
            "next_offset": INT,
            **(optional or {}),
        },
    )


#: The daily limits of a bot, profile or workspace (null: none set).
BUDGET_LIMITS: dict[str, Schema] = {
    "budget_wakes": nullable(INT),
    "budget_tokens": nullable(INT),
    "budget_cost_usd": nullable(NUM),
}

CLAIM_STATE: Schema = {"enum": ["open", "claimed", "done"]}

#: What some answers add to a message: a root's replies and claim, receipts on one message,
#: why it is in an inbox, a search snippet, the wake feed's marks.
MESSAGE_EXTRAS: dict[str, Schema] = {
    "replies": obj(
        {"count": INT, "last_id": nullable(INT), "last_at": nullable(TIME), "authors": array(STR)}
    ),
    "claim": ref("ThreadClaim"),
    "receipts": array(
        obj({"handle": STR, "seen_at": nullable(TIME), "done_at": nullable(TIME)}, {"reason": STR})
    ),
    # Per bot a message is addressed to (docs/bots.md "Delivery states"): where it stands.
    "delivery": array(
        obj(
            {
                "handle": STR,
                "state": {"enum": ["queued", "woken", "replied", "failed", "held", "unreachable"]},
                "at": nullable(TIME),
            },
            {"reason": STR},
        )
    ),
    "reason": STR,
    "snippet": STR,
    "for_me": BOOL,
    "watched": BOOL,
    "unreadable": BOOL,  # a stored field could not be read back; it is shown empty
}

COMPONENTS: dict[str, Schema] = {
    "Claim": obj(
        {
            "thread_id": INT,
            "workspace": STR,
            "state": CLAIM_STATE,
            "holder": nullable(STR),
            "note": nullable(STR),
            "claimed_at": nullable(TIME),
            "lease_until": nullable(TIME),
            "progress_at": nullable(TIME),
            "updated_at": TIME,
        }
    ),
    # On a root: the claim, or only its state and holder when nobody ever claimed it.
    "ThreadClaim": obj(
        {"state": CLAIM_STATE, "holder": nullable(STR)}, {"thread_id": INT, "lease_until": nullable(TIME)}
    ),
    "Agent": obj(
        {
            "handle": STR,
            "kind": STR,
            "workspace": nullable(STR),
            "description": STR,
            "created_at": TIME,
            "last_seen_at": nullable(TIME),
            "presence": {"enum": ["active", "recent", "idle", "away"]},
        },
        {"claims": array(ref("Claim")), "budget": ref("BotBudget")},
    ),
    # Why a bot's wakes are held (services/budgets.py): the wake feed's ``held``.
    "BudgetHold": obj(
        {
            "reason": {"enum": ["budget"]},
            "which": STR,
            "scope": {"enum": ["bot", "workspace"]},
            "source": STR,
            "measure": {"enum": ["wakes", "tokens", "cost_usd"]},
            "limit": NUM,
            "spent": NUM,
            "resets_at": TIME,
        }
    ),
    # A bot's own limits (null: its profile's, if it has one), the limits in force, and today's spending.
    "BotBudget": obj(
        {
            **BUDGET_LIMITS,
            "profile": nullable(STR),
            "limits": ANY_OBJECT,
            "spent_today": obj({"wakes": INT, "tokens": INT, "cost_usd": NUM}),
            "lifted_until": nullable(TIME),
            "resets_at": TIME,
            "held": nullable(ref("BudgetHold")),
        }
    ),
    # A message in full (10-api.md lists its fields); roots add replies and claim.
    "FullMessage": obj(
        {
            "id": INT,
            "workspace": STR,
            "channel": nullable(STR),
            "conversation": nullable(INT),
            "kind": {"enum": ["channel", "conversation", "event"]},
            "author": STR,
            "author_kind": STR,
            "body": STR,
            "reply_to": nullable(INT),
            "thread_id": INT,
            "tags": array(STR),
            "mentions": array(STR),
            "meta": ANY_OBJECT,
            "created_at": TIME,
        },
        MESSAGE_EXTRAS,
    ),
    # A triage row (view=compact).
    "CompactMessage": obj(
        {
            "id": INT,
            "channel": nullable(STR),
            "author": STR,
            "created_at": TIME,
            "tags": array(STR),
            "mentions": array(STR),
            "reply_to": nullable(INT),
            "thread_id": INT,
            "preview": STR,
            "body_chars": INT,
            "meta_keys": array(STR),
        },
        MESSAGE_EXTRAS,
    ),
    "Message": {"anyOf": [ref("FullMessage"), ref("CompactMessage")]},
    "Channel": obj(
        {
            "slug": STR,
            "workspace": STR,
            "topic": STR,
            "refs": array(obj({"path": STR, "mandatory": BOOL})),
            "created_at": TIME,
        },
        {"last_id": nullable(INT), "unread": INT, "created": BOOL},
    ),
    "Conversation": obj(
        {"id": INT, "workspace": STR, "participants": array(STR), "topic": STR, "created_at": TIME},
        {"last_id": nullable(INT), "unread": INT},
    ),
    "Workspace": obj(
        {
            "slug": STR,
            "name": STR,
            "review": {"enum": ["none", "bots", "all"]},
            "loop_hops": INT,
            **BUDGET_LIMITS,
            "archived": BOOL,
            "archived_at": nullable(TIME),
            "created_at": TIME,
        },
        {"bots": INT, "channels": INT, "last_id": nullable(INT)},
    ),
    "Wake": obj(
        {
            "id": INT,
            "bot": STR,
            "workspace": STR,
            "harness": STR,
            "session_id": nullable(STR),
            "started_at": TIME,
            "ended_at": nullable(TIME),
            "exit_code": nullable(INT),
            "outcome": STR,
            "cost_usd": nullable(NUM),
            "input_tokens": nullable(INT),
            "output_tokens": nullable(INT),
            "cache_read_tokens": nullable(INT),
            "cache_write_tokens": nullable(INT),
            "error": nullable(STR),
            "rotated": nullable({"enum": ["turns", "tokens"]}),
            "trigger_ids": array(INT),
            "created_at": TIME,
        },
        {"unreadable": BOOL},
    ),
    "Skill": obj(
        {
            "name": STR,
            "version": INT,
            "latest_version": INT,
            "description": STR,
            "source": STR,
            "bytes": INT,
            "created_at": TIME,
            "created_by": STR,
            "updated_at": TIME,
            "updated_by": STR,
        },
        {"text": STR, "reason": STR},
    ),
    "Profile": obj(
        {
            "name": STR,
            "workspace": STR,
            "harness": STR,
            "model": STR,
            "flags": array(STR),
            "repo": STR,
            "watch": array(STR),
            "skills": array(STR),
            "bots": array(STR),
            "goal": nullable(INT),
            "command_template": STR,
            "command_session_field": STR,
            "rotate_after_turns": nullable(INT),
            "rotate_after_tokens": nullable(INT),
            "worktrees": BOOL,
            "max_worktrees": INT,
            "base_branch": nullable(STR),
            **BUDGET_LIMITS,
            "version": INT,
            "created_at": TIME,
            "updated_at": TIME,
            "updated_by": STR,
        },
        {"identity": STR, "identity_chars": INT},
    ),
    "AuditEntry": obj(
        {
            "id": INT,
            "at": TIME,
            "actor": STR,
            "action": STR,
            "target": STR,
            "workspace": nullable(STR),
            "reason": nullable(STR),
            "request_id": nullable(STR),
            "details": ANY_OBJECT,
        }
    ),
    # A version of a routine (docs/routines.md); the approved one of a routine adds its schedule in words.
    "RoutineVersion": obj(
        {
            "version": INT,
            "state": {"enum": ["pending", "approved", "rejected", "retired"]},
            "schedule": STR,
            "timezone": STR,
            "bot": STR,
            "prompt": STR,
            "max_run_seconds": INT,
            "grace_seconds": INT,
            "quiet_hours": nullable(STR),
            "why": STR,
            "proposed_by": nullable(STR),
            "proposed_at": TIME,
            "decided_by": nullable(STR),
            "decided_at": nullable(TIME),
            "note": STR,
        },
        {"schedule_words": STR, "routine": STR, "proposed": BOOL, "dry_run": BOOL},
    ),
    "Run": obj(
        {
            "id": INT,
            "version": INT,
            "scheduled_for": TIME,
            "cause": {"enum": ["schedule", "catch-up", "run-now"]},
            "state": {"enum": list(RUN_STATES)},
            "message_id": nullable(INT),
            "started_at": nullable(TIME),
            "ended_at": nullable(TIME),
            "outcome": STR,
            "wake_cost_usd": nullable(NUM),
        },
        {"seen": ANY_OBJECT, "waits_for": INT, "waits_until": TIME},
    ),
    "Routine": obj(
        {
            "name": STR,
            "workspace": STR,
            "thread_id": INT,
            "state": {"enum": ["unapproved", "active", "paused"]},
            "active_since": nullable(TIME),
            "approved": nullable(ref("RoutineVersion")),
            "pending": array(INT),
            "next_run": nullable(TIME),
            "last_run": nullable(ref("Run")),
            "covered_until": nullable(TIME),
            "open_runs": array(ref("Run")),
        },
        {"versions": array(ref("RoutineVersion"))},
    ),
    # A knowledge document in a list: current revision, or ranked with a snippet.
    "DocumentItem": obj(
        {
            "path": STR,
            "title": STR,
            "status": STR,
            "revision": INT,
            "latest_revision": INT,
            "updated_at": TIME,
        },
        {"author": STR, "excerpt": STR, "snippet": STR, "expired": BOOL, "redacted": BOOL},
    ),
    "Revision": obj(
        {
            "revision": INT,
            "kind": STR,
            "status": STR,
            "author": STR,
            "author_kind": STR,
            "title": STR,
            "bytes": INT,
            "reason": STR,
            "recorded_at": TIME,
            "sources": array(ANY_OBJECT),
        },
        {"body": STR, "valid_from": nullable(TIME), "valid_to": nullable(TIME), "expired": BOOL},
    ),
    "Document": obj(
        {
            "path": STR,
            "workspace": STR,
            "revision": INT,
            "latest_revision": INT,
            "current": BOOL,
            "kind": STR,
            "status": STR,
            "title": STR,
            "body": STR,
            "bytes": INT,
            "author": STR,
            "author_kind": STR,
            "recorded_at": TIME,
            "updated_at": TIME,
            "sources": array(ANY_OBJECT),
            "disputes": array(ANY_OBJECT),
        },
        {"revision_status": STR, "lines": obj({"from": INT, "to": INT, "total": INT}), "section": STR},
    ),
    "DocumentWrite": obj(
        {
            "path": STR,
            "workspace": STR,
            "revision": INT,
            "latest_revision": INT,
            "kind": STR,
            "status": STR,
            "document_status": STR,
            "created": BOOL,
            "bytes": INT,
            "recorded_at": TIME,
        },
        {"base_revision": INT, "shown_revision": nullable(INT), "deleted": BOOL},
    ),
    "Dispute": obj(
        {
            "id": INT,
            "by": STR,
            "revision": INT,
            "reason": STR,
            "opened_at": TIME,
            "sources": array(ANY_OBJECT),
        }
    ),
    # A bot's git worktree for a thread (docs/bots.md, worktrees per thread).
    "Worktree": obj(
        {
            "thread_id": INT,
            "bot": STR,
            "state": {"enum": ["waiting", "live", "kept", "removed"]},
            "branch": STR,
            "base": STR,
            "path": STR,
            "ahead": INT,
            "commits": array(obj({"sha": STR, "subject": STR})),
            "diffstat": STR,
            "detail": STR,
            "updated_at": TIME,
        }
    ),
    # A comment posted back to the forge's issue of a thread (docs/intake.md, replies out).
    "ForgeReply": obj(
        {
            "id": INT,
            "kind": {"enum": ["reply", "done"]},
            "source": STR,
            "forge": {"enum": ["github", "forgejo"]},
            "repository": STR,
            "issue": INT,
            "thread_id": INT,
            "state": {"enum": ["pending", "sending", "sent", "failed"]},
            "attempts": INT,
            "last_error": STR,
            "comment_id": nullable(STR),
            "created_at": TIME,
            "sent_at": nullable(TIME),
        }
    ),
    # The fleet (docs/fleet.md). Process fields come from a keeper's report: always present, null
    # when it sent none (a bot assigned a moment ago) or sent a value of another type.
    "FleetBot": obj(
        {
            "handle": STR,
            "workspace": STR,
            "machine": STR,
            "profile": STR,
            "desired": {"enum": ["running", "stopped"]},
            "state": STR,
            "shown": {"enum": list(BADGES)},
            "shown_words": {"enum": [badge.word for badge in BADGES.values()]},
            "pending": nullable({"enum": list(PENDING)}),
            "pending_words": nullable({"enum": list(PENDING.values())}),
            "presence": STR,
            "claims": array(INT),
            "reported_at": nullable(TIME),
            "assigned_at": TIME,
            "assigned_by": STR,
            "pid": nullable(INT),
            "started_at": nullable(TIME),
            "cpu_percent": nullable(NUM),
            "rss": nullable(INT),
            "restarts": nullable(INT),
            "last_exit_code": nullable(INT),
            "harness": nullable(
                obj(
                    {
                        "pid": nullable(INT),
                        "cpu_percent": nullable(NUM),
                        "rss": nullable(INT),
                        "started_at": nullable(TIME),
                    }
                )
            ),
            "last_wake": nullable(
                obj(
                    {
                        "at": nullable(TIME),
                        "duration_s": nullable(NUM),
                        "cost_usd": nullable(NUM),
                        "outcome": nullable(STR),
                        "trigger_ids": array(INT),
                    }
                )
            ),
            "backoff_s": nullable(NUM),
            "log_tail": array(STR),
            "error": nullable(STR),
            "worktrees": array(
                obj(
                    {
                        "thread": INT,
                        "branch": nullable(STR),
                        "path": nullable(STR),
                        "state": nullable({"enum": ["live", "kept"]}),
                        "age_s": nullable(NUM),
                        "disk_bytes": nullable(INT),
                        "uncommitted": nullable(INT),
                        "uncommitted_paths": array(STR),
                    },
                    {"removing": BOOL},
                )
            ),
            "worktrees_disk_bytes": INT,
        },
    ),
    "Machine": obj(
        {
            "name": STR,
            "hostname": STR,
            "status": {"enum": ["online", "stale", "never"]},
            "online": BOOL,
            "stale_for_s": nullable(NUM),
            "last_report_at": nullable(TIME),
            "interval_s": NUM,
            "enrolled_at": TIME,
            "events_dropped": INT,
            "bots": array(ref("FleetBot")),
            "os": nullable(STR),
            "cpus": nullable(INT),
            "load": array(NUM),
            "memory": obj({"total": nullable(INT), "used": nullable(INT), "percent": nullable(NUM)}),
            "disk": obj({"total": nullable(INT), "used": nullable(INT), "percent": nullable(NUM)}),
            "keeper_version": nullable(STR),
            "uptime_s": nullable(NUM),
            "clock_skew_s": nullable(NUM),
            "keeper": obj({"pid": nullable(INT), "cpu_s": nullable(NUM), "rss": nullable(INT)}),
        },
    ),
    "FleetOrder": obj(
        {
            "id": INT,
            "handle": STR,
            "kind": {"enum": ["start", "stop", "restart", "remove_worktree"]},
            "created_at": TIME,
        },
        {
            "target": nullable(INT),
            "created_by": STR,
            "machine": STR,
            "acked_at": nullable(TIME),
            "ok": nullable(BOOL),
            "detail": STR,
        },
    ),
}
