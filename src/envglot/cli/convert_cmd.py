"""``envglot convert``: one document or a JSON Lines stream, from any dialect to any writable one."""

from __future__ import annotations

import sys

import click
import msgspec

from ..api import Converter
from ..errors import EnvglotError, UnsupportedError
from ..policy import Level
from ..transport import wrap_bytes
from . import exits
from .common import (
    DialectType,
    LogWriter,
    RunStatus,
    Stderr,
    detection_options,
    load_mappings,
    make_options,
    mappings_option,
    outcome_ok,
    parse_context,
    policy_options,
)
from .exits import die
from .findings import Findings, output_format_option, stream_echo
from .group import main
from .inputs import open_input, read_records
from .outputs import open_output, output_failed, same_file

__all__ = ["convert"]

_EPILOG = """\b
Exit codes:
  0   converted (warnings allowed)
  1   lossy with --fail-if-lossy, or a lossy document refused by --unsupported raise
  2   usage error (unknown dialect, bad option)
  65  invalid input: not JSON, not an envelope, breaks its dialect's contract
  66  the input file is missing or unreadable
  74  the output (or --log) cannot be written
  130 interrupted (Ctrl-C or SIGTERM): -o and --log are left as they were
  141 stdout was closed by its reader (e.g. | head): nothing more is printed
"""


