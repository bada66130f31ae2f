"""Hooks a declared dialect's field steps call: the generic rules of a TOML declaration.

``envglot.declsteps`` turns a declaration into :mod:`envglot.fields` steps: plain moves where a
value only moves, and a :class:`~envglot.fields.Let` of one of these hooks where a declaration
states a rule a move cannot (codes read and written through the dialect's table, errors and
warnings lists, the outcome flag, synthesized values, counts, units, constants). Each factory
takes what the declaration says and returns the hook, named after the field it serves; the
compiler binds its parameters by name like any dialect's hooks.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
from msgspec import Raw

from . import canonical as c
from .context import Context, missing_problem, problem_message, read_problem, write_code
from .diagnostics import Kind
from .errors import ParseError
from .fields import ABSENT
from .mappings import DialectMap

__all__ = [
    "Getter",
    "ItemField",
    "check_constants",
    "document_id",
    "getter",
    "outcome_by_presence",
    "outcome_flag",
    "read_payload",
    "read_problems",
    "read_warnings",
    "some_members",
    "write_payload",
    "write_problems",
    "write_value",
    "write_warnings",
]

_NULL = Raw(b"null")
_ENC = msgspec.json.Encoder()

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
    fn.__name__ = fn.__qualname__ = re.sub(r"\W", "_", name)
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
    keys: tuple[str, ...]
    path: str
    required: bool
    count: bool = False
    """A delay that cannot be negative (``problem.retry_after_ms``)."""


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

    return constants


def read_problems(items: Sequence[ItemField], array: bool, code_path: str) -> Callable[..., tuple[c.Problem, ...]]:
    """``problems = hook(wire, ctx, dmap)``: the errors member (an object or an array of them)
    read through the dialect's code table (an unknown code: ``code_unknown`` at its path)."""

    def problems(wire: Any, ctx: Context, dmap: DialectMap) -> tuple[c.Problem, ...]:
        if wire is None:
            return ()
        out = []
        for i, item in enumerate(wire if array else (wire,)):
            v = {f.attr: x for f in items if (x := f.get(item)) is not None}
            code = v.pop("code")
            retryable = v.pop("retryable", None)
            at = code_path.replace("[]", f"[{i}]", 1)
            out.append(read_problem(dmap, code, ctx, at, retryable=retryable, **v))
        return tuple(out)

    return problems


def read_warnings(items: Sequence[ItemField]) -> Callable[..., tuple[c.Notice, ...]]:
    """``warnings = hook(wire)``: the warnings array as canonical notices."""

    def warnings(wire: Any) -> tuple[c.Notice, ...]:
        if wire is None:
            return ()
        return tuple(c.Notice(**{f.attr: x for f in items if (x := f.get(item)) is not None}) for item in wire)

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

    return ok


def outcome_by_presence(problems: tuple[c.Problem, ...]) -> bool:
    """``ok``: no errors (the errors member absent, ``null`` or empty) is a success."""
    return not problems


def read_payload(object_shape: bool, path: str, dialect: str) -> Callable[..., Raw | None]:
    """``payload = hook(wire, ok, ctx)``: a failure's ``null`` is no payload; for an object-shaped
    dialect, ``{"value": x}`` is read as the wrapped ``x`` (reported)."""
    from .dialects._common import unwrap_payload

    def payload(wire: Raw | None, ok: bool, ctx: Context) -> Raw | None:
        if wire is None or (not ok and wire == _NULL):
            return None
        if object_shape:
            inner = unwrap_payload(wire)
            if inner is not None:
                ctx.report.add(Kind.PAYLOAD_UNWRAPPED, path, 'read {"value": ...} as the wrapped payload', dialect)
                return inner
        return wire

    return payload


def some_members(value: msgspec.Struct) -> msgspec.Struct | None:
    """``value``, or ``None`` when every member has its default (an object nothing was put in)."""
    return None if value == _empty(type(value)) else value


@functools.cache
def _empty(tp: type[msgspec.Struct]) -> msgspec.Struct:
    return tp()


# ---- writing ------------------------------------------------------------------------------


