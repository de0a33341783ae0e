-- The cost page reads the wakes of a window of days, every bot's at once.
CREATE INDEX wakes_started ON wakes(started_at);
