"""ADR-003 ``Result`` for Python code, written to any dialect without a JSON round trip.

:class:`Result` keeps the API of mcp-guide's class (``ok``/``failure``, ``is_ok``,
``to_json``, ``to_json_str``) and adds :meth:`Result.to` and :meth:`Result.to_envelope`,
which build the canonical envelope straight from the fields and hand it to a writer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar, cast

import msgspec
from msgspec import Raw

from .api import write
from .canonical import Envelope
from .context import Context
from .diagnostics import Report, report_for
from .dialect import get_dialect
from .dialects import result as _result_dialect
from .errors import EnvglotError, ParseError
from .limits import MAX_DEPTH, bad_value, check_input
from .options import UNSET, MappingsArg, Options, Style, Unsupported, resolve
from .pipeline import as_mappings
from .policy import Level
from .wire import ABSENT

__all__ = ["Result", "encode_value"]

T = TypeVar("T")
V = TypeVar("V")
"""A value's type where a constructor infers it (``Result.ok(["a"])`` is a ``Result[list[str]]``)."""


def _enc_hook(obj: Any) -> Any:
    """The ADR's fallbacks for values msgspec cannot encode natively."""
    dump = getattr(obj, "model_dump", None)
    if callable(dump):  # pydantic v2
        return dump(mode="json")
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    to_json = getattr(obj, "to_json", None)
    if callable(to_json):
        out = to_json()
        # a JSON text is embedded as is (compacted); anything else is encoded
        return Raw(msgspec.json.format(out, indent=-1)) if isinstance(out, str | bytes) else out
    raise NotImplementedError(f"{type(obj).__name__} has no model_dump(), to_dict() or to_json()")


_VALUE_ENC = msgspec.json.Encoder(enc_hook=_enc_hook)


def encode_value(value: object, path: str = "$.value") -> Raw:
    """``value`` as JSON (a :class:`msgspec.Raw`), with the ADR's fallbacks.

    msgspec encodes the JSON types, dataclasses, Structs, enums, datetimes and UUIDs;
    other objects go through ``model_dump(mode="json")`` (pydantic), ``to_dict()`` or
    ``to_json()`` (a returned JSON text is embedded, compacted).

    Raises:
        EnvglotError: the value is not JSON-encodable (``path`` names it).
    """
    try:
        out = _VALUE_ENC.encode(value)
    except (TypeError, NotImplementedError, msgspec.DecodeError, msgspec.EncodeError) as exc:
        raise EnvglotError(f"value is not JSON-encodable: {exc}", path=path) from None
    except UnicodeEncodeError as exc:  # a lone surrogate: no UTF-8 text holds it
        raise EnvglotError(
            f"value is not JSON-encodable: a string holds the lone surrogate {exc.object[exc.start]!r}", path=path
        ) from None
    except ValueError as exc:  # an int beyond Python's digit limit for str()
        raise EnvglotError(f"value is not JSON-encodable: {str(exc).split(';')[0]}", path=path) from None
    except RecursionError:
        raise EnvglotError("value is not JSON-encodable: nested too deeply", path=path) from None
    try:
        check_input(out)  # the nesting limit every input has (an envelope adds a few levels)
    except ParseError as exc:
        raise EnvglotError(f"value is not JSON-encodable: {exc.message}", path=path) from None
    if b"null" in out:  # nan/inf would have been written as null: refuse instead of losing them
        where, why = bad_value(value, MAX_DEPTH, False)
        if why is not None:
            raise EnvglotError(f"value is not JSON-encodable: {why}", path=path + where[1:])
    return Raw(out)


