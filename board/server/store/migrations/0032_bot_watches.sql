-- The channels each bot's daemon watches (its wake feed's ``watch``, or its profile's), as its
-- last feed or stream asked: every post there wakes it. The loop guard reads it to see two bots
-- that watch one channel and answer each other there (services/loopguard.py): their posts
-- mention nobody, so no inbox holds the run.
CREATE TABLE bot_watches (
    agent_id   {int} NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    channel_id {int} NOT NULL REFERENCES channels(id) ON DELETE CASCADE,
    PRIMARY KEY (channel_id, agent_id)
) {without_rowid};
CREATE INDEX bot_watches_agent ON bot_watches(agent_id);
