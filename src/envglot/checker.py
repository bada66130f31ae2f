"""The contract checker: what ``validate`` derives from a dialect's wire Structs, and helpers.

A dialect's contract is its wire Struct read as a specification (:meth:`Checker.wire`): each
field's JSON type and whether it is required come from the Struct that decodes it, and the
rules the spec adds to one field (a constant, an enumeration, a lower bound, a time stamp,
required although real emitters omit it) are declared on that same field as
``Annotated[T, Rule(...)]``, which msgspec ignores, so decoding stays as lenient as real
emitters need. Only rules across fields (a status computed from the errors, a flag derived
from the code) are written as code, in the dialect's ``invariants``. A :class:`Checker`
records a :class:`Violation` per broken rule, with its JSON path; :func:`envglot.validate`
runs the contract (see ``validation.py``).
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Callable, Sequence
from decimal import Decimal
from functools import cache
from typing import Any, Literal

import msgspec

from .excerpt import MESSAGE_LIMIT, excerpt
from .introspect import struct_fields
from .wire import is_timestamp

__all__ = [
    "MISSING",
    "Checker",
    "Rule",
    "Violation",
    "article",
    "join_path",
    "optional_constants",
    "outcome_keys",
    "type_name",
]


@cache
def optional_constants(wire: type) -> frozenset[str]:
    """JSON paths of the members a contract's wire Struct fixes to one value (``Rule(const=...)``)
    inside an object the contract lets a writer leave out (errorcode's ``$.meta.tool_version``:
    ``meta`` is written only when something goes in it)."""
    out: set[str] = set()

    def walk(tp: type, path: str, optional: bool) -> None:
        for f in struct_fields(tp):  # its types are the annotations evaluated, Annotated kept
            hint = f.type
            rules = [a for a in getattr(hint, "__metadata__", ()) if isinstance(a, Rule)]
            if optional and any(r.const is not None for r in rules):
                out.add(f"{path}.{f.encode_name}")
            inner = typing.get_args(hint)[0] if rules else hint
            for arg in typing.get_args(inner) or (inner,):
                if isinstance(arg, type) and issubclass(arg, msgspec.Struct):
                    walk(arg, f"{path}.{f.encode_name}", optional or not f.required)

    walk(wire, "$", False)
    return frozenset(out)


class Violation(msgspec.Struct, frozen=True):
    """One way a document breaks its dialect's contract."""

    path: str
    """JSON path of the offending value (``$.audit.duration_ms``); for a missing field, where it belongs."""
    message: str
    dialect: str | None = None
    """The dialect whose contract is broken (``None`` when the document is not even JSON)."""

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


MISSING: Any = object()
"""What :meth:`Checker.field` returns for a missing or mistyped field."""

_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float | Decimal) and not isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "any": lambda v: True,
}


class Rule:
    """What a dialect's spec adds to one wire field: ``Annotated[T, Rule(...)]`` on the Struct.

    Args:
        kind: the JSON type the spec wants where the Struct takes any value (``Raw``):
            ``"object"``, ``"array"``, ``"string"``...
        of: the type the spec wants where the Struct takes any value, read as a field's type
            (``list[str]``, a contract-only Struct): its items or members are checked too.
        required: the spec requires the field although the Struct (real emitters) may omit it.
        nullable: whether ``null`` is allowed (default: for an optional field, or a type with ``None``).
        const: the one value the field may have.
        one_of: the values the field may have.
        ge: a lower bound (0: "must not be negative").
        timestamp: ``"utc"`` or ``"any"``: an ISO 8601 date-time with a zone (UTC when ``"utc"``).
        pattern: a regular expression the whole value must match, and ``says`` what it means
            ("a semantic version (major.minor.patch)").
        by_outcome: whether the field is there depends on the outcome (``error`` only on a
            failure): the dialect's ``invariants`` check it, with :meth:`Checker.member`, or
            :meth:`Checker.wire` for an object's members (``by_outcome=True``: the marked
            fields themselves).
    """

    __slots__ = (
        "by_outcome",
        "const",
        "ge",
        "kind",
        "nullable",
        "of",
        "one_of",
        "pattern",
        "required",
        "says",
        "timestamp",
    )

    def __init__(
        self,
        *,
        kind: str | None = None,
        of: Any = None,
        required: bool | None = None,
        nullable: bool | None = None,
        const: str | None = None,
        one_of: Sequence[str] | None = None,
        ge: int | None = None,
        timestamp: Literal["utc", "any"] | None = None,
        pattern: str | None = None,
        says: str = "",
        by_outcome: bool = False,
    ) -> None:
        if kind is not None and kind not in _JSON_TYPES:
            raise ValueError(f"Rule(kind={kind!r}): not one of {', '.join(_JSON_TYPES)}")
        self.kind = kind
        self.of = of
        self.required = required
        self.nullable = nullable
        self.const = const
        self.one_of = tuple(one_of) if one_of is not None else None
        self.ge = ge
        self.timestamp = timestamp
        self.pattern = re.compile(pattern) if pattern is not None else None
        self.says = says
        self.by_outcome = by_outcome

    def check(self, c: Checker, v: Any, path: str) -> None:
        """Report to ``c`` how the (well-typed) value ``v`` at ``path`` breaks this rule."""
        if self.const is not None and v != self.const:
            c.add(path, f"must be {self.const!r}, got {v!r}")
        if self.one_of is not None and v not in self.one_of:
            c.add(path, f"must be one of {', '.join(map(repr, self.one_of))}, got {v!r}")
        if self.ge is not None and isinstance(v, int | float | Decimal) and v < self.ge:
            c.add(path, f"must not be negative, got {v}" if self.ge == 0 else f"must be at least {self.ge}, got {v}")
        if self.pattern is not None and isinstance(v, str) and not self.pattern.fullmatch(v):
            c.add(path, f"expected {self.says or 'a match for ' + repr(self.pattern.pattern)}, got {v!r}")
        if self.timestamp is not None and isinstance(v, str):
            c.timestamp_value(v, path, utc=self.timestamp == "utc")


