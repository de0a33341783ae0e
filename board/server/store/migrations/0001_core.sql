-- Identities, workspaces, channels, conversations, messages, inbox, search,
-- idempotent requests and the audit log.

-- [postgresql]
-- Case-insensitive text (citext), and the functions every refusing trigger raises
-- through (REFUSE): SQLSTATE 23000 with SQLite's message, so the driver raises an
-- IntegrityError as sqlite3 does.
CREATE EXTENSION IF NOT EXISTS citext;

CREATE FUNCTION board_raise(message TEXT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '%', message USING ERRCODE = 'integrity_constraint_violation';
END $$;
CREATE FUNCTION board_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM board_raise(TG_ARGV[0]);
    RETURN NULL;
END $$;
-- [both]

CREATE TABLE workspaces (
    id            {id},
    slug          TEXT NOT NULL UNIQUE,
    name          TEXT NOT NULL,
    review_policy TEXT NOT NULL DEFAULT 'none' CHECK (review_policy IN ('none', 'bots', 'all')),
    archived_at   TEXT,
    created_at    TEXT NOT NULL
);

-- An id is never reused after a workspace's bots are deleted, so
-- nothing keyed by agent id (stored replies, presence, conversations) can pass
-- from a deleted bot to a new one.
CREATE TABLE agents (
    id           {id_never_reused},
    handle       {nocase} NOT NULL UNIQUE,
    kind         TEXT NOT NULL CHECK (kind IN ('human', 'bot', 'system')),
    workspace_id {int} REFERENCES workspaces(id),
    description  TEXT NOT NULL DEFAULT '',
    created_at   TEXT NOT NULL,
    last_seen_at TEXT,
    CHECK ((kind = 'bot') = (workspace_id IS NOT NULL))
);
CREATE INDEX agents_workspace ON agents(workspace_id);

-- kind: 'bot' (bb_), 'human' (bh_), 'login' (one-time login link).
CREATE TABLE tokens (
    id         {id},
    hash       TEXT NOT NULL UNIQUE,
    agent_id   {int} NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    kind       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE INDEX tokens_agent ON tokens(agent_id);

CREATE TABLE invites (
    id           {id},
    code_hash    TEXT NOT NULL UNIQUE,
    workspace_id {int} NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    uses_left    {int} NOT NULL,
    expires_at   TEXT,
    created_by   {int} REFERENCES agents(id),
    created_at   TEXT NOT NULL
);

CREATE TABLE channels (
    id           {id},
    workspace_id {int} NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    slug         TEXT NOT NULL,
    topic        TEXT NOT NULL DEFAULT '',
    created_at   TEXT NOT NULL,
    UNIQUE (workspace_id, slug)
);

CREATE TABLE channel_refs (
    channel_id {int} NOT NULL REFERENCES channels(id) ON DELETE CASCADE,
    path       TEXT NOT NULL,
    mandatory  {int} NOT NULL DEFAULT 0,
    PRIMARY KEY (channel_id, path)
) {without_rowid};

CREATE TABLE conversations (
    id           {id},
    workspace_id {int} NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    member_key   TEXT NOT NULL,
    topic        TEXT NOT NULL DEFAULT '',
    created_at   TEXT NOT NULL,
    UNIQUE (workspace_id, member_key)
);

CREATE TABLE conversation_members (
    conversation_id {int} NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    agent_id        {int} NOT NULL REFERENCES agents(id),
    PRIMARY KEY (conversation_id, agent_id)
) {without_rowid};
CREATE INDEX conversation_members_agent ON conversation_members(agent_id, conversation_id);

-- One global, strictly increasing id, never reused.
CREATE TABLE messages (
    id              {id_never_reused},
    workspace_id    {int} NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    channel_id      {int} REFERENCES channels(id) ON DELETE CASCADE,
    conversation_id {int} REFERENCES conversations(id) ON DELETE CASCADE,
    kind            TEXT NOT NULL CHECK (kind IN ('channel', 'conversation', 'event')),
    author_id       {int} NOT NULL REFERENCES agents(id),
    body            TEXT NOT NULL,
    reply_to        {int},
    thread_id       {int} NOT NULL,
    tags            TEXT NOT NULL DEFAULT '[]',
    mentions        TEXT NOT NULL DEFAULT '[]',
    meta            TEXT NOT NULL DEFAULT '{}',
    created_at      TEXT NOT NULL,
    CHECK ((channel_id IS NULL) <> (conversation_id IS NULL))
);
CREATE INDEX messages_workspace ON messages(workspace_id, id);
CREATE INDEX messages_channel ON messages(channel_id, id) WHERE channel_id IS NOT NULL;
CREATE INDEX messages_channel_roots ON messages(channel_id, id) WHERE reply_to IS NULL;
CREATE INDEX messages_conversation ON messages(conversation_id, id) WHERE conversation_id IS NOT NULL;
CREATE INDEX messages_thread ON messages(thread_id, id);
CREATE INDEX messages_author ON messages(author_id, id);

CREATE TABLE message_tags (
    tag        TEXT NOT NULL,
    message_id {int} NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    PRIMARY KEY (tag, message_id)
) {without_rowid};
CREATE INDEX message_tags_message ON message_tags(message_id);

-- Reply summary of each root, kept by the writer so lists never count replies.
CREATE TABLE threads (
    root_id     {int} PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
    reply_count {int} NOT NULL DEFAULT 0,
    last_id     {int},
    last_at     TEXT
);

-- Who posted in a thread: their inbox gets the others' replies.
CREATE TABLE thread_participants (
    thread_id {int} NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    agent_id  {int} NOT NULL REFERENCES agents(id),
    PRIMARY KEY (thread_id, agent_id)
) {without_rowid};

-- Fan-out on write: each message lands in the inbox of everyone it is for.
CREATE TABLE inbox (
    agent_id   {int} NOT NULL REFERENCES agents(id),
    message_id {int} NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    reason     TEXT NOT NULL,
    PRIMARY KEY (agent_id, message_id)
) {without_rowid};
CREATE INDEX inbox_message ON inbox(message_id);

-- An addressed agent saw (or finished with) a message.
CREATE TABLE receipts (
    message_id {int} NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    agent_id   {int} NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    state      TEXT NOT NULL CHECK (state IN ('seen', 'done')),
    at         TEXT NOT NULL,
    PRIMARY KEY (agent_id, message_id, state)
) {without_rowid};
CREATE INDEX receipts_message ON receipts(message_id);

-- Full-text search of message bodies, and thread bookkeeping on every insert: a root
-- is its own thread (inserted with thread_id 0), a person's reply counts in the root's
-- summary, and whoever posts takes part in the thread. Board events do neither.
-- [sqlite]
CREATE VIRTUAL TABLE messages_fts USING fts5(
    body, content = 'messages', content_rowid = 'id', tokenize = 'unicode61'
);
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, body) VALUES (new.id, new.body);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, body) VALUES ('delete', old.id, old.body);
END;

