-- PostgreSQL's search reads a text's words as SQLite's does (unicode61): split at every
-- character that is not a letter or a digit, case folded for every script, accents taken
-- off. It split at ASCII punctuation only, so `fix—a`, `“quoted”`, `party🎉` or a no-break
-- space made one word of their neighbours, and `École` was not `école` under a C character
-- type. Letters, digits and case are ICU's (Unicode's), whatever the database's character
-- type. A search splits its words in the same steps (`index_words` in store/search.py).
--
-- board_text is the text as the index reads it, before to_tsvector parses its words. ASCII
-- text keeps the cheaper path, its letters and case ASCII's under every locale (a Turkish
-- one's lower case of I is ı, the C collation's i). A final sigma is a sigma: lowercasing a
-- whole text decides it by the letters after it, which a search's word alone does not have.
--
-- Every message's search vector is computed again (a rewrite of the table, then the column's
-- statistics, which the dropped column took with it) and every live document's index row.
-- SQLite's index is unchanged.
-- [postgresql]
-- Text with a character past ASCII, as ICU reads it; it calls only pg_catalog's functions, which
-- pg_restore finds with no search path. PL/pgSQL, so that it stays a call: a SQL
-- function would be inlined into the plan of every insert, which PostgreSQL makes anew for
-- each one (25 µs of the server's time an insert, against 18 with the call; 10 before).
CREATE FUNCTION board_text_wide(text TEXT) RETURNS TEXT
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    RETURN regexp_replace(translate(regexp_replace(
        normalize(lower(text COLLATE "und-x-icu"), NFD), '[\u0300-\u036f]+', '', 'g'), 'ς', 'σ'),
        '[^[:alnum:] ]+', ' ', 'g');
END $$;
-- Bodies of SQL, not strings: each names what it calls as the function it is, not by a search
-- path, so pg_restore (which runs with none) can make the messages table that calls them.
CREATE FUNCTION board_text(text TEXT) RETURNS TEXT
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN octet_length(text) = char_length(text)
    THEN regexp_replace(lower(text COLLATE "C"), '[^a-z0-9 ]+', ' ', 'g')
    ELSE board_text_wide(text)
END;
CREATE OR REPLACE FUNCTION board_words(text TEXT) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN to_tsvector('simple', board_text(text));
ALTER TABLE messages DROP COLUMN search_vector;
ALTER TABLE messages ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (board_words(body)) STORED;
CREATE INDEX messages_search ON messages USING gin (search_vector);
-- The search column's statistics went with it: without them a rare word's search walks every
-- id instead of the index, until autovacuum comes. Not on a new board's empty table, whose
-- statistics would say it stays empty: the planner would scan it whole as it fills.
DO $$ BEGIN
    IF EXISTS (SELECT FROM messages) THEN
        ANALYZE messages (search_vector);
    END IF;
END $$;
UPDATE kb_search s SET search_vector = kb_search_vector(d.path, r.title, r.body)
    FROM kb_documents d JOIN kb_revisions r ON r.id = d.current_id
    WHERE s.document_id = d.id;
-- [both]
