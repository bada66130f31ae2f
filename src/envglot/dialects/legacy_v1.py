"""legacy-v1 (foundry-mcp before response-v2): flat per-tool dicts and the interim envelope. Read-only.

Shape A (released v1): the payload sits at the top level; the outcome is ``success``,
``found`` (not a failure by itself) or nothing; a failure is a top-level ``error`` string.
Shape B (interim, never released): ``{success, data, error}`` with ``data._meta`` and
``data._warnings``. Rules: ``docs/dialects/legacy-v1.md`` and ``docs/migration.md``.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any

import msgspec
from msgspec import Raw, Struct

from .. import canonical as c
from ..checker import Checker, Rule
from ..codes import WireFailure, read_problem
from ..context import Context
from ..diagnostics import Kind
from ..dialect import Dialect, name_of, shape_of
from ..errors import EnvglotError, ParseError
from ..fields import Const, Let, Reading, When, common
from ..mappings import DialectMap, Mappings
from ..residue import parse_path
from ..wire import RAW_EMPTY_OBJECT, RAW_NULL

__all__ = ["NAME", "READING", "InterimMeta", "LegacyV1Envelope", "Parsed", "interim_data", "write"]

NAME = name_of(__name__)
SHAPE = shape_of(NAME)


class _Pagination(Struct, omit_defaults=True):
    offset: Annotated[int | None, Rule(ge=0)] = None
    limit: Annotated[int | None, Rule(ge=0)] = None
    total: Annotated[int | None, Rule(ge=0)] = None
    has_more: bool | None = None


class _Timing(Struct, omit_defaults=True):
    duration_ms: Annotated[int | float | None, Rule(ge=0)] = None


class InterimMeta(Struct, omit_defaults=True):
    """``data._meta`` of the interim envelope."""

    version: str | None = None
    pagination: _Pagination | None = None
    timing: _Timing | None = None


_RAW_DICT = msgspec.json.Decoder(dict[str, Raw])


@cache
def _meta_decoder() -> msgspec.json.Decoder[InterimMeta]:
    """The decoder of the interim meta object, built on first use (not at import)."""
    return msgspec.json.Decoder(InterimMeta)


_CHECKS: dict[str, Any] = {"success": bool, "error": str | None}
"""The top-level members every reading decodes by these types when present (:func:`_ok`,
:func:`_error`), refusing any other JSON (``Reading.checks``)."""
_SUCCEEDS: dict[str, Any] = {"success": True}
"""A document read as a success holds ``success: true`` when it holds ``success`` (:func:`_ok`;
``Reading.succeeds``)."""
_FAILS: dict[str, tuple[Any, ...]] = {"success": (False,), "error": (str,)}
"""A document read as a failure holds ``success: false`` or a string ``error`` (:func:`_ok`;
``Reading.fails``)."""
_STRS = msgspec.json.Decoder(list[str])
_STR: msgspec.json.Decoder[str | None] = msgspec.json.Decoder(_CHECKS["error"])
_BOOL: msgspec.json.Decoder[bool] = msgspec.json.Decoder(_CHECKS["success"])
_ENC = msgspec.json.Encoder()
_INTERIM_KEYS = frozenset({"success", "data", "error"})
_NOT_PAYLOAD = ("success", "error", "schema_version")
"""Shape A's top-level members that are not its payload."""


def interim_data(doc: dict[str, Raw]) -> dict[str, Raw] | None:
    """The members of ``data`` in the interim envelope (shape B: exactly ``success``, ``data``
    and ``error``, ``data`` an object, ``error`` ``null`` or a string); ``None`` for any other
    document (shape A). The object test is the members' decode itself."""
    if len(doc) != 3 or "success" not in doc or "data" not in doc or "error" not in doc:
        return None
    error = doc["error"]
    if error != RAW_NULL and memoryview(error)[:1] != b'"':
        return None
    try:
        return _RAW_DICT.decode(doc["data"])
    except msgspec.ValidationError:  # a valid JSON value that is not an object
        return None


class Parsed(Struct):
    """What the decoder read (no wire Struct holds a flat tool dict): the top-level members
    (the residue member set aside) and, for the interim envelope, its ``data`` split apart."""

    top: dict[str, Raw]
    interim: bool = False
    """Shape B (:func:`interim_data`); shape A otherwise."""
    data: dict[str, Raw] | None = None
    """Shape B: ``data`` without ``_meta`` and ``_warnings`` (the payload)."""
    meta: Raw | None = None
    """Shape B: ``data._meta``, not yet validated (``None`` when absent or ``null``)."""
    warnings: Raw | None = None
    """Shape B: ``data._warnings``, not yet validated (``None`` when absent or ``null``)."""


