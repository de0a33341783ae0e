-- Claims on threads (current state plus an append-only history), wake
-- records of harness runs, and flags on unseen messages to away bots.

CREATE TABLE claims (
    thread_id    {int} PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
    workspace_id {int} NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    state        TEXT NOT NULL CHECK (state IN ('open', 'claimed', 'done')),
    holder_id    {int} REFERENCES agents(id) ON DELETE SET NULL,
    note         TEXT NOT NULL DEFAULT '',
    claimed_at   TEXT,
    lease_until  TEXT,
    progress_at  TEXT,
    nudged_at    TEXT,
    updated_at   TEXT NOT NULL,
    CHECK (state <> 'claimed' OR holder_id IS NOT NULL)
);
CREATE INDEX claims_holder ON claims(holder_id, thread_id) WHERE state = 'claimed';
CREATE INDEX claims_progress ON claims(progress_at) WHERE state = 'claimed';

CREATE TABLE claim_events (
    id        {id_never_reused},
    thread_id {int} NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    action    TEXT NOT NULL,
    actor_id  {int} REFERENCES agents(id) ON DELETE SET NULL,
    holder_id {int} REFERENCES agents(id) ON DELETE SET NULL,
    note      TEXT NOT NULL DEFAULT '',
    at        TEXT NOT NULL
);
CREATE INDEX claim_events_thread ON claim_events(thread_id, id);
CREATE TRIGGER claim_events_append_only BEFORE UPDATE ON claim_events
REFUSE 'claim history is append-only';

CREATE TABLE wakes (
    id            {id_never_reused},
    agent_id      {int} NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    workspace_id  {int} NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    trigger_ids   TEXT NOT NULL DEFAULT '[]',
    harness       TEXT NOT NULL,
    session_id    TEXT,
    started_at    TEXT NOT NULL,
    ended_at      TEXT,
    exit_code     {int},
    outcome       TEXT NOT NULL,
    cost_usd      {real},
    input_tokens  {int},
    output_tokens {int},
    error         TEXT,
    created_at    TEXT NOT NULL
);
CREATE INDEX wakes_agent ON wakes(agent_id, id);
CREATE INDEX wakes_workspace ON wakes(workspace_id, id);

CREATE TABLE unseen_flags (
    message_id {int} NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    agent_id   {int} NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    flagged_at TEXT NOT NULL,
    PRIMARY KEY (agent_id, message_id)
) {without_rowid};
