"""Exit codes of every envglot command (sysexits.h numbers where one fits)."""

from __future__ import annotations

EX_OK = 0
"""Success."""
EX_FAILED = 1
"""Lossy conversion with --fail-if-lossy, validation failures, rejected records, or --check found changes."""
EX_USAGE = 2
"""Usage error (click's own code)."""
EX_DATAERR = 65
"""Invalid input data: bad JSON, no dialect matches, a contract violation on read."""
EX_NOINPUT = 66
"""An input file is missing or unreadable."""
EX_IOERR = 74
"""An output could not be written."""
