"""A real upstream MCP server for the proxy tests (SDK MCPServer, or FastMCP on mcp 1.x).

Its tools answer with the repository's example envelopes of three dialects (successes
and failures), plain text, and one tool kills the process mid-call; others return text and
an image, a typed payload (a pydantic model whose schema has ``$defs``), an array as
structured content (MCP 2026-07-28), or take integer arguments (called with a string).

    python upstream_server.py            # stdio
    python upstream_server.py http PORT  # Streamable HTTP on 127.0.0.1:PORT/mcp
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import mcp.types as types
from pydantic import BaseModel

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

try:
    from mcp.server.mcpserver import MCPServer as _Server
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as _Server  # type: ignore[no-redef]

server: Any = _Server("fixture-upstream")


def _envelope(name: str, *, is_error: bool, structured: bool = True) -> types.CallToolResult:
    doc = json.loads((EXAMPLES / name).read_text())
    wire: dict[str, Any] = {"content": [{"type": "text", "text": json.dumps(doc)}], "isError": is_error}
    if structured:
        wire["structuredContent"] = doc
    return types.CallToolResult.model_validate(wire)


def _text(text: str, *, is_error: bool) -> types.CallToolResult:
    return types.CallToolResult.model_validate({"content": [{"type": "text", "text": text}], "isError": is_error})


@server.tool()
def dotbot_ok() -> types.CallToolResult:
    """A dotbot success."""
    return _envelope("dotbot/structure-ok.json", is_error=False)


@server.tool()
def dotbot_error() -> types.CallToolResult:
    """A dotbot failure (project not found)."""
    return _envelope("dotbot/register-error.json", is_error=True)


@server.tool()
def errorcode_ok(query: str = "mcp") -> types.CallToolResult:
    """An errorcode success, in the text block only."""
    return _envelope("errorcode/search-ok.json", is_error=False, structured=False)


@server.tool()
def errorcode_error() -> types.CallToolResult:
    """An errorcode failure (rate limited)."""
    return _envelope("errorcode/rate-limited.json", is_error=True)


@server.tool()
def graph_ok() -> types.CallToolResult:
    """A code-graph success."""
    return _envelope("code-graph/digest-ok.json", is_error=False)


@server.tool()
def graph_error() -> types.CallToolResult:
    """A code-graph failure (invalid input)."""
    return _envelope("code-graph/issues-error.json", is_error=True)


@server.tool()
def plain(text: str = "hello") -> types.CallToolResult:
    """No envelope: plain text."""
    return _text(text, is_error=False)


@server.tool()
def plain_error(text: str = "disk on fire") -> types.CallToolResult:
    """No envelope: plain text flagged isError."""
    return _text(text, is_error=True)


@server.tool()
async def slow(seconds: float = 5.0) -> types.CallToolResult:
    """Answers after ``seconds``."""
    await asyncio.sleep(seconds)
    return _text("late", is_error=False)


@server.tool()
def crash() -> types.CallToolResult:
    """Kills this server process in the middle of the call."""
    sys.stderr.flush()
    os._exit(3)


class City(BaseModel):
    name: str


class Weather(BaseModel):
    """A typed payload: its JSON Schema has ``$defs`` (City)."""

    city: City
    celsius: float


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


@server.tool()
def weather(city: str = "Oslo") -> Weather:
    """A typed tool (its own outputSchema)."""
    return Weather(city=City(name=city), celsius=3.5)


@server.tool()
def chart() -> types.CallToolResult:
    """Text and an image."""
    return types.CallToolResult.model_validate(
        {
            "content": [{"type": "text", "text": "a chart"}, {"type": "image", "data": PNG, "mimeType": "image/png"}],
            "isError": False,
        }
    )


@server.tool()
def numbers() -> types.CallToolResult:
    """An array as structured content (any JSON value since MCP 2026-07-28)."""
    return types.CallToolResult.model_validate(
        {"content": [{"type": "text", "text": "[1, 2, 3]"}], "structuredContent": [1, 2, 3], "isError": False}
    )


@server.tool()
def add(a: int, b: int) -> int:
    """Called with a wrong-type argument by the tests."""
    return a + b


try:
    from mcp.server.mcpserver import Context
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context  # type: ignore[no-redef]


@server.tool()
async def steps(ctx: Context) -> str:  # type: ignore[type-arg]
    """Reports progress twice and logs a line while it works."""
    await ctx.report_progress(1, 2, "half way")
    await ctx.info("working on it")
    await ctx.report_progress(2, 2, "done")
    return "finished"


@server.prompt()
def review(path: str) -> str:
    """A prompt, forwarded by the proxy under its prefix."""
    return f"Review {path} for envelope drift."


@server.resource("fixture://readme")
def readme() -> str:
    """A resource, forwarded by the proxy unchanged."""
    return "fixture upstream for envglot proxy tests"


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "http":
        import uvicorn

        app = server.streamable_http_app()
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        server.run()
