"""The dialect registry: every dialect by name (defining a :class:`~envglot.dialect.Dialect`
subclass registers it; ``import envglot`` imports the bundled ones, :mod:`envglot.dialects`).

It sits below the tables, which load one table per registered dialect.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from .errors import UnknownDialectError

if TYPE_CHECKING:
    from .dialect import Dialect

__all__ = ["dialect_names", "find", "get_dialect", "register", "registered", "remove", "writable_names"]

_REGISTRY: dict[str, Dialect] = {}


def register(d: Dialect) -> None:
    """Register ``d`` under its name (a later dialect of the same name replaces it)."""
    _REGISTRY[d.name] = d


def find(name: str) -> Dialect | None:
    """The dialect registered under exactly ``name`` (no alias), or ``None``."""
    return _REGISTRY.get(name)


def remove(name: str) -> None:
    """Unregister the dialect ``name`` (declared dialects only; see :func:`envglot.mappings.unregister`)."""
    del _REGISTRY[name]


def registered() -> Iterator[Dialect]:
    """Every registered dialect, by name."""
    return iter(sorted(_REGISTRY.values(), key=lambda d: d.name))


def dialect_names() -> tuple[str, ...]:
    return tuple(d.name for d in registered())


def writable_names() -> tuple[str, ...]:
    return tuple(d.name for d in registered() if d.shape.writable)


def get_dialect(name: str) -> Dialect:
    """The dialect called ``name`` (or an alias, or its snake_case spelling)."""
    d = _REGISTRY.get(name)
    if d is not None:
        return d
    low = name.lower()
    for d in _REGISTRY.values():
        if low == d.name.replace("-", "_") or low in d.aliases:
            return d
    raise UnknownDialectError(name, dialect_names())
