"""Dialect registries: immutable sets of dialects found by name, alias or snake_case spelling.

The base registry (:func:`bundled`) holds the bundled dialects: defining a
:class:`~envglot.dialect.Dialect` subclass that is not declared adds it (:func:`register`),
and ``import envglot`` imports them all (:mod:`envglot.dialects`). A dialect declared in a
TOML file (:mod:`envglot.declared`) is never added to the base: it lives only in the
registries built with it (:meth:`Registry.adding`), which a
:class:`~envglot.mappings.Mappings` (and so a ``Converter``) keeps.

The tables (:func:`envglot.mappings.load_mappings`) load one table per dialect of a registry and
keep it (``Mappings.registry``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from .errors import UnknownDialectError

if TYPE_CHECKING:
    from .dialect import Dialect

__all__ = ["Registry", "bundled", "dialect_names", "get_dialect", "register", "registered", "writable_names"]


class Registry:
    """An immutable set of dialects, found by name, alias or snake_case spelling.

    The base registry (:func:`bundled`) holds the bundled dialects; :meth:`adding` gives a new
    registry with more (declared) dialects and leaves this one as it was. A
    :class:`~envglot.mappings.Mappings` keeps the registry it was loaded with, so what a
    ``Converter`` reads, detects and writes never changes after it is built.
    """

    __slots__ = ("_sorted", "_spellings")

    def __init__(self, dialects: Iterable[Dialect] = ()) -> None:
        spellings: dict[str, Dialect] = {}
        for d in dialects:
            for spelling in dict.fromkeys((d.name, d.name.replace("-", "_"), *d.aliases)):
                other = spellings.get(spelling)
                if other is not None and other is not d:
                    raise ValueError(f"{spelling!r} names two dialects: {other.name} and {d.name}")
                spellings[spelling] = d
        self._spellings = spellings
        self._sorted = tuple(sorted({d.name: d for d in spellings.values()}.values(), key=lambda d: d.name))

    def __iter__(self) -> Iterator[Dialect]:
        """Every dialect, by name."""
        return iter(self._sorted)

    def __len__(self) -> int:
        return len(self._sorted)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.find(name) is not None

    def __repr__(self) -> str:
        return f"<Registry {', '.join(self.names())}>"

    def find(self, name: str) -> Dialect | None:
        """The dialect called ``name`` (or an alias, or its snake_case spelling), else ``None``."""
        d = self._spellings.get(name)
        return d if d is not None else self._spellings.get(name.lower())

    def get(self, name: str) -> Dialect:
        """The dialect called ``name``; :class:`~envglot.errors.UnknownDialectError` otherwise."""
        d = self.find(name)
        if d is None:
            raise UnknownDialectError(name, self.names())
        return d

    def names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self._sorted)

    def writable_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self._sorted if d.shape.writable)

    def adding(self, *dialects: Dialect) -> Registry:
        """A new registry with this one's dialects and ``dialects`` (a name or spelling that is
        taken already is a ``ValueError``); this one is unchanged."""
        return Registry((*self._sorted, *dialects))


_BUNDLED: dict[str, Dialect] = {}
"""Filled by :func:`register` as ``envglot.dialects`` imports its modules."""
_BASE: list[Registry] = []
"""The base registry once built; a later :func:`register` drops it (built again on use)."""


def register(d: Dialect) -> None:
    """Add the bundled dialect ``d`` to the base registry (a later one of the same name replaces it)."""
    _BUNDLED[d.name] = d
    _BASE.clear()


def bundled() -> Registry:
    """The base registry: every bundled dialect (``envglot.dialects``), and nothing declared."""
    if not _BASE:
        _BASE.append(Registry(_BUNDLED.values()))
    return _BASE[0]


def registered() -> Iterator[Dialect]:
    """Every bundled dialect, by name (a declared one lives in the registries built with it)."""
    return iter(bundled())


def dialect_names() -> tuple[str, ...]:
    return bundled().names()


def writable_names() -> tuple[str, ...]:
    return bundled().writable_names()


def get_dialect(name: str) -> Dialect:
    """The bundled dialect called ``name`` (or an alias, or its snake_case spelling)."""
    return bundled().get(name)
