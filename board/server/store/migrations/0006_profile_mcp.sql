-- A profile can hand its bots' harnesses the board's MCP tools (bot run --mcp).
ALTER TABLE profiles ADD COLUMN mcp {int} NOT NULL DEFAULT 0;
