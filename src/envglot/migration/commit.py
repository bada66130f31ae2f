"""Commit batches, for both drivers: many outputs made durable by one sync, then renamed.

The protocol (``docs/migration.md``, "Atomicity and interruption", step 6): each file's
rejects are made durable when the file ends, before its output is staged here; a batch
then (1) makes every staged temporary durable with one ``syncfs`` per file system (an
fsync each where ``syncfs`` is missing), (2) fsyncs the directories of the backups made
for it (the links are durable before the originals are replaced), (3) renames each
temporary over its destination and (4) fsyncs each directory once. A crash at any point
leaves every destination old or complete, as with two fsyncs per file. The Dask driver stages
the temporaries its tasks wrote (durable already, on a local disk or an object store) and commits
each run of consecutive finished files as one batch.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

from . import fs as store
from .constants import TEST_BATCH_ENV
from .fs import sync_local_dirs, sync_local_files
from .report import FileFailure, MigrationReport, StopRunError

BATCH_FILES = 1000
"""A batch is committed once it holds this many files ..."""
BATCH_BYTES = 64 * 1024 * 1024
"""... or this many output bytes ..."""
BATCH_SECONDS = 5.0
"""... or its first file was staged this long ago (checked when a file is staged)."""


J = TypeVar("J")


class CommitBatch(Generic[J]):
    """Closed temporaries waiting for one sync (those not durable yet) and their renames; ``J``:
    what the driver calls a file (given back by :meth:`commit` and :meth:`abort`).

    ``fs``: the file system or object store of the temporaries and their destinations (their
    directories are fsynced only on a local disk); None: local paths. A staged file is the tuple
    ``(temporary, destination, job, durable)``: no object of its own.
    """

    def __init__(self, fs: Any = None) -> None:
        test = os.environ.get(TEST_BATCH_ENV, "")
        self.max_files = int(test) if test.isdigit() and int(test) > 0 else BATCH_FILES
        self.fs = fs
        self.staged: list[tuple[str, str, J, bool]] = []
        self.backups: list[str] = []
        self.bytes = 0
        self.since = 0.0

    def __len__(self) -> int:
        return len(self.staged)

    def add(self, tmp: str, dst: str, job: J, size: int, backup: Path | None = None, durable: bool = False) -> None:
        """Stage the closed temporary ``tmp`` (not synced, or ``durable``: synced by whoever wrote
        it) to be moved over ``dst``, its mode given when it was created; ``backup``: a link made
        for it."""
        if not self.staged:
            self.since = time.monotonic()
        self.staged.append((tmp, dst, job, durable))
        if backup is not None:
            self.backups.append(str(backup))
        if size > 0:  # -1: unknown
            self.bytes += size

    def full(self) -> bool:
        return (
            len(self.staged) >= self.max_files
            or self.bytes >= BATCH_BYTES
            or time.monotonic() - self.since >= BATCH_SECONDS
        )

    def commit(self, done: Callable[[J], None]) -> None:
        """Sync, then rename every staged file; ``done`` is called for each once its rename is durable.

        Raises:
            OSError: a sync or a rename failed; the files not yet renamed stay staged (see :meth:`abort`).
        """
        if not self.staged:
            return
        if waiting := [tmp for tmp, _, _, durable in self.staged if not durable]:
            sync_local_files(waiting)
        if self.backups:
            sync_local_dirs(self.backups)
            self.backups = []
        n = 0
        move = self.move
        try:
            for tmp, dst, _, _ in self.staged:
                move(tmp, dst)
                n += 1
        finally:
            renamed, self.staged = self.staged[:n], self.staged[n:]
            dsts = [dst for _, dst, _, _ in renamed]
            if self.fs is None:
                sync_local_dirs(dsts)
            else:
                store.sync_dirs(self.fs, dsts)
            for _, _, job, _ in renamed:
                done(job)
            if not self.staged:
                self.bytes = 0

    def move(self, tmp: str, dst: str) -> None:
        """Move a staged temporary over its destination (atomic per file; the directories are
        fsynced once per batch by :meth:`commit`): a local one by ``os.replace``, what
        :func:`.fs.commit` does for it (its mode was given at its create), without its two calls."""
        if self.fs is None:
            os.replace(tmp, dst)
        else:
            store.commit(self.fs, tmp, dst, sync_dir=False)

    def flush(self, rep: MigrationReport, named: Callable[[J], tuple[str, str]]) -> None:
        """:meth:`commit`, counting each file written in ``rep``; if a sync or a rename fails, the
        files not yet renamed fail (exit 74; ``named``: a file's name and its destination as shown)
        and the run stops.

        Raises:
            StopRunError: the batch could not be committed.
        """

        def done(_job: J) -> None:
            rep.files_written += 1

        try:
            self.commit(done)
        except OSError as exc:
            jobs = self.abort()
            for j in jobs:
                name, dst = named(j)
                error = f"cannot write {dst}: {exc.strerror or exc}"
                rep.failed.append(FileFailure(file=name, error=error, exit_code=74))
            raise StopRunError(f"output error: cannot commit {len(jobs)} file(s)") from None

    def abort(self) -> list[J]:
        """Delete the staged temporaries (their destinations are untouched); returns their jobs."""
        jobs = [job for _, _, job, _ in self.staged]
        for tmp, _, _, _ in self.staged:
            store.remove(self.fs, tmp)
        self.staged = []
        self.backups = []
        self.bytes = 0
        return jobs
