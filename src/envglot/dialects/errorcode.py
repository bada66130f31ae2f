"""errorcode (TuitBot Session 05 contract): typed ErrorCode enum, ``retryable`` derived from the code."""

from __future__ import annotations

import msgspec
from msgspec import Raw, Struct

from .. import canonical as c
from ..context import Context, missing_problem, problem_message, read_problem, report_losses, whole_ms, write_code
from ..diagnostics import Kind
from ..errors import ParseError
from ..excerpt import quoted
from ._common import RAW_EMPTY_OBJECT, RAW_NULL, WireDecoder, count_for

__all__ = ["DESCRIPTION", "NAME", "Envelope", "MetaPagination", "ToolError", "ToolMeta", "read", "write"]

NAME = "errorcode"
DESCRIPTION = "Session 05 contract: success/data/error{code,message,retryable}/meta{tool_version,elapsed_ms}"
NATIVE_INDENT = 2
"""``style="native"``: how the real emitter prints (serde_json::to_string_pretty); negative = minified."""
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


_DEC = WireDecoder(Envelope, NAME, "$._envglot")
_ENC = msgspec.json.Encoder()


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
        row = dmap.codes[code]
        retryable = bool(row.retryable)
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
