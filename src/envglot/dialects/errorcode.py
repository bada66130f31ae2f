"""errorcode (TuitBot Session 05 contract): typed ErrorCode enum, ``retryable`` derived from the code."""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import Raw, Struct

from .. import canonical as c
from ..checker import Checker
from ..context import Context, missing_problem, problem_message, read_problem, report_losses, whole_ms, write_code
from ..diagnostics import Kind
from ..dialect import Dialect, Facts, Probe, Shape
from ..errors import ParseError
from ..excerpt import quoted
from ..mappings import Mappings
from ._common import RAW_EMPTY_OBJECT, RAW_NULL, WireDecoder, count_for

__all__ = ["NAME", "Envelope", "Errorcode", "MetaPagination", "ToolError", "ToolMeta", "read", "write"]

NAME = "errorcode"
SHAPE = Shape(closed=True)
"""A Rust enum: overlays may remap codes, never add them."""
TOOL_VERSION = "1.0"


class _Wire(Struct, forbid_unknown_fields=True, omit_defaults=True):
    pass


class ToolError(_Wire):
    code: str
    message: str
    retryable: bool
    rate_limit_reset: str | None = None
    retry_after_ms: int | None = None
    policy_decision: str | None = None


class MetaPagination(_Wire):
    next_token: str | None = None
    result_count: int | None = None
    has_more: bool | None = None


class ToolMeta(_Wire):
    tool_version: str
    elapsed_ms: int
    mode: str | None = None
    approval_mode: bool | None = None
    pagination: MetaPagination | None = None
    correlation_id: str | None = None


class Envelope(_Wire):
    """The errorcode envelope: ``error`` omitted on success, ``meta`` omitted when not attached."""

    success: bool
    data: Raw
    error: ToolError | None = None
    meta: ToolMeta | None = None


_DEC = WireDecoder(Envelope, NAME, SHAPE.residue)
_ENC = msgspec.json.Encoder()
_SUCCESS_KEYS = frozenset({"success", "data", "meta", "_envglot"})


def derived_retryable(code: str, m: Mappings) -> bool:
    """``retryable`` as the contract derives it from a known code (the problem plan: the row's
    own value, else its category's). The writer and the contract check share this one rule."""
    plan = m[NAME].plan(code)
    assert plan is not None  # a closed enum: the writer only writes known codes
    return plan.retryable


def read(buf: bytes | memoryview | str, ctx: Context) -> c.Envelope:
    """Read an errorcode envelope into the canonical model."""
    w, extras, residue = _DEC.decode(buf)
    dmap = ctx.mappings[NAME]
    payload: Raw | None = w.data
    problems: tuple[c.Problem, ...] = ()
    if w.success and w.error is not None:
        raise ParseError("error must be absent when success is true", path="$.error", dialect=NAME)
    if not w.success:
        if w.data == RAW_NULL:
            payload = None
        e = w.error
        if e is not None:
            row = dmap.codes.get(e.code)
            if row is not None and row.retryable is not None and row.retryable != e.retryable:
                ctx.report.add(
                    Kind.STATUS_MISMATCH,
                    "$.error.retryable",
                    f"retryable={str(e.retryable).lower()} contradicts the code {quoted(e.code)}; kept as stated",
                    NAME,
                )
            problems = (
                read_problem(
                    dmap,
                    e.code,
                    ctx,
                    "$.error.code",
                    retryable=e.retryable,
                    message=e.message,
                    rate_limit_reset=e.rate_limit_reset,
                    retry_after_ms=e.retry_after_ms,
                    policy_decision=e.policy_decision,
                ),
            )
    m = w.meta
    if m is None:
        return c.Envelope(ok=w.success, payload=payload, problems=problems, extras=extras, residue=residue)
    if m.tool_version != TOOL_VERSION:
        extras += (c.Extra(dialect=NAME, path="$.meta.tool_version", value=Raw(_ENC.encode(m.tool_version))),)
    pg = m.pagination
    return c.Envelope(
        ok=w.success,
        payload=payload,
        problems=problems,
        duration_ms=m.elapsed_ms,
        mode=m.mode,
        approval_mode=m.approval_mode,
        request_id=m.correlation_id,
        pagination=None
        if pg is None
        else c.Pagination(cursor=pg.next_token, has_more=pg.has_more, page_size=pg.result_count),
        extras=extras,
        residue=residue,
    )


def _pagination(pg: c.Pagination | None, ctx: Context) -> MetaPagination | None:
    """``meta.pagination`` only when it is complete, else ``None`` with the drop reported.

    TuitBot's ``PaginationInfo`` requires ``result_count`` (u32) and ``has_more`` (bool):
    its serde rejects a pagination without them, so an incomplete one is left out whole
    (``result_count`` is never guessed from the payload: which array it counts is unknowable).
    """
    if pg is None:
        return None
    if pg.page_size is not None and pg.page_size < 0:
        pg = msgspec.structs.replace(pg, page_size=count_for(pg.page_size, ctx, "pagination.page_size", NAME))
    if pg.page_size is not None and pg.has_more is not None:
        return MetaPagination(next_token=pg.cursor, result_count=pg.page_size, has_more=pg.has_more)
    lacking = " and ".join(k for k, v in (("result_count", pg.page_size), ("has_more", pg.has_more)) if v is None)
    for field in ("cursor", "has_more", "page_size"):
        if getattr(pg, field) is not None:
            ctx.dropped(f"pagination.{field}", NAME, what=f"pagination.{field} of a pagination without {lacking}")
    return None


