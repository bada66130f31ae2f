"""Commit batches of the local engine: many outputs made durable by one sync, then renamed.

The protocol (``docs/migration.md``, "Atomicity and interruption", step 6): each file's
rejects are made durable when the file ends, before its output is staged here; a batch
then (1) makes every staged temporary durable with one ``syncfs`` per file system (an
fsync each where ``syncfs`` is missing), (2) fsyncs the directories of the backups made
for it (the links are durable before the originals are replaced), (3) renames each
temporary over its destination and (4) fsyncs each directory once. A crash at any point
leaves every destination old or complete, as with two fsyncs per file.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from .constants import TEST_BATCH_ENV
from .files import AtomicOutput
from .fs import sync_local_dirs, sync_local_files
from .walk import Job

BATCH_FILES = 1000
"""A batch is committed once it holds this many files ..."""
BATCH_BYTES = 64 * 1024 * 1024
"""... or this many output bytes ..."""
BATCH_SECONDS = 5.0
"""... or its first file was staged this long ago (checked when a file is staged)."""


class _Staged:
    __slots__ = ("job", "mode", "out")

    def __init__(self, out: AtomicOutput, mode: int | None, job: Job) -> None:
        self.out = out
        self.mode = mode
        self.job = job


class CommitBatch:
    """Closed, not yet durable temporaries waiting for one sync and their renames."""

    def __init__(self) -> None:
        test = os.environ.get(TEST_BATCH_ENV, "")
        self.max_files = int(test) if test.isdigit() and int(test) > 0 else BATCH_FILES
        self.staged: list[_Staged] = []
        self.backups: list[str] = []
        self.bytes = 0
        self.since = 0.0

    def __len__(self) -> int:
        return len(self.staged)

    def add(self, out: AtomicOutput, mode: int | None, job: Job, size: int, backup: Path | None = None) -> None:
        """Stage a closed temporary (``out.close(durable=False)``); ``backup``: a link made for it."""
        if not self.staged:
            self.since = time.monotonic()
        self.staged.append(_Staged(out, mode, job))
        if backup is not None:
            self.backups.append(str(backup))
        self.bytes += max(size, 0)

    def full(self) -> bool:
        return (
            len(self.staged) >= self.max_files
            or self.bytes >= BATCH_BYTES
            or time.monotonic() - self.since >= BATCH_SECONDS
        )

    def commit(self, done: Callable[[Job], None]) -> None:
        """Sync, then rename every staged file; ``done`` is called for each once its rename is durable.

        Raises:
            OSError: a sync or a rename failed; the files not yet renamed stay staged (see :meth:`abort`).
        """
        if not self.staged:
            return
        sync_local_files([str(s.out.tmp) for s in self.staged])
        if self.backups:
            sync_local_dirs(self.backups)
            self.backups = []
        renamed: list[_Staged] = []
        try:
            while self.staged:
                s = self.staged[0]
                s.out.rename(s.mode)
                renamed.append(self.staged.pop(0))
        finally:
            sync_local_dirs([str(s.out.dst) for s in renamed])
            for s in renamed:
                done(s.job)
            if not self.staged:
                self.bytes = 0

    def abort(self) -> list[Job]:
        """Delete the staged temporaries (their destinations are untouched); returns their jobs."""
        jobs = [s.job for s in self.staged]
        for s in self.staged:
            s.out.abort()
        self.staged = []
        self.backups = []
        self.bytes = 0
        return jobs
