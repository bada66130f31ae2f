"""The proxy over Streamable HTTP on loopback: an HTTP upstream and a stdio upstream behind it."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

import envglot
from envglot.mcp import output_schema

from .conftest import ENVGLOT, EXPECTED_ERROR, error_flag, free_port, http_session, running, structured, upstream_cmd

jsonschema = pytest.importorskip("jsonschema")


def test_streamable_http_both_ways(tmp_path: Path) -> None:
    up_port, proxy_port = free_port(), free_port()
    cmd = upstream_cmd()
    config = tmp_path / "proxy.toml"
    config.write_text(
        'target = "response-v2"\ntimeout = 15\n'
        f'[[upstream]]\nprefix = "web"\nurl = "http://127.0.0.1:{up_port}/mcp"\n'
        f'[[upstream]]\nprefix = "local"\ncommand = {cmd[0]!r}\nargs = [{cmd[1]!r}]\n'
    )
    schema = output_schema("response-v2")

    async def run() -> None:
        with anyio.fail_after(25):
            async with http_session(f"http://127.0.0.1:{proxy_port}/mcp") as s:
                names = {t.name for t in (await s.list_tools()).tools}
                assert {f"{p}_{t}" for p in ("web", "local") for t in EXPECTED_ERROR} <= names
                for name, is_error in EXPECTED_ERROR.items():
                    for prefix in ("web", "local"):
                        result = await s.call_tool(f"{prefix}_{name}", {})
                        jsonschema.validate(structured(result), schema)
                        assert envglot.detect(structured(result)) == "response-v2"
                        assert error_flag(result) is is_error
                crashed = await s.call_tool("local_crash", {})
                assert error_flag(crashed) is True
                assert structured(crashed)["data"]["error_type"] == "unavailable"
                assert error_flag(await s.call_tool("web_graph_ok", {})) is False

    with (
        running([*cmd, "http", str(up_port)], up_port),
        running([str(ENVGLOT), "proxy", "--upstreams", str(config), "--listen", f"127.0.0.1:{proxy_port}"], proxy_port),
    ):
        anyio.run(run)
