"""The file engine: migrate() reads, dispatches, writes and reports.

Over 500 lines: the local engine's reader, dispatcher, ordered commit and report are one state machine.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from ..diagnostics import Diagnostic
from ..errors import EnvglotError
from ..mappings import Mappings, mappings_for
from ..options import UNSET, Options, Style, Unsupported, resolve
from ..registry import Registry
from .commit import CommitBatch
from .constants import DEFAULT_CHUNK_BYTES, DEFAULT_INCLUDE, REJECTS_NAME, Mode
from .executors import Inline, Pool, cpus
from .files import (
    AtomicOutput,
    BackupExistsError,
    Cleaner,
    InputChangedError,
    Job,
    MigrationError,
    SymlinkRefusedError,
    Unchanged,
    copy_to_temp,
    discard_temp,
    display,
    make_backup,
    read_error,
    refuse_links,
    walk_inputs,
    write_report,
)
from .inputs import (
    DEFAULT_MAX_GZIP_RATIO,
    DEFAULT_MAX_RECORD_BYTES,
    InputLimits,
    RecordReader,
    open_fd,
    open_gzip,
    open_input,
)
from .lock import OutLock
from .records import RecordError, rebuild_migrator
from .rejects import RejectsFile
from .report import FileFailure, MigrationReport, Progress, StopRunError
from .tally import Tally
from .workers import ChunkResult, Task, TempTarget

# --------------------------------------------------------------------------- engine


class _ReadFailure(msgspec.Struct):
    job: Job
    error: str


class _Start(msgspec.Struct):
    job: Job
    index: int


class _End(msgspec.Struct):
    job: Job


class _Chunk(msgspec.Struct):
    job: Job
    task: Task
    disk_pos: int
    """Input bytes read from the file (on disk) once this chunk was cut."""


class _Pending(msgspec.Struct):
    job: Job
    task: Task
    disk_pos: int
    result: Future[ChunkResult]
    """From the executor (inline: already done)."""


_Event = _Start | _Chunk | _End | _ReadFailure


SMALL_READ = 256 * 1024
"""A plain file at most this large (as walked) is read whole, with a handful of system calls."""


class _SmallFile:
    """A small input read at once (:func:`.inputs.open_fd`, one ``read``, ``close``): the stream interface
    ``_produce`` uses, without a buffered file object's extra calls (``fstat``, ``ioctl``, ``lseek``)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    @classmethod
    def read_whole(cls, job: Job) -> _SmallFile | None:
        """The file as it is now, if it is no larger than walked (one ``read`` when its size is
        unchanged; a short read, or a file that shrank, is read on to its end); None if it grew
        (then it is read as a stream)."""
        assert job.src is not None
        size = job.size
        fd = open_fd(job.src)
        try:
            data = os.read(fd, size + 1)
            if len(data) > size:
                return None
            if len(data) < size:  # shrank, or a file system that reads short (FUSE, network)
                parts = [data]
                while block := os.read(fd, 1024 * 1024):
                    parts.append(block)
                data = b"".join(parts)
        finally:
            os.close(fd)
        return cls(data)

    def read(self, size: int = -1) -> bytes:
        start = self.pos
        self.pos = len(self.data) if size < 0 else min(len(self.data), start + size)
        return self.data[start : self.pos]

    def tell(self) -> int:
        return self.pos

    def close(self) -> None:
        self.data = b""


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


def _produce(
    jobs: list[Job], chunk_bytes: int, style: str, stdin: BinaryIO | None, limits: InputLimits
) -> Iterator[_Event]:
    """Yield, in order, each file's start, its chunks, then its end (or a read failure)."""
    for index, job in enumerate(jobs):
        yield _Start(job=job, index=index)
        close: list[Any] = []
        try:
            if job.src is None:
                assert stdin is not None
                raw: Any = _Counting(stdin)
                fh: Any = raw
            elif job.regular and not job.gz and job.size <= SMALL_READ and (small := _SmallFile.read_whole(job)):
                raw = fh = small
            else:
                raw = open_input(job.src)
                close.append(raw)
                fh = raw
                if job.gz:
                    fh = open_gzip(raw, limits)
                    close.insert(0, fh)
            # a small file is read in one call without a chunk-sized buffer (an mmap per file)
            size = chunk_bytes if job.gz or job.size < 0 else max(1, min(chunk_bytes, job.size + 1))
            reader = RecordReader(
                fh, source=job.name, style=style, doc=job.doc, read_size=size, max_record=limits.max_record_bytes
            )
            for task in reader:
                yield _Chunk(job=job, task=task, disk_pos=raw.tell())
        except (OSError, EOFError, zlib.error) as exc:
            yield _ReadFailure(job=job, error=read_error(exc))
            continue
        finally:
            for f in close:
                with contextlib.suppress(OSError):
                    f.close()
        yield _End(job=job)


