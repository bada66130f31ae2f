"""docs/proxy.md's client configuration snippets and --annotate example, run as written."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from .conftest import ENVGLOT, output_schema_of, structured

pytest.importorskip("mcp.server.mcpserver", reason="examples/mcp/weather_server.py needs mcp 2.x")
jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "proxy.md").read_text()


def _json_block(after: str) -> Any:
    """The first ```json block after the heading or sentence ``after``."""
    m = re.search(r"^```json\n(.*?)^```", PAGE[PAGE.index(after) :], re.M | re.S)
    assert m is not None
    return json.loads(m.group(1))


def test_the_vs_code_snippet_runs_as_written() -> None:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    entry = _json_block("### VS Code")["servers"]["weather-v2"]
    assert entry["type"] == "stdio" and entry["command"] == "envglot"
    env = {
        **os.environ,
        "PATH": f"{ENVGLOT.parent}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    params = StdioServerParameters(
        command=entry["command"], args=entry["args"], cwd=entry["cwd"].replace("${workspaceFolder}", str(ROOT)), env=env
    )

    async def run() -> None:
        with anyio.fail_after(30):
            async with stdio_client(params) as (r, w), ClientSession(r, w) as session:
                await session.initialize()
                tools = {t.name: t for t in (await session.list_tools()).tools}
                schema = output_schema_of(tools["wx_forecast"])
                jsonschema.Draft202012Validator.check_schema(schema)
                ok = await session.call_tool("wx_forecast", {"city": "Oslo"})
                assert structured(ok)["data"] == {"city": {"name": "Oslo", "country": "NO"}, "celsius": 3.5}
                assert not list(jsonschema.Draft202012Validator(schema).iter_errors(structured(ok)))
                failed = await session.call_tool("wx_forecast", {"city": ""})
                assert structured(failed)["data"]["error_type"] == "internal"  # the tool raised
                assert not list(jsonschema.Draft202012Validator(schema).iter_errors(structured(failed)))

    anyio.run(run)
    claude = _json_block("### Claude Desktop")["mcpServers"]["weather-v2"]
    assert claude["command"] == entry["command"]
    assert claude["args"][:-1] == entry["args"][:-1] and claude["args"][-1].endswith("/" + entry["args"][-1])


def test_the_annotate_example_is_what_the_proxy_answers() -> None:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    shown = _json_block("result of `chart`")
    m = re.search(r"`(envglot proxy -t response-v2 --annotate -- python examples/mcp/weather_server.py)`", PAGE)
    assert m is not None
    args = m.group(1).split()[1:]
    args[args.index("python")] = sys.executable
    params = StdioServerParameters(command=str(ENVGLOT), args=args, cwd=str(ROOT))

    async def run() -> dict[str, Any]:
        with anyio.fail_after(30):
            async with stdio_client(params) as (r, w), ClientSession(r, w) as session:
                await session.initialize()
                result = await session.call_tool("chart", {"city": "Oslo"})
                out: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
                return out

    assert anyio.run(run) == shown
