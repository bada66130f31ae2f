"""Contract checks: every way a document breaks its dialect's specification, with JSON paths.

:func:`validate` runs two passes over one document:

1. the contract checks of this module, on the decoded JSON tree, which look at every
   field, so *all* violations are listed (the specs' required fields and types, and the
   invariants the specs state: dotbot ``status`` computed from ``errors``/``warnings``,
   errorcode ``retryable`` derived from the code, response-v2 ``error`` null iff
   ``success`` and ``meta.version`` first, code-graph ``version`` "1.0" and
   ``approxTokens`` as the emitter computes it, ...);
2. the dialect's reader, as a backstop: an error it raises (a :class:`~envglot.errors.ParseError`),
   and its ``status_mismatch`` diagnostics (plus ``code_unknown`` for errorcode, a closed
   enum), become violations unless pass 1 already flagged the same place.

An MCP ``CallToolResult`` is unwrapped when the dialect is detected; violation paths are
then relative to the envelope inside it, and ``$.isError`` is checked against the
envelope's own outcome.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import msgspec

from .api import _locate, _to_bytes
from .context import Context
from .diagnostics import DISCARD, Kind, Report
from .dialects import get_dialect
from .dialects._common import is_timestamp
from .dialects.code_graph import counted_tokens
from .dialects.response_v2 import REQUEST_ID as V2_REQUEST_ID
from .errors import EnvglotError
from .excerpt import excerpt
from .limits import MAX_DEPTH, OUTPUT_DEPTH_MARGIN, check_input
from .mappings import Mappings, mappings_for

__all__ = ["Violation", "validate"]


class Violation(msgspec.Struct, frozen=True):
    """One way a document breaks its dialect's contract."""

    path: str
    """JSON path of the offending value (``$.audit.duration_ms``); for a missing field, where it belongs."""
    message: str
    dialect: str | None = None
    """The dialect whose contract is broken (``None`` when the document is not even JSON)."""

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


_MISSING: Any = object()
_DEPTH = MAX_DEPTH + OUTPUT_DEPTH_MARGIN
"""envglot's own outputs may nest a few levels deeper than its inputs (``limits.OUTPUT_DEPTH_MARGIN``)."""
_ANY = msgspec.json.Decoder(float_hook=Decimal)
"""Numbers beyond a float's range (``1e400``) are valid JSON: they are checked as Decimals."""
_ENC = msgspec.json.Encoder()
_SEMVER = re.compile(r"\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]*)?")
_V2_REQUEST_ID = V2_REQUEST_ID
_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float | Decimal) and not isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "any": lambda v: True,
}


def _int(text: str) -> int | Decimal:
    """A JSON integer: a Python int while Python prints it, else a Decimal (as exact)."""
    return int(text) if len(text) < 4000 else Decimal(text)


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float | Decimal):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{key!r}]"


def _related(a: str, b: str) -> bool:
    """True if one path is the other or lies inside it."""
    if a == b:
        return True
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return long.startswith(short) and long[len(short)] in ".["


