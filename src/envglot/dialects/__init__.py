"""The bundled dialects: every module of this package defines one :class:`~envglot.dialect.Dialect`.

Importing the package imports each module (those not starting with ``_``), and defining the
class registers it; nothing here names a dialect.
"""

from __future__ import annotations

import importlib
import os

from ..dialect import Dialect, dialect_names, get_dialect, registered, writable_names

__all__ = ["ALIASES", "DIALECTS", "NAMES", "WRITABLE", "get_dialect"]

for _f in sorted(os.listdir(__path__[0])):  # what pkgutil.iter_modules lists here, without its imports
    _name, _ext = os.path.splitext(_f)
    if _ext == ".py" and not _name.startswith("_"):
        importlib.import_module(f"{__name__}.{_name}")

DIALECTS: dict[str, Dialect] = {d.name: d for d in registered()}
NAMES: tuple[str, ...] = dialect_names()
WRITABLE: tuple[str, ...] = writable_names()
ALIASES: dict[str, str] = {a: d.name for d in registered() for a in d.aliases}
"""Short names accepted for a dialect (the underscore spellings, ``response_v2``, are accepted too)."""
