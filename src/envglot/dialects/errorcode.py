"""errorcode (TuitBot Session 05 contract): typed ErrorCode enum, ``retryable`` derived from the code."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Raw, Struct

from .. import canonical as c
from ..checker import Checker, Rule
from ..codes import Choice, FailurePlan, WireFailure, missing_problem, read_problem, write_plan, written_message
from ..context import Context, whole_ms
from ..diagnostics import Kind
from ..dialect import name_of, shape_of
from ..errors import ParseError
from ..excerpt import quoted
from ..fields import Build, Check, Const, Failure, Let, Reading, When, Writing, common
from ..mappings import DialectMap, Mappings
from ..wire import RAW_EMPTY_OBJECT, RAW_NULL, WireDecoder, count_for

__all__ = ["NAME", "READING", "WRITING", "Envelope", "MetaPagination", "ToolError", "ToolMeta"]

NAME = name_of(__name__)
SHAPE = shape_of(NAME)
TOOL_VERSION = "1.0"


class _Wire(Struct, forbid_unknown_fields=True, omit_defaults=True):
    pass


class ToolError(_Wire):
    code: str
    message: str
    retryable: bool
    rate_limit_reset: str | None = None
    retry_after_ms: Annotated[int | None, Rule(ge=0)] = None
    policy_decision: str | None = None


class MetaPagination(_Wire):
    """TuitBot's ``PaginationInfo {next_token: Option<String>, result_count: u32, has_more: bool}``
    (read even when incomplete; the contract requires the two)."""

    next_token: str | None = None
    result_count: Annotated[int | None, Rule(required=True, ge=0)] = None
    has_more: Annotated[bool | None, Rule(required=True)] = None


class ToolMeta(_Wire):
    tool_version: Annotated[str, Rule(const=TOOL_VERSION)]
    elapsed_ms: Annotated[int, Rule(ge=0)]
    mode: str | None = None
    approval_mode: bool | None = None
    pagination: MetaPagination | None = None
    correlation_id: str | None = None


class Envelope(_Wire):
    """The errorcode envelope: ``error`` omitted on success, ``meta`` omitted when not attached."""

    success: bool
    data: Raw
    error: Annotated[ToolError | None, Rule(by_outcome=True)] = None
    meta: ToolMeta | None = None


_DEC = WireDecoder(Envelope, NAME, SHAPE.residue)
_ENC = msgspec.json.Encoder()


def derived_retryable(code: str, m: Mappings) -> bool:
    """``retryable`` as the contract derives it from a known code (the problem plan: the row's
    own value, else its category's). The writer and the contract check share this one rule."""
    plan = m[NAME].plan(code)
    assert plan is not None  # a closed enum: the writer only writes known codes
    return plan.retryable


# --- reading ---------------------------------------------------------------------------


@common(When("w.error", "is", None))
def _no_error_on_success(w: Envelope) -> None:
    if w.success and w.error is not None:
        raise ParseError("error must be absent when success is true", path="$.error", dialect=NAME)


@common(When("w.success", "truthy"), value="w.data")
def _payload(w: Envelope) -> Raw | None:
    """A failure's ``data: null`` is no payload."""
    return None if not w.success and w.data == RAW_NULL else w.data


@common(When("w.error", "is", None), value=Const(()))
def _problems(w: Envelope, dmap: DialectMap, ctx: Context) -> tuple[c.Problem, ...]:
    e = w.error
    if w.success or e is None:
        return ()
    return (
        read_problem(
            dmap,
            e.code,
            ctx,
            "$.error.code",
            retryable=e.retryable,
            contradiction="$.error.retryable",
            message=e.message,
            rate_limit_reset=e.rate_limit_reset,
            retry_after_ms=e.retry_after_ms,
            policy_decision=e.policy_decision,
        ),
    )


def _wire_failure(w: Envelope) -> WireFailure | None:
    """The fused form of :func:`_problems` (``Reading.failure``): a failure's ``error``."""
    e = w.error
    if w.success or e is None:
        return None
    return WireFailure(
        e.code,
        e.retryable,
        message=e.message,
        rate_limit_reset=e.rate_limit_reset,
        retry_after_ms=e.retry_after_ms,
        policy_decision=e.policy_decision,
    )


@common(When("w.meta", "is not", None), When("w.meta.pagination", "is", None))
def _read_pagination(w: Envelope) -> c.Pagination | None:
    pg = None if w.meta is None else w.meta.pagination
    if pg is None:
        return None
    return c.Pagination(cursor=pg.next_token, has_more=pg.has_more, count=pg.result_count)


def _version_extra(w: Envelope, extras: tuple[c.Extra, ...]) -> tuple[c.Extra, ...]:
    """A ``tool_version`` other than the contract's is kept as an unknown field."""
    m = w.meta
    if m is None or m.tool_version == TOOL_VERSION:
        return extras
    return (*extras, c.Extra(dialect=NAME, path="$.meta.tool_version", value=Raw(_ENC.encode(m.tool_version))))


READING = Reading(
    _DEC,
    Check(_no_error_on_success),
    Let("payload", _payload, pure=True),
    Let("problems", _problems),
    Let("pagination", _read_pagination, pure=True),
    Let("extras", _version_extra, pure=True),
    derive=True,  # ok and the meta members duration_ms, mode, approval_mode, request_id: from [fields]
    failure=_wire_failure,
)


# --- writing ---------------------------------------------------------------------------


def _pagination(pg: c.Pagination | None, ctx: Context) -> MetaPagination | None:
    """``meta.pagination`` only when it is complete, else ``None`` with the drop reported.

    TuitBot's ``PaginationInfo`` requires ``result_count`` (u32) and ``has_more`` (bool):
    its serde rejects a pagination without them, so an incomplete one is left out whole
    (``result_count`` is never guessed from the payload: which array it counts is unknowable,
    nor taken from a requested page size, which is another fact).
    """
    if pg is None:
        return None
    if pg.count is not None and pg.count < 0:
        pg = msgspec.structs.replace(pg, count=count_for(pg.count, ctx, "pagination.count", NAME))
    if pg.count is not None and pg.has_more is not None:
        return MetaPagination(next_token=pg.cursor, result_count=pg.count, has_more=pg.has_more)
    lacking = " and ".join(k for k, v in (("result_count", pg.count), ("has_more", pg.has_more)) if v is None)
    for field in ("cursor", "has_more", "count"):
        if getattr(pg, field) is not None:
            ctx.dropped(f"pagination.{field}", NAME, what=f"pagination.{field} of a pagination without {lacking}")
    return None


@common(When("ok", "truthy"), When("payload", "is not", None), value="payload")
def _data(ok: bool, payload: Raw | None) -> Raw:
    """``data`` is required: ``null`` for none (and for a failure's empty object)."""
    if ok:
        return payload if payload is not None else RAW_NULL
    return payload if payload is not None and payload != RAW_EMPTY_OBJECT else RAW_NULL


@common(When("ok", "truthy"))
def _error(
    ok: bool, problems: tuple[c.Problem, ...], summary: str | None, ctx: Context, dmap: DialectMap
) -> ToolError | None:
    """The failure's one ``error`` (``retryable`` derived from the code, a change reported)."""
    if ok:
        return None
    p = problems[0] if problems else missing_problem(summary, ctx, dmap)
    chosen = write_plan(p, dmap, ctx, 0)
    return _tool_error(
        p, chosen, p.message, p.rate_limit_reset, p.retry_after_ms, p.policy_decision, summary, ctx, dmap
    )


def _planned_error(
    plan: FailurePlan, failure: WireFailure, summary: str | None, ctx: Context, dmap: DialectMap
) -> ToolError:
    """``error`` of a failure written from its code's plan (:class:`~envglot.fields.Failure`):
    what :func:`_error` writes, without a problem of its own."""
    f = failure
    return _tool_error(
        plan.problem,
        plan.choice,
        f.message,
        f.rate_limit_reset,
        f.retry_after_ms,
        f.policy_decision,
        summary,
        ctx,
        dmap,
    )


def _tool_error(
    p: c.Problem,
    chosen: Choice,
    message: str | None,
    rate_limit_reset: str | None,
    retry_after_ms: int | None,
    policy_decision: str | None,
    summary: str | None,
    ctx: Context,
    dmap: DialectMap,
) -> ToolError:
    """The ``error`` of ``p`` written as ``chosen`` says, its own fields given apart (a failure
    written from its plan has no problem of its own: ``p`` is then its code's row problem)."""
    code = chosen.code
    assert chosen.plan is not None  # a closed enum: the writer only writes known codes
    retryable = chosen.plan.retryable  # derived_retryable, from the one lookup
    # an unstated retryable is the category's default: a code that derives another flips it
    said = p.retryable
    if said is None and ctx.report.collecting:  # what its own code implies, else its category's default
        said = chosen.source_retryable
        said = ctx.mappings.default_retryable(p.category) if said is None else said
    if said is not None and said != retryable and ctx.report.collecting:
        stated = f"the source said {str(said).lower()}"
        if p.retryable is None:
            stated = f"the source stated none (its code's or {p.category}'s default: {str(said).lower()})"
        ctx.report.add(
            Kind.RETRYABLE_CHANGED,
            ctx.path("problem.retryable", 0),
            NAME,
            basis=f"code {quoted(code)}",
            value=str(retryable).lower(),
            stated=stated,
        )
    return ToolError(
        code=code,
        message=written_message(message, summary, ctx, dmap, 0),
        retryable=retryable,
        rate_limit_reset=rate_limit_reset,
        retry_after_ms=count_for(retry_after_ms, ctx, "problem.retry_after_ms", NAME),
        policy_decision=policy_decision,
    )


@common(
    When("duration_ms", "is", None),
    When("mode", "is", None),
    When("approval_mode", "is", None),
    When("request_id", "is", None),
    When("pagination", "is", None),
)
def _meta(
    duration_ms: int | float | None,
    mode: str | None,
    approval_mode: bool | None,
    request_id: str | None,
    pagination: c.Pagination | None,
    ctx: Context,
    dmap: DialectMap,
) -> ToolMeta | None:
    """``meta`` when anything goes in it (``tool_version`` and ``elapsed_ms`` are then required)."""
    pg = None if pagination is None else _pagination(pagination, ctx)
    if (mode is None) != (approval_mode is None):  # the contract's two profiles: both or neither
        lone = "mode" if mode is not None else "approval_mode"
        ctx.report.add(
            Kind.FIELD_DROPPED,
            ctx.path(lone),
            NAME,
            field=f"{lone} alone",
            because="errorcode carries mode and approval_mode together or not at all",
        )
        mode = approval_mode = None
    if duration_ms is None and mode is None and request_id is None and pg is None:
        return None
    return ToolMeta(
        tool_version=TOOL_VERSION,
        elapsed_ms=whole_ms(duration_ms, dmap, ctx, "meta.elapsed_ms"),
        mode=mode,
        approval_mode=approval_mode,
        correlation_id=request_id,
        pagination=pg,
    )


WRITING = Writing(
    Let("data", _data, pure=True),
    Let("error", _error),
    Let("meta", _meta),
    Build.of("out", Envelope, data="data", error="error", meta="meta"),  # success: a plain copy of [fields]
    derive=True,
    failure=Failure(_planned_error, replaces=("error",), gives=("error",)),
)


# --- contract (the wire Structs and their Rules, then these) ------------------------------


def invariants(d: dict[str, Any], c: Checker, m: Mappings) -> None:
    """The contract's rules across fields: ``error`` iff failure, a code of the enum, the
    ``retryable`` the code implies, the two profiles of ``meta``."""
    success = d.get("success")
    if success is True and "error" in d:
        c.add("$.error", "error must be omitted when success is true")
    elif success is False and not isinstance(d.get("error"), dict):
        c.field(d, "error", "$", "object")
    error = d.get("error")
    if success is False and isinstance(error, dict):
        c.wire(error, ToolError, "$.error")
        code, retryable = error.get("code"), error.get("retryable")
        if isinstance(code, str) and code not in m[NAME].codes:
            c.add("$.error.code", f"{code!r} is not an ErrorCode variant")
        elif isinstance(code, str) and isinstance(retryable, bool):
            derived = derived_retryable(code, m)
            if derived != retryable:
                c.add(
                    "$.error.retryable",
                    f"retryable is derived from the code: {code!r} means retryable={str(derived).lower()}",
                )
    meta = d.get("meta")
    if isinstance(meta, dict) and ("mode" in meta) != ("approval_mode" in meta):
        c.add("$.meta", "mode and approval_mode come together (workflow profile) or not at all (API profile)")


WIRE = Envelope