@dataclass
class Result(Generic[T]):
    """Result pattern for rich error handling (ADR-003, with mcp-guide's later fields).

    ``to_json()`` follows the real emitter: on success ``value`` only if not ``None``; on
    failure ``error`` and ``error_type`` always, ``error_data`` only if truthy and the
    exception as ``exception_type``/``exception_message``; then ``message``,
    ``arguments``, ``instruction``, ``disposition``, ``additional_agent_instructions``,
    each only if truthy. :meth:`to` writes exactly what reading that JSON would give.
    """

    success: bool
    value: T | None = None
    error: str | None = None
    error_type: str | None = None
    exception: BaseException | None = field(default=None, repr=False, compare=False)
    message: str | None = None
    arguments: Any = None
    instruction: str | None = None
    disposition: str | None = None
    additional_agent_instructions: str | None = None
    error_data: dict[str, Any] | None = None

    DIALECT: ClassVar[str] = _result_dialect.NAME
    """The dialect whose documents this class reads and writes (``to_json``)."""
    default_success_instruction: ClassVar[str | None] = None
    """Instruction ``ok()`` sets when none is given (set it on a subclass)."""
    default_failure_instruction: ClassVar[str | None] = None
    """Instruction ``failure()`` sets when none is given (set it on a subclass)."""

    @classmethod
    def ok(
        cls,
        value: V | None = None,
        message: str | None = None,
        instruction: str | None = None,
        *,
        arguments: Any = None,
        disposition: str | None = None,
        additional_agent_instructions: str | None = None,
    ) -> Result[V]:
        """A successful result (``instruction`` defaults to ``default_success_instruction``)."""
        made = cls(
            success=True,
            value=cast(Any, value),
            message=message,
            arguments=arguments,
            instruction=instruction if instruction is not None else cls.default_success_instruction,
            disposition=disposition,
            additional_agent_instructions=additional_agent_instructions,
        )
        return cast("Result[V]", made)

    @classmethod
    def failure(
        cls,
        error: str,
        error_type: str = "unknown",
        exception: BaseException | None = None,
        message: str | None = None,
        instruction: str | None = None,
        *,
        error_data: dict[str, Any] | None = None,
        arguments: Any = None,
        disposition: str | None = None,
        additional_agent_instructions: str | None = None,
    ) -> Result[Any]:
        """A failed result (``instruction`` defaults to ``default_failure_instruction``); it
        has no value, so it is a ``Result`` of any value type."""
        return cls(
            success=False,
            error=error,
            error_type=error_type,
            exception=exception,
            message=message,
            arguments=arguments,
            instruction=instruction if instruction is not None else cls.default_failure_instruction,
            disposition=disposition,
            additional_agent_instructions=additional_agent_instructions,
            error_data=error_data,
        )

    def is_ok(self) -> bool:
        """True if the result is a success."""
        return self.success

    def is_failure(self) -> bool:
        """True if the result is a failure."""
        return not self.success

    def to_json(self) -> dict[str, Any]:
        """The MCP-compatible dict, key order and truthiness rules as mcp-guide emits them."""
        if self.success:
            out: dict[str, Any] = {"success": True}
            if self.value is not None:
                out["value"] = self.value
        else:
            out = {"success": False, "error": self.error, "error_type": self.error_type}
            if self.error_data:
                out["error_data"] = self.error_data
            if self.exception:
                out["exception_type"] = type(self.exception).__name__
                out["exception_message"] = str(self.exception)
        if self.message:
            out["message"] = self.message
        if self.arguments:
            out["arguments"] = self.arguments
        if self.instruction:
            out["instruction"] = self.instruction
        if self.disposition:
            out["disposition"] = self.disposition
        if self.additional_agent_instructions:
            out["additional_agent_instructions"] = self.additional_agent_instructions
        return out

    def to_json_str(self) -> str:
        """``json.dumps(self.to_json())``, as the ADR renders it for MCP tool responses."""
        return json.dumps(self.to_json())

    def _envelope(self, ctx: Context) -> Envelope:
        """The canonical envelope the result reader builds from :meth:`to_json` (no JSON text)."""
        exc = None if self.success else self.exception
        wire = _result_dialect.Envelope(
            success=self.success,
            value=encode_value(self.value) if self.success and self.value is not None else ABSENT,
            error=None if self.success else self.error,
            error_type=None if self.success else self.error_type,
            error_data=encode_value(self.error_data, "$.error_data")
            if self.error_data and not self.success
            else ABSENT,
            exception_type=type(exc).__name__ if exc else None,
            exception_message=str(exc) if exc else None,
            message=self.message or None,
            arguments=encode_value(self.arguments, "$.arguments") if self.arguments else ABSENT,
            instruction=self.instruction or None,
            disposition=self.disposition or None,
            additional_agent_instructions=self.additional_agent_instructions or None,
        )
        return get_dialect(_result_dialect.NAME).from_wire(wire, ctx)

    def to_envelope(
        self, *, options: Options | None = None, mappings: MappingsArg = UNSET, report: Report | None = None
    ) -> Envelope:
        """The canonical :class:`~envglot.canonical.Envelope` of this result.

        ``error_type`` is classified with the result dialect's tables (an unknown word
        takes the fallback category and a ``code_unknown`` diagnostic in ``report``). Of the
        :class:`~envglot.Options` only ``mappings`` applies.
        """
        m = as_mappings(resolve(options, mappings=mappings).mappings)
        rep = report if report is not None else Report(Level.IGNORE)
        return self._envelope(Context(m, rep, m[_result_dialect.NAME]))

    def to(
        self,
        dialect: str,
        *,
        options: Options | None = None,
        unsupported: Unsupported = UNSET,
        mappings: MappingsArg = UNSET,
        style: Style = UNSET,
        context: dict[str, Any] | None = UNSET,
        report: Report | None = None,
    ) -> bytes:
        """This result written as ``dialect`` (JSON bytes), without rendering it to JSON first.

        Same options as :func:`envglot.convert` (``options=`` or keywords; ``preserve``,
        ``strict`` and ``max_depth`` have nothing to act on); the output and the diagnostics
        (paths in Result terms, e.g. ``$.exception_type``) are those of
        ``convert(result.to_json(), from_="result", to=dialect)``.

        Raises:
            EnvglotError: a value is not JSON-encodable.
            UnsupportedError: ``unsupported="raise"`` and the conversion is lossy.
        """
        o = resolve(options, unsupported=unsupported, mappings=mappings, style=style, context=context)
        m = as_mappings(o.mappings)
        rep = report if report is not None else report_for(o.policy)
        envelope = self._envelope(Context(m, rep, m[_result_dialect.NAME], o.context))
        return write(envelope, dialect, options=o, report=rep, source=_result_dialect.NAME)