class _Checker:
    """Collects violations of one document; helpers check one field each."""

    def __init__(self, dialect: str, document: bytes = b"") -> None:
        self.dialect = dialect
        self.document = document
        """The document's bytes, for rules on what is sent (code-graph ``approxTokens``)."""
        self.violations: list[Violation] = []

    def add(self, path: str, message: str) -> None:
        self.violations.append(Violation(path, message, self.dialect))

    def field(
        self,
        obj: dict[str, Any],
        key: str,
        path: str,
        kind: str,
        *,
        required: bool = True,
        nullable: bool = False,
    ) -> Any:
        """``obj[key]`` if present and of JSON type ``kind`` (``_MISSING`` otherwise, after reporting)."""
        p = _join(path, key)
        if key not in obj:
            if required:
                self.add(p, f"missing required field (expected {_article(kind)})")
            return _MISSING
        v = obj[key]
        if v is None and nullable:
            return None
        if not _JSON_TYPES[kind](v):
            self.add(p, f"expected {_article(kind)}{' or null' if nullable else ''}, got {_type_name(v)}")
            return _MISSING
        return v

    def optional(self, obj: dict[str, Any], key: str, path: str, kind: str) -> Any:
        """An optional field (absent or null allowed)."""
        return self.field(obj, key, path, kind, required=False, nullable=True)

    def const(self, obj: dict[str, Any], key: str, path: str, value: str) -> None:
        v = self.field(obj, key, path, "string")
        if isinstance(v, str) and v != value:
            self.add(_join(path, key), f"must be {value!r}, got {v!r}")

    def enum(self, obj: dict[str, Any], key: str, path: str, values: Sequence[str], *, required: bool = True) -> Any:
        v = self.field(obj, key, path, "string", required=required, nullable=not required)
        if isinstance(v, str) and v not in values:
            self.add(_join(path, key), f"must be one of {', '.join(map(repr, values))}, got {v!r}")
            return _MISSING
        return v

    def non_negative(self, obj: dict[str, Any], key: str, path: str, kind: str, *, required: bool = True) -> Any:
        v = self.field(obj, key, path, kind, required=required, nullable=not required)
        if isinstance(v, int | float | Decimal) and v < 0:
            self.add(_join(path, key), f"must not be negative, got {v}")
        return v

    def timestamp(self, obj: dict[str, Any], key: str, path: str, *, utc: bool) -> None:
        v = self.field(obj, key, path, "string")
        if not isinstance(v, str):
            return
        if not is_timestamp(v):
            self.add(_join(path, key), f"expected an ISO 8601 date-time with a time zone, got {v!r}")
        elif utc and not (v.endswith("Z") or v.endswith("+00:00")):
            self.add(_join(path, key), f"expected a UTC time stamp (ending in Z), got {v!r}")

    def strings(self, obj: dict[str, Any], key: str, path: str) -> None:
        """An optional array of strings."""
        items = self.optional(obj, key, path, "array")
        if isinstance(items, list):
            p = _join(path, key)
            for i, s in enumerate(items):
                if not isinstance(s, str):
                    self.add(_join(p, i), f"expected a string, got {_type_name(s)}")

    def objects(self, obj: dict[str, Any], key: str, path: str, *, required: bool) -> list[tuple[str, dict[str, Any]]]:
        """The (path, object) entries of an array of objects; reports non-object entries."""
        items = self.field(obj, key, path, "array", required=required, nullable=not required)
        out: list[tuple[str, dict[str, Any]]] = []
        if isinstance(items, list):
            p = _join(path, key)
            for i, item in enumerate(items):
                if isinstance(item, dict):
                    out.append((_join(p, i), item))
                else:
                    self.add(_join(p, i), f"expected an object, got {_type_name(item)}")
        return out


def _article(kind: str) -> str:
    return {"any": "a value", "array": "an array", "integer": "an integer", "object": "an object"}.get(
        kind, f"a {kind}"
    )


# --- dotbot ------------------------------------------------------------------------------


def _dotbot_issue(c: _Checker, issue: dict[str, Any], path: str) -> None:
    c.field(issue, "code", path, "string")
    c.field(issue, "message", path, "string")
    c.optional(issue, "path", path, "string")
    c.optional(issue, "details", path, "object")


