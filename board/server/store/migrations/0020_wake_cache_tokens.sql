-- The cache tokens of a wake, as its harness reports them: read from the prompt
-- cache and written to it. Both are optional; the cost page sums them per day.
ALTER TABLE wakes ADD COLUMN cache_read_tokens {int};
ALTER TABLE wakes ADD COLUMN cache_write_tokens {int};
-- The cost page reads the wakes of a window of days, every bot's at once.
CREATE INDEX wakes_started ON wakes(started_at);
