"""The bundled dialects: every module of this package is the hooks module of one dialect.

Importing the package makes each module's dialect (those not starting with ``_``) known by
``[declare]`` of ``mappings/<name>.toml`` (:func:`~envglot.dialect.defer_hooks`); a dialect is
compiled from its declaration and its module's hooks (:func:`~envglot.dialect.compile_hooks`,
which registers it) when it is first needed: found by name, or every one when a registry's
dialects are listed (detection). Nothing here names a dialect. The names below are the bundled
modules' dialects: an installed plugin (``envglot.registry.bundled``) is not among them.
"""

from __future__ import annotations

import os
from functools import partial
from typing import TYPE_CHECKING

from ..dialect import compile_hooks, defer_hooks, get_dialect
from ..registry import shipped

if TYPE_CHECKING:
    from ..dialect import Dialect

__all__ = ["ALIASES", "DIALECTS", "NAMES", "WRITABLE", "get_dialect"]


def _compile(module: str) -> None:
    import importlib  # only here: making the dialects known imports no hooks module

    compile_hooks(importlib.import_module(f"{__name__}.{module}"))


for _f in sorted(os.listdir(__path__[0])):  # what pkgutil.iter_modules lists here, without its imports
    _name, _ext = os.path.splitext(_f)
    if _ext == ".py" and not _name.startswith("_"):
        defer_hooks(f"{__name__}.{_name}", partial(_compile, _name))

_SHIPPED = shipped()  # not the base registry: building it would load the installed plugins
NAMES: tuple[str, ...] = _SHIPPED.names()
WRITABLE: tuple[str, ...] = _SHIPPED.writable_names()
ALIASES: dict[str, str] = {a: d.name for d in _SHIPPED.entries() for a in d.aliases}
"""Short names accepted for a dialect (the underscore spellings, ``response_v2``, are accepted too)."""

if TYPE_CHECKING:
    DIALECTS: dict[str, Dialect]
    """Every bundled dialect by name, compiled (the first use compiles them all)."""


def __getattr__(name: str) -> object:
    """``DIALECTS``, built (and every bundled dialect compiled) on first use."""
    if name != "DIALECTS":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    found = globals()["DIALECTS"] = {d.name: d for d in _SHIPPED}
    return found
