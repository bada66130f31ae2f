"""Batch migration of stored responses: files, trees, JSON Lines, gzip -> one target dialect.

Two layers (``docs/migration.md``):

* :class:`Migrator` — the pure per-record function ``bytes -> Outcome`` (converted,
  passed through, or rejected with its reason). One :class:`~envglot.Converter` inside,
  built once; picklable, so engines such as Dask or Spark can map it over their lines.
* :func:`migrate` — the file engine: walks inputs, streams JSON Lines in chunks to a
  process pool (results reassembled in order, bounded chunks in flight), writes every
  output through a temporary file that is fsynced and renamed into place, appends
  rejects (with their original bytes) durably before the output that omits them is
  committed, and returns a :class:`MigrationReport`.
"""

from __future__ import annotations

import base64
import contextlib
import filecmp
import fnmatch
import gzip
import io
import os
import secrets
import shutil
import signal
import sys
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import IO, Any, BinaryIO, Literal

import msgspec

from .api import Converter, _style
from .context import Context
from .detect import MCP, detect_bytes
from .diagnostics import Report
from .dialects import WRITABLE, get_dialect
from .errors import EnvglotError
from .mappings import Mappings, mappings_for

__all__ = [
    "DEFAULT_CHUNK_BYTES",
    "DEFAULT_INCLUDE",
    "EX_INTERRUPTED",
    "REJECTS_NAME",
    "TEMP_PREFIX",
    "TEST_DELAY_ENV",
    "UNDETECTED",
    "BackupExistsError",
    "ChangedFile",
    "FileFailure",
    "MigrationError",
    "MigrationReport",
    "Migrator",
    "Outcome",
    "Progress",
    "SourceCounts",
    "clean_stale_temps",
    "migrate",
    "reject_line",
]

TEMP_PREFIX = ".envglot-tmp-"
"""Every temporary file starts with this; inputs never match it; stale ones are removed."""
REJECTS_NAME = ".envglot-rejects.jsonl"
"""Default rejects file name (see :func:`migrate`); never read as an input."""
DEFAULT_INCLUDE: tuple[str, ...] = (
    "*.json",
    "*.jsonl",
    "*.ndjson",
    "*.json.gz",
    "*.jsonl.gz",
    "*.ndjson.gz",
)
DEFAULT_CHUNK_BYTES = 1024 * 1024
"""JSON Lines are cut into chunks of about this many bytes (whole lines) for the workers."""
TEST_DELAY_ENV = "ENVGLOT_MIGRATE_TEST_DELAY"
"""Test-only hook: seconds to sleep before each chunk (lets a test interrupt a run mid-way)."""
EX_INTERRUPTED = 130
"""Exit code of a run stopped by Ctrl-C or SIGTERM (the report says ``stopped: "interrupted"``)."""
UNDETECTED = "(undetected)"
"""The source-dialect row of records that could not be read far enough to name a dialect."""

Status = Literal["converted", "passed", "rejected"]
Mode = Literal["out", "in-place", "check", "stdout"]

_ENC = msgspec.json.Encoder()


# --------------------------------------------------------------------------- per record


class Outcome(msgspec.Struct, frozen=True, kw_only=True):
    """What became of one record.

    ``output`` is the bytes to write (``None`` for a reject); ``source`` the dialect the
    record was read as (``None`` if none could be named); for a reject, ``error`` says
    why, ``error_type`` names the exception and ``path`` the JSON path at fault.
    """

    status: Status
    output: bytes | None
    source: str | None
    lossy: bool = False
    unwrapped: bool = False
    kinds: tuple[str, ...] = ()
    """Diagnostic kinds of the conversion (one entry per diagnostic)."""
    error: str | None = None
    error_type: str | None = None
    path: str | None = None
    diagnostics: tuple[dict[str, Any], ...] = ()
    """For a lossy reject (``unsupported="raise"``): the diagnostics that made it one."""