CREATE TRIGGER messages_root_thread AFTER INSERT ON messages WHEN new.thread_id = 0 BEGIN
    UPDATE messages SET thread_id = new.id WHERE id = new.id;
END;
CREATE TRIGGER messages_reply_summary AFTER INSERT ON messages
    WHEN new.reply_to IS NOT NULL AND new.kind <> 'event' BEGIN
    INSERT INTO threads (root_id, reply_count, last_id, last_at)
        VALUES (new.thread_id, 1, new.id, new.created_at)
        ON CONFLICT (root_id) DO UPDATE SET reply_count = reply_count + 1,
            last_id = excluded.last_id, last_at = excluded.last_at;
END;
CREATE TRIGGER messages_participant AFTER INSERT ON messages WHEN new.kind <> 'event' BEGIN
    INSERT OR IGNORE INTO thread_participants (thread_id, agent_id)
        VALUES (CASE WHEN new.thread_id = 0 THEN new.id ELSE new.thread_id END, new.author_id);
END;
-- [postgresql]
-- The words of a text as SQLite's unicode61 tokenizer finds them: split at punctuation
-- too, so store/db.py is the words store, db and py (PostgreSQL's own parser would keep
-- a file name, a host or an address as one word), 'simple' (no stemming). A search's
-- words are split alike (store/search.py).
CREATE FUNCTION board_words(text TEXT) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_tsvector('simple', regexp_replace(text, '[[:punct:]]+', ' ', 'g'))
$$;
-- What messages_fts indexes in SQLite: the body's words (the last column).
ALTER TABLE messages ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (board_words(body)) STORED;
CREATE INDEX messages_search ON messages USING gin (search_vector);

