"""The migration report: counts per source dialect, failures, changed files, progress."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import msgspec

from ..introspect import struct_fields
from .constants import ENCODER, EX_INTERRUPTED, EX_SOFTWARE, Mode
from .tally import Tally

# --------------------------------------------------------------------------- report


class FileFailure(msgspec.Struct):
    """A file that could not be read or written (its output was not committed)."""

    file: str
    error: str
    exit_code: int


class ChangedFile(msgspec.Struct):
    """A file with converted or rejected records (written, or would be with ``--check``)."""

    file: str
    output: str | None
    converted: int
    passed_through: int
    rejected: int


class Progress(msgspec.Struct):
    """Progress of a running migration, handed to the ``progress`` callback."""

    records: int
    bytes_done: int
    """Input bytes (as stored on disk, compressed for .gz) of the work done so far."""
    bytes_total: int | None
    """Total input bytes on disk; ``None`` when reading stdin."""
    files_done: int
    files_total: int
    elapsed_s: float
    bytes_in: int = 0
    """Record bytes read so far (uncompressed): what the progress line and the summary count."""


MAX_ERRORS = "max-errors"
"""How the report's ``stopped`` begins when ``--max-errors`` stopped the run."""


class StopRunError(Exception):
    """Raised inside a driver to stop the run early; ``reason`` becomes the report's ``stopped``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    @classmethod
    def max_errors(cls, limit: int, where: str) -> StopRunError:
        """``--max-errors`` passed at ``where`` (``FILE`` or ``FILE:LINE``): the run ends with exit 65."""
        return cls(f"{MAX_ERRORS}: more than {limit} rejected records (limit passed at {where})")


class MigrationReport(Tally, kw_only=True):
    """Everything a migration did: its counts (a :class:`~.tally.Tally`) and the run's facts;
    ``--report FILE`` writes it as JSON (``to_json``: the run's required facts first, then the counts)."""

    target: str
    source: str | None
    """The forced source dialect (``-f``), or ``None`` for per-record detection."""
    mode: Mode
    jobs: int
    """Worker processes used (1: in this process, as for inputs smaller than one chunk)."""
    files_total: int = 0
    files_written: int = 0
    files_changed: int = 0
    files_unchanged: int = 0
    changed: list[ChangedFile] = msgspec.field(default_factory=list)
    failed: list[FileFailure] = msgspec.field(default_factory=list)
    not_processed: list[str] = msgspec.field(default_factory=list)
    stopped: str | None = None
    """Why the run stopped early (``--max-errors``, an output error, an interruption)."""
    backups: int = 0
    elapsed_s: float = 0.0
    records_per_s: float = 0.0
    mb_per_s: float = 0.0
    rejects_file: str | None = None
    temp_files_removed: int = 0
    exit_code: int = 0

    def file_done(self, name: str, output: str | None, tally: Tally) -> None:
        """Count a finished file (``tally``: its counts, already added): changed or unchanged."""
        if not tally.differs:
            self.files_unchanged += 1
            return
        self.files_changed += 1
        self.changed.append(ChangedFile(name, output, tally.converted, tally.passed_through, tally.rejected))

    def stop(self, reason: str, rest: Iterable[str]) -> None:
        """Record an early stop: ``reason``, and as not processed the files of ``rest`` (the one in
        progress and those after it, in walk order) that did not fail already."""
        self.stopped = reason
        failed = {f.file for f in self.failed}
        self.not_processed = [name for name in rest if name not in failed]

    def finish(self, t0: float) -> None:
        """Set the timings (the run began at monotonic time ``t0``) and the exit code."""
        self.elapsed_s = round(time.monotonic() - t0, 3)
        if self.elapsed_s > 0:
            self.records_per_s = round(self.records / self.elapsed_s, 1)
            self.mb_per_s = round(self.bytes_in / 1e6 / self.elapsed_s, 2)
        codes = [0]
        if self.rejected or (self.mode == "check" and self.files_changed):
            codes.append(1)
        if self.stopped is not None and self.stopped.startswith(MAX_ERRORS):
            codes.append(65)
        if self.internal_errors:
            codes.append(EX_SOFTWARE)
        codes.extend(f.exit_code for f in self.failed)
        self.exit_code = max(codes)  # 74 (output) > 70 (a bug) > 66 (input) > 65 (max-errors) > 1 (rejects, changes)
        if self.stopped == "interrupted":
            self.exit_code = EX_INTERRUPTED

    def to_dict(self) -> dict[str, Any]:
        """The report as plain JSON-able data: the run's required facts first, then the counts."""
        data: dict[str, Any] = msgspec.to_builtins(self)
        return {name: data.pop(name) for name in HEAD} | data

    def to_json(self) -> bytes:
        """The report as pretty JSON (what ``--report`` writes)."""
        return msgspec.json.format(ENCODER.encode(self.to_dict()), indent=2) + b"\n"


HEAD = tuple(f.name for f in struct_fields(MigrationReport) if f.required)
"""The report's leading keys: the facts every run states (target, source, mode, jobs)."""