class Migrator:
    """The pure per-record migration function: ``Migrator(to=...)(record_bytes) -> Outcome``.

    * A record already in ``to`` (by detection, even when ``from_`` is forced) is read as
      ``to`` to check it and passes through byte-identical.
    * Any other record goes through the converter (source auto-detected, or ``from_``);
      JSON Lines records never contain a newline in their output.
    * Anything that cannot be read or converted — including a lossy record when
      ``unsupported="raise"`` — is a reject; nothing raises (an unexpected exception is a
      reject with ``error_type="InternalError"``).

    ``unsupported="warn"`` converts lossy records and marks them ``lossy`` (the file engine
    counts them; nothing is logged per record). Picklable: it rebuilds its converter.
    """

    __slots__ = ("_conv", "_mappings", "_options", "_target", "from_", "to", "unsupported")

    def __init__(
        self,
        to: str = "response-v2",
        from_: str | None = None,
        *,
        unsupported: str = "warn",
        preserve: bool = False,
        mappings: Sequence[str | os.PathLike[str]] | None = None,
        context: dict[str, Any] | None = None,
    ) -> None:
        Report(unsupported)  # validates the level
        overlays = tuple(str(p) for p in mappings or ())
        self._options: dict[str, Any] = {
            "to": to,
            "from_": from_,
            "unsupported": unsupported,
            "preserve": preserve,
            "mappings": overlays,
            "context": context,
        }
        self._mappings: Mappings = mappings_for(overlays)
        level = "raise" if unsupported == "raise" else "ignore"
        self._conv = Converter(
            to, from_, preserve=preserve, unsupported=level, mappings=self._mappings, context=context
        )
        self.to: str = self._conv.to
        self.from_: str | None = self._conv.from_
        self.unsupported = unsupported
        self._target = get_dialect(self.to)

    def __reduce__(self) -> tuple[Any, ...]:
        opts = dict(self._options)
        to = opts.pop("to")
        return (_rebuild_migrator, (to, opts))

    def __repr__(self) -> str:
        return f"Migrator(to={self.to!r}, from_={self.from_!r}, unsupported={self.unsupported!r})"

    def __call__(self, record: bytes) -> Outcome:
        """Migrate one record (one JSON document, without its line terminator)."""
        return self.record(record)

    def record(self, record: bytes) -> Outcome:
        """Migrate one record; see the class docstring for the rules."""
        try:
            name: str | None = detect_bytes(record)
        except EnvglotError:
            name = None
        try:
            if name == self.to:
                self._check(record)
                return Outcome(status="passed", output=record, source=self.to)
            conv = self._conv.conversion(record)
        except EnvglotError as exc:
            diags = tuple(
                {"kind": str(d.kind), "path": d.path, "message": d.message} for d in getattr(exc, "diagnostics", ())
            )
            source = exc.dialect or self.from_ or (name if name != MCP else None)
            return Outcome(
                status="rejected",
                output=None,
                source=source,
                error=str(exc),
                error_type=type(exc).__name__,
                path=exc.path,
                diagnostics=diags,
            )
        except Exception as exc:  # a bug must not lose the record: it becomes a reject
            return Outcome(
                status="rejected",
                output=None,
                source=self.from_ or (name if name != MCP else None),
                error=f"internal error: {type(exc).__name__}: {exc}",
                error_type="InternalError",
            )
        out = conv.output
        if b"\n" in out or b"\r" in out:
            out = msgspec.json.format(out, indent=-1)
        return Outcome(
            status="converted",
            output=out,
            source=conv.source,
            lossy=conv.lossy,
            unwrapped=conv.unwrapped,
            kinds=tuple(str(d.kind) for d in conv.diagnostics),
        )

    def lines(self, records: Iterable[bytes]) -> Iterator[Outcome]:
        """Migrate records one by one (a partition-level helper for Dask/Spark)."""
        for rec in records:
            yield self.record(rec)

    def _check(self, record: bytes) -> None:
        m = self._mappings
        self._target.read(record, Context(m, Report("ignore"), m[self.to]))


def _rebuild_migrator(to: str, opts: dict[str, Any]) -> Migrator:
    return Migrator(to, **opts)


class _RejectRecord(msgspec.Struct, omit_defaults=True):
    source: str
    line: int | None
    error: str
    error_type: str | None
    path: str | None
    dialect: str | None
    original: str | None = None
    original_b64: str | None = None
    diagnostics: tuple[dict[str, Any], ...] = ()


def reject_line(source: str, line: int | None, original: bytes, outcome: Outcome) -> bytes:
    """One line of the rejects file (JSON + ``\\n``) for a rejected record.

    ``original`` is the record's text when its bytes are valid UTF-8 (so
    ``original.encode("utf-8")`` gives the exact bytes back), else ``original_b64``
    holds the bytes in base64.
    """
    try:
        text: str | None = original.decode("utf-8")
        b64 = None
    except UnicodeDecodeError:
        text = None
        b64 = base64.b64encode(original).decode("ascii")
    rec = _RejectRecord(
        source=source,
        line=line,
        error=outcome.error or "rejected",
        error_type=outcome.error_type,
        path=outcome.path,
        dialect=outcome.source,
        original=text,
        original_b64=b64,
        diagnostics=outcome.diagnostics,
    )
    return _ENC.encode(rec) + b"\n"


# --------------------------------------------------------------------------- chunks (worker side)


class SourceCounts(msgspec.Struct):
    """Records of one source dialect: how many, and what became of them."""

    records: int = 0
    converted: int = 0
    passed_through: int = 0
    rejected: int = 0
    lossy: int = 0
    unwrapped: int = 0

    def add(self, other: SourceCounts) -> None:
        """Add ``other`` into this one."""
        self.records += other.records
        self.converted += other.converted
        self.passed_through += other.passed_through
        self.rejected += other.rejected
        self.lossy += other.lossy
        self.unwrapped += other.unwrapped


class _Task(msgspec.Struct, frozen=True):
    source: str
    kind: Literal["lines", "doc"]
    data: bytes
    first_line: int
    style: str


class _ChunkResult(msgspec.Struct):
    out: bytes
    rejects: list[tuple[int | None, bytes]]
    counts: dict[str, SourceCounts]
    kinds: dict[str, int]
    converted: int
    passed: int
    rejected: int
    records: int
    bytes_in: int


_WORKER: Migrator | None = None


_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _worker_init(options: dict[str, Any]) -> None:
    """Process-pool initializer: ignore Ctrl-C (the parent handles it), build one Migrator."""
    global _WORKER
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a handler inherited from the parent must not run here
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)  # blocked by _start_workers
    _die_with_parent()
    _WORKER = _rebuild_migrator(options["to"], {k: v for k, v in options.items() if k != "to"})


def _noop() -> None:
    """A task that only makes the pool start its workers."""


def _start_workers(pool: ProcessPoolExecutor) -> None:
    """Start the workers now, with Ctrl-C and SIGTERM held back while they fork.

    A signal arriving during ``fork()`` would be raised inside an at-fork hook, where
    Python ignores exceptions: the interruption would be lost. Held back, it is delivered
    right after, to the main thread.
    """
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - not POSIX
        pool.submit(_noop).result()
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        pool.submit(_noop).result()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _die_with_parent() -> None:
    """On Linux, have the kernel end this worker if the parent process dies (e.g. SIGKILL)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: workers hold no files, nothing to clean
    except (OSError, AttributeError):
        return


def _run_task(task: _Task) -> _ChunkResult:
    """Worker entry point: migrate one chunk with this process's Migrator."""
    assert _WORKER is not None, "worker not initialised"
    return _migrate_chunk(_WORKER, task)


