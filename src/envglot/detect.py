"""Dialect detection, by a documented precedence of shape rules (``docs/python-api.md``)."""

from __future__ import annotations

import msgspec
from msgspec import Raw, Struct

from .dialects.errorcode import ToolMeta as ErrorcodeMeta
from .dialects.response_v2 import Meta as V2Meta
from .dialects.result import Envelope as ResultWire
from .errors import DetectError

__all__ = ["JSONRPC", "MCP", "Detection", "classify", "detect_bytes"]

MCP = "mcp"
"""Pseudo-dialect returned for an MCP CallToolResult wrapper (unwrapped by the callers)."""
JSONRPC = "jsonrpc"
"""Pseudo-dialect returned for a JSON-RPC 2.0 response (unwrapped or refused by the callers)."""


class Detection(Struct, frozen=True):
    """A dialect name and the evidence it was recognized by.

    ``evidence`` is ``None`` only for legacy-v1's marker-less shape: an object with no key
    any dialect defines, read as a bare payload (see ``docs/python-api.md``, "Evidence").
    """

    dialect: str
    evidence: str | None
    unwrapped: bool = False
    """True when the document was taken out of an MCP CallToolResult or JSON-RPC response."""


_NONE = Raw(b"")


class _Probe(Struct):
    schema_id: Raw = _NONE
    success: Raw = _NONE
    data: Raw = _NONE
    error: Raw = _NONE
    meta: Raw = _NONE
    error_type: Raw = _NONE
    value: Raw = _NONE
    message: Raw = _NONE
    instruction: Raw = _NONE
    disposition: Raw = _NONE
    arguments: Raw = _NONE
    additional_agent_instructions: Raw = _NONE
    exception_type: Raw = _NONE
    error_data: Raw = _NONE
    content: Raw = _NONE
    structuredContent: Raw = _NONE  # noqa: N815
    isError: Raw = _NONE  # noqa: N815
    jsonrpc: Raw = _NONE
    result: Raw = _NONE
    found: Raw = _NONE


class _Strict(_Probe, forbid_unknown_fields=True):
    """The probe, plus every other top-level key of the dialects' envelopes, with unknown keys
    forbidden: one pass gives both the probe and the exact key set (a document with any other
    key stops at that key and is probed again leniently)."""

    exception_message: Raw = _NONE
    residue: Raw = msgspec.field(default=_NONE, name="_envglot")
    tool: Raw = _NONE
    version: Raw = _NONE
    status: Raw = _NONE
    summary: Raw = _NONE
    warnings: Raw = _NONE
    errors: Raw = _NONE
    audit: Raw = _NONE
    intent: Raw = _NONE
    actions: Raw = _NONE


class _Meta(Struct):
    version: Raw = _NONE
    tool_version: Raw = _NONE
    elapsed_ms: Raw = _NONE


class _CGData(Struct):
    requestId: Raw = _NONE  # noqa: N815
    generatedAt: Raw = _NONE  # noqa: N815


class _Err(Struct):
    code: Raw = _NONE


_PROBE = msgspec.json.Decoder(_Probe)
_STRICT = msgspec.json.Decoder(_Strict)
_STRICT_NAMES = tuple((f.name, f.encode_name) for f in msgspec.structs.fields(_Strict))
_META = msgspec.json.Decoder(_Meta)
_CG = msgspec.json.Decoder(_CGData)
_ERR = msgspec.json.Decoder(_Err)
_TRUE, _FALSE, _NULL = Raw(b"true"), Raw(b"false"), Raw(b"null")
_RESULT_KEYS = frozenset(f.encode_name for f in msgspec.structs.fields(ResultWire)) | {"_envglot"}
"""Every key a Result document may have (its wire Struct's fields, plus the preserve residue)."""
_V2_ONLY_META = frozenset(f.encode_name for f in msgspec.structs.fields(V2Meta)) - frozenset(
    f.encode_name for f in msgspec.structs.fields(ErrorcodeMeta)
)
"""``meta`` keys only response-v2 defines (``warnings``, ``request_id``, ``telemetry``...)."""
_RAW_DICT = msgspec.json.Decoder(dict[str, Raw])
_RESULT_ONLY = (
    "error_type",
    "value",
    "message",
    "instruction",
    "disposition",
    "arguments",
    "additional_agent_instructions",
    "exception_type",
    "error_data",
)


def _is_obj(r: Raw | None) -> bool:
    return r is not None and r is not _NONE and memoryview(r)[:1] == b"{"


