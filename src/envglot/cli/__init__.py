"""The ``envglot`` command line (click). Each command lives in its own module."""

from __future__ import annotations

from . import commands, migrate_cmd  # noqa: F401  (command modules register themselves on `main`)
from .group import main

__all__ = ["main"]
