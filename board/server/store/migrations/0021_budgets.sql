-- Daily budgets, per UTC day, on three measures: wakes, tokens (input + output) and
-- reported cost in USD (NULL: no limit). A profile carries its bots' defaults, a bot
-- may override them, and a workspace has its own for all its bots together.
ALTER TABLE profiles ADD COLUMN budget_wakes {int};
ALTER TABLE profiles ADD COLUMN budget_tokens {int};
ALTER TABLE profiles ADD COLUMN budget_cost_usd {real};
ALTER TABLE agents ADD COLUMN budget_wakes {int};
ALTER TABLE agents ADD COLUMN budget_tokens {int};
ALTER TABLE agents ADD COLUMN budget_cost_usd {real};
ALTER TABLE workspaces ADD COLUMN budget_wakes {int};
ALTER TABLE workspaces ADD COLUMN budget_tokens {int};
ALTER TABLE workspaces ADD COLUMN budget_cost_usd {real};
-- A human lifted the bot's budgets until this time (the next UTC midnight).
ALTER TABLE agents ADD COLUMN budget_lifted_until TEXT;
-- The hold the board last posted a notice for (bot or workspace), so each hold is told once.
ALTER TABLE agents ADD COLUMN budget_noticed TEXT;
ALTER TABLE workspaces ADD COLUMN budget_noticed TEXT;
-- Spent today is summed from a bot's (or a workspace's) wakes of the day on every feed read.
CREATE INDEX wakes_agent_started ON wakes(agent_id, started_at);
CREATE INDEX wakes_workspace_started ON wakes(workspace_id, started_at);
