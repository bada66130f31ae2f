"""Dialect registries: immutable sets of dialects found by name, alias or snake_case spelling.

The base registry (:func:`bundled`) holds the bundled dialects, found by name: each module
``envglot.dialects.<name>`` is known by ``[declare]`` of ``mappings/<name>.toml`` (its name,
aliases, description and shape: a :class:`Deferred` entry, :func:`defer`) and compiled with its
hooks module (:func:`~envglot.dialect.compile_hooks`, which adds it: :func:`register`) when a
registry first finds it by name or lists its dialects; ``import envglot`` compiles none of
them (:func:`shipped`). When the base is first built it also
loads the installed plugins, the ``envglot.dialects`` entry points (``docs/adding-a-dialect.md``,
"A team's dialect with hooks"); one that clashes with a bundled dialect is skipped with a
warning, and ``ENVGLOT_NO_PLUGINS=1`` loads none. A dialect declared in a
TOML file (:mod:`envglot.declared`) is never added to the base: it lives only in the
registries built with it (:meth:`Registry.adding`), which a
:class:`~envglot.mappings.Mappings` (and so a ``Converter``) keeps.

The tables (:func:`envglot.mappings.load_mappings`) load one table per dialect of a registry and
keep it (``Mappings.registry``).
"""

from __future__ import annotations

import _thread
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from .errors import MappingError, UnknownDialectError
from .tomlfile import read_upto

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from .declare import Shape
    from .dialect import Dialect

__all__ = [
    "PLUGIN_GROUP",
    "Deferred",
    "Registry",
    "bundled",
    "defer",
    "dialect_names",
    "get_dialect",
    "is_shipped",
    "register",
    "registered",
    "reset",
    "shipped",
    "shipped_dialect",
    "shipped_entry",
    "writable_names",
]

PLUGIN_GROUP = "envglot.dialects"
"""The entry-point group an installed distribution registers its dialect modules in."""

_LOADING = _thread.RLock()
"""Held while a deferred dialect compiles: two threads never compile one module twice."""


class Deferred:
    """A bundled dialect known by its declaration, compiled on first use.

    Its name, aliases, description and shape are ``[declare]`` facts (what a registry and the
    tables need); :meth:`dialect` runs ``load`` (compiling the hooks module, which registers
    the dialect) once, the first time the dialect itself is needed.
    """

    __slots__ = ("_dialect", "_load", "aliases", "description", "name", "shape")

    declared = False
    """Like :attr:`Dialect.declared <envglot.dialect.Dialect.declared>`: a bundled dialect is not."""

    def __init__(
        self, name: str, aliases: tuple[str, ...], description: str, shape: Shape, load: Callable[[], object]
    ) -> None:
        self.name = name
        self.aliases = aliases
        self.description = description
        self.shape = shape
        self._load = load
        self._dialect: Dialect | None = None

    def dialect(self) -> Dialect:
        """The compiled dialect (compiled now if it was not yet)."""
        d = self._dialect
        if d is not None:
            return d
        with _LOADING:
            d = _BUNDLED.get(self.name)
            if d is None:
                self._load()
                d = _BUNDLED.get(self.name)
                if d is None:
                    raise MappingError(f"loading the bundled dialect {self.name} compiled no dialect of that name")
            self._dialect = d
        return d

    def own_table(self) -> None:
        """A bundled dialect's table is ``mappings/<name>.toml`` (see :meth:`Dialect.own_table
        <envglot.dialect.Dialect.own_table>`)."""
        return None

    def __reduce__(self) -> tuple[Callable[[str], Deferred], tuple[str]]:
        return shipped_entry, (self.name,)  # the receiving process's own entry

    def __repr__(self) -> str:
        return f"<dialect {self.name} (not compiled yet)>"


def _compiled(unit: Dialect | Deferred) -> Dialect:
    return unit.dialect() if isinstance(unit, Deferred) else unit


