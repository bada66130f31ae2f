"""``envglot detect``: name the dialect of each input (or of each JSON Lines record)."""

from __future__ import annotations

import sys

import click

from ..detect import MCP, detect_bytes
from ..errors import EnvglotError
from ..transport import unwrap_bytes
from . import main
from .common import RunStatus, Stderr, echo, load_mappings, mappings_option, read_records, try_open

__all__ = ["detect"]

_EPILOG = """\b
Exit codes:
  0   every document was recognised
  2   usage error
  65  an input (or a JSON Lines record) is not JSON or not an object
  66  an input file is missing or unreadable (the others are still detected)
"""


def _dialect_of(data: bytes) -> tuple[str, bool]:
    """``(dialect, unwrapped)``; an MCP CallToolResult is unwrapped first."""
    name = detect_bytes(data)
    if name == MCP:
        inner, _ = unwrap_bytes(data)
        return detect_bytes(inner), True
    return name, False


@main.command(epilog=_EPILOG, short_help="Print the dialect of each input or record.")
@click.argument("files", nargs=-1, metavar="[FILE|-]...")
@click.option("--jsonl", is_flag=True, default=None, help="Treat every input as JSON Lines.")
@mappings_option
@click.option("-v", "--verbose", is_flag=True, help="Say when an MCP CallToolResult was unwrapped.")
def detect(files: tuple[str, ...], jsonl: bool | None, mappings: tuple[str, ...], verbose: bool) -> None:
    """Print the dialect of each input (stdin when none is given).

    With several inputs each line is `FILE: dialect`; JSON Lines print one line per
    record (`FILE:LINE: dialect` when several inputs are given). An MCP
    CallToolResult is unwrapped and the envelope inside it is named. Detection does
    not depend on the mapping tables; --mappings is accepted (and checked) so the
    same options work on every command.

    \b
    Examples:
      envglot detect examples/dotbot/structure-ok.json
      envglot detect examples/*/*.json
      cat replies.jsonl | envglot detect
    """
    load_mappings(mappings)
    inputs = files or ("-",)
    many = len(inputs) > 1
    err = Stderr(verbose=verbose)
    status = RunStatus()
    for path in inputs:
        opened = try_open(path)
        if opened is None:
            status.missing += 1
            continue
        name, stream = opened
        try:
            is_jsonl, records = read_records(stream, name, jsonl)
            for rec in records:
                status.records += 1
                line = rec.line if is_jsonl else None
                try:
                    dialect, unwrapped = _dialect_of(rec.data)
                except EnvglotError as exc:
                    status.bad += 1
                    err.error(name, line, exc)
                    continue
                if unwrapped:
                    err.note(name, line, "unwrapped an MCP CallToolResult")
                where = f"{name}:{line}: " if many and line is not None else f"{name}: " if many else ""
                echo(f"{where}{dialect}")
        except OSError as exc:
            status.missing += 1
            click.echo(f"{name}: error: cannot read input: {exc.strerror}", err=True)
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()
    sys.exit(status.exit_code())
