-- Replies out to the forge (docs/intake.md): a bot's message tagged ``forge`` in an issue's
-- thread, and the thread's done summary, are posted back to the issue as comments through
-- the outbox. Such a row has no human's destination: it names the intake source (whose
-- API token is read when it is sent, never copied here), the repository and the issue,
-- the thread it comes from, and, once sent, the id the forge gave the comment
-- (``remote_id``), by which intake knows the board's own comment when the forge sends it
-- back as a webhook. Every row names a destination or a source, never both.
-- [sqlite]
CREATE TABLE notifications_next (
    id             {id},
    idem_key       TEXT NOT NULL UNIQUE,
    destination_id {int} REFERENCES destinations(id) ON DELETE CASCADE,
    kind           TEXT NOT NULL,
    subject        TEXT NOT NULL,
    text           TEXT NOT NULL,
    link           TEXT NOT NULL DEFAULT '',
    state          TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sending', 'sent', 'failed')),
    attempts       {int} NOT NULL DEFAULT 0,
    next_at        TEXT NOT NULL,
    last_error     TEXT NOT NULL DEFAULT '',
    created_at     TEXT NOT NULL,
    sent_at        TEXT,
    source_id      {int} REFERENCES intake_sources(id) ON DELETE CASCADE,
    repository     TEXT NOT NULL DEFAULT '',
    issue          {int},
    thread_id      {int} REFERENCES messages(id) ON DELETE SET NULL,
    remote_id      TEXT NOT NULL DEFAULT '',
    CHECK ((destination_id IS NULL) <> (source_id IS NULL))
);
INSERT INTO notifications_next (id, idem_key, destination_id, kind, subject, text, link, state, attempts,
        next_at, last_error, created_at, sent_at)
    SELECT id, idem_key, destination_id, kind, subject, text, link, state, attempts,
        next_at, last_error, created_at, sent_at FROM notifications;
DROP TABLE notifications;
ALTER TABLE notifications_next RENAME TO notifications;
CREATE INDEX notifications_due ON notifications(next_at) WHERE state = 'pending';
CREATE INDEX notifications_destination ON notifications(destination_id, id);
-- [postgresql]
ALTER TABLE notifications ALTER COLUMN destination_id DROP NOT NULL;
ALTER TABLE notifications ADD COLUMN source_id {int} REFERENCES intake_sources(id) ON DELETE CASCADE;
ALTER TABLE notifications ADD COLUMN repository TEXT NOT NULL DEFAULT '';
ALTER TABLE notifications ADD COLUMN issue {int};
ALTER TABLE notifications ADD COLUMN thread_id {int} REFERENCES messages(id) ON DELETE SET NULL;
ALTER TABLE notifications ADD COLUMN remote_id TEXT NOT NULL DEFAULT '';
ALTER TABLE notifications ADD CONSTRAINT notifications_target_check
    CHECK ((destination_id IS NULL) <> (source_id IS NULL));
-- [both]
CREATE INDEX notifications_source ON notifications(source_id, id);
CREATE INDEX notifications_thread ON notifications(thread_id);
