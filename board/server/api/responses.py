"""What every route answers: a JSON Schema per route and the success statuses it may use.

The OpenAPI document takes its ``responses`` from :data:`RESPONSES`, and the test suite
checks every answer its clients receive against them, so a field that changes shape or
disappears fails a test instead of surprising a bot. Objects list the fields a caller may
rely on as ``required``; extra fields are allowed, so adding one is not a breaking change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
        {"claims": array(ref("Claim"))},
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
            "error": nullable(STR),
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
            "state": {"enum": ["scheduled", "running", "done", "failed", "timed_out", "missed"]},
            "message_id": nullable(INT),
            "started_at": nullable(TIME),
            "ended_at": nullable(TIME),
            "outcome": STR,
            "wake_cost_usd": nullable(NUM),
        },
        {"seen": ANY_OBJECT, "waits_for": INT},
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
        {"id": INT, "handle": STR, "kind": {"enum": ["start", "stop", "restart"]}, "created_at": TIME},
        {
            "created_by": STR,
            "machine": STR,
            "acked_at": nullable(TIME),
            "ok": nullable(BOOL),
            "detail": STR,
        },
    ),
}

STAT_LIST = obj({"count": INT, "documents": array(ANY_OBJECT), "has_more": BOOL})

KNOWLEDGE: dict[tuple[str, str], Schema] = {
    ("GET", ""): page("documents", ref("DocumentItem"), workspace=STR),
    ("GET", "/review"): page(
        "documents",
        obj(
            {
                "id": INT,
                "path": STR,
                "workspace": STR,
                "latest_revision": INT,
                "proposals": INT,
                "revisions": array(ANY_OBJECT),
            }
        ),
    ),
    ("GET", "/pack"): obj(
        {
            "workspace": STR,
            "text": STR,
            "documents": array(obj({"path": STR, "revision": INT, "mandatory": BOOL, "truncated": BOOL})),
            "omitted": array(obj({"path": STR, "why": STR})),
            "budget_tokens": INT,
            "used_tokens": INT,
        }
    ),
    ("GET", "/stats"): obj(
        {
            "workspace": STR,
            "documents": INT,
            "shown": INT,
            "reads": INT,
            "never_read": STAT_LIST,
            "shown_never_read": STAT_LIST,
            "stale": STAT_LIST,
        }
    ),
    ("GET", "/{path:.+}/history"): page(
        "revisions", ref("Revision"), path=STR, workspace=STR, latest_revision=INT
    ),
    ("GET", "/{path:.+}/diff"): obj({"path": STR, "from": INT, "to": INT, "diff": STR}),
    ("POST", "/{path:.+}/dispute"): obj(
        {"path": STR, "workspace": STR, "dispute": ref("Dispute"), "open_disputes": INT, "status": STR}
    ),
    ("POST", "/{path:.+}/resolve"): obj(
        {"path": STR, "workspace": STR, "outcome": STR, "resolved": INT, "open_disputes": INT, "status": STR}
    ),
    ("POST", "/{path:.+}/review"): obj(
        {
            "path": STR,
            "workspace": STR,
            "decisions": array(obj({"revision": INT, "status": STR})),
            "document_status": STR,
            "latest_revision": INT,
        }
    ),
    ("POST", "/{path:.+}/redact"): obj(
        {
            "path": STR,
            "workspace": STR,
            "revision": INT,
            "redacted": obj({"at": TIME, "by": STR, "reason": STR}),
        }
    ),
    ("GET", "/{path:.+}"): ref("Document"),
    ("PUT", "/{path:.+}"): ref("DocumentWrite"),
    ("PATCH", "/{path:.+}"): ref("DocumentWrite"),
    ("DELETE", "/{path:.+}"): ref("DocumentWrite"),
}


@dataclass(frozen=True)
class Answer:
    """A route's answer: its schema and every success status it may use, the usual first."""

    schema: Schema
    statuses: tuple[int, ...] = (200,)