class _Sink:
    """Where one file's output goes: an atomic temp file, stdout, or nowhere (dry run).

    An output file is only created at the first chunk that changes something: until then
    the output is the input's own bytes, so nothing is written (an unchanged file is then
    copied, or left in place). At that first change the unchanged part is copied from the
    input, checked against a digest of what was read the first time.
    """

    def __init__(
        self,
        job: Job,
        mode: Mode,
        cleaned: Cleaner,
        stdout: BinaryIO | None,
        limits: InputLimits,
        keep: bool = False,
    ) -> None:
        self.job = job
        self.cleaned = cleaned
        self.limits = limits
        self.atomic: AtomicOutput | None = None
        self.stream: BinaryIO | None = None
        self.kept: bytearray | None = bytearray() if keep and mode == "check" else None
        """A dry run's output, kept for ``on_output`` (``--check --diff``)."""
        self.to_file = mode != "check" and job.dst is not None
        """The output is a file (``--out`` or in place), created at the first change."""
        if mode != "check" and job.dst is None:
            assert stdout is not None, "only stdout mode has inputs without a destination"
            self.stream = stdout
        self.unchanged = Unchanged()
        """The output so far while nothing changed: the input's own bytes, not written."""
        self.tally = Tally()
        """The file's counts so far."""
        self.omitted = 0
        """Records rejected without their bytes (too long): the only copy is the input."""

    def write(self, b: bytes, changed: bool, tmp: str | None = None) -> None:
        """Write a chunk's output (``changed``: it differs from the chunk's input bytes); ``tmp``:
        a worker wrote it (changed) to this temporary, taken over or appended and removed."""
        if tmp is not None:
            assert self.to_file and self.job.dst is not None, "a worker writes a file's output only"
            if self.atomic is None:
                if not self.unchanged.size:  # the worker's temporary starts the output: no copy
                    perm = self.job.perm if self.job.perm >= 0 else None
                    self.atomic = AtomicOutput.adopt(tmp, self.job.dst, perm)
                    return
                self.atomic = self._start()
            self.atomic.append_file(tmp)
            return
        if self.stream is not None:
            self.stream.write(b)
            return
        if self.kept is not None:
            self.kept += b
        if self.atomic is None:
            if not self.to_file:
                return
            if not changed:
                self.unchanged.add(b)
                return
            self.atomic = self._start()
        self.atomic.write(b)

    def _start(self) -> AtomicOutput:
        """The output file, holding the unchanged part read again from the input.

        Raises:
            InputChangedError: the input cannot be read again, or its bytes differ.
        """
        job = self.job
        assert job.dst is not None and job.src is not None
        src = job.src
        out = AtomicOutput(job.dst, job.gz, self.cleaned, -1 if job.gz else job.size)

        def reopen() -> list[Any]:
            raw = open_input(src)
            return [open_gzip(raw, self.limits), raw] if job.gz else [raw]

        try:
            self.unchanged.copy(reopen, out.write)
        except BaseException:
            out.abort()
            raise
        return out


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
    options: Options | None = None,
    unsupported: Unsupported = UNSET,
    preserve: bool = UNSET,
    mappings: Sequence[str | os.PathLike[str]] | None = UNSET,
    context: dict[str, Any] | None = UNSET,
    strict: bool = UNSET,
    max_depth: int = UNSET,
    style: Style = UNSET,
    max_errors: int | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    progress: Callable[[Progress], None] | None = None,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    engine: str = "local",
    client: Any = None,
    scheduler: str | None = None,
    workers: int | None = None,
    storage_options: dict[str, Any] | None = None,
    notice: Callable[[str], None] | None = None,
    on_diagnostic: Callable[[str, int | None, Diagnostic | RecordError], None] | None = None,
    on_output: Callable[[str, str, bytes], None] | None = None,
    skip: Sequence[str | os.PathLike[str]] = (),
    follow_symlinks: bool = False,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    max_gzip_ratio: int = DEFAULT_MAX_GZIP_RATIO,
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
        rejects: the rejects file (JSON Lines; a file migrated again replaces its earlier
            lines). Default: ``.envglot-rejects.jsonl``
            in ``out``, or in the first input's directory for ``in_place``/stdout; none for
            ``check`` unless given.
        report: write the :class:`MigrationReport` as JSON here (atomically).
        jobs: worker processes (default: the CPUs available); 1 runs in this process.
        include, exclude: glob patterns for files found in directories (a pattern with a
            ``/`` matches the path relative to the directory given, else the file name);
            ``exclude`` also prunes directories. Files named explicitly are always taken.
        options: the conversion :class:`~envglot.Options`; each is also a keyword of its own
            (a keyword overrides that field of ``options``), as for :func:`envglot.convert`.
            ``mappings`` must be overlay paths (worker processes load them again).
        unsupported: ``ignore``/``warn`` convert lossy records (counted as lossy);
            ``raise`` rejects them; an :class:`envglot.Policy` also chooses which kinds count.
        preserve, mappings, context, strict, max_depth: as for :func:`envglot.convert` (a record
            refused by ``strict`` detection or deeper than ``max_depth`` is rejected).
        style: layout of converted ``.json`` documents (``compact``, ``pretty``, ``native``);
            JSON Lines records are always compact.
        max_errors: stop once more than this many records were rejected.
        chunk_bytes: JSON Lines chunk size sent to a worker (whole lines).
        progress: called with a :class:`Progress` after each chunk.
        stdin, stdout: streams for ``"-"`` (default ``sys.stdin.buffer``/``sys.stdout.buffer``).
        engine: ``"local"`` (this machine's process pool) or ``"dask"`` (``out=`` or
            ``check`` only; inputs and ``out`` may be fsspec URLs): see "Scale out" in
            ``docs/migration.md``. The Dask options: ``client`` (a ``distributed.Client``
            to use), ``scheduler`` (a scheduler address, or ``"synchronous"`` to run in
            this process), ``workers`` (worker processes of the ``LocalCluster`` started
            when neither is given), ``storage_options`` (for fsspec), ``notice`` (called
            with the dashboard link of a cluster it starts).
        on_diagnostic: called in the main process, in input order, with ``(file, line,
            item)`` for every diagnostic of every record (a :class:`~envglot.Diagnostic`;
            ``line`` is ``None`` for a ``.json`` document) and for every rejected record
            (a :class:`RecordError`, after its diagnostics). The workers collect them only
            when this is given. Local engine only.
        on_output: ``check`` only: called in input order with ``(file, its path, the bytes
            that would be written)`` for every input file that would change and be written
            (a rejected ``.json`` document is not); the output is held in memory per file.
            Local engine only.
        skip: files never taken as inputs from a directory (the CLI's ``--log`` file), like
            the rejects and report files.
        follow_symlinks: follow a link found in a directory to a regular file anywhere
            (default: only to one inside that directory's tree; others are skipped, exit 66).
        max_record_bytes: a record (line or ``.json`` document) longer than this is rejected
            with its length, without being held in memory or copied to the rejects file.
        max_gzip_ratio: a ``.gz`` input that expands more than this many times the
            compressed bytes read (past 16 MiB) is not read further (that file fails, exit 66).

    Returns:
        The :class:`MigrationReport`; its ``exit_code`` follows ``docs/migration.md``.

    Raises:
        MigrationError: bad options or a missing input, before anything is written.
        EnvglotError: an unknown dialect or an invalid mapping overlay.
    """
    t0 = time.monotonic()
    names = [os.fspath(inputs)] if isinstance(inputs, str | os.PathLike) else [os.fspath(i) for i in inputs]
    mode = _mode(names, out, in_place, check)
    try:
        opts = resolve(
            options,
            unsupported=unsupported,
            preserve=preserve,
            mappings=mappings,
            context=context,
            strict=strict,
            max_depth=max_depth,
            style=style,
        )
    except EnvglotError as exc:
        raise MigrationError(exc.message, 2) from None
    style = opts.style
    # first: the dialects declared among them are known by name (docs/declared-dialects.md)
    tables = opts.mappings if isinstance(opts.mappings, Mappings) else mappings_for(opts.mappings)
    _check_options(to, chunk_bytes, max_errors, backup if mode == "in-place" else None, tables.registry)
    limits = InputLimits(max_record_bytes, max_gzip_ratio, follow_symlinks)
    if (problem := limits.problem()) is not None:
        raise MigrationError(problem, 2)
    out_dir = Path(out) if out is not None else None
    options_: dict[str, Any] = {"to": to, "from_": from_, "options": opts}
    if on_diagnostic is not None:
        if engine != "local":
            raise MigrationError("on_diagnostic (--log, -v) needs the local engine", 2)
        options_["details"] = True
    if on_output is not None and (engine != "local" or mode != "check"):
        raise MigrationError("on_output (--diff) needs check=True and the local engine", 2)
    mig = rebuild_migrator(to, {k: v for k, v in options_.items() if k != "to"})  # validates options early
    if engine != "local":
        return _other_engine(
            engine,
            names,
            mode,
            options_,
            out=out,
            rejects=rejects,
            report=report,
            include=include,
            exclude=exclude,
            style=style,
            max_errors=max_errors,
            chunk_bytes=chunk_bytes,
            progress=progress,
            client=client,
            scheduler=scheduler,
            workers=workers,
            storage_options=storage_options,
            notice=notice,
            t0=t0,
            limits=limits,
        )
    if out_dir is not None:
        for n in names:
            if n != "-" and Path(n).is_dir() and Path(n).resolve() == out_dir.resolve():
                raise MigrationError(f"out directory {out_dir} is an input; use in_place=True instead", 2)
        if out_dir.exists() and not out_dir.is_dir():
            raise MigrationError(f"{out_dir} exists and is not a directory", 74)
    rejects_path = Path(rejects) if rejects is not None else _default_rejects(mode, names, out_dir)
    if rejects_path is not None:
        _check_rejects_path(rejects_path, out_dir if mode == "out" else None)
    skipped: set[Path] = set()
    for p in (rejects_path, Path(report) if report is not None else None, *(Path(x) for x in skip)):
        if p is not None:
            skipped.add(p.resolve())
    job_list, unreadable = walk_inputs(
        names,
        out_dir if mode == "out" else None,
        tuple(include) if include else DEFAULT_INCLUDE,
        tuple(exclude),
        skipped,
        (backup or "") if mode == "in-place" else None,
        follow_symlinks,
    )
    if mode == "out":
        _check_destinations(job_list)
    if mode == "check":
        for j in job_list:
            j.dst = None
    with OutLock(out_dir) if mode == "out" and out_dir is not None else contextlib.nullcontext():
        n_jobs = max(1, jobs if jobs is not None else cpus())
        rep = MigrationReport(
            target=mig.to,
            source=mig.from_,
            mode=mode,
            jobs=n_jobs,
            files_total=len(job_list),
            rejects_file=display(rejects_path) if rejects_path is not None else None,
            failed=unreadable,
        )
        total_disk = sum(j.size for j in job_list) if all(j.src is not None for j in job_list) else None
        use_pool = n_jobs > 1 and (total_disk is None or total_disk > chunk_bytes)
        rep.jobs = n_jobs if use_pool else 1
        local = _Engine(
            rep=rep,
            jobs=job_list,
            mode=mode,
            backup=backup if mode == "in-place" else None,
            rejects=RejectsFile(rejects_path),
            max_errors=max_errors,
            progress=progress,
            total_disk=total_disk,
            t0=t0,
            stdout=stdout if stdout is not None or mode != "stdout" else sys.stdout.buffer,
            root=out_dir if mode == "out" else None,
            limits=limits,
            on_diagnostic=on_diagnostic,
            on_output=on_output,
        )
        src_stream = stdin if stdin is not None else (sys.stdin.buffer if "-" in names else None)
        tasks = _produce(job_list, chunk_bytes, style, src_stream, limits)
        try:
            ex = Pool(n_jobs, options_, chunk_bytes) if use_pool else Inline(mig)
            try:
                local.run(tasks, ex)
            finally:
                ex.close()
                if use_pool and (rep.stopped is not None or sys.exc_info()[0] is not None):
                    local.cleaned.sweep()
        finally:
            local.rejects.close()
            rep.temp_files_removed = local.cleaned.removed + local.rejects.removed
            rep.finish(t0)
            if report is not None:
                write_report(Path(report), rep, out_dir if mode == "out" else None)
    return rep


def _other_engine(
    engine: str,
    names: list[str],
    mode: Mode,
    options: dict[str, Any],
    *,
    out: str | os.PathLike[str] | None,
    rejects: str | os.PathLike[str] | None,
    report: str | os.PathLike[str] | None,
    client: Any,
    scheduler: str | None,
    **rest: Any,
) -> MigrationReport:
    """Hand the run to the Dask engine (``rest``: the options it shares with the local one)."""
    if engine != "dask":
        raise MigrationError(f"engine must be local or dask, not {engine!r}", 2)
    try:
        import dask  # noqa: F401
        import fsspec  # noqa: F401

        if client is None and scheduler != "synchronous":
            import distributed  # noqa: F401
        from .dask_engine import migrate_dask
    except ImportError as exc:  # pragma: no cover - the extra is not installed
        raise MigrationError(f"engine='dask' needs the dask extra (pip install 'envglot[dask]'): {exc}", 2) from None
    return migrate_dask(
        names,
        mode=mode,
        options=options,
        out=None if out is None else os.fspath(out),
        rejects=None if rejects is None else os.fspath(rejects),
        report=None if report is None else os.fspath(report),
        client=client,
        scheduler=scheduler,
        **rest,
    )


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


def _check_options(to: str, chunk_bytes: int, max_errors: int | None, backup: str | None, registry: Registry) -> None:
    if chunk_bytes < 1:
        raise MigrationError("chunk_bytes must be positive", 2)
    if max_errors is not None and max_errors < 0:
        raise MigrationError("max_errors must be >= 0", 2)
    if backup is not None and not backup:
        raise MigrationError("the backup suffix must not be empty (use backup=None for no backup)", 2)
    if not registry.get(to).shape.writable:
        writable = ", ".join(registry.writable_names())
        raise MigrationError(f"{to} is a read-only source dialect; write one of {writable}", 2)


def _default_rejects(mode: Mode, names: list[str], out_dir: Path | None) -> Path | None:
    """None for a check; ``.envglot-rejects.jsonl`` in ``out``, else in the first input's directory."""
    if mode == "check":
        return None
    if out_dir is not None:
        return out_dir / REJECTS_NAME
    first = next((Path(n) for n in names if n != "-"), None)
    base = Path(".") if first is None else (first if first.is_dir() else first.parent)
    return base / REJECTS_NAME


def _check_rejects_path(path: Path, out_dir: Path | None) -> None:
    """Refuse (before anything is written) a rejects file that is a symlink or under a linked directory of ``out``."""
    if path.is_symlink():
        raise MigrationError(f"refusing to write the rejects file through the symbolic link {display(path)}", 74)
    if out_dir is not None:
        try:
            refuse_links(out_dir, path)
        except SymlinkRefusedError as exc:
            raise MigrationError(f"cannot write the rejects file {display(path)}: {exc.strerror}", 74) from None


def _check_destinations(jobs: list[Job]) -> None:
    """No two inputs may share an output path, and no input may be its own output.

    Directories are resolved and listed once each (not a syscall per file and path
    component); only an output name already there is compared with its input.
    """
    seen: dict[str, str] = {}
    parents: dict[str, tuple[str, frozenset[str]]] = {}
    for j in jobs:
        if j.dst is None:
            continue
        head, name = os.path.split(os.fspath(j.dst))
        found = parents.get(head)
        if found is None:  # once per directory: where it really is, and what it holds already
            real = os.path.realpath(head or ".")
            try:
                found = (real, frozenset(os.listdir(real)))
            except OSError:  # not there yet: nothing in it can be an input
                found = (real, frozenset())
            parents[head] = found
        real, names = found
        key = os.path.join(real, name)
        if key in seen:
            raise MigrationError(f"{j.name} and {seen[key]} would both be written to {j.dst}", 2)
        if j.src is not None and name in names and _same_file(j.src, Path(key)):
            raise MigrationError(f"{j.name} would be written over itself; use in_place=True", 2)
        seen[key] = j.name


def _same_file(src: Path, dst: Path) -> bool:
    try:
        return os.path.samefile(src, dst)
    except OSError:  # no output yet: it cannot be the input
        return False


class _Engine:
    """The consumer side: takes results in order, writes outputs, commits files, keeps counts."""

    def __init__(
        self,
        *,
        rep: MigrationReport,
        jobs: list[Job],
        mode: Mode,
        backup: str | None,
        rejects: RejectsFile,
        max_errors: int | None,
        progress: Callable[[Progress], None] | None,
        total_disk: int | None,
        t0: float,
        stdout: BinaryIO | None,
        root: Path | None,
        limits: InputLimits,
        on_diagnostic: Callable[[str, int | None, Diagnostic | RecordError], None] | None = None,
        on_output: Callable[[str, str, bytes], None] | None = None,
    ) -> None:
        self.rep = rep
        self.limits = limits
        self.on_diagnostic = on_diagnostic
        self.on_output = on_output
        self.jobs = jobs
        self.mode = mode
        self.backup = backup
        self.rejects = rejects
        self.max_errors = max_errors
        self.progress = progress
        self.total_disk = total_disk
        self.t0 = t0
        self.stdout = stdout
        self.cleaned = Cleaner(root)
        self.sink: _Sink | None = None
        self.dropped: Job | None = None
        """A file that failed part-way: the rest of its chunks are not used."""
        self.batch = CommitBatch()
        self.index = 0
        self.done_disk = 0
        self.files_done = 0

    def run(self, events: Iterator[_Event], ex: Inline | Pool) -> None:
        """Hand chunks to ``ex`` as the producer yields them (at most ``ex.in_flight`` at once), consume
        in order; an executor that ``writes_temps`` writes a file's changed output itself (:meth:`_temp_target`)."""
        limit = ex.in_flight
        pending: deque[Any] = deque()
        in_flight = 0
        target: TempTarget | None = None

        def drain(block: bool) -> None:
            nonlocal in_flight
            while pending:
                head = pending[0]
                if isinstance(head, _Pending):
                    if not head.result.done() and not block:
                        return
                self._consume(head)
                pending.popleft()  # only now: interrupted while consumed, its temporary is removed with the rest
                if isinstance(head, _Pending):
                    in_flight -= 1
                block = block and in_flight > limit

        try:
            for ev in events:
                if isinstance(ev, _Chunk):
                    result = ex.chunk(ev.task, target)
                    pending.append(_Pending(job=ev.job, task=ev.task, disk_pos=ev.disk_pos, result=result))
                    in_flight += 1
                else:
                    if isinstance(ev, _Start):
                        target = self._temp_target(ev.job) if ex.writes_temps else None
                    pending.append(ev)
                drain(in_flight > limit)
            drain(True)
            while pending:
                drain(True)
            self._flush()
        except StopRunError as stop:
            self._abort_current()
            _cancel(pending)
            self.rep.stopped = stop.reason
            try:  # the files that ended before the stop are complete: commit them
                self._flush()
            except StopRunError as late:
                self.rep.stopped = late.reason
            failed = {f.file for f in self.rep.failed}
            self.rep.not_processed = [j.name for j in self.jobs[self.index :] if j.name not in failed]
        except BaseException as exc:
            self._abort_current()
            _cancel(pending)
            self.rep.stopped = "stdout closed" if isinstance(exc, BrokenPipeError) else "interrupted"
            self.rep.not_processed = [j.name for j in self.jobs[self.index :]]
            try:  # the files that ended before the interruption are complete: commit them
                self._flush()
            except BaseException:  # a second Ctrl-C, or the flush failed: drop the rest
                self.batch.abort()
            raise

    def _temp_target(self, job: Job) -> TempTarget | None:
        """Where the workers write ``job``'s changed chunks: beside its output file, its directory
        prepared (links refused, stale temporaries removed) here first; ``None``: they send the
        bytes back (a gzip output, no output file, or a directory that cannot be prepared, whose
        error is then reported when the output is started)."""
        if self.mode not in ("out", "in-place") or job.dst is None or job.src is None or job.gz:
            return None
        try:
            self.cleaned.visit(os.path.dirname(job.dst) or ".")
        except OSError:
            return None
        return TempTarget(dst=job.dst, perm=job.perm if job.perm >= 0 else None, owner=os.getpid())

    def _stage(self, out: AtomicOutput, mode: int | None, job: Job, backup: Path | None = None) -> None:
        """Queue a closed temporary for the next commit batch (its rejects are durable already)."""
        self.batch.add(out, mode, job, job.size, backup)
        if self.batch.full():
            self._flush()

    def _flush(self) -> None:
        """Commit the batch: one sync, the renames, one fsync per directory."""

        def done(_job: Job) -> None:
            self.rep.files_written += 1

        try:
            self.batch.commit(done)
        except OSError as exc:
            jobs = self.batch.abort()
            for j in jobs:
                self._fail(j, f"cannot write {display(j.dst or '')}: {exc.strerror or exc}", 74)
            raise StopRunError(f"output error: cannot commit {len(jobs)} file(s)") from None

    def _abort_current(self) -> None:
        if self.sink is not None and self.sink.atomic is not None:
            self.sink.atomic.abort()
        self.sink = None
        self.rejects.discard()

    def _consume(self, ev: Any) -> None:
        if isinstance(ev, _Start):
            self.index = ev.index
            try:
                self.sink = _Sink(ev.job, self.mode, self.cleaned, self.stdout, self.limits, self.on_output is not None)
            except OSError as exc:
                self._output_error(ev.job, exc)
        elif isinstance(ev, _Pending):
            res: ChunkResult = ev.result.result()
            if self.dropped is ev.job:
                if res.tmp is not None:
                    discard_temp(res.tmp)
                return
            try:
                self._chunk(ev.job, res, ev.task, ev.disk_pos)
            except BaseException:  # the file fails, or the run stops: its temporary is not used
                if res.tmp is not None:
                    discard_temp(res.tmp)
                raise
        elif isinstance(ev, _End):
            if self.dropped is not ev.job:
                self._end(ev.job)
        elif isinstance(ev, _ReadFailure):
            self._abort_current()
            self._fail(ev.job, ev.error, 66)
            self._file_done(ev.job)

    def _fail(self, job: Job, error: str, code: int) -> None:
        self.rep.failed.append(FileFailure(file=job.name, error=error, exit_code=code))

    def _output_error(self, job: Job, exc: OSError, what: str | None = None) -> None:
        self._abort_current()
        if isinstance(exc, BrokenPipeError) and what is None and job.dst is None:
            raise exc  # stdout's reader went away (`| head`): the caller ends quietly (the CLI: exit 141)
        target = what or (display(job.dst) if job.dst is not None else "<stdout>")
        self._fail(job, f"cannot write {target}: {exc.strerror or exc}", 74)
        raise StopRunError(f"output error: cannot write {target}") from None

    def _chunk(self, job: Job, res: ChunkResult, task: Task, disk_pos: int) -> None:
        sink = self.sink
        assert sink is not None and sink.job is job
        rep = self.rep
        try:
            self.rejects.add([r[1] for r in res.rejects])
        except OSError as exc:
            self._output_error(job, exc, "a temporary file for its rejects")
        if sink.stream is not None and res.rejects:  # a stream cannot wait for the file's end
            self._commit_rejects(job, False)
        try:
            sink.write(task.data if res.same else res.out, res.tally.differs, res.tmp)
        except OSError as exc:
            self._output_error(job, exc)
        except InputChangedError as exc:  # the rest of the file's chunks are dropped
            if res.tmp is not None:
                discard_temp(res.tmp)
            self._abort_current()
            self._fail(job, str(exc), 66)
            self._file_done(job)
            self.dropped = job
            return
        rep.add(res.tally)
        if self.on_diagnostic is not None:
            for line, item in res.details:
                self.on_diagnostic(job.name, line, item)
        sink.tally.add(res.tally)
        sink.omitted += res.omitted
        if self.progress is not None:
            self._progress(disk_pos)
        if self.max_errors is not None and rep.rejected > self.max_errors:
            before = rep.rejected - res.tally.rejected
            line = res.rejects[self.max_errors - before][0]
            where = job.name if line is None else f"{job.name}:{line}"
            try:  # the file is not written, but its rejects so far are (a re-run replaces them)
                self.rejects.commit(job.name, replace=self.mode != "stdout")
            except OSError as exc:
                self._output_error(job, exc, f"rejects file {display(self.rejects.path or '')}")
            raise StopRunError.max_errors(self.max_errors, where)

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
                bytes_in=self.rep.bytes_in,
            )
        )

    def _file_done(self, job: Job) -> None:
        self.files_done += 1
        self.done_disk += max(job.size, 0)
        if self.progress is not None:
            self._progress(0)

    def _end(self, job: Job) -> None:
        sink = self.sink
        assert sink is not None and sink.job is job
        changed = sink.tally.differs
        rep = self.rep
        try:
            if sink.to_file:
                assert job.dst is not None
                keep = sink.omitted and self.mode == "in-place" and self.backup is None
                if not changed:  # nothing was written: the input's own bytes are copied (or left in place)
                    self._commit_rejects(job, changed)
                    if self.mode == "out" and job.src is not None:
                        copy = copy_to_temp(job.src, job.dst, self.cleaned)
                        self._stage(copy, job.perm if job.perm >= 0 else None, job)
                elif (job.doc and sink.tally.rejected) or keep:
                    # a rejected document leaves no output file (and its input untouched); so does, in
                    # place without a backup, a file whose too-long record is only in the input
                    if sink.atomic is not None:
                        sink.atomic.abort()
                    self._commit_rejects(job, changed)
                else:
                    assert sink.atomic is not None, "a changed file's output was started at its first change"
                    bak = None
                    if self.mode == "in-place" and self.backup is not None and job.src is not None:
                        try:
                            bak = make_backup(job.dst, self.backup, self.cleaned, sync=False)
                        except BackupExistsError as exc:
                            self._abort_current()
                            self._fail(job, str(exc), 74)
                            self._file_done(job)
                            return
                        rep.backups += 1
                    self._commit_rejects(job, changed)  # durable before the output that omits them
                    mode = job.perm if job.src is not None and job.perm >= 0 else None
                    sink.atomic.close(durable=False, perm=mode)
                    self._stage(sink.atomic, mode, job, bak)  # one sync per batch, then the renames
            else:
                self._commit_rejects(job, changed)
                if sink.stream is not None:
                    sink.stream.flush()
                    rep.files_written += 1
                if sink.kept is not None and changed and job.src is not None and not (job.doc and sink.tally.rejected):
                    assert self.on_output is not None
                    self.on_output(job.name, os.fspath(job.src), bytes(sink.kept))
        except OSError as exc:
            self._output_error(job, exc)
        rep.file_done(job.name, display(job.dst) if job.dst is not None else None, sink.tally)
        self.sink = None
        self._file_done(job)

    def _commit_rejects(self, job: Job, changed: bool) -> None:
        """Step (a) of a file's commit: its rejects, replacing its earlier ones when it is re-emitted.

        Streamed to stdout, the output cannot be held back: each chunk's rejects are appended
        before its output is written.
        """
        replace = self.mode in ("out", "check") or (self.mode == "in-place" and changed)
        try:
            self.rejects.commit(job.name, replace)
        except OSError as exc:
            self._output_error(job, exc, f"rejects file {display(self.rejects.path or '')}")


