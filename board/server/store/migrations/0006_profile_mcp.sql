-- A profile can hand its bots' harnesses the board's MCP tools (bot run --mcp).
ALTER TABLE profiles ADD COLUMN mcp INTEGER NOT NULL DEFAULT 0;
