"""MCP adapters: envelopes in and out of ``CallToolResult``, and a decorator for tool functions.

Over 500 lines: the CallToolResult adapters and ``@emits`` (four overloads) share the unwrap and wrap rules.

No hard dependency on the ``mcp`` package: :func:`unwrap`, :func:`unwrap_envelope`,
:func:`wrap` and :func:`output_schema` work on wire dicts and JSON, and read SDK
objects by attribute (``mcp`` 1.x camelCase and 2.x snake_case alike); only
:func:`call_tool_result` and ``emits(output="sdk")`` import ``mcp`` (lazily;
``pip install 'envglot[mcp]'``). See ``docs/adapters.md``.
"""

from __future__ import annotations

import copy
import functools
import gc
import inspect
import logging
import sys
import time
import typing
from collections.abc import Awaitable, Callable, Coroutine
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, ParamSpec, Protocol, TypeVar, cast, overload

import msgspec
from msgspec import Raw, Struct

from .api import convert, read, refusal, write
from .canonical import Envelope, Problem
from .detect import MCP, classify, detect_bytes
from .diagnostics import Kind, Report, report_for
from .errors import EnvglotError, ParseError
from .limits import check_input
from .mappings import Mappings
from .options import UNSET, MappingsArg, Options, Style, Unsupported, resolve
from .pipeline import as_mappings, reconcile, to_bytes
from .policy import Level
from .pyresult import Result, encode_value
from .registry import Registry, registered
from .schema import NOT_EMBEDDED, embed_schema, embedded_payload, inline_refs, json_schema, struct_schema
from .transport import CallToolResultProbe, unwrap_bytes, wrap_bytes

__all__ = [
    "Emitter",
    "Output",
    "call_tool_result",
    "content_reference",
    "emits",
    "is_error",
    "media_blocks",
    "output_schema",
    "payload_schema",
    "synthesize",
    "unwrap",
    "unwrap_envelope",
    "wrap",
]

if TYPE_CHECKING:
    from mcp.types import CallToolResult

    from .dialect import Dialect

P = ParamSpec("P")
R_co = TypeVar("R_co", covariant=True)
Output = Literal["sdk", "wire", "envelope"]
_log = logging.getLogger("envglot.mcp")
_ANY = msgspec.json.Decoder()
_ENC = msgspec.json.Encoder()
_RAW = msgspec.json.Decoder(Raw)
_PROBE = msgspec.json.Decoder(CallToolResultProbe)


@functools.cache
def _struct_dialects() -> dict[str, str]:
    """Module of a dialect's wire Structs -> dialect name (built on first use: listing the
    dialects compiles every bundled one, which importing this module does not need)."""
    return {type(d).__module__: d.name for d in registered()}


_OUTPUTS = ("sdk", "wire", "envelope")


def is_error(doc: bytes, dialect: str | None = None, *, mappings: MappingsArg = UNSET) -> bool:
    """``isError`` for a document of a writable dialect (conventions §1.3 rule 3): its own outcome
    flag (``Dialect.outcome_key``; a stray key of another dialect's name is not an outcome),
    the dialect detected when not given; the dialects are the bundled ones plus those
    ``mappings`` declares."""
    reg = as_mappings(resolve(None, mappings=mappings).mappings).registry
    return reg.get(dialect if dialect is not None else detect_bytes(doc, reg)).failed(doc)


def _as_dict(doc: bytes) -> dict[str, Any]:
    """JSON bytes as a dict; a document Python cannot hold (a number out of range) is a ParseError."""
    try:
        out: dict[str, Any] = _ANY.decode(doc)
    except msgspec.MsgspecError as exc:
        raise ParseError(f"the envelope cannot be returned as a dict: {exc}", path="$") from None
    return out


def _wire_dict(doc: bytes, is_error: bool, blocks: list[dict[str, Any]], result_type: bool) -> dict[str, Any]:
    """The CallToolResult wire dict carrying ``doc``, then the non-text ``blocks`` unchanged."""
    try:
        wire = wrap_bytes(doc, is_error, result_type)
    except UnicodeDecodeError as exc:
        raise ParseError(f"the envelope is not valid UTF-8 (byte {exc.start})", path="$") from None
    out = _as_dict(wire)
    if blocks:
        out["content"].extend(blocks)
    return out


# ---- reading a CallToolResult -------------------------------------------------------


