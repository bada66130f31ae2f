"""Helpers shared by the CLI commands: dialect options, inputs (JSON or JSON Lines), atomic
outputs, diagnostics on stderr and in ``--log`` files, and the run's exit status.

Everything here is usable by any command (``migrate`` included): nothing is specific to
one command.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any, BinaryIO, NamedTuple, NoReturn

import click
import msgspec

from ..canonical import Envelope
from ..diagnostics import Diagnostic
from ..dialect import Registry, bundled
from ..errors import EnvglotError, MappingError, UnknownDialectError, UnsupportedError
from ..excerpt import MESSAGE_LIMIT, display_path, excerpt
from ..limits import MAX_DEPTH, MAX_DEPTH_CEILING
from ..mappings import Mappings, mappings_for
from ..options import Options
from ..policy import Policy
from . import exits

if TYPE_CHECKING:
    from .findings import Findings

__all__ = [
    "STDIN_NAME",
    "AtomicWriter",
    "DialectType",
    "LogWriter",
    "Record",
    "RunStatus",
    "Stderr",
    "context_keys",
    "die",
    "echo",
    "error_kind",
    "expand_folders",
    "is_jsonl_name",
    "load_mappings",
    "make_policy",
    "mappings_option",
    "open_input",
    "open_output",
    "outcome_ok",
    "output_failed",
    "parse_context",
    "policy_options",
    "read_records",
    "registry_of",
    "same_file",
    "set_registry",
    "try_open",
    "writer_for",
]

STDIN_NAME = "<stdin>"
"""How standard input is named in messages and ``--log`` records."""
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".log")
"""Always JSON Lines (a ``.log`` too: a corrupt first line must not make it one document)."""
_ANY = msgspec.json.Decoder()
_RAW = msgspec.json.Decoder(msgspec.Raw)
_ENC = msgspec.json.Encoder()


def die(message: str, code: int, where: str | None = None) -> NoReturn:
    """Print ``[WHERE: ]error: MESSAGE`` on stderr and exit with ``code``."""
    if where:
        where = display_path(where)
    click.echo(f"{where}: error: {message}" if where else f"error: {message}", err=True)
    sys.exit(code)


# --- options -----------------------------------------------------------------------------


_REGISTRY_KEY = "envglot.registry"
"""Where a command's context keeps the dialects its ``--mappings`` declare (``click.Context.meta``)."""


def registry_of(ctx: click.Context | None) -> Registry:
    """The dialects a command knows: the bundled ones plus those its ``--mappings`` declare."""
    reg = ctx.meta.get(_REGISTRY_KEY) if ctx is not None else None
    return reg if isinstance(reg, Registry) else bundled()


def set_registry(ctx: click.Context, registry: Registry | None) -> None:
    """Make ``registry`` the one :func:`registry_of` gives for ``ctx`` (``None``: forget it)."""
    if registry is None:
        ctx.meta.pop(_REGISTRY_KEY, None)
    else:
        ctx.meta[_REGISTRY_KEY] = registry


