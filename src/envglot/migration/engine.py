"""Local runs: walks local paths (and stdin) and checks the destinations; ``--out``,
``--check`` and in-place runs of files go to the piece driver (:func:`~.driver.run_pieces`, over
:class:`~.executors.Inline` or :class:`~.executors.Pool`). A run with stdin (``-``) still runs
the local chunk loop here: it reads the inputs in
chunks, hands each chunk to the executor, writes and commits the outputs and rejects in walk
order, and keeps the report."""

from __future__ import annotations

import os
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from ..diagnostics import Diagnostic
from ..excerpt import display_path as display
from .commit import CommitBatch
from .constants import Mode
from .deferred import InputChangedError
from .driver import run_pieces
from .executors import Inline, Pool, cpus
from .files import (
    AtomicOutput,
    Cleaner,
    MigrationError,
    copy_to_temp,
    discard_temp,
)
from .fs import run_id
from .inputs import InputLimits, Task
from .output import Sink
from .partitions import RunSpec
from .reading import Chunk, End, Event, ReadFailure, Start, produce
from .records import Migrator, RecordError
from .rejects import RejectsFile
from .report import FileFailure, MigrationReport, Progress, StopRunError
from .session import session
from .walk import FileSpec, Job, check_destinations, check_rejects_path, default_rejects, walk_inputs
from .workers import ChunkResult, TempTarget, migrator_for


class _Pending(msgspec.Struct):
    job: Job
    task: Task
    disk_pos: int
    result: Future[ChunkResult]
    """From the executor (inline: already done)."""


def run_local(
    names: list[str],
    *,
    mode: Mode,
    mig: Migrator,
    options: dict[str, Any],
    out: Path | None,
    rejects: Path | None,
    report: Path | None,
    skip: Sequence[Path],
    include: Sequence[str],
    exclude: Sequence[str],
    backup: str | None,
    jobs: int | None,
    style: str,
    max_errors: int | None,
    chunk_bytes: int,
    progress: Callable[[Progress], None] | None,
    stdin: BinaryIO | None,
    stdout: BinaryIO | None,
    limits: InputLimits,
    on_diagnostic: Callable[[str, int | None, Diagnostic | RecordError], None] | None,
    on_output: Callable[[str, str, bytes], None] | None,
    t0: float,
) -> MigrationReport:
    """Run :func:`~envglot.migration.migrate` on this machine (options already checked): walk the
    inputs, then read, convert (``Inline`` or ``Pool``), write and commit them in walk order."""
    out_dir = out
    if out_dir is not None:
        for n in names:
            if n != "-" and Path(n).is_dir() and Path(n).resolve() == out_dir.resolve():
                raise MigrationError(f"out directory {out_dir} is an input; use in_place=True instead", 2)
        if out_dir.exists() and not out_dir.is_dir():
            raise MigrationError(f"{out_dir} exists and is not a directory", 74)
    rejects_path = rejects if rejects is not None else default_rejects(mode, names, out_dir)
    if rejects_path is not None:
        check_rejects_path(rejects_path, out_dir if mode == "out" else None)
    skipped: set[Path] = set()
    for p in (rejects_path, report, *skip):
        if p is not None:
            skipped.add(p.resolve())
    job_list, unreadable = walk_inputs(
        names,
        out_dir if mode == "out" else None,
        include,
        exclude,
        skipped,
        (backup or "") if mode == "in-place" else None,
        limits.follow_symlinks,
    )
    if mode == "out":
        check_destinations(job_list)
    if mode == "check":
        for j in job_list:
            j.dst = None
    n_jobs = max(1, jobs if jobs is not None else cpus())
    total_disk = sum(j.size for j in job_list) if all(j.src is not None for j in job_list) else None
    use_pool = n_jobs > 1 and (total_disk is None or total_disk > chunk_bytes)
    root = out_dir if mode == "out" else None
    if mode in ("out", "check", "in-place") and "-" not in names:
        return run_pieces(
            [_file_spec(i, j) for i, j in enumerate(job_list)],
            RunSpec(
                run=run_id(dask=False),
                options=options,
                style=style,
                chunk_bytes=chunk_bytes,
                check=mode == "check",
                src_fs=None,
                dst_fs=None,
                limits=limits,
                root=os.fspath(root) if root is not None else None,
                sync=False,  # one sync per commit batch, here
                in_place=mode == "in-place",
                keep=on_output is not None,
            ),
            (lambda: Pool(n_jobs, options, chunk_bytes)) if use_pool else Inline,
            mig=migrator_for(options, mig),  # the run's own, for the tasks run in this process
            mode=mode,
            unreadable=unreadable,
            rejects=RejectsFile(rejects_path) if rejects_path is not None else None,
            rejects_shown=display(rejects_path) if rejects_path is not None else None,
            lock=root,
            report=report,
            out_path=os.fspath(root) if root is not None else None,
            max_errors=max_errors,
            progress=progress,
            partition_bytes=None,
            t0=t0,
            backup=backup,
            on_diagnostic=on_diagnostic,
            on_output=on_output,
        )
    rejects_file = RejectsFile(rejects_path)
    with session(
        mig=mig,
        mode=mode,
        jobs=n_jobs if use_pool else 1,
        files_total=len(job_list),
        failed=unreadable,
        rejects=rejects_file,
        rejects_shown=display(rejects_path) if rejects_path is not None else None,
        lock=root,
        report=report,
        t0=t0,
    ) as rep:
        local = _Engine(
            rep=rep,
            jobs=job_list,
            mode=mode,
            rejects=rejects_file,
            max_errors=max_errors,
            progress=progress,
            total_disk=total_disk,
            t0=t0,
            stdout=stdout if stdout is not None or mode != "stdout" else sys.stdout.buffer,
            root=root,
            limits=limits,
            on_diagnostic=on_diagnostic,
            on_output=on_output,
        )
        src_stream = stdin if stdin is not None else (sys.stdin.buffer if "-" in names else None)
        tasks = produce(job_list, chunk_bytes, style, src_stream, limits)
        try:
            ex = Pool(n_jobs, options, chunk_bytes) if use_pool else Inline(mig)
            try:
                local.run(tasks, ex)
            finally:
                ex.close()
                if use_pool and (rep.stopped is not None or sys.exc_info()[0] is not None):
                    local.cleaned.sweep()
        finally:
            rep.temp_files_removed += local.cleaned.removed
    return rep


