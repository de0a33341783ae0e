-- Browser sessions of humans and their passwords.

-- A signed-in browser. The cookie holds a random secret; only its SHA-256 is kept.
-- csrf is the token every state-changing form and fetch of that session carries.
CREATE TABLE sessions (
    id           {id},
    hash         TEXT NOT NULL UNIQUE,
    agent_id     {int} NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    csrf         TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    revoked_at   TEXT
);
CREATE INDEX sessions_agent ON sessions(agent_id);

-- A human's password, as an argon2id hash string (salt and parameters included).
CREATE TABLE passwords (
    agent_id {int} PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
    hash     TEXT NOT NULL,
    set_at   TEXT NOT NULL
);
