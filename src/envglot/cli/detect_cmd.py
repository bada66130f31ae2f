"""``envglot detect``: name the dialect of each input (or of each JSON Lines record)."""

from __future__ import annotations

import sys

import click
import msgspec

from ..api import detection
from ..errors import EnvglotError
from .common import RunStatus, Stderr, detection_options, error_kind, load_mappings, mappings_option
from .group import main
from .inputs import expand_folders, read_records, try_open
from .outputs import echo

__all__ = ["detect"]

_EPILOG = """\b
Exit codes:
  0   every document was recognised
  2   usage error
  65  an input (or a JSON Lines record) is not JSON or not an object
  66  an input file is missing or unreadable (the others are still detected)
"""


class _Error(msgspec.Struct):
    kind: str
    path: str | None
    message: str


class _Found(msgspec.Struct):
    """One line of ``detect --json`` (a stable shape: docs/cli.md)."""

    file: str
    line: int | None
    dialect: str | None = None
    evidence: str | None = None
    unwrapped: bool = False
    error: _Error | None = None


_ENC = msgspec.json.Encoder()

MARKERLESS = " (no markers: read as a bare payload)"
"""Printed after ``legacy-v1`` for a document recognized only by elimination."""


@main.command(epilog=_EPILOG, short_help="Print the dialect of each input or record.")
@click.argument("files", nargs=-1, metavar="[FILE|DIR|-]...")
@click.option("--jsonl", is_flag=True, default=None, help="Treat every input as JSON Lines.")
@mappings_option
@detection_options
@click.option("-v", "--verbose", is_flag=True, help="Say when an MCP CallToolResult was unwrapped.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per document or record (JSON Lines).")
def detect(
    files: tuple[str, ...],
    jsonl: bool | None,
    mappings: tuple[str, ...],
    strict_detect: bool,
    max_depth: int,
    verbose: bool,
    as_json: bool,
) -> None:
    """Print the dialect of each input (stdin when none is given).

    With several inputs each line is `FILE: dialect`; JSON Lines print one line per
    record (`FILE:LINE: dialect` when several inputs are given). An MCP
    CallToolResult (or JSON-RPC response) is unwrapped and the envelope inside it is
    named. A document recognized only by elimination (no dialect's markers) prints
    `legacy-v1 (no markers: read as a bare payload)`; --strict-detect refuses it (exit 65). Detection does
    not depend on the mapping tables; --mappings is accepted (and checked) so the
    same options work on every command. A folder is walked recursively and its files
    are taken as `migrate` takes them (*.json, *.jsonl, *.ndjson and their .gz forms).

    --json prints one JSON object per document or record on stdout, in input order:
    {"file", "line" (null for a document), "dialect" (null when not recognised),
    "evidence" (null for the marker-less shape), "unwrapped", "error" (null, or
    {"kind", "path", "message"})}. A record that is not valid input is such a line
    (not an error line on stderr); the exit codes do not change.

    \b
    Examples:
      envglot detect examples/dotbot/structure-ok.json
      envglot detect examples/*/*.json
      envglot detect examples/
      cat replies.jsonl | envglot detect
      envglot detect --json examples/*/*.json
    """
    m = load_mappings(mappings)
    err = Stderr(verbose=verbose)
    status = RunStatus()
    inputs, status.missing = expand_folders(files or ("-",))
    many = len(inputs) > 1 or inputs != list(files or ("-",))  # a folder names its files
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
                    found = detection(rec.data, mappings=m, strict=strict_detect, max_depth=max_depth)
                except EnvglotError as exc:
                    status.bad += 1
                    if as_json:
                        exc.located(source=name, line=line)
                        error = _Error(kind=error_kind(exc), path=exc.path, message=exc.message)
                        echo(_ENC.encode(_Found(file=name, line=line, error=error)).decode())
                    else:
                        err.error(name, line, exc)
                    continue
                if as_json:
                    found_line = _Found(
                        file=name,
                        line=line,
                        dialect=found.dialect,
                        evidence=found.evidence,
                        unwrapped=found.unwrapped,
                    )
                    echo(_ENC.encode(found_line).decode())
                    continue
                if found.unwrapped:
                    err.note(name, line, "unwrapped an MCP CallToolResult")
                where = f"{name}:{line}: " if many and line is not None else f"{name}: " if many else ""
                echo(f"{where}{found.dialect}{MARKERLESS if found.evidence is None else ''}")
        except OSError as exc:
            status.missing += 1
            click.echo(f"{name}: error: cannot read input: {exc.strerror}", err=True)
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()
    sys.exit(status.exit_code())
