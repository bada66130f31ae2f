"""envglot: convert MCP tool response envelopes between dialects, through one canonical model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .api import Conversion, Converter, answer, conversion, convert, detect, read, refusal, write
from .canonical import Envelope, Problem
from .diagnostics import Diagnostic, Kind, Report
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
from .mappings import load_mappings
from .options import Options
from .policy import Level, Policy
from .registry import Registry
from .version import __version__

if TYPE_CHECKING:  # imported on first use at run time (keeps ``import envglot`` fast), typed for checkers
    from .migration import MigrationReport, Migrator, migrate
    from .pyresult import Result
    from .schema import json_schema
    from .validation import Violation, validate

_LAZY = {
    "migrate": "migration",
    "Migrator": "migration",
    "MigrationReport": "migration",
    "validate": "validation",
    "Violation": "validation",
    "json_schema": "schema",
    "Result": "pyresult",
}


def __getattr__(name: str) -> object:  # only reached at run time: checkers see the imports above
    """Import the batch, validation and schema APIs on first use (keeps ``import envglot`` fast)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'envglot' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{module}", __name__), name)


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
