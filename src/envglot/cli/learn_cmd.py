"""``envglot learn``: write a dialect declaration inferred from a server's own responses."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import click
import msgspec

from ..errors import EnvglotError
from . import exits
from .exits import die
from .group import main
from .outputs import open_output, output_failed

__all__ = ["learn"]

_EPILOG = """\b
Exit codes:
  0   the declaration was written (it detects, validates and round-trips every sample)
  2   usage error
  65  the samples do not support a declaration (the message says what is missing)
  66  a sample cannot be read
  74  the output cannot be written
"""
_SERVER = "envglot.learn.server"


class _LearnCommand(click.Command):
    """Takes everything after ``--`` as the server's command (``--from-server -- CMD ARGS...``)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            i = args.index("--")
            ctx.meta[_SERVER] = args[i + 1 :]
            args = args[:i]
        return super().parse_args(ctx, args)


@main.command(cls=_LearnCommand, epilog=_EPILOG, short_help="Infer a dialect declaration from a server's responses.")
@click.argument("samples", nargs=-1, metavar="SAMPLES...")
@click.option("-o", "--output", metavar="FILE", help="Write here (atomically) instead of stdout.")
@click.option("--force", is_flag=True, help="Overwrite FILE if it exists.")
@click.option("--name", metavar="NAME", help="The dialect's name (default: FILE's name, else 'learned').")
@click.option("--from-server", is_flag=True, help="Also read the tools' outputSchemas of the stdio server after --.")
@click.option(
    "--call",
    nargs=2,
    metavar="TOOL ARGS_JSON",
    help="With --from-server: call TOOL with these arguments; its result is one more sample.",
)
def learn(
    samples: tuple[str, ...],
    output: str | None,
    force: bool,
    name: str | None,
    from_server: bool,
    call: tuple[str, str] | None,
) -> None:
    """Write a declaration (docs/declared-dialects.md) of the envelope in SAMPLES.

    SAMPLES are responses of one server, successes and failures: files, folders, JSON
    Lines, .gz, CallToolResults. Every rule of the declaration carries a comment saying how
    many samples support it; each inferred code category is flagged ⚑ for review. Nothing is
    written unless the declaration detects, validates and round-trips every sample (the check
    of `envglot mappings check --examples`). See docs/learn.md.

    \b
    Examples:
      envglot learn examples/learn/samples -o team.toml
      envglot mappings check team.toml --examples examples/learn/samples
      envglot learn examples/learn/samples --from-server -- python3 examples/learn/server.py
    """
    from ..learn import LearnError, learn_checked, read_samples
    from ..learn import from_server as server_evidence
    from ..migration import MigrationError

    command: list[str] = click.get_current_context().meta.get(_SERVER, [])
    if command and not from_server:
        raise click.UsageError("a command after -- needs --from-server")
    if from_server and not command:
        raise click.UsageError("--from-server needs the server's command after --")
    if call is not None and not from_server:
        raise click.UsageError("--call needs --from-server")
    if not samples and call is None:
        raise click.UsageError("no samples: give files or folders of the server's responses")
    if output not in (None, "-") and os.path.exists(output) and not force:
        raise click.UsageError(f"{output} exists; use --force to overwrite it")
    args: dict[str, Any] | None = None
    if call is not None:
        try:
            args = msgspec.json.decode(call[1])
        except msgspec.DecodeError as exc:
            raise click.UsageError(f"--call {call[0]}: ARGS_JSON is not JSON: {exc}") from None
        if not isinstance(args, dict):
            raise click.UsageError(f"--call {call[0]}: ARGS_JSON must be a JSON object")
    dialect = name or _name_of(output)
    try:
        found = read_samples(list(samples), stdin=sys.stdin.buffer) if samples else []
        schemas: list[tuple[str, dict[str, Any]]] = []
        if from_server:
            schemas, called = server_evidence(command, (call[0], args or {}) if call is not None else None)
            found += called
        text = learn_checked(found, dialect, schemas)
    except MigrationError as exc:
        die(str(exc), exc.exit_code)
    except LearnError as exc:
        die(str(exc), exits.EX_DATAERR)
    except EnvglotError as exc:
        die(str(exc), exits.EX_DATAERR)
    out = open_output(output)
    try:
        out.write(text.encode())
        out.commit()
    except OSError as exc:
        out.abort()
        output_failed(output, exc)
    if output not in (None, "-"):
        click.echo(
            f"envglot learn: wrote {output} (dialect {dialect}, {len(found)} samples); review the ⚑ rows", err=True
        )


def _name_of(output: str | None) -> str:
    """A dialect name from the output file's name (``team.toml`` -> ``team``), else ``learned``."""
    if output in (None, "-"):
        return "learned"
    from ..declared import valid_name

    stem = re.sub(r"[^a-z0-9-]+", "-", Path(str(output)).stem.lower()).strip("-")
    return stem if valid_name(stem) else "learned"