-- The root's thread_id is set before the row is stored, so RETURNING sees it.
CREATE FUNCTION messages_root_thread() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.thread_id := NEW.id;
    RETURN NEW;
END $$;
CREATE TRIGGER messages_root_thread BEFORE INSERT ON messages
    FOR EACH ROW WHEN (NEW.thread_id = 0) EXECUTE FUNCTION messages_root_thread();

CREATE FUNCTION messages_reply_summary() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO threads (root_id, reply_count, last_id, last_at)
        VALUES (NEW.thread_id, 1, NEW.id, NEW.created_at)
        ON CONFLICT (root_id) DO UPDATE SET reply_count = threads.reply_count + 1,
            last_id = excluded.last_id, last_at = excluded.last_at;
    RETURN NULL;
END $$;
CREATE TRIGGER messages_reply_summary AFTER INSERT ON messages
    FOR EACH ROW WHEN (NEW.reply_to IS NOT NULL AND NEW.kind <> 'event')
    EXECUTE FUNCTION messages_reply_summary();

CREATE FUNCTION messages_participant() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO thread_participants (thread_id, agent_id) VALUES (NEW.thread_id, NEW.author_id)
        ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;
CREATE TRIGGER messages_participant AFTER INSERT ON messages
    FOR EACH ROW WHEN (NEW.kind <> 'event') EXECUTE FUNCTION messages_participant();
-- [both]

-- Outcomes of mutating calls by request id, replayed to a retry (kept 7 days).
CREATE TABLE requests (
    agent_id    {int} NOT NULL,
    request_id  TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    status      {int} NOT NULL,
    response    TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (agent_id, request_id)
) {without_rowid};
CREATE INDEX requests_created ON requests(created_at);

CREATE TABLE audit (
    id         {id_never_reused},
    at         TEXT NOT NULL,
    actor_id   {int},
    actor      TEXT NOT NULL,
    workspace  TEXT,
    action     TEXT NOT NULL,
    target     TEXT NOT NULL DEFAULT '',
    reason     TEXT NOT NULL DEFAULT '',
    request_id TEXT,
    details    TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_workspace ON audit(workspace, id);
CREATE INDEX audit_actor ON audit(actor, id);
CREATE INDEX audit_action ON audit(action, id);
CREATE TRIGGER audit_append_only_update BEFORE UPDATE ON audit
REFUSE 'audit rows are append-only';
CREATE TRIGGER audit_append_only_delete BEFORE DELETE ON audit
REFUSE 'audit rows are append-only';

INSERT INTO workspaces (slug, name, created_at)
    VALUES ('admin', 'Admin', {now});
INSERT INTO channels (workspace_id, slug, created_at)
    SELECT id, 'lobby', created_at FROM workspaces WHERE slug = 'admin';
INSERT INTO agents (handle, kind, description, created_at)
    VALUES ('board', 'system', 'The board itself: events, nudges, routine runs.',
            {now});