def detect_bytes(buf: bytes | memoryview | str) -> str:
    """Name the dialect of one JSON document (``"mcp"``/``"jsonrpc"`` for a transport wrapper).

    See :func:`classify` for the precedence.
    """
    return classify(buf).dialect


def classify(buf: bytes | memoryview | str) -> Detection:
    """The dialect of one JSON document and the evidence it was recognized by.

    Precedence: dotbot (a ``schema_id`` key) > response-v2 (``meta.version``) > JSON-RPC response
    (``jsonrpc`` with ``result`` or ``error``) > MCP wrapper (``content``/``structuredContent``)
    > code-graph (``data.requestId`` + ``data.generatedAt``) > errorcode (``error.code``
    object, or ``meta.tool_version``/``elapsed_ms``) > result (only Result keys, with a
    Result-only key or without ``error``) > legacy-v1 interim (``{success, data, error}``)
    > response-v2 (``{success, data, meta}`` whose ``meta`` has a key only response-v2 defines)
    > errorcode (``{success, data[, meta]}``) > legacy-v1 flat dict with an outcome flag
    (``success``/``found`` boolean or an ``error`` string) > legacy-v1 marker-less (any other
    object: a bare payload, evidence ``None``).
    """
    keys: frozenset[str] | None
    p: _Probe
    try:
        p = _STRICT.decode(buf)
        keys = frozenset(wire for attr, wire in _STRICT_NAMES if getattr(p, attr) is not _NONE)
    except msgspec.ValidationError as exc:  # a subclass of DecodeError: valid JSON so far
        if "unknown field" not in str(exc):
            raise DetectError("a response envelope must be a JSON object", path="$") from None
        keys = None  # a key no envelope shape has
        try:
            p = _PROBE.decode(buf)
        except msgspec.DecodeError as exc2:
            raise DetectError(f"invalid JSON: {exc2}", path="$") from None
    except msgspec.DecodeError as exc:
        raise DetectError(f"invalid JSON: {exc}", path="$") from None
    if p.schema_id is not _NONE:  # only dotbot has the key: a wrong value is a broken dotbot envelope
        return Detection("dotbot", "schema_id")
    meta = _META.decode(p.meta) if _is_obj(p.meta) else None
    if meta is not None and meta.version == Raw(b'"response-v2"'):
        return Detection("response-v2", "meta.version")
    if p.jsonrpc is not _NONE and (p.result is not _NONE or p.error is not _NONE) and p.success is _NONE:
        return Detection(JSONRPC, "jsonrpc")
    if p.success is _NONE and p.data is _NONE and (p.content is not _NONE or p.structuredContent is not _NONE):
        return Detection(MCP, "content" if p.content is not _NONE else "structuredContent")
    success = p.success == _TRUE or p.success == _FALSE
    if success and _is_obj(p.data):
        cg = _CG.decode(p.data)  # type: ignore[arg-type]
        if cg.requestId is not _NONE and cg.generatedAt is not _NONE:
            return Detection("code-graph", "data.requestId")
    if success:
        if _is_obj(p.error) and _ERR.decode(p.error).code is not _NONE:  # type: ignore[arg-type]
            return Detection("errorcode", "error.code")
        if meta is not None and (meta.tool_version is not _NONE or meta.elapsed_ms is not _NONE):
            return Detection("errorcode", "meta.tool_version")
    if not success:
        keys = None
    if keys is not None and p.data is _NONE and p.meta is _NONE and keys <= _RESULT_KEYS:
        # Every key is Result vocabulary: a Result, unless it is a bare legacy failure
        # ({"success": false, "error": "..."} without error_type) or an empty success flag dict.
        if any(getattr(p, k) is not _NONE for k in _RESULT_ONLY) or p.error is _NONE:
            return Detection("result", "success")
    if keys is not None:
        if (
            keys == {"success", "data", "error"}
            and _is_obj(p.data)
            and (p.error == _NULL or (p.error is not _NONE and memoryview(p.error)[:1] == b'"'))
        ):
            return Detection("legacy-v1", "success")
        if p.data is not _NONE and p.error is _NONE and keys <= {"success", "data", "meta", "_envglot"}:
            if _is_obj(p.meta) and not _V2_ONLY_META.isdisjoint(_RAW_DICT.decode(p.meta)):
                return Detection("response-v2", "meta keys")  # response-v2 without its version marker
            return Detection("errorcode", "success")
    if success:
        return Detection("legacy-v1", "success")
    if p.found == _TRUE or p.found == _FALSE:
        return Detection("legacy-v1", "found")
    if p.error is not _NONE and memoryview(p.error)[:1] == b'"':
        return Detection("legacy-v1", "error")
    return Detection("legacy-v1", None)
