"""Registers the commands on ``main``: convert, detect, validate, dialects, schema, codes, mappings, learn.

Each lives in its own module; shared helpers (inputs, outputs, diagnostics, exit status)
are in :mod:`envglot.cli.common`.
"""

from __future__ import annotations

from . import convert_cmd, detect_cmd, info_cmd, learn_cmd, mappings_cmd, proxy_cmd, validate_cmd

__all__ = ["convert_cmd", "detect_cmd", "info_cmd", "learn_cmd", "mappings_cmd", "proxy_cmd", "validate_cmd"]
