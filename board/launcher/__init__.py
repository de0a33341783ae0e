"""bin/bot: the wake loop, prompt handling and harness adapters."""
