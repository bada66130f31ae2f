"""The driver of a migration over pieces: plan the pieces (:func:`.partitions.plan`), hand
them to an executor (:mod:`.executors`: this process, a local process pool, or Dask), and as
results arrive commit the files **in walk order**, in batches of consecutive finished files:
the batch's rejects made durable in the rejects file (replacing earlier lines of the same
files), then each output's temporary moved over its destination. Workers read their own
pieces and write the temporaries; only counts, reject lines and temporary paths travel back.

Over 500 lines: the commit protocol's steps (walk order, rejects before outputs, backups,
ranged files put together, a stream's pieces) are one sequence on one object; split, their
order would have to be read across modules.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from ..diagnostics import Diagnostic
from . import fs as store
from .assembly import Assembly, finish_ranged
from .commit import CommitBatch
from .constants import ENCODER, EX_SOFTWARE, Mode
from .deferred import InputChangedError
from .executors import Executor, WorkerDiedError
from .files import BackupExistsError, Cleaner, clean_stale_temps, make_backup
from .partitions import SMALL_GROUP_FILES, TASK_FILES, Piece, PieceResult, RunSpec, plan, run_task
from .records import Migrator, RecordError, RejectRecord
from .rejects import RejectsFile
from .report import FileFailure, MigrationReport, Progress, StopRunError
from .session import session
from .stream import Stream
from .tally import Tally
from .walk import FileSpec, known_bytes
from .workers import ChunkResult

DEFAULT_PARTITION_BYTES = 64 * 1024 * 1024
"""Largest piece of work per task (small files are grouped up to it, large files cut to it)."""
MIN_PARTITION_BYTES = 1024 * 1024
"""Pieces are not made smaller than this to spread work (a task costs a few milliseconds)."""

_REJECT = msgspec.json.Decoder(RejectRecord)

OnDiagnostic = Callable[[str, int | None, Diagnostic | RecordError], None]
"""``migrate(on_diagnostic=...)``: told ``(file, line, item)`` for each record's details."""


