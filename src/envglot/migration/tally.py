"""Counts of a migration: one :class:`Tally` per chunk (the worker), per file and per run (the report).

Every count is kept in one shape and summed by one function (:func:`add_counts`), so a
chunk's counts, a file's and the report's cannot drift apart.
"""

from __future__ import annotations

from typing import Protocol

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

    def add(self, other: SourceCounts) -> None:
        """Add ``other`` into this one."""
        for name in self.__struct_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


class Counted(Protocol):
    """Anything holding a tally's counts: a :class:`Tally`, the migration report."""

    by_source: dict[str, SourceCounts]
    diagnostics: dict[str, int]


class Tally(msgspec.Struct):
    """What became of some records: counted per record by the worker, summed per file and per run."""

    records: int = 0
    converted: int = 0
    passed_through: int = 0
    rejected: int = 0
    internal_errors: int = 0
    """Rejects caused by a bug in envglot (``error_type == "InternalError"``), not by the input."""
    lossy: int = 0
    unwrapped: int = 0
    bytes_in: int = 0
    """Record bytes read (uncompressed)."""
    bytes_out: int = 0
    """Record bytes written, or that would be (uncompressed)."""
    by_source: dict[str, SourceCounts] = msgspec.field(default_factory=dict)
    diagnostics: dict[str, int] = msgspec.field(default_factory=dict)
    """Diagnostics per kind: of converted records, and of records rejected as lossy."""

    @property
    def changed(self) -> bool:
        """True if a record was converted or rejected (the output differs from the input)."""
        return bool(self.converted or self.rejected)

    def count(self, o: Outcome) -> None:
        """Count one record's outcome."""
        self.records += 1
        key = o.source or UNDETECTED
        c = self.by_source.get(key)
        if c is None:
            c = self.by_source[key] = SourceCounts()
        c.records += 1
        kinds = self.diagnostics
        if o.status == "converted":
            self.converted += 1
            c.converted += 1
            self.lossy += o.lossy
            c.lossy += o.lossy
            self.unwrapped += o.unwrapped
            c.unwrapped += o.unwrapped
            for k in o.kinds:
                kinds[k] = kinds.get(k, 0) + 1
        elif o.status == "passed":
            self.passed_through += 1
            c.passed_through += 1
        else:
            self.rejected += 1
            c.rejected += 1
            self.internal_errors += o.error_type == INTERNAL_ERROR
            lossy = bool(o.diagnostics)
            self.lossy += lossy
            c.lossy += lossy
            for d in o.diagnostics:
                kinds[d["kind"]] = kinds.get(d["kind"], 0) + 1

    def add(self, other: Tally) -> None:
        """Add ``other`` into this one."""
        add_counts(self, other)


COUNTS = tuple(name for name in Tally.__struct_fields__ if name not in ("by_source", "diagnostics"))
"""The plain counts of a :class:`Tally` (and of a :class:`~.report.MigrationReport`), summed field by field."""


def add_counts(into: Counted, other: Tally) -> None:
    """Add the counts of ``other`` into ``into`` (a :class:`Tally` or the report)."""
    for name in COUNTS:
        setattr(into, name, getattr(into, name) + getattr(other, name))
    for k, c in other.by_source.items():
        mine = into.by_source.get(k)
        if mine is None:
            mine = into.by_source[k] = SourceCounts()
        mine.add(c)
    for k, n in other.diagnostics.items():
        into.diagnostics[k] = into.diagnostics.get(k, 0) + n
