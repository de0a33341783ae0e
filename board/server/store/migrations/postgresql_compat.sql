-- SQLite's functions that the store's shared SQL calls, for PostgreSQL.
-- Not a migration: the store replaces these at every start, after migrating,
-- so a fix here reaches every database without a new schema version.

-- The ids of a JSON array held as text (wakes.trigger_ids), as SQLite's
-- json_each(...).value. Text that is not such an array yields no rows instead of
-- failing the query around it: a damaged row never wedges a list.
CREATE OR REPLACE FUNCTION json_each(doc text) RETURNS TABLE (value bigint)
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF jsonb_typeof(doc::jsonb) = 'array' THEN
        RETURN QUERY
            SELECT e::bigint FROM jsonb_array_elements_text(doc::jsonb) AS e
            WHERE e ~ '^-?[0-9]{1,18}$';
    END IF;
EXCEPTION WHEN others THEN
    RETURN;
END
$$;

-- A JSON column read back, or `empty` when it is not JSON (store/jsoncolumns.py
-- does the same on SQLite; the row is then shown as unreadable). The check is the
-- json type's, which reads the text as it is: jsonb would refuse an escaped NUL
-- (\u0000) that the board accepts and must give back.
CREATE OR REPLACE FUNCTION readable_json(tbl text, row_id bigint, col text, raw text, empty text)
RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    PERFORM raw::json;
    RETURN COALESCE(raw, empty);
EXCEPTION WHEN others THEN
    RAISE WARNING 'unreadable row: % %, column %', tbl, row_id, col;
    RETURN empty;
END
$$;
