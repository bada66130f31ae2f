"""envglot: convert MCP tool response envelopes between dialects, through one canonical model."""

from __future__ import annotations

from .api import Conversion, Converter, convert, conversion, detect, read, write
from .canonical import Envelope, Problem
from .diagnostics import Diagnostic, Kind, Report
from .dialects import NAMES as DIALECTS
from .errors import (
    DetectError,
    EnvglotError,
    MappingError,
    ParseError,
    UnknownDialectError,
    UnsupportedError,
)
from .mappings import load_mappings
from .pyresult import Result

__version__ = "0.1.0"

__all__ = [
    "DIALECTS",
    "Conversion",
    "Converter",
    "DetectError",
    "Diagnostic",
    "Envelope",
    "EnvglotError",
    "Kind",
    "MappingError",
    "ParseError",
    "Problem",
    "Report",
    "Result",
    "UnknownDialectError",
    "UnsupportedError",
    "__version__",
    "convert",
    "conversion",
    "detect",
    "load_mappings",
    "read",
    "write",
]
