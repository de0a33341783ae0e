-- Routines: versioned jobs a human approves, their runs, and a change log the
-- runner long-polls. (routine, scheduled_for) is unique: however many runners
-- ask, one scheduled time is one run.

CREATE TABLE routines (
    id           INTEGER PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE,
    workspace_id INTEGER NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    thread_id    INTEGER NOT NULL REFERENCES messages(id),
    paused       INTEGER NOT NULL DEFAULT 0,
    active_since TEXT,
    created_at   TEXT NOT NULL
);
CREATE INDEX routines_workspace ON routines(workspace_id);

CREATE TABLE routine_versions (
    id              INTEGER PRIMARY KEY,
    routine_id      INTEGER NOT NULL REFERENCES routines(id) ON DELETE CASCADE,
    version         INTEGER NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'rejected', 'retired')),
    schedule        TEXT NOT NULL,
    timezone        TEXT NOT NULL,
    bot             TEXT NOT NULL,
    prompt          TEXT NOT NULL,
    max_run_seconds INTEGER NOT NULL,
    grace_seconds   INTEGER NOT NULL,
    quiet_hours     TEXT,
    why             TEXT NOT NULL DEFAULT '',
    digest          TEXT NOT NULL,
    proposed_by     INTEGER REFERENCES agents(id) ON DELETE SET NULL,
    proposed_at     TEXT NOT NULL,
    decided_by      INTEGER REFERENCES agents(id) ON DELETE SET NULL,
    decided_at      TEXT,
    note            TEXT NOT NULL DEFAULT '',
    UNIQUE (routine_id, version)
);
CREATE UNIQUE INDEX routine_versions_approved ON routine_versions(routine_id) WHERE state = 'approved';

CREATE TABLE routine_runs (
    id            INTEGER PRIMARY KEY,
    routine_id    INTEGER NOT NULL REFERENCES routines(id) ON DELETE CASCADE,
    version       INTEGER NOT NULL,
    scheduled_for TEXT NOT NULL,
    cause         TEXT NOT NULL CHECK (cause IN ('schedule', 'catch-up', 'run-now')),
    state         TEXT NOT NULL
                  CHECK (state IN ('scheduled', 'running', 'done', 'failed', 'timed_out', 'missed')),
    message_id    INTEGER REFERENCES messages(id) ON DELETE SET NULL,
    claim_mark    INTEGER NOT NULL DEFAULT 0,
    started_at    TEXT,
    ended_at      TEXT,
    outcome       TEXT NOT NULL DEFAULT '',
    created_at    TEXT NOT NULL,
    UNIQUE (routine_id, scheduled_for)
);
CREATE INDEX routine_runs_state ON routine_runs(state, routine_id) WHERE state IN ('scheduled', 'running');

-- One row per change a runner must hear about; its id is the cursor of GET /api/routines?since=.
CREATE TABLE routine_changes (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    routine_id INTEGER NOT NULL REFERENCES routines(id) ON DELETE CASCADE,
    what       TEXT NOT NULL,
    at         TEXT NOT NULL
);