def _attr(obj: object, *names: str) -> Any:
    """The value of the first of ``names`` that ``obj`` has (``None``: it has none of them).

    The SDK 2.x name comes first: where it exists, the 1.x alias (deprecated there) is not read."""
    for name in names:
        try:
            return getattr(obj, name)
        except AttributeError:
            continue
    return None


def _looks_like_result(obj: object) -> bool:
    """An object with the attributes of a CallToolResult (SDK 1.x or 2.x, or another framework's)."""
    return hasattr(obj, "content") and any(
        hasattr(obj, a) for a in ("structured_content", "structuredContent", "is_error", "isError")
    )


def _block(block: object) -> dict[str, Any]:
    """A content block as its wire dict: a dict as it is, an SDK model dumped, another object by attribute."""
    if isinstance(block, dict):
        return block
    dump = getattr(block, "model_dump", None)
    if callable(dump):
        out: dict[str, Any] = dump(by_alias=True, mode="json", exclude_none=True)
        return out
    return {k: v for k, v in vars(block).items() if v is not None} if hasattr(block, "__dict__") else {}


def media_blocks(result: object) -> list[dict[str, Any]]:
    """The non-text content blocks of a CallToolResult (image, audio, resource link, embedded
    resource), as wire dicts in their order; from a wire dict, its JSON or an SDK object.

    They travel unchanged after the envelope's text block (docs/adapters.md, "Content blocks").
    """
    if _looks_like_result(result):
        blocks = _attr(result, "content") or ()
    else:
        wire: Any = result if isinstance(result, dict) else _as_dict(_wire(result))
        blocks = wire.get("content") or () if isinstance(wire, dict) else ()
    if not isinstance(blocks, list | tuple):
        return []
    return [b for b in map(_block, blocks) if b.get("type") != "text"]


def content_reference(block: dict[str, Any]) -> dict[str, Any]:
    """How an envelope references a non-text block: its ``type`` and, where it has them,
    ``mimeType``, ``uri`` and ``name`` (never its data)."""
    ref = {"type": block.get("type")}
    resource = block.get("resource")
    inner = resource if isinstance(resource, dict) else {}
    for key in ("mimeType", "uri", "name"):
        value = block.get(key)
        value = inner.get(key) if value is None else value
        if isinstance(value, str):
            ref[key] = value
    return ref


def _wire(result: object) -> bytes:
    """A CallToolResult as wire JSON bytes: from bytes, str, a wire dict or an object with its attributes.

    Objects are read by attribute, camelCase (``mcp`` 1.x) or snake_case (``mcp`` 2.x):
    their content blocks (text blocks as type and text), structured content and error flag.
    """
    if not _looks_like_result(result):
        return check_input(to_bytes(result))[0]  # type: ignore[arg-type]
    blocks = [
        {"type": "text", "text": b.get("text")} if b.get("type") == "text" else b
        for b in map(_block, _attr(result, "content") or ())
    ]
    wire: dict[str, Any] = {"content": blocks}
    structured = _attr(result, "structured_content", "structuredContent")
    if structured is not None:
        wire["structuredContent"] = structured
    is_error = _attr(result, "is_error", "isError")
    if is_error is not None:
        wire["isError"] = bool(is_error)
    try:
        return _ENC.encode(wire)
    except (TypeError, msgspec.EncodeError) as exc:  # a block object holding what JSON cannot
        raise ParseError(f"this CallToolResult cannot be read as JSON: {exc}", path="$.content") from None


