"""``envglot migrate``: move stored responses (files, trees, JSON Lines, .gz) to one dialect.

Over 500 lines: ``migrate`` has the most options of any command, a live progress line and the summary table.

The engine is :func:`envglot.migrate` (module `envglot.migration`); this module parses options, draws the
progress line on an interactive stderr, prints the summary table and sets the exit code.
"""

from __future__ import annotations

import signal
import sys
import time
from types import FrameType
from typing import Any

import click

from ..diagnostics import LOSSY_KINDS, Diagnostic
from ..errors import EnvglotError
from ..excerpt import MESSAGE_LIMIT, display_path, excerpt
from ..migration import (
    DEFAULT_CHUNK_BYTES,
    DEFAULT_MAX_GZIP_RATIO,
    DEFAULT_MAX_RECORD_BYTES,
    EX_INTERRUPTED,
    EX_SOFTWARE,
    UNDETECTED,
    MigrationError,
    MigrationReport,
    Progress,
    RecordError,
    migrate,
)
from ..migration.workers import keep_freed_buffers
from . import exits
from .common import (
    DialectType,
    LogWriter,
    detection_options,
    kind_of_error,
    load_mappings,
    make_options,
    mappings_option,
    parse_context,
    policy_options,
)
from .exits import die
from .findings import Findings, Severity, output_format_option, stream_echo
from .group import main
from .outputs import echo

__all__ = ["format_summary", "migrate_command"]


_EPILOG = """\b
Examples:
  envglot migrate archive/ --out migrated/
  envglot migrate logs/ --in-place            # keeps each original as FILE.bak
  envglot migrate archive/ --check            # exit 1 if anything would change
  envglot migrate archive/ --check --diff     # and show how, as a unified diff
  envglot migrate archive/ --check --output-format github --report -
  zcat day.jsonl.gz | envglot migrate - > day.v2.jsonl

\b
Exit codes:
  0    every record converted or passed through
  1    some records rejected (see --rejects), or --check found work to do
  2    usage error
  65   --max-errors exceeded: the run stopped early
  66   an input is missing, unreadable or skipped (not a regular file, a link
       loop, a link out of the tree, a gzip bomb); the others were still migrated
  74   an output, backup or the rejects file cannot be written
  70   a bug in envglot: a worker process died (the file in progress is not
       written), or records were rejected as InternalError (the run completed)
  75   another migration is writing into the same --out (its lock is held)
  130  interrupted (committed outputs are complete; nothing is half-written)
  141  stdout was closed by its reader (- without --out, e.g. | head)
"""

_SUFFIXES = {
    "": 1,
    **{u: 1024 for u in ("k", "kb", "kib")},
    **{u: 1024**2 for u in ("m", "mb", "mib")},
    **{u: 1024**3 for u in ("g", "gb", "gib")},
}