class _Field(msgspec.Struct, frozen=True):
    """One wire field as the contract reads it."""

    key: str
    kind: str
    required: bool
    nullable: bool
    rule: Rule | None
    sub: type[msgspec.Struct] | None = None
    """The Struct an object (or each object of an array) must match."""
    items: str | None = None
    """An array's item kind: ``"string"``, ``"object"``, or ``"string|object"``."""


def _strip(t: Any) -> tuple[Any, Rule | None]:
    rule = None
    if typing.get_origin(t) is typing.Annotated:
        t, *meta = typing.get_args(t)
        rule = next((m for m in meta if isinstance(m, Rule)), None)
    return t, rule


def _kind(t: Any) -> tuple[str, type[msgspec.Struct] | None, str | None, bool]:
    """``(kind, sub Struct, item kind, takes null)`` of a field type."""
    args = typing.get_args(t) if typing.get_origin(t) in (typing.Union, types.UnionType) else (t,)
    null = type(None) in args
    rest = [a for a in args if a is not type(None)]
    if not rest:
        return "any", None, None, True
    if len(rest) == 1:
        t = rest[0]
        if t is bool:
            return "boolean", None, None, null
        if t is str or typing.get_origin(t) is Literal:
            return "string", None, None, null
        if t is int:
            return "integer", None, None, null
        if t is float:
            return "number", None, None, null
        if isinstance(t, type) and issubclass(t, msgspec.Struct):
            return "object", t, None, null
        if t is dict or typing.get_origin(t) is dict:
            return "object", None, None, null
        if t is list or typing.get_origin(t) is list:
            (item,) = typing.get_args(t) or (Any,)
            ik, isub, _, _ = _kind(_strip(item)[0])
            return "array", isub, ik, null
        return "any", None, None, null
    kinds = sorted({_kind(a)[0] for a in rest})
    if kinds == ["integer", "number"]:
        return "number", None, None, null
    if kinds == ["object", "string"]:
        sub = next((a for a in rest if isinstance(a, type) and issubclass(a, msgspec.Struct)), None)
        return "string|object", sub, None, null
    return "any", None, None, null


@cache
def _plan(struct: type[msgspec.Struct]) -> tuple[_Field, ...]:
    """The contract of one wire Struct's fields, read once from its annotations."""
    out = []
    for f in struct_fields(struct):  # its types are the annotations evaluated, Annotated kept
        t, rule = _strip(f.type)
        kind, sub, items, null = _kind(t)
        if typing.get_origin(t) is Literal and (rule is None or rule.one_of is None):
            lit = Rule(one_of=typing.get_args(t))
            rule = lit if rule is None else rule  # an explicit rule wins
        if rule is not None and rule.of is not None:
            kind, sub, items, _ = _kind(rule.of)
        if rule is not None and rule.kind is not None:
            kind = rule.kind
        required = f.required if rule is None or rule.required is None else rule.required
        if rule is not None and rule.nullable is not None:
            nullable = rule.nullable
        elif required and not f.required:  # the spec requires what emitters may omit: ``None`` is decoding's
            nullable = False
        else:
            nullable = null or not required
        out.append(_Field(f.encode_name, kind, required, nullable, rule, sub, items))
    return tuple(out)


def outcome_keys(struct: type[msgspec.Struct]) -> tuple[str, ...]:
    """The wire keys of ``struct``'s fields marked ``Rule(by_outcome=True)``."""
    return tuple(f.key for f in _plan(struct) if f.rule is not None and f.rule.by_outcome)


def type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float | Decimal):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def join_path(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{key!r}]"


