"""envglot: convert MCP tool response envelopes between dialects, through one canonical model."""

from __future__ import annotations

import sys
from types import ModuleType
from typing import TYPE_CHECKING

from .dialects import NAMES as DIALECTS
from .errors import (
    DetectError,
    EnvglotError,
    MappingError,
    NoEnvelopeError,
    ParseError,
    UnknownDialectError,
    UnsupportedError,
)
from .kinds import Kind
from .mappings import load_mappings
from .registry import Registry
from .version import __version__


class _Package(ModuleType):
    """The package's module type: the first import of the detection module (``envglot.detect``)
    does not set the package's name ``detect``, which is the API's function."""

    def __setattr__(self, name: str, value: object) -> None:
        if name == "detect" and isinstance(value, ModuleType):
            return  # (found in sys.modules by ``import envglot.detect``)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

if TYPE_CHECKING:  # imported on first use at run time (keeps ``import envglot`` fast), typed for checkers
    from .api import Conversion, Converter, answer, conversion, convert, detect, read, refusal, write
    from .canonical import Envelope, Problem
    from .diagnostics import Diagnostic, Report
    from .migration import MigrationReport, Migrator, migrate
    from .options import Options
    from .policy import Level, Policy
    from .pyresult import Result
    from .schema import json_schema
    from .validation import Violation, validate

_LAZY = {
    **dict.fromkeys(
        ("Conversion", "Converter", "answer", "conversion", "convert", "detect", "read", "refusal", "write"), "api"
    ),
    "Diagnostic": "diagnostics",
    "Report": "diagnostics",
    "Level": "policy",
    "Policy": "policy",
    "Envelope": "canonical",
    "Problem": "canonical",
    "Options": "options",
    "migrate": "migration",
    "Migrator": "migration",
    "MigrationReport": "migration",
    "validate": "validation",
    "Violation": "validation",
    "json_schema": "schema",
    "Result": "pyresult",
}

_SUBMODULES = frozenset(
    "api canonical checker codes context diagnostics fields limits options pipeline policy probetests"
    " residue transport wire".split()
)
"""The modules ``import envglot`` imported before they were deferred: ``envglot.<name>`` still
finds them after a bare ``import envglot``."""


def __getattr__(name: str) -> object:  # only reached at run time: checkers see the imports above
    """Import the conversion, batch, validation and schema APIs on first use (``import envglot``
    with its tables loaded needs none of them), and a module of :data:`_SUBMODULES` named as an
    attribute (``envglot.api``) as if it had been imported. A name found is kept: the next use
    of it is a plain attribute."""
    import importlib

    module = _LAZY.get(name)
    if module is not None:
        found = globals()[name] = getattr(importlib.import_module(f".{module}", __name__), name)
        return found
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)  # (the import sets it on the package)
    raise AttributeError(f"module 'envglot' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The package's names, those imported on first use included."""
    return sorted({*globals(), *__all__})


__all__ = [
    "DIALECTS",
    "Conversion",
    "Converter",
    "DetectError",
    "Diagnostic",
    "Envelope",
    "EnvglotError",
    "Kind",
    "Level",
    "MappingError",
    "MigrationReport",
    "Migrator",
    "NoEnvelopeError",
    "Options",
    "ParseError",
    "Policy",
    "Problem",
    "Registry",
    "Report",
    "Result",
    "UnknownDialectError",
    "UnsupportedError",
    "Violation",
    "__version__",
    "answer",
    "conversion",
    "convert",
    "detect",
    "json_schema",
    "load_mappings",
    "migrate",
    "read",
    "refusal",
    "validate",
    "write",
]