_ROUTINE = "/api/routines/{name}"
ROUTINES: dict[tuple[str, str], Answer] = {
    ("GET", "/api/routines"): Answer(page("routines", ref("Routine"))),
    ("POST", "/api/routines"): Answer(ref("RoutineVersion"), (201, 200)),
    ("GET", _ROUTINE): Answer(ref("Routine")),
    ("POST", f"{_ROUTINE}/versions"): Answer(ref("RoutineVersion"), (201, 200)),
    **{
        ("POST", f"{_ROUTINE}/{action}"): Answer(ref("Routine"))
        for action in ("versions/{v}/approve", "versions/{v}/reject", "pause", "resume")
    },
    ("POST", f"{_ROUTINE}/run-now"): Answer(ref("Run"), (201,)),
    ("GET", f"{_ROUTINE}/runs"): Answer(page("runs", ref("Run"))),
    ("POST", f"{_ROUTINE}/runs"): Answer(ref("Run"), (201,)),
    ("POST", f"{_ROUTINE}/runs/{{id}}/start"): Answer(ref("Run")),
    ("POST", f"{_ROUTINE}/runs/{{id}}/finish"): Answer(ref("Run")),
}


def _answers() -> dict[tuple[str, str], Answer]:
    created = (201,)
    table: dict[tuple[str, str], Answer] = {
        ("GET", "/healthz"): Answer(
            {**obj({"ok": BOOL, "version": STR}, {"pid": INT}), "additionalProperties": False}
        ),
        ("GET", "/install.sh"): Answer(SHELL),
        ("GET", "/install/{name}"): Answer(WHEEL),
        ("POST", "/api/admin/backup"): Answer(obj({"path": STR, "bytes": INT, "started_at": TIME}), created),
        ("GET", "/api"): Answer(
            obj(
                {
                    "version": STR,
                    "board": STR,
                    "docs": ANY_OBJECT,
                    "routes": array(obj({"method": STR, "path": STR, "summary": STR, "auth": BOOL})),
                }
            )
        ),
        ("GET", "/api/openapi.json"): Answer(
            obj({"openapi": STR, "info": ANY_OBJECT, "paths": ANY_OBJECT, "components": ANY_OBJECT})
        ),
        ("GET", "/llms.txt"): Answer(PLAIN),
        ("GET", "/agents.md"): Answer(MARKDOWN),
        ("GET", "/admin.md"): Answer(MARKDOWN),
        ("GET", "/metrics"): Answer(PLAIN),
        ("POST", "/api/agents"): Answer(obj({"agent": ref("Agent"), "token": nullable(STR)}), created),
        ("GET", "/api/me"): Answer(
            {
                "allOf": [
                    ref("Agent"),
                    obj(
                        {
                            "role": STR,
                            "cursor": INT,
                            "inbox": INT,
                            "claims": array(ref("Claim")),
                            "mandatory_reading": array(obj({"channel": STR, "path": STR})),
                        }
                    ),
                ]
            }
        ),
        ("POST", "/api/me/rotate"): Answer(obj({"token": nullable(STR)})),
        ("GET", "/api/agents"): Answer(page("agents", ref("Agent"))),
        ("GET", "/api/agents/{handle}"): Answer(ref("Agent")),
        ("POST", "/api/invites"): Answer(
            obj({"invite": nullable(STR), "workspace": STR, "uses": INT, "expires_at": nullable(TIME)}),
            created,
        ),
        ("DELETE", "/api/agents/{handle}/token"): Answer(obj({"handle": STR, "revoked": INT})),
        ("GET", "/api/workspaces"): Answer(page("workspaces", ref("Workspace"))),
        ("POST", "/api/workspaces"): Answer(ref("Workspace"), created),
        ("GET", "/api/workspaces/{slug}"): Answer(ref("Workspace")),
        ("PATCH", "/api/workspaces/{slug}"): Answer(ref("Workspace")),
        ("POST", "/api/workspaces/{slug}/archive"): Answer(ref("Workspace")),
        ("DELETE", "/api/workspaces/{slug}"): Answer(obj({"deleted": STR, "removed": ANY_OBJECT})),
        ("PUT", "/api/workspaces/{slug}/bots"): Answer(obj({"workspace": STR, "bots": array(STR)})),
        ("GET", "/api/channels"): Answer(page("channels", ref("Channel"))),
        ("POST", "/api/channels"): Answer(ref("Channel"), (201, 200)),
        ("PATCH", "/api/channels/{slug}"): Answer(ref("Channel")),
        ("GET", "/api/conversations"): Answer(page("conversations", ref("Conversation"))),
        ("POST", "/api/conversations"): Answer(
            obj({"conversation": ref("Conversation"), "created": BOOL}), (201, 200)
        ),
        ("POST", "/api/messages"): Answer(ref("Message"), created),
        ("GET", "/api/messages"): Answer(page("messages", ref("Message"))),
        ("GET", "/api/messages/{id}"): Answer(ref("Message")),
        ("GET", "/api/threads/{id}"): Answer(
            page(
                "messages",
                ref("Message"),
                thread_id=INT,
                paused=BOOL,
                claim=ref("ThreadClaim"),
                claim_history=array(obj({"id": INT, "action": STR, "actor": STR, "at": TIME})),
            )
        ),
        ("GET", "/api/inbox"): Answer(page("messages", ref("Message"))),
        ("GET", "/api/search"): Answer(page("messages", ref("Message"))),
        ("POST", "/api/receipts"): Answer(
            obj({"message_ids": array(INT), "state": {"enum": ["seen", "done"]}})
        ),
        ("POST", "/api/threads/{id}/claim"): Answer(ref("Claim"), (201, 200)),
        ("POST", "/api/threads/{id}/release"): Answer(ref("Claim")),
        ("POST", "/api/threads/{id}/handoff"): Answer(ref("Claim")),
        ("POST", "/api/threads/{id}/done"): Answer(ref("Claim")),
        ("GET", "/api/claims"): Answer(
            page(
                "claims",
                ref("Claim"),
                {
                    "unseen": array(
                        obj({"handle": STR, "message_id": INT, "thread_id": INT, "flagged_at": TIME})
                    )
                },
            )
        ),
        ("POST", "/api/wakes"): Answer(ref("Wake"), created),
        ("GET", "/api/wakes"): Answer(page("wakes", ref("Wake"))),
        ("GET", "/api/wake"): Answer(page("messages", ref("Message"))),
        ("GET", "/api/skills"): Answer(page("skills", ref("Skill"))),
        ("POST", "/api/skills"): Answer(ref("Skill"), created),
        ("GET", "/api/skills/{name}"): Answer(ref("Skill")),
        ("PUT", "/api/skills/{name}"): Answer(ref("Skill")),
        ("GET", "/api/profiles"): Answer(page("profiles", ref("Profile"))),
        ("POST", "/api/profiles"): Answer(ref("Profile"), created),
        ("GET", "/api/profiles/{name}"): Answer(ref("Profile")),
        ("PUT", "/api/profiles/{name}"): Answer(ref("Profile")),
        ("GET", "/api/bots/{handle}/prompt"): Answer(
            obj(
                {
                    "bot": STR,
                    "turn": STR,
                    "first_turn": nullable(STR),
                    "bytes": INT,
                    "budget_bytes": INT,
                    "covers": array(INT),
                    "omitted": array(INT),
                }
            )
        ),
        ("GET", "/api/audit"): Answer(page("entries", ref("AuditEntry"))),
        **ROUTINES,
        ("POST", "/api/fleet/enroll-codes"): Answer(
            obj({"code": nullable(STR), "machine_name": STR, "expires_at": TIME, "command": nullable(STR)}),
            created,
        ),
        ("POST", "/api/fleet/enroll"): Answer(obj({"machine": STR, "token": nullable(STR)}), created),
        ("POST", "/api/fleet/report"): Answer(
            obj(
                {
                    "machine": STR,
                    "bots": array(obj({"handle": STR, "workspace": STR, "profile": STR, "desired": STR})),
                    "orders": array(ref("FleetOrder")),
                    "event_seq": INT,
                }
            )
        ),
        ("GET", "/api/fleet"): Answer(page("machines", ref("Machine"), orders=array(ref("FleetOrder")))),
        ("POST", "/api/fleet/bots"): Answer(ref("FleetBot"), created),
        **{
            ("POST", f"/api/fleet/bots/{{handle}}/{kind}"): Answer(
                {"allOf": [ref("FleetBot"), obj({"order": obj({"id": INT, "kind": STR})})]}
            )
            for kind in ("start", "stop", "restart")
        },
        ("DELETE", "/api/fleet/bots/{handle}"): Answer(
            obj({"handle": STR, "machine": STR, "unassigned": BOOL})
        ),
        ("POST", "/api/fleet/bots/{handle}/token"): Answer(
            obj({"handle": STR, "workspace": STR, "token": nullable(STR)}), created
        ),
    }
    for prefix in ("/api/knowledge", "/api/workspaces/{slug}/knowledge"):
        for (method, suffix), schema in KNOWLEDGE.items():
            statuses: tuple[int, ...] = (201,) if suffix == "/{path:.+}/dispute" else (200,)
            if method in ("PUT", "PATCH"):
                statuses = (200, 201)
            table[(method, prefix + suffix)] = Answer(schema, statuses)
    return table


#: Every route's answer, by (method, path as declared).
RESPONSES = _answers()
