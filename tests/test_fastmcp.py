"""envglot.fastmcp.EnvelopeMiddleware and @emits with a real FastMCP 4.x server, proxy and client (in memory)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

fastmcp = pytest.importorskip("fastmcp")
jsonschema = pytest.importorskip("jsonschema")

from fastmcp.server import create_proxy  # noqa: E402
from mcp_types import ImageContent, TextContent  # noqa: E402
from pydantic import BaseModel  # noqa: E402

import envglot  # noqa: E402
from envglot import Result  # noqa: E402
from envglot.fastmcp import EnvelopeMiddleware  # noqa: E402
from envglot.mcp import emits, unwrap, unwrap_envelope  # noqa: E402
from envglot.proxy import META_KEY  # noqa: E402

PNG = "iVBORw0KGgo="


class City(BaseModel):
    name: str


class Weather(BaseModel):
    city: City
    celsius: float


def _server() -> Any:
    mcp = fastmcp.FastMCP("fixture")

    @mcp.tool
    def weather(city: str) -> Weather:
        """A typed tool: its outputSchema has $defs."""
        return Weather(city=City(name=city), celsius=3.5)

    @mcp.tool
    def chart() -> list[Any]:
        """Text and an image."""
        return [TextContent(type="text", text="a chart"), ImageContent(type="image", data=PNG, mimeType="image/png")]

    @mcp.tool
    def add(a: int, b: int) -> int:
        """Called with a wrong-type argument below."""
        return a + b

    @mcp.tool
    def errorcode_failure() -> dict[str, Any]:
        """An errorcode failure sent as a success."""
        return {
            "success": False,
            "data": None,
            "error": {"code": "x_rate_limited", "message": "slow down", "retryable": True},
        }

    @mcp.tool
    def explode() -> str:
        """Raises."""
        raise KeyError("gone")

    @mcp.tool
    @emits("result")
    def found(query: str) -> Result[list[str]]:
        """@emits under FastMCP's @mcp.tool."""
        return Result.ok([query])

    return mcp


async def _session(server: Any) -> dict[str, Any]:
    async with fastmcp.Client(server) as client:
        tools = {t.name: t for t in await client.list_tools()}
        calls = {
            "weather": await client.call_tool_mcp("weather", {"city": "Oslo"}),
            "chart": await client.call_tool_mcp("chart", {}),
            "add": await client.call_tool_mcp("add", {"a": "three", "b": 1}),
            "errorcode_failure": await client.call_tool_mcp("errorcode_failure", {}),
            "explode": await client.call_tool_mcp("explode", {}),
        }
    return {"tools": tools, "calls": calls}


def _check(got: dict[str, Any], prefix: str = "") -> None:
    tools, calls = got["tools"], got["calls"]
    schema = tools[f"{prefix}weather"].output_schema
    jsonschema.Draft202012Validator.check_schema(schema)
    # FastMCP dereferences what it lists: the hoisted $defs arrive inlined
    data = schema["then"]["properties"]["data"]
    assert data["properties"]["city"]["properties"]["name"]["type"] == "string" and data["required"] == [
        "city",
        "celsius",
    ]
    for name, result in calls.items():
        doc = result.structured_content
        assert envglot.detect(doc) == "response-v2", name
        assert json.loads(result.content[0].text) == doc
        tool_schema = tools[f"{prefix}{name}"].output_schema
        assert not list(jsonschema.Draft202012Validator(tool_schema).iter_errors(doc)), name
    assert calls["weather"].is_error is False
    assert calls["weather"].structured_content["data"] == {"city": {"name": "Oslo"}, "celsius": 3.5}
    chart = calls["chart"]
    assert [b.type for b in chart.content] == ["text", "image"] and chart.content[1].data == PNG
    assert json.loads(unwrap(chart))["data"]["content"] == [{"type": "image", "mimeType": "image/png"}]
    assert calls["add"].is_error is True
    assert unwrap_envelope(calls["add"]).problems[0].category == "invalid_argument"
    assert calls["errorcode_failure"].is_error is True
    assert calls["errorcode_failure"].structured_content["data"]["error_type"] == "rate_limit"
    assert calls["explode"].is_error is True
    assert unwrap_envelope(calls["explode"]).problems[0].category == "internal"


def test_middleware_on_a_fastmcp_server() -> None:
    server = _server()
    server.add_middleware(EnvelopeMiddleware(to="response-v2"))
    got = asyncio.run(_session(server))
    _check(got)
    assert got["calls"]["weather"].meta is None or META_KEY not in got["calls"]["weather"].meta  # not without annotate


def test_middleware_on_a_fastmcp_proxy_with_annotate() -> None:
    proxy = create_proxy(_server(), name="proxy")
    proxy.add_middleware(EnvelopeMiddleware(to="response-v2", annotate=True))
    got = asyncio.run(_session(proxy))
    _check(got)
    kinds = [d["kind"] for d in got["calls"]["errorcode_failure"].meta[META_KEY]]
    assert "status_mismatch" in kinds  # errorcode's failure travelled with isError false
    assert [d["kind"] for d in got["calls"]["chart"].meta[META_KEY]] == ["synthesized", "synthesized"]


def test_emits_under_fastmcp_tool_decorator() -> None:
    async def run() -> Any:
        async with fastmcp.Client(_server()) as client:
            tools = {t.name: t for t in await client.list_tools()}
            return tools["found"], await client.call_tool_mcp("found", {"query": "q"})

    tool, result = asyncio.run(run())
    assert tool.output_schema["then"]["properties"]["value"] == {"type": "array", "items": {"type": "string"}}
    assert result.is_error is False and result.structured_content == {"success": True, "value": ["q"]}


def test_emits_above_fastmcp_tool_decorator_is_a_clear_error() -> None:
    mcp = fastmcp.FastMCP("wrong")
    with pytest.raises(envglot.EnvglotError, match="below the tool decorator"):

        @emits("result")
        @mcp.tool
        def search(query: str) -> dict[str, Any]:
            return {}
