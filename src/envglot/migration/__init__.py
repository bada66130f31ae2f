"""Batch migration of stored responses: files, trees, JSON Lines, gzip -> one target dialect.

Two layers (``docs/migration.md``):

* :class:`Migrator` — the pure per-record function ``bytes -> Outcome`` (converted,
  passed through, or rejected with its reason). One :class:`~envglot.Converter` inside,
  built once; picklable, so engines such as Dask or Spark can map it over their lines.
* :func:`migrate` — the file engine: walks inputs, plans pieces (small files grouped, large
  ones cut into ranges, stdin cut as it is read) that an executor runs (this process, a
  process pool, or Dask), writes every output through a temporary file that is made durable
  and renamed into place, commits each file's rejects (with their original bytes) durably
  before the output that omits them, replacing that file's rejects of an earlier run, and
  returns a :class:`MigrationReport`.

Modules: ``constants`` (names and limits), ``records`` (the per-record layer),
``workers`` (the process-pool side), ``executors`` (where the work runs: inline, a process
pool, Dask), ``walk`` (which inputs a run takes, local paths and fsspec URLs, and where each
output goes), ``inputs`` (how inputs are read: special files, links, record and gzip limits
— for every executor), ``reading`` (an input's chunks, in walk order), ``files`` (atomic
outputs, backups), ``deferred`` (the unchanged part of an output),
``rejects`` (the rejects file and its commit, on a local path or an fsspec URL), ``commit``
(batches of outputs made durable and renamed), ``lock`` (one run per
``--out``), ``session`` (a run's lock, report and rejects file), ``tally``
(the counts, one shape for chunk, file and report), ``report`` (the summary), ``run``
(:func:`migrate`: the options, then a driver), ``driver`` with ``partitions`` (the piece
driver and its pieces, for every executor), ``stream`` (stdin's pieces, on the same driver),
``engine`` (the local front: Inline or Pool) and ``dask_engine`` (the Dask front).
"""

from __future__ import annotations

from .constants import (
    DEFAULT_CHUNK_BYTES,
    DEFAULT_INCLUDE,
    EX_INTERRUPTED,
    EX_LOCKED,
    EX_SOFTWARE,
    LOCK_NAME,
    REJECTS_NAME,
    TEMP_PREFIX,
    TEST_BATCH_ENV,
    TEST_DELAY_ENV,
    UNDETECTED,
)
from .files import BackupExistsError, MigrationError, clean_stale_temps
from .inputs import DEFAULT_MAX_GZIP_RATIO, DEFAULT_MAX_RECORD_BYTES
from .records import Migrator, Outcome, RecordError, reject_line
from .report import ChangedFile, FileFailure, MigrationReport, Progress
from .run import migrate
from .tally import SourceCounts
from .walk import input_files

__all__ = [
    "DEFAULT_CHUNK_BYTES",
    "DEFAULT_INCLUDE",
    "DEFAULT_MAX_GZIP_RATIO",
    "DEFAULT_MAX_RECORD_BYTES",
    "EX_INTERRUPTED",
    "EX_LOCKED",
    "EX_SOFTWARE",
    "LOCK_NAME",
    "REJECTS_NAME",
    "TEMP_PREFIX",
    "TEST_BATCH_ENV",
    "TEST_DELAY_ENV",
    "UNDETECTED",
    "BackupExistsError",
    "ChangedFile",
    "FileFailure",
    "MigrationError",
    "MigrationReport",
    "Migrator",
    "Outcome",
    "Progress",
    "RecordError",
    "SourceCounts",
    "clean_stale_temps",
    "input_files",
    "migrate",
    "reject_line",
]