def synthesize(buf: bytes, m_unknown: str, report: Report) -> Envelope:
    """The canonical envelope of a CallToolResult that carries none (conventions §1.3, unwrap step 4).

    Non-text blocks are referenced (:func:`content_reference`, in order) under ``content``:
    in a success's ``{"text": ...}`` payload, in a failure's problem details; a failure
    whose text an SDK writes for a known error (``[[text]]`` rows of
    ``mappings/mcp-protocol.toml``) gets that row's category, else ``m_unknown``.
    """
    from .proxy.protocol import protocol_table  # the proxy package imports this module

    try:
        probe = _PROBE.decode(buf)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise ParseError(f"not an MCP CallToolResult: {exc}", path="$") from None
    if probe.content is None and bytes(probe.structuredContent) == b"":
        raise ParseError("not an MCP CallToolResult: no content", path="$.content")
    texts: list[str] = []
    refs: list[dict[str, Any]] = []
    for block in probe.content or ():
        if block.type == "text" and block.text is not None:
            texts.append(block.text)
        else:
            refs.append(content_reference(msgspec.to_builtins(block)))
    text = "\n".join(texts)
    ok = not probe.isError
    sc = bytes(probe.structuredContent)
    structured = sc not in (b"", b"null")
    listed = {"content": refs} if refs else {}
    payload = Raw(sc) if structured else (encode_value({"text": text, **listed}) if ok else None)
    report.add(
        Kind.SYNTHESIZED,
        "$.content",
        need="this CallToolResult carries no envelope",
        value=f"a {'success' if ok else 'failure'} from its {'structured content' if structured else 'text'}",
    )
    if ok:
        return Envelope(ok=True, payload=payload)
    rule = protocol_table().for_text(text)
    details = encode_value(listed) if refs else None
    problem = (
        Problem(category=m_unknown, message=text, details=details)
        if rule is None
        else rule.problem(text, details=details)
    )
    return Envelope(ok=False, payload=payload, problems=(problem,))


def unwrap_envelope(
    result: object,
    from_: str | None = None,
    *,
    options: Options | None = None,
    mappings: MappingsArg = UNSET,
    report: Report | None = None,
) -> Envelope:
    """The canonical envelope carried by a ``CallToolResult``.

    ``result`` is a wire dict, its JSON (bytes or str), or an SDK ``CallToolResult``.
    The envelope is taken from ``structuredContent`` (an object), else from the first
    text block; its dialect is detected unless ``from_`` says it. ``isError`` can only make
    the outcome a failure: over an envelope that says success it gives a ``status_mismatch``
    diagnostic and a failure; over an object with no dialect's markers, a failure whose
    details are the object (``outcome_inferred``).
    A result with no envelope (plain text, non-object structured content) becomes a
    synthesized one: success = ``not isError``; a success's payload is the structured
    content, else ``{"text": <text blocks joined by newlines>}``; a failure's problem has
    the fallback category and the text as message; a ``synthesized`` diagnostic says so.

    Of the :class:`~envglot.Options` (``options=`` or keywords, as for
    :func:`envglot.convert`) ``mappings``, ``strict`` and ``max_depth`` apply.

    Raises:
        ParseError: ``result`` is not a CallToolResult, or its envelope is invalid.
    """
    o = resolve(options, mappings=mappings)
    m = as_mappings(o.mappings)
    if m is not o.mappings:
        o = o.replace(mappings=m)
    rep = report if report is not None else Report(Level.IGNORE)
    buf = _wire(result)
    try:
        inner, is_error = unwrap_bytes(buf)
    except ParseError:
        if classify(buf, m.registry).dialect != MCP:  # not a CallToolResult at all
            raise
        return synthesize(buf, m.unknown_category, rep)
    if from_ is None:
        return read(buf, options=o, report=rep)  # unwraps again and applies isError (failure wins)
    env = read(inner, from_, options=o, report=rep)
    return env if is_error is None else reconcile(env, is_error, None, m, rep)


def unwrap(
    result: object,
    to: str | None = None,
    *,
    options: Options | None = None,
    unsupported: Unsupported = UNSET,
    mappings: MappingsArg = UNSET,
    style: Style = UNSET,
    context: dict[str, Any] | None = UNSET,
    report: Report | None = None,
) -> bytes:
    """The envelope carried by a ``CallToolResult``, as JSON bytes.

    Without ``to`` the envelope comes out as it travelled (no conversion); a result
    carrying no envelope then raises :class:`ParseError`. With ``to`` it is converted to
    that dialect (source detected, options as :func:`envglot.convert`), and a result
    carrying no envelope is synthesized first as :func:`unwrap_envelope` describes.

    Raises:
        ParseError: not a CallToolResult, an invalid envelope, or no envelope and no ``to``.
        UnsupportedError: ``unsupported="raise"`` and the conversion is lossy.
    """
    o = resolve(options, unsupported=unsupported, mappings=mappings, style=style, context=context)
    buf = _wire(result)
    if to is None:
        inner = unwrap_bytes(buf)[0]
        try:  # a text block's JSON is the envelope as it travelled: it must at least be JSON envglot reads
            _RAW.decode(check_input(inner)[0])
        except msgspec.DecodeError as exc:
            raise ParseError(
                f"the envelope in this CallToolResult is not valid JSON: {exc}", path="$.content"
            ) from None
        return inner
    try:
        unwrap_bytes(buf)
    except ParseError:
        m = as_mappings(o.mappings)
        if classify(buf, m.registry).dialect != MCP:  # not a CallToolResult at all: convert it (or say why not)
            raise
        rep = report if report is not None else report_for(o.policy)
        env = synthesize(buf, m.unknown_category, rep)
        return write(env, to, options=o, report=rep)
    out: bytes = convert(buf, to=to, options=o, report=report)
    return out