def _migrate_chunk(mig: Migrator, task: _Task) -> _ChunkResult:
    delay = os.environ.get(TEST_DELAY_ENV)
    if delay:
        time.sleep(float(delay))
    res = _ChunkResult(
        out=b"", rejects=[], counts={}, kinds={}, converted=0, passed=0, rejected=0, records=0, bytes_in=len(task.data)
    )
    if task.kind == "doc":
        body = task.data
        if not body.strip():
            res.out = body
            return res
        o = _tally(mig, body, res, task, None)
        if o.status == "converted":
            assert o.output is not None
            out = o.output if task.style == "compact" else _style(o.output, task.style, mig.to)
            res.out = out + (b"\n" if body.endswith(b"\n") else b"")
        elif o.status == "passed":
            res.out = body
        return res
    buf = bytearray()
    pieces = task.data.split(b"\n")
    last = len(pieces) - 1
    lineno = task.first_line
    for i, piece in enumerate(pieces):
        if i == last:
            if not piece:
                break
            term = b""
        else:
            term = b"\n"
        body = piece
        if term and body.endswith(b"\r"):
            body = body[:-1]
            term = b"\r\n"
        if not body.strip():
            buf += piece + (b"\n" if i != last else b"")
        else:
            o = _tally(mig, body, res, task, lineno)
            if o.status == "converted":
                assert o.output is not None
                buf += o.output + term
            elif o.status == "passed":
                buf += piece + (b"\n" if i != last else b"")
        lineno += 1
    res.out = bytes(buf)
    return res


def _tally(mig: Migrator, body: bytes, res: _ChunkResult, task: _Task, line: int | None) -> Outcome:
    o = mig.record(body)
    res.records += 1
    key = o.source or UNDETECTED
    c = res.counts.get(key)
    if c is None:
        c = res.counts[key] = SourceCounts()
    c.records += 1
    if o.status == "converted":
        res.converted += 1
        c.converted += 1
        c.lossy += o.lossy
        c.unwrapped += o.unwrapped
        for k in o.kinds:
            res.kinds[k] = res.kinds.get(k, 0) + 1
    elif o.status == "passed":
        res.passed += 1
        c.passed_through += 1
    else:
        res.rejected += 1
        c.rejected += 1
        c.lossy += bool(o.diagnostics)
        for d in o.diagnostics:
            res.kinds[d["kind"]] = res.kinds.get(d["kind"], 0) + 1
        res.rejects.append((line, reject_line(task.source, line, body, o)))
    return o


# --------------------------------------------------------------------------- files


class MigrationError(EnvglotError):
    """The migration cannot start (bad options, missing input); ``exit_code`` says which class."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class _Job(msgspec.Struct):
    src: Path | None
    """None for stdin."""
    name: str
    """How the input is named in reports and rejects (the path as walked, or ``<stdin>``)."""
    dst: Path | None
    """Output path (``--out`` and in-place); None for stdout or a dry run."""
    doc: bool
    gz: bool
    size: int


def _is_gz(name: str) -> bool:
    return name.endswith(".gz")


def _is_doc(name: str) -> bool:
    base = name[:-3] if _is_gz(name) else name
    return base.endswith(".json")


def _matches(patterns: Sequence[str], rel: str, base: str) -> bool:
    for p in patterns:
        if fnmatch.fnmatchcase(rel if "/" in p else base, p):
            return True
    return False


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stale_temp(name: str) -> bool:
    """True for a temporary file of an envglot run that is no longer alive."""
    if not name.startswith(TEMP_PREFIX):
        return False
    pid_s = name[len(TEMP_PREFIX) :].split("-", 1)[0]
    if not pid_s.isdigit():
        return False
    pid = int(pid_s)
    return pid != os.getpid() and not _pid_alive(pid)


def clean_stale_temps(directory: str | os.PathLike[str]) -> list[Path]:
    """Remove temporary files left in ``directory`` by envglot runs that died; returns them."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for e in entries:
        if e.is_file(follow_symlinks=False) and _stale_temp(e.name):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(e.path)
                removed.append(Path(e.path))
    return removed


def _walk(
    inputs: Sequence[str],
    out: Path | None,
    include: Sequence[str],
    exclude: Sequence[str],
    skip: set[Path],
    backup: str | None,
) -> tuple[list[_Job], list[FileFailure]]:
    """The input files in order, and the directories that could not be read (exit 66)."""
    jobs: list[_Job] = []
    unreadable: list[FileFailure] = []
    in_place = backup is not None
    out_res = out.resolve() if out is not None else None

    def onerror(exc: OSError) -> None:
        unreadable.append(FileFailure(file=str(exc.filename), error=_read_error(exc), exit_code=66))

    for arg in inputs:
        if arg == "-":
            dst = out / "stdin.jsonl" if out is not None else None
            jobs.append(_Job(src=None, name="<stdin>", dst=dst, doc=False, gz=False, size=-1))
            continue
        p = Path(arg)
        if p.is_dir():
            for root, dirs, files in os.walk(p, onerror=onerror):
                rootp = Path(root)
                relroot = rootp.relative_to(p)
                dirs.sort()
                kept = []
                for d in dirs:
                    rel = (relroot / d).as_posix()
                    dp = (rootp / d).resolve()
                    if out_res is not None and dp == out_res:
                        continue
                    if _matches(exclude, rel, d):
                        continue
                    kept.append(d)
                dirs[:] = kept
                for f in sorted(files):
                    if f.startswith(TEMP_PREFIX) or f == REJECTS_NAME or (backup and f.endswith(backup)):
                        continue
                    rel = (relroot / f).as_posix()
                    if not _matches(include, rel, f) or _matches(exclude, rel, f):
                        continue
                    fp = rootp / f
                    if fp.resolve() in skip or (fp.is_symlink() and not fp.is_file()):
                        continue
                    dst = fp.resolve() if in_place else (out / rel if out is not None else None)
                    jobs.append(_job(fp, dst))
        elif p.is_file():
            dst = p.resolve() if in_place else (out / p.name if out is not None else None)
            jobs.append(_job(p, dst))
        elif p.exists():
            raise MigrationError(f"{arg}: not a regular file or directory", 66)
        else:
            raise MigrationError(f"{arg}: no such file or directory", 66)
    return jobs, unreadable


