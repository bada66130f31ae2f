"""Commit batches, for both drivers: many outputs made durable by one sync, then renamed.

The protocol (``docs/migration.md``, "Atomicity and interruption", step 6): each file's
rejects are made durable when the file ends, before its output is staged here; a batch
then (1) makes every staged temporary durable with one ``syncfs`` per file system (an
fsync each where ``syncfs`` is missing), (2) fsyncs the directories of the backups made
for it (the links are durable before the originals are replaced), (3) renames each
temporary over its destination and (4) fsyncs each directory once. A crash at any point
leaves every destination old or complete, as with two fsyncs per file. The Dask driver stages
the temporaries its tasks wrote (:class:`StoredTemp`: durable already, on a local disk or an
object store) and commits each run of consecutive finished files as one batch.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

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


class Temporary(Protocol):
    """A closed temporary output: :class:`~.files.AtomicOutput`, or :class:`StoredTemp`."""

    @property
    def tmp(self) -> str: ...

    @property
    def dst(self) -> str | os.PathLike[str]: ...

    def rename(self, mode: int | None) -> None: ...

    def abort(self) -> None: ...


class StoredTemp:
    """A temporary a Dask task wrote and made durable, on the file system or object store ``fs``."""

    def __init__(self, fs: Any, tmp: str, dst: str) -> None:
        self.fs = fs
        self.tmp = tmp
        self.dst = dst

    def rename(self, mode: int | None) -> None:
        """Move it over its destination (atomic per file; the directory is not fsynced)."""
        store.commit(self.fs, self.tmp, self.dst, mode, sync_dir=False)

    def abort(self) -> None:
        """Delete it (the destination is untouched)."""
        store.remove(self.fs, self.tmp)


J = TypeVar("J")


class _Staged(Generic[J]):
    __slots__ = ("durable", "job", "mode", "out")

    def __init__(self, out: Temporary, mode: int | None, job: J, durable: bool) -> None:
        self.out = out
        self.mode = mode
        self.job = job
        self.durable = durable


class CommitBatch(Generic[J]):
    """Closed temporaries waiting for one sync (those not durable yet) and their renames; ``J``:
    what the driver calls a file (given back by :meth:`commit` and :meth:`abort`).

    ``fs``: the destinations' fsspec file system (their directories are fsynced only on a local
    disk); None: local paths.
    """

    def __init__(self, fs: Any = None) -> None:
        test = os.environ.get(TEST_BATCH_ENV, "")
        self.max_files = int(test) if test.isdigit() and int(test) > 0 else BATCH_FILES
        self.fs = fs
        self.staged: list[_Staged[J]] = []
        self.backups: list[str] = []
        self.bytes = 0
        self.since = 0.0

    def __len__(self) -> int:
        return len(self.staged)

    def add(
        self, out: Temporary, mode: int | None, job: J, size: int, backup: Path | None = None, durable: bool = False
    ) -> None:
        """Stage a closed temporary (``out.close(durable=False)``, or ``durable``: synced by whoever
        wrote it); ``backup``: a link made for it."""
        if not self.staged:
            self.since = time.monotonic()
        self.staged.append(_Staged(out, mode, job, durable))
        if backup is not None:
            self.backups.append(str(backup))
        self.bytes += max(size, 0)

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
        if waiting := [str(s.out.tmp) for s in self.staged if not s.durable]:
            sync_local_files(waiting)
        if self.backups:
            sync_local_dirs(self.backups)
            self.backups = []
        n = 0
        try:
            for s in self.staged:
                s.out.rename(s.mode)
                n += 1
        finally:
            renamed, self.staged = self.staged[:n], self.staged[n:]
            dsts = [os.fspath(s.out.dst) for s in renamed]
            if self.fs is None:
                sync_local_dirs(dsts)
            else:
                store.sync_dirs(self.fs, dsts)
            for s in renamed:
                done(s.job)
            if not self.staged:
                self.bytes = 0

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
        jobs = [s.job for s in self.staged]
        for s in self.staged:
            s.out.abort()
        self.staged = []
        self.backups = []
        self.bytes = 0
        return jobs