def run_pieces(
    files: list[FileSpec],
    spec: RunSpec,
    executor: Callable[[], Executor],
    *,
    mig: Migrator,
    mode: Mode,
    unreadable: list[FileFailure],
    rejects: RejectsFile | None,
    rejects_shown: str | None,
    lock: Path | None,
    report: Path | None,
    out_path: str | None,
    max_errors: int | None,
    progress: Callable[[Progress], None] | None,
    partition_bytes: int | None,
    t0: float,
    backup: str | None = None,
    on_diagnostic: OnDiagnostic | None = None,
    on_output: Callable[[str, str, bytes], None] | None = None,
    stream: Stream | None = None,
) -> MigrationReport:
    """Run ``files`` as pieces on the executor ``executor()`` makes (started inside the run's
    session, closed when it ends): leftover temporaries of earlier runs in the output
    directories removed first, this run's own at the end. ``backup``: in place, the suffix of
    the original kept beside each file replaced; ``on_diagnostic``, ``on_output``: as for
    :func:`~envglot.migration.migrate`, called in walk order; ``stream``: the one of ``files``
    that is a stream (stdin), read in pieces when its turn comes (:mod:`.stream`)."""
    with session(
        mig=mig,
        mode=mode,
        jobs=1,
        files_total=len(files),
        failed=unreadable,
        rejects=rejects,
        rejects_shown=rejects_shown,
        lock=lock,
        report=report,
        t0=t0,
    ) as rep:
        out_dirs = store.parents(f.dst for f in files if f.dst is not None)
        writes = bool(out_dirs) and not spec.check
        if writes:
            rep.temp_files_removed += _sweep(spec, out_path, None, out_dirs)
        total = known_bytes(files)
        ex: Executor | None = None
        try:
            ex = executor()
            rep.jobs = ex.jobs
            if ex.on_this_machine and store.is_local(spec.dst_fs):  # one sync per commit batch, here
                spec = msgspec.structs.replace(spec, sync=False)
            most = partition_bytes or DEFAULT_PARTITION_BYTES
            least = min(MIN_PARTITION_BYTES, spec.chunk_bytes) if ex.cheap_tasks else MIN_PARTITION_BYTES
            target = min(most, max(least, total // max(1, ex.spread * ex.jobs)))
            at = len(files) if stream is None else stream.spec.index  # the files after a stream: once it is read
            taper = ex.jobs if ex.tapers and target > least else 0  # the last ranges small: the workers end together
            # in this process a task's results wait for its end to be committed: a few hundred files
            # a task keep them young (the garbage collector's oldest generation never holds thousands)
            most_files = SMALL_GROUP_FILES if ex.in_process else TASK_FILES
            tasks = plan(files[:at], target, max_files=most_files, cut=ex.cuts, taper=taper, least=least)
            later = plan(files[at + 1 :], target, max_files=most_files, cut=ex.cuts, taper=taper, least=least)
            Driver(
                rep, files, spec, ex, rejects, max_errors, progress, total, t0, backup, on_diagnostic, on_output, stream
            ).run(tasks, later)
        finally:
            if ex is not None:
                ex.close()  # no task runs on: none writes a temporary after the sweep
            if writes:
                _sweep(spec, out_path, spec.run, out_dirs)
    return rep


def _sweep(spec: RunSpec, out_path: str | None, run: str | None, dirs: set[str]) -> int:
    """Remove the temporaries of the run ``run`` in the output directories; how many. ``run=None``:
    on a local disk those of dead local runs (:func:`.files.clean_stale_temps`), and with
    ``out_path`` (a locked or object-store ``out``) those of any Dask run; in place, a live
    run's are left alone."""
    found = store.leftovers(spec.dst_fs, out_path or "", run, dirs) if run is not None or out_path is not None else []
    for p in found:
        store.remove(spec.dst_fs, p)
    if run is None and store.is_local(spec.dst_fs):
        return len(found) + sum(len(clean_stale_temps(d)) for d in sorted(dirs))
    return len(found)


class _FileState:
    """One ranged input file (of several pieces) on the client: its pieces' results until it is
    committed. A whole file has none: its one :class:`PieceResult` is its state (:attr:`Driver.whole`)."""

    __slots__ = ("assembly", "broken", "final", "parts", "results", "spec")

    def __init__(self, spec: FileSpec, parts: int) -> None:
        self.spec = spec
        self.parts = parts
        self.results: dict[int, PieceResult] = {}
        self.final: Any = None
        """``"ready"`` once committable, or a future of the ranged file's assembly."""
        self.assembly: Assembly | None = None
        """A ranged file's output put together here as its ranges come in (:meth:`Driver._assemble`)."""
        self.broken: str | None = None
        """Why that assembly stopped: the input changed under the run (the file fails as unreadable)."""

    def input_changed(self, error: str) -> None:
        """Fail the file as unreadable: its input changed under the run (said on its last range)."""
        last = self.results[self.parts - 1]
        last.error, last.error_code = error, 66


def _failed(parts: list[PieceResult]) -> PieceResult | None:
    """The first of a file's pieces that failed; None: none did."""
    for p in parts:
        if p.error:
            return p
    return None


def _renumber(line: bytes, offset: int) -> bytes:
    rec = _REJECT.decode(line)
    if rec.line is not None:
        rec.line += offset
    return ENCODER.encode(rec) + b"\n"


class Driver:
    """Submits the tasks to an executor, gathers pieces per file, commits finished files in walk order."""

    def __init__(
        self,
        rep: MigrationReport,
        files: list[FileSpec],
        spec: RunSpec,
        ex: Executor,
        rejects: RejectsFile | None,
        max_errors: int | None,
        progress: Callable[[Progress], None] | None,
        total: int,
        t0: float,
        backup: str | None = None,
        on_diagnostic: OnDiagnostic | None = None,
        on_output: Callable[[str, str, bytes], None] | None = None,
        stream: Stream | None = None,
    ) -> None:
        self.rep = rep
        self.stream = stream
        self.backup = backup
        self.cleaner = Cleaner()
        """Prepares a backup's directory when the backup is a copy (:func:`.files.make_backup`)."""
        self.files = files
        self.spec = spec
        self.ex = ex
        self.rejects = rejects
        self.max_errors = max_errors
        self.progress = progress
        self.total = total
        self.t0 = t0
        self.state: dict[int, _FileState] = {}
        """The ranged files not committed yet."""
        self.whole: dict[int, PieceResult] = {}
        """The whole files (one piece each) finished and not committed yet: their results, by index."""
        self.counted: list[Tally] = []
        """The counts of the files committed and not yet added to the report (:meth:`_settle`)."""
        self.batch: CommitBatch[FileSpec] = CommitBatch(spec.dst_fs)
        self.cursor = 0
        self.records_seen = 0
        self.bytes_seen = 0
        self.task_records = 0
        self.task_bytes = 0
        """Of the task running in this process so far (:meth:`_chunk_done`)."""
        self.files_seen = 0
        self.on_diagnostic = on_diagnostic
        self.on_output = on_output

    def run(self, tasks: list[list[Piece]], later: list[list[Piece]]) -> None:
        """Submit every task (``later``: those of the files after the stream, once it is read), then
        take the results as they come and commit in walk order."""
        stream = self.stream
        try:
            self._submit(tasks)
            while True:
                if stream is not None and self.cursor == stream.spec.index:
                    stream.feed(self.ex, self.spec)
                    if stream.read_all and later:
                        self._submit(later)
                        later = []
                if not self.ex.pending():
                    break
                tag, value, exc = self.ex.next()
                self.task_records = self.task_bytes = 0
                if exc is not None:
                    self._task_failed(tag, exc)
                elif tag[0] == "pieces":
                    for r in value:
                        self._piece_done(r)
                elif tag[0] == "stream":
                    assert stream is not None
                    stream.arrived(tag[2], value)
                else:
                    st = self.state[tag[1]]
                    tmp, error = value
                    if error:
                        st.input_changed(error)
                    st.final = ("ready", tmp)
                self._commit_ready()
                self._report_progress()
            self._commit_ready()
            self._flush()
        except StopRunError as stop:
            self.ex.cancel()
            if stream is not None:
                stream.abort(self)
            reason = stop.reason
            try:  # the files staged before the stop are complete: commit them
                self._flush()
            except StopRunError as late:
                reason = late.reason
            self.rep.stop(reason, (f.name for f in self.files[self.cursor :]))
        except BaseException as exc:
            self.ex.cancel()
            if stream is not None:
                stream.abort(self)
            reason = "stdout closed" if isinstance(exc, BrokenPipeError) else "interrupted"
            self.rep.stop(reason, (f.name for f in self.files[self.cursor :]))
            try:  # the files staged before the interruption are complete: commit them
                self._flush()
            except BaseException:  # a second Ctrl-C, or the flush failed: drop the rest
                self.batch.abort()
            raise
        finally:
            for st in self.state.values():  # a run that stopped: the files put together here left unfinished
                if st.assembly is not None:
                    st.assembly.abort()

    def _submit(self, tasks: list[list[Piece]]) -> None:
        for pieces in tasks:
            for p in pieces:
                if p.parts > 1 and p.file.index not in self.state:
                    self.state[p.file.index] = _FileState(p.file, p.parts)
            if (self.progress is not None or self.on_diagnostic is not None) and self.ex.in_process:
                self.ex.submit(run_task, self.spec, pieces, self._chunk_done, tag=("pieces", pieces))
            else:
                self.ex.submit(run_task, self.spec, pieces, tag=("pieces", pieces))

    def _task_failed(self, tag: Any, exc: BaseException) -> None:
        idx = [p.file.index for p in tag[1]] if tag[0] == "pieces" else [tag[1]]
        first = min(idx)
        self.cursor = min(self.cursor, first)
        self._commit_ready(upto=first)
        why = str(exc) if isinstance(exc, WorkerDiedError) else f"worker error: {type(exc).__name__}: {str(exc)[:200]}"
        for i in sorted(set(idx)):
            self.rep.failed.append(FileFailure(file=self.files[i].name, error=why, exit_code=EX_SOFTWARE))
        raise StopRunError(why)

    def _piece_done(self, r: PieceResult) -> None:
        self.records_seen += r.tally.records
        self.bytes_seen += r.disk
        st = self.state.get(r.file)
        if st is None:  # a whole file: committable as it is
            self.files_seen += 1
            self.whole[r.file] = r
            return
        st.results[r.part] = r
        self._assemble(st, r)
        if len(st.results) < st.parts:
            return
        self.files_seen += 1
        parts = [st.results[i] for i in range(st.parts)]
        changed = any(p.tally.differs for p in parts)
        if st.broken is not None and not any(p.error for p in parts):
            st.input_changed(st.broken)
        if self.spec.check or any(p.error for p in parts) or (self.spec.in_place and not changed):
            st.final = ("ready", None)
            return
        if st.assembly is not None:  # every range is in it
            a, st.assembly = st.assembly, None
            try:
                a.close()
            except OSError as exc:  # as the task's error would (finish_ranged)
                a.abort()
                self._task_failed(("final", st.spec.index), exc)
            st.final = ("ready", a.tmp)
            return
        st.final = "assembling"
        self.ex.submit(finish_ranged, self.spec, st.spec, parts, changed, tag=("final", r.file))

    def _assemble(self, st: _FileState, r: PieceResult) -> None:
        """On a local disk whose temporaries the run syncs itself (workers on this machine), put a
        changed ranged file together here as its ranges come in, in order, while the workers convert
        the rest (instead of one task after the last range: :func:`.assembly.finish_ranged`).
        The same bytes and the same outcomes as that task: an input changed under the run fails the
        file as unreadable, a write error stops the run as the task's error would."""
        spec = self.spec
        if spec.sync or spec.check or r.error or st.broken is not None:
            if r.error and st.assembly is not None:  # the file fails: no output
                st.assembly.abort()
                st.assembly = None
            return
        if st.assembly is None:
            if not any(p.tally.differs for p in st.results.values()) or any(p.error for p in st.results.values()):
                return  # not known to be changed (an unchanged file is the input's copy), or failed
            st.assembly = Assembly(spec, st.spec)
        a = st.assembly
        try:
            while a.added < st.parts and a.added in st.results:
                a.add(st.results[a.added])
        except InputChangedError as exc:  # the file fails as unreadable once its ranges are all in
            a.abort()
            st.assembly, st.broken = None, str(exc)
        except OSError as exc:
            a.abort()
            st.assembly = None
            self._task_failed(("final", st.spec.index), exc)

    def _commit_ready(self, upto: int | None = None) -> None:
        """Commit the consecutive finished files from the cursor (a stream's pieces taken when its
        turn comes, :meth:`.Stream.step`)."""
        self._commit_files(upto)
        s = self.stream
        while s is not None and self.cursor == s.spec.index and (upto is None or upto > self.cursor) and s.step(self):
            self.cursor += 1
            if self.batch.full():
                self._flush()
            self._commit_files(upto)

    def _commit_files(self, upto: int | None) -> None:
        """Commit the consecutive finished files from the cursor: rejects first, then outputs; their
        counts added to the report at the end (:meth:`_settle`)."""
        try:
            self._commit_finished(upto)
        finally:
            self._settle()

    def _commit_finished(self, upto: int | None) -> None:
        end = self.cursor
        limit = len(self.files) if upto is None else upto
        whole, state = self.whole, self.state
        while end < limit:
            if end not in whole:
                st = state.get(end)
                if st is None or not isinstance(st.final, tuple):
                    break
            end += 1
        if end == self.cursor:
            return
        batch: list[tuple[FileSpec, list[PieceResult], str | None]] = []
        stop: StopRunError | None = None
        stopped_at: tuple[FileSpec, list[PieceResult]] | None = None
        rejected = self.rep.rejected
        files = self.files
        for i in range(self.cursor, end):
            r = whole.get(i)
            if r is not None:
                spec, parts, tmp = files[i], [r], r.tmp
            else:
                st = state[i]
                spec, parts, tmp = st.spec, [st.results[k] for k in range(st.parts)], st.final[1]
            if self.max_errors is not None and _failed(parts) is None:
                n = sum(p.tally.rejected for p in parts)
                if rejected + n > self.max_errors:
                    self._count(parts)
                    where = self._limit_line(spec, parts, self.max_errors - rejected)
                    stop = StopRunError.max_errors(self.max_errors, where)
                    stopped_at = (spec, parts)
                    break
                rejected += n
            batch.append((spec, parts, tmp))
        details = self.on_diagnostic is not None
        kept_input = self.spec.in_place and self.backup is None  # a temporary may be dropped (_kept_input)
        backup, rejects, full = self.backup, self.rejects, self.batch.full
        try:
            for spec, parts, tmp in batch:
                if details:
                    self._report_details(spec, parts)
                bak: Path | None = None
                failed = _failed(parts) if len(parts) > 1 or parts[0].error else None
                if failed is None:
                    if kept_input:
                        tmp = self._kept_input(parts, tmp)
                    if tmp is not None and backup is not None:
                        bak = self._backup(spec, parts, tmp)
                        if bak is None:  # the file failed
                            self.cursor = spec.index + 1
                            self._forget(spec.index)
                            continue
                    if rejects is not None:
                        self._commit_rejects(spec, parts)  # durable before the output that omits them
                self._stage_file(spec, parts, failed, tmp, bak)
                self.cursor = spec.index + 1
                self._forget(spec.index)
                if full():
                    self._flush()
        except BaseException:
            self._flush()  # the files staged before the failure are complete: commit them
            raise
        if stopped_at is not None:  # the file is not written, but its rejects are (a re-run replaces them)
            self._flush()
            self._report_details(*stopped_at)
            self._commit_rejects(*stopped_at, stopped=True)
        if stop is not None:
            raise stop

    def _forget(self, index: int) -> None:
        """Drop a committed file's state."""
        if self.whole.pop(index, None) is None:
            self.state.pop(index, None)

    def _kept_input(self, parts: list[PieceResult], tmp: str | None) -> str | None:
        """The temporary to commit: none in place without a backup when a record too long to copy
        to the rejects file was omitted (its only copy is the input, which is kept)."""
        if tmp is not None and self.spec.in_place and self.backup is None and any(p.omitted for p in parts):
            store.remove(self.spec.dst_fs, tmp)
            return None
        return tmp

    def _backup(self, spec: FileSpec, parts: list[PieceResult], tmp: str) -> Path | None:
        """Keep the original of a file replaced in place (a link made durable by its commit batch);
        None: the backup exists and differs, the file fails (its temporary removed)."""
        assert self.backup is not None and spec.dst is not None
        try:
            bak = make_backup(Path(spec.dst), self.backup, self.cleaner, sync=False)
        except BackupExistsError as exc:
            store.remove(self.spec.dst_fs, tmp)
            self.rep.failed.append(FileFailure(file=spec.name, error=str(exc), exit_code=74))
            return None
        except OSError as exc:
            store.remove(self.spec.dst_fs, tmp)
            why = f"cannot write {spec.shown}: {exc.strerror or exc}"
            self.rep.failed.append(FileFailure(file=spec.name, error=why, exit_code=74))
            self.cursor = spec.index
            raise StopRunError(f"output error: cannot write {spec.shown}") from None
        self.rep.backups += 1
        return bak

    def _commit_rejects(self, spec: FileSpec, parts: list[PieceResult], stopped: bool = False) -> None:
        """A file's rejects, replacing its earlier ones; in place only if the file changed (an
        unchanged file holds only target records now: it keeps the rejects an earlier run wrote)
        or the run stopped in it (a re-run replaces them)."""
        if self.rejects is None:
            return
        if len(parts) > 1 or parts[0].rejects:
            self.rejects.add(self._reject_lines(parts))
        replace = stopped or not self.spec.in_place or any(p.tally.differs for p in parts)
        try:
            self.rejects.commit(spec.name, replace=replace)
        except OSError as exc:
            self.rep.failed.append(
                FileFailure(
                    file=spec.name,
                    error=f"cannot write rejects file {self.rejects.path}: {exc.strerror or exc}",
                    exit_code=74,
                )
            )
            self.cursor = spec.index
            raise StopRunError(f"output error: cannot write rejects file {self.rejects.path}") from None

    def _limit_line(self, spec: FileSpec, parts: list[PieceResult], k: int) -> str:
        line = self._reject_lines(parts)[k]
        n = _REJECT.decode(line).line
        return spec.name if n is None else f"{spec.name}:{n}"

    def _report_details(self, spec: FileSpec, parts: list[PieceResult]) -> None:
        """Hand a file's per-record details not handed over as they came to ``on_diagnostic``."""
        if self.on_diagnostic is None:
            return
        offset = 0
        for p in parts:
            for line, item in p.details:
                self.on_diagnostic(spec.name, line if line is None else line + offset, item)
            offset += p.lines

    def _reject_lines(self, parts: list[PieceResult]) -> list[bytes]:
        if len(parts) == 1:  # a whole file's lines are numbered already
            return [line for _, line in parts[0].rejects]
        out: list[bytes] = []
        offset = 0
        for p in parts:
            out.extend(line if offset == 0 else _renumber(line, offset) for _, line in p.rejects)
            offset += p.lines
        return out

    def _count(self, parts: list[PieceResult]) -> Tally:
        """A file's counts (the sum of its pieces', or its one piece's), added to the report with
        those of the other files committed at once (:meth:`_settle`)."""
        if len(parts) == 1:
            tally = parts[0].tally
        else:
            tally = Tally()
            tally.add_all([r.tally for r in parts])
        self.counted.append(tally)
        return tally

    def _settle(self) -> None:
        """Add the counts of the files committed since the last call to the report (in one
        :meth:`.Tally.add_all`): it is read again only after :meth:`_commit_ready`."""
        if self.counted:
            counted, self.counted = self.counted, []
            self.rep.add_all(counted)

    def _stage_file(
        self, spec: FileSpec, parts: list[PieceResult], err: PieceResult | None, tmp: str | None, bak: Path | None
    ) -> None:
        """Count a finished file and stage its output for the batch's commit, or record why it failed
        (``err``: its first piece that failed, :func:`_failed`)."""
        rep = self.rep
        if err is not None:
            for p in parts:
                if p.tmp is not None:
                    store.remove(self.spec.dst_fs, p.tmp)
            assert err.error is not None
            rep.failed.append(FileFailure(file=spec.name, error=err.error, exit_code=err.error_code))
            if err.error_code == 74:
                raise StopRunError(f"output error: {err.error}")
            return
        tally = self._count(parts)
        if self.on_output is not None and tally.differs and not (spec.doc and tally.rejected):
            self.on_output(spec.name, spec.src, b"".join(p.kept or b"" for p in parts))
        if tmp is not None and spec.dst is not None:  # made durable by its task (run_task, finish_ranged)
            # its mode was given when it was created (fs.open_output): the rename alone is left
            self.batch.add(tmp, spec.dst, spec, spec.size, bak, durable=self.spec.sync)  # else synced with its batch
        rep.file_done(spec.name, spec.shown, tally)

    def _flush(self) -> None:
        """Commit the staged outputs: the renames, then one fsync per directory (on a local disk)."""
        self.batch.flush(self.rep, lambda f: (f.name, f.dst or ""))

    def _chunk_done(self, piece: Piece, c: ChunkResult) -> bool:
        """A chunk of the task running in this process is done: progress within the task, and the
        details of a whole file's chunk handed over at once (tasks run here in walk order); True
        when they were."""
        self.task_records += c.tally.records
        self.task_bytes += c.tally.bytes_in
        self._report_progress()
        if self.on_diagnostic is None or piece.parts > 1:
            return False
        for line, item in c.details:
            self.on_diagnostic(piece.file.name, line, item)
        return True

    def _report_progress(self) -> None:
        if self.progress is None:
            return
        done = self.bytes_seen + self.task_bytes
        self.progress(
            Progress(
                records=self.records_seen + self.task_records,
                bytes_done=min(done, self.total) if self.stream is None else done,
                bytes_total=self.total if self.stream is None else None,  # a stream's size is not known
                files_done=self.files_seen,
                files_total=len(self.files),
                elapsed_s=time.monotonic() - self.t0,
                bytes_in=self.rep.bytes_in,
            )
        )
