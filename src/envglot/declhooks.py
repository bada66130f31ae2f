"""Hooks a declared dialect's field steps call: the generic rules of a TOML declaration.

``envglot.declsteps`` turns a declaration into :mod:`envglot.fields` steps: plain moves where a
value only moves, and a :class:`~envglot.fields.Let` of one of these hooks where a declaration
states a rule a move cannot (codes read and written through the dialect's table, errors and
warnings lists, the outcome flag, synthesized values, counts, units, constants). Each factory
takes what the declaration says and returns the hook, named after the field it serves; the
compiler binds its parameters by name like any dialect's hooks.

Over 500 lines: every hook a declaration can state is generated here, beside the factories
that share its absent forms, units and key paths.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from decimal import ROUND_CEILING, Decimal
from typing import Any

import msgspec
from msgspec import Raw

from . import canonical as c
from .codes import missing_problem, problem_message, read_problem, write_plan
from .context import Context
from .diagnostics import Kind
from .errors import ParseError
from .excerpt import quoted
from .fields import ABSENT, Unit
from .tables import DialectMap
from .wire import count_for, document_id, object_payload, slug, unwrap_payload

__all__ = [
    "Getter",
    "ItemField",
    "check_constants",
    "document_id",
    "from_ms",
    "getter",
    "outcome_by_presence",
    "outcome_flag",
    "outcome_words",
    "read_payload",
    "read_problems",
    "read_scaled",
    "read_warnings",
    "slug",
    "some_members",
    "to_ms",
    "write_outcome",
    "write_payload",
    "write_problems",
    "write_templated",
    "write_value",
    "write_warnings",
]

_NULL = Raw(b"null")
_EMPTY = Raw(b"[]")
_ENC = msgspec.json.Encoder()
_UNIT = {1: "ms", 1000: "s"}
_ABSENT_FORM: dict[str | None, Raw | None] = {None: None, "null": _NULL, "empty": _EMPTY}
"""How a member without a value is written (``[declare.absent]``): left out, ``null``, ``[]``."""
_PROBLEM_FIELDS = frozenset(c.Problem.__struct_fields__)

Getter = Callable[[Any], Any]
"""The value at a member path of a decoded wire object (``None`` when a step on the way is absent)."""


def getter(attrs: Sequence[str]) -> Getter:
    """A :data:`Getter` for the attribute path ``attrs`` (an absent ``Raw`` reads as ``None``)."""
    names = tuple(attrs)

    def get(obj: Any) -> Any:
        for a in names:
            obj = getattr(obj, a)
            if obj is None or obj is ABSENT:
                return None
        return obj

    return get


def _named(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    fn.__name__ = fn.__qualname__ = _ident(name)
    return fn


def _put(doc: dict[str, Any], keys: tuple[str, ...], value: Any) -> None:
    for k in keys[:-1]:
        doc = doc.setdefault(k, {})
    doc[keys[-1]] = value


class ItemField(msgspec.Struct, frozen=True):
    """One declared member of an error or warning item: its canonical attribute, where it lies
    inside the item (read: the attribute path; write: the wire keys), its declared path."""

    attr: str
    get: Getter
    attrs: tuple[str, ...]
    """The attribute path ``get`` follows (a generated hook reads a one-step path inline)."""
    keys: tuple[str, ...]
    path: str
    required: bool
    count: bool = False
    """A delay that cannot be negative (``problem.retry_after_ms``)."""
    scale: int = 1
    """Milliseconds per wire unit (``[declare.units]``: 1000 for seconds)."""


# ---- reading ------------------------------------------------------------------------------


def check_constants(checks: Sequence[tuple[Getter, object, str]], dialect: str) -> Callable[..., tuple[c.Extra, ...]]:
    """``extras = hook(w, extras)``: a declared constant with another value in the document is
    kept as an extra of the dialect (written back to it, reported as dropped elsewhere)."""

    def constants(w: Any, extras: tuple[c.Extra, ...]) -> tuple[c.Extra, ...]:
        for get, value, path in checks:
            got = get(w)
            if got != value or type(got) is not type(value):
                extras += (c.Extra(dialect=dialect, path=path, value=Raw(_ENC.encode(got))),)
        return extras

    return _named(constants, f"read_{dialect}_constants")


def read_problems(
    items: Sequence[ItemField], array: bool, code_path: str, dialect: str
) -> Callable[..., tuple[c.Problem, ...]]:
    """``problems = hook(wire, ctx, dmap)``: the errors member (an object or an array of them)
    read through the dialect's code table (an unknown code: ``code_unknown`` at its path; a
    delay in seconds, ``[declare.units]``: in milliseconds).

    Generated for the declaration (``ENVGLOT_DUMP_COMPILED`` dumps it): one statement per
    declared member, its attribute, unit and paths written in as constants."""
    u = Unit(f"read_{_ident(dialect)}_problems")
    u.emit("def problems(wire, ctx, dmap):", 0)
    u.emit("if wire is None:")
    u.emit("return ()", 2)
    if array:
        u.emit("out = []")
        u.emit("for i, item in enumerate(wire):")
    else:
        u.emit("item = wire")
    ind = 2 if array else 1
    local: dict[str, str] = {}
    for n, f in enumerate(items):
        x = local[f.attr] = f"x{n}"
        if len(f.attrs) == 1:
            u.emit(f"{x} = item.{f.attrs[0]}", ind)
            u.emit(f"if {x} is ABSENT: {x} = None", ind)
        else:
            u.emit(f"{x} = {u.ref(f.get, 'get')}(item)", ind)
        if f.scale != 1:
            u.emit(f"if {x} is not None:", ind)
            u.emit(
                f"{x} = {u.ref(to_ms, 'to_ms')}({x}, {f.scale!r}, ctx, {_indexed(f.path, array)}, {dialect!r})", ind + 1
            )
    others = {a: x for a, x in local.items() if a not in ("code", "retryable")}
    rest = ""
    if others:  # only the members the document carries: an absent one keeps the rule's value
        u.emit("fields = {}", ind)
        for a, x in others.items():
            u.emit(f"if {x} is not None: fields[{a!r}] = {x}", ind)
        rest = ", **fields"
    call = (
        f"{u.ref(read_problem, 'read_problem')}(dmap, {local['code']}, ctx, {_indexed(code_path, array)}, "
        f"retryable={local.get('retryable', 'None')}{rest})"
    )
    if array:
        u.emit(f"out.append({call})", 2)
        u.emit("return tuple(out)")
    else:
        u.emit(f"return ({call},)")
    return _named(u.build("problems"), f"read_{dialect}_problems")


def _indexed(path: str, array: bool) -> str:
    """The expression of ``path`` with its first ``[]`` as the item's index (``i``; 0 for the one
    error object)."""
    if not array or "[]" not in path:
        return repr(path.replace("[]", "[0]", 1))
    head, tail = path.split("[]", 1)
    return f"{head + '['!r} + str(i) + {']' + tail!r}"


def read_warnings(items: Sequence[ItemField]) -> Callable[..., tuple[c.Notice, ...]]:
    """``warnings = hook(wire)``: the warnings array as canonical notices (a plain string item,
    ``[declare] string_items``: its message)."""

    def warnings(wire: Any) -> tuple[c.Notice, ...]:
        if wire is None:
            return ()
        return tuple(
            c.Notice(message=item)
            if isinstance(item, str)
            else c.Notice(**{f.attr: x for f in items if (x := f.get(item)) is not None})
            for item in wire
        )

    return warnings


def outcome_flag(flag_path: str, problems_path: str, dialect: str) -> Callable[..., bool]:
    """``ok = hook(flag, problems)``: the declared boolean outcome; errors under a flag that says
    success are a :class:`ParseError` (never read as a success)."""

    def ok(flag: bool, problems: tuple[c.Problem, ...]) -> bool:
        if flag and problems:
            raise ParseError(
                f"{problems_path} must be absent when {flag_path} is true", path=problems_path, dialect=dialect
            )
        return flag

    return _named(ok, f"read_{dialect}_outcome")


def outcome_words(
    success: Sequence[str],
    failure: Sequence[str],
    warning: Sequence[str],
    flag_path: str,
    problems_path: str,
    dialect: str,
) -> Callable[..., bool]:
    """``ok = hook(flag, problems)`` for an outcome member holding words (``[declare.outcome]``):
    a success or warning word is a success, a failure word a failure; any other value, or errors
    under a success word, is a :class:`ParseError`."""
    oks = frozenset(success) | frozenset(warning)
    fails = frozenset(failure)

    def ok(flag: str, problems: tuple[c.Problem, ...]) -> bool:
        if flag in fails:
            return False
        if flag not in oks:
            said = ", ".join(repr(w) for w in (*success, *warning, *failure))
            raise ParseError(f"{flag_path} must be one of {said}, got {quoted(flag)}", path=flag_path, dialect=dialect)
        if problems:
            raise ParseError(
                f"{problems_path} must be absent when {flag_path} says success", path=problems_path, dialect=dialect
            )
        return True

    return _named(ok, f"read_{dialect}_outcome")


def outcome_by_presence(problems: tuple[c.Problem, ...]) -> bool:
    """``ok``: no errors (the errors member absent, ``null`` or empty) is a success."""
    return not problems


def read_payload(object_shape: bool, path: str, dialect: str) -> Callable[..., Raw | None]:
    """``payload = hook(wire, ok, ctx)``: a failure's ``null`` is no payload; for an object-shaped
    dialect, ``{"value": x}`` is read as the wrapped ``x`` (reported); for any other, the hook
    is ``hook(wire, ok)``, which never reports."""

    def payload(wire: Raw | None, ok: bool, ctx: Context) -> Raw | None:
        if wire is None or (not ok and wire == _NULL):
            return None
        inner = unwrap_payload(wire)
        if inner is not None:
            ctx.report.add(Kind.PAYLOAD_UNWRAPPED, path, dialect)
            return inner
        return wire

    def as_is(wire: Raw | None, ok: bool) -> Raw | None:
        return None if wire is None or (not ok and wire == _NULL) else wire

    return _named(payload if object_shape else as_is, f"read_{dialect}_payload")


def some_members(value: msgspec.Struct) -> msgspec.Struct | None:
    """``value``, or ``None`` when every member has its default (an object nothing was put in)."""
    return None if value == _empty(type(value)) else value


@functools.cache
def _empty(tp: type[msgspec.Struct]) -> msgspec.Struct:
    return tp()


def to_ms(value: int | float, scale: int, ctx: Context, path: str, dialect: str, whole: bool = True) -> int | float:
    """A wire duration in units of ``scale`` ms, in milliseconds (exact decimal arithmetic:
    ``1.1`` s is 1100 ms). ``whole``: a fraction of a millisecond is rounded up (a delay is
    never shortened), reported."""
    ms = Decimal(repr(value)) * scale
    if ms == ms.to_integral_value():
        return int(ms)
    if not whole:
        return float(ms)
    up = int(ms.to_integral_value(ROUND_CEILING))
    ctx.report.add(
        Kind.VALUE_COERCED,
        path,
        dialect,
        value=f"{value} {_UNIT[scale]}",
        change=f"read as {up} ms",
        because=f"it is {ms} ms",
    )
    return up


def from_ms(value: int | float, scale: int) -> int | float:
    """Milliseconds in wire units of ``scale`` ms (an integer when whole: 30000 ms is 30 s)."""
    out = Decimal(repr(value)) / scale
    return int(out) if out == out.to_integral_value() else float(out)


def read_scaled(scale: int, path: str, dialect: str, whole: bool) -> Callable[..., int | float | None]:
    """``hook(value, ctx)``: a top-level duration declared in another unit, in milliseconds."""

    def scaled(value: int | float | None, ctx: Context) -> int | float | None:
        return None if value is None else to_ms(value, scale, ctx, path, dialect, whole)

    return _named(scaled, f"read_{dialect}_{path}")


# ---- writing ------------------------------------------------------------------------------


def write_problems(
    items: Sequence[ItemField], array: bool, dialect: str, absent: str | None = None
) -> Callable[..., Any]:
    """``hook(ok, problems, summary, ctx, dmap)``: a failure's error items (``array``), or its
    one error object; on success the declared absent form (``None``: left out).

    The code is written with the dialect's ``[[write]]`` rows (every change reported); a
    required message falls back to the summary, a required ``retryable`` to the code row's
    (else the category's), a required other member to ``[synthesize]``, each reported.

    The hook is generated for the declaration (``ENVGLOT_DUMP_COMPILED`` dumps it): one
    statement per declared member, its keys, paths and rules written in as constants.
    """
    u = Unit(f"write_{_ident(dialect)}_problems")
    ref = u.ref
    u.emit("def problems(ok, problems, summary, ctx, dmap):", 0)
    u.emit("if ok:")
    u.emit(f"return {ref(_ABSENT_FORM[absent], 'NOTHING')}", 2)
    u.emit(f"probs = problems or ({ref(missing_problem, 'missing_problem')}(summary, ctx, dmap),)")
    if array:
        u.emit("out = []")
        u.emit("for at, p in enumerate(probs):")
    else:
        u.emit("p = probs[0]")
        u.emit("at = None")
    ind = 2 if array else 1
    u.emit(f"chosen = {ref(write_plan, 'write_plan')}(p, dmap, ctx, at)", ind)
    u.emit("code = chosen.code", ind)
    u.emit("item = {}", ind)
    for f in items:
        for line in _problem_member(u, f, dialect):
            u.emit(line, ind)
        if len(f.keys) == 1:
            u.emit(f"if v is not None: item[{f.keys[0]!r}] = v", ind)
        else:
            u.emit(f"if v is not None: {ref(_put, '_put')}(item, {f.keys!r}, v)", ind)
    if array:
        u.emit("out.append(item)", 2)
        u.emit("return out")
    else:
        u.emit("return item")
    return _named(u.build("problems"), f"write_{dialect}_problems")


def _problem_member(u: Unit, f: ItemField, dialect: str) -> list[str]:
    """The statements that set ``v`` to the value :func:`write_problems` writes for ``f``."""
    if f.attr == "code":
        return ["v = code"]
    if f.attr == "message":
        return [
            f"v = {u.ref(problem_message, 'problem_message')}(p, summary, ctx, dmap, at)"
            if f.required
            else "v = p.message"
        ]
    if f.attr not in _PROBLEM_FIELDS:
        raise TypeError(f"{dialect}: problem.{f.attr} is no field of a canonical problem")
    lines = [f"v = p.{f.attr}"]
    field = "problem." + f.attr
    if f.attr == "retryable":
        if f.required:
            need = f"{dialect} requires retryable"
            lines += [
                "if v is None:",
                "    row = chosen.plan.row if chosen.plan is not None else None",
                "    v = row.retryable if row is not None and row.retryable is not None"
                " else ctx.mappings.default_retryable(p.category)",
                f"    ctx.synthesized(dmap, {field!r}, at, need={need!r}, value=str(v).lower(), how='by rule')",
            ]
        return lines
    if f.count:
        lines.append(f"v = {u.ref(count_for, 'count_for')}(v, ctx, {field!r}, {dialect!r})")
    if f.required:
        lines += ["if v is None:", f"    v = ctx.synth_value(dmap, {field!r}, {f.path!r}, index=at)"]
        if f.scale != 1:
            lines += ["else:", f"    v = {u.ref(from_ms, 'from_ms')}(v, {f.scale!r})"]
    elif f.scale != 1:
        lines.append(f"if v is not None: v = {u.ref(from_ms, 'from_ms')}(v, {f.scale!r})")
    return lines


def _ident(name: str) -> str:
    """``name`` as a Python identifier (a generated module's title)."""
    return re.sub(r"\W", "_", name)


def write_warnings(
    items: Sequence[ItemField], strings: bool = False, absent: str | None = None
) -> Callable[..., list[Any] | Raw | None]:
    """``hook(warnings)``: the warning items; none: the declared absent form (``None``: left
    out). ``strings``: an item that carries only its message is that plain string."""
    nothing = _ABSENT_FORM[absent]

    def notices(warnings: tuple[c.Notice, ...]) -> list[Any] | Raw | None:
        if not warnings:
            return nothing
        out: list[Any] = []
        for n in warnings:
            item: dict[str, Any] = {}
            for f in items:
                v = getattr(n, f.attr)
                if v is not None:
                    _put(item, f.keys, v)
            only_message = strings and all(getattr(n, f.attr) is None for f in items if f.attr != "message")
            out.append(n.message if only_message else item)
        return out

    return notices


def write_payload(object_shape: bool, null: bool, dialect: str) -> Callable[..., Raw | None]:
    """``hook(payload, ok, ctx)``: an object-shaped dialect's payload is an object (others
    wrapped, reported); ``null``: no payload is written ``null`` (the member is required, or
    ``[declare.absent]`` says so); otherwise ``hook(payload)``, the payload as it is."""
    if object_shape:

        def wrapped(payload: Raw | None, ok: bool, ctx: Context) -> Raw | None:
            return object_payload(payload, ok, ctx, dialect)

        return _named(wrapped, f"write_{dialect}_payload")
    if null:

        def or_null(payload: Raw | None) -> Raw | None:
            return _NULL if payload is None else payload

        return _named(or_null, f"write_{dialect}_payload")

    def as_is(payload: Raw | None) -> Raw | None:
        return payload

    return _named(as_is, f"write_{dialect}_payload")


def write_outcome(success: str, failure: str, warning: str | None) -> Callable[..., str]:
    """``hook(ok, warnings)``: the outcome member's word (``[declare.outcome]``; a success with
    warnings takes the warning word when one is declared)."""

    def outcome(ok: bool, warnings: tuple[c.Notice, ...]) -> str:
        if not ok:
            return failure
        return warning if warning is not None and warnings else success

    return outcome


def write_value(field: str, path: str, count: bool, required: bool, dialect: str, scale: int = 1) -> Callable[..., Any]:
    """``hook(value, ctx, dmap)`` for a top-level member: a negative count is left out
    (reported); a required member the source lacks is synthesized (reported); a duration in
    another unit is converted (``scale``). Generated for the member, its rules as constants."""
    u = Unit(f"write_{_ident(dialect)}_{_ident(field)}")
    u.emit("def value(value, ctx, dmap):", 0)
    if count:
        u.emit(f"value = {u.ref(count_for, 'count_for')}(value, ctx, {field!r}, {dialect!r})")
    if required:
        u.emit("if value is None:")
        u.emit(f"return ctx.synth_value(dmap, {field!r}, {path!r})", 2)
    if scale != 1:
        u.emit(f"return value if value is None else {u.ref(from_ms, 'from_ms')}(value, {scale!r})")
    else:
        u.emit("return value")
    return _named(u.build("value"), f"write_{dialect}_{field}")


def write_templated(field: str, path: str, template: str) -> Callable[..., Any]:
    """``hook(value, tool, ok, payload, problems, ctx, dmap)`` for a required member whose
    ``[synthesize]`` rule is a template (``"{slug}-{id}"``): the source's value, else the
    caller's ``context=`` value, else the template filled in for this document (reported).
    ``{tool}`` is the envelope's tool (else the caller's), ``{slug}`` that in lower kebab case,
    ``{id}`` :func:`document_id`."""

    def value(
        value: Any,
        tool: str | None,
        ok: bool,
        payload: Raw | None,
        problems: tuple[c.Problem, ...],
        ctx: Context,
        dmap: DialectMap,
    ) -> Any:
        if value is not None:
            return value
        given = ctx.synth.get("tool")
        name = tool if tool is not None or not isinstance(given, str) else given
        rule = template.format(tool=name or "", slug=slug(name), id=document_id(name, ok, payload, problems))
        return ctx.synth_value(dmap, field, path, rule)

    return _named(value, f"write_{field}")
