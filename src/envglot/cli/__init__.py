"""The ``envglot`` command line (click). Each command lives in its own module."""

from __future__ import annotations

import click

from .. import __version__

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="envglot")
def main() -> None:
    """Convert MCP tool response envelopes between dialects.

    \b
    Examples:
      envglot convert reply.json -t response-v2
      envglot detect logs/*.json
      envglot migrate archive/ --out migrated/
    """


# Command modules register themselves on `main` when imported (one line each).
from . import commands, migrate_cmd  # noqa: E402,F401
