"""A stdio MCP server for test_learn.py: one tool that leaves a marker file when it is called.

    python marker_server.py MARKER

``tools/list`` publishes the tool's outputSchema; calling ``mark`` creates MARKER and answers
with a ferry failure (tests/learn/ferry), flagged isError.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import mcp.types as types
from pydantic import BaseModel

try:
    from mcp.server.mcpserver import MCPServer as _Server
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as _Server  # type: ignore[no-redef]

MARKER = Path(sys.argv[1])
ANSWER = {
    "ferry": "2",
    "ok": False,
    "op": "mark",
    "trace_id": "f-900",
    "error": {"code": "DOC_NOT_FOUND", "message": "nothing to mark", "retryable": False},
    "result": None,
    "warnings": [],
}
server: Any = _Server("marker")


class Ferry(BaseModel):
    ferry: int
    ok: bool
    op: str
    trace_id: str
    result: Any = None


@server.tool()
def mark() -> Annotated[types.CallToolResult, Ferry]:
    """Leaves the marker file, answers with a ferry failure."""
    MARKER.write_text("called")
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(ANSWER))], structuredContent=ANSWER, isError=True
    )


if __name__ == "__main__":
    server.run()
