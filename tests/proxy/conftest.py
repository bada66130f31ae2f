"""Shared helpers: the fixture upstream, the envglot executable, a bounded SDK client."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

HERE = Path(__file__).resolve().parent
UPSTREAM = HERE / "upstream_server.py"
ENVGLOT = Path(sys.executable).parent / "envglot"
EXPECTED_ERROR = {
    "dotbot_ok": False,
    "dotbot_error": True,
    "errorcode_ok": False,
    "errorcode_error": True,
    "graph_ok": False,
    "graph_error": True,
    "plain": False,
    "plain_error": True,
}
"""The fixture's tools that answer, and whether each answer is a failure."""
ENVELOPE_TOOLS = [t for t in EXPECTED_ERROR if not t.startswith("plain")]


def upstream_cmd() -> list[str]:
    return [sys.executable, str(UPSTREAM)]


@contextlib.asynccontextmanager
async def stdio_session(args: list[str], log: Path) -> AsyncIterator[Any]:
    """An initialized SDK ClientSession with ``envglot ARGS`` over stdio; its stderr goes to ``log``."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=str(ENVGLOT), args=args)
    with log.open("a") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


@contextlib.asynccontextmanager
async def http_session(url: str) -> AsyncIterator[Any]:
    """An initialized SDK ClientSession with a Streamable HTTP server."""
    from mcp import ClientSession

    from envglot.proxy.sdk import http_client

    async with http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen[Any], timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early with {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")


@contextlib.contextmanager
def running(cmd: list[str], port: int) -> Iterator[subprocess.Popen[bytes]]:
    """A server process listening on ``port``; terminated (then killed) on exit."""
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_port(port, proc)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        if proc.stderr is not None:
            proc.stderr.close()


def attr(obj: Any, snake: str, camel: str) -> Any:
    """An SDK model field by its 2.x (snake_case) or 1.x (camelCase) name."""
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


def structured(result: Any) -> Any:
    return attr(result, "structured_content", "structuredContent")


def error_flag(result: Any) -> Any:
    return attr(result, "is_error", "isError")


def output_schema_of(tool: Any) -> Any:
    return attr(tool, "output_schema", "outputSchema")
