-- The knowledge base of each workspace: documents with their head (so lists,
-- reads and search never scan history), append-only numbered revisions,
-- disputes, and a full-text index over the body each document shows now.

-- One row per path: the head. ``latest_revision`` is what the next write must
-- name as its base; ``current_id`` is the revision the document shows (the
-- newest accepted one, or its first proposal while nothing is accepted);
-- ``pending_revision`` a newer proposal waiting for review. Paths are unique without
-- regard to case (they are ASCII, so NOCASE is exact).
CREATE TABLE kb_documents (
    id                {id},
    workspace_id      {int} NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    path              {nocase} NOT NULL,
    created_at        TEXT NOT NULL,
    latest_revision   {int} NOT NULL DEFAULT 0,
    accepted_revision {int} NOT NULL DEFAULT 0,
    current_id        {int},
    pending_revision  {int},
    state             TEXT NOT NULL DEFAULT 'hidden' CHECK (state IN ('live', 'tombstoned', 'hidden')),
    status            TEXT CHECK (status IN ('proposed', 'settled', 'disputed', 'superseded')),
    open_disputes     {int} NOT NULL DEFAULT 0,
    updated_at        TEXT NOT NULL,
    confirmed_at      TEXT,
    shown_count       {int} NOT NULL DEFAULT 0,
    read_count        {int} NOT NULL DEFAULT 0,
    last_shown_at     TEXT,
    last_read_at      TEXT,
    UNIQUE (workspace_id, path)
);
CREATE INDEX kb_documents_state ON kb_documents(workspace_id, state, path);
CREATE INDEX kb_documents_current ON kb_documents(current_id);

-- Revisions are appended and never rewritten: the only changes a trigger lets
-- through are a review deciding a proposal once, and a redaction erasing a body
-- once. Revision N+1 may only follow the document's latest revision N, and
-- (document, revision) is unique: two writers on one base cannot both land,
-- however many processes write.
CREATE TABLE kb_revisions (
    id               {id},
    document_id      {int} NOT NULL REFERENCES kb_documents(id) ON DELETE CASCADE,
    workspace_id     {int} NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    revision         {int} NOT NULL CHECK (revision >= 1),
    base_revision    {int} NOT NULL,
    kind             TEXT NOT NULL CHECK (kind IN ('write', 'tombstone')),
    status           TEXT NOT NULL CHECK (status IN ('proposed', 'settled', 'superseded', 'rejected')),
    body             TEXT NOT NULL DEFAULT '',
    title            TEXT NOT NULL DEFAULT '',
    excerpt          TEXT NOT NULL DEFAULT '',
    bytes            {int} NOT NULL DEFAULT 0,
    author_id        {int},
    author           TEXT NOT NULL,
    author_kind      TEXT NOT NULL,
    reason           TEXT NOT NULL,
    sources          TEXT NOT NULL DEFAULT '[]',
    recorded_at      TEXT NOT NULL,
    valid_from       TEXT,
    valid_to         TEXT,
    superseded_by    TEXT,
    overrides        {int},
    reviewed_by      TEXT,
    reviewed_at      TEXT,
    review_note      TEXT,
    redacted_by      TEXT,
    redacted_at      TEXT,
    redaction_reason TEXT,
    redacted_sha256  TEXT,
    UNIQUE (document_id, revision),
    CHECK (base_revision = revision - 1),
    CHECK (kind = 'write' OR body = ''),
    CHECK (status <> 'superseded' OR superseded_by IS NOT NULL)
);
CREATE INDEX kb_revisions_accepted ON kb_revisions(document_id, revision)
    WHERE status IN ('settled', 'superseded');
CREATE INDEX kb_revisions_proposed ON kb_revisions(workspace_id, document_id, revision)
    WHERE status = 'proposed';

CREATE TRIGGER kb_revisions_follow_latest BEFORE INSERT ON kb_revisions
WHEN NEW.revision <> 1 + (SELECT latest_revision FROM kb_documents WHERE id = NEW.document_id)
REFUSE 'version conflict: a revision must follow the latest one';

CREATE TRIGGER kb_revisions_append_only BEFORE UPDATE ON kb_revisions
WHEN NOT (
    NEW.id = OLD.id AND NEW.document_id = OLD.document_id AND NEW.workspace_id = OLD.workspace_id
    AND NEW.revision = OLD.revision AND NEW.base_revision = OLD.base_revision AND NEW.kind = OLD.kind
    AND NEW.author_id IS NOT DISTINCT FROM OLD.author_id AND NEW.author = OLD.author AND NEW.author_kind = OLD.author_kind
    AND NEW.reason = OLD.reason AND NEW.sources = OLD.sources AND NEW.recorded_at = OLD.recorded_at
    AND NEW.valid_from IS NOT DISTINCT FROM OLD.valid_from AND NEW.valid_to IS NOT DISTINCT FROM OLD.valid_to
    AND NEW.superseded_by IS NOT DISTINCT FROM OLD.superseded_by AND NEW.overrides IS NOT DISTINCT FROM OLD.overrides AND NEW.bytes = OLD.bytes
    AND (
        (OLD.status = 'proposed' AND NEW.status <> 'proposed' AND OLD.reviewed_at IS NULL
         AND NEW.reviewed_at IS NOT NULL AND NEW.reviewed_by IS NOT NULL
         AND NEW.body = OLD.body AND NEW.title = OLD.title AND NEW.excerpt = OLD.excerpt
         AND NEW.redacted_at IS NOT DISTINCT FROM OLD.redacted_at AND NEW.redacted_by IS NOT DISTINCT FROM OLD.redacted_by
         AND NEW.redaction_reason IS NOT DISTINCT FROM OLD.redaction_reason AND NEW.redacted_sha256 IS NOT DISTINCT FROM OLD.redacted_sha256)
        OR
        (OLD.redacted_at IS NULL AND NEW.redacted_at IS NOT NULL AND NEW.redacted_by IS NOT NULL
         AND NEW.redacted_sha256 IS NOT NULL AND NEW.body = '' AND NEW.title = '' AND NEW.excerpt = ''
         AND NEW.status = OLD.status AND NEW.reviewed_at IS NOT DISTINCT FROM OLD.reviewed_at
         AND NEW.reviewed_by IS NOT DISTINCT FROM OLD.reviewed_by AND NEW.review_note IS NOT DISTINCT FROM OLD.review_note)
    )
)
REFUSE 'knowledge revisions are append-only: only a review or a redaction changes one';

