"""The price table behind a cost estimate: what a wake cost when its harness reported no cost.

Claude Code and OpenCode report each run's cost; Codex and Gemini CLI report tokens
only, and Copilot neither. A wake with tokens and no cost is priced here, at the
published list price (USD per million tokens) of the model each harness runs by
default, as written below; it is shown as an estimate wherever it appears. A
harness not in the table, or a wake with no tokens, has no estimate: the cost page
counts such wakes as unpriced. Edit the table when a price or a default model
changes; nothing else holds a price.
"""

from __future__ import annotations

from dataclasses import dataclass

PER = 1_000_000  # the prices are per million tokens


@dataclass(frozen=True)
class Price:
    model: str  # whose list price this is
    input: float
    output: float
    cache_read: float
    cache_write: float

    def estimate(self, input_tokens: int, output_tokens: int, cache_read: int, cache_write: int) -> float:
        """USD for these tokens. ``input_tokens`` counts the cached ones too (as a wake record
        does, whatever its harness's own fields), so those are priced at their cache rates and
        only the rest at the input rate."""
        uncached = max(0, input_tokens - cache_read - cache_write)
        return (
            uncached * self.input
            + output_tokens * self.output
            + cache_read * self.cache_read
            + cache_write * self.cache_write
        ) / PER


PRICES: dict[str, Price] = {
    "claude": Price("claude-sonnet-4.5", input=3.00, output=15.00, cache_read=0.30, cache_write=3.75),
    "codex": Price("gpt-5-codex", input=1.25, output=10.00, cache_read=0.125, cache_write=1.25),
    "gemini": Price("gemini-2.5-pro", input=1.25, output=10.00, cache_read=0.125, cache_write=1.25),
}


def price_of(harness: str) -> Price | None:
    return PRICES.get(harness)
