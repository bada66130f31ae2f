"""result (ADR-003 Result pattern, mcp-guide): ``success``/``value`` or ``error``/``error_type``."""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import Raw, Struct

from .. import canonical as c
from ..checker import Checker, join_path
from ..context import Context, missing_problem, read_problem, report_losses, write_code
from ..diagnostics import Kind
from ..dialect import Dialect, Facts, Probe, Shape
from ..errors import ParseError
from ..mappings import Mappings
from ._common import ABSENT, RAW_EMPTY_OBJECT, RAW_NULL, WireDecoder, opt, raw_is_object, raw_or_absent

__all__ = ["NAME", "Envelope", "FailureEnvelope", "OkEnvelope", "Result", "read", "write"]

NAME = "result"
SHAPE = Shape(open_codes=True)
"""The codes are ``error_type`` words (``error-types.toml``'s ``result`` column); any word is valid."""


class Envelope(Struct, forbid_unknown_fields=True, omit_defaults=True):
    """Any Result document, as read (every field optional but ``success``)."""

    success: bool
    value: Raw = ABSENT
    error: str | None = None
    error_type: str | None = None
    error_data: Raw = ABSENT
    exception_type: str | None = None
    exception_message: str | None = None
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


def read(buf: bytes | memoryview | str, ctx: Context) -> c.Envelope:
    """Read a Result document into the canonical model."""
    w, extras, residue = _DEC.decode(buf)
    return from_wire(w, ctx, extras, residue)


def from_wire(w: Envelope, ctx: Context, extras: tuple[c.Extra, ...] = (), residue: Raw | None = None) -> c.Envelope:
    """The canonical envelope of a decoded (or constructed) Result wire Struct."""
    dmap = ctx.mappings[NAME]
    problems: tuple[c.Problem, ...] = ()
    payload = opt(w.value)
    if not w.success:
        if w.value is not ABSENT:
            raise ParseError("a failure carries no value", path="$.value", dialect=NAME)
        payload, details = split_error_data(opt(w.error_data))
        problems = (
            read_problem(
                dmap,
                w.error_type,
                ctx,
                "$.error_type",
                message=w.error,
                details=details,
                exception_type=w.exception_type,
                exception_message=w.exception_message,
            ),
        )
    elif w.error is not None or w.error_type is not None:
        raise ParseError(
            "a success carries no error", path="$.error" if w.error is not None else "$.error_type", dialect=NAME
        )
    return c.Envelope(
        ok=w.success,
        payload=payload,
        summary=w.message,
        problems=problems,
        instruction=w.instruction,
        additional_instructions=w.additional_agent_instructions,
        disposition=w.disposition,
        arguments=opt(w.arguments),
        extras=extras,
        residue=residue,
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
    if not raw_is_object(error_data):
        return None, error_data
    d = _RAW_DICT.decode(error_data)
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
                ctx.path("payload") + ".details",
                "payload key 'details' replaced by the error's details in error_data",
                NAME,
            )
        d["details"] = details
    return Raw(_ENC.encode(d)) if d else ABSENT


def write(env: c.Envelope, ctx: Context) -> bytes:
    """Write the canonical envelope as a Result document (``Result.to_json()`` shape)."""
    dmap = ctx.mappings[NAME]
    report_losses(env, dmap, ctx)
    if env.ok:
        return _ENC.encode(
            OkEnvelope(
                success=True,
                value=raw_or_absent(env.payload),
                message=env.summary,
                arguments=raw_or_absent(env.arguments),
                instruction=env.instruction,
                disposition=env.disposition,
                additional_agent_instructions=env.additional_instructions,
            )
        )
    if env.problems:
        p = env.problems[0]
    else:
        p = missing_problem(env.summary, ctx, dmap)
    exc_type, exc_message = p.exception_type, p.exception_message
    if (exc_type is None) != (exc_message is None):  # the Result emits both or neither
        lone = "problem.exception_type" if exc_type is not None else "problem.exception_message"
        ctx.report.add(Kind.FIELD_DROPPED, ctx.path(lone), f"{lone} without its pair has no place in {NAME}", NAME)
        exc_type = exc_message = None
    return _ENC.encode(
        FailureEnvelope(
            success=False,
            error=p.message,
            # Result emits error_type even when None: a Result source without one stays without one
            error_type=None if p.code is None and p.domain == NAME else write_code(p, dmap, ctx, 0),
            error_data=_error_data(env.payload, p.details, ctx),
            exception_type=exc_type,
            exception_message=exc_message,
            message=env.summary,
            arguments=raw_or_absent(env.arguments),
            instruction=env.instruction,
            disposition=env.disposition,
            additional_agent_instructions=env.additional_instructions,
        )
    )


# --- contract ------------------------------------------------------------------------

_RESULT_FAILURE_ONLY = ("error", "error_type", "error_data", "exception_type", "exception_message")


def contract(d: dict[str, Any], c: Checker, m: Mappings) -> None:
    """Every way ``d`` breaks the contract, reported to ``c``."""
    success = c.field(d, "success", "$", "boolean")
    if success is True:
        for key in _RESULT_FAILURE_ONLY:
            if key in d:
                c.add(join_path("$", key), f"a success carries no {key}")
    elif success is False:
        if "value" in d:
            c.add("$.value", "a failure carries no value")
        for key in ("error", "error_type"):
            if key not in d:
                c.add(join_path("$", key), "missing required field (a failure always carries error and error_type)")
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


_KEYS = frozenset(f.encode_name for f in msgspec.structs.fields(Envelope)) | {"_envglot"}
"""Every key a Result document may have (its wire Struct's fields, plus the preserve residue)."""
_ONLY = _KEYS - {"success", "error", "_envglot"}
"""Keys that make a document with ``error`` a Result rather than a bare legacy failure."""


def _probe(f: Facts) -> str | None:
    """Only Result keys, and a Result-only key or no ``error`` (``{"success": false, "error": "..."}``
    without ``error_type`` is a bare legacy failure)."""
    if f.keys is None or not f.is_bool("success") or f.has("data") or f.has("meta") or not f.keys <= _KEYS:
        return None
    return "success" if not f.has("error") or any(f.has(k) for k in _ONLY) else None


class Result(Dialect):
    """The ADR-003 Result pattern."""

    name = NAME
    description = "ADR-003 Result: success/value or error/error_type, message, instruction (mcp-guide)"
    aliases = ("adr-003",)
    shape = SHAPE
    native_indent = 0  # json.dumps defaults: one line with spaces
    wire = Envelope
    probes = (
        Probe(
            70,
            _probe,
            "`success` without `data`/`meta`, with a Result-only key (`error_type`, `value`, `message`, "
            "`instruction`, …) or nothing else besides `success`",
        ),
    )
    example_code = "example_not_ready"
    read = staticmethod(read)
    write = staticmethod(write)
    contract = staticmethod(contract)
