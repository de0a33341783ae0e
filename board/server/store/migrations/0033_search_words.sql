-- PostgreSQL's search reads a text's words as SQLite's does (unicode61): split at every
-- character that is not a letter or a digit, case folded for every script, Latin accents
-- taken off. It split at ASCII punctuation only, so `fix—a`, `“quoted”`, `party🎉` or a
-- no-break space made one word of their neighbours, and `École` was not `école` under a C
-- character type. Letters and digits are ICU's, whatever the database's character type;
-- store/search.py reads a search's words the same way (`index_words`). ASCII text keeps
-- the faster path: its letters are the same under every locale, and to_tsvector folds its
-- case. Every message's search vector is computed again (a rewrite of the table) and
-- every live document's index row. SQLite's index is unchanged.
-- [postgresql]
CREATE OR REPLACE FUNCTION board_words(text TEXT) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_tsvector('simple', CASE WHEN octet_length(text) = char_length(text)
        THEN regexp_replace(text, '[^[:alnum:] ]+', ' ', 'g')
        ELSE regexp_replace(
            regexp_replace(normalize(lower(text COLLATE "und-x-icu"), NFD), '[\u0300-\u036f]+', '', 'g'),
            '[^[:alnum:] ]+', ' ', 'g')
    END)
$$;
ALTER TABLE messages DROP COLUMN search_vector;
ALTER TABLE messages ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (board_words(body)) STORED;
CREATE INDEX messages_search ON messages USING gin (search_vector);
UPDATE kb_search s SET search_vector = kb_search_vector(d.path, r.title, r.body)
    FROM kb_documents d JOIN kb_revisions r ON r.id = d.current_id
    WHERE s.document_id = d.id;
-- [both]