def _job(p: Path, dst: Path | None) -> _Job:
    try:
        size = p.stat().st_size
    except OSError:
        size = 0
    return _Job(src=p, name=str(p), dst=dst, doc=_is_doc(p.name), gz=_is_gz(p.name), size=size)


def _fsync_dir(d: Path) -> None:
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class _Cleaner:
    """Removes stale temp files from each output directory, once per run, and counts them."""

    def __init__(self) -> None:
        self.seen: set[Path] = set()
        self.removed = 0

    def visit(self, directory: Path) -> None:
        if directory not in self.seen:
            self.seen.add(directory)
            self.removed += len(clean_stale_temps(directory))


class _AtomicOutput:
    """An output written to ``<dir>/.envglot-tmp-<pid>-<rand>-<name>``, then fsynced and renamed."""

    def __init__(self, dst: Path, gz: bool, cleaned: _Cleaner) -> None:
        self.dst = dst
        parent = dst.parent
        parent.mkdir(parents=True, exist_ok=True)
        cleaned.visit(parent)
        name = f"{TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}-{dst.name}"[:255]
        self.tmp = parent / name
        fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        self.raw: BinaryIO = os.fdopen(fd, "wb", buffering=1024 * 1024)
        self.fh: IO[bytes] | gzip.GzipFile = self.raw
        if gz:
            inner = dst.name[:-3]
            self.fh = gzip.GzipFile(filename=inner, mode="wb", fileobj=self.raw, compresslevel=6, mtime=0)
        self.closed = False

    def write(self, b: bytes) -> None:
        self.fh.write(b)

    def _close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.fh is not self.raw:
            self.fh.close()
        self.raw.flush()
        os.fsync(self.raw.fileno())
        self.raw.close()

    def commit(self, mode: int | None) -> None:
        """Flush, fsync and atomically rename over the destination."""
        self._close()
        if mode is not None:
            os.chmod(self.tmp, mode)
        os.replace(self.tmp, self.dst)
        _fsync_dir(self.dst.parent)

    def abort(self) -> None:
        """Close and delete the temporary file (the destination is untouched)."""
        if not self.closed:
            self.closed = True
            with contextlib.suppress(OSError):
                if self.fh is not self.raw:
                    self.fh.close()
            with contextlib.suppress(OSError):
                self.raw.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.tmp)


def _copy_atomic(src: Path, dst: Path, cleaned: _Cleaner) -> None:
    """Copy ``src`` to ``dst`` byte-for-byte through a temporary file (used for unchanged files)."""
    out = _AtomicOutput(dst, False, cleaned)
    try:
        with open(src, "rb") as fh:
            shutil.copyfileobj(fh, out.raw, 1024 * 1024)
        out.commit(src.stat().st_mode & 0o7777)
    except BaseException:
        out.abort()
        raise


class BackupExistsError(OSError):
    """The backup file of an in-place output already exists (it is never overwritten)."""


def _same_content(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b) or filecmp.cmp(a, b, shallow=False)
    except OSError:
        return False


def _make_backup(src: Path, suffix: str, cleaned: _Cleaner) -> Path:
    """Keep the original as ``src + suffix`` (hard link, else an fsynced copy); never clobbers.

    An existing backup identical to ``src`` (left by a run interrupted between backup and
    rename) is reused; any other existing backup is an error.
    """
    bak = src.with_name(src.name + suffix)
    exists = BackupExistsError(f"backup {bak} already exists; remove it or choose another --backup suffix")
    if os.path.lexists(bak):
        if _same_content(src, bak):
            return bak
        raise exists
    try:
        os.link(src, bak)
    except FileExistsError:
        raise exists from None
    except OSError:
        _copy_atomic(src, bak, cleaned)
    _fsync_dir(bak.parent)
    return bak