# ---- writing a CallToolResult -------------------------------------------------------


def _render(
    envelope: object, dialect: str | None, from_: str | None, options: Options, report: Report | None
) -> tuple[bytes, bool, list[dict[str, Any]]]:
    """``(document, is_error, blocks)``: ``envelope`` written as ``dialect`` (as it is when ``None``),
    and the non-text content blocks of a CallToolResult it came in (to travel on after it)."""
    opts: dict[str, Any] = {"options": options, "report": report}
    if isinstance(envelope, Result):
        return envelope.to(dialect or envelope.DIALECT, **opts), not envelope.success, []
    if isinstance(envelope, Envelope):
        if dialect is None:
            raise EnvglotError("a canonical Envelope has no dialect of its own: pass dialect=")
        return write(envelope, dialect, **opts), not envelope.ok, []
    if isinstance(envelope, Struct):
        from_ = _struct_dialects().get(type(envelope).__module__)
        if from_ is None:
            raise EnvglotError(f"{type(envelope).__name__} is not the wire Struct of a dialect")
        buf = _ENC.encode(envelope)
    elif isinstance(envelope, bytes | str | dict) or _looks_like_result(envelope):
        buf = _wire(envelope)
    else:
        raise EnvglotError(f"cannot wrap a {type(envelope).__name__}: expected bytes, str, dict, Struct or Result")
    reg = as_mappings(options.mappings).registry
    name: str | None = from_ if from_ is not None else detect_bytes(buf, reg)
    if name == MCP:  # already a CallToolResult: carry its envelope (synthesized when converting) and its blocks
        wrapper = buf
        blocks = media_blocks(buf)
        buf = unwrap(buf, dialect, **opts)
        if dialect is not None:
            return buf, is_error(buf, dialect, mappings=options.mappings), blocks
        # carried as it is: the outcome is the wrapper's as read (isError can only make a failure)
        return buf, not read(wrapper, options=options).ok, blocks
    if dialect is None:
        return buf, not read(buf, name, options=options).ok, []
    out: bytes = convert(buf, to=dialect, from_=name, **opts)
    return out, is_error(out, dialect, mappings=options.mappings), []


def wrap(
    envelope: object,
    dialect: str | None = None,
    *,
    from_: str | None = None,
    result_type: bool = False,
    options: Options | None = None,
    unsupported: Unsupported = UNSET,
    mappings: MappingsArg = UNSET,
    context: dict[str, Any] | None = UNSET,
    report: Report | None = None,
) -> dict[str, Any]:
    """A ``CallToolResult`` wire dict carrying ``envelope`` (conventions §1.3).

    The envelope goes in ``structuredContent`` and, as compact JSON, in ``content[0]``
    (the non-text blocks of a CallToolResult ``envelope`` follow unchanged); ``isError``
    mirrors failure (dotbot ``status == "error"``, elsewhere ``success == false``).
    ``result_type=True`` adds ``"resultType": "complete"`` (MCP 2026-07-28).

    Args:
        envelope: a document of any dialect (bytes, str, dict), a dialect's wire
            Struct, a canonical :class:`~envglot.canonical.Envelope`, a :class:`Result`,
            or a CallToolResult (wire dict, JSON or SDK object) whose envelope is
            carried over, as :func:`unwrap` gives it.
        dialect: the dialect to carry; ``None`` keeps a document as it is (a Result is
            then written as ``result``; a canonical Envelope needs a dialect).
        from_: the document's dialect when it should not be detected.
        options, unsupported, mappings, context, report: as :func:`envglot.convert` (the
            document is always carried compact: ``style`` does not apply).
    """
    o = resolve(options, unsupported=unsupported, mappings=mappings, context=context)
    compact = o if o.style == "compact" else o.replace(style="compact")
    return _wire_dict(*_render(envelope, dialect, from_, compact, report), result_type)


