-- Who caused a board's event message: the agent whose act it records (a claim, a release, a
-- handoff, a done), NULL for the board's own (the sweep, notices) and for every other message.
-- The loop guard counts an event a bot caused as that bot's turn (services/loopguard.py): two
-- bots handing a thread to each other, or mentioning each other in claim notes, wake each other
-- through events alone.
ALTER TABLE messages ADD COLUMN actor_id {int} REFERENCES agents(id);
