-- The registry: skills (board-wide, every version kept), profiles (how to
-- launch a bot, per workspace) and which profile each bot runs with.

CREATE TABLE skills (
    id         {id},
    name       TEXT NOT NULL UNIQUE,
    version    {int} NOT NULL,
    created_at TEXT NOT NULL,
    created_by TEXT NOT NULL
);

-- Every version of a skill, appended by each write; the skill's row points at the latest.
CREATE TABLE skill_versions (
    skill_id    {int} NOT NULL REFERENCES skills(id) ON DELETE CASCADE,
    version     {int} NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    source      TEXT NOT NULL DEFAULT '',
    text        TEXT NOT NULL,
    reason      TEXT NOT NULL DEFAULT '',
    author      TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (skill_id, version)
) {without_rowid};
CREATE TRIGGER skill_versions_append_only BEFORE UPDATE ON skill_versions
REFUSE 'skill versions are append-only';

CREATE TABLE profiles (
    id           {id},
    name         TEXT NOT NULL UNIQUE,
    workspace_id {int} NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    harness      TEXT NOT NULL
                 CHECK (harness IN ('claude', 'codex', 'opencode', 'copilot', 'gemini', 'command')),
    model        TEXT NOT NULL DEFAULT '',
    flags        TEXT NOT NULL DEFAULT '[]',
    repo         TEXT NOT NULL DEFAULT '',
    watch        TEXT NOT NULL DEFAULT '[]',
    goal         {int} REFERENCES messages(id) ON DELETE SET NULL,
    identity     TEXT NOT NULL DEFAULT '',
    version      {int} NOT NULL DEFAULT 1,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    updated_by   TEXT NOT NULL
);
CREATE INDEX profiles_workspace ON profiles(workspace_id, name);

-- A profile's skills, in the order the profile lists them; a skill must exist.
CREATE TABLE profile_skills (
    profile_id {int} NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
    skill_id   {int} NOT NULL REFERENCES skills(id),
    position   {int} NOT NULL,
    PRIMARY KEY (profile_id, skill_id)
) {without_rowid};

-- Which profile a bot runs with: at most one per bot.
CREATE TABLE bot_profiles (
    agent_id   {int} PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
    profile_id {int} NOT NULL REFERENCES profiles(id) ON DELETE CASCADE
);
CREATE INDEX bot_profiles_profile ON bot_profiles(profile_id);
