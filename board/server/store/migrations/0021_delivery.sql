-- Delivery states: when a daemon last long-polled a bot's wake feed (written at most
-- every 30 s), so that a message to a bot nobody waits for shows as unreachable.
ALTER TABLE agents ADD COLUMN last_wait_at TEXT;

-- The delivery of a page of messages asks for the wakes of its bots since the page's
-- oldest message: by bot and time, not the bot's whole history.
CREATE INDEX wakes_agent_created ON wakes(agent_id, created_at);
