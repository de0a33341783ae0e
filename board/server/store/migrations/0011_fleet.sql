-- The fleet: machines run by a keeper each, the bots assigned to them, and
-- the one-shot orders a human sends a machine's keeper.

-- A one-time code a human issues so a machine's keeper can enroll.
CREATE TABLE enroll_codes (
    id           INTEGER PRIMARY KEY,
    code_hash    TEXT NOT NULL UNIQUE,
    machine_name TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    used_at      TEXT,
    created_by   INTEGER REFERENCES agents(id),
    created_at   TEXT NOT NULL
);

-- A machine and its keeper. The keeper's token (bk_) is stored as its SHA-256;
-- enrolling the machine again replaces it. ``report`` is the machine part of
-- the last report (JSON), ``interval_s`` the keeper's own report interval.
-- AUTOINCREMENT: a keeper's principal is keyed by the machine id, never reused.
CREATE TABLE machines (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    name           TEXT NOT NULL UNIQUE COLLATE NOCASE,
    hostname       TEXT NOT NULL DEFAULT '',
    token_hash     TEXT UNIQUE,
    enrolled_at    TEXT NOT NULL,
    last_report_at TEXT,
    interval_s     REAL NOT NULL DEFAULT 10,
    report         TEXT NOT NULL DEFAULT '{}',
    event_seq      INTEGER NOT NULL DEFAULT 0
);

-- A bot assigned to a machine: what should run (``desired``) and what the
-- keeper last said runs (``state`` and the details in ``status``, JSON).
CREATE TABLE fleet_bots (
    agent_id    INTEGER PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
    machine_id  INTEGER NOT NULL REFERENCES machines(id) ON DELETE CASCADE,
    profile_id  INTEGER NOT NULL REFERENCES profiles(id),
    desired     TEXT NOT NULL CHECK (desired IN ('running', 'stopped')),
    state       TEXT NOT NULL DEFAULT 'unknown',
    status      TEXT NOT NULL DEFAULT '{}',
    reported_at TEXT,
    assigned_at TEXT NOT NULL,
    assigned_by TEXT NOT NULL
);
CREATE INDEX fleet_bots_machine ON fleet_bots(machine_id);

-- A one-shot order for a machine's keeper; sent in every answer to its
-- reports until the keeper acknowledges it.
CREATE TABLE fleet_orders (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    machine_id INTEGER NOT NULL REFERENCES machines(id) ON DELETE CASCADE,
    handle     TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('start', 'stop', 'restart')),
    created_at TEXT NOT NULL,
    created_by TEXT NOT NULL,
    acked_at   TEXT,
    ok         INTEGER,
    detail     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX fleet_orders_open ON fleet_orders(machine_id, id) WHERE acked_at IS NULL;
