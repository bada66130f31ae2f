"""Contract checks: every way a document breaks its dialect's specification, with JSON paths.

:func:`validate` runs two passes over one document:

1. the dialect's contract checks (``Dialect.contract``, calling a
   :class:`~envglot.checker.Checker`) on the decoded JSON tree, which look at every field,
   so *all* violations are listed: the spec's required fields and types and the invariants
   it states (a status computed from the errors, a flag derived from the code, a token
   count the emitter computes, ...);
2. the dialect's reader, as a backstop: an error it raises (a :class:`~envglot.errors.ParseError`)
   and the diagnostics its class lists in ``reader_kinds`` become violations unless pass 1
   already flagged the same place.

An MCP ``CallToolResult`` is unwrapped when the dialect is detected; violation paths are
then relative to the envelope inside it, and ``$.isError`` is checked against the
envelope's own outcome.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

import msgspec

from .checker import Checker, Violation, type_name
from .context import Context
from .diagnostics import DISCARD, Report
from .errors import EnvglotError
from .excerpt import excerpt
from .limits import MAX_DEPTH, OUTPUT_DEPTH_MARGIN, check_input, repeated_member
from .mappings import Mappings
from .pipeline import as_mappings, locate, to_bytes

__all__ = ["Violation", "validate"]


_DEPTH = MAX_DEPTH + OUTPUT_DEPTH_MARGIN
"""envglot's own outputs may nest a few levels deeper than its inputs (``limits.OUTPUT_DEPTH_MARGIN``)."""


def _number(text: str) -> Decimal:
    """A JSON number with a fraction or exponent, exactly, as a Decimal; one whose exponent not
    even a Decimal holds (hundreds of digits) as the value it tends to: a signed infinity, or
    zero (a zero mantissa, or a huge negative exponent). Valid JSON either way."""
    try:
        return Decimal(text)
    except InvalidOperation:
        mantissa, _, exponent = text.lower().partition("e")
        sign = "-" if mantissa.startswith("-") else ""
        if exponent.startswith("-") or not mantissa.strip("+-0."):
            return Decimal(f"{sign}0")
        return Decimal(f"{sign}Infinity")


_ANY = msgspec.json.Decoder(float_hook=_number)
"""Numbers beyond a float's range (``1e400``) are valid JSON: they are checked as Decimals."""
_ENC = msgspec.json.Encoder()


def _int(text: str) -> int | Decimal:
    """A JSON integer: a Python int while Python prints it, else a Decimal (as exact)."""
    return int(text) if len(text) < 4000 else _number(text)


def _related(a: str, b: str) -> bool:
    """True if one path is the other or lies inside it."""
    if a == b:
        return True
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return long.startswith(short) and long[len(short)] in ".["


def _reader_pass(buf: bytes, name: str, m: Mappings, c: Checker) -> bool | None:
    """Run the dialect reader; add what it finds that the checks did not. Returns the outcome."""
    dialect = m.registry.get(name)
    report = Report("ignore")
    found: list[Violation] = []
    ok: bool | None = None
    try:
        ok = dialect.read(buf, Context(m, report, m[name])).ok
    except EnvglotError as exc:
        found.append(Violation(exc.path or "$", exc.message, name))
    kinds = dialect.reader_kinds
    found += [Violation(dg.path, dg.message, name) for dg in report.diagnostics if dg.kind in kinds]
    mine = list(c.violations)
    for v in found:
        if not any(_related(v.path, w.path) for w in mine):
            c.violations.append(v)
    return ok


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
            (the code tables decide which errorcode codes exist and what they imply; the
            dialects declared among them can be named and are detected).

    Raises:
        UnknownDialectError: ``dialect`` is not a dialect name.
        MappingError: an overlay is invalid.
    """
    m = as_mappings(mappings)
    name = m.registry.get(dialect).name if dialect is not None else None
    is_error: bool | None = None
    try:
        buf, bom = check_input(to_bytes(data), _DEPTH)
        if bom:
            return [Violation("$", "the document begins with a UTF-8 byte order mark", name)]
        if name is None:
            buf, found, is_error = locate(buf, True, False, DISCARD, _DEPTH, registry=m.registry)
            name = found.dialect
    except EnvglotError as exc:
        return [Violation(exc.path or "$", exc.message, name)]
    try:
        doc = _ANY.decode(buf)
    except msgspec.DecodeError as exc:
        if "out of range" not in str(exc):
            return [Violation("$", f"invalid JSON: {exc}", name)]
        try:  # an integer past 4,300 digits is valid JSON; Python's parser can read it
            doc = json.loads(buf, parse_float=_number, parse_int=_int)
        except (ValueError, RecursionError) as exc2:
            return [Violation("$", f"invalid JSON: {excerpt(str(exc2))}", name)]
    except RecursionError:  # pragma: no cover - check_input bounds the depth first
        return [Violation("$", "nested too deeply", name)]
    c = Checker(name, buf)
    if not isinstance(doc, dict):
        c.add("$", f"a {name} envelope must be a JSON object, got {type_name(doc)}")
        return c.violations
    unit = m.registry.get(name)
    key = unit.outcome_key
    if repeated_member(buf, key):
        c.add(f"$.{key}", f"the outcome member {key!r} appears more than once")
    try:
        unit.contract(doc, c, m)
    except msgspec.DecodeError as exc:  # a contract rule on the raw bytes met JSON msgspec refuses
        c.add("$", f"invalid JSON: {excerpt(str(exc))}")
    ok = _reader_pass(buf, name, m, c)
    if is_error is not None and ok is not None and is_error == ok:
        c.add(
            "$.isError",
            f"MCP isError={str(is_error).lower()} but the envelope says {'success' if ok else 'failure'}",
        )
    return c.violations