class _Rejects:
    """The rejects file: opened lazily in append mode, fsynced before any output is committed."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.fh: BinaryIO | None = None
        self.dirty = False
        self.count = 0

    def append(self, lines: list[bytes]) -> None:
        if self.path is None or not lines:
            return
        if self.fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.fh = open(self.path, "ab")
            if self.fh.tell() > 0:
                with open(self.path, "rb") as r:
                    r.seek(-1, io.SEEK_END)
                    if r.read(1) != b"\n":  # a torn last line of an interrupted run
                        self.fh.write(b"\n")
        self.fh.write(b"".join(lines))
        self.count += len(lines)
        self.dirty = True

    def sync(self) -> None:
        if self.fh is not None and self.dirty:
            self.fh.flush()
            os.fsync(self.fh.fileno())
            self.dirty = False

    def close(self) -> None:
        if self.fh is not None:
            self.sync()
            self.fh.close()
            self.fh = None


# --------------------------------------------------------------------------- report


class FileFailure(msgspec.Struct):
    """A file that could not be read or written (its output was not committed)."""

    file: str
    error: str
    exit_code: int


class ChangedFile(msgspec.Struct):
    """A file with converted or rejected records (written, or would be with ``--check``)."""

    file: str
    output: str | None
    converted: int
    passed_through: int
    rejected: int


class Progress(msgspec.Struct):
    """Progress of a running migration, handed to the ``progress`` callback."""

    records: int
    bytes_done: int
    """Input bytes (as stored on disk, compressed for .gz) of the work done so far."""
    bytes_total: int | None
    """Total input bytes on disk; ``None`` when reading stdin."""
    files_done: int
    files_total: int
    elapsed_s: float


class MigrationReport(msgspec.Struct, kw_only=True):
    """Everything a migration did; ``--report FILE`` writes it as JSON (``to_json``)."""

    target: str
    source: str | None
    """The forced source dialect (``-f``), or ``None`` for per-record detection."""
    mode: Mode
    jobs: int
    """Worker processes used (1: in this process, as for inputs smaller than one chunk)."""
    records: int = 0
    converted: int = 0
    passed_through: int = 0
    rejected: int = 0
    lossy: int = 0
    unwrapped: int = 0
    by_source: dict[str, SourceCounts] = msgspec.field(default_factory=dict)
    diagnostics: dict[str, int] = msgspec.field(default_factory=dict)
    files_total: int = 0
    files_written: int = 0
    files_changed: int = 0
    files_unchanged: int = 0
    changed: list[ChangedFile] = msgspec.field(default_factory=list)
    failed: list[FileFailure] = msgspec.field(default_factory=list)
    not_processed: list[str] = msgspec.field(default_factory=list)
    stopped: str | None = None
    """Why the run stopped early (``--max-errors``, an output error, an interruption)."""
    backups: int = 0
    bytes_in: int = 0
    """Record bytes read (uncompressed)."""
    bytes_out: int = 0
    """Record bytes written or that would be written (uncompressed)."""
    elapsed_s: float = 0.0
    records_per_s: float = 0.0
    mb_per_s: float = 0.0
    rejects_file: str | None = None
    temp_files_removed: int = 0
    exit_code: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The report as plain JSON-able data."""
        return msgspec.to_builtins(self)  # type: ignore[no-any-return]

    def to_json(self) -> bytes:
        """The report as pretty JSON (what ``--report`` writes)."""
        return msgspec.json.format(_ENC.encode(self), indent=2) + b"\n"


# --------------------------------------------------------------------------- engine