def _top_member(path: str) -> str:
    """The key of the top-level member JSON path ``path`` names (a flat dict has no other place)."""
    segs = parse_path(path)
    if len(segs) != 1 or not isinstance(segs[0], str):
        raise EnvglotError(f"{NAME}'s residue place must be a top-level member, not {path}", dialect=NAME)
    return segs[0]


_RESIDUE_KEY = _top_member(SHAPE.residue)


class _Decoder:
    """``decode(buf) -> (Parsed, (), residue)``: the top level as raw members (and the interim
    ``data`` one level further); every check on the members is a reading step."""

    __slots__ = ()

    def decode(
        self, buf: bytes | memoryview | str, members: dict[str, Raw] | None = None
    ) -> tuple[Parsed, tuple[c.Extra, ...], Raw | None]:
        """``members``: the top level of ``buf`` when the caller has decoded it (not changed here)."""
        if members is not None:
            doc = dict(members)
        else:
            try:
                doc = _RAW_DICT.decode(buf)
            except msgspec.ValidationError:
                raise ParseError("a legacy-v1 response must be a JSON object", path="$", dialect=NAME) from None
            except msgspec.DecodeError as exc:
                raise ParseError(f"invalid JSON: {exc}", path="$", dialect=NAME) from None
        residue = doc.pop(_RESIDUE_KEY, None)
        data = interim_data(doc)
        if data is None:
            return Parsed(doc), (), residue
        meta = _present(data.pop("_meta", None))
        warnings = _present(data.pop("_warnings", None))
        return Parsed(doc, True, data, meta, warnings), (), residue


def _present(raw: Raw | None) -> Raw | None:
    """A reserved member as read: ``null`` (a Python emitter's ``None``) is absent."""
    return None if raw is None or raw == RAW_NULL else raw


_DEC = _Decoder()
_NO_META = InterimMeta()
"""``_meta`` of a document without one (shape A included): every member ``None``."""


# --- reading ---------------------------------------------------------------------------


def _bool(doc: dict[str, Raw], key: str) -> bool:
    try:
        return _BOOL.decode(doc[key])
    except msgspec.ValidationError:
        raise ParseError(f"{key} must be a boolean", path=f"$.{key}", dialect=NAME) from None


def _error(w: Parsed) -> str | None:
    raw = w.top.get("error")
    if raw is None:
        return None
    try:
        return _STR.decode(raw)
    except msgspec.ValidationError:
        raise ParseError("error must be a string or null", path="$.error", dialect=NAME) from None


def _ok(w: Parsed, error: str | None, ctx: Context) -> bool:
    """A non-empty ``error`` is a failure whatever ``success`` says (the failure wins: a
    ``success: true`` beside it is reported); else an explicit ``success`` (always there in
    shape B) decides; else a success."""
    flag = _bool(w.top, "success") if "success" in w.top else None
    if error:
        if flag:
            ctx.report.add(
                Kind.STATUS_MISMATCH,
                "$.error",
                NAME,
                conflict="success is true but error is set",
                resolved="the failure wins",
            )
        return False
    return flag is None or flag is _SUCCEEDS["success"]


@common(When("w.warnings", "is", None), value=Const(()))
def _warnings(w: Parsed) -> tuple[c.Notice, ...]:
    """Shape B's ``data._warnings``."""
    if w.warnings is None:
        return ()
    try:
        return tuple(c.Notice(message=s) for s in _STRS.decode(w.warnings))
    except msgspec.ValidationError:
        raise ParseError("_warnings must be a list of strings", path="$.data._warnings", dialect=NAME) from None


def _texts(w: Parsed) -> list[str] | None:
    """The fused form of :func:`_warnings` (``Reading.texts``): ``data._warnings`` when it is a
    non-empty list of strings (anything else: the step reads it, refusing what it must)."""
    if w.warnings is None:
        return None
    try:
        return _STRS.decode(w.warnings) or None
    except msgspec.ValidationError:
        return None


@common(When("w.meta", "is", None), value=Const(_NO_META))
def _meta(w: Parsed) -> InterimMeta:
    if w.meta is None:
        return _NO_META
    try:
        return _meta_decoder().decode(w.meta)
    except msgspec.ValidationError as exc:
        raise ParseError(f"bad _meta: {exc}", path="$.data._meta", dialect=NAME) from None


def _payload(w: Parsed) -> Raw:
    """Shape B: ``data`` without the reserved keys. Shape A: every top-level key but
    ``success``, ``error`` and ``schema_version``."""
    if w.data is not None:
        return Raw(_ENC.encode(w.data)) if w.data else RAW_EMPTY_OBJECT
    rest = dict(w.top)
    for key in _NOT_PAYLOAD:
        rest.pop(key, None)
    return Raw(_ENC.encode(rest)) if rest else RAW_EMPTY_OBJECT


