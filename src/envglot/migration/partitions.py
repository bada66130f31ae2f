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
import io
import os
import zlib
from collections.abc import Callable
from typing import Any, Protocol

import msgspec

from ..diagnostics import Diagnostic
from . import fs as store
from .deferred import InputChangedError
from .files import read_error
from .inputs import InputLimits, RecordReader, Task, open_fd, open_gzip
from .pieceout import PieceOutput, WriteError
from .records import Migrator, RecordError
from .tally import Tally
from .walk import FileSpec, known_bytes
from .workers import ChunkResult, migrate_chunk, migrator_for


class Piece(msgspec.Struct, frozen=True, gc=False):
    """A whole file (``parts == 1``) or the ``part``-th byte range ``[start, end)`` of one (one per
    file planned at once: not tracked by the garbage collector, no cycle can pass through it)."""

    file: FileSpec
    part: int
    parts: int
    start: int
    end: int


class PieceResult(msgspec.Struct, gc=False):
    """What a piece produced: counts, rejects (relative line numbers) and its temporary output (not
    tracked by the garbage collector: nothing it holds refers back to it)."""

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


TASK_FILES = 5000
"""Most files a task takes (:func:`plan`), however small they are."""


def plan(
    files: list[FileSpec], target: int, max_files: int = TASK_FILES, cut: bool = True, taper: int = 0, least: int = 1
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
    after = known_bytes(files)  # input bytes from the current file to the end of the run
    for f in files:
        size = f.size
        if cut and size > target and not f.gz and not f.doc:
            if group:
                tasks.append(group)
                group, group_bytes = [], 0
            bounds = ranges(size, target, after - size, taper, least)
            tasks.extend([Piece(f, i, len(bounds), a, b)] for i, (a, b) in enumerate(bounds))
            after -= size
            continue
        group.append(Piece(f, 0, 1, 0, size))
        if size > 0:  # an unknown size (-1) counts as none, and a file as one byte at least
            after -= size
            group_bytes += size
        else:
            group_bytes += 1
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


SMALL_GROUP_FILES = 256
"""A task's whole small local files are taken in groups of at most this many (:func:`_run_small`) ..."""
SMALL_GROUP_BYTES = 1024 * 1024
"""... or of this many input bytes as walked (what a group holds in memory at once)."""


def run_task(spec: RunSpec, pieces: list[Piece], on_chunk: OnChunk | None = None) -> list[PieceResult]:
    """A task: migrate each piece, write its temporary output, return the counts (``on_chunk``: told
    each chunk as it is done, in this process)."""
    mig = migrator_for(spec.options)
    local = store.is_local(spec.src_fs) and store.is_local(spec.dst_fs)  # a whole small file may take the direct path
    results: list[PieceResult] = []
    group: list[Piece] = []
    held = 0
    for p in pieces:
        f = p.file
        if local and p.parts == 1 and not f.gz and 0 <= f.size <= store.HOLD_BYTES:
            group.append(p)
            held += f.size
            if len(group) < SMALL_GROUP_FILES and held < SMALL_GROUP_BYTES:
                continue
        elif not group:
            results.append(_run_piece(spec, mig, p, on_chunk))
            continue
        results.extend(_run_small(spec, mig, group, on_chunk))
        if group[-1] is not p:  # p itself is no small file
            results.append(_run_piece(spec, mig, p, on_chunk))
        group, held = [], 0
    if group:
        results.extend(_run_small(spec, mig, group, on_chunk))
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


def _run_piece(spec: RunSpec, mig: Migrator, piece: Piece, on_chunk: OnChunk | None) -> PieceResult:
    """A piece streamed: read in chunks (or a range of lines), converted, its temporary written as it comes."""
    f = piece.file
    res = PieceResult(file=f.index, part=piece.part, disk=max(piece.end - piece.start, 0))
    ranged = piece.parts > 1
    out: PieceOutput | None = None
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
            out = PieceOutput(spec, f, tmp, res.begin, gz=f.gz and not ranged)
        try:
            _stream(spec, mig, piece, fh, res, out, on_chunk)
        except InputChangedError as exc:
            res.error, res.error_code = str(exc), 66
            return res
        except (OSError, EOFError, zlib.error) as exc:
            if isinstance(exc, WriteError):
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


def _run_small(spec: RunSpec, mig: Migrator, group: list[Piece], on_chunk: OnChunk | None) -> list[PieceResult]:
    """Whole small local files (each walked at most :data:`.fs.HOLD_BYTES`, not gzip) on one direct
    path, in three steps over the group: every file read with one ``read``, then every file
    converted (one loop, its code and data warm in the caches, no system call in between), then
    every temporary created whole from memory (:func:`.fs.write_new`) — the converted records, or
    the bytes read when nothing changed (never read a second time) — without the layers of a
    streamed output (:class:`PieceOutput`). The same bytes, outcomes and errors as that path; a
    file grown past the limit since it was walked takes that path (which bounds the memory it
    holds)."""
    read = [_read_small(p.file) for p in group]
    results: list[PieceResult] = []
    written: list[tuple[PieceResult, FileSpec, bytes]] = []
    limit, style, in_place = spec.limits.max_record_bytes, spec.style, spec.in_place
    writes = not spec.check
    for piece, data in zip(group, read, strict=True):
        f = piece.file
        if data is None:  # grown past the limit
            results.append(_run_piece(spec, mig, piece, on_chunk))
            continue
        if type(data) is str:
            results.append(PieceResult(file=f.index, part=0, disk=max(f.size, 0), error=data, error_code=66))
            continue
        assert isinstance(data, bytes)
        whole = RecordReader.whole(data, source=f.name, style=style, doc=f.doc, max_record=limit)
        if whole:  # one chunk, its result the file's (no reader, no output object)
            res, output = _whole_chunk(mig, piece, whole[0], on_chunk)
            results.append(res)
            changed = res.tally.differs
            if not changed:
                output = data
            elif spec.keep:
                res.kept = output
        else:
            res = PieceResult(file=f.index, part=0, disk=max(f.size, 0))
            results.append(res)
            changed, output = False, data
            if whole is None:  # longer than one record may be: read with a reader
                try:
                    out = _Collected()
                    _stream(spec, mig, piece, io.BytesIO(data), res, out, on_chunk)
                except (OSError, EOFError, zlib.error) as exc:
                    res.error, res.error_code = read_error(exc), 66
                    continue
                changed = out.changed
                output = b"".join(out.parts) if changed else data
        if writes and f.dst is not None and not (f.doc and res.tally.rejected) and (changed or not in_place):
            # an output (not: a dry run, a rejected document, an unchanged file left in place)
            written.append((res, f, output))
    run, root = spec.run, spec.root
    for res, f, data in written:
        assert f.dst is not None
        tmp = store.temp_path(f.dst, run, str(f.index))
        try:
            store.prepare_dir(tmp, root, run)
            store.write_new(tmp, data, f.mode)
        except OSError as exc:
            res.error, res.error_code = f"cannot write {f.dst}: {exc.strerror or exc}", 74
            continue
        res.tmp = tmp
    return results


def _whole_chunk(mig: Migrator, piece: Piece, task: Task, on_chunk: OnChunk | None) -> tuple[PieceResult, bytes]:
    """A whole small file's result from its one chunk, and the chunk's output: what :func:`_take`
    makes of a first and only chunk, the chunk's counts, rejects, details and line terminators taken,
    not copied (nor counted again)."""
    c = migrate_chunk(mig, task)
    took = on_chunk is not None and on_chunk(piece, c)
    f = piece.file  # positional: file, part, tally, disk (walked: a small local file's size is known), lines,
    # omitted, details, kept, rejects
    res = PieceResult(f.index, 0, c.tally, f.size, c.lines, c.omitted, [] if took else c.details, None, c.rejects)
    return res, c.out


def _read_small(f: FileSpec) -> bytes | str | None:
    """A small local file's bytes (one ``read`` when it is as walked); a ``str``: why it cannot be
    read; None: it grew past :data:`.fs.HOLD_BYTES` (its bytes are not kept)."""
    try:
        fd = open_fd(f.src)
        try:
            data = store.read_all(fd, f.size)
        finally:
            os.close(fd)
    except OSError as exc:
        return read_error(exc)
    return data if len(data) <= store.HOLD_BYTES else None


def _finish_piece(spec: RunSpec, f: FileSpec, out: PieceOutput, res: PieceResult, ranged: bool) -> None:
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
    reader: RecordReader,
    res: PieceResult,
    out: _Sink | None,
    on_chunk: OnChunk | None,
) -> None:
    """Migrate a piece's chunks into ``res``, writing the output to ``out`` (each chunk's lines,
    counted by the chunk loop, told to the reader: it does not count them again)."""
    kept: list[bytes] | None = [] if spec.keep else None
    first = True
    for task in reader:
        reader.took(task, _take(mig, piece, task, res, first, out, kept, on_chunk).lines)
        first = False
    if kept is not None and (piece.parts > 1 or res.tally.differs):
        res.kept = b"".join(kept)


def _take(
    mig: Migrator,
    piece: Piece,
    task: Task,
    res: PieceResult,
    first: bool,
    out: _Sink | None,
    kept: list[bytes] | None,
    on_chunk: OnChunk | None,
) -> ChunkResult:
    """Migrate one chunk of a piece into ``res`` (the first chunk's counts are the piece's so far:
    a small file has no other chunk), its output written to ``out`` and kept in ``kept``."""
    c = migrate_chunk(mig, task)
    if first:
        res.tally = c.tally
    else:
        res.tally.add(c.tally)
    res.rejects.extend(c.rejects)
    res.omitted += c.omitted
    if out is not None:
        out.write(c.out, c.tally.differs)
    if kept is not None:
        kept.append(c.out)
    if not (on_chunk is not None and on_chunk(piece, c)):
        res.details.extend(c.details)
    return c
