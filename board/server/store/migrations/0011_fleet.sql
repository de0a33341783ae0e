-- The fleet: machines run by a keeper each, the bots assigned to them, and
-- the one-shot orders a human sends a machine's keeper.

-- A one-time code a human issues so a machine's keeper can enroll.
CREATE TABLE enroll_codes (
    id           {id},
    code_hash    TEXT NOT NULL UNIQUE,
    machine_name TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    used_at      TEXT,
    created_by   {int} REFERENCES agents(id),
    created_at   TEXT NOT NULL
);

-- A machine and its keeper. The keeper's token (bk_) is stored as its SHA-256;
-- enrolling the machine again replaces it. ``report`` is the machine part of
-- the last report (JSON), ``interval_s`` the keeper's own report interval.
-- A keeper's principal is keyed by the machine id, never reused.
CREATE TABLE machines (
    id             {id_never_reused},
    name           {nocase} NOT NULL UNIQUE,
    hostname       TEXT NOT NULL DEFAULT '',
    token_hash     TEXT UNIQUE,
    enrolled_at    TEXT NOT NULL,
    last_report_at TEXT,
    interval_s     {real} NOT NULL DEFAULT 10,
    report         TEXT NOT NULL DEFAULT '{}',
    event_seq      {int} NOT NULL DEFAULT 0
);

-- A bot assigned to a machine: what should run (``desired``) and what the
-- keeper last said runs (``state`` and the details in ``status``, JSON).
CREATE TABLE fleet_bots (
    agent_id    {int} PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
    machine_id  {int} NOT NULL REFERENCES machines(id) ON DELETE CASCADE,
    profile_id  {int} NOT NULL REFERENCES profiles(id),
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
    id         {id_never_reused},
    machine_id {int} NOT NULL REFERENCES machines(id) ON DELETE CASCADE,
    handle     TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('start', 'stop', 'restart')),
    created_at TEXT NOT NULL,
    created_by TEXT NOT NULL,
    acked_at   TEXT,
    ok         {int},
    detail     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX fleet_orders_open ON fleet_orders(machine_id, id) WHERE acked_at IS NULL;
