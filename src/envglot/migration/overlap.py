"""A piece's chunks converted in order (:func:`convert_chunks`), and with ``-j 1``
(:attr:`.partitions.RunSpec.overlap`) its reads and writes in threads beside the conversion.

A read or write of a local file releases the GIL for its system call and its copy, so while this
process converts chunk ``k`` one thread reads the next block of the input (:class:`ReadAhead`) and
another writes chunk ``k - 1``'s output (:class:`WriteBehind`). Each is bounded (one block read
ahead and one waiting, one output in flight) and hands its error back to the converting thread in
order: the run sees the same bytes and the same errors, where the same calls made one after the
other would have raised them.
"""

from __future__ import annotations

import queue
import threading
from typing import TYPE_CHECKING, Any, Protocol

from .workers import ChunkResult, migrate_chunk

if TYPE_CHECKING:
    from .inputs import RecordReader
    from .partitions import OnChunk, Piece, PieceResult
    from .records import Migrator


class ReadAhead:
    """``fh`` read ``size`` bytes at a time by a thread, one block ahead of :meth:`read` (one more
    waits): the blocks, end of input and the read's error come back in order."""

    def __init__(self, fh: Any, size: int) -> None:
        self.fh = fh
        self.size = size
        self.blocks: queue.Queue[tuple[bytes, BaseException | None]] = queue.Queue(maxsize=1)
        self.ended = False
        self.stop = False
        self.thread = threading.Thread(target=self._run, name="envglot-read-ahead", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while not self.stop:
                block: bytes = self.fh.read(self.size)
                self.blocks.put((block, None))
                if not block:
                    return
        except BaseException as exc:  # handed to the reading thread, raised there
            self.blocks.put((b"", exc))

    def read(self, size: int) -> bytes:
        """The next block (``b""`` at the end); raises the error its read raised."""
        assert size == self.size, "blocks are read ahead at one size"
        if self.ended:
            return b""
        block, exc = self.blocks.get()
        if exc is not None or not block:
            self.ended = True
        if exc is not None:
            raise exc
        return block

    def close(self) -> None:
        """Stop the thread (blocks read ahead are dropped) and wait for it."""
        self.stop = True
        while self.thread.is_alive():
            try:
                self.blocks.get_nowait()  # a thread waiting to hand a block over goes on, then stops
            except queue.Empty:
                self.thread.join(0.01)


class Sink(Protocol):
    """Where a piece's output goes (``changed``: the bytes differ from the input's)."""

    def write(self, b: bytes, changed: bool) -> None: ...


class WriteBehind:
    """``sink.write`` called by a thread: :meth:`write` hands one output over, :meth:`wait` waits
    for it and raises its error (one write in flight at a time)."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.jobs: queue.SimpleQueue[tuple[bytes, bool] | None] = queue.SimpleQueue()
        self.done: queue.SimpleQueue[BaseException | None] = queue.SimpleQueue()
        self.busy = False
        self.thread = threading.Thread(target=self._run, name="envglot-write-behind", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while (job := self.jobs.get()) is not None:
            try:
                self.sink.write(*job)
            except BaseException as exc:  # handed to the converting thread by wait()
                self.done.put(exc)
            else:
                self.done.put(None)

    def write(self, b: bytes, changed: bool) -> None:
        """Hand ``b`` over to be written (the write before it waited for)."""
        assert not self.busy, "one write in flight at a time"
        self.busy = True
        self.jobs.put((b, changed))

    def wait(self) -> None:
        """Wait for the write handed over (if any); raises its error."""
        if self.busy:
            self.busy = False
            exc = self.done.get()
            if exc is not None:
                raise exc

    def close(self) -> None:
        """Stop the thread once the write in flight is done (its error, if any, is not raised)."""
        self.jobs.put(None)
        self.thread.join()


def convert_chunks(
    keep: bool,
    mig: Migrator,
    piece: Piece,
    reader: RecordReader,
    res: PieceResult,
    out: Sink | WriteBehind | None,
    on_chunk: OnChunk | None,
) -> None:
    """Migrate a piece's chunks into ``res``, writing the output to ``out`` (each chunk's lines,
    counted by the chunk loop, told to the reader: it does not count them again; ``keep``: the
    output kept in ``res.kept`` too).

    ``out`` a :class:`WriteBehind`: it writes chunk ``k`` while chunk ``k + 1`` is converted. A chunk
    is told (kept, handed to ``on_chunk``) once its write is done, and chunk ``k + 1`` counted only
    then: whatever raises (the write, the next read, the conversion), the piece's counts and what was
    told are those the same calls made one after the other leave, and a write's error comes before
    that of anything after it."""
    kept: list[bytes] | None = [] if keep else None
    behind = isinstance(out, WriteBehind)
    first = True
    written: ChunkResult | None = None  # handed to the writer, not told yet
    try:
        for task in reader:
            c = migrate_chunk(mig, task)
            if written is not None:
                assert isinstance(out, WriteBehind)
                told, written = written, None
                out.wait()
                _tell(piece, told, res, kept, on_chunk)
            _count(c, res, first)
            if out is not None:
                out.write(c.out, c.tally.differs)
            if behind:
                written = c
            else:
                _tell(piece, c, res, kept, on_chunk)
            reader.took(task, c.lines)
            first = False
    except BaseException:
        if written is not None:  # its write's error first; told if it was written
            assert isinstance(out, WriteBehind)
            told, written = written, None
            out.wait()
            _tell(piece, told, res, kept, on_chunk)
        raise
    if written is not None:
        assert isinstance(out, WriteBehind)
        out.wait()
        _tell(piece, written, res, kept, on_chunk)
    if kept is not None and (piece.parts > 1 or res.tally.differs):
        res.kept = b"".join(kept)


def _count(c: ChunkResult, res: PieceResult, first: bool) -> None:
    """A chunk's counts and rejects into its piece's ``res`` (the first chunk's counts are the
    piece's so far: a small file has no other chunk)."""
    if first:
        res.tally = c.tally
    else:
        res.tally.add(c.tally)
    res.rejects.extend(c.rejects)
    res.omitted += c.omitted


def _tell(piece: Piece, c: ChunkResult, res: PieceResult, kept: list[bytes] | None, on_chunk: OnChunk | None) -> None:
    """A chunk written: its output kept in ``kept``, the chunk handed to ``on_chunk`` (its details
    into ``res`` unless that took them)."""
    if kept is not None:
        kept.append(c.out)
    if not (on_chunk is not None and on_chunk(piece, c)):
        res.details.extend(c.details)