class DialectType(click.ParamType):
    """A dialect name (aliases accepted, normalized); unknown names are usage errors with a did-you-mean.

    The names are the bundled dialects' and those the command's ``--mappings`` declare
    (:func:`registry_of`).

    Args:
        writable: only dialects with a writer (for ``--to``).
        auto: also accept ``auto`` (returned as ``None``: detect per document).
    """

    name = "dialect"

    def __init__(self, *, writable: bool = False, auto: bool = False) -> None:
        self.writable = writable
        self.auto = auto

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str | None:
        if value is None:
            return None
        if self.auto and value == "auto":
            return None
        reg = registry_of(ctx)
        try:
            unit = reg.get(str(value))
        except UnknownDialectError as exc:
            self.fail(str(exc), param, ctx)
        if self.writable and not unit.shape.writable:
            self.fail(
                f"{unit.name} is a read-only source dialect; write one of {', '.join(reg.writable_names())}", param, ctx
            )
        return unit.name

    def shell_complete(self, ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
        from click.shell_completion import CompletionItem

        reg = registry_of(ctx)
        names = reg.writable_names() if self.writable else reg.names()
        return [CompletionItem(n) for n in (*names, *(("auto",) if self.auto else ())) if n.startswith(incomplete)]

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "DIALECT"


def _declare(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    """Compile the dialects declared among the ``--mappings`` files into this command's registry
    before any other option is parsed (eager), so ``-t NAME`` and ``-f NAME`` know them; exits
    65 on a bad declaration. Nothing is registered for the process."""
    from ..declared import with_declarations

    try:
        set_registry(ctx, with_declarations(value or ())[0])
    except MappingError as exc:
        die(str(exc), exits.EX_DATAERR)
    return value


def mappings_option(f: Any) -> Any:
    """The repeatable ``--mappings FILE`` option (overlay tables or dialect declarations)."""
    return click.option(
        "--mappings",
        "mappings",
        multiple=True,
        metavar="FILE",
        is_eager=True,
        callback=_declare,
        help="Mapping overlay TOML, or a dialect declared in TOML (repeatable; later files win). "
        "See `envglot mappings init` and docs/declared-dialects.md.",
    )(f)


def detection_options(f: Any) -> Any:
    """``--strict-detect`` and ``--max-depth``, shared by the commands that read envelopes."""
    f = click.option(
        "--max-depth",
        type=click.IntRange(min=1, max=MAX_DEPTH_CEILING),
        default=MAX_DEPTH,
        show_default=True,
        help="Refuse input nested deeper than this (objects and arrays).",
    )(f)
    return click.option(
        "--strict-detect",
        is_flag=True,
        help="Refuse documents without any dialect's markers instead of reading them as a legacy-v1 bare payload.",
    )(f)


def unreadable(path: str, what: str = "mapping overlay") -> str | None:
    """Why the file ``path`` cannot be read (missing, unreadable, not a regular file), or None."""
    from ..tomlfile import open_regular

    try:
        os.close(open_regular(path, what))
    except EnvglotError as exc:
        return exc.message
    return None


def load_mappings(paths: Sequence[str]) -> Mappings:
    """The bundled tables plus overlays; exits 66 if an overlay is unreadable, 65 if invalid."""
    for p in paths:
        why = unreadable(p)
        if why is not None:
            die(why, exits.EX_NOINPUT, p)
    try:
        return mappings_for(list(paths))
    except MappingError as exc:
        die(str(exc), exits.EX_DATAERR)


def context_keys() -> tuple[str, ...]:
    """Names accepted by ``--context``: canonical envelope fields and ``workspace.*``."""
    nested = ("workspace", "pagination", "fidelity")
    out: list[str] = []
    for f in msgspec.structs.fields(Envelope):
        if f.name in ("ok", "payload", "problems", "warnings", "next_steps", "extras", "residue"):
            continue
        if f.name in nested:
            sub = msgspec.structs.fields(_nested_type(f.name))
            out += [f"{f.name}.{s.name}" for s in sub if s.name != "extra"]
        else:
            out.append(f.name)
    return tuple(out)


def _nested_type(name: str) -> Any:
    from .. import canonical

    return {"workspace": canonical.Workspace, "pagination": canonical.Pagination, "fidelity": canonical.Fidelity}[name]


def parse_context(items: Sequence[str]) -> dict[str, Any] | None:
    """``KEY=VALUE`` (a string) and ``KEY:=JSON`` (any JSON value) pairs as a context dict.

    Raises:
        click.BadParameter: malformed pair, unknown key or invalid JSON.
    """
    if not items:
        return None
    known = context_keys()
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE or KEY:=JSON", param_hint="'--context'")
        parsed: Any = value
        if key.endswith(":"):
            key = key[:-1]
            try:
                parsed = _ANY.decode(value)
            except msgspec.DecodeError as exc:
                raise click.BadParameter(f"{key}:= needs a JSON value: {exc}", param_hint="'--context'") from None
        if key not in known:
            import difflib

            close = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(known)})"
            raise click.BadParameter(f"unknown context key {key!r}{hint}", param_hint="'--context'")
        out[key] = parsed
    return out


