"""The ``envglot`` command group (click): signals, broken pipes, the configuration it announces."""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence
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

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the command line; as the program (the ``envglot`` script: ``args`` from ``sys.argv``,
        standalone), a command that ends with :class:`.exits.Finished` ends the process without the
        interpreter's teardown (:func:`.exits.end_after_exit`)."""
        try:
            return super().main(
                args, prog_name, complete_var, standalone_mode, windows_expand_args=windows_expand_args, **extra
            )
        except exits.Finished as done:
            if args is None and standalone_mode:
                exits.end_after_exit(done.code)
            raise

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command ``cmd_name``, its module imported now if it was not (:mod:`.commands`)."""
        if cmd_name not in self.commands:
            from .commands import load

            load(cmd_name)
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command's name, sorted, without importing their modules."""
        from .commands import MODULES

        return sorted({*MODULES, *self.commands})


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


def announce_config(ctx: click.Context) -> None:
    """Say once on stderr which found configuration file this run uses (not with ``-q``)."""
    from .config import META_KEY, Config

    root = ctx.find_root()
    cfg = root.meta.get(META_KEY)
    if not isinstance(cfg, Config) or cfg.how != "found" or root.meta.get("envglot.announced"):
        return
    root.meta["envglot.announced"] = True
    if not ctx.params.get("quiet"):
        click.echo(f"envglot: using config {cfg.path}", err=True)


class _Command(click.Command):
    """A command of ``envglot``: announces the configuration found (after its own options are parsed)."""

    def invoke(self, ctx: click.Context) -> Any:
        announce_config(ctx)
        return super().invoke(ctx)


class _Group(click.Group):
    """A command group under ``envglot`` (``mappings``): announces as :class:`_Command` does."""

    command_class = _Command

    def invoke(self, ctx: click.Context) -> Any:
        announce_config(ctx)
        return super().invoke(ctx)


_Main.command_class = _Command
_Main.group_class = _Group


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="envglot")
@click.option(
    "--config",
    "config_path",
    metavar="FILE",
    envvar="ENVGLOT_CONFIG",
    help="Take option defaults from FILE (envglot.toml, or a pyproject.toml with [tool.envglot]); "
    "also $ENVGLOT_CONFIG.",
)
@click.option("--no-config", is_flag=True, help="Ignore envglot.toml and [tool.envglot] in pyproject.toml.")
@click.pass_context
def main(ctx: click.Context, config_path: str | None, no_config: bool) -> None:
    """Convert MCP tool response envelopes between dialects.

    Option defaults come from the nearest envglot.toml, or pyproject.toml with a
    [tool.envglot] table, in the current directory or above, if it belongs to you (or
    root) and no one else can write it (see docs/cli.md, "Project configuration");
    options given on the command line win. `envglot config` shows what is in effect.

    \b
    Examples:
      envglot convert reply.json -t response-v2
      envglot detect logs/*.json
      envglot migrate archive/ --out migrated/
      envglot --no-config convert reply.json -t result
    """
    from .config import ENV_VAR, META_KEY, resolve

    from_env = ctx.get_parameter_source("config_path") is click.core.ParameterSource.ENVIRONMENT
    if config_path == "" and from_env:  # ENVGLOT_CONFIG= (empty): not set
        config_path = None
    if config_path is not None and no_config and not from_env:
        raise click.UsageError("--config and --no-config exclude each other")
    cfg = resolve(ctx, config_path, no_config, ENV_VAR if from_env else "--config")
    if cfg.ignored is not None:
        click.echo(cfg.ignored, err=True)
    ctx.meta[META_KEY] = cfg
    ctx.default_map = cfg.default_map()