-- Revisions go only with their workspace, once it is archived (workspace delete).
CREATE TRIGGER kb_revisions_kept BEFORE DELETE ON kb_revisions
WHEN (SELECT archived_at FROM workspaces WHERE id = OLD.workspace_id) IS NULL
REFUSE 'knowledge revisions are kept: they go only with their archived workspace';

-- "This document is wrong": open until resolved, then closed once.
CREATE TABLE kb_disputes (
    id           {id},
    document_id  {int} NOT NULL REFERENCES kb_documents(id) ON DELETE CASCADE,
    workspace_id {int} NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    revision     {int} NOT NULL,
    opened_by    TEXT NOT NULL,
    reason       TEXT NOT NULL,
    sources      TEXT NOT NULL DEFAULT '[]',
    opened_at    TEXT NOT NULL,
    outcome      TEXT CHECK (outcome IN ('upheld', 'dismissed')),
    resolved_by  TEXT,
    resolved_at  TEXT,
    note         TEXT
);
CREATE INDEX kb_disputes_document ON kb_disputes(document_id, id);

CREATE TRIGGER kb_disputes_closed_once BEFORE UPDATE ON kb_disputes
WHEN NOT (
    OLD.outcome IS NULL AND NEW.outcome IS NOT NULL AND NEW.resolved_by IS NOT NULL
    AND NEW.id = OLD.id AND NEW.document_id = OLD.document_id AND NEW.revision = OLD.revision
    AND NEW.opened_by = OLD.opened_by AND NEW.reason = OLD.reason AND NEW.sources = OLD.sources
    AND NEW.opened_at = OLD.opened_at
)
REFUSE 'a dispute is resolved once and otherwise never changes';

-- What the index holds: exactly the shown revision of every live document.
CREATE VIEW kb_current AS
    SELECT r.id AS id, d.path AS path, r.title AS title, r.body AS body
    FROM kb_documents d JOIN kb_revisions r ON r.id = d.current_id
    WHERE d.state = 'live';

-- [sqlite]
-- Kept by the store; ``INSERT INTO kb_fts(kb_fts) VALUES ('rebuild')`` recomputes it
-- from kb_current.
CREATE VIRTUAL TABLE kb_fts USING fts5(
    path, title, body, content = 'kb_current', content_rowid = 'id', tokenize = 'unicode61'
);
-- ORDER BY rank: BM25 with the path and the title weighing more than the body. The index
-- sorts by it itself, so a search joins only the rows it returns.
INSERT INTO kb_fts (kb_fts, rank) VALUES ('rank', 'bm25(5.0, 3.0, 1.0)');
-- [postgresql]
-- kb_search: one row per live document, keyed by the revision it shows (kb_fts's rowid),
-- its words weighted A (path), B (title), C (body), kept equal to kb_current by triggers,
-- so the store writes nothing for it (docs/postgresql.md).
CREATE FUNCTION kb_search_vector(path TEXT, title TEXT, body TEXT) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT setweight(board_words(path), 'A') || setweight(board_words(title), 'B')
        || setweight(board_words(body), 'C')
$$;

CREATE TABLE kb_search (
    revision_id   BIGINT PRIMARY KEY REFERENCES kb_revisions(id) ON DELETE CASCADE,
    document_id   BIGINT NOT NULL UNIQUE REFERENCES kb_documents(id) ON DELETE CASCADE,
    search_vector tsvector NOT NULL
);
CREATE INDEX kb_search_vector ON kb_search USING gin (search_vector);

-- A head that moves (or a new document that shows something) moves its index row.
CREATE FUNCTION kb_search_follow_head() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.current_id IS NOT DISTINCT FROM OLD.current_id
       AND NEW.state = OLD.state AND NEW.path = OLD.path THEN
        RETURN NULL;
    END IF;
    DELETE FROM kb_search WHERE document_id = NEW.id;
    IF NEW.state = 'live' THEN
        INSERT INTO kb_search (revision_id, document_id, search_vector)
            SELECT r.id, NEW.id, kb_search_vector(NEW.path, r.title, r.body)
            FROM kb_revisions r WHERE r.id = NEW.current_id;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER kb_search_follow_head AFTER INSERT OR UPDATE OF current_id, state, path ON kb_documents
    FOR EACH ROW EXECUTE FUNCTION kb_search_follow_head();

-- A redaction empties the shown revision's title and body: so does its index row.
CREATE FUNCTION kb_search_follow_revision() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE kb_search s SET search_vector = kb_search_vector(d.path, NEW.title, NEW.body)
        FROM kb_documents d WHERE s.revision_id = NEW.id AND d.id = s.document_id;
    RETURN NULL;
END $$;
CREATE TRIGGER kb_search_follow_revision AFTER UPDATE OF title, body ON kb_revisions
    FOR EACH ROW WHEN (NEW.title <> OLD.title OR NEW.body <> OLD.body)
    EXECUTE FUNCTION kb_search_follow_revision();
-- [both]