def write(env: c.Envelope, ctx: Context) -> bytes:
    """Write the canonical envelope as errorcode (``retryable`` derived from the code)."""
    dmap = ctx.mappings[NAME]
    report_losses(env, dmap, ctx)
    error = None
    payload = env.payload
    if env.ok:
        data = payload if payload is not None else RAW_NULL
    else:
        data = payload if payload is not None and payload != RAW_EMPTY_OBJECT else RAW_NULL
        if env.problems:
            p = env.problems[0]
        else:
            p = missing_problem(env, ctx, dmap)
        code = write_code(p, dmap, ctx, 0)
        retryable = derived_retryable(code, ctx.mappings)
        if p.retryable is not None and p.retryable != retryable:
            ctx.report.add(
                Kind.RETRYABLE_CHANGED,
                ctx.path("problem.retryable", 0),
                f"errorcode derives retryable={str(retryable).lower()} from {quoted(code)}; "
                f"the source said {str(p.retryable).lower()}",
                NAME,
            )
        message = problem_message(p, env, ctx, dmap, 0)
        error = ToolError(
            code=code,
            message=message,
            retryable=retryable,
            rate_limit_reset=p.rate_limit_reset,
            retry_after_ms=count_for(p.retry_after_ms, ctx, "problem.retry_after_ms", NAME),
            policy_decision=p.policy_decision,
        )
    meta = None
    pg = _pagination(env.pagination, ctx)
    mode, approval = env.mode, env.approval_mode
    if (mode is None) != (approval is None):  # the contract's two profiles: both or neither
        lone = "mode" if mode is not None else "approval_mode"
        ctx.report.add(
            Kind.FIELD_DROPPED,
            ctx.path(lone),
            f"errorcode carries mode and approval_mode together or not at all; {lone} alone left out",
            NAME,
        )
        mode = approval = None
    if (
        env.duration_ms is not None
        or mode is not None
        or approval is not None
        or env.request_id is not None
        or pg is not None
    ):
        elapsed = whole_ms(env.duration_ms, dmap, ctx, "meta.elapsed_ms")
        meta = ToolMeta(
            tool_version=TOOL_VERSION,
            elapsed_ms=elapsed,
            mode=mode,
            approval_mode=approval,
            correlation_id=env.request_id,
            pagination=pg,
        )
    return _ENC.encode(Envelope(success=env.ok, data=data, error=error, meta=meta))


# --- contract ------------------------------------------------------------------------


def contract(d: dict[str, Any], c: Checker, m: Mappings) -> None:
    """Every way ``d`` breaks the contract, reported to ``c``."""
    success = c.field(d, "success", "$", "boolean")
    c.field(d, "data", "$", "any")
    if success is True and "error" in d:
        c.add("$.error", "error must be omitted when success is true")
    elif success is False:
        error = c.field(d, "error", "$", "object")
        if isinstance(error, dict):
            codes = m[NAME].codes
            code = c.field(error, "code", "$.error", "string")
            if isinstance(code, str) and code not in codes:
                c.add("$.error.code", f"{code!r} is not an ErrorCode variant")
            c.field(error, "message", "$.error", "string")
            retryable = c.field(error, "retryable", "$.error", "boolean")
            if isinstance(code, str) and code in codes and isinstance(retryable, bool):
                derived = derived_retryable(code, m)
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


def _coded(f: Facts) -> str | None:
    if not f.is_bool("success"):
        return None
    err = f.member("error")
    if err is not None and "code" in err:
        return "error.code"
    meta = f.member("meta")
    if meta is not None and ("tool_version" in meta or "elapsed_ms" in meta):
        return "meta.tool_version"
    return None


def _bare(f: Facts) -> str | None:
    """``{success, data[, meta]}``: errorcode's success shape (after response-v2's unmarked probe)."""
    ok = f.keys is not None and f.is_bool("success") and f.has("data") and not f.has("error")
    return "success" if ok and f.keys <= _SUCCESS_KEYS else None  # type: ignore[operator]


class Errorcode(Dialect):
    """The Session 05 contract."""

    name = NAME
    description = "Session 05 contract: success/data/error{code,message,retryable}/meta{tool_version,elapsed_ms}"
    shape = SHAPE
    native_indent = 2  # serde_json::to_string_pretty
    wire = Envelope
    probes = (
        Probe(60, _coded, "`success` plus an `error` object with a `code`, or `meta.tool_version`/`meta.elapsed_ms`"),
        Probe(100, _bare, "`success` and `data` (and maybe `meta`)"),
    )
    reader_kinds = frozenset({Kind.STATUS_MISMATCH, Kind.CODE_UNKNOWN})
    read = staticmethod(read)
    write = staticmethod(write)
    contract = staticmethod(contract)