def write_problems(items: Sequence[ItemField], array: bool, dialect: str) -> Callable[..., Any]:
    """``hook(ok, problems, summary, ctx, dmap)``: a failure's error items (``array``), or its
    one error object; ``None`` on success.

    The code is written with the dialect's ``[[write]]`` rows (every change reported); a
    required message falls back to the summary, a required ``retryable`` to the code row's
    (else the category's), a required other member to ``[synthesize]``, each reported.
    """
    from .dialects._common import count_for

    def problems(
        ok: bool, problems: tuple[c.Problem, ...], summary: str | None, ctx: Context, dmap: DialectMap
    ) -> list[dict[str, Any]] | dict[str, Any] | None:
        if ok:
            return None
        probs = problems or (missing_problem(summary, ctx, dmap),)
        out = []
        for i, p in enumerate(probs if array else probs[:1]):
            at = i if array else None
            item: dict[str, Any] = {}
            code = write_code(p, dmap, ctx, at)
            for f in items:
                v: Any
                if f.attr == "code":
                    v = code
                elif f.attr == "message":
                    v = problem_message(p, summary, ctx, dmap, at) if f.required else p.message
                elif f.attr == "retryable":
                    v = p.retryable
                    if v is None and f.required:
                        row = dmap.codes.get(code)
                        v = (
                            row.retryable
                            if row is not None and row.retryable is not None
                            else ctx.mappings.default_retryable(p.category)
                        )
                        ctx.synthesized(
                            dmap,
                            "problem.retryable",
                            f"{dialect} requires retryable; wrote {str(v).lower()} (by rule)",
                            at,
                        )
                else:
                    v = getattr(p, f.attr)
                    if f.count:
                        v = count_for(v, ctx, "problem." + f.attr, dialect)
                    if v is None and f.required:
                        v = ctx.synth_value(dmap, "problem." + f.attr, f.path, index=at)
                if v is not None:
                    _put(item, f.keys, v)
            out.append(item)
        return out if array else out[0]

    return _named(problems, f"write_{dialect}_problems")


def write_warnings(items: Sequence[ItemField]) -> Callable[..., list[dict[str, Any]] | None]:
    """``hook(warnings)``: the warning items (``None`` when there are none)."""

    def notices(warnings: tuple[c.Notice, ...]) -> list[dict[str, Any]] | None:
        if not warnings:
            return None
        out = []
        for n in warnings:
            item: dict[str, Any] = {}
            for f in items:
                v = getattr(n, f.attr)
                if v is not None:
                    _put(item, f.keys, v)
            out.append(item)
        return out

    return notices


def write_payload(object_shape: bool, required: bool, dialect: str) -> Callable[..., Raw | None]:
    """``hook(payload, ok, ctx)``: an object-shaped dialect's payload is an object (others
    wrapped, reported); a required payload member carries ``null`` when there is none."""
    from .dialects._common import object_payload

    def payload(payload: Raw | None, ok: bool, ctx: Context) -> Raw | None:
        if object_shape:
            return object_payload(payload, ok, ctx, dialect)
        if payload is None and required:
            return _NULL
        return payload

    return payload


def write_value(field: str, path: str, count: bool, required: bool, dialect: str) -> Callable[..., Any]:
    """``hook(value, ctx, dmap)`` for a top-level member: a negative count is left out
    (reported); a required member the source lacks is synthesized (reported)."""
    from .dialects._common import count_for

    def value(value: Any, ctx: Context, dmap: DialectMap) -> Any:
        if value is not None and count:
            value = count_for(value, ctx, field, dialect)
        if value is None and required:
            value = ctx.synth_value(dmap, field, path)
        return value

    return _named(value, f"write_{field}")


def document_id(tool: str | None, ok: bool, payload: Raw | None, problems: tuple[c.Problem, ...]) -> str:
    """A reproducible 8-character base-36 id: a hash of the tool, the outcome, the payload and
    the first error's code and message (the rule code-graph's ``requestId`` follows)."""
    h = hashlib.blake2b(digest_size=8)
    h.update((tool or "").encode())
    h.update(b"1" if ok else b"0")
    if payload is not None:
        h.update(bytes(payload))
    if problems:
        h.update((problems[0].code or "").encode() + (problems[0].message or "").encode())
    n = int.from_bytes(h.digest(), "big")
    digits = []
    for _ in range(8):
        n, r = divmod(n, 36)
        digits.append("0123456789abcdefghijklmnopqrstuvwxyz"[r])
    return "".join(digits)
