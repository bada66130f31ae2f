"""Names, defaults and limits shared by the migration modules."""

from __future__ import annotations

from typing import Literal

import msgspec

from ..excerpt import MESSAGE_LIMIT

TEMP_PREFIX = ".envglot-tmp-"
"""Every temporary file starts with this; inputs never match it; stale ones are removed."""
REJECTS_NAME = ".envglot-rejects.jsonl"
"""Default rejects file name (see :func:`migrate`); never read as an input."""
LOCK_NAME = ".envglot-lock"
"""The lock file a run keeps in its ``--out`` directory (one run per ``--out`` at a time)."""
OWN_NAMES = frozenset({REJECTS_NAME, LOCK_NAME})
"""envglot's own file names, never taken as inputs from a directory."""
EX_OUTPUT = 74
"""Exit code when an output, a backup, the rejects or the lock file cannot be written."""
EX_LOCKED = 75
"""Exit code when another live run holds the ``--out`` directory's lock (``EX_TEMPFAIL``: try again later)."""
DEFAULT_INCLUDE: tuple[str, ...] = (
    "*.json",
    "*.jsonl",
    "*.ndjson",
    "*.json.gz",
    "*.jsonl.gz",
    "*.ndjson.gz",
)
DEFAULT_CHUNK_BYTES = 1024 * 1024
"""JSON Lines are cut into chunks of about this many bytes (whole lines) for the workers."""
TEST_DELAY_ENV = "ENVGLOT_MIGRATE_TEST_DELAY"
"""Test-only hook: seconds to sleep before each chunk (lets a test interrupt a run mid-way)."""
TEST_BATCH_ENV = "ENVGLOT_MIGRATE_TEST_BATCH_FILES"
"""Test-only hook: files per commit batch (lets a kill test land between and inside small batches)."""
EX_INTERRUPTED = 130
"""Exit code of a run stopped by Ctrl-C or SIGTERM (the report says ``stopped: "interrupted"``)."""
EX_SOFTWARE = 70
"""Exit code when envglot itself failed: a worker died, or records were rejected by a bug (``InternalError``)."""
UNDETECTED = "(undetected)"
"""The source-dialect row of records that could not be read far enough to name a dialect."""

INTERNAL_ERROR = "InternalError"
"""``error_type`` of a record rejected because of a bug in envglot (counted apart from bad input)."""
REASON_LIMIT = MESSAGE_LIMIT
"""Characters of an input-derived reason (error message, JSON path) kept in a rejects record."""

Status = Literal["converted", "passed", "rejected"]
Mode = Literal["out", "in-place", "check", "stdout"]

ENCODER = msgspec.json.Encoder()