def _dotbot(d: dict[str, Any], c: _Checker, m: Mappings) -> None:
    from .dialects.dotbot import SCHEMA_ID

    c.const(d, "schema_id", "$", SCHEMA_ID)
    c.field(d, "tool", "$", "string")
    version = c.field(d, "version", "$", "string")
    if isinstance(version, str) and not _SEMVER.fullmatch(version):
        c.add("$.version", f"expected a semantic version (major.minor.patch), got {version!r}")
    status = c.enum(d, "status", "$", ("ok", "warning", "error"))
    c.field(d, "summary", "$", "string")
    c.field(d, "data", "$", "object")
    warnings = c.field(d, "warnings", "$", "array")
    if isinstance(warnings, list):
        for i, w in enumerate(warnings):
            if isinstance(w, dict):
                _dotbot_issue(c, w, f"$.warnings[{i}]")
            elif not isinstance(w, str):
                c.add(f"$.warnings[{i}]", f"expected a string or an object, got {_type_name(w)}")
    errors = c.objects(d, "errors", "$", required=True)
    for p, e in errors:
        _dotbot_issue(c, e, p)
    if isinstance(status, str) and isinstance(warnings, list) and isinstance(d.get("errors"), list):
        computed = "error" if d["errors"] else "warning" if warnings else "ok"
        if computed != status:
            c.add("$.status", f"status {status!r} disagrees with errors/warnings (computed {computed!r})")
    audit = c.field(d, "audit", "$", "object")
    if isinstance(audit, dict):
        c.timestamp(audit, "timestamp", "$.audit", utc=True)
        c.non_negative(audit, "duration_ms", "$.audit", "integer")
        c.field(audit, "source", "$.audit", "string")
        for key in ("host", "correlation_id", "write_to"):
            c.optional(audit, key, "$.audit", "string")
    intent = c.optional(d, "intent", "$", "object")
    if isinstance(intent, dict):
        c.optional(intent, "recommended_next", "$.intent", "string")
        c.optional(intent, "reason", "$.intent", "string")
        c.optional(intent, "parameters", "$.intent", "object")
    for p, a in c.objects(d, "actions", "$", required=False):
        for key in ("id", "type", "label"):  # the standard defines an action by them
            c.field(a, key, p, "string")
        for key in ("reason", "tool"):
            c.optional(a, key, p, "string")
        c.optional(a, "parameters", p, "object")


# --- errorcode ---------------------------------------------------------------------------


def _errorcode(d: dict[str, Any], c: _Checker, m: Mappings) -> None:
    from .dialects.errorcode import TOOL_VERSION

    success = c.field(d, "success", "$", "boolean")
    c.field(d, "data", "$", "any")
    if success is True and "error" in d:
        c.add("$.error", "error must be omitted when success is true")
    elif success is False:
        error = c.field(d, "error", "$", "object")
        if isinstance(error, dict):
            codes = m["errorcode"].codes
            code = c.field(error, "code", "$.error", "string")
            if isinstance(code, str) and code not in codes:
                c.add("$.error.code", f"{code!r} is not an ErrorCode variant")
            c.field(error, "message", "$.error", "string")
            retryable = c.field(error, "retryable", "$.error", "boolean")
            row = codes.get(code) if isinstance(code, str) else None
            if row is not None and isinstance(retryable, bool):
                derived = row.retryable if row.retryable is not None else m.default_retryable(row.category)
                if derived != retryable:
                    c.add(
                        "$.error.retryable",
                        f"retryable is derived from the code: {code!r} means retryable={str(derived).lower()}",
                    )
            c.optional(error, "rate_limit_reset", "$.error", "string")
            c.non_negative(error, "retry_after_ms", "$.error", "integer", required=False)
            c.optional(error, "policy_decision", "$.error", "string")
    meta = c.optional(d, "meta", "$", "object")
    if isinstance(meta, dict):
        c.const(meta, "tool_version", "$.meta", TOOL_VERSION)
        c.non_negative(meta, "elapsed_ms", "$.meta", "integer")
        c.optional(meta, "mode", "$.meta", "string")
        c.optional(meta, "approval_mode", "$.meta", "boolean")
        if ("mode" in meta) != ("approval_mode" in meta):
            c.add("$.meta", "mode and approval_mode come together (workflow profile) or not at all (API profile)")
        pg = c.optional(meta, "pagination", "$.meta", "object")
        if isinstance(pg, dict):
            # PaginationInfo {next_token: Option<String>, result_count: u32, has_more: bool}
            c.optional(pg, "next_token", "$.meta.pagination", "string")
            c.non_negative(pg, "result_count", "$.meta.pagination", "integer")
            c.field(pg, "has_more", "$.meta.pagination", "boolean")
        c.optional(meta, "correlation_id", "$.meta", "string")


