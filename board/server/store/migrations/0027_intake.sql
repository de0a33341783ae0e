-- Issues in from the forge (docs/intake.md): a source is one webhook of GitHub or Forgejo,
-- named in its URL (/api/intake/<name>). Its secret signs what the forge sends; its API
-- token is for replies back to the forge. Both are kept as given (a signature is checked
-- with the secret itself) and never read back out by any route or page.
CREATE TABLE intake_sources (
    id         {id},
    name       TEXT NOT NULL UNIQUE,
    forge      TEXT NOT NULL CHECK (forge IN ('github', 'forgejo')),
    secret     TEXT NOT NULL,
    api_url    TEXT NOT NULL DEFAULT '',
    api_token  TEXT NOT NULL DEFAULT '',
    created_by {int} REFERENCES agents(id) ON DELETE SET NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

-- Where a repository's issues go (``owner/name``, kept lower-case as forges compare them): a
-- workspace and a channel. A row with a label ('' for
-- none) names the bot to mention on an issue carrying that label; the row without one
-- takes every other issue of the repository. ``reply_out``: a thread's replies go back to
-- the issue as comments (built on the source's API token).
CREATE TABLE intake_mappings (
    id           {id},
    source_id    {int} NOT NULL REFERENCES intake_sources(id) ON DELETE CASCADE,
    repository   TEXT NOT NULL,
    label        TEXT NOT NULL DEFAULT '',
    workspace_id {int} NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    channel      TEXT NOT NULL,
    bot_id       {int} REFERENCES agents(id) ON DELETE SET NULL,
    reply_out    {int} NOT NULL DEFAULT 0,
    UNIQUE (source_id, repository, label)
);
CREATE INDEX intake_mappings_workspace ON intake_mappings(workspace_id);

-- Every delivery taken (refused ones leave nothing): its id is unique per source, so the
-- forge's redelivery is answered 409 and does nothing twice. The sweep forgets rows
-- after 90 days.
CREATE TABLE intake_deliveries (
    id          {id},
    source_id   {int} NOT NULL REFERENCES intake_sources(id) ON DELETE CASCADE,
    delivery    TEXT NOT NULL,
    event       TEXT NOT NULL,
    action      TEXT NOT NULL DEFAULT '',
    repository  TEXT NOT NULL DEFAULT '',
    issue       {int},
    status      TEXT NOT NULL CHECK (status IN ('accepted', 'ignored')),
    detail      TEXT NOT NULL DEFAULT '',
    thread_id   {int} REFERENCES messages(id) ON DELETE SET NULL,
    message_id  {int} REFERENCES messages(id) ON DELETE SET NULL,
    received_at TEXT NOT NULL,
    UNIQUE (source_id, delivery)
);
CREATE INDEX intake_deliveries_received ON intake_deliveries(received_at);
CREATE INDEX intake_deliveries_source ON intake_deliveries(source_id, id);

-- The issue behind a thread: its comments become replies, its closing closes the claim.
CREATE TABLE intake_issues (
    source_id  {int} NOT NULL REFERENCES intake_sources(id) ON DELETE CASCADE,
    repository TEXT NOT NULL,
    issue      {int} NOT NULL,
    thread_id  {int} NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    url        TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    PRIMARY KEY (source_id, repository, issue)
) {without_rowid};
CREATE INDEX intake_issues_thread ON intake_issues(thread_id);
