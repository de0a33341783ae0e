-- A keeper's audit rows are bounded: at most so many state changes per machine
-- per window are recorded (``events_window_at`` starts the window,
-- ``events_in_window`` counts what it recorded); the rest, and any event for a
-- bot not assigned to the machine, are only counted in ``events_dropped``.
ALTER TABLE machines ADD COLUMN events_window_at TEXT;
ALTER TABLE machines ADD COLUMN events_in_window {int} NOT NULL DEFAULT 0;
ALTER TABLE machines ADD COLUMN events_dropped {int} NOT NULL DEFAULT 0;
