"""MCP transport at the wire level: unwrap a ``CallToolResult`` dict, wrap an envelope in one.

No dependency on the ``mcp`` package: this works on JSON bytes and plain dicts
(see :mod:`envglot.mcp` for SDK objects).
"""

from __future__ import annotations

import functools

import msgspec
from msgspec import Raw, Struct

from .errors import NoEnvelopeError, ParseError
from .excerpt import excerpt

__all__ = ["CallToolResultProbe", "unwrap_bytes", "unwrap_jsonrpc", "wrap_bytes"]


_NONE = Raw(b"")


class _Resource(Struct):
    uri: str | None = None
    mimeType: str | None = None  # noqa: N815 - MCP wire name


class _Content(Struct):
    type: str | None = None
    text: str | None = None
    mimeType: str | None = None  # noqa: N815 - MCP wire name
    uri: str | None = None
    name: str | None = None
    resource: _Resource | None = None


class CallToolResultProbe(Struct):
    """The parts of a CallToolResult wire dict envglot reads."""

    content: list[_Content] | None = None
    structuredContent: Raw = _NONE  # noqa: N815 - MCP wire name
    isError: bool | None = None  # noqa: N815 - MCP wire name


class _RpcError(Struct):
    code: int | float | str | None = None
    message: str | None = None


class _RpcResponse(Struct):
    result: Raw = _NONE
    error: _RpcError | None = None


@functools.cache
def _probe() -> msgspec.json.Decoder[CallToolResultProbe]:
    """Built on first use: evaluating the Structs' annotations is not part of ``import envglot``."""
    return msgspec.json.Decoder(CallToolResultProbe)


@functools.cache
def _rpc() -> msgspec.json.Decoder[_RpcResponse]:
    return msgspec.json.Decoder(_RpcResponse)


_ENC = msgspec.json.Encoder()


def unwrap_bytes(buf: bytes) -> tuple[bytes, bool | None]:
    """The envelope inside a CallToolResult, and its ``isError`` flag.

    Prefers ``structuredContent`` (an object); else the first text block holding a JSON
    object. Raises :class:`NoEnvelopeError` when neither holds an envelope (plain text, no
    content), :class:`ParseError` when ``buf`` is no CallToolResult.
    """
    try:
        probe = _probe().decode(buf)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise ParseError(f"not an MCP CallToolResult: {exc}", path="$") from None
    sc = probe.structuredContent
    if sc is not _NONE and memoryview(sc)[:1] == b"{":
        return bytes(sc), probe.isError
    for i, block in enumerate(probe.content or ()):
        if block.type == "text" and block.text is not None:
            t = block.text.lstrip().removeprefix("\ufeff").lstrip()  # a BOM hides no envelope
            if t.startswith("{"):
                return t.encode(), probe.isError
            raise NoEnvelopeError(
                "the text block of this CallToolResult is not a JSON envelope", path=f"$.content[{i}].text"
            )
    raise NoEnvelopeError(
        "this CallToolResult carries no envelope (no structuredContent, no JSON text)", path="$.content"
    )


def unwrap_jsonrpc(buf: bytes) -> bytes:
    """The ``result`` object of a JSON-RPC 2.0 response (a ``tools/call`` result).

    An ``error`` response carries no tool result: it is refused with a :class:`ParseError`
    naming its code and message, never read as a payload.
    """
    try:
        rpc = _rpc().decode(buf)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise ParseError(f"not a JSON-RPC response: {excerpt(str(exc))}", path="$") from None
    if rpc.error is not None:
        raise ParseError(
            f"a JSON-RPC error response carries no tool result (code {excerpt(str(rpc.error.code), 20)}: "
            f"{excerpt(rpc.error.message or '', 80)})",
            path="$.error",
        )
    if memoryview(rpc.result)[:1] != b"{":
        raise ParseError("the result of this JSON-RPC response is not an object", path="$.result")
    return bytes(rpc.result)


def wrap_bytes(envelope: bytes, is_error: bool, result_type: bool = False) -> bytes:
    """A CallToolResult wire dict: the envelope in ``structuredContent`` and as compact JSON text."""
    compact = msgspec.json.format(envelope, indent=-1)
    wire: dict[str, object] = {
        "content": [{"type": "text", "text": compact.decode()}],
        "structuredContent": Raw(compact),
        "isError": is_error,
    }
    if result_type:
        wire["resultType"] = "complete"
    return _ENC.encode(wire)
