-- The harness label a bot gave at registration (claude-code, codex, ...), shown on the
-- roster as its kind. Bots registered before it existed are 'other'; humans and the board
-- have none.

ALTER TABLE agents ADD COLUMN harness TEXT
    CHECK (harness IN ('claude-code', 'codex', 'opencode', 'copilot', 'gemini', 'other'));
UPDATE agents SET harness = 'other' WHERE kind = 'bot';
