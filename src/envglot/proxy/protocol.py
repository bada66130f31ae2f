"""The MCP protocol-error table (``mappings/mcp-protocol.toml``): what the proxy answers
when an upstream fails below the tool (a JSON-RPC error, a timeout, a dead process).

Read with :func:`envglot.tomlfile.load_toml` (bounded) and validated strictly: an unknown
key, a wrong type, an unknown answer or a category that is not canonical is a
:class:`MappingError` naming the file and the row.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any, Literal

import msgspec

from ..canonical import Problem
from ..errors import MappingError
from ..mappings import Mappings, default_mappings, mappings_dir
from ..tomlfile import load_toml

__all__ = [
    "EVENTS",
    "REVISIONS",
    "TABLE_NAME",
    "ProtocolRule",
    "ProtocolTable",
    "TextRule",
    "load_protocol_table",
    "protocol_table",
]

TABLE_NAME = "mcp-protocol.toml"
EVENTS = ("timeout", "upstream_exited", "connect_failed", "invalid_result", "unreadable_result", "result_too_large")
"""The failures the proxy observes itself; each must have an ``[events.NAME]`` row."""
REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28", "sdk", "proxy")
"""What a row's ``revision`` may say: an MCP revision, ``sdk`` or ``proxy``."""


class _Row(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """What every row says: its name, whose rule it follows, and the canonical problem it answers with."""

    name: str
    revision: str
    """Whose rule the row follows: an MCP revision, ``sdk`` or ``proxy`` (:data:`REVISIONS`)."""
    category: str
    retryable: bool | None = None
    origin: str | None = None
    aspect: str | None = None

    def problem(self, message: str, **more: Any) -> Problem:
        """The canonical problem this row answers with (``more``: other Problem fields)."""
        return Problem(
            category=self.category,
            message=message,
            retryable=self.retryable,
            origin=self.origin,
            aspect=self.aspect,
            **more,
        )


class ProtocolRule(_Row, frozen=True, kw_only=True):
    """One row: how one protocol failure is answered."""

    answer: Literal["protocol", "envelope"]


class TextRule(_Row, frozen=True, kw_only=True):
    """One ``[[text]]`` row: a tool execution error an SDK reports as plain text."""

    pattern: str
    """A Python regular expression, matched at the start of the result's text."""

    def matches(self, text: str) -> bool:
        """Whether the pattern matches at the start of ``text`` (its first 1,000 characters)."""
        return _compiled(self.pattern).match(text[:1000]) is not None


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


class _File(msgspec.Struct, forbid_unknown_fields=True):
    jsonrpc: dict[str, ProtocolRule]
    fallback: ProtocolRule
    events: dict[str, ProtocolRule]
    text: list[TextRule] = []


class ProtocolTable(msgspec.Struct, frozen=True):
    """The loaded table: rules by JSON-RPC code, a fallback, and the proxy's own events."""

    jsonrpc: dict[int, ProtocolRule]
    fallback: ProtocolRule
    events: dict[str, ProtocolRule]
    text: tuple[TextRule, ...] = ()

    def for_code(self, code: int) -> ProtocolRule:
        """The rule for a JSON-RPC error code (the fallback when it has no row)."""
        return self.jsonrpc.get(code, self.fallback)

    def for_text(self, text: str) -> TextRule | None:
        """The first ``[[text]]`` row whose pattern matches an error text, if any."""
        return next((r for r in self.text if r.matches(text)), None)


def load_protocol_table(path: Path, mappings: Mappings | None = None) -> ProtocolTable:
    """Read and validate a protocol table.

    Raises:
        MappingError: the file is missing, not TOML, or breaks the table's schema.
    """
    m = mappings if mappings is not None else default_mappings()
    _, raw = load_toml(path, "MCP protocol table", error=MappingError)
    try:
        doc = msgspec.convert(raw, _File)
    except msgspec.ValidationError as exc:
        raise MappingError(f"{path}: {exc}") from None
    codes: dict[int, ProtocolRule] = {}
    for key, rule in doc.jsonrpc.items():
        try:
            codes[int(key)] = rule
        except ValueError:
            raise MappingError(f"{path}: [jsonrpc.{key!r}] is not an integer JSON-RPC code") from None
    rows = [(f"[jsonrpc.{k!r}]", r) for k, r in doc.jsonrpc.items()] + [("[fallback]", doc.fallback)]
    rows += [(f"[events.{k}]", r) for k, r in doc.events.items()]
    texts = [(f"[[text]] {r.name!r}", r) for r in doc.text]
    every: list[tuple[str, _Row]] = [*rows, *texts]
    for where, row in every:
        if row.category not in m.categories:
            raise MappingError(f"{path}: {where}: category {row.category!r} is not one of the canonical categories")
        if row.revision not in REVISIONS:
            raise MappingError(f"{path}: {where}: revision {row.revision!r} is not one of {', '.join(REVISIONS)}")
    for where, text_rule in texts:
        try:
            _compiled(text_rule.pattern)
        except re.error as exc:
            raise MappingError(f"{path}: {where}: pattern is not a regular expression: {exc}") from None
    for where, rule in [("[fallback]", doc.fallback)] + [(f"[events.{k}]", r) for k, r in doc.events.items()]:
        if rule.answer != "envelope":
            raise MappingError(f'{path}: {where}: answer must be "envelope" (only a JSON-RPC code can stay one)')
    missing = [e for e in EVENTS if e not in doc.events]
    unknown = [e for e in doc.events if e not in EVENTS]
    if missing or unknown:
        raise MappingError(
            f"{path}: [events] must have exactly {', '.join(EVENTS)}"
            + (f"; missing {', '.join(missing)}" if missing else "")
            + (f"; unknown {', '.join(unknown)}" if unknown else "")
        )
    return ProtocolTable(jsonrpc=codes, fallback=doc.fallback, events=doc.events, text=tuple(doc.text))


@functools.cache
def protocol_table() -> ProtocolTable:
    """The bundled table, loaded once."""
    return load_protocol_table(mappings_dir() / TABLE_NAME)
