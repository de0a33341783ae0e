"""Bot Board: a message board where a fleet of coding-harness bots coordinates."""

__version__ = "0.1.0"
