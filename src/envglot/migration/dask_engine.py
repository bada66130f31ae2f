"""``migrate(..., engine="dask")``: the inputs walked (local paths or fsspec URLs), then the
one piece driver (:mod:`.driver`) over a Dask executor — a ``distributed`` cluster or
Dask's synchronous scheduler in this process. Outputs, rejects, the report and the exit
code are those of the local executors on the same input.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import fs as store
from .constants import DEFAULT_CHUNK_BYTES, REJECTS_NAME
from .driver import run_pieces
from .executors import dask_executor
from .files import MigrationError
from .inputs import InputLimits
from .partitions import RunSpec
from .records import rebuild_migrator
from .rejects import RejectsFile
from .report import MigrationReport, Progress
from .walk import check_specs, walk_specs


def migrate_dask(
    names: list[str],
    *,
    mode: str,
    options: dict[str, Any],
    out: str | None,
    rejects: str | None,
    report: str | None,
    include: Sequence[str] | None,
    exclude: Sequence[str],
    style: str,
    max_errors: int | None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    progress: Callable[[Progress], None] | None = None,
    client: Any = None,
    scheduler: str | None = None,
    workers: int | None = None,
    partition_bytes: int | None = None,
    storage_options: dict[str, Any] | None = None,
    notice: Callable[[str], None] | None = None,
    t0: float,
    limits: InputLimits | None = None,
) -> MigrationReport:
    """Run :func:`~envglot.migration.migrate` with ``engine="dask"`` (options already checked)."""
    if mode not in ("out", "check") or "-" in names:
        raise MigrationError("the dask engine writes to out= (or checks); in_place and stdin need engine='local'", 2)
    limits = limits or InputLimits()
    mig = rebuild_migrator(options["to"], {k: v for k, v in options.items() if k != "to"})
    src_fs, files, unreadable = walk_specs(
        names, out, include, exclude, rejects, storage_options, mode, limits.follow_symlinks
    )
    dst_fs, out_path = store.resolve(out, storage_options) if out is not None else (src_fs, "")
    if out is not None and mode == "out":
        check_specs(files, src_fs, dst_fs, out, out_path)
    local_out = Path(out_path) if mode == "out" and out is not None and store.is_local(dst_fs) else None
    rej_name = rejects if rejects is not None else (store.join(out, REJECTS_NAME) if mode == "out" and out else None)
    run = store.run_id(dask=True)
    rej_file = None
    if rej_name is not None:
        rfs, rpath = store.resolve(rej_name, storage_options)
        rej_file = RejectsFile(rpath, None if store.is_local(rfs) else rfs, run)
    spec = RunSpec(
        run=run,
        options=options,
        style=style,
        chunk_bytes=chunk_bytes,
        check=mode == "check",
        src_fs=src_fs,
        dst_fs=dst_fs,
        limits=limits,
    )
    return run_pieces(
        files,
        spec,
        lambda: dask_executor(client, scheduler, workers, notice),
        mig=mig,
        mode=mode,  # type: ignore[arg-type]
        unreadable=unreadable,
        rejects=rej_file,
        rejects_shown=rej_name,
        lock=local_out,
        report=Path(report) if report is not None else None,
        out_path=out_path if mode == "out" else None,
        max_errors=max_errors,
        progress=progress,
        partition_bytes=partition_bytes,
        t0=t0,
    )
