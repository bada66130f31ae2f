"""The proxy between the fixture upstream and the SDK's client at both protocol revisions the
installed SDK speaks (2025-11-25 by the initialize handshake, 2026-07-28 by server/discover),
over stdio and Streamable HTTP: content blocks, typed payload schemas, array structured content
and argument validation errors."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import envglot
from envglot.mcp import unwrap, unwrap_envelope

from .conftest import ENVGLOT, attr, error_flag, free_port, output_schema_of, running, structured, upstream_cmd

jsonschema = pytest.importorskip("jsonschema")
try:
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
except ImportError:  # an SDK line that speaks no 2026 revision
    pytest.skip("needs an mcp SDK that speaks MCP 2026-07-28 (mcp>=2.3)", allow_module_level=True)

REVISIONS = [HANDSHAKE_PROTOCOL_VERSIONS[-1], MODERN_PROTOCOL_VERSIONS[-1]]
"""The newest handshake revision (2025-11-25) and the newest modern one (2026-07-28)."""
LIMIT = 40


async def _open(session: Any, revision: str) -> None:
    if revision in MODERN_PROTOCOL_VERSIONS:
        await session.discover()
    else:
        await session.initialize()
    assert session.protocol_version == revision


async def _exercise(session: Any, revision: str, logs: list[Any]) -> None:
    await _open(session, revision)
    tools = {t.name: t for t in (await session.list_tools()).tools}
    schema = output_schema_of(tools["fx_weather"])
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["then"]["properties"]["data"] == {"$ref": "#/$defs/Weather"}  # the upstream's own type
    assert {"Weather", "City"} <= set(schema["$defs"])  # hoisted: self-contained

    weather = await session.call_tool("fx_weather", {"city": "Bergen"})
    assert error_flag(weather) is False
    assert structured(weather)["data"] == {"city": {"name": "Bergen"}, "celsius": 3.5}
    assert not list(jsonschema.Draft202012Validator(schema).iter_errors(structured(weather)))

    chart = await session.call_tool("fx_chart", {})
    assert [b.type for b in chart.content] == ["text", "image"]  # the image passes through unchanged
    assert attr(chart.content[1], "mime_type", "mimeType") == "image/png"
    assert json.loads(chart.content[0].text) == structured(chart)
    assert json.loads(unwrap(chart))["data"] == {
        "text": "a chart",
        "content": [{"type": "image", "mimeType": "image/png"}],
    }

    numbers = await session.call_tool("fx_numbers", {})
    assert isinstance(structured(numbers), dict)  # an envelope: an object whatever the client's revision
    assert structured(numbers)["data"] == {"value": [1, 2, 3]}  # the upstream's array is the payload

    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    steps = await session.call_tool("fx_steps", {}, progress_callback=on_progress)
    assert error_flag(steps) is False
    assert progress == [(1, 2, "half way"), (2, 2, "done")]  # the upstream's progress, forwarded
    assert logs == ["working on it"]  # and its log line

    wrong = await session.call_tool("fx_add", {"a": "three", "b": 1})
    assert error_flag(wrong) is True
    assert envglot.detect(structured(wrong)) == "response-v2"
    assert unwrap_envelope(wrong).problems[0].category == "invalid_argument"
    assert structured(wrong)["data"]["error_type"] == "validation"


@contextlib.asynccontextmanager
async def _client(read: Any, write: Any) -> AsyncIterator[tuple[Any, list[Any]]]:
    """A ClientSession that collects the log messages it receives (opted in at 2026-07-28)."""
    from mcp import ClientSession

    logs: list[Any] = []

    async def on_log(params: Any) -> None:
        logs.append(params.data)

    async with ClientSession(read, write, logging_callback=on_log, log_level="debug") as session:
        yield session, logs


def _proxy_args(*extra: str) -> list[str]:
    return ["proxy", "-t", "response-v2", "--prefix", "fx", *extra, "--", *upstream_cmd()]


@pytest.mark.parametrize("revision", REVISIONS)
def test_stdio_at_both_revisions(revision: str, tmp_path: Path) -> None:
    from mcp import StdioServerParameters, stdio_client

    async def run() -> None:
        params = StdioServerParameters(command=str(ENVGLOT), args=_proxy_args())
        with anyio.fail_after(LIMIT), (tmp_path / "err").open("a") as errlog:
            async with stdio_client(params, errlog=errlog) as (r, w), _client(r, w) as (session, logs):
                await _exercise(session, revision, logs)

    anyio.run(run)
    log = (tmp_path / "err").read_text().splitlines()
    assert log[0].startswith("envglot proxy: serving stdio as response-v2; upstreams: fx=")
    assert f"envglot proxy: upstream fx: connected (MCP {MODERN_PROTOCOL_VERSIONS[-1]})" in log  # the proxy's own side


def test_http_at_both_revisions() -> None:
    from envglot.proxy.sdk import http_client

    port = free_port()

    async def run() -> None:
        with anyio.fail_after(LIMIT):
            for revision in REVISIONS:
                async with http_client(f"http://127.0.0.1:{port}/mcp") as (r, w), _client(r, w) as (session, logs):
                    await _exercise(session, revision, logs)

    with running([str(ENVGLOT), *_proxy_args("--listen", f"127.0.0.1:{port}")], port) as proc:
        anyio.run(run)
        assert proc.stderr is not None
        first = proc.stderr.readline().decode()
    assert first.startswith(f"envglot proxy: serving http://127.0.0.1:{port}/mcp as response-v2; upstreams: fx=")