def _file_spec(index: int, job: Job) -> FileSpec:
    """A walked local file as the piece driver names it."""
    assert job.src is not None
    dst = os.fspath(job.dst) if job.dst is not None else None
    perm = job.perm if job.perm >= 0 else None
    shown = display(job.dst) if job.dst is not None else None
    return FileSpec(index, job.name, os.fspath(job.src), dst, job.doc, job.gz, job.size, perm, shown)


class _Engine:
    """The consumer side: takes results in order, writes outputs, commits files, keeps counts."""

    def __init__(
        self,
        *,
        rep: MigrationReport,
        jobs: list[Job],
        mode: Mode,
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
        self.rejects = rejects
        self.max_errors = max_errors
        self.progress = progress
        self.total_disk = total_disk
        self.t0 = t0
        self.stdout = stdout
        self.cleaned = Cleaner(root)
        self.sink: Sink | None = None
        self.dropped: Job | None = None
        """A file that failed part-way: the rest of its chunks are not used."""
        self.batch: CommitBatch[Job] = CommitBatch()
        self.index = 0
        self.done_disk = 0
        self.files_done = 0

    def run(self, events: Iterator[Event], ex: Inline | Pool) -> None:
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
                if isinstance(ev, Chunk):
                    result = ex.chunk(ev.task, target)
                    pending.append(_Pending(job=ev.job, task=ev.task, disk_pos=ev.disk_pos, result=result))
                    in_flight += 1
                else:
                    if isinstance(ev, Start):
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
            reason = stop.reason
            try:  # the files that ended before the stop are complete: commit them
                self._flush()
            except StopRunError as late:
                reason = late.reason
            self.rep.stop(reason, (j.name for j in self.jobs[self.index :]))
        except BaseException as exc:
            self._abort_current()
            _cancel(pending)
            reason = "stdout closed" if isinstance(exc, BrokenPipeError) else "interrupted"
            self.rep.stop(reason, (j.name for j in self.jobs[self.index :]))
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
        if self.mode != "out" or job.dst is None or job.src is None or job.gz:
            return None
        try:
            self.cleaned.visit(os.path.dirname(job.dst) or ".")
        except OSError:
            return None
        return TempTarget(dst=job.dst, perm=job.perm if job.perm >= 0 else None, owner=os.getpid())

    def _stage(self, out: AtomicOutput, mode: int | None, job: Job) -> None:
        """Queue a closed temporary for the next commit batch (its rejects are durable already)."""
        self.batch.add(out, mode, job, job.size)
        if self.batch.full():
            self._flush()

    def _flush(self) -> None:
        """Commit the batch: one sync, the renames, one fsync per directory."""
        self.batch.flush(self.rep, lambda j: (j.name, display(j.dst or "")))

    def _abort_current(self) -> None:
        if self.sink is not None and self.sink.atomic is not None:
            self.sink.atomic.abort()
        self.sink = None
        self.rejects.discard()

    def _consume(self, ev: Any) -> None:
        if isinstance(ev, Start):
            self.index = ev.index
            try:
                self.sink = Sink(ev.job, self.mode, self.cleaned, self.stdout, self.limits, self.on_output is not None)
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
        elif isinstance(ev, End):
            if self.dropped is not ev.job:
                self._end(ev.job)
        elif isinstance(ev, ReadFailure):
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
                if not changed and sink.atomic is None:  # nothing was written: the input's own bytes are copied
                    self._commit_rejects(job, changed)
                    if self.mode == "out" and job.src is not None:
                        copy = copy_to_temp(job.src, job.dst, self.cleaned)
                        self._stage(copy, job.perm if job.perm >= 0 else None, job)
                elif job.doc and sink.tally.rejected:  # a rejected document leaves no output file
                    if sink.atomic is not None:
                        sink.atomic.abort()
                    self._commit_rejects(job, changed)
                else:
                    assert sink.atomic is not None, "a changed file's output was started at its first change"
                    self._commit_rejects(job, changed)  # durable before the output that omits them
                    mode = job.perm if job.src is not None and job.perm >= 0 else None
                    sink.atomic.close(durable=False, perm=mode)
                    self._stage(sink.atomic, mode, job)  # one sync per batch, then the renames
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
        """Step (a) of a file's commit: its rejects, replacing its earlier ones (``--out``, ``--check``).

        Streamed to stdout, the output cannot be held back: each chunk's rejects are appended
        before its output is written.
        """
        replace = self.mode in ("out", "check")
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
