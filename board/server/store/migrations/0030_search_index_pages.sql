-- The full-text index's pages are 1,000 bytes instead of FTS5's 4,050, and the index is
-- rebuilt with them. A search walks a word's matches newest first, and skips the matches of
-- other workspaces (and those after ``before``) by the index that FTS5 keeps of a word's
-- pages only where the word spans four pages of a segment or more; with smaller pages more
-- words have one, so a word common on the whole board costs a search in a quiet workspace
-- less. The rebuild took 0.7 s at 10^5 messages (once, at the upgrade). PostgreSQL's GIN index has no
-- such setting.
-- [sqlite]
INSERT INTO messages_fts(messages_fts, rank) VALUES ('pgsz', 1000);
INSERT INTO messages_fts(messages_fts) VALUES ('rebuild');
-- [both]