def _cancel(pending: deque[Any]) -> None:
    """Cancel the chunks not started; a worker's temporary of one that runs on is removed when it ends."""
    for p in pending:
        if isinstance(p, _Pending) and not p.result.cancel():
            p.result.add_done_callback(_discard_result)


def _discard_result(fut: Future[ChunkResult]) -> None:
    if not fut.cancelled() and fut.exception() is None and (tmp := fut.result().tmp) is not None:
        discard_temp(tmp)


def input_records(
    inputs: Sequence[str],
    include: Sequence[str] = DEFAULT_INCLUDE,
    stdin: BinaryIO | None = None,
    limits: InputLimits | None = None,
) -> Iterator[tuple[str, bytes]]:
    """Every record of ``inputs`` as :func:`migrate` walks and reads them (files, folders, JSON
    Lines, ``.gz``, ``-`` for ``stdin``, else standard input): ``(name, record)``, named ``FILE``
    or ``FILE:LINE``.

    Raises:
        MigrationError: an input is missing or cannot be read (``exit_code`` 66), or a record
            is longer than ``limits`` allow (65).
    """
    limits = limits if limits is not None else InputLimits()
    if stdin is None and "-" in inputs:
        stdin = sys.stdin.buffer
    jobs, unreadable = walk_inputs(inputs, None, include, (), set(), None)
    if unreadable:
        raise MigrationError(f"{unreadable[0].file}: {unreadable[0].error}", 66)
    for ev in _produce(jobs, DEFAULT_CHUNK_BYTES, "compact", stdin, limits):
        if isinstance(ev, _ReadFailure):
            raise MigrationError(f"{ev.job.name}: {ev.error}", 66)
        if not isinstance(ev, _Chunk):
            continue
        task = ev.task
        if task.kind == "oversize":
            raise MigrationError(f"{task.source}: {task.data.decode()}", 65)
        if task.kind == "doc":
            if task.data.strip():
                yield task.source, task.data
            continue
        for n, line in enumerate(task.data.split(b"\n"), task.first_line):
            if line.strip():
                yield f"{task.source}:{n}", line.removesuffix(b"\r")