class Registry:
    """An immutable set of dialects, found by name, alias or snake_case spelling.

    The base registry (:func:`bundled`) holds the bundled dialects; :meth:`adding` gives a new
    registry with more (declared) dialects and leaves this one as it was. A
    :class:`~envglot.mappings.Mappings` keeps the registry it was loaded with, so what a
    ``Converter`` reads, detects and writes never changes after it is built.
    """

    __slots__ = ("_sorted", "_spellings")

    def __init__(self, dialects: Iterable[Dialect | Deferred] = ()) -> None:
        spellings: dict[str, Dialect | Deferred] = {}
        for d in dialects:
            if isinstance(d, Deferred) and d._dialect is not None:
                d = d._dialect  # compiled already: the registry holds the dialect itself
            for spelling in dict.fromkeys((d.name, d.name.replace("-", "_"), *d.aliases)):
                other = spellings.get(spelling)
                if other is not None and other is not d:
                    raise ValueError(f"{spelling!r} names two dialects: {other.name} and {d.name}")
                spellings[spelling] = d
        self._spellings = spellings
        self._sorted = tuple(sorted({d.name: d for d in spellings.values()}.values(), key=lambda d: d.name))

    def __iter__(self) -> Iterator[Dialect]:
        """Every dialect, by name (each bundled one not compiled yet is compiled now)."""
        return map(_compiled, self._sorted)

    def entries(self) -> tuple[Dialect | Deferred, ...]:
        """Every dialect, by name, without compiling any: a bundled one not compiled yet is its
        :class:`Deferred` entry (its name, aliases, description and shape)."""
        return tuple(d._dialect or d if isinstance(d, Deferred) else d for d in self._sorted)

    def __len__(self) -> int:
        return len(self._sorted)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._entry(name) is not None

    def __repr__(self) -> str:
        return f"<Registry {', '.join(self.names())}>"

    def _entry(self, name: str) -> Dialect | Deferred | None:
        d = self._spellings.get(name)
        return d if d is not None else self._spellings.get(name.lower())

    def find(self, name: str) -> Dialect | None:
        """The dialect called ``name`` (or an alias, or its snake_case spelling), else ``None``."""
        d = self._entry(name)
        return _compiled(d) if d is not None else None

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

    def adding(self, *dialects: Dialect | Deferred) -> Registry:
        """A new registry with this one's dialects and ``dialects`` (a name or spelling that is
        taken already is a ``ValueError``); this one is unchanged (none is compiled)."""
        return Registry((*self._sorted, *dialects))


_BUNDLED: dict[str, Dialect] = {}
"""Filled by :func:`register` as the modules of ``envglot.dialects`` are compiled."""
_DEFERRED: dict[str, Deferred] = {}
"""Every bundled dialect, by name, before it is compiled: filled by :func:`defer`."""
_DEFINED: dict[str, dict[str, Dialect]] = {}
"""Dialects defined outside ``envglot.dialects``, by module: a plugin's, taken when it loads."""
_BASE: list[Registry] = []
"""The base registry once built; a later :func:`register` drops it (built again on use)."""


def register(d: Dialect) -> None:
    """Add the bundled dialect ``d`` to the base registry (a later one of the same name replaces it).

    A dialect defined outside ``envglot.dialects`` is only noted: it joins the base if an
    ``envglot.dialects`` entry point names its module and it passes the checks (:func:`bundled`).
    """
    module = type(d).__module__
    if module.startswith("envglot.dialects."):
        replaced = d.name in _BUNDLED
        _BUNDLED[d.name] = d
        if replaced or d.name not in _DEFERRED:  # compiling a deferred one changes no registry
            _BASE.clear()
    else:
        _DEFINED.setdefault(module, {})[d.name] = d


def defer(name: str, aliases: tuple[str, ...], description: str, shape: Shape, load: Callable[[], object]) -> Deferred:
    """Make the bundled dialect ``name`` known by its declared facts; ``load`` compiles it (which
    registers it: :func:`register`) when it is first needed."""
    entry = _DEFERRED[name] = Deferred(name, aliases, description, shape, load)
    _BASE.clear()
    return entry


def shipped() -> Registry:
    """The dialects of ``envglot.dialects`` alone (no plugin loaded; what ``envglot.DIALECTS`` lists),
    none compiled by building it."""
    entries: dict[str, Dialect | Deferred] = {**_DEFERRED, **_BUNDLED}  # a compiled dialect is itself
    return Registry(entries.values())


def is_shipped(d: Dialect) -> bool:
    """Whether ``d`` is the compiled bundled dialect of its name (what :func:`shipped_dialect` gives)."""
    return _BUNDLED.get(d.name) is d


def shipped_entry(name: str) -> Deferred:
    """The :class:`Deferred` entry of bundled dialect ``name`` (how a pickled one is restored)."""
    return _DEFERRED[name]


def shipped_dialect(name: str) -> Dialect:
    """Bundled dialect ``name``, compiled (how a pickled one is restored: by name, in the receiving process)."""
    d = _BUNDLED.get(name)
    return d if d is not None else _DEFERRED[name].dialect()


