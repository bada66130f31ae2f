"""Pieces of the piece driver: the plan (which bytes each task reads) and the task itself.

* Small files are grouped whole into one task until the group holds ``target`` bytes
  (thousands of small files make a few tasks, not thousands).
* A plain JSON Lines file larger than ``target`` is cut into byte ranges (for a process
  pool, smaller towards the end of the run: :func:`ranges`); each range is
  moved to whole lines on the worker (a range owns the lines that *start* in it: it
  begins after the first ``\\n`` at or after ``start - 1`` and ends likewise at ``end``),
  so no line is read twice or lost, whatever the range sizes.
* A ``.gz`` file and a ``.json`` document are always one piece (gzip cannot be entered
  in the middle; a document is one record).

A task streams each piece through the one per-chunk function
(:func:`~envglot.migration.workers.migrate_chunk`, one :class:`Migrator` per worker
process), so every executor writes the same bytes.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import zlib
from collections.abc import Callable, Iterable
from typing import IO, Any, Protocol

import msgspec

from ..diagnostics import Diagnostic
from . import fs as store
from .deferred import Deferred, InputChangedError
from .files import gzip_output, read_error
from .inputs import InputLimits, RecordReader, Task, open_fd, open_gzip, reopened
from .records import Migrator, RecordError
from .tally import Tally
from .walk import FileSpec
from .workers import ChunkResult, migrate_chunk, migrator_for


class Piece(msgspec.Struct, frozen=True):
    """A whole file (``parts == 1``) or the ``part``-th byte range ``[start, end)`` of one."""

    file: FileSpec
    part: int
    parts: int
    start: int
    end: int


class PieceResult(msgspec.Struct):
    """What a piece produced: counts, rejects (relative line numbers) and its temporary output."""

    file: int
    part: int
    tally: Tally = msgspec.field(default_factory=Tally)
    disk: int = 0
    """Input bytes of this piece as stored (compressed for .gz)."""
    lines: int = 0
    """Line terminators read (to number the lines of the next range)."""
    omitted: int = 0
    """Records rejected without their bytes (too long): their only copy is the input."""
    details: list[tuple[int | None, Diagnostic | RecordError]] = msgspec.field(default_factory=list)
    """Per record, in order (relative line numbers): its diagnostics and why it was rejected; only
    with ``options["details"]`` (``migrate(on_diagnostic=...)``), and not those handed to ``on_chunk``."""
    kept: bytes | None = None
    """With :attr:`RunSpec.keep`: the piece's output (a whole file's only if it changed)."""
    rejects: list[tuple[int | None, bytes]] = msgspec.field(default_factory=list)
    tmp: str | None = None
    """The temporary output (None: nothing written)."""
    begin: int = 0
    """Where the piece's first line starts in the input (a range of a file)."""
    same: int = 0
    """A range in which nothing changed: its output is its input's ``same`` bytes from ``begin`` (not written)."""
    digest: bytes = b""
    """With ``same``: the digest of those bytes as read (:class:`~.deferred.Unchanged`)."""
    error: str | None = None
    error_code: int = 0
    """66 (read) or 74 (write) with ``error``."""


class RunSpec(msgspec.Struct, frozen=True):
    """Everything a task needs besides its pieces (sent once per task, small)."""

    run: str
    options: dict[str, Any]
    style: str
    chunk_bytes: int
    check: bool
    src_fs: Any = None
    """The inputs' fsspec file system; None: local paths."""
    dst_fs: Any = None
    """The outputs' fsspec file system; None: local paths."""
    limits: InputLimits = InputLimits()
    root: str | None = None
    """A local ``--out`` directory: no temporary is written through a symbolic link below it."""
    sync: bool = True
    """A task makes its temporaries durable (a cluster's workers elsewhere); False: the driver's
    commit batch does, one sync per batch (workers on the driver's machine and a local ``--out``:
    set by :func:`.driver.run_pieces` from :attr:`.executors.Executor.on_this_machine`)."""
    in_place: bool = False
    """The output replaces the input: an unchanged file is left as it is (no temporary)."""
    keep: bool = False
    """A dry run whose outputs are wanted (``migrate(on_output=...)``): they come back in memory."""


