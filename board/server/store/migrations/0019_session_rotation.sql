-- Prompt-cache usage on each wake: of input_tokens, how many the provider read back
-- from its cache and how many it wrote to it (NULL when the harness does not say).
-- A resumed session re-reads its whole history on every turn: this is that figure.
ALTER TABLE wakes ADD COLUMN cache_read_tokens {int};
ALTER TABLE wakes ADD COLUMN cache_write_tokens {int};

-- Session rotation: a profile may start its bots on a fresh harness session after
-- this many turns of one session, or once a turn of it has read this many tokens
-- (NULL: never). The wake of a rotated turn says why: 'turns' or 'tokens'.
ALTER TABLE profiles ADD COLUMN rotate_after_turns {int};
ALTER TABLE profiles ADD COLUMN rotate_after_tokens {int};
ALTER TABLE wakes ADD COLUMN rotated TEXT;
