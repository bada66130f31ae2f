"""The proxy in front of a hostile upstream (hostile_server.py), over stdio and Streamable HTTP.

Every answer the SDK would drop or choke on is answered at once as an ``internal``
failure; bad bytes are replaced and reported; a hung upstream is restarted; start-up
failures are ``unavailable``; an upstream's regexes never run; forged ``dev.envglot/*``
metadata never reaches the client.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import envglot
from envglot.proxy import META_KEY

from .conftest import ENVGLOT, HERE, error_flag, free_port, http_session, running, stdio_session, structured
from .hostile_server import REDOS

HOSTILE = HERE / "hostile_server.py"
TIMEOUT = 3.0
PROXY_ARGS = ["-t", "errorcode", "--annotate", "--timeout", f"{TIMEOUT:g}", "--max-result-bytes", "65536"]
LIMIT = 40  # seconds per test, processes included


def hostile_cmd(mode: str = "serve") -> list[str]:
    return [sys.executable, str(HOSTILE), mode]


def _problem(result: Any) -> envglot.Problem:
    assert error_flag(result) is True
    return envglot.read(structured(result), "errorcode").problems[0]


async def _timed(session: Any, name: str, args: dict[str, Any] | None = None) -> tuple[Any, float]:
    clock = time.monotonic()
    result = await session.call_tool(name, args or {})
    return result, time.monotonic() - clock


async def _hostile_calls(s: Any) -> None:
    """The same calls and expectations whatever the proxy's own transport."""
    listed = await s.list_tools()  # the upstream is up: every bound below is the call's own
    redos = next(t for t in listed.tools if t.name == "redos")
    published = redos.model_dump(by_alias=True)["outputSchema"]
    assert REDOS not in json.dumps(published)  # a client that checks results never runs the upstream's regex
    assert published["then"]["properties"]["data"]["properties"]["s"] == {"type": "string"}  # the rest is kept

    result, _ = await _timed(s, "bad_utf8")
    assert error_flag(result) is False
    assert "\ufffd" in structured(result)["data"]["text"]
    replaced = [d for d in result.meta[META_KEY] if d["kind"] == "value_coerced"]
    assert replaced and "3 invalid UTF-8 sequence(s)" in replaced[0]["message"]

    for name, words in [
        ("huge", "over 65536 bytes"),
        ("deep", "recursion limit"),
        ("bignum", "number out of range"),
        ("non_object", "result is not an object"),
    ]:
        result, took = await _timed(s, name)
        problem = _problem(result)
        assert problem.category == "internal" and problem.retryable is False, name
        assert words in (problem.message or ""), (name, problem.message)
        assert took < TIMEOUT - 1, (name, took)  # answered at once, not after the timeout

    result, took = await _timed(s, "redos")  # its outputSchema's pattern backtracks for minutes
    assert error_flag(result) is False and took < TIMEOUT - 1

    result, _ = await _timed(s, "forged_meta")
    assert result.meta["com.example/trace"] == "t1"
    assert "dev.envglot/other" not in result.meta
    assert all(d["kind"] != "forged" for d in result.meta[META_KEY])

    result, _ = await _timed(s, "log_line_then_ok")
    assert error_flag(result) is False

    result, took = await _timed(s, "close_output")  # a broken stream: answered, then restarted
    problem = _problem(result)
    assert (problem.category, problem.retryable) == ("unavailable", True) and took < TIMEOUT - 1
    result, _ = await _timed(s, "ok")
    assert error_flag(result) is False

    result, took = await _timed(s, "hang")  # single-threaded: stuck for an hour
    problem = _problem(result)
    assert (problem.category, problem.retryable) == ("unavailable", True)
    assert took < TIMEOUT + 1.5
    result, took = await _timed(s, "ok")  # the stuck process was replaced, not queued behind
    assert error_flag(result) is False and structured(result)["data"] == {"text": "fine"}


@contextlib.asynccontextmanager
async def proxy_session(transport: str, args: list[str], log: Path) -> AsyncIterator[Any]:
    """A client session with ``envglot proxy ARGS`` over stdio or Streamable HTTP (stderr to ``log``)."""
    if transport == "stdio":
        async with stdio_session(["proxy", *args], log) as s:
            yield s
        return
    port = free_port()
    head, upstream = args[: args.index("--")], args[args.index("--") :]
    cmd = [str(ENVGLOT), "proxy", *head, "--listen", f"127.0.0.1:{port}", *upstream]
    with running(cmd, port) as proc, anyio.fail_after(LIMIT):
        async with http_session(f"http://127.0.0.1:{port}/mcp") as s:
            yield s
        proc.terminate()
        assert proc.stderr is not None
        log.write_bytes(proc.stderr.read())


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_hostile_upstream(transport: str, tmp_path: Path) -> None:
    async def run() -> None:
        with anyio.fail_after(LIMIT):
            async with proxy_session(transport, [*PROXY_ARGS, "--", *hostile_cmd()], tmp_path / "log") as s:
                await _hostile_calls(s)

    anyio.run(run)
    log = (tmp_path / "log").read_text()
    assert "outputSchema's pattern/patternProperties are not checked" in log
    assert "restarting it" in log
    assert "Failed to parse JSONRPC message" not in log  # the SDK's client parser never saw a line
    if transport == "stdio":  # (over HTTP, SIGTERM at the end makes the SDK's server print teardown noise)
        assert "Traceback" not in log


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", ["crash-start", "hang-start"])
def test_start_up_failures_are_unavailable_not_unknown_tool(transport: str, mode: str, tmp_path: Path) -> None:
    from envglot.proxy.sdk import ProtocolError

    timeout = 2.0

    async def run() -> None:
        with anyio.fail_after(LIMIT):
            args = ["-t", "errorcode", "--timeout", f"{timeout:g}", "--prefix", "hx", "--", *hostile_cmd(mode)]
            async with proxy_session(transport, args, tmp_path / "log") as s:
                for _ in range(2):  # and again: each call is bounded, none is "Unknown tool"
                    result, took = await _timed(s, "hx_ok")
                    problem = _problem(result)
                    assert (problem.category, problem.retryable) == ("unavailable", True)
                    assert "could not be listed" in (problem.message or "")
                    assert took < 2 * timeout + 1.5
                with pytest.raises(ProtocolError):
                    await s.call_tool("other_ok", {})  # not under the upstream's prefix: unknown

    anyio.run(run)
