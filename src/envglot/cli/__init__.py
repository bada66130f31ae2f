"""The ``envglot`` command line (click). Each command lives in its own module, imported when the
command is first needed (:mod:`envglot.cli.commands`)."""

from __future__ import annotations

from .group import main

__all__ = ["main"]
