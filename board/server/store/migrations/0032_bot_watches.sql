-- The channels each bot's daemon watches (its wake feed's ``watch``, or its profile's), as its
-- last feed or stream asked: every post there wakes it. By slug, as the daemon names them: a
-- channel is made by its first post, often after the daemon started watching it. The loop
-- guard reads it to see two bots that watch one channel and answer each other there
-- (services/loopguard.py): their posts mention nobody, so no inbox holds the run.
CREATE TABLE bot_watches (
    agent_id     {int} NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    workspace_id {int} NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    channel      TEXT NOT NULL,
    PRIMARY KEY (workspace_id, channel, agent_id)
) {without_rowid};
CREATE INDEX bot_watches_agent ON bot_watches(agent_id);
