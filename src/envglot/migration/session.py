"""A run's life, the same for every executor: the ``--out`` lock held, the report begun, and at the
end (however the run ends) the rejects file closed, the report finished and written."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from .constants import Mode
from .files import write_report
from .lock import OutLock
from .records import Migrator
from .rejects import RejectsFile
from .report import FileFailure, MigrationReport


@contextlib.contextmanager
def session(
    *,
    mig: Migrator,
    mode: Mode,
    jobs: int,
    files_total: int,
    failed: list[FileFailure],
    rejects: RejectsFile | None,
    rejects_shown: str | None,
    lock: Path | None,
    report: Path | None,
    t0: float,
) -> Iterator[MigrationReport]:
    """Hold the lock on ``lock`` (a local ``--out``; None: no lock), give the run its report, and
    finish both when it ends: the rejects file closed (its stale temporaries counted), the
    timings and exit code set, the report written to ``report`` (never through a link under
    ``lock``)."""
    with OutLock(lock) if lock is not None else contextlib.nullcontext():
        rep = MigrationReport(
            target=mig.to,
            source=mig.from_,
            mode=mode,
            jobs=jobs,
            files_total=files_total,
            rejects_file=rejects_shown,
            failed=failed,
        )
        try:
            yield rep
        finally:
            if rejects is not None:
                rejects.close()
                rep.temp_files_removed += rejects.removed
            rep.finish(t0)
            if report is not None:
                write_report(report, rep, lock)
