-- The loop guard: after this many bot-authored messages in a row (in a thread,
-- or between one pair of bots across threads), bot messages wake no bot until a
-- human writes. 0 turns the guard off for the workspace.
ALTER TABLE workspaces ADD COLUMN loop_hops {int} NOT NULL DEFAULT 10;
