"""The bundled dialects: every module of this package is the hooks module of one dialect.

Importing the package imports each module (those not starting with ``_``) and compiles its
dialect from ``[declare]`` of ``mappings/<name>.toml`` and the module's hooks
(:func:`~envglot.dialect.compile_hooks`), which registers it; nothing here names a dialect.
The names below are the bundled modules' dialects: an installed plugin
(``envglot.registry.bundled``) is not among them.
"""

from __future__ import annotations

import importlib
import os

from ..dialect import Dialect, compile_hooks, get_dialect
from ..registry import shipped

__all__ = ["ALIASES", "DIALECTS", "NAMES", "WRITABLE", "get_dialect"]

for _f in sorted(os.listdir(__path__[0])):  # what pkgutil.iter_modules lists here, without its imports
    _name, _ext = os.path.splitext(_f)
    if _ext == ".py" and not _name.startswith("_"):
        compile_hooks(importlib.import_module(f"{__name__}.{_name}"))

_SHIPPED = shipped()  # not the base registry: building it would load the installed plugins
DIALECTS: dict[str, Dialect] = {d.name: d for d in _SHIPPED}
NAMES: tuple[str, ...] = _SHIPPED.names()
WRITABLE: tuple[str, ...] = _SHIPPED.writable_names()
ALIASES: dict[str, str] = {a: d.name for d in _SHIPPED for a in d.aliases}
"""Short names accepted for a dialect (the underscore spellings, ``response_v2``, are accepted too)."""
