"""Partitions of the Dask engine: the plan (which bytes each task reads) and the task itself.

* Small files are grouped whole into one task until the group holds ``target`` bytes
  (thousands of small files make a few tasks, not thousands).
* A plain JSON Lines file larger than ``target`` is cut into byte ranges; each range is
  moved to whole lines on the worker (a range owns the lines that *start* in it: it
  begins after the first ``\\n`` at or after ``start - 1`` and ends likewise at ``end``),
  so no line is read twice or lost, whatever the range sizes.
* A ``.gz`` file and a ``.json`` document are always one piece (gzip cannot be entered
  in the middle; a document is one record).

A task streams each piece through the same per-chunk function as the local engine
(:func:`~envglot.migration.workers._migrate_chunk`, one :class:`Migrator` per worker
process), so the bytes written are those the local engine writes.
"""

from __future__ import annotations

import contextlib
import gzip
import shutil
import zlib
from typing import IO, Any

import msgspec

from . import fs as store
from .files import _read_error
from .inputs import InputLimits, RecordReader, open_gzip
from .records import Migrator, _rebuild_migrator
from .tally import Tally
from .workers import _ChunkResult, _migrate_chunk


class FileSpec(msgspec.Struct, frozen=True):
    """One input file: where it is read, how it is named, where its output goes."""

    index: int
    name: str
    """As in reports and rejects (the path or URL as walked)."""
    src: str
    dst: str | None
    """Output path in the destination store; None for a dry run."""
    doc: bool
    gz: bool
    size: int
    mode: int | None = None
    """Permission bits given to the output (local inputs)."""
    shown: str | None = None
    """The output as named in the report (the ``out`` given, joined with the relative path)."""


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
    rejects: list[tuple[int | None, bytes]] = msgspec.field(default_factory=list)
    tmp: str | None = None
    """The temporary output (None: nothing written)."""
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
    src_fs: Any
    dst_fs: Any
    limits: InputLimits = InputLimits()


