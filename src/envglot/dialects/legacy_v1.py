"""legacy-v1 (foundry-mcp before response-v2): flat per-tool dicts and the interim envelope. Read-only.

Shape A (released v1): the payload sits at the top level; the outcome is ``success``,
``found`` (not a failure by itself) or nothing; a failure is a top-level ``error`` string.
Shape B (interim, never released): ``{success, data, error}`` with ``data._meta`` and
``data._warnings``. Rules: ``docs/dialects/legacy-v1.md`` and ``docs/migration.md``.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import Raw, Struct

from .. import canonical as c
from ..checker import Checker
from ..context import Context, read_problem
from ..diagnostics import Kind
from ..dialect import Dialect, Facts, Probe, Shape
from ..errors import EnvglotError, ParseError
from ..mappings import Mappings
from ._common import RAW_EMPTY_OBJECT, RAW_NULL, raw_is_object

__all__ = ["NAME", "InterimMeta", "LegacyV1", "LegacyV1Envelope", "is_interim", "read", "write"]

NAME = "legacy-v1"
SHAPE = Shape(payload="object", writable=False)


class _Pagination(Struct, omit_defaults=True):
    offset: int | None = None
    limit: int | None = None
    total: int | None = None
    has_more: bool | None = None


class _Timing(Struct, omit_defaults=True):
    duration_ms: int | float | None = None


class InterimMeta(Struct, omit_defaults=True):
    """``data._meta`` of the interim envelope."""

    version: str | None = None
    pagination: _Pagination | None = None
    timing: _Timing | None = None


_RAW_DICT = msgspec.json.Decoder(dict[str, Raw])
_META = msgspec.json.Decoder(InterimMeta)
_STRS = msgspec.json.Decoder(list[str])
_STR = msgspec.json.Decoder(str | None)
_BOOL = msgspec.json.Decoder(bool)
_ENC = msgspec.json.Encoder()
_INTERIM_KEYS = frozenset({"success", "data", "error"})


def is_interim(doc: dict[str, Raw]) -> bool:
    """True for the interim ``{success, data, error}`` envelope (shape B)."""
    return (
        doc.keys() == _INTERIM_KEYS
        and raw_is_object(doc["data"])
        and (doc["error"] == RAW_NULL or memoryview(doc["error"])[:1] == b'"')
    )


def _bool(doc: dict[str, Raw], key: str) -> bool:
    try:
        return _BOOL.decode(doc[key])
    except msgspec.ValidationError:
        raise ParseError(f"{key} must be a boolean", path=f"$.{key}", dialect=NAME) from None


def _error(doc: dict[str, Raw]) -> str | None:
    raw = doc.get("error")
    if raw is None:
        return None
    try:
        return _STR.decode(raw)
    except msgspec.ValidationError:
        raise ParseError("error must be a string or null", path="$.error", dialect=NAME) from None


def read(buf: bytes | memoryview | str, ctx: Context) -> c.Envelope:
    """Read a legacy foundry response (shape A or B) into the canonical model."""
    try:
        doc = _RAW_DICT.decode(buf)
    except msgspec.ValidationError:
        raise ParseError("a legacy-v1 response must be a JSON object", path="$", dialect=NAME) from None
    except msgspec.DecodeError as exc:
        raise ParseError(f"invalid JSON: {exc}", path="$", dialect=NAME) from None
    dmap = ctx.mappings[NAME]
    residue = doc.pop("_envglot", None)
    error = _error(doc)
    extras: list[c.Extra] = []
    warnings: tuple[c.Notice, ...] = ()
    pagination = None
    duration = None
    if is_interim(doc):
        ok = _bool(doc, "success")
        data = _RAW_DICT.decode(doc["data"])
        meta_raw = data.pop("_meta", None)
        warn_raw = data.pop("_warnings", None)
        if warn_raw is not None:
            try:
                warnings = tuple(c.Notice(message=s) for s in _STRS.decode(warn_raw))
            except msgspec.ValidationError:
                raise ParseError("_warnings must be a list of strings", path="$.data._warnings", dialect=NAME) from None
        if meta_raw is not None:
            try:
                meta = _META.decode(meta_raw)
            except msgspec.ValidationError as exc:
                raise ParseError(f"bad _meta: {exc}", path="$.data._meta", dialect=NAME) from None
            if meta.version is not None:
                extras.append(c.Extra(dialect=NAME, path="$.data._meta.version", value=Raw(_ENC.encode(meta.version))))
            pg = meta.pagination
            if pg is not None:
                pagination = c.Pagination(offset=pg.offset, limit=pg.limit, total=pg.total, has_more=pg.has_more)
            if meta.timing is not None:
                duration = meta.timing.duration_ms
        payload = Raw(_ENC.encode(data)) if data else RAW_EMPTY_OBJECT
    else:
        if "success" in doc:
            ok = _bool(doc, "success")
        else:
            ok = not error
        rest = {k: v for k, v in doc.items() if k not in ("success", "error", "schema_version")}
        if "schema_version" in doc:
            extras.append(c.Extra(dialect=NAME, path="$.schema_version", value=doc["schema_version"]))
        payload = Raw(_ENC.encode(rest)) if rest else RAW_EMPTY_OBJECT
        if ok and error:
            ctx.report.add(
                Kind.STATUS_MISMATCH,
                "$.error",
                "success is true but error is set; the error is kept as a warning",
                NAME,
            )
            warnings = (c.Notice(message=error),)
    problems: tuple[c.Problem, ...] = ()
    if not ok:
        problems = (read_problem(dmap, None, ctx, "$.error", message=error or ""),)
    if not raw_is_object(payload):  # pragma: no cover - payload is always built from an object
        raise ParseError("payload must be an object", path="$", dialect=NAME)
    return c.Envelope(
        ok=ok,
        payload=payload,
        problems=problems,
        warnings=warnings,
        pagination=pagination,
        duration_ms=duration,
        extras=tuple(extras),
        residue=residue,
    )


def write(env: c.Envelope, ctx: Context) -> bytes:
    """legacy-v1 is a read-only source dialect."""
    raise EnvglotError("legacy-v1 is a read-only source dialect; it cannot be written", dialect=NAME)


# --- contract ------------------------------------------------------------------------


def contract(d: dict[str, Any], c: Checker, m: Mappings) -> None:
    """Every way ``d`` breaks the contract, reported to ``c``."""
    c.optional(d, "success", "$", "boolean")
    c.optional(d, "found", "$", "boolean")
    c.optional(d, "error", "$", "string")
    c.optional(d, "schema_version", "$", "string")
    if d.keys() != {"success", "data", "error"} or not isinstance(d.get("data"), dict):
        return
    data = d["data"]
    meta = c.optional(data, "_meta", "$.data", "object")
    if isinstance(meta, dict):
        c.optional(meta, "version", "$.data._meta", "string")
        pg = c.optional(meta, "pagination", "$.data._meta", "object")
        if isinstance(pg, dict):
            for key in ("offset", "limit", "total"):
                c.non_negative(pg, key, "$.data._meta.pagination", "integer", required=False)
            c.optional(pg, "has_more", "$.data._meta.pagination", "boolean")
        timing = c.optional(meta, "timing", "$.data._meta", "object")
        if isinstance(timing, dict):
            c.non_negative(timing, "duration_ms", "$.data._meta.timing", "number", required=False)
    c.strings(data, "_warnings", "$.data")


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
    data: LegacyInterimData | None = None


def _flagged(f: Facts) -> str | None:
    """The interim ``{success, data, error}`` with an object ``data`` and a null or string ``error``."""
    if f.keys != _INTERIM_KEYS or not f.is_bool("success") or not f.is_obj("data"):
        return None
    return "success" if f.equals("error", b"null") or f.starts("error", b'"') else None


def _flat(f: Facts) -> str | None:
    """A flat per-tool dict with an outcome flag: ``success``/``found`` boolean or an ``error`` string."""
    if f.is_bool("success"):
        return "success"
    if f.is_bool("found"):
        return "found"
    return "error" if f.starts("error", b'"') else None


class LegacyV1(Dialect):
    """foundry-mcp before response-v2 (read-only)."""

    name = NAME
    description = "foundry-mcp pre-v2 flat tool dicts and the interim unversioned envelope (read-only)"
    aliases = ("v1",)
    shape = SHAPE
    native_indent = 2  # FastMCP's default pretty JSON
    keys = frozenset(f.encode_name for f in msgspec.structs.fields(LegacyV1Envelope))
    probes = (
        Probe(80, _flagged, "the interim envelope: exactly `success`, `data` (an object) and `error` (string or null)"),
        Probe(
            110,
            _flat,
            "a flat tool dict with an outcome flag: `success` or `found` (a boolean), or a top-level `error` string",
        ),
    )
    fallback = True
    """Any other object is a marker-less flat dict: a bare payload (evidence ``None``)."""
    example_code = "EXAMPLE_NOT_READY"
    read = staticmethod(read)
    write = staticmethod(write)
    contract = staticmethod(contract)

    def failed(self, doc: bytes) -> bool:
        """``success: false``; without ``success``, a non-empty ``error`` string (as :func:`read` decides)."""
        try:
            top = _RAW_DICT.decode(doc)
        except msgspec.MsgspecError as exc:
            raise ParseError(f"the envelope's outcome cannot be read: {exc}", path="$") from None
        if "success" in top:
            return bytes(top["success"]) == b"false"
        err = top.get("error")
        return err is not None and memoryview(err)[:1] == b'"' and bytes(err) != b'""'

    def schema_type(self) -> type[Struct]:
        """Free-form dicts have no wire Struct: the schema names the keys the reader interprets."""
        return LegacyV1Envelope
