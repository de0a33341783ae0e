-- A message's workspace is indexed beside its words, so that a search in one workspace
-- walks only that workspace's matches, newest first, however common the word is on the
-- whole board (store/search.py). The column holds 'w' and the workspace id, one word.
-- PostgreSQL reads the same search from messages_search and messages_workspace as they are.
-- [sqlite]
DROP TRIGGER messages_fts_insert;
DROP TRIGGER messages_fts_delete;
DROP TABLE messages_fts;
CREATE VIEW messages_fts_source AS SELECT id, body, 'w' || workspace_id AS ws FROM messages;
CREATE VIRTUAL TABLE messages_fts USING fts5(
    body, ws, content = 'messages_fts_source', content_rowid = 'id', tokenize = 'unicode61'
);
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, body, ws) VALUES (new.id, new.body, 'w' || new.workspace_id);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, body, ws)
        VALUES ('delete', old.id, old.body, 'w' || old.workspace_id);
END;
INSERT INTO messages_fts(messages_fts) VALUES ('rebuild');
-- [both]
