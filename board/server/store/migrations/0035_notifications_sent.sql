-- The sweep prunes sent notifications past their keep, 5,000 at a time (sweep.py): found by
-- when each was sent, not by reading every notification kept, and the deleted rows before them.
CREATE INDEX notifications_sent ON notifications(sent_at) WHERE state = 'sent';