# --- inputs ------------------------------------------------------------------------------


class Record(NamedTuple):
    """One JSON document of an input: the whole file, or one line of a JSON Lines file."""

    data: bytes
    line: int | None
    """1-based line number for JSON Lines input, ``None`` for a whole-file document."""


def is_jsonl_name(name: str) -> bool:
    """True for ``*.jsonl`` / ``*.ndjson`` / ``*.log`` file names (and their ``.gz`` forms)."""
    return name.lower().removesuffix(".gz").endswith(JSONL_SUFFIXES)


def expand_folders(paths: Sequence[str]) -> tuple[list[str], int]:
    """``paths`` with each folder replaced by the files ``migrate`` takes from it (recursively,
    its filters: ``*.json``, ``*.jsonl``, ``*.ndjson`` and their ``.gz``), and how many folders
    could not be read (each reported on stderr; the caller counts them: exit 66)."""
    out: list[str] = []
    unreadable = 0
    for p in paths:
        if p == "-" or not os.path.isdir(p):
            out.append(p)
            continue
        from ..migration import input_files

        files, failures = input_files(p)
        out += files
        for f in failures:
            click.echo(f"{f.file}: error: {f.error}", err=True)
        unreadable += len(failures)
    return out, unreadable


def try_open(path: str) -> tuple[str, BinaryIO] | None:
    """``(display name, binary stream)`` for ``path`` or ``-`` (stdin); prints the error and
    returns ``None`` if the file cannot be opened (the caller counts it: exit 66)."""
    if path == "-":
        return STDIN_NAME, sys.stdin.buffer
    name = display_path(path)
    try:
        if path.endswith(".gz"):
            import gzip

            return name, gzip.open(path, "rb")  # type: ignore[return-value]
        return name, open(path, "rb")
    except OSError as exc:
        click.echo(f"{name}: error: cannot read input: {exc.strerror}", err=True)
        return None


@contextlib.contextmanager
def open_input(path: str) -> Iterator[tuple[str, BinaryIO]]:
    """``(display name, binary stream)`` for ``path`` or ``-`` (stdin); exits 66 if unreadable."""
    opened = try_open(path)
    if opened is None:
        sys.exit(exits.EX_NOINPUT)
    name, f = opened
    try:
        yield name, f
    finally:
        if f is not sys.stdin.buffer:
            f.close()


def _parses(line: bytes) -> bool:
    try:
        _RAW.decode(line)  # syntax only: a document's encoding and depth are the core's to judge
    except (msgspec.DecodeError, RecursionError):
        return False
    return True


def read_records(stream: BinaryIO, name: str, jsonl: bool | None = None) -> tuple[bool, Iterator[Record]]:
    """Split an input into documents: ``(is_jsonl, records)``.

    The input is JSON Lines when ``jsonl`` is true, when ``name`` ends in ``.jsonl`` or
    ``.ndjson``, or when its first non-blank line is a complete JSON value on its own and
    at least one more non-blank line follows (a pretty-printed document's first line,
    ``{``, never parses alone). JSON Lines are streamed line by line (blank lines are
    skipped, line numbers count every physical line); anything else is one document.
    """
    if jsonl is None and is_jsonl_name(name):
        jsonl = True
    if jsonl:
        return True, _lines(iter(stream), 0)
    head: list[bytes] = []
    it = iter(stream)
    first = None
    for raw in it:
        head.append(raw)
        if raw.strip():
            first = raw
            break
    if first is not None and jsonl is None and _parses(first):
        for raw in it:
            head.append(raw)
            if raw.strip():
                return True, _chain_lines(head, it)
    data = b"".join(head) + stream.read()
    docs = split_stream(data)
    if docs is not None:
        return True, iter(docs)
    return False, iter((Record(data, None),))


_TRAILING = re.compile(r"trailing characters \(byte (\d+)\)")
_SPACE = re.compile(rb"[ \t\r\n]*")
_BOM = b"\xef\xbb\xbf"