def plan(
    files: list[FileSpec], target: int, max_files: int = 5000, cut: bool = True, taper: int = 0, least: int = 1
) -> list[list[Piece]]:
    """Group the files' pieces into tasks, in file order (``cut=False``: a large file is one piece too).

    ``taper``: the workers that take the tasks as they free up (a process pool): a range is at
    most ``1 / (2 × taper)`` of the input left from where it starts to the end of the run, and
    not under ``least`` bytes, so the last ranges are small and the workers finish together
    (:func:`ranges`). 0: a file's ranges are of equal size.
    """
    tasks: list[list[Piece]] = []
    group: list[Piece] = []
    group_bytes = 0
    after = sum(max(f.size, 0) for f in files)  # input bytes from the current file to the end of the run
    for f in files:
        if cut and not f.gz and not f.doc and f.size > target:
            if group:
                tasks.append(group)
                group, group_bytes = [], 0
            bounds = ranges(f.size, target, after - f.size, taper, least)
            tasks.extend([Piece(f, i, len(bounds), a, b)] for i, (a, b) in enumerate(bounds))
            after -= f.size
            continue
        after -= max(f.size, 0)
        group.append(Piece(f, 0, 1, 0, f.size))
        group_bytes += max(f.size, 1)
        if group_bytes >= target or len(group) >= max_files:
            tasks.append(group)
            group, group_bytes = [], 0
    if group:
        tasks.append(group)
    return tasks


