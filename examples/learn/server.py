"""The pier server of docs/learn.md: a stdio MCP server whose tools answer in its own envelope.

    python3 examples/learn/server.py

Its answers are the samples beside it (examples/learn/samples/); tools/list publishes each
tool's outputSchema. Needs the mcp package (pip install 'envglot[mcp]').
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

import mcp.types as types
from pydantic import BaseModel

try:
    from mcp.server.mcpserver import MCPServer as _Server
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as _Server  # type: ignore[no-redef]

SAMPLES = Path(__file__).resolve().parent / "samples"
server: Any = _Server("pier")


class PierError(BaseModel):
    code: str
    message: str


class Pier(BaseModel):
    """The pier envelope: a version marker, the outcome, the tool, a request id, data or an error."""

    pier: Literal["2"]
    ok: bool
    tool: str
    request_id: str
    data: Any = None
    error: PierError | None = None


def _answer(name: str) -> types.CallToolResult:
    doc = json.loads((SAMPLES / f"{name}.json").read_text())
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(doc))],
        structuredContent=doc,
        isError=not doc["ok"],
    )


@server.tool()
def get_berth(berth: str) -> Annotated[types.CallToolResult, Pier]:
    """Look a berth up."""
    return _answer("berth-free" if berth == "B4" else "berth-unknown")


@server.tool()
def book_berth(berth: str) -> Annotated[types.CallToolResult, Pier]:
    """Book a berth."""
    return _answer("booked" if berth == "B5" else "taken")


if __name__ == "__main__":
    server.run()
