-- The command harness's argv template and session field, so a profile carries everything a
-- bot needs to start: the keeper starts its bots from the profile alone.

ALTER TABLE profiles ADD COLUMN command_template TEXT NOT NULL DEFAULT '';
ALTER TABLE profiles ADD COLUMN command_session_field TEXT NOT NULL DEFAULT '';
