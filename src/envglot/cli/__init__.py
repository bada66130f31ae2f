"""The ``envglot`` command line (click). Each command lives in its own module."""

from __future__ import annotations

import signal
import sys
from types import FrameType
from typing import Any

import click

from .. import __version__
from . import exits

__all__ = ["main"]


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


class _Main(click.Group):
    """The command group: Ctrl-C and SIGTERM exit 130, a closed stdout/stderr pipe exits 141.

    SIGTERM is raised as ``KeyboardInterrupt`` so every command's cleanup (temporary
    files of ``-o``, ``--log``, ``--report``) runs for it as for Ctrl-C. A reader that
    goes away (``envglot convert big.jsonl | head -1``) ends the run quietly with 141,
    the code a shell reports for a process killed by SIGPIPE; nothing is committed.
    """

    def invoke(self, ctx: click.Context) -> Any:
        old = signal.signal(signal.SIGTERM, _interrupt)
        try:
            result = super().invoke(ctx)
            _flush_stdout()
            return result
        except SystemExit:
            _flush_stdout()
            raise
        except KeyboardInterrupt:
            _quietly(lambda: click.echo("\ninterrupted", err=True))
            sys.exit(exits.EX_INTERRUPTED)
        except BrokenPipeError:
            exits.silence_broken_pipe()
            sys.exit(exits.EX_PIPE)
        finally:
            signal.signal(signal.SIGTERM, old)


def _flush_stdout() -> None:
    """Flush stdout now, so a closed pipe is noticed here (exit 141), not at interpreter exit."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        exits.silence_broken_pipe()
        sys.exit(exits.EX_PIPE)
    except (OSError, ValueError):
        pass


def _quietly(f: Any) -> None:
    try:
        f()
    except OSError:
        pass


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="envglot")
@click.option(
    "--config",
    "config_path",
    metavar="FILE",
    help="Take option defaults from FILE (envglot.toml, or a pyproject.toml with [tool.envglot]).",
)
@click.option("--no-config", is_flag=True, help="Ignore envglot.toml and [tool.envglot] in pyproject.toml.")
@click.pass_context
def main(ctx: click.Context, config_path: str | None, no_config: bool) -> None:
    """Convert MCP tool response envelopes between dialects.

    Option defaults come from the nearest envglot.toml, or pyproject.toml with a
    [tool.envglot] table, in the current directory or above (see docs/cli.md,
    "Project configuration"); options given on the command line win.

    \b
    Examples:
      envglot convert reply.json -t response-v2
      envglot detect logs/*.json
      envglot migrate archive/ --out migrated/
      envglot --no-config convert reply.json -t result
    """
    from pathlib import Path

    from .config import default_map, find_config

    if config_path is not None and no_config:
        raise click.UsageError("--config and --no-config exclude each other")
    if no_config:
        return
    path = Path(config_path) if config_path is not None else find_config(Path.cwd())
    if path is None:
        return
    if config_path is not None and not path.is_file():
        raise click.UsageError(f"--config {config_path}: no such file")
    assert isinstance(ctx.command, click.Group)
    ctx.default_map = default_map(path, ctx.command, ctx)


# Command modules register themselves on `main` when imported (one line each).
from . import commands, migrate_cmd  # noqa: E402,F401
