"""result (ADR-003 Result pattern, mcp-guide): ``success``/``value`` or ``error``/``error_type``."""

from __future__ import annotations

import msgspec
from msgspec import Raw, Struct

from .. import canonical as c
from ..context import Context, missing_problem, read_problem, report_losses, write_code
from ..errors import ParseError
from ._common import ABSENT, RAW_EMPTY_OBJECT, RAW_NULL, WireDecoder, opt, raw_or_absent

__all__ = ["DESCRIPTION", "NAME", "Envelope", "FailureEnvelope", "OkEnvelope", "read", "write"]

NAME = "result"
DESCRIPTION = "ADR-003 Result: success/value or error/error_type, message, instruction (mcp-guide)"
NATIVE_INDENT = 0
"""``style="native"``: how the real emitter prints (json.dumps defaults: one line with spaces)."""


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


_DEC = WireDecoder(Envelope, NAME, "$._envglot")
_ENC = msgspec.json.Encoder()


def read(buf: bytes | memoryview | str, ctx: Context) -> c.Envelope:
    """Read a Result document into the canonical model."""
    w, extras, residue = _DEC.decode(buf)
    return from_wire(w, ctx, extras, residue)


def from_wire(w: Envelope, ctx: Context, extras: tuple[c.Extra, ...] = (), residue: Raw | None = None) -> c.Envelope:
    """The canonical envelope of a decoded (or constructed) Result wire Struct."""
    dmap = ctx.mappings[NAME]
    problems: tuple[c.Problem, ...] = ()
    if not w.success:
        if w.value is not ABSENT:
            raise ParseError("a failure carries no value", path="$.value", dialect=NAME)
        problems = (
            read_problem(
                dmap,
                w.error_type,
                ctx,
                "$.error_type",
                message=w.error,
                details=opt(w.error_data),
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
        payload=opt(w.value),
        summary=w.message,
        problems=problems,
        instruction=w.instruction,
        additional_instructions=w.additional_agent_instructions,
        disposition=w.disposition,
        arguments=opt(w.arguments),
        extras=extras,
        residue=residue,
    )


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
        p = missing_problem(env, ctx, dmap)
    if env.payload is not None and env.payload != RAW_EMPTY_OBJECT and env.payload != RAW_NULL:
        ctx.dropped("payload", NAME, what="a failure's payload")
    return _ENC.encode(
        FailureEnvelope(
            success=False,
            error=p.message,
            # Result emits error_type even when None: a Result source without one stays without one
            error_type=None if p.code is None and p.domain == NAME else write_code(p, dmap, ctx, 0),
            error_data=raw_or_absent(p.details),
            exception_type=p.exception_type,
            exception_message=p.exception_message,
            message=env.summary,
            arguments=raw_or_absent(env.arguments),
            instruction=env.instruction,
            disposition=env.disposition,
            additional_agent_instructions=env.additional_instructions,
        )
    )
