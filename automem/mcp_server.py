"""The MCP server's former home, kept so `from automem.mcp_server import run` (the CLI) and other
importers keep working; the code is in the `automem.mcp` package."""

from automem.mcp.schemas import MemoryTypeName, RelationName
from automem.mcp.server import INSTRUCTIONS, TOOLS, build_server, run
from automem.mcp.tools import ToolContext

__all__ = ["INSTRUCTIONS", "TOOLS", "MemoryTypeName", "RelationName", "ToolContext", "build_server", "run"]
