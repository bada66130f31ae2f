"""Registers the commands on ``main`` (convert, detect, validate, info, mappings, proxy, config, learn).

Each lives in its own module; shared helpers are in :mod:`envglot.cli.common` (options,
diagnostics, run status), :mod:`envglot.cli.inputs`, :mod:`envglot.cli.outputs` and
:mod:`envglot.cli.exits`.
"""

from __future__ import annotations

from . import config_cmd, convert_cmd, detect_cmd, info_cmd, learn_cmd, mappings_cmd, proxy_cmd, validate_cmd

__all__ = [
    "config_cmd",
    "convert_cmd",
    "detect_cmd",
    "info_cmd",
    "learn_cmd",
    "mappings_cmd",
    "proxy_cmd",
    "validate_cmd",
]
