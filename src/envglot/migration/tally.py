"""Counts of a migration: one :class:`Tally` per chunk (the worker), per file and per run (the report).

Every count is declared once and summed by one method (:meth:`Tally.add`); the report is a
:class:`Tally` with the run's facts added, so a chunk's counts, a file's and the report's
cannot drift apart.
"""

from __future__ import annotations

import msgspec

from .constants import INTERNAL_ERROR, UNDETECTED
from .records import Outcome


class SourceCounts(msgspec.Struct):
    """Records of one source dialect: how many, and what became of them."""

    records: int = 0
    converted: int = 0
    passed_through: int = 0
    rejected: int = 0
    lossy: int = 0
    unwrapped: int = 0

    def count(self, o: Outcome) -> None:
        """Count one record's outcome."""
        self.records += 1
        if o.status == "converted":
            self.converted += 1
            self.lossy += o.lossy
            self.unwrapped += o.unwrapped
        elif o.status == "passed":
            self.passed_through += 1
        else:
            self.rejected += 1
            self.lossy += bool(o.diagnostics)

    def add(self, other: SourceCounts) -> None:
        """Add ``other`` into this one."""
        for name in SOURCE_COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))


SOURCE_COUNTS = SourceCounts.__struct_fields__


class Tally(SourceCounts):
    """What became of some records: counted per record by the worker, summed per file and per run
    (the :class:`~.report.MigrationReport` is a tally too)."""

    internal_errors: int = 0
    """Rejects caused by a bug in envglot (``error_type == "InternalError"``), not by the input."""
    bytes_in: int = 0
    """Record bytes read (uncompressed)."""
    bytes_out: int = 0
    """Record bytes written, or that would be (uncompressed)."""
    by_source: dict[str, SourceCounts] = msgspec.field(default_factory=dict)
    diagnostics: dict[str, int] = msgspec.field(default_factory=dict)
    """Diagnostics per kind: of converted records, and of records rejected as lossy."""

    @property
    def differs(self) -> bool:
        """True if a record was converted or rejected (the output differs from the input)."""
        return bool(self.converted or self.rejected)

    def count(self, o: Outcome) -> None:
        """Count one record's outcome (also under its source dialect, and its diagnostics' kinds)."""
        super().count(o)
        key = o.source or UNDETECTED
        c = self.by_source.get(key)
        if c is None:
            c = self.by_source[key] = SourceCounts()
        c.count(o)
        kinds = self.diagnostics
        if o.status == "converted":
            for k in o.kinds:
                kinds[k] = kinds.get(k, 0) + 1
        elif o.status == "rejected":
            self.internal_errors += o.error_type == INTERNAL_ERROR
            for d in o.diagnostics:
                kinds[d["kind"]] = kinds.get(d["kind"], 0) + 1

    def add(self, other: SourceCounts) -> None:
        """Add the counts of ``other`` (a :class:`Tally`) into this one."""
        assert isinstance(other, Tally)
        for name in COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for k, c in other.by_source.items():
            mine = self.by_source.get(k)
            if mine is None:
                mine = self.by_source[k] = SourceCounts()
            mine.add(c)
        for k, n in other.diagnostics.items():
            self.diagnostics[k] = self.diagnostics.get(k, 0) + n


COUNTS = tuple(name for name in Tally.__struct_fields__ if name not in ("by_source", "diagnostics"))
"""The plain counts of a :class:`Tally` (and so of the report), summed field by field."""
