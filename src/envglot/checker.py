"""The contract checker: helpers a dialect's ``contract`` uses to list every violation.

Each dialect declares its contract checks on its class (``Dialect.contract``); they call a
:class:`Checker` that records a :class:`Violation` per broken rule, with its JSON path.
:func:`envglot.validate` runs them (see ``validation.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import msgspec

__all__ = ["MISSING", "Checker", "Violation", "article", "join_path", "type_name"]


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

    def optional(self, obj: dict[str, Any], key: str, path: str, kind: str) -> Any:
        """An optional field (absent or null allowed)."""
        return self.field(obj, key, path, kind, required=False, nullable=True)

    def const(self, obj: dict[str, Any], key: str, path: str, value: str) -> None:
        v = self.field(obj, key, path, "string")
        if isinstance(v, str) and v != value:
            self.add(join_path(path, key), f"must be {value!r}, got {v!r}")

    def enum(self, obj: dict[str, Any], key: str, path: str, values: Sequence[str], *, required: bool = True) -> Any:
        v = self.field(obj, key, path, "string", required=required, nullable=not required)
        if isinstance(v, str) and v not in values:
            self.add(join_path(path, key), f"must be one of {', '.join(map(repr, values))}, got {v!r}")
            return MISSING
        return v

    def non_negative(self, obj: dict[str, Any], key: str, path: str, kind: str, *, required: bool = True) -> Any:
        v = self.field(obj, key, path, kind, required=required, nullable=not required)
        if isinstance(v, int | float | Decimal) and v < 0:
            self.add(join_path(path, key), f"must not be negative, got {v}")
        return v

    def timestamp(self, obj: dict[str, Any], key: str, path: str, *, utc: bool) -> None:
        v = self.field(obj, key, path, "string")
        if not isinstance(v, str):
            return
        from .dialects._common import is_timestamp  # (the dialects package imports this module)

        if not is_timestamp(v):
            self.add(join_path(path, key), f"expected an ISO 8601 date-time with a time zone, got {v!r}")
        elif utc and not (v.endswith("Z") or v.endswith("+00:00")):
            self.add(join_path(path, key), f"expected a UTC time stamp (ending in Z), got {v!r}")

    def strings(self, obj: dict[str, Any], key: str, path: str) -> None:
        """An optional array of strings."""
        items = self.optional(obj, key, path, "array")
        if isinstance(items, list):
            p = join_path(path, key)
            for i, s in enumerate(items):
                if not isinstance(s, str):
                    self.add(join_path(p, i), f"expected a string, got {type_name(s)}")

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