# --- response-v2 -------------------------------------------------------------------------

_V2_TOP = ("success", "data", "error", "meta")
_V2_FIDELITY = ("full", "partial", "summary", "reference_only")
_V2_SEVERITY = ("info", "warning", "error")


def _response_v2(d: dict[str, Any], c: _Checker, m: Mappings) -> None:
    from .dialects.response_v2 import VERSION

    for key in d:
        if key not in _V2_TOP:
            c.add(_join("$", key), "unknown top-level key (response-v2 allows only success, data, error, meta)")
    success = c.field(d, "success", "$", "boolean")
    data = c.field(d, "data", "$", "object")
    if "error" not in d:
        c.add("$.error", "missing required field (null on success, a message on failure)")
    elif success is True and d["error"] is not None:
        c.add("$.error", f"error must be null when success is true, got {_type_name(d['error'])}")
    elif success is False and not (isinstance(d["error"], str) and d["error"]):
        c.add("$.error", "error must be a non-empty string when success is false")
    if success is False and isinstance(data, dict):
        for key in ("error_code", "error_type", "remediation"):
            c.optional(data, key, "$.data", "string")
        c.optional(data, "details", "$.data", "object")
        c.non_negative(data, "retry_after_seconds", "$.data", "number", required=False)
    meta = c.field(d, "meta", "$", "object")
    if not isinstance(meta, dict):
        return
    c.const(meta, "version", "$.meta", VERSION)
    if success is False and isinstance(data, dict):
        for key in ("error_code", "error_type", "remediation"):  # read from meta when data lacks them
            if key not in data:
                c.optional(meta, key, "$.meta", "string")
    if meta and "version" in meta and next(iter(meta)) != "version":
        c.add("$.meta.version", "meta.version must be the first key of meta")
    rid = c.optional(meta, "request_id", "$.meta", "string")
    if isinstance(rid, str) and not _V2_REQUEST_ID.fullmatch(rid):
        c.add("$.meta.request_id", f"expected letters, digits, '_' or '-' only, got {rid!r}")
    c.strings(meta, "warnings", "$.meta")
    for p, w in c.objects(meta, "warning_details", "$.meta", required=False):
        c.field(w, "message", p, "string")
        c.optional(w, "code", p, "string")
        c.enum(w, "severity", p, _V2_SEVERITY, required=False)
        c.optional(w, "context", p, "object")
    pg = c.optional(meta, "pagination", "$.meta", "object")
    if isinstance(pg, dict):
        c.optional(pg, "cursor", "$.meta.pagination", "string")
        c.optional(pg, "has_more", "$.meta.pagination", "boolean")
        for key in ("page_size", "total_count", "offset", "limit"):
            c.non_negative(pg, key, "$.meta.pagination", "integer", required=False)
    c.optional(meta, "rate_limit", "$.meta", "object")
    telemetry = c.optional(meta, "telemetry", "$.meta", "object")
    if isinstance(telemetry, dict):
        c.non_negative(telemetry, "duration_ms", "$.meta.telemetry", "number", required=False)
    c.enum(meta, "content_fidelity", "$.meta", _V2_FIDELITY, required=False)
    c.optional(meta, "content_fidelity_schema_version", "$.meta", "string")
    c.strings(meta, "dropped_content_ids", "$.meta")
    c.optional(meta, "content_archive_hashes", "$.meta", "object")


# --- code-graph --------------------------------------------------------------------------