class _Size(click.ParamType):
    """A byte count: ``4194304``, ``512K``, ``4M``/``4MiB``, ``1G``."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        s = str(value).strip().lower()
        num = s.rstrip("kmgib")
        unit = s[len(num) :]
        if unit not in _SUFFIXES or not num.isdigit() or int(num) < 1:
            self.fail(f"{value!r} is not a size such as 4194304, 512K, 4M or 1G", param, ctx)
        return int(num) * _SUFFIXES[unit]


def _mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 1e5 else f"{n / 1e3:,.1f} kB"


class _ProgressLine:
    """One self-rewriting status line on stderr: share done, MB, records, rate, ETA (at most 10 redraws/s).

    MB are record bytes read, uncompressed, as in the summary's ``bytes:`` line; the share
    done and the ETA follow the input files' sizes as stored.

    The ETA is the latest of three estimates, each from the rate since the first report
    (start-up excluded): input bytes, files (a per-file cost such as opening and
    committing is not in the bytes) and records (the total estimated from the records
    per byte so far).
    """

    def __init__(self) -> None:
        self.last = 0.0
        self.drawn = False
        self.first: Progress | None = None

    def _eta(self, p: Progress) -> float | None:
        f = self.first
        if f is None or p.elapsed_s <= f.elapsed_s:
            return None
        dt = p.elapsed_s - f.elapsed_s
        etas = []
        done_b = p.bytes_done - f.bytes_done
        if p.bytes_total and done_b > 0:
            etas.append(max(p.bytes_total - p.bytes_done, 0) * dt / done_b)
            if p.records > f.records and p.bytes_done:
                total_records = p.records * p.bytes_total / p.bytes_done
                etas.append(max(total_records - p.records, 0) * dt / (p.records - f.records))
        if p.files_total > 1 and p.files_done > f.files_done:
            etas.append((p.files_total - p.files_done) * dt / (p.files_done - f.files_done))
        return max(etas) if etas else None

    def __call__(self, p: Progress) -> None:
        if self.first is None:
            self.first = p
        now = time.monotonic()
        if now - self.last < 0.1:
            return
        self.last = now
        rate = p.records / p.elapsed_s if p.elapsed_s > 0 else 0.0
        mbs = p.bytes_in / 1e6 / p.elapsed_s if p.elapsed_s > 0 else 0.0
        parts = []
        if p.bytes_total:  # the share of the input files (as stored) done
            frac = min(p.bytes_done / p.bytes_total, 1.0)
            bar = "#" * int(frac * 20)
            parts.append(f"[{bar:<20}] {frac:4.0%}")
        parts.append(f"{p.bytes_in / 1e6:,.1f} MB")
        parts.append(f"{p.records:,} records")
        parts.append(f"{rate:,.0f} rec/s, {mbs:,.1f} MB/s")
        parts.append(f"file {min(p.files_done + 1, p.files_total)}/{p.files_total}")
        eta = self._eta(p)
        if eta is not None:
            parts.append(f"ETA {int(eta // 60)}:{int(eta % 60):02d}")
        sys.stderr.write("\r\x1b[K" + "  ".join(parts))
        sys.stderr.flush()
        self.drawn = True

    def clear(self) -> None:
        if self.drawn:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _where_outputs(rep: MigrationReport, out: str | None) -> str:
    """Where the run put its outputs, in words."""
    if rep.mode == "check":
        return "none written (--check)"
    if rep.mode == "stdout":
        return "stdout"
    if rep.mode == "in-place":
        return "the inputs, rewritten in place" + (" (originals kept as backups)" if rep.backups else "")
    return f"{display_path(out.rstrip('/') or '/')}/ (the inputs' names and layout)" if out is not None else "--out"


def format_summary(rep: MigrationReport, out: str | None = None) -> str:
    """The human summary printed at the end of a run (the same facts as ``--report``; ``out``: the --out DIR)."""
    verb = "checked" if rep.mode == "check" else "migrated"
    done = rep.files_total - len(rep.not_processed)
    files_n = f"{done:,} of {rep.files_total:,}" if rep.not_processed else f"{rep.files_total:,}"
    # a rate over less than a second is mostly start-up: shown only for runs of 1 s or more
    rate = f" ({rep.records_per_s:,.0f} records/s, {rep.mb_per_s:,.2f} MB/s)" if rep.elapsed_s >= 1 else ""
    head = f"{verb} {files_n} file(s) to {rep.target} in {rep.elapsed_s:.2f} s: {rep.records:,} records{rate}"
    cols = ("source dialect", "records", "converted", "passed through", "rejected", "lossy")
    rows: list[tuple[str, ...]] = []
    for name, c in sorted(rep.by_source.items(), key=lambda kv: (kv[0] == UNDETECTED, kv[0])):
        rows.append((name, *(f"{v:,}" for v in (c.records, c.converted, c.passed_through, c.rejected, c.lossy))))
    totals = (rep.records, rep.converted, rep.passed_through, rep.rejected, rep.lossy)
    rows.append(("total", *(f"{v:,}" for v in totals)))
    widths = [max(len(r[i]) for r in (cols, *rows)) for i in range(len(cols))]

    def fmt(r: tuple[str, ...]) -> str:
        return "  " + "  ".join(v.ljust(widths[0]) if i == 0 else v.rjust(widths[i]) for i, v in enumerate(r))

    lines = [head, "", fmt(cols), *(fmt(r) for r in rows), ""]
    would = "would change" if rep.mode == "check" else "changed"
    files = f"  files: {rep.files_changed:,} {would}, {rep.files_unchanged:,} unchanged"
    if rep.mode != "check":
        files += f", {rep.files_written:,} written"
    if rep.backups:
        files += f", {rep.backups:,} backups"
    if rep.failed:
        files += f", {len(rep.failed):,} failed"
    lines.append(files)
    lines.append(f"  bytes: {_mb(rep.bytes_in)} in, {_mb(rep.bytes_out)} out (records, uncompressed)")
    lines.append(f"  outputs: {_where_outputs(rep, out)}")
    if rep.unwrapped:
        lines.append(f"  unwrapped: {rep.unwrapped:,} records were MCP CallToolResults (written as bare envelopes)")
    if rep.rejected:
        where = f" -> {rep.rejects_file}" if rep.rejects_file else " (not written: --check without --rejects)"
        lines.append(f"  rejected: {rep.rejected:,} records{where}")
    if rep.internal_errors:
        lines.append(
            f"  internal errors: {rep.internal_errors:,} of the rejected records hit a bug in envglot, "
            "not bad input (error_type InternalError in the rejects; please report it)"
        )
    return "\n".join(lines)


class _PerRecord:
    """``--log`` and ``-v``: each record's diagnostics and reject reasons, as the engine hands them over.

    The log has the line format of ``convert --log``; ``-v`` prints
    ``FILE[:LINE]: warning: PATH: message [kind]`` (``note:`` for the kinds that lose
    nothing) and ``FILE[:LINE]: error: message (at PATH)`` for a rejected record.
    """

    def __init__(
        self, log: LogWriter | None, verbose: bool, progress: _ProgressLine | None, findings: Findings
    ) -> None:
        self.log = log
        self.verbose = verbose
        self.progress = progress
        self.findings = findings

    def __call__(self, name: str, line: int | None, item: Diagnostic | RecordError) -> None:
        where = name if line is None else f"{name}:{line}"
        if isinstance(item, Diagnostic):
            kind, lossy = str(item.kind), item.lossy
            text = f"{where}: {'warning' if lossy else 'note'}: {_cut(item.path)}: {_cut(item.message)} [{kind}]"
        else:
            kind, lossy = kind_of_error(item.error_type), item.lossy
            at = f" (at {_cut(item.path)})" if item.path else ""
            text = f"{where}: error: {_cut(item.message)}{at}"
        if self.log is not None:
            self.log.record(name, line, kind, item.path, item.message, item.dialect, lossy)
        severity: Severity = "error" if isinstance(item, RecordError) else "warning" if lossy else "note"
        self.findings.add(name, line, item.path, kind, severity, item.message)
        if self.verbose:
            if self.progress is not None:
                self.progress.clear()
            click.echo(text, err=True)


def _cut(text: str) -> str:
    return excerpt(text, MESSAGE_LIMIT)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@main.command("migrate", epilog=_EPILOG, short_help="Migrate stored responses (files, trees, logs).")
@click.argument("inputs", nargs=-1, required=True, metavar="INPUT...")
@click.option(
    "-t",
    "--to",
    "to",
    default="response-v2",
    show_default=True,
    type=DialectType(writable=True),
    help="Target dialect.",
)
@click.option(
    "-f", "--from", "from_", type=DialectType(auto=True), help="Force the source dialect (default: detect per record)."
)
@click.option("-o", "--out", metavar="DIR", help="Mirror the inputs under DIR (same names, container, gzip).")
@click.option("-i", "--in-place", is_flag=True, help="Rewrite changed inputs in place (atomically, with a backup).")
@click.option(
    "--backup",
    metavar="SUFFIX",
    default=".bak",
    show_default=True,
    help="With --in-place: keep each changed original as FILE+SUFFIX (never overwritten).",
)
@click.option("--no-backup", is_flag=True, help="With --in-place: keep no backup (rejects still keep bad records).")
@click.option(
    "--rejects",
    metavar="FILE",
    help="Write rejected records here (JSON Lines, original bytes kept; a file migrated again replaces its "
    "own earlier ones). Default: .envglot-rejects.jsonl in the "
    "--out directory, else in the first input's directory.",
)
@click.option("--report", metavar="FILE", help="Write the summary as JSON to FILE (- for stdout).")
@click.option(
    "--check",
    "--dry-run",
    "check",
    is_flag=True,
    help="Convert in memory and report; write nothing; exit 1 if anything would change.",
)
@click.option(
    "--diff",
    is_flag=True,
    help="With --check: print a unified diff of each file that would change, as it would be written.",
)
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Worker processes (default: number of CPUs).")
@click.option(
    "--include",
    multiple=True,
    metavar="GLOB",
    help="Files to take from directories (repeatable; default *.json *.jsonl *.ndjson and their .gz).",
)
@click.option("--exclude", multiple=True, metavar="GLOB", help="Files or directories to skip (repeatable).")
@mappings_option
@click.option(
    "--unsupported",
    type=click.Choice(["ignore", "warn", "raise"]),
    default="warn",
    show_default=True,
    help="Lossy records: convert silently, convert and count them (warn), or reject them (raise).",
)
@policy_options
@click.option("--preserve", is_flag=True, help="Carry what the target cannot say as a residue (round trips restore).")
@click.option(
    "--context",
    "context",
    multiple=True,
    metavar="KEY=VALUE",
    help="Value for a field the target requires but the source lacks (KEY:=JSON for non-strings). Repeatable.",
)
@click.option(
    "--style",
    type=click.Choice(["compact", "pretty", "native"]),
    default="compact",
    show_default=True,
    help="Layout of converted .json documents (JSON Lines records are always one line).",
)
@click.option("--max-errors", type=click.IntRange(min=0), metavar="N", help="Stop after more than N rejects.")
@click.option(
    "--chunk-size",
    type=_Size(),
    default=DEFAULT_CHUNK_BYTES,
    help="JSON Lines chunk handed to a worker, in whole lines (default 1M); bounds memory with --jobs.",
)
@click.option(
    "--follow-symlinks",
    is_flag=True,
    help="Follow links found in directories to files anywhere (default: only to files inside the input tree).",
)
@click.option(
    "--max-record-bytes",
    type=_Size(),
    default=DEFAULT_MAX_RECORD_BYTES,
    help="Reject a record (line or .json document) longer than this, unread (default 64M).",
)
@click.option(
    "--max-gzip-ratio",
    type=click.IntRange(min=1),
    metavar="N",
    default=DEFAULT_MAX_GZIP_RATIO,
    show_default=True,
    help="Stop reading a .gz input that expands more than this many times (a decompression bomb).",
)
@click.option(
    "--engine",
    type=click.Choice(["local", "dask"]),
    default="local",
    show_default=True,
    help="local: a process pool here; dask: a Dask cluster (--out/--check; inputs and --out may be fsspec URLs).",
)
@click.option(
    "--scheduler",
    metavar="ADDR",
    help="With --engine dask: the scheduler (tcp://host:8786), or 'synchronous'; default: start a LocalCluster.",
)
@click.option(
    "--workers", type=click.IntRange(min=1), help="With --engine dask: LocalCluster worker processes (default: CPUs)."
)
@click.option("--progress/--no-progress", default=None, help="Progress line on stderr (default: when stderr is a TTY).")
@click.option("-q", "--quiet", is_flag=True, help="No progress and no summary (errors are still printed).")
@click.option(
    "--log",
    "log_path",
    metavar="FILE",
    help="Write every diagnostic and every reject's reason as JSON Lines, with file and line (as convert --log); "
    "- for stdout.",
)
@click.option("-v", "--verbose", is_flag=True, help="Print each record's diagnostics and rejects on stderr.")
@output_format_option
@detection_options
@click.pass_context
def migrate_command(
    ctx: click.Context,
    inputs: tuple[str, ...],
    to: str,
    from_: str | None,
    out: str | None,
    in_place: bool,
    backup: str,
    no_backup: bool,
    rejects: str | None,
    report: str | None,
    check: bool,
    diff: bool,
    jobs: int | None,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    mappings: tuple[str, ...],
    unsupported: str,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    preserve: bool,
    context: tuple[str, ...],
    style: str,
    max_errors: int | None,
    chunk_size: int,
    follow_symlinks: bool,
    max_record_bytes: int,
    max_gzip_ratio: int,
    engine: str,
    scheduler: str | None,
    workers: int | None,
    progress: bool | None,
    quiet: bool,
    log_path: str | None,
    verbose: bool,
    output_format: str,
    strict_detect: bool,
    max_depth: int,
) -> None:
    """Migrate stored responses to one dialect (default response-v2), record by record.

    INPUT is a file, a directory (walked recursively) or - for JSON Lines on stdin. .json
    files hold one document; .jsonl/.ndjson one per line; .gz forms are read and written
    compressed. The source dialect is detected per record (or forced with -f); records
    already in the target pass through byte-identical. Records that cannot be converted
    go to the rejects file with their original bytes and are left out of the output.
    --check --diff shows each change as a unified diff; --output-format json|sarif|github
    prints every diagnostic and reject for machines (docs/cli.md). See docs/migration.md.
    """
    backup_given = ctx.get_parameter_source("backup") is click.core.ParameterSource.COMMANDLINE
    if no_backup and backup_given:
        raise click.UsageError("--backup and --no-backup exclude each other")
    if (no_backup or backup_given) and not in_place:
        raise click.UsageError("--backup/--no-backup only apply with --in-place")
    if out is not None and in_place:
        raise click.UsageError("--out and --in-place exclude each other")
    if check and (out is not None or in_place):
        raise click.UsageError("--check writes nothing; drop --out/--in-place")
    if not check and out is None and not in_place and inputs != ("-",):
        raise click.UsageError("say where the output goes: --out DIR, --in-place, or --check")
    if follow_symlinks and ctx.get_parameter_source("follow_symlinks") is not click.core.ParameterSource.COMMANDLINE:
        raise click.UsageError(
            "follow-symlinks is taken from the command line only: a configuration file cannot widen what migrate reads"
        )
    if engine == "local" and (scheduler is not None or workers is not None):
        raise click.UsageError("--scheduler/--workers need --engine dask")
    if not backup and not no_backup:
        raise click.UsageError("--backup needs a non-empty suffix (use --no-backup for none)")
    load_mappings(mappings)  # exits 66/65 with a clear message on a bad overlay
    synth = parse_context(context)
    if diff and not check:
        raise click.UsageError("--diff needs --check")
    machine = output_format != "text"
    if engine != "local" and (log_path is not None or verbose or diff or machine):
        raise click.UsageError("--log, -v, --diff and --output-format need --engine local")
    stdout_users = [
        name
        for name, used in (
            ("the migrated records (- without --out)", not check and out is None and not in_place),
            ("--report -", report == "-"),
            ("--log -", log_path == "-"),
            ("--diff", diff),
        )
        if used
    ]
    if len(stdout_users) > 1:
        raise click.UsageError(f"{' and '.join(stdout_users)} would share stdout; send all but one to a file")
    findings = Findings(output_format, stream_echo(to_stderr=bool(stdout_users)))
    show = progress if progress is not None else (sys.stderr.isatty() and not quiet)
    line = _ProgressLine() if show else None
    log = LogWriter(log_path) if log_path is not None else None
    per_record = _PerRecord(log, verbose, line, findings) if log is not None or verbose or machine else None
    rep: MigrationReport | None = None
    if engine == "local":
        keep_freed_buffers()  # this process is the command's: -j 1 converts here, -j N appends here
    old_term = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        rep = migrate(
            list(inputs),
            to=to,
            from_=from_,
            out=out,
            in_place=in_place,
            backup=None if no_backup else backup,
            check=check,
            rejects=rejects,
            report=None if report == "-" else report,
            jobs=jobs,
            include=include or None,
            exclude=exclude,
            options=make_options(
                unsupported,
                select,
                ignore,
                preserve=preserve,
                mappings=mappings,
                context=synth,
                strict=strict_detect,
                max_depth=max_depth,
                style=style,
            ),
            max_errors=max_errors,
            chunk_bytes=chunk_size,
            follow_symlinks=follow_symlinks,
            max_record_bytes=max_record_bytes,
            max_gzip_ratio=max_gzip_ratio,
            progress=line,
            engine=engine,
            scheduler=scheduler,
            workers=workers,
            notice=None if quiet else (lambda msg: click.echo(msg, err=True)),
            on_diagnostic=per_record,
            on_output=_print_diff if diff else None,
            skip=[log_path] if log_path not in (None, "-") else [],
        )
    except MigrationError as exc:
        die(exc.message, exc.exit_code)
    except EnvglotError as exc:
        die(str(exc), exits.EX_USAGE)
    except KeyboardInterrupt:
        if line is not None:
            line.clear()
        click.echo(
            "interrupted: outputs already committed are complete; the file in progress was not written "
            "(its temporary file is removed, or cleaned by the next run)",
            err=True,
        )
        sys.exit(EX_INTERRUPTED)
    except BrokenPipeError:  # stdout's reader went away (`| head`): end quietly, as the other commands do
        exits.silence_broken_pipe()
        sys.exit(exits.EX_PIPE)
    except OSError as exc:  # the --report file (outputs and rejects are reported per file)
        die(f"cannot write {exc.filename or 'the report'}: {exc.strerror or exc}", exits.EX_IOERR)
    except Exception as exc:  # a process pool's BrokenProcessPool; anything else is raised on
        if not _broken_pool(exc):
            raise
        if line is not None:
            line.clear()
        die(f"a worker process died ({exc}); the file in progress was not written", EX_SOFTWARE)
    finally:
        signal.signal(signal.SIGTERM, old_term)
        if log is not None and rep is None:
            log.abort()  # the run did not end: an existing log file stays as it was
    if log is not None:
        log.close()
    if line is not None:
        line.clear()
    findings.close()
    if report == "-":
        echo(rep.to_json().decode().rstrip("\n"))
    _print_outcome(rep, quiet, unsupported, out)
    raise exits.Finished(rep.exit_code)  # every file of the run closed: the program may end at once


def _broken_pool(exc: BaseException) -> bool:
    """``exc`` is a process pool's ``BrokenProcessPool`` (its module is imported only by a run with one)."""
    pool = sys.modules.get("concurrent.futures.process")
    return pool is not None and isinstance(exc, pool.BrokenProcessPool)


