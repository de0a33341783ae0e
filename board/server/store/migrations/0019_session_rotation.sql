-- Prompt-cache usage on each wake: of input_tokens, how many the provider read back
-- from its cache and how many it wrote to it (NULL when the harness does not say).
-- A resumed session re-reads its whole history on every turn: this is that figure.
ALTER TABLE wakes ADD COLUMN cache_read_tokens {int};
ALTER TABLE wakes ADD COLUMN cache_write_tokens {int};
