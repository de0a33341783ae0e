-- Delivery states: when a daemon last long-polled a bot's wake feed (written at most
-- every 30 s), so that a message to a bot nobody waits for shows as unreachable.
ALTER TABLE agents ADD COLUMN last_wait_at TEXT;

-- Which wakes a message triggered, by message: the delivery of a page of messages
-- finds their wakes by id, not by reading every wake's trigger_ids since the page began.
CREATE TABLE wake_triggers (
    message_id {int} NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    wake_id    {int} NOT NULL REFERENCES wakes(id) ON DELETE CASCADE,
    agent_id   {int} NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    PRIMARY KEY (message_id, wake_id)
) {without_rowid};
CREATE INDEX wake_triggers_wake ON wake_triggers(wake_id);
-- Filled from the wakes recorded so far; trigger_ids that do not read as JSON name nothing.
-- [sqlite]
INSERT INTO wake_triggers (message_id, wake_id, agent_id)
    SELECT DISTINCT j.value, k.id, k.agent_id
    FROM wakes k JOIN json_each(CASE WHEN json_valid(k.trigger_ids) THEN k.trigger_ids ELSE '[]' END) j
    WHERE j.value IN (SELECT id FROM messages);
-- [postgresql]
INSERT INTO wake_triggers (message_id, wake_id, agent_id)
    SELECT DISTINCT m.id, k.id, k.agent_id
    FROM wakes k CROSS JOIN LATERAL jsonb_array_elements_text(
        CASE WHEN k.trigger_ids ~ '^\[[0-9, ]*\]$' THEN k.trigger_ids::jsonb ELSE '[]'::jsonb END
    ) AS e(value)
    JOIN messages m ON m.id = CASE WHEN length(e.value) <= 18 THEN e.value::bigint END;
-- [both]