class _StopRunError(Exception):
    def __init__(self, reason: str, exit_code: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.exit_code = exit_code


class _ReadFailure(msgspec.Struct):
    job: _Job
    error: str


class _Start(msgspec.Struct):
    job: _Job
    index: int


class _End(msgspec.Struct):
    job: _Job


class _Chunk(msgspec.Struct):
    job: _Job
    task: _Task
    disk_pos: int
    """Input bytes read from the file (on disk) once this chunk was cut."""


class _Pending(msgspec.Struct):
    job: _Job
    disk_pos: int
    result: Any
    """A Future (pool) or a finished _ChunkResult (inline)."""


_Event = _Start | _Chunk | _End | _ReadFailure


def _read_error(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"cannot read: {exc.strerror}"
    return f"cannot read: {type(exc).__name__}: {exc}"


class _Counting:
    """A stream wrapper counting bytes read (stdin has no usable position)."""

    def __init__(self, fh: BinaryIO) -> None:
        self.fh = fh
        self.n = 0

    def read(self, size: int = -1) -> bytes:
        b = self.fh.read(size)
        self.n += len(b)
        return b

    def tell(self) -> int:
        return self.n


def _produce(jobs: list[_Job], chunk_bytes: int, style: str, stdin: BinaryIO | None) -> Iterator[_Event]:
    """Yield, in order, each file's start, its chunks, then its end (or a read failure)."""
    for index, job in enumerate(jobs):
        yield _Start(job=job, index=index)
        close: list[IO[bytes]] = []
        try:
            if job.src is None:
                assert stdin is not None
                raw: Any = _Counting(stdin)
                fh: Any = raw
            else:
                raw = open(job.src, "rb")
                close.append(raw)
                fh = raw
                if job.gz:
                    fh = gzip.GzipFile(fileobj=raw, mode="rb")
                    close.insert(0, fh)
            if job.doc:
                data = fh.read()
                yield _Chunk(job=job, task=_Task(job.name, "doc", data, 1, style), disk_pos=raw.tell())
            else:
                line = 1
                carry = b""
                while True:
                    block = fh.read(chunk_bytes)
                    if not block:
                        if carry:
                            yield _Chunk(
                                job=job, task=_Task(job.name, "lines", carry, line, style), disk_pos=raw.tell()
                            )
                        break
                    buf = carry + block if carry else block
                    cut = buf.rfind(b"\n")
                    if cut < 0:
                        carry = buf
                        continue
                    chunk = buf[: cut + 1]
                    carry = buf[cut + 1 :]
                    yield _Chunk(job=job, task=_Task(job.name, "lines", chunk, line, style), disk_pos=raw.tell())
                    line += chunk.count(b"\n")
        except (OSError, EOFError, zlib.error) as exc:
            yield _ReadFailure(job=job, error=_read_error(exc))
            continue
        finally:
            for f in close:
                with contextlib.suppress(OSError):
                    f.close()
        yield _End(job=job)


class _Sink:
    """Where one file's output goes: an atomic temp file, stdout, or nowhere (dry run)."""

    def __init__(self, job: _Job, mode: Mode, cleaned: _Cleaner, stdout: BinaryIO | None) -> None:
        self.job = job
        self.atomic: _AtomicOutput | None = None
        self.stream: BinaryIO | None = None
        if mode != "check":
            if job.dst is not None:
                self.atomic = _AtomicOutput(job.dst, job.gz, cleaned)
            else:
                assert stdout is not None, "only stdout mode has inputs without a destination"
                self.stream = stdout
        self.converted = 0
        self.passed = 0
        self.rejected = 0

    def write(self, b: bytes) -> None:
        if self.atomic is not None:
            self.atomic.write(b)
        elif self.stream is not None:
            self.stream.write(b)


def migrate(
    inputs: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    to: str = "response-v2",
    from_: str | None = None,
    out: str | os.PathLike[str] | None = None,
    in_place: bool = False,
    backup: str | None = ".bak",
    check: bool = False,
    rejects: str | os.PathLike[str] | None = None,
    report: str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] = (),
    unsupported: str = "warn",
    preserve: bool = False,
    mappings: Sequence[str | os.PathLike[str]] | None = None,
    context: dict[str, Any] | None = None,
    style: str = "compact",
    max_errors: int | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    progress: Callable[[Progress], None] | None = None,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
) -> MigrationReport:
    """Migrate files, directory trees and JSON Lines streams to dialect ``to``.

    Args:
        inputs: files and directories (walked recursively, in sorted order); ``"-"`` is
            JSON Lines on ``stdin``.
        to: target dialect (``response-v2`` by default).
        from_: force the source dialect; ``None`` detects it per record. Records already in
            ``to`` pass through either way.
        out: mirror the inputs under this directory (same names, same container, gzip kept).
        in_place: rewrite each changed input in place; ``backup`` (default ``".bak"``) keeps
            the original as ``<file><suffix>``; ``backup=None`` keeps none.
        check: convert in memory only and report what would change; write nothing (except
            ``rejects``/``report`` when given explicitly).
        rejects: the rejects file (JSON Lines, appended). Default: ``.envglot-rejects.jsonl``
            in ``out``, or in the first input's directory for ``in_place``/stdout; none for
            ``check`` unless given.
        report: write the :class:`MigrationReport` as JSON here (atomically).
        jobs: worker processes (default: the CPUs available); 1 runs in this process.
        include, exclude: glob patterns for files found in directories (a pattern with a
            ``/`` matches the path relative to the directory given, else the file name);
            ``exclude`` also prunes directories. Files named explicitly are always taken.
        unsupported: ``ignore``/``warn`` convert lossy records (counted as lossy);
            ``raise`` rejects them.
        preserve, mappings, context: as for :func:`envglot.convert`.
        style: layout of converted ``.json`` documents (``compact``, ``pretty``, ``native``);
            JSON Lines records are always compact.
        max_errors: stop once more than this many records were rejected.
        chunk_bytes: JSON Lines chunk size sent to a worker (whole lines).
        progress: called with a :class:`Progress` after each chunk.
        stdin, stdout: streams for ``"-"`` (default ``sys.stdin.buffer``/``sys.stdout.buffer``).

    Returns:
        The :class:`MigrationReport`; its ``exit_code`` follows ``docs/migration.md``.

    Raises:
        MigrationError: bad options or a missing input, before anything is written.
        EnvglotError: an unknown dialect or an invalid mapping overlay.
    """
    t0 = time.monotonic()
    names = [os.fspath(inputs)] if isinstance(inputs, str | os.PathLike) else [os.fspath(i) for i in inputs]
    mode = _mode(names, out, in_place, check)
    _check_options(to, style, chunk_bytes, max_errors, backup if mode == "in-place" else None)
    out_dir = Path(out) if out is not None else None
    options: dict[str, Any] = {
        "to": to,
        "from_": from_,
        "unsupported": unsupported,
        "preserve": preserve,
        "mappings": tuple(str(p) for p in mappings or ()),
        "context": context,
    }
    mig = _rebuild_migrator(to, {k: v for k, v in options.items() if k != "to"})  # validates options early
    if out_dir is not None:
        for n in names:
            if n != "-" and Path(n).is_dir() and Path(n).resolve() == out_dir.resolve():
                raise MigrationError(f"out directory {out_dir} is an input; use in_place=True instead", 2)
        if out_dir.exists() and not out_dir.is_dir():
            raise MigrationError(f"{out_dir} exists and is not a directory", 74)
    rejects_path = Path(rejects) if rejects is not None else _default_rejects(mode, names, out_dir)
    skip: set[Path] = set()
    for p in (rejects_path, Path(report) if report is not None else None):
        if p is not None:
            skip.add(p.resolve())
    job_list, unreadable = _walk(
        names,
        out_dir if mode == "out" else None,
        tuple(include) if include else DEFAULT_INCLUDE,
        tuple(exclude),
        skip,
        (backup or "") if mode == "in-place" else None,
    )
    if mode == "out":
        _check_destinations(job_list)
    if mode == "check":
        for j in job_list:
            j.dst = None
    n_jobs = max(1, jobs if jobs is not None else _cpus())
    rep = MigrationReport(
        target=mig.to,
        source=mig.from_,
        mode=mode,
        jobs=n_jobs,
        files_total=len(job_list),
        rejects_file=str(rejects_path) if rejects_path is not None else None,
        failed=unreadable,
    )
    total_disk = sum(j.size for j in job_list) if all(j.src is not None for j in job_list) else None
    use_pool = n_jobs > 1 and (total_disk is None or total_disk > chunk_bytes)
    rep.jobs = n_jobs if use_pool else 1
    engine = _Engine(
        rep=rep,
        jobs=job_list,
        mode=mode,
        backup=backup if mode == "in-place" else None,
        rejects=_Rejects(rejects_path),
        max_errors=max_errors,
        progress=progress,
        total_disk=total_disk,
        t0=t0,
        stdout=stdout if stdout is not None or mode != "stdout" else sys.stdout.buffer,
    )
    src_stream = stdin if stdin is not None else (sys.stdin.buffer if "-" in names else None)
    tasks = _produce(job_list, chunk_bytes, style, src_stream)
    try:
        if use_pool:
            with ProcessPoolExecutor(max_workers=n_jobs, initializer=_worker_init, initargs=(options,)) as pool:
                _start_workers(pool)
                try:
                    engine.run(tasks, lambda t: pool.submit(_run_task, t), limit=_in_flight(n_jobs, chunk_bytes))
                finally:
                    pool.shutdown(wait=True, cancel_futures=True)
        else:
            engine.run(tasks, lambda t: _migrate_chunk(mig, t), limit=1)
    finally:
        engine.rejects.close()
        rep.temp_files_removed = engine.cleaned.removed
        _finish(rep, t0)
        if report is not None:
            _write_report(Path(report), rep)
    return rep


def _mode(names: list[str], out: object, in_place: bool, check: bool) -> Mode:
    if not names:
        raise MigrationError("no input given", 2)
    if names.count("-") > 1:
        raise MigrationError("stdin ('-') can be given only once", 2)
    if out is not None and in_place:
        raise MigrationError("choose one of out and in_place", 2)
    if in_place and "-" in names:
        raise MigrationError("stdin ('-') cannot be migrated in place", 2)
    if check:
        return "check"
    if in_place:
        return "in-place"
    if out is not None:
        return "out"
    if names == ["-"]:
        return "stdout"
    raise MigrationError("say where the output goes: out=DIR, in_place=True, or check=True", 2)


def _check_options(to: str, style: str, chunk_bytes: int, max_errors: int | None, backup: str | None) -> None:
    if style not in ("compact", "pretty", "native"):
        raise MigrationError(f"style must be compact, pretty or native, not {style!r}", 2)
    if chunk_bytes < 1:
        raise MigrationError("chunk_bytes must be positive", 2)
    if max_errors is not None and max_errors < 0:
        raise MigrationError("max_errors must be >= 0", 2)
    if backup is not None and not backup:
        raise MigrationError("the backup suffix must not be empty (use backup=None for no backup)", 2)
    if get_dialect(to).NAME not in WRITABLE:
        raise MigrationError(f"{to} is a read-only source dialect; write one of {', '.join(WRITABLE)}", 2)


def _default_rejects(mode: Mode, names: list[str], out_dir: Path | None) -> Path | None:
    """None for a check; ``.envglot-rejects.jsonl`` in ``out``, else in the first input's directory."""
    if mode == "check":
        return None
    if out_dir is not None:
        return out_dir / REJECTS_NAME
    first = next((Path(n) for n in names if n != "-"), None)
    base = Path(".") if first is None else (first if first.is_dir() else first.parent)
    return base / REJECTS_NAME


def _check_destinations(jobs: list[_Job]) -> None:
    """No two inputs may share an output path, and no input may be its own output."""
    seen: dict[Path, str] = {}
    for j in jobs:
        if j.dst is None:
            continue
        key = j.dst.resolve()
        if key in seen:
            raise MigrationError(f"{j.name} and {seen[key]} would both be written to {j.dst}", 2)
        if j.src is not None and j.src.resolve() == key:
            raise MigrationError(f"{j.name} would be written over itself; use in_place=True", 2)
        seen[key] = j.name


MAX_IN_FLIGHT_BYTES = 16 * 1024 * 1024
"""Chunks in flight are bounded by count (jobs + 1) and by their total size (this, at least 2 chunks)."""


def _in_flight(jobs: int, chunk_bytes: int) -> int:
    return max(2, min(jobs + 1, MAX_IN_FLIGHT_BYTES // chunk_bytes))


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _finish(rep: MigrationReport, t0: float) -> None:
    rep.elapsed_s = round(time.monotonic() - t0, 3)
    if rep.elapsed_s > 0:
        rep.records_per_s = round(rep.records / rep.elapsed_s, 1)
        rep.mb_per_s = round(rep.bytes_in / 1e6 / rep.elapsed_s, 2)
    codes = [0]
    if rep.rejected or (rep.mode == "check" and rep.files_changed):
        codes.append(1)
    if rep.stopped is not None and rep.stopped.startswith("max-errors"):
        codes.append(65)
    codes.extend(f.exit_code for f in rep.failed)
    rep.exit_code = max(codes)  # 74 (output) > 66 (input) > 65 (max-errors) > 1 (rejects, changes)
    if rep.stopped == "interrupted":
        rep.exit_code = EX_INTERRUPTED


def _write_report(path: Path, rep: MigrationReport) -> None:
    out = _AtomicOutput(path, False, _Cleaner())
    try:
        out.write(rep.to_json())
        out.commit(None)
    except BaseException:
        out.abort()
        raise


class _Engine:
    """The consumer side: takes results in order, writes outputs, commits files, keeps counts."""

    def __init__(
        self,
        *,
        rep: MigrationReport,
        jobs: list[_Job],
        mode: Mode,
        backup: str | None,
        rejects: _Rejects,
        max_errors: int | None,
        progress: Callable[[Progress], None] | None,
        total_disk: int | None,
        t0: float,
        stdout: BinaryIO | None,
    ) -> None:
        self.rep = rep
        self.jobs = jobs
        self.mode = mode
        self.backup = backup
        self.rejects = rejects
        self.max_errors = max_errors
        self.progress = progress
        self.total_disk = total_disk
        self.t0 = t0
        self.stdout = stdout
        self.cleaned = _Cleaner()
        self.sink: _Sink | None = None
        self.index = 0
        self.done_disk = 0
        self.files_done = 0

    def run(self, events: Iterator[_Event], submit: Callable[[_Task], Any], limit: int) -> None:
        """Submit chunks as the producer yields them (at most ``limit`` in flight), consume in order."""
        pending: deque[Any] = deque()
        in_flight = 0

        def drain(block: bool) -> None:
            nonlocal in_flight
            while pending:
                head = pending[0]
                if isinstance(head, _Pending):
                    if isinstance(head.result, Future) and not head.result.done() and not block:
                        return
                    in_flight -= 1
                pending.popleft()
                self._consume(head)
                block = block and in_flight > limit

        try:
            for ev in events:
                if isinstance(ev, _Chunk):
                    pending.append(_Pending(job=ev.job, disk_pos=ev.disk_pos, result=submit(ev.task)))
                    in_flight += 1
                else:
                    pending.append(ev)
                drain(in_flight > limit)
            drain(True)
            while pending:
                drain(True)
        except _StopRunError as stop:
            self._abort_current()
            self.rep.stopped = stop.reason
            failed = {f.file for f in self.rep.failed}
            self.rep.not_processed = [j.name for j in self.jobs[self.index :] if j.name not in failed]
            _cancel(pending)
        except BaseException:
            self._abort_current()
            self.rep.stopped = "interrupted"
            self.rep.not_processed = [j.name for j in self.jobs[self.index :]]
            _cancel(pending)
            raise

    def _abort_current(self) -> None:
        if self.sink is not None and self.sink.atomic is not None:
            self.sink.atomic.abort()
        self.sink = None

    def _consume(self, ev: Any) -> None:
        if isinstance(ev, _Start):
            self.index = ev.index
            try:
                self.sink = _Sink(ev.job, self.mode, self.cleaned, self.stdout)
            except OSError as exc:
                self._output_error(ev.job, exc)
        elif isinstance(ev, _Pending):
            res: _ChunkResult = ev.result.result() if isinstance(ev.result, Future) else ev.result
            self._chunk(ev.job, res, ev.disk_pos)
        elif isinstance(ev, _End):
            self._end(ev.job)
        elif isinstance(ev, _ReadFailure):
            self._abort_current()
            self._fail(ev.job, ev.error, 66)
            self._file_done(ev.job)

    def _fail(self, job: _Job, error: str, code: int) -> None:
        self.rep.failed.append(FileFailure(file=job.name, error=error, exit_code=code))

    def _output_error(self, job: _Job, exc: OSError, what: str | None = None) -> None:
        self._abort_current()
        target = what or str(job.dst or "<stdout>")
        self._fail(job, f"cannot write {target}: {exc.strerror or exc}", 74)
        raise _StopRunError(f"output error: cannot write {target}", 74) from None

    def _chunk(self, job: _Job, res: _ChunkResult, disk_pos: int) -> None:
        sink = self.sink
        assert sink is not None and sink.job is job
        rep = self.rep
        try:
            sink.write(res.out)
        except OSError as exc:
            self._output_error(job, exc)
        try:
            self.rejects.append([r[1] for r in res.rejects])
        except OSError as exc:
            self._output_error(job, exc, f"rejects file {self.rejects.path}")
        rep.records += res.records
        rep.converted += res.converted
        rep.passed_through += res.passed
        rep.rejected += res.rejected
        rep.bytes_in += res.bytes_in
        rep.bytes_out += len(res.out)
        for k, c in res.counts.items():
            mine = rep.by_source.get(k)
            if mine is None:
                mine = rep.by_source[k] = SourceCounts()
            mine.add(c)
            rep.lossy += c.lossy
            rep.unwrapped += c.unwrapped
        for k, n in res.kinds.items():
            rep.diagnostics[k] = rep.diagnostics.get(k, 0) + n
        sink.converted += res.converted
        sink.passed += res.passed
        sink.rejected += res.rejected
        if self.progress is not None:
            self._progress(disk_pos)
        if self.max_errors is not None and rep.rejected > self.max_errors:
            before = rep.rejected - res.rejected
            line = res.rejects[self.max_errors - before][0]
            where = job.name if line is None else f"{job.name}:{line}"
            raise _StopRunError(
                f"max-errors: more than {self.max_errors} rejected records (limit passed at {where})", 65
            )

    def _progress(self, disk_pos: int) -> None:
        assert self.progress is not None
        self.progress(
            Progress(
                records=self.rep.records,
                bytes_done=self.done_disk + max(disk_pos, 0),
                bytes_total=self.total_disk,
                files_done=self.files_done,
                files_total=len(self.jobs),
                elapsed_s=time.monotonic() - self.t0,
            )
        )

    def _file_done(self, job: _Job) -> None:
        self.files_done += 1
        self.done_disk += max(job.size, 0)
        if self.progress is not None:
            self._progress(0)

    def _end(self, job: _Job) -> None:
        sink = self.sink
        assert sink is not None and sink.job is job
        changed = bool(sink.converted or sink.rejected)
        rep = self.rep
        try:
            self.rejects.sync()  # rejects are durable before any output that omits them
            if sink.atomic is not None:
                assert job.dst is not None
                if job.doc and sink.rejected:
                    sink.atomic.abort()  # a rejected document leaves no output file (and its input untouched)
                elif not changed:
                    sink.atomic.abort()
                    if self.mode == "out" and job.src is not None:
                        _copy_atomic(job.src, job.dst, self.cleaned)
                        rep.files_written += 1
                else:
                    if self.mode == "in-place" and self.backup is not None and job.src is not None:
                        try:
                            _make_backup(job.dst, self.backup, self.cleaned)
                        except BackupExistsError as exc:
                            self._abort_current()
                            self._fail(job, str(exc), 74)
                            self._file_done(job)
                            return
                        rep.backups += 1
                    sink.atomic.commit(job.src.stat().st_mode & 0o7777 if job.src is not None else None)
                    rep.files_written += 1
            elif sink.stream is not None:
                sink.stream.flush()
                rep.files_written += 1
        except OSError as exc:
            self._output_error(job, exc)
        if changed:
            rep.files_changed += 1
            rep.changed.append(
                ChangedFile(
                    file=job.name,
                    output=str(job.dst) if job.dst is not None else None,
                    converted=sink.converted,
                    passed_through=sink.passed,
                    rejected=sink.rejected,
                )
            )
        else:
            rep.files_unchanged += 1
        self.sink = None
        self._file_done(job)


def _cancel(pending: deque[Any]) -> None:
    for p in pending:
        if isinstance(p, _Pending) and isinstance(p.result, Future):
            p.result.cancel()
