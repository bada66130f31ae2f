"""The MCP protocol-error table (``mappings/mcp-protocol.toml``): what the proxy answers
when an upstream fails below the tool (a JSON-RPC error, a timeout, a dead process).

Read with :func:`envglot.tomlfile.load_toml` (bounded) and validated strictly: an unknown
key, a wrong type, an unknown answer or a category that is not canonical is a
:class:`MappingError` naming the file and the row.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal

import msgspec

from ..errors import MappingError
from ..mappings import Mappings, default_mappings, mappings_dir
from ..tomlfile import load_toml

__all__ = ["EVENTS", "TABLE_NAME", "ProtocolRule", "ProtocolTable", "load_protocol_table", "protocol_table"]

TABLE_NAME = "mcp-protocol.toml"
EVENTS = ("timeout", "upstream_exited", "connect_failed", "invalid_result", "unreadable_result", "result_too_large")
"""The failures the proxy observes itself; each must have an ``[events.NAME]`` row."""


class ProtocolRule(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One row: how one protocol failure is answered."""

    name: str
    answer: Literal["protocol", "envelope"]
    category: str
    retryable: bool | None = None
    origin: str | None = None
    aspect: str | None = None


class _File(msgspec.Struct, forbid_unknown_fields=True):
    jsonrpc: dict[str, ProtocolRule]
    fallback: ProtocolRule
    events: dict[str, ProtocolRule]


class ProtocolTable(msgspec.Struct, frozen=True):
    """The loaded table: rules by JSON-RPC code, a fallback, and the proxy's own events."""

    jsonrpc: dict[int, ProtocolRule]
    fallback: ProtocolRule
    events: dict[str, ProtocolRule]

    def for_code(self, code: int) -> ProtocolRule:
        """The rule for a JSON-RPC error code (the fallback when it has no row)."""
        return self.jsonrpc.get(code, self.fallback)


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
    for where, rule in rows:
        if rule.category not in m.categories:
            raise MappingError(f"{path}: {where}: category {rule.category!r} is not one of the canonical categories")
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
    return ProtocolTable(jsonrpc=codes, fallback=doc.fallback, events=doc.events)


@functools.cache
def protocol_table() -> ProtocolTable:
    """The bundled table, loaded once."""
    return load_protocol_table(mappings_dir() / TABLE_NAME)