@main.command(epilog=_EPILOG, short_help="Convert envelopes (JSON or JSON Lines) to another dialect.")
@click.argument("files", nargs=-1, metavar="[FILE|-]")
@click.option("-t", "--to", "--write", "to", required=True, type=DialectType(writable=True), help="Target dialect.")
@click.option(
    "-f",
    "--from",
    "--read",
    "from_",
    type=DialectType(auto=True),
    help="Source dialect (default: auto, detected per document).",
)
@click.option("-o", "--output", metavar="FILE", help="Write here (atomically) instead of stdout.")
@click.option(
    "--unsupported",
    type=click.Choice(["ignore", "warn", "raise"]),
    default="warn",
    show_default=True,
    help="Lossy conversions: ignore silently, warn (a closing tally on stderr), or refuse the document.",
)
@policy_options
@click.option(
    "--preserve", is_flag=True, help="Carry what the target cannot say as a residue (round trips restore it)."
)
@click.option("--fail-if-lossy", is_flag=True, help="Exit 1 if anything was lost (the output is still written).")
@click.option("--pretty", "style", flag_value="pretty", help="Indented output (2 spaces).")
@click.option("--compact", "style", flag_value="compact", help="One-line output (the default).")
@click.option("--native", "style", flag_value="native", help="Print as the target's real emitter does.")
@mappings_option
@click.option(
    "--log", "log_path", metavar="FILE", help="Write every diagnostic and error as JSON lines to FILE (- for stdout)."
)
@click.option("--jsonl", is_flag=True, default=None, help="Treat the input as JSON Lines (one document per line).")
@click.option(
    "--wrap",
    type=click.Choice(["mcp"]),
    help="Wrap each output envelope in an MCP CallToolResult (isError mirrors its failure).",
)
@click.option(
    "--context",
    "context",
    multiple=True,
    metavar="KEY=VALUE",
    help="Value for a field the target requires but the source lacks (KEY:=JSON for non-strings). Repeatable.",
)
@detection_options
@click.option("-v", "--verbose", is_flag=True, help="Also show notes (synthesized values, unwrapping, ...).")
@click.option("-q", "--quiet", is_flag=True, help="No closing tally of diagnostics (errors are still printed).")
@output_format_option
def convert(
    files: tuple[str, ...],
    to: str,
    from_: str | None,
    output: str | None,
    unsupported: str,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    preserve: bool,
    fail_if_lossy: bool,
    style: str | None,
    mappings: tuple[str, ...],
    log_path: str | None,
    jsonl: bool | None,
    wrap: str | None,
    context: tuple[str, ...],
    strict_detect: bool,
    max_depth: int,
    verbose: bool,
    quiet: bool,
    output_format: str,
) -> None:
    """Convert an envelope (or JSON Lines of envelopes) to dialect DIALECT.

    Reads FILE (or stdin when FILE is - or missing) and writes stdout unless -o is
    given. The source dialect is detected per document unless -f is given; an MCP
    CallToolResult is unwrapped first. Loss is tallied on stderr when the run ends (one
    line per diagnostic kind and JSON path in the source document); -v prints every
    diagnostic of every document, -q none. --select/--ignore KIND[:PATH] decide what counts
    as loss (for the tally, --unsupported raise and --fail-if-lossy). --output-format
    json|sarif|github prints every diagnostic and error for machines instead of the text
    (on stdout with -o, else on stderr; docs/cli.md, "Output formats").

    JSON Lines (FILE ends in .jsonl/.ndjson, --jsonl, or the first non-blank line is a
    whole JSON document and more lines follow) are streamed: each good line is converted
    in order, a bad line is reported as FILE:LINE and the run ends with exit 65.

    \b
    Examples:
      envglot convert examples/dotbot/structure-ok.json -t response-v2
      cat reply.json | envglot convert -t errorcode --pretty
      envglot convert log.jsonl -f errorcode -t response-v2 -o out.jsonl --log diag.jsonl
      envglot convert reply.json -t code-graph --context workspace.root=/src/app
      envglot convert reply.json -t response-v2 --unsupported raise --select code_mapped
      envglot convert reply.json -t errorcode --fail-if-lossy --ignore field_dropped:$.summary
      envglot convert reply.json -t errorcode --wrap mcp
      envglot convert reply.json -t response-v2 -o out.json --output-format sarif > loss.sarif

    One input per run: for several, use `envglot migrate FILE... --out DIR` (one
    output per input, --log and -v as here) or concatenate them into one stream
    (`cat a.jsonl b.jsonl | envglot convert -t response-v2`).
    """
    file = _one_input(files)
    ctx_values = parse_context(context)
    if quiet and verbose:
        raise click.UsageError("-q and -v exclude each other")
    to_stdout = output in (None, "-")
    if log_path == "-" and to_stdout:
        raise click.UsageError("--log - and the converted documents would share stdout; give -o FILE")
    if not to_stdout and log_path and log_path != "-" and same_file(output, log_path):  # type: ignore[arg-type]
        raise click.UsageError(f"-o {output} and --log {log_path} name the same file; give the log its own file")
    findings = Findings(output_format, stream_echo(to_stderr=to_stdout or log_path == "-"))
    m = load_mappings(mappings)
    log = LogWriter(log_path) if log_path else None
    opts = make_options(
        unsupported,
        select,
        ignore,
        preserve=preserve,
        mappings=m,
        style=style or "compact",
        context=ctx_values,
        strict=strict_detect,
        max_depth=max_depth,
    )
    err = Stderr(
        verbose=verbose,
        quiet=quiet or opts.policy.level is Level.IGNORE,
        log=log,
        policy=opts.policy,
        findings=findings,
    )
    status = RunStatus()
    try:
        with open_input(file) as (name, stream):
            try:
                is_jsonl, records = read_records(stream, name, jsonl)
            except OSError as exc:
                die(f"cannot read input: {exc.strerror}", exits.EX_NOINPUT, name)
            if is_jsonl and style not in (None, "compact"):
                err.note(name, None, f"JSON Lines output is one compact document per line; --{style} ignored")
            # Stderr shows the diagnostics (tally, -v): the converter only refuses, under raise
            run = opts.tallied()
            conv = Converter(to, from_, options=run.replace(style="compact") if is_jsonl else run)
            out = open_output(output)
            try:
                for rec in records:
                    status.records += 1
                    line = rec.line if is_jsonl else None
                    try:
                        result = conv.conversion(rec.data)
                        if verbose and result.unwrapped:
                            err.note(
                                name, line, f"unwrapped an MCP CallToolResult; read the envelope as {result.source}"
                            )
                        elif verbose and from_ is None:
                            err.note(name, line, f"detected {result.source}")
                        body = result.output
                        if wrap == "mcp":
                            body = wrap_bytes(body, not outcome_ok(body, result.target, m))
                            if style == "pretty" and not is_jsonl:
                                body = msgspec.json.format(body, indent=2)
                    except UnsupportedError as exc:
                        status.failed += 1
                        err.refused(name, line, exc, "lossy conversion refused (--unsupported raise)")
                        continue
                    except EnvglotError as exc:
                        status.bad += 1
                        err.error(name, line, exc)
                        continue
                    if err.diagnostics(name, line, result.diagnostics):
                        status.lossy += 1
                    try:
                        out.write(body + b"\n")
                    except OSError as exc:
                        out.abort()
                        output_failed(output, exc)
            except OSError as exc:
                out.abort()
                die(f"cannot read input: {exc.strerror}", exits.EX_NOINPUT, name)
            except BaseException:
                out.abort()
                raise
            err.tally(status.records)
            skipped = status.bad + status.failed
            if skipped and is_jsonl:
                click.echo(f"{name}: {skipped} of {status.records} records not converted", err=True)
            try:
                if is_jsonl or status.records > skipped:
                    out.commit()
                else:
                    out.abort()
            except OSError as exc:
                output_failed(output, exc)
    except BaseException as exc:
        if log is not None:
            if isinstance(exc, SystemExit):
                log.close()
            else:
                log.abort()  # interrupted: -o and --log are left as they were
        raise
    if log is not None:
        log.close()
    findings.close()
    code = status.exit_code(fail_if_lossy)
    if code == exits.EX_FAILED and fail_if_lossy and status.lossy:
        click.echo(f"error: {status.lossy} lossy document(s) (--fail-if-lossy)", err=True)
    sys.exit(code)


def _one_input(files: tuple[str, ...]) -> str:
    """The single input (stdin when none); several are a usage error that says what to use instead."""
    if len(files) > 1:
        raise click.UsageError(
            f"convert takes one input, got {len(files)}; for several files use "
            "'envglot migrate FILE... --out DIR' (one output per input; -t, --log, -v work there too), "
            "or join them into one stream: 'cat FILE... | envglot convert -t DIALECT'"
        )
    return files[0] if files else "-"
