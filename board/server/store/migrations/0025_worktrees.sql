-- Worktrees per thread: what a bot that runs a git worktree per thread says of the one
-- it has for a thread (its branch, what it holds, or why it waits), one row per thread
-- and bot; the thread page, the thread's API answer and the delivery states read it.
CREATE TABLE thread_worktrees (
    thread_id  {int} NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    agent_id   {int} NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    state      TEXT NOT NULL CHECK (state IN ('waiting', 'live', 'kept', 'removed')),
    branch     TEXT NOT NULL DEFAULT '',
    base       TEXT NOT NULL DEFAULT '',
    path       TEXT NOT NULL DEFAULT '',
    ahead      {int} NOT NULL DEFAULT 0,
    commits    TEXT NOT NULL DEFAULT '[]',
    diffstat   TEXT NOT NULL DEFAULT '',
    detail     TEXT NOT NULL DEFAULT '',
    updated_at TEXT NOT NULL,
    PRIMARY KEY (thread_id, agent_id)
) {without_rowid};

-- A launch profile may run its bots with a worktree per thread (``worktrees``), at most
-- ``max_worktrees`` at once each, branched from ``base_branch`` (null: the checkout's branch).
ALTER TABLE profiles ADD COLUMN worktrees {int} NOT NULL DEFAULT 0;
ALTER TABLE profiles ADD COLUMN max_worktrees {int} NOT NULL DEFAULT 4;
ALTER TABLE profiles ADD COLUMN base_branch TEXT;

-- A fleet order may name what it acts on: ``remove_worktree`` names the thread whose
-- kept worktree its keeper removes (``target``); start, stop and restart name none.
-- [sqlite]
CREATE TABLE fleet_orders_next (
    id         {id_never_reused},
    machine_id {int} NOT NULL REFERENCES machines(id) ON DELETE CASCADE,
    handle     TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('start', 'stop', 'restart', 'remove_worktree')),
    created_at TEXT NOT NULL,
    created_by TEXT NOT NULL,
    acked_at   TEXT,
    ok         {int},
    detail     TEXT NOT NULL DEFAULT '',
    target     {int}  -- last, where PostgreSQL's ADD COLUMN puts it: both schemas read alike
);
INSERT INTO fleet_orders_next (id, machine_id, handle, kind, created_at, created_by, acked_at, ok, detail)
    SELECT id, machine_id, handle, kind, created_at, created_by, acked_at, ok, detail FROM fleet_orders;
-- The ids the orders had are never handed out again: the new table's counter is the old one's.
DELETE FROM sqlite_sequence WHERE name = 'fleet_orders_next';
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'fleet_orders_next', seq FROM sqlite_sequence WHERE name = 'fleet_orders';
DROP TABLE fleet_orders;
ALTER TABLE fleet_orders_next RENAME TO fleet_orders;
CREATE INDEX fleet_orders_open ON fleet_orders(machine_id, id) WHERE acked_at IS NULL;
-- [postgresql]
ALTER TABLE fleet_orders DROP CONSTRAINT fleet_orders_kind_check;
ALTER TABLE fleet_orders ADD CONSTRAINT fleet_orders_kind_check
    CHECK (kind IN ('start', 'stop', 'restart', 'remove_worktree'));
ALTER TABLE fleet_orders ADD COLUMN target {int};
-- [both]