def _print_diff(name: str, path: str, output: bytes) -> None:
    """``--check --diff``: the unified diff of one input file and what would be written for it."""
    import difflib
    import gzip

    try:
        with gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb") as f:
            before = f.read()
    except OSError as exc:
        click.echo(f"{name}: error: cannot read input for --diff: {exc.strerror or exc}", err=True)
        return
    for text in difflib.unified_diff(_lines(before), _lines(output), f"a/{name}", f"b/{name}"):
        echo(text.rstrip("\n"))


def _lines(data: bytes) -> list[str]:
    """Lines for a diff; a missing final newline is marked as ``diff -u`` does."""
    lines = data.decode("utf-8", "replace").splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


def _print_outcome(rep: MigrationReport, quiet: bool, unsupported: str, out: str | None) -> None:
    err = sys.stderr
    if rep.mode == "check" and not quiet:
        for f in rep.changed:
            print(
                f"would migrate {f.file}: {f.converted:,} converted, {f.rejected:,} rejected, "
                f"{f.passed_through:,} unchanged",
                file=err,
            )
    for failure in rep.failed:
        print(f"{failure.file}: error: {failure.error}", file=err)
    if rep.internal_errors and quiet:
        print(f"error: {rep.internal_errors:,} records rejected by a bug in envglot (InternalError)", file=err)
    if rep.stopped is not None:
        print(f"error: stopped early ({rep.stopped})", file=err)
        if rep.not_processed:
            shown = ", ".join(rep.not_processed[:5])
            more = f" and {len(rep.not_processed) - 5:,} more (see --report)" if len(rep.not_processed) > 5 else ""
            print(f"not processed (no output written): {shown}{more}", file=err)
    if not quiet:
        print(format_summary(rep, out), file=err)
        if unsupported == "warn" and rep.lossy:
            kinds = ", ".join(f"{k} x{n:,}" for k, n in sorted(rep.diagnostics.items()) if k in LOSSY_KINDS)
            print(
                f"warning: {rep.lossy:,} records were converted with loss (diagnostics: {kinds}); "
                "--unsupported raise rejects them instead",
                file=err,
            )