def _code_graph(d: dict[str, Any], c: _Checker, m: Mappings) -> None:
    from .dialects.code_graph import VERSION

    success = c.field(d, "success", "$", "boolean")
    data = c.field(d, "data", "$", "object")
    if not isinstance(data, dict):
        return
    c.field(data, "tool", "$.data", "string")
    c.const(data, "version", "$.data", VERSION)
    c.field(data, "requestId", "$.data", "string")
    c.timestamp(data, "generatedAt", "$.data", utc=False)
    ws = c.field(data, "workspace", "$.data", "object")
    if isinstance(ws, dict):
        c.field(ws, "root", "$.data.workspace", "string")
        c.field(ws, "repoName", "$.data.workspace", "string")
        c.optional(ws, "rev", "$.data.workspace", "string")
    result = c.field(data, "result", "$.data", "any")
    if success is False and result is not _MISSING:
        if not isinstance(result, dict):
            c.add("$.data.result", f"an error result must be an object with an error member, got {_type_name(result)}")
        else:
            err = c.field(result, "error", "$.data.result", "object")
            if isinstance(err, dict):
                c.field(err, "code", "$.data.result.error", "string")
                c.field(err, "message", "$.data.result.error", "string")
                c.optional(err, "details", "$.data.result.error", "object")
    meta = c.field(data, "meta", "$.data", "object")
    if not isinstance(meta, dict):
        return
    tokens = c.non_negative(meta, "approxTokens", "$.data.meta", "integer")
    c.field(meta, "truncated", "$.data.meta", "boolean")
    c.field(meta, "limits", "$.data.meta", "object")
    for p, s in c.objects(meta, "nextQuerySuggestion", "$.data.meta", required=False):
        c.field(s, "tool", p, "string")
        c.field(s, "args", p, "object")
        c.optional(s, "reason", p, "string")
    page = c.optional(meta, "page", "$.data.meta", "object")
    if isinstance(page, dict):
        c.optional(page, "cursor", "$.data.meta.page", "string")
        c.field(page, "hasMore", "$.data.meta.page", "boolean")
        c.non_negative(page, "total", "$.data.meta.page", "integer", required=False)
    if isinstance(tokens, int):
        expected = counted_tokens(c.document)
        if tokens != expected:
            c.add(
                "$.data.meta.approxTokens",
                f"approxTokens is {tokens}; the emitter computes {expected} "
                "(ceil(length of the compact envelope with approxTokens 0 / 4))",
            )


# --- result ------------------------------------------------------------------------------

_RESULT_FAILURE_ONLY = ("error", "error_type", "error_data", "exception_type", "exception_message")


def _result(d: dict[str, Any], c: _Checker, m: Mappings) -> None:
    success = c.field(d, "success", "$", "boolean")
    if success is True:
        for key in _RESULT_FAILURE_ONLY:
            if key in d:
                c.add(_join("$", key), f"a success carries no {key}")
    elif success is False:
        if "value" in d:
            c.add("$.value", "a failure carries no value")
        for key in ("error", "error_type"):
            if key not in d:
                c.add(_join("$", key), "missing required field (a failure always carries error and error_type)")
            else:
                c.optional(d, key, "$", "string")
        error_data = c.optional(d, "error_data", "$", "object")
        if error_data == {}:
            c.add("$.error_data", "an empty error_data is never emitted (Result.to_json() writes it only when truthy)")
        c.optional(d, "exception_type", "$", "string")
        c.optional(d, "exception_message", "$", "string")
        if ("exception_type" in d) != ("exception_message" in d):
            c.add("$", "exception_type and exception_message come together")
    for key in ("message", "instruction", "disposition", "additional_agent_instructions"):
        c.optional(d, key, "$", "string")


# --- legacy-v1 ---------------------------------------------------------------------------


def _legacy_v1(d: dict[str, Any], c: _Checker, m: Mappings) -> None:
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