def split_stream(data: bytes) -> list[Record] | None:
    """The documents of a jq-style stream (JSON values one after another, pretty-printed or not).

    ``None`` when ``data`` holds one document (or is not JSON at all: the reader reports it).
    Each record's line is the line its document starts on; a document that does not parse
    ends the split and is kept whole with the rest of the input, to be reported there.
    """
    mv = memoryview(data)
    bom = 3 if data.startswith(_BOM) else 0
    pos = bom
    out: list[Record] = []
    while True:
        pos = _SPACE.match(data, pos).end()  # type: ignore[union-attr]
        if pos >= len(data):
            break
        end = len(data)
        try:
            _RAW.decode(mv[pos:])
        except msgspec.DecodeError as exc:
            m = _TRAILING.search(str(exc))
            if m is None:
                if not out:
                    return None
                out.append(Record(bytes(mv[pos:]), data.count(b"\n", 0, pos) + 1))
                break
            end = pos + int(m.group(1)) - 1  # msgspec counts the offending byte 1-based
        except RecursionError:  # too deep to split: one document, the core names the limit
            return None if not out else [*out, Record(bytes(mv[pos:]), data.count(b"\n", 0, pos) + 1)]
        start = 0 if not out else pos  # the first record keeps a byte order mark for the core to report
        out.append(Record(bytes(mv[start:end]), data.count(b"\n", 0, pos) + 1))
        if end == len(data) and not out[1:]:
            return None
        pos = end
    return out if len(out) > 1 else None


def _chain_lines(head: list[bytes], it: Iterator[bytes]) -> Iterator[Record]:
    yield from _lines(iter(head), 0)
    yield from _lines(it, len(head))


def _lines(it: Iterable[bytes], start: int) -> Iterator[Record]:
    n = start
    for raw in it:
        n += 1
        data = raw.rstrip(b"\r\n")
        if data.strip():
            yield Record(data, n)


# --- outputs -----------------------------------------------------------------------------


_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
_HAS_SIGMASK = hasattr(signal, "pthread_sigmask")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class _FileSink:
    """Writes to ``self._f`` until :meth:`commit` or :meth:`abort` closes it."""

    _f: IO[bytes] | None

    def write(self, data: bytes) -> None:
        assert self._f is not None
        self._f.write(data)

    def flush(self) -> None:
        if self._f is not None:
            self._f.flush()


class AtomicWriter(_FileSink):
    """Write ``path`` atomically: a temporary file in the same directory, renamed on :meth:`commit`.

    Only for regular files (use :func:`writer_for`, which picks it when it fits).

    :meth:`abort` removes the temporary file and leaves any existing ``path`` untouched.
    An existing file's permission bits are kept; a new file gets ``0o666 & ~umask``.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._f = None
        directory = os.path.dirname(os.path.abspath(path))
        tmp: str | None = None
        # Ctrl-C/SIGTERM are held back while the temp file is created, then delivered inside
        # this try: an interruption at any point removes the temp file.
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS) if _HAS_SIGMASK else None
        try:
            try:
                fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
                self._tmp = tmp
                try:
                    mode = os.stat(path).st_mode & 0o7777
                except OSError:
                    mode = 0o666 & ~_umask()
                os.fchmod(fd, mode)
                self._f = os.fdopen(fd, "wb")
            finally:
                if old is not None:
                    signal.pthread_sigmask(signal.SIG_SETMASK, old)
        except BaseException:
            if self._f is not None:
                with contextlib.suppress(OSError):
                    self._f.close()
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            raise

    def commit(self) -> None:
        """Flush, close and rename into place."""
        if self._f is None:
            return
        f, self._f = self._f, None
        try:
            f.close()
            os.replace(self._tmp, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(self._tmp)
            raise

    def abort(self) -> None:
        """Drop everything written; ``path`` stays as it was."""
        if self._f is None:
            return
        f, self._f = self._f, None
        with contextlib.suppress(OSError):
            f.close()
        with contextlib.suppress(OSError):
            os.unlink(self._tmp)


class _Stdout:
    """stdout with the :class:`AtomicWriter` interface."""

    def __init__(self) -> None:
        self._f = sys.stdout.buffer

    def write(self, data: bytes) -> None:
        self._f.write(data)

    def flush(self) -> None:
        self._f.flush()

    def commit(self) -> None:
        self._f.flush()

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            self._f.flush()


class _Direct(_FileSink):
    """A device or pipe (``/dev/null``, a FIFO), written in place: it cannot be replaced atomically."""

    def __init__(self, path: str) -> None:
        self._f = open(path, "wb")

    def commit(self) -> None:
        if self._f is not None:
            f, self._f = self._f, None
            f.close()

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            self.commit()


Output = AtomicWriter | _Direct | _Stdout


def writer_for(path: str) -> AtomicWriter | _Direct:
    """An atomic writer for a regular (or new) file, through symlinks; a direct one for anything else.

    Raises:
        OSError: the file cannot be created.
    """
    real = os.path.realpath(path)
    try:
        regular = stat.S_ISREG(os.stat(real).st_mode)
    except FileNotFoundError:
        regular = True
    return AtomicWriter(real) if regular else _Direct(path)


def same_file(a: str, b: str) -> bool:
    """True when two paths name one file: same real path (symlinks, ``./`` spellings) or same inode."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def open_output(path: str | None) -> Output:
    """An output for ``path`` (``None`` or ``-``: stdout); exits 74 if it cannot be created."""
    if path is None or path == "-":
        return _Stdout()
    try:
        return writer_for(path)
    except OSError as exc:
        die(f"cannot write output: {exc.strerror}", exits.EX_IOERR, path)