@functools.cache
def _sdk_type() -> Any:
    """``mcp.types.CallToolResult``, imported on first use."""
    try:
        from mcp.types import CallToolResult
    except ImportError as exc:
        raise ImportError("SDK objects need the mcp package: pip install 'envglot[mcp]'") from exc
    return CallToolResult


def call_tool_result(envelope: object, dialect: str | None = None, **options: Any) -> Any:
    """:func:`wrap` as an SDK ``mcp.types.CallToolResult`` (``mcp`` 1.x or 2.x; needs ``envglot[mcp]``)."""
    return _sdk_type().model_validate(wrap(envelope, dialect, **options))


# ---- the output schema --------------------------------------------------------------


def output_schema(
    dialect: str, payload: dict[str, Any] | None = None, *, mappings: MappingsArg = UNSET
) -> dict[str, Any]:
    """A self-contained JSON Schema (2020-12) of ``dialect``'s envelope for a tool's ``outputSchema``.

    Root ``"type": "object"``, no ``$ref`` (``envglot.schema.json_schema`` with
    ``inline=True``); a fresh dict on every call. With ``payload`` (the tool's own schema
    of what it returns), that schema is placed at the dialect's payload member
    (``[fields] payload`` of its table: response-v2 ``data``, result ``value``, code-graph
    ``data.result`` ...) for successes, with its ``$defs`` hoisted
    (:func:`envglot.schema.embed_schema`): failures still validate. Where a success is
    the payload itself (``payload = "$"``: google-rpc's resource), the document is ``anyOf``
    the payload schema and the failure document's (the dialect's wire Struct). A ``payload`` that is
    itself a dialect's envelope schema is no payload's: the payload type it carries, if
    any, is placed instead (a converted envelope keeps its type), else the plain envelope
    schema is returned.

    Raises:
        EnvglotError: ``payload`` refers outside itself (a ``$ref`` that is not ``#...``).
    """
    m = as_mappings(resolve(None, mappings=mappings).mappings)
    base = json_schema(dialect, inline=True, mappings=m)
    if payload is None:
        return base
    for unit in m.registry:  # a dialect's envelope schema: its payload type, if any, is the payload
        at = m[unit.name].path("payload") if unit.name in m.dialects else None
        envelope = json_schema(unit.name, inline=True, mappings=m)
        wraps = unit.name in m.dialects and m[unit.name].shape.payload == "object"
        own = embedded_payload(payload, envelope, at or "$", failure=_failure_document(unit, at), wrap_value=wraps)
        if own is not NOT_EMBEDDED:
            if own is None:
                return base
            payload = own
            break
    unit = m.registry.get(dialect)
    table = m[unit.name]
    at = table.path("payload")
    failure = _failure_document(unit, at)
    if at is None or (at == "$" and failure is None):
        return base
    wrap = table.shape.payload == "object"
    return embed_schema(base, at, payload, ok=table.path("ok"), wrap_value=wrap, failure=failure)


def _failure_document(unit: Dialect, at: str | None) -> dict[str, Any] | None:
    """The failure document's schema (its wire Struct's) of a dialect whose success is the payload
    itself (``at == "$"``: google-rpc), ``None`` for any other."""
    return struct_schema(unit.wire, inline=True) if at == "$" and unit.wire is not None else None


@functools.cache
def _schema_model(dialect: str, payload: str | None = None, mappings: Mappings | None = None) -> Any:
    """A pydantic model that accepts any object and publishes ``output_schema(dialect, payload)``
    (``payload``: the tool's own payload schema as JSON text, or ``None``; ``mappings``: the
    tables that know ``dialect``, default the bundled ones).

    Used as ``Annotated[CallToolResult, model]`` so MCPServer / FastMCP advertise the
    envelope schema; it validates nothing itself (the envelope came from a writer).
    """
    from pydantic import BaseModel, ConfigDict

    own = None if payload is None else _ANY.decode(payload)
    schema = output_schema(dialect, mappings=mappings)
    if own is not None:
        try:  # pydantic resolves every $ref of a schema against its own definitions: none may be left
            schema = inline_refs(output_schema(dialect, own, mappings=mappings))
        except EnvglotError as exc:  # a recursive payload schema
            _log.info("the payload schema cannot be published inline (%s): the envelope schema is published", exc)

    class EnvelopeSchema(BaseModel):
        model_config = ConfigDict(extra="allow")

        @classmethod
        def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]:
            return copy.deepcopy(schema)

    EnvelopeSchema.__name__ = EnvelopeSchema.__qualname__ = str(schema.get("title", "Envelope"))
    return EnvelopeSchema