@common(When("meta.pagination", "is", None))
def _pagination(meta: InterimMeta) -> c.Pagination | None:
    pg = meta.pagination
    if pg is None:
        return None
    return c.Pagination(offset=pg.offset, limit=pg.limit, total=pg.total, has_more=pg.has_more)


@common(When("ok", "truthy"), value=Const(()))
def _problems(ok: bool, error: str | None, dmap: DialectMap, ctx: Context) -> tuple[c.Problem, ...]:
    """A failure's one problem: no native code (the table's default category), ``error`` its message."""
    if ok:
        return ()
    return (read_problem(dmap, None, ctx, "$.error", message=error or ""),)


def _wire_failure(ok: bool, error: str | None) -> WireFailure | None:
    """The fused form of :func:`_problems` (``Reading.failure``): a failure's message, no code (its
    plan is the table's default category, :class:`~envglot.codes.FailurePlans`)."""
    return None if ok else WireFailure(None, message=error or "")


def _extras(w: Parsed, meta: InterimMeta, extras: tuple[c.Extra, ...]) -> tuple[c.Extra, ...]:
    """The version markers (``data._meta.version``, ``schema_version``) are kept as unknown fields."""
    if meta.version is not None:
        return (*extras, c.Extra(dialect=NAME, path="$.data._meta.version", value=Raw(_ENC.encode(meta.version))))
    sv = w.top.get("schema_version")
    return extras if sv is None else (*extras, c.Extra(dialect=NAME, path="$.schema_version", value=sv))


READING = Reading(
    _DEC,
    Let("error", _error),
    Let("ok", _ok),
    Let("warnings", _warnings),
    Let("meta", _meta, wire="$.data._meta"),
    Let("payload", _payload, pure=True),
    Let("pagination", _pagination, pure=True),
    Let("problems", _problems),
    Let("extras", _extras, pure=True),
    derive=True,  # duration_ms: a plain move of [fields] (from data._meta)
    failure=_wire_failure,
    texts=_texts,
    checks=_CHECKS,
    succeeds=_SUCCEEDS,
    fails=_FAILS,
)


def write(env: c.Envelope, ctx: Context) -> bytes:
    """legacy-v1 is a read-only source dialect."""
    raise EnvglotError("legacy-v1 is a read-only source dialect; it cannot be written", dialect=NAME)


class LegacyInterimData(Struct):
    """``data`` of the interim envelope: the payload plus the reserved ``_meta``/``_warnings`` keys."""

    meta: InterimMeta | None = msgspec.field(default=None, name="_meta")
    warnings: list[str] | None = msgspec.field(default=None, name="_warnings")


class LegacyV1Envelope(Struct):
    """A legacy foundry-mcp response: a flat per-tool dict, or the interim ``{success, data, error}``."""

    success: bool | None = None
    found: bool | None = None
    error: str | None = None
    schema_version: str | None = None
    data: Annotated[LegacyInterimData | None, Rule(kind="any")] = None
    """The interim envelope's; in a flat dict, a payload member like any other."""


def invariants(d: dict[str, Any], c: Checker, m: Mappings) -> None:
    """The interim envelope (exactly ``success``, ``data`` and ``error``, ``data`` an object):
    ``data`` holds the reserved ``_meta`` and ``_warnings``."""
    data = d.get("data")
    if d.keys() == _INTERIM_KEYS and isinstance(data, dict):
        c.wire(data, LegacyInterimData, "$.data")


KEYS = frozenset(LegacyV1Envelope.__struct_encode_fields__)
"""The keys the reader interprets (no wire Struct decodes a flat dict, so ``WIRE`` is unset)."""


def contract(d: dict[str, Any], c: Checker, m: Mappings) -> None:
    """:class:`LegacyV1Envelope` read as a contract, then :func:`invariants`."""
    c.wire(d, LegacyV1Envelope)
    invariants(d, c, m)


def failed(doc: bytes) -> bool:
    """``success: false``; without ``success``, a non-empty ``error`` string (as the reading decides)."""
    top = Dialect.top_members(doc)
    if "success" in top:
        return bytes(top["success"]) == b"false"
    err = top.get("error")
    return err is not None and memoryview(err)[:1] == b'"' and bytes(err) != b'""'


def schema_type() -> type[Struct]:
    """Free-form dicts have no wire Struct: the schema names the keys the reader interprets."""
    return LegacyV1Envelope
