"""MCP transport at the wire level: unwrap a ``CallToolResult`` dict, wrap an envelope in one.

No dependency on the ``mcp`` package: this works on JSON bytes and plain dicts
(see :mod:`envglot.mcp` for SDK objects).
"""

from __future__ import annotations

import msgspec
from msgspec import Raw, Struct

from .errors import ParseError

__all__ = ["CallToolResultProbe", "unwrap_bytes", "wrap_bytes"]


_NONE = Raw(b"")


class _Content(Struct):
    type: str | None = None
    text: str | None = None


class CallToolResultProbe(Struct):
    """The parts of a CallToolResult wire dict envglot reads."""

    content: list[_Content] | None = None
    structuredContent: Raw = _NONE  # noqa: N815 - MCP wire name
    isError: bool | None = None  # noqa: N815 - MCP wire name


_PROBE = msgspec.json.Decoder(CallToolResultProbe)
_ENC = msgspec.json.Encoder()


def unwrap_bytes(buf: bytes) -> tuple[bytes, bool | None]:
    """The envelope inside a CallToolResult, and its ``isError`` flag.

    Prefers ``structuredContent`` (an object); else the first text block holding a JSON
    object. Raises :class:`ParseError` when neither holds an envelope.
    """
    try:
        probe = _PROBE.decode(buf)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise ParseError(f"not an MCP CallToolResult: {exc}", path="$") from None
    sc = probe.structuredContent
    if sc is not _NONE and memoryview(sc)[:1] == b"{":
        return bytes(sc), probe.isError
    for i, block in enumerate(probe.content or ()):
        if block.type == "text" and block.text is not None:
            t = block.text.lstrip()
            if t.startswith("{"):
                return t.encode(), probe.isError
            raise ParseError(
                "the text block of this CallToolResult is not a JSON envelope", path=f"$.content[{i}].text"
            )
    raise ParseError("this CallToolResult carries no envelope (no structuredContent, no JSON text)", path="$.content")


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
