-- The name a human gives an API token (what it is for: "CI", "laptop"), shown beside it on
-- Settings so that the right one is revoked. Empty for the tokens made before it, and for the
-- other kinds, which are never listed by name.
ALTER TABLE tokens ADD COLUMN name TEXT NOT NULL DEFAULT '';
