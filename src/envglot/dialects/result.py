"""result (ADR-003 Result pattern, mcp-guide): ``success``/``value`` or ``error``/``error_type``."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Raw, Struct

from .. import canonical as c
from ..checker import Checker, Rule, join_path, outcome_keys
from ..codes import (
    FailurePlan,
    WireFailure,
    carried_meaning,
    carries_meaning,
    carry_meaning,
    missing_problem,
    planned,
    read_problem,
    with_carried,
    write_code,
)
from ..context import Context
from ..diagnostics import Kind
from ..dialect import name_of, shape_of
from ..errors import ParseError
from ..fields import Check, Const, Failure, Let, Move, Reading, When, Writing, common
from ..mappings import DialectMap, Mappings
from ..wire import ABSENT, RAW_EMPTY_OBJECT, RAW_NULL, WireDecoder, opt, raw_is_object

__all__ = ["NAME", "READING", "WRITING", "Envelope", "FailureEnvelope", "OkEnvelope", "split_error_data"]

NAME = name_of(__name__)
SHAPE = shape_of(NAME)


class Envelope(Struct, forbid_unknown_fields=True, omit_defaults=True):
    """Any Result document, as read (every field optional but ``success``; the failure's own
    fields are the contract's only on a failure)."""

    success: bool
    value: Raw = ABSENT
    error: Annotated[str | None, Rule(by_outcome=True)] = None
    error_type: Annotated[str | None, Rule(by_outcome=True)] = None
    error_data: Annotated[Raw, Rule(kind="object", by_outcome=True)] = ABSENT
    exception_type: Annotated[str | None, Rule(by_outcome=True)] = None
    exception_message: Annotated[str | None, Rule(by_outcome=True)] = None
    message: str | None = None
    arguments: Raw = ABSENT
    instruction: str | None = None
    disposition: str | None = None
    additional_agent_instructions: str | None = None


class OkEnvelope(Struct, omit_defaults=True):
    """A success as ``Result.to_json()`` emits it (key order included)."""

    success: bool
    value: Raw = ABSENT
    message: str | None = None
    arguments: Raw = ABSENT
    instruction: str | None = None
    disposition: str | None = None
    additional_agent_instructions: str | None = None


class FailureEnvelope(Struct, omit_defaults=True):
    """A failure as ``Result.to_json()`` emits it: ``error`` and ``error_type`` always present."""

    success: bool
    error: str | None
    error_type: str | None
    error_data: Raw = ABSENT
    exception_type: str | None = None
    exception_message: str | None = None
    message: str | None = None
    arguments: Raw = ABSENT
    instruction: str | None = None
    disposition: str | None = None
    additional_agent_instructions: str | None = None


_DEC = WireDecoder(Envelope, NAME, SHAPE.residue)
_ENC = msgspec.json.Encoder()
_RAW_DICT = msgspec.json.Decoder(dict[str, Raw])


# --- reading ---------------------------------------------------------------------------


@common(When("w.success", "truthy"), When("w.error", "is", None), When("w.error_type", "is", None))
def _one_outcome(w: Envelope) -> None:
    """A failure carries no value; a success carries no error."""
    if not w.success:
        if w.value is not ABSENT:
            raise ParseError("a failure carries no value", path="$.value", dialect=NAME)
    elif w.error is not None or w.error_type is not None:
        raise ParseError(
            "a success carries no error", path="$.error" if w.error is not None else "$.error_type", dialect=NAME
        )


class _Parts(Struct, frozen=True, gc=False):
    """A failure's ``error_data`` split (:func:`split_error_data`)."""

    payload: Raw | None
    details: Raw | None


_NO_PARTS = _Parts(None, None)
"""A success's: its payload is its ``value``, it has no details."""


@common(When("w.success", "truthy"), value=Const(_NO_PARTS))
def _parts(w: Envelope) -> _Parts:
    """A failure's ``error_data`` split into payload and details."""
    if w.success:
        return _NO_PARTS
    return _Parts(*split_error_data(opt(w.error_data)))


@common(When("w.success", "truthy"), When("w.value", "is not", ABSENT), value="w.value")
def _payload(w: Envelope, parts: _Parts) -> Raw | None:
    """A success's ``value``; a failure's payload is ``error_data``'s other keys, not ``$.value``."""
    return opt(w.value) if w.success else parts.payload


@common(When("w.success", "truthy"), value=Const(()))
def _problems(w: Envelope, parts: _Parts, dmap: DialectMap, ctx: Context) -> tuple[c.Problem, ...]:
    if w.success:
        return ()
    p = read_problem(
        dmap,
        w.error_type,
        ctx,
        "$.error_type",
        message=w.error,
        details=parts.details,
        exception_type=w.exception_type,
        exception_message=w.exception_message,
    )
    return (carried_meaning(p, dmap, ctx),)


def _wire_failure(w: Envelope, parts: _Parts, dmap: DialectMap) -> WireFailure | None:
    """The fused form of :func:`_problems` (``Reading.failure``): a failure whose details carry
    no meaning (:func:`~envglot.codes.carried_meaning` reads those)."""
    if w.success or carries_meaning(parts.details, dmap):
        return None
    return WireFailure(
        w.error_type,
        message=w.error,
        details=parts.details,
        exception_type=w.exception_type,
        exception_message=w.exception_message,
    )


READING = Reading(
    _DEC,
    Check(_one_outcome),
    Let("parts", _parts, pure=True),
    Let("payload", _payload, pure=True),
    Let("problems", _problems),
    derive=True,  # ok, summary, instruction, additional_instructions, disposition, arguments: from [fields]
    failure=_wire_failure,
)


def split_error_data(error_data: Raw | None) -> tuple[Raw | None, Raw | None]:
    """``(payload, details)`` of a failure's ``error_data``.

    ``error_data`` is "additional structured error data" (ADR-003): the failure's payload.
    Its ``details`` key, if any, is the error's own details (the place response-v2 gives
    them in a failure's ``data``); every other key is payload. An empty object is no
    payload (``Result.to_json()`` never emits one); a non-object is read as details.
    """
    if error_data is None:
        return None, None
    try:
        d = _RAW_DICT.decode(error_data)  # the object test too: a valid JSON value that is not one raises
    except msgspec.ValidationError:
        return None, error_data
    details = d.pop("details", None)
    return (Raw(_ENC.encode(d)) if d else None), details


def _error_data(payload: Raw | None, details: Raw | None, ctx: Context) -> Raw:
    """A failure's ``error_data``: the payload's keys, then ``details`` (absent when empty).

    The inverse of :func:`split_error_data`. A non-object payload cannot be carried
    (``error_data`` is a dict) and is reported dropped; a payload key ``details`` gives way
    to the error's details (reported). ``{}`` is never written: ``Result.to_json()`` emits
    ``error_data`` only when truthy.
    """
    d: dict[str, Raw] = {}
    if payload is not None and payload != RAW_NULL and payload != RAW_EMPTY_OBJECT:
        if raw_is_object(payload):
            d = _RAW_DICT.decode(payload)
        else:
            ctx.dropped("payload", NAME, what="a failure's non-object payload")
    if details is not None:
        if "details" in d:
            ctx.report.add(
                Kind.VALUE_COERCED,
                ctx.failure_payload_path() + ".details",
                NAME,
                value="payload key 'details'",
                change="replaced by the error's details in error_data",
            )
        d["details"] = details
    return Raw(_ENC.encode(d)) if d else ABSENT


# --- writing ---------------------------------------------------------------------------


@common(When("ok", "truthy"))
def _problem(
    ok: bool, problems: tuple[c.Problem, ...], summary: str | None, ctx: Context, dmap: DialectMap
) -> c.Problem | None:
    """The failure's one problem (a synthesized one, reported, when the source named none)."""
    if ok:
        return None
    return problems[0] if problems else missing_problem(summary, ctx, dmap)


class _Exception(Struct, frozen=True, gc=False):
    """``exception_type`` and ``exception_message`` as written."""

    type: str | None
    message: str | None


@common(When("p", "is", None), value=Const(_Exception(None, None)))
def _exception(p: c.Problem | None, ctx: Context) -> _Exception:
    """``exception_type`` and ``exception_message``: the Result emits both or neither."""
    if p is None:
        return _Exception(None, None)
    return _exception_pair(p.exception_type, p.exception_message, ctx)


def _exception_pair(etype: str | None, emessage: str | None, ctx: Context) -> _Exception:
    """Both or neither: a lone one is reported dropped."""
    if (etype is None) != (emessage is None):
        lone = "problem.exception_type" if etype is not None else "problem.exception_message"
        ctx.report.add(Kind.FIELD_DROPPED, ctx.path(lone), NAME, field=f"{lone} without its pair")
        return _Exception(None, None)
    return _Exception(etype, emessage)


@common(When("p", "is", None))
def _error_type(p: c.Problem | None, ctx: Context, dmap: DialectMap) -> str | None:
    # Result emits error_type even when None: a Result source without one stays without one
    if p is None or (p.code is None and p.domain == NAME):
        return None
    return write_code(p, dmap, ctx, 0)


@common(When("p", "is", None), value=Const(ABSENT))
def _failure_data(
    p: c.Problem | None, error_type: str | None, payload: Raw | None, ctx: Context, dmap: DialectMap
) -> Raw:
    """A failure's ``error_data``, its ``details`` carrying a category (and ``retryable``) the
    written ``error_type`` cannot say."""
    if p is None:
        return ABSENT
    details = p.details if error_type is None else carry_meaning(p, planned(p, dmap, ctx), p.details, dmap)
    return _error_data(payload, details, ctx)


def _planned_failure(
    plan: FailurePlan, failure: WireFailure, payload: Raw | None, ctx: Context, dmap: DialectMap
) -> tuple[_Exception, str, Raw, str | None]:
    """``exception``, ``error_type``, ``error_data`` and ``error`` of a failure written from its
    code's plan (:class:`~envglot.fields.Failure`): what :func:`_exception`, :func:`_error_type`
    and :func:`_failure_data` write, without a problem of its own."""
    f = failure
    details = with_carried(f.details, plan.carried, f.details_members)
    return (
        _exception_pair(f.exception_type, f.exception_message, ctx),
        plan.choice.code,
        _error_data(payload, details, ctx),
        f.message,
    )


def _out(
    ok: bool,
    payload: Raw | None,
    summary: str | None,
    arguments: Raw | None,
    instruction: str | None,
    disposition: str | None,
    additional_instructions: str | None,
    exception: _Exception,
    error_type: str | None,
    error_data: Raw,
    error: str | None,
) -> OkEnvelope | FailureEnvelope:
    """The document in ``Result.to_json()``'s shape for its outcome (an absent ``Raw`` is
    :data:`~envglot.wire.ABSENT`, as :func:`~envglot.wire.raw_or_absent` gives it, tested here
    without its call)."""
    args = ABSENT if arguments is None else arguments
    if ok:  # (positional, in the fields' order: no keyword matching per document)
        return OkEnvelope(
            True,
            ABSENT if payload is None else payload,
            summary,
            args,
            instruction,
            disposition,
            additional_instructions,
        )
    return FailureEnvelope(
        False,
        error,
        error_type,
        error_data,
        exception.type,
        exception.message,
        summary,
        args,
        instruction,
        disposition,
        additional_instructions,
    )


WRITING = Writing(
    Let("p", _problem),
    Let("exception", _exception),
    Let("error_type", _error_type),
    Let("error_data", _failure_data),
    Move("error", "p.message"),
    Let("out", _out, pure=True),
    failure=Failure(
        _planned_failure,
        replaces=("p", "exception", "error_type", "error_data", "error"),
        gives=("exception", "error_type", "error_data", "error"),
    ),
)


# --- contract (the wire Struct and its Rules, then these) -------------------------------

_FAILURE_ONLY = outcome_keys(Envelope)


def invariants(d: dict[str, Any], c: Checker, m: Mappings) -> None:
    """The contract's rules across fields: the failure's fields only on a failure (``error``
    and ``error_type`` always), no ``value`` there, no empty ``error_data``, the exception pair."""
    success = d.get("success")
    if success is True:
        for key in _FAILURE_ONLY:
            if key in d:
                c.add(join_path("$", key), f"a success carries no {key}")
    elif success is False:
        if "value" in d:
            c.add("$.value", "a failure carries no value")
        for key in ("error", "error_type"):
            if key not in d:
                c.add(join_path("$", key), "missing required field (a failure always carries error and error_type)")
        c.wire(d, Envelope, by_outcome=True)
        if d.get("error_data") == {}:
            c.add("$.error_data", "an empty error_data is never emitted (Result.to_json() writes it only when truthy)")
        if ("exception_type" in d) != ("exception_message" in d):
            c.add("$", "exception_type and exception_message come together")


WIRE = Envelope
