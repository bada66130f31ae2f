"""``envglot mappings init|check``: start and check mapping overlay files."""

from __future__ import annotations

import os
import sys

import click

from ..errors import MappingError
from ..mappings import check_overlay, default_mappings
from . import exits, main
from .common import DialectType, echo, open_output, output_failed, unreadable

__all__ = ["mappings"]


@main.group(short_help="Start and check mapping overlays.")
def mappings() -> None:
    """Start and check mapping overlays (TOML files that extend the bundled tables).

    \b
    Examples:
      envglot mappings init dotbot -o my-dotbot.toml
      envglot mappings check my-dotbot.toml
      envglot convert reply.json -t errorcode --mappings my-dotbot.toml
    """


@mappings.command("init")
@click.argument("dialect", type=DialectType())
@click.option("-o", "--output", metavar="FILE", help="Write here (atomically) instead of stdout.")
@click.option("--force", is_flag=True, help="Overwrite FILE if it exists.")
def init(dialect: str, output: str | None, force: bool) -> None:
    """Write a commented starter overlay for DIALECT.

    The template documents every key and holds one example code row and one example
    writer choice that only apply to a made-up aspect, so it loads unchanged.

    \b
    Example:
      envglot mappings init response-v2 -o overlays/v2.toml
    """
    if output not in (None, "-") and os.path.exists(output) and not force:
        raise click.UsageError(f"{output} exists; use --force to overwrite it")
    from ..crosswalk import overlay_template

    text = overlay_template(dialect, default_mappings()).encode()
    out = open_output(output)
    try:
        out.write(text)
        out.commit()
    except OSError as exc:
        out.abort()
        output_failed(output, exc)


@mappings.command(
    "check",
    epilog="\b\nExit codes:\n  0   every file is valid\n  65  a file is invalid\n  66  a file cannot be read",
)
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
def check(files: tuple[str, ...]) -> None:
    """Check overlay files against the bundled tables (each on its own).

    Prints `FILE: ok` per valid file; an invalid one is reported with its file and row
    and the command exits 65 (66 if a file cannot be read) after checking them all.

    \b
    Example:
      envglot mappings check overlays/*.toml
    """
    code = exits.EX_OK
    for path in files:
        why = unreadable(path)
        if why is not None:
            click.echo(f"{path}: error: {why}", err=True)
            code = exits.EX_NOINPUT
            continue
        try:
            check_overlay(path)
        except MappingError as exc:
            where, _, msg = str(exc).partition(": ")  # "FILE: ..." or "FILE:LINE: ..."
            if where != path and not where.startswith(f"{path}:"):
                where, msg = path, str(exc)
            click.echo(f"{where}: error: {msg}", err=True)
            if code != exits.EX_NOINPUT:
                code = exits.EX_DATAERR
            continue
        echo(f"{path}: ok")
    sys.exit(code)
