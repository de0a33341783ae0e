-- Notifications out of band: where a human wants to hear of the board (destinations), which
-- kinds of event go to each, when not to be disturbed, and the outbox of what is to be sent.
-- A destination's settings are JSON (its URL; a webhook's signing secret; an email server's
-- host, port, security, login, from and to); secrets in them are never read back out.
CREATE TABLE destinations (
    id         {id},
    agent_id   {int} NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('webhook', 'slack', 'ntfy', 'email')),
    settings   TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    active     {int} NOT NULL DEFAULT 1
);
CREATE INDEX destinations_agent ON destinations(agent_id, id);

-- Which kinds of event a destination is sent (services/outbound.py KINDS); none: nothing.
CREATE TABLE destination_kinds (
    destination_id {int} NOT NULL REFERENCES destinations(id) ON DELETE CASCADE,
    kind           TEXT NOT NULL,
    PRIMARY KEY (destination_id, kind)
) {without_rowid};

-- A human's quiet hours: from start_min to end_min (minutes after local midnight; the
-- window may span midnight) in timezone (an IANA name, or UTC).
CREATE TABLE quiet_hours (
    agent_id  {int} PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
    start_min {int} NOT NULL CHECK (start_min BETWEEN 0 AND 1439),
    end_min   {int} NOT NULL CHECK (end_min BETWEEN 0 AND 1439),
    timezone  TEXT NOT NULL DEFAULT 'UTC'
);

-- The outbox: one row per event and destination (idem_key "<event key>:<destination id>",
-- so an event is enqueued once however often its write is retried). The dispatcher takes a
-- due pending row (state sending), sends it and marks it sent, or pending again with its
-- next attempt's time, or failed with its error after the last attempt.
CREATE TABLE notifications (
    id             {id},
    idem_key       TEXT NOT NULL UNIQUE,
    destination_id {int} NOT NULL REFERENCES destinations(id) ON DELETE CASCADE,
    kind           TEXT NOT NULL,
    subject        TEXT NOT NULL,
    text           TEXT NOT NULL,
    link           TEXT NOT NULL DEFAULT '',
    state          TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sending', 'sent', 'failed')),
    attempts       {int} NOT NULL DEFAULT 0,
    next_at        TEXT NOT NULL,
    last_error     TEXT NOT NULL DEFAULT '',
    created_at     TEXT NOT NULL,
    sent_at        TEXT
);
CREATE INDEX notifications_due ON notifications(state, next_at);
CREATE INDEX notifications_destination ON notifications(destination_id, id);