class Checker:
    """Collects violations of one document; helpers check one field each."""

    def __init__(self, dialect: str, document: bytes = b"") -> None:
        self.dialect = dialect
        self.document = document
        """The document's bytes, for rules on what is sent (code-graph ``approxTokens``)."""
        self.violations: list[Violation] = []

    def add(self, path: str, message: str) -> None:
        """Record one violation (a message or path quoting a huge input value is cut)."""
        if len(message) > MESSAGE_LIMIT or len(path) > MESSAGE_LIMIT:
            message, path = excerpt(message, MESSAGE_LIMIT), excerpt(path, MESSAGE_LIMIT)
        self.violations.append(Violation(path, message, self.dialect))

    def field(
        self,
        obj: dict[str, Any],
        key: str,
        path: str,
        kind: str,
        *,
        required: bool = True,
        nullable: bool = False,
    ) -> Any:
        """``obj[key]`` if present and of JSON type ``kind`` (``MISSING`` otherwise, after reporting)."""
        p = join_path(path, key)
        if key not in obj:
            if required:
                self.add(p, f"missing required field (expected {article(kind)})")
            return MISSING
        v = obj[key]
        if v is None and nullable:
            return None
        if not _JSON_TYPES[kind](v):
            self.add(p, f"expected {article(kind)}{' or null' if nullable else ''}, got {type_name(v)}")
            return MISSING
        return v

    def wire(
        self, obj: dict[str, Any], struct: type[msgspec.Struct], path: str = "$", *, by_outcome: bool = False
    ) -> None:
        """Check ``obj`` against the wire Struct ``struct`` read as a contract (see the module doc):
        each field's type, presence and declared :class:`Rule`, nested Structs and arrays of them.
        The fields marked ``Rule(by_outcome=True)`` are skipped, or with ``by_outcome`` the only
        ones checked (once the dialect's ``invariants`` know the outcome)."""
        for f in _plan(struct):
            if (f.rule is not None and f.rule.by_outcome) == by_outcome:
                self._wire_field(obj, f, path)

    def member(self, obj: dict[str, Any], struct: type[msgspec.Struct], key: str, path: str = "$") -> None:
        """Check the one member ``key`` (its encode name) of ``obj`` as ``struct`` declares it, as
        :meth:`wire` does, a ``by_outcome`` field included (for ``invariants``)."""
        self._wire_field(obj, next(f for f in _plan(struct) if f.key == key), path)

    def _wire_field(self, obj: dict[str, Any], f: _Field, path: str) -> None:
        if f.kind == "string|object":
            v = self.field(obj, f.key, path, "any", required=f.required, nullable=f.nullable)
            if v is not MISSING and v is not None:
                self._one_of_string_object(v, join_path(path, f.key), f.sub)
            return
        v = self.field(obj, f.key, path, f.kind, required=f.required, nullable=f.nullable)
        if v is MISSING or v is None:
            return
        p = join_path(path, f.key)
        if f.rule is not None:
            f.rule.check(self, v, p)
        if f.kind == "object" and f.sub is not None:
            self.wire(v, f.sub, p)
        elif f.kind == "array" and f.items not in (None, "any"):
            for i, item in enumerate(v):
                ip = join_path(p, i)
                if f.items == "string|object":
                    self._one_of_string_object(item, ip, f.sub)
                elif not _JSON_TYPES[f.items](item):  # type: ignore[index]
                    self.add(ip, f"expected {article(f.items)}, got {type_name(item)}")  # type: ignore[arg-type]
                elif f.sub is not None:
                    self.wire(item, f.sub, ip)

    def _one_of_string_object(self, v: Any, path: str, sub: type[msgspec.Struct] | None) -> None:
        if isinstance(v, dict):
            if sub is not None:
                self.wire(v, sub, path)
        elif not isinstance(v, str):
            self.add(path, f"expected a string or an object, got {type_name(v)}")

    def timestamp_value(self, v: str, path: str, *, utc: bool) -> None:
        """Report a string that is not an ISO 8601 date-time with a zone (or not UTC when ``utc``)."""
        if not is_timestamp(v):
            self.add(path, f"expected an ISO 8601 date-time with a time zone, got {v!r}")
        elif utc and not (v.endswith("Z") or v.endswith("+00:00")):
            self.add(path, f"expected a UTC time stamp (ending in Z), got {v!r}")

    def objects(self, obj: dict[str, Any], key: str, path: str, *, required: bool) -> list[tuple[str, dict[str, Any]]]:
        """The (path, object) entries of an array of objects; reports non-object entries."""
        items = self.field(obj, key, path, "array", required=required, nullable=not required)
        out: list[tuple[str, dict[str, Any]]] = []
        if isinstance(items, list):
            p = join_path(path, key)
            for i, item in enumerate(items):
                if isinstance(item, dict):
                    out.append((join_path(p, i), item))
                else:
                    self.add(join_path(p, i), f"expected an object, got {type_name(item)}")
        return out


def article(kind: str) -> str:
    return {"any": "a value", "array": "an array", "integer": "an integer", "object": "an object"}.get(
        kind, f"a {kind}"
    )
