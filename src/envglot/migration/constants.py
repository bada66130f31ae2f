"""Names, defaults and limits shared by the migration modules."""

from __future__ import annotations

from typing import Literal

import msgspec

TEMP_PREFIX = ".envglot-tmp-"
"""Every temporary file starts with this; inputs never match it; stale ones are removed."""
REJECTS_NAME = ".envglot-rejects.jsonl"
"""Default rejects file name (see :func:`migrate`); never read as an input."""
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
EX_INTERRUPTED = 130
"""Exit code of a run stopped by Ctrl-C or SIGTERM (the report says ``stopped: "interrupted"``)."""
UNDETECTED = "(undetected)"
"""The source-dialect row of records that could not be read far enough to name a dialect."""

Status = Literal["converted", "passed", "rejected"]
Mode = Literal["out", "in-place", "check", "stdout"]

_ENC = msgspec.json.Encoder()
