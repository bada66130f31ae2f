"""``envglot validate``: check documents against their dialect's contract, listing every violation."""

from __future__ import annotations

import sys

import click

from ..api import detection
from ..errors import EnvglotError
from .common import DialectType, RunStatus, load_mappings, mappings_option
from .findings import CONTRACT_PREFIX, Findings, output_format_option
from .group import main
from .inputs import expand_folders, read_records, try_open
from .outputs import echo

__all__ = ["validate"]

_EPILOG = """\b
Exit codes:
  0   every document is valid
  1   at least one violation (unparseable JSON counts as one)
  2   usage error (unknown dialect, bad option)
  65  a mapping overlay given with --mappings is invalid
  66  an input file is missing or unreadable
"""


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@main.command(epilog=_EPILOG, short_help="Check documents against their dialect's contract.")
@click.argument("files", nargs=-1, metavar="[FILE|DIR|-]...")
@click.option(
    "-f", "--from", "--read", "from_", type=DialectType(auto=True), help="Check against this dialect (default: detect)."
)
@click.option("--jsonl", is_flag=True, default=None, help="Treat every input as JSON Lines.")
@mappings_option
@output_format_option
def validate(
    files: tuple[str, ...], from_: str | None, jsonl: bool | None, mappings: tuple[str, ...], output_format: str
) -> None:
    """Check each document against its dialect's contract and list EVERY violation.

    Prints one line per violation, `FILE[:LINE]: $.json.path: message`, then one summary
    line per input. The checks are the specs' required fields and types plus their
    invariants (dotbot status vs errors/warnings, errorcode retryable vs code,
    response-v2 error null iff success and meta.version first, code-graph version and
    approxTokens, ...). An MCP CallToolResult is unwrapped (paths are then relative to
    the envelope inside it) and its isError checked against the envelope.

    A folder is walked recursively and its files are taken as `migrate` takes them
    (*.json, *.jsonl, *.ndjson and their .gz forms). --output-format json|sarif|github
    prints the violations for machines instead (one rule per dialect contract:
    contract/DIALECT; docs/cli.md, "Output formats").

    \b
    Examples:
      envglot validate examples/dotbot/structure-ok.json
      envglot validate -f response-v2 reply.json
      envglot validate replies.jsonl
      envglot validate examples/ --output-format github
    """
    from ..validation import validate as validate_document  # imported here: only this command needs it

    m = load_mappings(mappings)
    status = RunStatus()
    found_out = Findings(output_format, echo)
    say = (lambda line: None) if found_out.active else echo
    inputs, status.missing = expand_folders(files or ("-",))
    for path in inputs:
        opened = try_open(path)
        if opened is None:
            status.missing += 1
            continue
        name, stream = opened
        records = invalid = violations = 0
        last_dialect: str | None = None
        try:
            is_jsonl, recs = read_records(stream, name, jsonl)
            for rec in recs:
                records += 1
                where = f"{name}:{rec.line}" if is_jsonl else name
                found = validate_document(rec.data, from_, m)
                if found:
                    invalid += 1
                    violations += len(found)
                    last_dialect = found[0].dialect
                    for v in found:
                        say(f"{where}: {v.path}: {v.message}")
                        rule = f"{CONTRACT_PREFIX}{v.dialect or 'json'}"
                        found_out.add(name, rec.line, v.path, rule, "error", v.message)
                elif not is_jsonl:
                    try:
                        last_dialect = from_ or detection(rec.data, mappings=m).dialect
                    except EnvglotError:  # pragma: no cover - a detect failure is a violation above
                        last_dialect = None
        except OSError as exc:
            status.missing += 1
            click.echo(f"{name}: error: cannot read input: {exc.strerror}", err=True)
            continue
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()
        status.records += records
        status.failed += invalid
        if is_jsonl:
            summary = f"{_plural(records, 'record')}: {records - invalid} valid, {invalid} invalid"
            if violations:
                summary += f" ({_plural(violations, 'violation')})"
        elif invalid:
            summary = f"{_plural(violations, 'violation')}" + (
                f" of the {last_dialect} contract" if last_dialect else ""
            )
        else:
            summary = f"valid {last_dialect}"
        say(f"{name}: {summary}")
    found_out.close()
    sys.exit(status.exit_code())
