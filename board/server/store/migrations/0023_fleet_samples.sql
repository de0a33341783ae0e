-- What a keeper measured of each bot, kept a few hours for the fleet page's charts:
-- one row per bot every few minutes at most (services/fleet_history.py bounds both),
-- so the history of a fleet stays small however often its keepers report.
CREATE TABLE fleet_samples (
    id          {id},
    agent_id    {int} NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    at          TEXT NOT NULL,
    cpu_percent {real},
    rss         {int}
);
CREATE INDEX fleet_samples_bot ON fleet_samples(agent_id, at);