def payload_schema(returns: object) -> dict[str, Any] | None:
    """The JSON Schema of what a tool annotated ``-> returns`` carries as its payload, if it says:
    a pydantic model's (not a ``CallToolResult``'s), or ``T``'s for ``Result[T]`` (``None`` for
    anything else, or a ``T`` pydantic cannot describe)."""
    if typing.get_origin(returns) is Result:
        args = typing.get_args(returns)
        value: Any = args[0] if args else Any
    elif (
        isinstance(returns, type)
        and hasattr(returns, "model_json_schema")
        and not any(c.__name__ == "CallToolResult" for c in returns.__mro__)  # a result, not a payload
    ):
        value = returns
    else:
        return None
    if value is Any:
        return None
    from pydantic import PydanticUserError, TypeAdapter

    try:
        out: dict[str, Any] = TypeAdapter(value).json_schema(mode="serialization")
    except (PydanticUserError, TypeError, ValueError):
        return None
    return out


# ---- the decorator ------------------------------------------------------------------


def _exception_envelope(exc: BaseException) -> Envelope:
    """The error envelope of an uncaught exception: category internal, type and message kept."""
    text = str(exc)
    return Envelope(
        ok=False,
        problems=(
            Problem(
                category="internal",
                message=text or type(exc).__name__,
                origin="server",
                exception_type=type(exc).__name__,
                exception_message=text,
            ),
        ),
    )


def _classify(ret: object, from_: str | None, registry: Registry) -> tuple[object, str | None]:
    """What a tool returned, as ``(something _render takes, its dialect)``; plain payloads become envelopes."""
    if isinstance(ret, Result | Envelope) or _looks_like_result(ret):
        return ret, None
    if isinstance(ret, Struct) and type(ret).__module__ in _struct_dialects():
        return ret, None
    if isinstance(ret, bytes | bytearray):
        try:
            ret = bytes(ret).decode()
        except UnicodeDecodeError as exc:  # refused like any input: answered by envglot.refusal
            raise ParseError(f"the returned bytes are not valid UTF-8 (byte {exc.start})", path="$") from None
    if isinstance(ret, str | dict):
        if from_ is not None:
            return ret, from_
        if isinstance(ret, dict) or ret.lstrip("\ufeff \t\r\n").startswith("{"):
            # JSON object text is a document: one the core refuses is a failure, never a string payload
            buf = check_input(to_bytes(ret))[0]
            found = classify(buf, registry)
            if found.evidence is None:  # no dialect's markers: a plain payload
                return Envelope(ok=True, payload=Raw(buf)), None
            return buf, found.dialect
    return Envelope(ok=True, payload=None if ret is None else encode_value(ret)), None


_SERVER_APIS = ("mcp.server", "fastmcp")
"""The packages whose tool records :func:`_registered` recognises; with neither imported, none exists."""


def _registered(fn: object) -> bool:
    """Whether a server API registered ``fn`` as a tool already: a tool record's attributes
    (its ``__dict__``) hold it as ``fn`` beside a ``name`` and the derived ``parameters``
    (MCPServer's ``Tool``, FastMCP's ``FunctionTool``). The search walks the heap
    (``gc.get_referrers``), so it runs only once a server API is imported."""
    if not any(name in sys.modules for name in _SERVER_APIS):
        return False
    return any(
        isinstance(ref, dict) and ref.get("fn") is fn and "name" in ref and "parameters" in ref
        for ref in gc.get_referrers(fn)
    )


class Emitter(Protocol[R_co]):
    """What :func:`emits` returns: a decorator keeping the function's parameters (``ParamSpec``);
    a coroutine function stays one. ``R_co`` is what a call answers with."""

    @overload
    def __call__(self, fn: Callable[P, Coroutine[Any, Any, Any]], /) -> Callable[P, Coroutine[Any, Any, R_co]]: ...
    @overload
    def __call__(self, fn: Callable[P, Any], /) -> Callable[P, R_co]: ...


