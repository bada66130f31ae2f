"""The few places where the ``mcp`` SDK's 1.x and 2.x lines differ, behind one face.

Imported only by the proxy (``pip install 'envglot[mcp]'``); everything else in
:mod:`envglot.proxy` uses the SDK's names that both lines share.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

try:
    import mcp.types as types
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.client.stdio import get_default_environment
    from mcp.shared.message import SessionMessage
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("envglot proxy needs the mcp package: pip install 'envglot[mcp]'") from exc

try:  # 2.x
    from mcp.shared.exceptions import MCPError as ProtocolError
except ImportError:  # 1.x
    from mcp.shared.exceptions import McpError as ProtocolError  # type: ignore[attr-defined,no-redef]

__all__ = [
    "V2",
    "ClientSession",
    "ProtocolError",
    "Session",
    "SessionMessage",
    "StdioServerParameters",
    "error_code",
    "get_default_environment",
    "handshake",
    "http_client",
    "make_error",
    "parse_message",
    "security_settings",
    "stdio_client",
    "types",
    "wire",
]

try:
    from mcp.server.lowlevel.server import Server as _Server

    V2 = "on_call_tool" in _Server.__init__.__code__.co_varnames
except ImportError:  # pragma: no cover
    V2 = False
"""True on the 2.x line (handlers passed to ``Server(on_...=)``, snake_case fields)."""


class Session(ClientSession):  # type: ignore[misc]
    """A ``ClientSession`` that leaves tool results unvalidated: the proxy validates them itself.

    The SDK validates ``structuredContent`` against the upstream's ``outputSchema`` on the
    event loop, regular expressions included; :mod:`envglot.proxy.outschema` does it
    without running an upstream's patterns.
    """

    async def validate_tool_result(self, name: str, result: Any) -> None:  # 2.x
        return None

    async def _validate_tool_result(self, name: str, result: Any) -> None:  # 1.x
        return None


def parse_message(text: str | bytes) -> Any:
    """One JSON-RPC message as the SDK's model (raises ``ValueError`` as the SDK's parser does)."""
    if V2:
        return types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    v1: Any = types.JSONRPCMessage
    return v1.model_validate_json(text)


def security_settings(hosts: list[str], origins: list[str]) -> Any:
    """Host/Origin (DNS-rebinding) protection allowing exactly ``hosts`` and ``origins`` (both lines)."""
    from mcp.server.transport_security import TransportSecuritySettings

    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


async def handshake(session: Any) -> str | None:
    """Open ``session`` at the newest revision both sides speak; the negotiated revision.

    2.x: ``server/discover`` (MCP 2026-07-28, stateless) first, the ``initialize``
    handshake (2025-11-25 and older) when the server does not answer it with a modern
    revision; 1.x: ``initialize``.
    """
    discover = getattr(session, "discover", None)
    if discover is not None:
        try:
            await discover()
        except (ProtocolError, RuntimeError):  # not a modern server (method not found, no mutual revision)
            await session.initialize()
    else:
        await session.initialize()
    version = getattr(session, "protocol_version", None)
    return version if isinstance(version, str) else None


def error_code(exc: BaseException) -> int:
    """The JSON-RPC code of a protocol error raised by the SDK."""
    return int(exc.error.code)  # type: ignore[attr-defined]


def make_error(code: int, message: str, data: Any = None) -> BaseException:
    """A protocol error the server answers with (same JSON-RPC code and message)."""
    if V2:
        return ProtocolError(code, message, data)
    v1: Any = ProtocolError
    return v1(types.ErrorData(code=code, message=message, data=data))  # type: ignore[no-any-return]


def wire(model: Any) -> dict[str, Any]:
    """An SDK model as its MCP wire dict (camelCase keys, no ``None``)."""
    out: dict[str, Any] = model.model_dump(by_alias=True, mode="json", exclude_none=True)
    return out


@contextlib.asynccontextmanager
async def http_client(url: str, headers: dict[str, str] | None = None) -> AsyncIterator[tuple[Any, Any]]:
    """The read and write streams of a Streamable HTTP connection (2.x and 1.x spellings), sending ``headers``."""
    import mcp.client.streamable_http as transport

    connect: Any = getattr(transport, "streamable_http_client", None)
    if connect is None:  # mcp 1.x before the rename: headers are an argument
        async with transport.streamablehttp_client(url, headers=headers) as streams:  # type: ignore[attr-defined]
            yield streams[0], streams[1]
        return
    if not headers:
        async with connect(url) as streams:
            yield streams[0], streams[1]
        return
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with create_mcp_http_client(headers=headers) as client, connect(url, http_client=client) as streams:
        yield streams[0], streams[1]
