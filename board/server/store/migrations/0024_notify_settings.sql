-- Which browser notifications a human turned off, one row per kind (none: every kind on).
-- The kinds are the inbox's: mention, dm, held, crashed, routine (services/inbox.py).
CREATE TABLE notify_off (
    agent_id {int} NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    kind     TEXT NOT NULL,
    PRIMARY KEY (agent_id, kind)
) {without_rowid};
