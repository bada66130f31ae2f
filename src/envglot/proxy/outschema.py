"""Checking an upstream's ``structuredContent`` against its own ``outputSchema``, without its regexes.

An upstream's ``pattern`` and ``patternProperties`` are regular expressions it chose; one
with catastrophic backtracking would block the proxy's event loop (Python's ``re`` cannot
be interrupted). The proxy checks every other keyword and skips those, and says so once per
tool (:attr:`OutputCheck.skipped`). The SDK's own check is turned off (:class:`~.sdk.Session`).
The proxy republishes a tool's schema as checked (:attr:`OutputCheck.schema`), so its
clients never run those regexes either.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_SCHEMA_DEPTH", "OutputCheck", "without_patterns"]

MAX_SCHEMA_DEPTH = 64
"""Deeper schema nesting is not checked at all (the SDK refuses far deeper messages anyway)."""
_REGEX_KEYS = frozenset({"pattern", "patternProperties"})
_DATA = frozenset({"const", "enum", "default", "examples", "required"})
"""Keywords whose values are data (or names), not schemas."""
_NAMED = frozenset({"properties", "$defs", "definitions", "dependentSchemas", "dependencies"})
"""Keywords whose values map names to schemas."""
_OPEN_WHEN_PATTERNS = ("additionalProperties", "unevaluatedProperties")
"""Dropped beside ``patternProperties``: without the patterns they would refuse what the patterns admit."""


class _TooDeepError(Exception):
    pass


def without_patterns(schema: Any, depth: int = 0) -> tuple[Any, bool]:
    """``schema`` with every regex keyword removed, and whether there was one.

    Raises:
        _TooDeepError: nested deeper than :data:`MAX_SCHEMA_DEPTH`.
    """
    if depth > MAX_SCHEMA_DEPTH:
        raise _TooDeepError
    if isinstance(schema, list):
        items = [without_patterns(x, depth + 1) for x in schema]
        return [x for x, _ in items], any(s for _, s in items)
    if not isinstance(schema, dict):
        return schema, False
    skipped = any(k in schema for k in _REGEX_KEYS)
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _REGEX_KEYS or ("patternProperties" in schema and key in _OPEN_WHEN_PATTERNS):
            continue
        if key in _DATA:
            out[key] = value
            continue
        if key in _NAMED and isinstance(value, dict):  # names -> schemas: a property may be called "pattern"
            named = {name: without_patterns(sub, depth + 1) for name, sub in value.items()}
            out[key] = {name: sub for name, (sub, _) in named.items()}
            skipped = skipped or any(deeper for _, deeper in named.values())
            continue
        out[key], deeper = without_patterns(value, depth + 1)
        skipped = skipped or deeper
    return out, skipped


class OutputCheck:
    """One tool's output check: its ``outputSchema`` minus the regexes, compiled once."""

    def __init__(self, schema: dict[str, Any]) -> None:
        from jsonschema import SchemaError
        from jsonschema.validators import validator_for
        from referencing import Registry

        self.skipped = False
        """The schema had regex keywords, which are not checked."""
        self.unchecked: str | None = None
        """Why nothing is checked (a schema too deep or invalid), or ``None``."""
        self.schema: dict[str, Any] | None = None
        """The schema as checked (no regex keywords), ``None`` when nothing is checked."""
        self._validator: Any = None
        try:
            stripped, self.skipped = without_patterns(schema)
            cls: Any = validator_for(stripped)
            cls.check_schema(stripped)
            self._validator = cls(stripped, registry=Registry())  # no $ref is fetched
            self.schema = stripped
        except _TooDeepError:
            self.unchecked = f"its outputSchema is nested deeper than {MAX_SCHEMA_DEPTH} levels"
        except SchemaError as exc:
            self.unchecked = f"its outputSchema is not a valid JSON Schema: {exc.message[:200]}"

    def problem(self, structured: Any) -> str | None:
        """Why ``structured`` (a result's ``structuredContent``) breaks the schema, or ``None``."""
        if self._validator is None:
            return None
        if structured is None:
            return "the tool has an outputSchema but returned no structuredContent"
        from jsonschema.exceptions import best_match
        from referencing.exceptions import Unresolvable

        try:
            error = best_match(self._validator.iter_errors(structured))
        except Unresolvable as exc:
            self.unchecked, self._validator = f"its outputSchema has a $ref that cannot be resolved: {exc}", None
            return None
        if error is None:
            return None
        return f"structuredContent breaks the tool's outputSchema: {error.message[:300]}"
