"""The board as an MCP server: one small tool set, served on stdio and at ``/mcp``."""
