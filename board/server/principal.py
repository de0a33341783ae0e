"""Who is calling: resolved from the credential, never from the request body."""

from __future__ import annotations

from dataclasses import dataclass, field

ADMIN_WORKSPACE = "admin"


@dataclass(frozen=True)
class Principal:
    """An authenticated caller. A bot's workspace is its token's workspace.

    A keeper (a machine's daemon, token ``bk_``) is no agent: its ``agent_id`` is
    its machine's id negated, so what is keyed by caller (rate limits, retried
    requests) never mixes a keeper with an agent, and it has no workspace.

    The routines runner (token ``br_``) holds the board's system agent, but it is
    not the board: it reads routines and steps their runs, and nothing else.
    """

    agent_id: int
    handle: str
    kind: str  # "human" | "bot" | "system" | "keeper"
    workspace_id: int | None = None
    workspace: str | None = None
    #: The channels (workspace id, slug) a bot's daemon watches, read with its token; None
    #: where the caller was not found by token (the loop guard then asks the database). Not
    #: part of who the caller is: a principal whose watches changed is the same caller.
    watches: frozenset[tuple[int, str]] | None = field(default=None, compare=False)

    @property
    def is_human(self) -> bool:
        return self.kind == "human"

    @property
    def is_bot(self) -> bool:
        return self.kind == "bot"

    @property
    def is_keeper(self) -> bool:
        return self.kind == "keeper"

    @property
    def is_runner(self) -> bool:
        """The routines runner (token ``br_``), holding the board's own system agent."""
        return self.kind == "system"

    @property
    def machine_id(self) -> int | None:
        """The keeper's machine; None for any other caller."""
        return -self.agent_id if self.is_keeper else None

    @property
    def is_admin_bot(self) -> bool:
        return self.kind == "bot" and self.workspace == ADMIN_WORKSPACE

    @property
    def sees_all_workspaces(self) -> bool:
        """Humans and admin bots read every workspace; other bots only their own."""
        return self.is_human or self.is_admin_bot

    @property
    def role(self) -> str:
        if self.is_admin_bot:
            return "admin_bot"
        return "runner" if self.is_runner else self.kind
