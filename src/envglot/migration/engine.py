"""Local runs: walk local paths (and stdin), check the destinations, and run the piece driver
(:func:`~.driver.run_pieces`) over :class:`~.executors.Inline` (``-j 1``) or
:class:`~.executors.Pool` (``-j N``); stdin is its stream input (:class:`~.stream.Stream`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from ..diagnostics import Diagnostic
from ..excerpt import display_path as display
from .constants import Mode
from .driver import run_pieces
from .executors import Inline, Pool, cpus
from .files import MigrationError
from .fs import run_id
from .inputs import InputLimits
from .partitions import RunSpec
from .reading import produce
from .records import Migrator, RecordError
from .rejects import RejectsFile
from .report import MigrationReport, Progress
from .stream import Stream
from .walk import FileSpec, Job, check_destinations, check_rejects_path, default_rejects, walk_inputs
from .workers import migrator_for


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
    sized = all(j.src is not None for j in job_list)  # a stream's size is not known
    use_pool = n_jobs > 1 and (not sized or sum(j.size for j in job_list) > chunk_bytes)
    root = out_dir if mode == "out" else None
    specs = [_file_spec(i, j) for i, j in enumerate(job_list)]
    stream: Stream | None = None
    if not sized:
        at = next(i for i, j in enumerate(job_list) if j.src is None)
        src = stdin if stdin is not None else sys.stdin.buffer
        to = (stdout if stdout is not None else sys.stdout.buffer) if mode == "stdout" else None
        stream = Stream(specs[at], produce([job_list[at]], chunk_bytes, style, src, limits), to)
    return run_pieces(
        specs,
        RunSpec(
            run=run_id(dask=False),
            options=options,
            style=style,
            chunk_bytes=chunk_bytes,
            check=mode == "check",
            limits=limits,
            root=os.fspath(root) if root is not None else None,
            in_place=mode == "in-place",
            keep=on_output is not None,
        ),
        (lambda: Pool(n_jobs, options)) if use_pool else Inline,
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
        stream=stream,
    )


def _file_spec(index: int, job: Job) -> FileSpec:
    """A walked local file (or stdin, ``-``) as the piece driver names it."""
    dst = job.dst
    perm = job.perm if job.perm >= 0 else None
    shown = dst if dst is None or dst.isascii() else display(dst)  # an ASCII name is shown as it is
    src = job.src if job.src is not None else "-"
    return FileSpec(index, job.name, src, dst, job.doc, job.gz, job.size, perm, shown)
