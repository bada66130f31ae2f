"""``envglot mappings init|check``: start and check mapping overlay files (and declarations on examples)."""

from __future__ import annotations

import os
import sys

import click

from ..errors import MappingError
from ..excerpt import display_path
from ..mappings import Mappings, default_mappings
from . import exits
from .common import DialectType, unreadable
from .exits import die
from .group import main
from .outputs import echo, open_output, output_failed

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
    epilog="\b\nExit codes:\n  0   every file is valid (and every example passes)\n  65  a file is invalid, or an "
    "example fails\n  66  a file or an example cannot be read",
)
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option(
    "--examples",
    multiple=True,
    metavar="FILE|DIR",
    help="Envelopes a declaration must detect, validate and round-trip (repeatable; folders, JSON Lines, .gz).",
)
def check(files: tuple[str, ...], examples: tuple[str, ...]) -> None:
    """Check overlay files against the bundled tables (each on its own).

    Prints `FILE: ok` per valid file; an invalid one is reported with its file and row
    and the command exits 65 (66 if a file cannot be read) after checking them all.

    With --examples, every FILE must be a declaration (docs/declared-dialects.md), and every
    example must be detected as its dialect, validate, and come back as the same JSON from
    every other writable dialect with --preserve; each failing example is named.

    \b
    Examples:
      envglot mappings check overlays/*.toml
      envglot mappings check examples/learn/team.toml --examples examples/learn/samples
    """
    code = exits.EX_OK
    records: list[tuple[str, bytes]] | None = None
    if examples:
        from ..learn import MAX_SAMPLES
        from ..migration import MigrationError
        from ..migration.reading import input_records

        records = []
        try:
            for rec in input_records(list(examples)):
                if len(records) >= MAX_SAMPLES:
                    die(f"more than {MAX_SAMPLES} examples", exits.EX_DATAERR)
                records.append(rec)
        except MigrationError as exc:
            die(str(exc), exc.exit_code)
    from ..crosswalk import check_overlay

    for path in files:
        why = unreadable(path)
        if why is not None:
            click.echo(f"{path}: error: {why}", err=True)
            code = exits.EX_NOINPUT
            continue
        try:
            m = check_overlay(path)
            failures = None if records is None else _examples(path, records, m)
        except MappingError as exc:
            where, _, msg = str(exc).partition(": ")  # "FILE: ..." or "FILE:LINE: ..."
            if where != path and not where.startswith(f"{path}:"):
                where, msg = path, str(exc)
            click.echo(f"{where}: error: {msg}", err=True)
            if code != exits.EX_NOINPUT:
                code = exits.EX_DATAERR
            continue
        if failures:
            for name, why in failures:
                click.echo(f"{path}: error: {display_path(name)}: {why}", err=True)
            if code != exits.EX_NOINPUT:
                code = exits.EX_DATAERR
            continue
        echo(f"{path}: ok" + ("" if records is None else f" ({len(records)} examples)"))
    sys.exit(code)


def _examples(path: str, records: list[tuple[str, bytes]], m: Mappings) -> list[tuple[str, str]]:
    """What :func:`envglot.learn.check_examples` finds for the declaration in ``path``."""
    import tomllib

    from ..learn import check_examples

    with open(path, "rb") as f:
        doc = tomllib.load(f)  # loaded and checked above: a valid TOML table
    if "declare" not in doc:
        raise MappingError(f"{path}: --examples checks a declaration (a [declare] table); this is an overlay")
    return check_examples(str(doc["dialect"]), records, m)