def bundled() -> Registry:
    """The base registry: every bundled dialect (``envglot.dialects``) and every installed
    plugin that passes the checks, and nothing declared. Plugins load once, when it is first built."""
    if not _BASE:
        base = shipped()
        _BASE.append(base.adding(*_plugins(base)))
    return _BASE[0]


def reset() -> None:
    """Forget the base registry: the next :func:`bundled` builds it again and loads the
    installed plugins anew (a ``Mappings`` already loaded keeps the registry it was built with)."""
    _BASE.clear()


def _plugins(base: Registry) -> list[Dialect]:
    """The dialects of the installed ``envglot.dialects`` entry points, by entry-point name;
    each one refused is skipped with one warning on the ``envglot`` logger."""
    if os.environ.get("ENVGLOT_NO_PLUGINS", "") not in ("", "0") or not _any_declared():
        return []
    from importlib.metadata import entry_points  # only here: ``import envglot`` never pays for it

    taken = base
    out: list[Dialect] = []
    for ep in sorted(entry_points(group=PLUGIN_GROUP), key=lambda e: (e.name, e.value)):
        found = _plugin(ep, taken)
        if isinstance(found, str):
            import logging

            logging.getLogger("envglot").warning(
                "envglot: skipped the %s entry point %s = %s: %s", PLUGIN_GROUP, ep.name, ep.value, found
            )
            continue
        taken = taken.adding(found)
        out.append(found)
    return out


def _any_declared() -> bool:
    """Whether an installed distribution on ``sys.path`` (its ``*.dist-info``/``*.egg-info``
    folder) declares an ``envglot.dialects`` entry point: a scan of a few folders, so that
    building the base registry imports ``importlib.metadata`` (~20 ms) only when one does.
    Each ``entry_points.txt`` is read by descriptor (its first MiB, in reads of 64 KiB: a read of
    a MiB at once allocates that much for each of a venv's hundred small files)."""
    marker = f"[{PLUGIN_GROUP}]".encode()
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as it:
                infos = [e.path for e in it if e.name.endswith((".dist-info", ".egg-info"))]
        except OSError:  # not a folder (a zip file is left to importlib.metadata's own finders)
            continue
        for info in infos:
            try:
                fd = os.open(os.path.join(info, "entry_points.txt"), os.O_RDONLY)
            except OSError:
                continue
            try:
                if marker in read_upto(fd, 1 << 20):
                    return True
            except OSError:
                continue
            finally:
                os.close(fd)
    return False


def _plugin(ep: EntryPoint, taken: Registry) -> Dialect | str:
    """The one dialect the entry point's module defines, or why it is refused."""
    try:
        ep.load()
    except Exception as exc:  # a plugin's code is not ours: any failure skips it
        return f"cannot import {ep.value}: {type(exc).__name__}: {str(exc)[:200]}"
    module = sys.modules.get(ep.module)
    held = {id(v) for v in vars(module).values()} if module is not None else set()
    found = [d for d in _DEFINED.get(ep.module, {}).values() if id(type(d)) in held]
    if len(found) != 1:
        return f"module {ep.module} defines {len(found) or 'no'} Dialect subclasses with a name (one is needed)"
    d = found[0]
    why = _clash(d, taken)
    if why is not None:
        return f"{d.name}: {why}"
    try:
        table = d.own_table()
    except Exception as exc:  # its table is data of the plugin's: a bad one skips it
        return f"{d.name}: its table cannot be read: {str(exc)[:300]}"
    if table is None:
        return f"{d.name}: it names no table (set table_file to a TOML file beside its module)"
    type(d).plugin = ep.name
    return d


def _clash(d: Dialect, taken: Registry) -> str | None:
    """Why ``d`` cannot join ``taken`` (its name, an alias or its detection keys are taken), else ``None``."""
    for spelling in (d.name, d.name.replace("-", "_"), *d.aliases):
        other = taken.find(spelling)
        if other is not None:
            return f"{spelling!r} already names the dialect {other.name}"
    if d.fallback:
        return "a plugin cannot be the fallback dialect (bare payloads are read by a bundled one)"
    if d.declared:
        return "a declared dialect is loaded from its TOML file (--mappings), not as a plugin"
    owners = {k: o.name for o in taken for k in o.keys}
    if not d.keys or d.keys.issubset(owners):
        whose = ", ".join(f"{k!r}: {owners[k]}" for k in sorted(d.keys))
        return (
            f"its detection keys ({whose or 'none'}) are all keys of dialects already registered; "
            "name at least one top-level member no other dialect has"
        )
    return None


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