def ranges(size: int, target: int, later: int, taper: int, least: int) -> list[tuple[int, int]]:
    """The byte ranges ``[start, end)`` a file of ``size`` bytes is cut into: of equal size, none
    over ``target``; with ``taper`` workers, each also at most ``1 / (2 × taper)`` of what is left
    of the run from its start (the file's rest and the ``later`` bytes of the files after it) and
    not under ``least`` (a remainder under ``least`` joins the range before it)."""
    if not taper:
        parts = -(-size // target)
        step = -(-size // parts)
        return [(i * step, min((i + 1) * step, size)) for i in range(parts)]
    out: list[tuple[int, int]] = []
    pos = 0
    while pos < size:
        step = min(target, max(least, -(-(size - pos + later) // (2 * taper))))
        end = size if size - pos - step < least else pos + step
        out.append((pos, end))
        pos = end
    return out


OnChunk = Callable[[Piece, ChunkResult], bool]
"""Told each chunk of a piece as it is done (in the driver's process); True: it took the chunk's details."""


def run_task(spec: RunSpec, pieces: list[Piece], on_chunk: OnChunk | None = None) -> list[PieceResult]:
    """A task: migrate each piece, write its temporary output, return the counts (``on_chunk``: told
    each chunk as it is done, in this process)."""
    mig = migrator_for(spec.options)
    local = store.is_local(spec.src_fs) and store.is_local(spec.dst_fs)  # a whole small file may take the direct path
    results = [_run_piece(spec, mig, p, on_chunk, local) for p in pieces]
    if spec.sync:  # durable before commit; a range's temporary is never committed (the file put
        # together from the ranges is, made durable by finish_ranged): syncing it would write it twice
        whole = [r.tmp for p, r in zip(pieces, results, strict=True) if r.tmp is not None and p.parts == 1]
        store.sync_written(spec.dst_fs, whole)
    return results


def _boundary(fh: Any, pos: int, size: int) -> int:
    """The first line start at or after ``pos`` (0 and ``size`` are boundaries)."""
    if pos <= 0:
        return 0
    if pos >= size:
        return size
    fh.seek(pos - 1)
    at = pos - 1
    while True:
        block = fh.read(64 * 1024)
        if not block:
            return size
        i = block.find(b"\n")
        if i >= 0:
            return at + i + 1
        at += len(block)


class _Limited:
    """Reads at most ``n`` bytes of ``fh``."""

    def __init__(self, fh: Any, n: int) -> None:
        self.fh = fh
        self.left = n

    def read(self, size: int) -> bytes:
        if self.left <= 0:
            return b""
        b: bytes = self.fh.read(min(size, self.left))
        self.left -= len(b)
        return b


def _run_piece(spec: RunSpec, mig: Migrator, piece: Piece, on_chunk: OnChunk | None, local: bool) -> PieceResult:
    f = piece.file
    if local and piece.parts == 1 and not f.gz and 0 <= f.size <= store.HOLD_BYTES:
        small = _run_small(spec, mig, piece, on_chunk)
        if small is not None:
            return small
    res = PieceResult(file=f.index, part=piece.part, disk=max(piece.end - piece.start, 0))
    ranged = piece.parts > 1
    out: _PieceOutput | None = None
    close: list[Any] = []
    try:
        try:
            raw = store.open_read(spec.src_fs, f.src, -1 if ranged else f.size)
            close.append(raw)
            fh: Any = raw
            if ranged:
                res.begin = _boundary(raw, piece.start, f.size)
                end = _boundary(raw, piece.end, f.size)
                raw.seek(res.begin)
                fh = _Limited(raw, end - res.begin)
            elif f.gz:
                fh = open_gzip(raw, spec.limits)
                close.insert(0, fh)
        except (OSError, EOFError, zlib.error) as exc:
            res.error, res.error_code = read_error(exc), 66
            return res
        if not spec.check and f.dst is not None:
            tmp = store.temp_path(f.dst, spec.run, f"{f.index}.{piece.part}" if ranged else str(f.index))
            out = _PieceOutput(spec, f, tmp, res.begin, gz=f.gz and not ranged)
        try:
            _stream(spec, mig, piece, fh, res, out, on_chunk)
        except InputChangedError as exc:
            res.error, res.error_code = str(exc), 66
            return res
        except (OSError, EOFError, zlib.error) as exc:
            if isinstance(exc, _WriteError):
                res.error, res.error_code = f"cannot write {f.dst}: {exc.args[0]}", 74
            else:
                res.error, res.error_code = read_error(exc), 66
            return res
        if out is not None:
            try:
                _finish_piece(spec, f, out, res, ranged)
            except OSError as exc:
                res.error, res.error_code = f"cannot write {f.dst}: {exc.strerror or exc}", 74
        return res
    finally:
        for c in close:
            with contextlib.suppress(Exception):
                c.close()
        if out is not None:
            with contextlib.suppress(Exception):
                out.close()
            if out.touched and (res.error is not None or res.tmp is None):
                store.remove(spec.dst_fs, out.tmp)
                res.tmp = None


class _Collected:
    """A small file's output, collected in memory (:func:`_run_small`)."""

    __slots__ = ("changed", "parts")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.changed = False

    def write(self, b: bytes, changed: bool) -> None:
        self.parts.append(b)
        self.changed = self.changed or changed


def _run_small(spec: RunSpec, mig: Migrator, piece: Piece, on_chunk: OnChunk | None) -> PieceResult | None:
    """A whole small local file (walked at most :data:`.fs.HOLD_BYTES`, not gzip) on one direct
    path: read with one ``read``, converted, and its temporary created whole from memory
    (:func:`.fs.write_new`) — the converted records, or the bytes read when nothing changed (never
    read a second time) — without the layers of a streamed output (:class:`_PieceOutput`). The
    same bytes, outcomes and errors as that path; None: the file grew past the limit since it was
    walked (it takes that path, which bounds the memory it holds)."""
    f = piece.file
    res = PieceResult(file=f.index, part=0, disk=max(f.size, 0))
    try:
        fd = open_fd(f.src)
        try:
            data = store.read_all(fd, f.size)
        finally:
            os.close(fd)
    except OSError as exc:
        res.error, res.error_code = read_error(exc), 66
        return res
    if len(data) > store.HOLD_BYTES:
        return None
    out = _Collected()
    limit = spec.limits.max_record_bytes
    whole = RecordReader.whole(data, source=f.name, style=spec.style, doc=f.doc, max_record=limit)
    try:
        if whole is not None:  # one chunk, without the reader's generators
            tasks, res.lines = whole
            _convert(spec, mig, piece, tasks, res, out, on_chunk)
        else:
            _stream(spec, mig, piece, io.BytesIO(data), res, out, on_chunk)
    except (OSError, EOFError, zlib.error) as exc:
        res.error, res.error_code = read_error(exc), 66
        return res
    if spec.check or f.dst is None or (f.doc and res.tally.rejected) or (spec.in_place and not out.changed):
        return res  # no output: a dry run, a rejected document, an unchanged file left in place
    tmp = store.temp_path(f.dst, spec.run, str(f.index))
    try:
        store.prepare_dir(tmp, spec.root, spec.run)
        store.write_new(tmp, b"".join(out.parts) if out.changed else data, f.mode)
    except OSError as exc:
        res.error, res.error_code = f"cannot write {f.dst}: {exc.strerror or exc}", 74
        return res
    res.tmp = tmp
    return res


def _finish_piece(spec: RunSpec, f: FileSpec, out: _PieceOutput, res: PieceResult, ranged: bool) -> None:
    """Close a piece's output, or say which input bytes stand for it (nothing in it changed)."""
    if out.output.out is not None:
        if not ranged and f.doc and res.tally.rejected:  # a rejected document leaves no output file
            out.output.out.abort()
            return
        out.close()  # made durable for the whole task at once (run_task)
        res.tmp = out.tmp
    elif not ranged and spec.in_place:  # unchanged in place: the input stays, nothing is written
        pass
    elif not ranged:
        out.touched = True
        store.copy_file(spec.src_fs, f.src, spec.dst_fs, out.tmp, spec.root, f.mode, f.size, spec.run)  # unchanged
        res.tmp = out.tmp
    else:  # an unchanged range: its input bytes, copied when the file is put together (if it changed)
        res.same = out.output.unchanged.size
        res.digest = out.output.unchanged.digest()


class _Sink(Protocol):
    """Where :func:`_stream` writes a piece's output (``changed``: the bytes differ from the input's)."""

    def write(self, b: bytes, changed: bool) -> None: ...


class _PieceOutput:
    """A piece's temporary output, started at its first change (:class:`~.deferred.Deferred`)."""

    def __init__(self, spec: RunSpec, f: FileSpec, tmp: str, begin: int, gz: bool) -> None:
        self.spec = spec
        self.file = f
        self.tmp = tmp
        self.begin = begin
        self.gz = gz
        self.output: Deferred[_TempWriter] = Deferred(self._open, self._reopen)
        self.touched = False
        """The temporary may exist (it is removed if the piece fails or leaves no output)."""

    def write(self, b: bytes, changed: bool) -> None:
        self.output.write(b, changed)

    def _open(self) -> _TempWriter:
        self.touched = True
        return _TempWriter(self.spec, self.file, self.tmp, self.gz, whole=self.begin == 0)

    def _reopen(self) -> list[Any]:
        return reopened(store.open_read(self.spec.src_fs, self.file.src), self.spec.limits, self.gz, self.begin)

    def close(self) -> None:
        """Close the output (if it was started); errors propagate."""
        if self.output.out is not None:
            self.output.out.close()


class _TempWriter:
    """A temporary on the destination's file system, given the input's mode (a local one is held
    in memory while the input is small: :func:`.fs.open_output`); with ``gz``, a .gz output."""

    def __init__(self, spec: RunSpec, f: FileSpec, tmp: str, gz: bool, whole: bool) -> None:
        self.raw: IO[bytes] | store.HeldTemp | None = None
        self.fh: IO[bytes] | store.HeldTemp | gzip.GzipFile | None = None
        try:
            if gz:
                self.raw = store.open_write(spec.dst_fs, tmp, spec.root, mode=f.mode, run=spec.run)
                self.fh = gzip_output(self.raw, f.dst or tmp)
            else:
                size = f.size if whole and not f.gz else -1
                self.raw = self.fh = store.open_output(
                    spec.dst_fs, tmp, spec.root, mode=f.mode, size=size, run=spec.run
                )
        except OSError as exc:
            raise _WriteError(exc.strerror or str(exc)) from exc

    def write(self, b: bytes) -> None:
        assert self.fh is not None
        try:
            self.fh.write(b)
        except OSError as exc:
            raise _WriteError(exc.strerror or str(exc)) from exc

    def close(self) -> None:
        """Close it (once); errors propagate."""
        fh, raw = self.fh, self.raw
        self.fh = self.raw = None
        try:
            if fh is not None and fh is not raw:
                fh.close()
        finally:
            if raw is not None:
                raw.close()

    def abort(self) -> None:
        """Close it, ignoring errors (the piece fails; its temporary is removed by :func:`_run_piece`);
        one still held in memory is dropped, never created."""
        if isinstance(self.raw, store.HeldTemp):
            self.raw.held = None
        with contextlib.suppress(Exception):
            self.close()


class _WriteError(OSError):
    """An output write failed (as opposed to reading the input)."""


def _stream(
    spec: RunSpec,
    mig: Migrator,
    piece: Piece,
    fh: Any,
    res: PieceResult,
    out: _Sink | None,
    on_chunk: OnChunk | None,
) -> None:
    """Read whole-line chunks (or the document) with the shared reader, migrate them, write the output."""
    f = piece.file
    reader = RecordReader(
        fh,
        source=f.name,
        style=spec.style,
        doc=f.doc,
        read_size=spec.chunk_bytes,
        max_record=spec.limits.max_record_bytes,
    )
    _convert(spec, mig, piece, reader, res, out, on_chunk)
    res.lines = reader.lines


def _convert(
    spec: RunSpec,
    mig: Migrator,
    piece: Piece,
    tasks: Iterable[Task],
    res: PieceResult,
    out: _Sink | None,
    on_chunk: OnChunk | None,
) -> None:
    """Migrate a piece's chunks into ``res``, writing the output to ``out``."""
    kept: list[bytes] | None = [] if spec.keep else None
    for n, task in enumerate(tasks):
        c = migrate_chunk(mig, task)
        if n:
            res.tally.add(c.tally)
        else:  # the first chunk's counts are the piece's so far (a small file has no other chunk)
            res.tally = c.tally
        res.rejects.extend(c.rejects)
        res.omitted += c.omitted
        if out is not None:
            out.write(c.out, c.tally.differs)
        if kept is not None:
            kept.append(c.out)
        if not (on_chunk is not None and on_chunk(piece, c)):
            res.details.extend(c.details)
    if kept is not None and (piece.parts > 1 or res.tally.differs):
        res.kept = b"".join(kept)
