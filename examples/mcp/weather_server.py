"""A small MCP server to put behind `envglot proxy` (docs/proxy.md, "Client configuration").

It answers without an envelope, as most servers do: a typed tool (its own outputSchema,
with `$defs`), a tool returning text and an image, and a tool that raises.

    python examples/mcp/weather_server.py     # stdio (mcp 2.x)
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ImageContent, TextContent
from pydantic import BaseModel

server = MCPServer("weather")
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


class City(BaseModel):
    name: str
    country: str


class Weather(BaseModel):
    city: City
    celsius: float


@server.tool()
def forecast(city: str, country: str = "NO") -> Weather:
    """Tomorrow's temperature in a city."""
    if not city:
        raise ValueError("city is empty")
    return Weather(city=City(name=city, country=country), celsius=3.5)


@server.tool()
def chart(city: str) -> CallToolResult:
    """A temperature chart: a caption and a PNG."""
    return CallToolResult(
        content=[
            TextContent(type="text", text=f"temperatures in {city}"),
            ImageContent(type="image", data=PIXEL, mime_type="image/png"),
        ]
    )


if __name__ == "__main__":
    server.run()
