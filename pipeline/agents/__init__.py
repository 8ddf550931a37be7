"""Agent integration: the MCP server, hooks that push skills at task start, install and export."""