def output_failed(path: str | None, exc: OSError) -> NoReturn:
    """Exit 74 after a write error on ``path`` (stdout when ``None``); 141 quietly on a closed pipe."""
    if isinstance(exc, BrokenPipeError):
        # the reader went away (e.g. `| head`): say nothing more on a dead pipe
        exits.silence_broken_pipe()
        sys.exit(exits.EX_PIPE)
    die(f"cannot write output: {exc.strerror}", exits.EX_IOERR, path or "<stdout>")


def echo(line: str) -> None:
    """Print one line on stdout; a closed pipe or full disk ends the run with exit 74."""
    try:
        click.echo(line)
    except OSError as exc:
        output_failed(None, exc)


# --- diagnostics -------------------------------------------------------------------------


def _bounded(text: str) -> str:
    """An input-derived message or path as printed and logged: at most MESSAGE_LIMIT characters."""
    return excerpt(text, MESSAGE_LIMIT)


def _where(name: str, line: int | None) -> str:
    return f"{name}:{line}: " if line is not None else f"{name}: "


def error_kind(exc: EnvglotError) -> str:
    """The ``kind`` of an error record in ``--log``: the exception class in snake_case."""
    return kind_of_error(type(exc).__name__)


def kind_of_error(class_name: str) -> str:
    """``ParseError`` -> ``parse_error`` (the ``kind`` of an error in ``--log``)."""
    import re

    return re.sub(r"(?<!^)(?=[A-Z])", "_", class_name).lower()