@overload
def emits(
    dialect: str,
    *,
    output: Literal["sdk"] = "sdk",
    from_: str | None = None,
    tool: str | None = None,
    options: Options | None = None,
    unsupported: Unsupported = UNSET,
    mappings: MappingsArg = UNSET,
    context: dict[str, Any] | None = UNSET,
    result_type: bool = False,
    schema: bool = True,
    timing: bool = True,
) -> Emitter[CallToolResult]: ...
@overload
def emits(
    dialect: str,
    *,
    output: Literal["wire", "envelope"],
    from_: str | None = None,
    tool: str | None = None,
    options: Options | None = None,
    unsupported: Unsupported = UNSET,
    mappings: MappingsArg = UNSET,
    context: dict[str, Any] | None = UNSET,
    result_type: bool = False,
    schema: bool = True,
    timing: bool = True,
) -> Emitter[dict[str, Any]]: ...
@overload
def emits(
    dialect: str,
    *,
    output: Output,
    from_: str | None = None,
    tool: str | None = None,
    options: Options | None = None,
    unsupported: Unsupported = UNSET,
    mappings: MappingsArg = UNSET,
    context: dict[str, Any] | None = UNSET,
    result_type: bool = False,
    schema: bool = True,
    timing: bool = True,
) -> Emitter[Any]: ...
def emits(
    dialect: str,
    *,
    output: Output = "sdk",
    from_: str | None = None,
    tool: str | None = None,
    options: Options | None = None,
    unsupported: Unsupported = UNSET,
    mappings: MappingsArg = UNSET,
    context: dict[str, Any] | None = UNSET,
    result_type: bool = False,
    schema: bool = True,
    timing: bool = True,
) -> Emitter[Any]:
    """Decorate a tool function (sync or async) so that it answers in ``dialect``.

    The function may return an :class:`envglot.Result`, an envelope of any dialect
    (dict, JSON bytes/str, wire Struct), a canonical Envelope, an MCP CallToolResult,
    or a plain payload (anything else: a success envelope carrying it; a dict or JSON
    text that :func:`envglot.detect` reads as legacy-v1 counts as a payload unless
    ``from_`` names the dialect). An uncaught ``Exception`` becomes an error envelope
    (category ``internal``, ``exception_type``/``exception_message`` kept) and is logged
    on the ``envglot.mcp`` logger; so does a failure to convert what was returned. A
    returned document the core refuses (JSON object text or bytes included) is answered by
    :func:`envglot.refusal`: a failure, never a success or a string payload.

    Args:
        dialect: the dialect every answer is written in.
        output: ``"sdk"`` (default) returns an ``mcp.types.CallToolResult`` with
            ``isError`` set, what FastMCP / MCPServer pass through unchanged; ``"wire"``
            returns its wire dict; ``"envelope"`` returns the envelope dict alone.
        from_: the dialect of returned documents (skips detection).
        tool: tool name for dialects that require one (default: the function's name);
            a ``"tool"`` in ``context`` wins.
        options, unsupported, mappings, context: as :func:`envglot.convert` (``style`` does
            not apply: answers are compact). An exception's error envelope is written with at
            most ``"warn"``, so it always reaches the client.
        result_type: add ``"resultType": "complete"`` (MCP 2026-07-28).
        timing: offer the call's start (``timestamp``, UTC ISO-8601 with milliseconds)
            and measured ``duration_ms`` as context values, for dialects that require
            them (dotbot ``audit``, code-graph ``generatedAt``); ``context`` wins.
        schema: with ``output="sdk"``, annotate the return type as
            ``Annotated[CallToolResult, <envelope schema>]`` so the server advertises
            :func:`output_schema` as the tool's ``outputSchema``, with the payload type the
            function's own return annotation gives (:func:`payload_schema`).

    The wrapper keeps the function's name, docstring and parameters (the input schema
    is derived from them; type checkers see them through ``ParamSpec``); only the return
    annotation changes. ``@emits`` goes below the server's tool decorator.

    Raises:
        EnvglotError: when decorating, a function a server registered as a tool already
            (``@emits`` above the tool decorator), or invalid options.
    """
    o = resolve(options, unsupported=unsupported, mappings=mappings, context=context)
    m = as_mappings(o.mappings)  # first: the dialects declared among them are its registry's
    unit = m.registry.get(dialect)
    target = unit.name
    if not unit.shape.writable:
        writable = ", ".join(m.registry.writable_names())
        raise EnvglotError(f"{target} is a read-only source dialect; write one of {writable}")
    if output not in _OUTPUTS:
        raise EnvglotError(f"output must be one of {', '.join(_OUTPUTS)}, not {output!r}")
    o_context = o.context
    o = o.replace(mappings=m, style="compact", context=None)
    policy = o.policy
    sdk = _sdk_type() if output == "sdk" else None
    fallback = (
        o.replace(unsupported=msgspec.structs.replace(policy, level=Level.WARN)) if policy.level is Level.RAISE else o
    )

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        name = tool or getattr(fn, "__name__", "tool")
        if _registered(fn):
            raise EnvglotError(
                f"@emits({dialect!r}) is above the server's tool decorator: {name} is registered as a tool "
                "already, without @emits. Put @emits directly above the function, below the tool decorator:\n"
                f"    @server.tool()\n    @emits({dialect!r})\n    def {name}(...): ..."
            )
        base = {"tool": name, **(o_context or {})}

        def answer(started: float, clock: float, ret: object = None, exc: Exception | None = None) -> Any:
            synth = base
            if timing:
                stamp = datetime.fromtimestamp(started, UTC).isoformat(timespec="milliseconds")
                taken = round((time.perf_counter() - clock) * 1000)
                synth = {"timestamp": stamp.replace("+00:00", "Z"), "duration_ms": taken, **base}

            def finish(doc: bytes, is_error: bool, blocks: list[dict[str, Any]]) -> dict[str, Any]:
                return _as_dict(doc) if output == "envelope" else _wire_dict(doc, is_error, blocks, result_type)

            if exc is None:
                try:
                    thing, src = _classify(ret, from_, m.registry)
                    answered = finish(*_render(thing, target, src, o.replace(context=synth), None))
                except ParseError as refused:  # the core refused what the tool returned: a failure
                    _log.warning("tool %s returned a document envglot refuses: %s", name, refused)
                    answered = finish(refusal(refused, to=target, options=fallback, context=synth).output, True, [])
                except Exception as conv_exc:
                    exc = conv_exc
            if exc is not None:
                _log.warning("tool %s failed; answering with an error envelope", name, exc_info=exc)
                failed = _exception_envelope(exc)
                answered = finish(*_render(failed, target, None, fallback.replace(context=synth), None))
            if sdk is None or output == "envelope":
                return answered
            try:
                return sdk.model_validate(answered)
            except ValueError:  # pydantic's ValidationError: a content block the SDK's types refuse
                if len(answered["content"]) <= 1:
                    raise
                _log.warning(
                    "tool %s returned %d content block(s) the MCP SDK refuses; answered with the envelope alone",
                    name,
                    len(answered["content"]) - 1,
                )
                return sdk.model_validate({**answered, "content": answered["content"][:1]})

        wrapper: Callable[..., Any]
        if inspect.iscoroutinefunction(fn):
            afn = cast(Callable[..., Awaitable[Any]], fn)

            @functools.wraps(fn)
            async def wrapper(*args: Any, **kwargs: Any) -> Any:
                started, clock = time.time(), time.perf_counter()
                try:
                    ret = await afn(*args, **kwargs)
                except Exception as exc:
                    return answer(started, clock, exc=exc)
                return answer(started, clock, ret)

        else:

            @functools.wraps(fn)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                started, clock = time.time(), time.perf_counter()
                try:
                    ret = fn(*args, **kwargs)
                except Exception as exc:
                    return answer(started, clock, exc=exc)
                return answer(started, clock, ret)

        try:
            sig = inspect.signature(fn, eval_str=True)
        except NameError:  # a forward reference not yet defined: keep the annotations as written
            sig = inspect.signature(fn)
        if sdk is not None:
            own = payload_schema(sig.return_annotation) if schema else None
            model = _schema_model(target, None if own is None else _ENC.encode(own).decode(), m)
            returns: Any = Annotated[sdk, model] if schema else sdk
        else:
            returns = dict[str, Any]
        sig = sig.replace(return_annotation=returns)
        wrapper.__signature__ = sig  # type: ignore[attr-defined]
        wrapper.__annotations__ = {
            **{p.name: p.annotation for p in sig.parameters.values() if p.annotation is not p.empty},
            "return": returns,
        }
        return wrapper

    return cast(Emitter[Any], decorate)
