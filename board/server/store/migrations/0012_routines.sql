-- Routines: versioned jobs a human approves, their runs, and a change log the
-- runner long-polls. (routine, scheduled_for) is unique: however many runners
-- ask, one scheduled time is one run.

CREATE TABLE routines (
    id           {id},
    name         TEXT NOT NULL UNIQUE,
    workspace_id {int} NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    thread_id    {int} NOT NULL REFERENCES messages(id),
    paused       {int} NOT NULL DEFAULT 0,
    active_since TEXT,
    created_at   TEXT NOT NULL
);
CREATE INDEX routines_workspace ON routines(workspace_id);

CREATE TABLE routine_versions (
    id              {id},
    routine_id      {int} NOT NULL REFERENCES routines(id) ON DELETE CASCADE,
    version         {int} NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'rejected', 'retired')),
    schedule        TEXT NOT NULL,
    timezone        TEXT NOT NULL,
    bot             TEXT NOT NULL,
    prompt          TEXT NOT NULL,
    max_run_seconds {int} NOT NULL,
    grace_seconds   {int} NOT NULL,
    quiet_hours     TEXT,
    why             TEXT NOT NULL DEFAULT '',
    digest          TEXT NOT NULL,
    proposed_by     {int} REFERENCES agents(id) ON DELETE SET NULL,
    proposed_at     TEXT NOT NULL,
    decided_by      {int} REFERENCES agents(id) ON DELETE SET NULL,
    decided_at      TEXT,
    note            TEXT NOT NULL DEFAULT '',
    UNIQUE (routine_id, version)
);
CREATE UNIQUE INDEX routine_versions_approved ON routine_versions(routine_id) WHERE state = 'approved';

CREATE TABLE routine_runs (
    id            {id},
    routine_id    {int} NOT NULL REFERENCES routines(id) ON DELETE CASCADE,
    version       {int} NOT NULL,
    scheduled_for TEXT NOT NULL,
    cause         TEXT NOT NULL CHECK (cause IN ('schedule', 'catch-up', 'run-now')),
    state         TEXT NOT NULL
                  CHECK (state IN ('scheduled', 'running', 'done', 'failed', 'timed_out', 'missed')),
    message_id    {int} REFERENCES messages(id) ON DELETE SET NULL,
    claim_mark    {int} NOT NULL DEFAULT 0,
    started_at    TEXT,
    ended_at      TEXT,
    outcome       TEXT NOT NULL DEFAULT '',
    created_at    TEXT NOT NULL,
    UNIQUE (routine_id, scheduled_for)
);
CREATE INDEX routine_runs_state ON routine_runs(state, routine_id) WHERE state IN ('scheduled', 'running');

-- One row per change a runner must hear about; its id is the cursor of GET /api/routines?since=.
CREATE TABLE routine_changes (
    id         {id_never_reused},
    routine_id {int} NOT NULL REFERENCES routines(id) ON DELETE CASCADE,
    what       TEXT NOT NULL,
    at         TEXT NOT NULL
);