_CHECKS: dict[str, Callable[[dict[str, Any], _Checker, Mappings], None]] = {
    "dotbot": _dotbot,
    "errorcode": _errorcode,
    "response-v2": _response_v2,
    "code-graph": _code_graph,
    "result": _result,
    "legacy-v1": _legacy_v1,
}
_READER_KINDS: dict[str, frozenset[Kind]] = {"errorcode": frozenset({Kind.STATUS_MISMATCH, Kind.CODE_UNKNOWN})}
_DEFAULT_READER_KINDS = frozenset({Kind.STATUS_MISMATCH})


def _reader_pass(buf: bytes, name: str, m: Mappings, c: _Checker) -> bool | None:
    """Run the dialect reader; add what it finds that the checks did not. Returns the outcome."""
    mod = get_dialect(name)
    report = Report("ignore")
    found: list[Violation] = []
    ok: bool | None = None
    try:
        ok = mod.read(buf, Context(m, report, m[name])).ok
    except EnvglotError as exc:
        found.append(Violation(exc.path or "$", exc.message, name))
    kinds = _READER_KINDS.get(name, _DEFAULT_READER_KINDS)
    found += [Violation(dg.path, dg.message, name) for dg in report.diagnostics if dg.kind in kinds]
    mine = list(c.violations)
    for v in found:
        if not any(_related(v.path, w.path) for w in mine):
            c.violations.append(v)
    return ok


def _mappings(m: Sequence[str | os.PathLike[str]] | Mappings | None) -> Mappings:
    return m if isinstance(m, Mappings) else mappings_for(m)


def validate(
    data: bytes | str | dict[str, Any],
    dialect: str | None = None,
    mappings: Sequence[str | os.PathLike[str]] | Mappings | None = None,
) -> list[Violation]:
    """Every violation of its dialect's contract in one document (empty list: valid).

    Args:
        data: the document (JSON bytes or text, or an already-parsed dict).
        dialect: the dialect to check against; detected when ``None`` (an MCP
            CallToolResult is then unwrapped and its ``isError`` checked too).
        mappings: overlay TOML files, or a prebuilt :class:`~envglot.mappings.Mappings`
            (the code tables decide which errorcode codes exist and what they imply).

    Raises:
        UnknownDialectError: ``dialect`` is not a dialect name.
        MappingError: an overlay is invalid.
    """
    m = _mappings(mappings)
    name = get_dialect(dialect).NAME if dialect is not None else None
    is_error: bool | None = None
    try:
        buf, bom = check_input(_to_bytes(data), _DEPTH)
        if bom:
            return [Violation("$", "the document begins with a UTF-8 byte order mark", name)]
        if name is None:
            buf, found, is_error = _locate(buf, True, False, DISCARD, _DEPTH)
            name = found.dialect
    except EnvglotError as exc:
        return [Violation(exc.path or "$", exc.message, name)]
    try:
        doc = _ANY.decode(buf)
    except msgspec.DecodeError as exc:
        if "out of range" not in str(exc):
            return [Violation("$", f"invalid JSON: {exc}", name)]
        try:  # an integer past 4,300 digits is valid JSON; Python's parser can read it
            doc = json.loads(buf, parse_float=Decimal, parse_int=_int)
        except (ValueError, RecursionError) as exc2:
            return [Violation("$", f"invalid JSON: {excerpt(str(exc2))}", name)]
    except RecursionError:  # pragma: no cover - check_input bounds the depth first
        return [Violation("$", "nested too deeply", name)]
    c = _Checker(name, buf)
    if not isinstance(doc, dict):
        c.add("$", f"a {name} envelope must be a JSON object, got {_type_name(doc)}")
        return c.violations
    _CHECKS[name](doc, c, m)
    ok = _reader_pass(buf, name, m, c)
    if is_error is not None and ok is not None and is_error == ok:
        c.add(
            "$.isError",
            f"MCP isError={str(is_error).lower()} but the envelope says {'success' if ok else 'failure'}",
        )
    return c.violations