class LogWriter:
    """``--log FILE``: one JSON object per line for every diagnostic and error of the run.

    Fields: ``file``, ``line`` (JSON Lines input, else null), ``kind`` (a diagnostic kind,
    or ``parse_error``/``detect_error``/``unsupported_error``/... for errors), ``path``,
    ``message``, ``dialect`` and ``lossy``. Written atomically when the run ends; ``-`` is stdout.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._out: Output
        if path == "-":  # stdout
            self._out = _Stdout()
            return
        try:
            self._out = writer_for(path)
        except OSError as exc:
            die(f"cannot write log: {exc.strerror}", exits.EX_IOERR, path)

    def record(
        self, name: str, line: int | None, kind: str, path: str | None, message: str, dialect: str | None, lossy: bool
    ) -> None:
        rec = {
            "file": name,
            "line": line,
            "kind": kind,
            "path": None if path is None else excerpt(path, MESSAGE_LIMIT),
            "message": excerpt(message, MESSAGE_LIMIT),
            "dialect": dialect,
            "lossy": lossy,
        }
        try:
            self._out.write(_ENC.encode(rec) + b"\n")
        except OSError as exc:
            self._failed(exc)

    def close(self) -> None:
        try:
            self._out.commit()
        except OSError as exc:
            self._failed(exc)

    def _failed(self, exc: OSError) -> NoReturn:
        if isinstance(self._out, _Stdout):
            output_failed(None, exc)  # a closed pipe ends the run quietly (141)
        die(f"cannot write log: {exc.strerror}", exits.EX_IOERR, self.path)

    def abort(self) -> None:
        """Drop the log (an interrupted run): an existing FILE stays as it was."""
        self._out.abort()


def policy_options(f: Any) -> Any:
    """``--select`` / ``--ignore KIND[:PATH]``: which diagnostics count as loss (see :class:`~envglot.Policy`)."""
    f = click.option(
        "--ignore",
        "ignore",
        multiple=True,
        metavar="KIND[:PATH]",
        help="Never count these diagnostics as loss (repeatable; PATH: a JSON path, below it, or a * glob).",
    )(f)
    return click.option(
        "--select",
        "select",
        multiple=True,
        metavar="KIND[:PATH]",
        help="Count only these diagnostics as loss (repeatable; default: every lossy kind).",
    )(f)


def make_policy(level: str, select: Sequence[str], ignore: Sequence[str]) -> Policy:
    """The :class:`~envglot.Policy` of ``--unsupported/--select/--ignore`` (a bad selector is a usage error)."""
    try:
        return Policy(level=level, select=tuple(select), ignore=tuple(ignore))  # type: ignore[arg-type]
    except EnvglotError as exc:
        raise click.UsageError(str(exc)) from None


def make_options(level: str, select: Sequence[str], ignore: Sequence[str], **fields: Any) -> Options:
    """The one :class:`~envglot.Options` of a command's flags (project configuration included:
    it arrives as the flags' defaults); a bad value is a usage error."""
    policy = make_policy(level, select, ignore)
    try:
        return Options(unsupported=policy, **fields)
    except EnvglotError as exc:
        raise click.UsageError(str(exc)) from None