def plan(files: list[FileSpec], target: int, max_files: int = 5000) -> list[list[Piece]]:
    """Group the files' pieces into tasks, in file order."""
    tasks: list[list[Piece]] = []
    group: list[Piece] = []
    group_bytes = 0
    for f in files:
        if not f.gz and not f.doc and f.size > target:
            if group:
                tasks.append(group)
                group, group_bytes = [], 0
            parts = -(-f.size // target)
            step = -(-f.size // parts)
            for i in range(parts):
                tasks.append([Piece(f, i, parts, i * step, min((i + 1) * step, f.size))])
            continue
        group.append(Piece(f, 0, 1, 0, f.size))
        group_bytes += max(f.size, 1)
        if group_bytes >= target or len(group) >= max_files:
            tasks.append(group)
            group, group_bytes = [], 0
    if group:
        tasks.append(group)
    return tasks


_MIGRATORS: dict[bytes, Migrator] = {}


def migrator_for(options: dict[str, Any]) -> Migrator:
    """The worker process's Migrator for these options (built once, then reused)."""
    key = msgspec.json.encode(options)
    mig = _MIGRATORS.get(key)
    if mig is None:
        mig = _MIGRATORS[key] = _rebuild_migrator(options["to"], {k: v for k, v in options.items() if k != "to"})
    return mig


def run_task(spec: RunSpec, pieces: list[Piece]) -> list[PieceResult]:
    """A Dask task: migrate each piece, write its temporary output, return the counts."""
    mig = migrator_for(spec.options)
    results = [_run_piece(spec, mig, p) for p in pieces]
    store.sync_written(spec.dst_fs, [r.tmp for r in results if r.tmp is not None])  # durable before commit
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


def _run_piece(spec: RunSpec, mig: Migrator, piece: Piece) -> PieceResult:
    f = piece.file
    res = PieceResult(file=f.index, part=piece.part, disk=max(piece.end - piece.start, 0))
    out: IO[bytes] | None = None
    raw_out: IO[bytes] | None = None
    tmp: str | None = None
    ranged = piece.parts > 1
    if not spec.check and f.dst is not None:
        tmp = store.temp_path(f.dst, spec.run, f"{f.index}.{piece.part}" if ranged else str(f.index))
    close: list[Any] = []
    try:
        try:
            raw = store.open_read(spec.src_fs, f.src)
            close.append(raw)
            fh: Any = raw
            if ranged:
                begin = _boundary(raw, piece.start, f.size)
                end = _boundary(raw, piece.end, f.size)
                raw.seek(begin)
                fh = _Limited(raw, end - begin)
            elif f.gz:
                fh = open_gzip(raw, spec.limits)
                close.insert(0, fh)
        except (OSError, EOFError, zlib.error) as exc:
            res.error, res.error_code = _read_error(exc), 66
            return res
        if tmp is not None:
            try:
                raw_out = store.open_write(spec.dst_fs, tmp)
                out = raw_out
                if f.gz and not ranged:
                    inner = f.dst.rsplit("/", 1)[-1][:-3] if f.dst else ""
                    out = gzip.GzipFile(filename=inner, mode="wb", fileobj=raw_out, compresslevel=6, mtime=0)  # type: ignore[assignment]
            except OSError as exc:
                res.error, res.error_code = f"cannot write {tmp}: {exc.strerror or exc}", 74
                return res
        try:
            _stream(spec, mig, f, fh, res, out)
        except (OSError, EOFError, zlib.error) as exc:
            if isinstance(exc, _WriteError):
                res.error, res.error_code = f"cannot write {f.dst}: {exc.args[0]}", 74
            else:
                res.error, res.error_code = _read_error(exc), 66
            return res
        if out is not None and raw_out is not None and tmp is not None:
            try:
                if out is not raw_out:
                    out.close()
                raw_out.close()  # made durable for the whole task at once (run_task)
                raw_out = None
                changed = res.tally.changed
                if not ranged and f.doc and res.tally.rejected:
                    store.remove(spec.dst_fs, tmp)  # a rejected document leaves no output file
                elif not ranged and not changed:
                    store.remove(spec.dst_fs, tmp)
                    store.copy_file(spec.src_fs, f.src, spec.dst_fs, tmp)  # unchanged: the input's own bytes
                    res.tmp = tmp
                else:
                    res.tmp = tmp
            except OSError as exc:
                res.error, res.error_code = f"cannot write {f.dst}: {exc.strerror or exc}", 74
        return res
    finally:
        for c in close:
            with contextlib.suppress(Exception):
                c.close()
        if raw_out is not None:
            with contextlib.suppress(Exception):
                raw_out.close()
        if res.error is not None and tmp is not None:
            store.remove(spec.dst_fs, tmp)
            res.tmp = None


class _WriteError(OSError):
    """An output write failed (as opposed to reading the input)."""


def _stream(spec: RunSpec, mig: Migrator, f: FileSpec, fh: Any, res: PieceResult, out: IO[bytes] | None) -> None:
    """Read whole-line chunks (or the document) with the shared reader, migrate them, write the output."""

    def emit(c: _ChunkResult) -> None:
        res.tally.add(c.tally)
        res.rejects.extend(c.rejects)
        if out is not None and c.out:
            try:
                out.write(c.out)
            except OSError as exc:
                raise _WriteError(exc.strerror or str(exc)) from exc

    reader = RecordReader(
        fh,
        source=f.name,
        style=spec.style,
        doc=f.doc,
        read_size=spec.chunk_bytes,
        max_record=spec.limits.max_record_bytes,
    )
    for task in reader:
        emit(_migrate_chunk(mig, task))
    res.lines = reader.lines


def finish_ranged(spec: RunSpec, f: FileSpec, parts: list[str | None], changed: bool) -> str:
    """A Dask task: one temporary output for a file read in ranges.

    Changed: the ranges' outputs concatenated in order; unchanged: the input's own bytes
    (as the local engine copies an unchanged file). The ranges' temporaries are removed.
    """
    assert f.dst is not None
    tmp = store.temp_path(f.dst, spec.run, str(f.index))
    if not changed:
        for p in parts:
            if p is not None:
                store.remove(spec.dst_fs, p)
        store.copy_file(spec.src_fs, f.src, spec.dst_fs, tmp)
    else:
        _concatenate(spec, tmp, parts)
    store.sync_written(spec.dst_fs, [tmp])
    return tmp


def _concatenate(spec: RunSpec, tmp: str, parts: list[str | None]) -> None:
    w = store.open_write(spec.dst_fs, tmp)
    try:
        for p in parts:
            if p is None:
                continue
            with store.open_read(spec.dst_fs, p) as r:
                shutil.copyfileobj(r, w, 1 << 20)
        w.close()
    except BaseException:
        with contextlib.suppress(Exception):
            w.close()
        store.remove(spec.dst_fs, tmp)
        raise
    for p in parts:
        if p is not None:
            store.remove(spec.dst_fs, p)
