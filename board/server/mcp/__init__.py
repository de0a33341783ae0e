"""The MCP transport of the board: ``/mcp``, streamable HTTP, calling the route table's handlers."""