class Stderr:
    """Human-readable messages on stderr, mirrored into ``--log`` when given.

    By default a run ends with one tally of the diagnostics ``policy`` counts as loss, per
    kind and source path (:meth:`tally`); with ``verbose`` every diagnostic of every record
    is printed as ``[FILE:LINE: ]warning: KIND: $.path: message`` (counted as loss) or
    ``note: KIND: ...`` (the rest). ``quiet`` (``--unsupported ignore``) prints neither.
    Errors print as ``FILE[:LINE]: error: message (at $.path)``.
    """

    __slots__ = ("counts", "documents", "findings", "log", "policy", "quiet", "verbose")

    def __init__(
        self,
        *,
        verbose: bool = False,
        quiet: bool = False,
        log: LogWriter | None = None,
        policy: Policy | None = None,
        findings: Findings | None = None,
    ) -> None:
        self.findings = findings if findings is not None and findings.active else None
        """A machine ``--output-format``: diagnostics and errors go there instead of the text."""
        self.verbose = verbose and self.findings is None
        self.quiet = quiet or self.findings is not None
        self.log = log
        self.policy = policy if policy is not None else Policy()
        self.counts: dict[tuple[str, str], int] = {}
        self.documents = 0
        """Documents with at least one diagnostic counted as loss."""

    def diagnostics(self, name: str, line: int | None, diags: Iterable[Diagnostic]) -> bool:
        """Show or tally one record's diagnostics; True if any counts as loss under the policy."""
        prefix = _where(name, line) if line is not None else ""
        counted = False
        for d in diags:
            if self.log is not None:
                self.log.record(name, line, str(d.kind), d.path, d.message, d.dialect, d.lossy)
            selected = self.policy.selects(d)
            counted |= selected
            if self.findings is not None:
                self.findings.diagnostic(name, line, d, "warning" if selected else "note")
            if selected:
                key = (d.kind.value, _bounded(d.path))
                self.counts[key] = self.counts.get(key, 0) + 1
            if self.verbose and not (selected and self.quiet):
                label = "warning" if selected else "note"
                click.echo(f"{prefix}{label}: {d.kind}: {_bounded(d.path)}: {_bounded(d.message)}", err=True)
        self.documents += counted
        return counted

    def tally(self, documents: int) -> None:
        """The closing tally: documents with loss, then one ``COUNT  KIND  PATH`` line per kind and path."""
        if self.quiet or not self.counts:
            return
        rows = sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))
        width = max(len(k) for (k, _), _ in rows)
        hint = "" if self.verbose else "; -v shows each"
        click.echo(
            f"warning: {self.documents:,} of {documents:,} document{'' if documents == 1 else 's'} "
            f"lost or changed information{hint}:",
            err=True,
        )
        digits = len(f"{rows[0][1]:,}")
        for (kind, path), n in rows:
            click.echo(f"  {n:>{digits},}  {kind:<{width}}  {path}", err=True)

    def note(self, name: str, line: int | None, message: str) -> None:
        """A remark shown only with ``-v`` (not logged)."""
        if self.verbose:
            prefix = _where(name, line) if line is not None else ""
            click.echo(f"{prefix}note: {message}", err=True)

    def refused(self, name: str, line: int | None, exc: UnsupportedError, why: str) -> None:
        """A document refused for loss: each refused diagnostic, then one error line."""
        diags: list[Diagnostic] = [d for d in exc.diagnostics if isinstance(d, Diagnostic)]
        prefix = _where(name, line) if line is not None else ""
        for d in diags:
            if self.log is not None:
                self.log.record(name, line, str(d.kind), d.path, d.message, d.dialect, d.lossy)
            if self.findings is not None:
                self.findings.diagnostic(name, line, d, "error")
            else:
                click.echo(f"{prefix}warning: {d.kind}: {_bounded(d.path)}: {_bounded(d.message)}", err=True)
        exc.located(source=name, line=line)
        if self.log is not None:
            self.log.record(name, line, error_kind(exc), exc.path, exc.message, exc.dialect, True)
        if self.findings is not None:
            self.findings.error(name, line, exc)
            return
        n = len(diags)
        click.echo(f"{_where(name, line)}error: {why}: {n} lossy diagnostic{'' if n == 1 else 's'}", err=True)

    def error(self, name: str, line: int | None, exc: EnvglotError) -> None:
        exc.located(source=name, line=line)
        if self.log is not None:
            self.log.record(name, line, error_kind(exc), exc.path, exc.message, exc.dialect, False)
        if self.findings is not None:
            self.findings.error(name, line, exc)
            return
        message = _bounded(exc.message)
        if exc.path and exc.path not in exc.message:
            message += f" (at {_bounded(exc.path)})"
        click.echo(f"{_where(name, line)}error: {message}", err=True)


class RunStatus:
    """What happened in a run, and the exit code it earns (74 > 66 > 65 > 1 > 0).

    Attributes:
        records: documents read.
        bad: records that are not valid input (exit 65).
        failed: records refused or failing a check (exit 1): lossy with ``--unsupported
            raise``, validation failures.
        lossy: records whose conversion lost information (exit 1 with ``--fail-if-lossy``).
        missing: inputs that could not be read (exit 66).
    """

    __slots__ = ("bad", "failed", "lossy", "missing", "records")

    def __init__(self) -> None:
        self.records = self.bad = self.failed = self.lossy = self.missing = 0

    def exit_code(self, fail_if_lossy: bool = False) -> int:
        if self.missing:
            return exits.EX_NOINPUT
        if self.bad:
            return exits.EX_DATAERR
        if self.failed or (fail_if_lossy and self.lossy):
            return exits.EX_FAILED
        return exits.EX_OK


def outcome_ok(envelope: bytes, dialect: str, mappings: Mappings) -> bool:
    """The success flag of an envelope of ``dialect`` (read through its reader)."""
    from ..api import read

    return read(envelope, dialect, mappings=mappings).ok
