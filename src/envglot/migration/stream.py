"""A stream input (stdin, ``-``) on the piece driver (:mod:`.driver`).

A stream can be read only once, and only by the driver's process: when its turn in walk
order comes (every file before it committed), the driver reads it with the reader of every
input (:func:`.reading.produce`) and cuts it at line ends into pieces of about
``chunk_bytes`` (a record longer than ``max_record_bytes`` is counted, never held). Each
piece's bytes go to the executor; its output comes back as bytes (an unchanged piece's as a
flag: the driver still has them). The driver takes the pieces in order and writes each one's
output as it comes — to stdout, or to the output's temporary (``--out``: committed with its
commit batch when the stream ends) — so memory is bounded by the pieces in flight
(:func:`in_flight`) and no disk is used besides the output.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, BinaryIO, NoReturn

from ..excerpt import display_path as display
from . import fs as store
from .executors import Executor
from .inputs import Task
from .partitions import RunSpec
from .reading import Chunk, End, Event, ReadFailure
from .report import FileFailure, StopRunError
from .tally import Tally
from .walk import FileSpec
from .workers import ChunkResult, migrate_chunk, migrator_for

if TYPE_CHECKING:
    from .driver import Driver

MAX_IN_FLIGHT_BYTES = 16 * 1024 * 1024
"""The pieces of a stream in flight in a process pool hold at most this many bytes (at least 2 pieces)."""


def in_flight(ex: Executor, chunk_bytes: int) -> int:
    """Pieces of a stream submitted and not yet taken, at most: 1 when tasks run in this process;
    else one more than the workers, bounded by :data:`MAX_IN_FLIGHT_BYTES` (at least 2)."""
    return 1 if ex.in_process else max(2, min(ex.jobs + 1, MAX_IN_FLIGHT_BYTES // chunk_bytes))


def run_stream_piece(spec: RunSpec, task: Task) -> ChunkResult:
    """A task: migrate one piece of a stream; an unchanged piece's output is not sent back (the
    driver has its bytes)."""
    res = migrate_chunk(migrator_for(spec.options), task)
    if not res.tally.differs and res.out == task.data:
        res.out, res.same = b"", True
    return res


class Stream:
    """A stream input of a run: read in pieces once the driver reaches it, its pieces taken in order.

    ``events``: its reader (:func:`.reading.produce` over the one stream); ``stdout``: where its
    output goes in a run to stdout (else to ``spec.dst``, or nowhere in a dry run).
    """

    def __init__(self, spec: FileSpec, events: Iterator[Event], stdout: BinaryIO | None) -> None:
        self.spec = spec
        self.events = events
        self.stdout = stdout
        self.sent = 0
        """Pieces submitted."""
        self.taken = 0
        """Pieces taken (in order)."""
        self.tasks: dict[int, Task] = {}
        """The pieces submitted and not taken (an unchanged piece's output is its own bytes)."""
        self.results: dict[int, ChunkResult] = {}
        """Pieces done, waiting for those before them."""
        self.read_all = False
        self.failure: str | None = None
        """Why the stream could not be read to its end."""
        self.tally = Tally()
        """The stream's counts so far."""
        self.out: IO[bytes] | None = None
        """The output's temporary (``--out``), opened at the first piece."""
        self.tmp = ""

    def feed(self, ex: Executor, run: RunSpec) -> None:
        """Read and submit pieces while fewer than :func:`in_flight` are submitted and not taken."""
        limit = in_flight(ex, run.chunk_bytes)
        while not self.read_all and self.sent - self.taken < limit:
            ev = next(self.events, None)
            if ev is None or isinstance(ev, End):
                self.read_all = True
            elif isinstance(ev, ReadFailure):
                self.read_all, self.failure = True, ev.error
            elif isinstance(ev, Chunk):
                self.tasks[self.sent] = ev.task
                ex.submit(run_stream_piece, run, ev.task, tag=("stream", self.spec.index, self.sent))
                self.sent += 1

    def arrived(self, n: int, res: ChunkResult) -> None:
        """The ``n``-th piece is done."""
        self.results[n] = res

    def step(self, drv: Driver) -> bool:
        """Take the pieces done, in order: output written, counted, rejects collected; True once
        the stream has ended and its file is committed (its output staged in the driver's batch)."""
        while self.taken in self.results:
            res = self.results.pop(self.taken)
            task = self.tasks.pop(self.taken)
            self.taken += 1
            self._take(drv, task, res)
        if not self.read_all or self.taken < self.sent:
            return False
        self._end(drv)
        return True

    def _take(self, drv: Driver, task: Task, res: ChunkResult) -> None:
        rep, rejects, name = drv.rep, drv.rejects, self.spec.name
        if rejects is not None:
            try:
                rejects.add([line for _, line in res.rejects])
            except OSError as exc:
                self._fail(drv, exc, "a temporary file for its rejects")
            if self.stdout is not None and res.rejects:  # an output streamed cannot wait for the end
                self._commit_rejects(drv, replace=False)
        try:
            self._write(drv.spec, task.data if res.same else res.out)
        except OSError as exc:
            self._fail(drv, exc)
        rep.add(res.tally)
        self.tally.add(res.tally)
        drv.records_seen += res.tally.records
        drv.bytes_seen += res.tally.bytes_in
        if drv.on_diagnostic is not None:
            for line, item in res.details:
                drv.on_diagnostic(name, line, item)
        limit = drv.max_errors
        if limit is not None and rep.rejected > limit:
            line = res.rejects[limit - (rep.rejected - res.tally.rejected)][0]
            # the stream is not written, but its rejects so far are (a re-run replaces them)
            self._commit_rejects(drv, replace=self.stdout is None)
            raise StopRunError.max_errors(limit, name if line is None else f"{name}:{line}")

    def _write(self, run: RunSpec, b: bytes) -> None:
        if self.stdout is not None:
            self.stdout.write(b)
        elif self.spec.dst is not None:  # it cannot be read again: written as it comes
            if self.out is None:
                self.tmp = store.temp_path(self.spec.dst, run.run, str(self.spec.index))
                self.out = store.open_write(None, self.tmp, run.root, mode=None, run=run.run)
            self.out.write(b)

    def _end(self, drv: Driver) -> None:
        spec, rep = self.spec, drv.rep
        drv.files_seen += 1
        if self.failure is not None:
            self.abort(drv)
            rep.failed.append(FileFailure(file=spec.name, error=self.failure, exit_code=66))
            return
        self._commit_rejects(drv, replace=self.stdout is None)  # durable before the output that omits them
        try:
            if self.out is not None:
                assert spec.dst is not None
                self.out.close()  # made durable by its commit batch
                self.out = None
                drv.batch.add(self.tmp, spec.dst, spec, self.tally.bytes_out)
            elif self.stdout is not None:
                self.stdout.flush()
                rep.files_written += 1
        except OSError as exc:
            self._fail(drv, exc)
        rep.file_done(spec.name, spec.shown, self.tally)

    def _commit_rejects(self, drv: Driver, replace: bool) -> None:
        """The stream's rejects collected so far, made durable (with ``replace``: instead of its earlier ones)."""
        if drv.rejects is None:
            return
        try:
            drv.rejects.commit(self.spec.name, replace)
        except OSError as exc:
            self._fail(drv, exc, f"rejects file {display(drv.rejects.path or '')}")

    def _fail(self, drv: Driver, exc: OSError, what: str | None = None) -> NoReturn:
        """An output error: the stream fails (exit 74) and the run stops; a closed stdout is raised
        as it is (the caller ends quietly: the CLI's exit 141)."""
        self.abort(drv)
        if isinstance(exc, BrokenPipeError) and what is None and self.stdout is not None:
            raise exc
        target = what or self.spec.shown or "<stdout>"
        error = f"cannot write {target}: {exc.strerror or exc}"
        drv.rep.failed.append(FileFailure(file=self.spec.name, error=error, exit_code=74))
        raise StopRunError(f"output error: cannot write {target}") from None

    def abort(self, drv: Driver) -> None:
        """Drop the output and the rejects not committed (the stream is not committed)."""
        if self.out is not None:
            out, self.out = self.out, None
            with contextlib.suppress(OSError):
                out.close()
            store.remove(None, self.tmp)
        if drv.rejects is not None:
            drv.rejects.discard()
