"""The dialect registry: CLI name (kebab-case) -> module (snake_case). One line per dialect."""

from __future__ import annotations

from types import ModuleType

from . import code_graph, dotbot, errorcode, legacy_v1, response_v2, result

__all__ = ["DIALECTS", "NAMES", "WRITABLE", "get_dialect"]

DIALECTS: dict[str, ModuleType] = {
    dotbot.NAME: dotbot,
    result.NAME: result,
    errorcode.NAME: errorcode,
    code_graph.NAME: code_graph,
    response_v2.NAME: response_v2,
    legacy_v1.NAME: legacy_v1,
}
NAMES: tuple[str, ...] = tuple(DIALECTS)
WRITABLE: tuple[str, ...] = tuple(n for n, m in DIALECTS.items() if getattr(m, "WRITABLE", True))
ALIASES: dict[str, str] = {"v2": "response-v2", "v1": "legacy-v1", "adr-003": "result"}
"""Short names accepted for a dialect (the underscore spellings, ``response_v2``, are accepted too)."""
_ALIASES = {n.replace("-", "_"): n for n in NAMES} | ALIASES


def get_dialect(name: str) -> ModuleType:
    """The module of dialect ``name``; raises ``UnknownDialectError`` with a suggestion."""
    mod = DIALECTS.get(name)
    if mod is None:
        alias = _ALIASES.get(name.lower())
        if alias is not None:
            return DIALECTS[alias]
        from ..errors import UnknownDialectError

        raise UnknownDialectError(name, NAMES)
    return mod
