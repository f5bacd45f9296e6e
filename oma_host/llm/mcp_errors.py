"""The one MCP error the loop must know without importing the MCP SDK."""

from __future__ import annotations


class McpFailure(Exception):
    """An MCP server could not start, or died: the run fails with
    ``errorInfo.kind: "mcp"``; the message names the server and ends with
    the tail of its stderr, secrets taken out."""
