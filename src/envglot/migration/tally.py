"""Counts of a migration: one :class:`Tally` per chunk (the worker), per file and per run (the report).

Every count is declared once and summed by one method (:meth:`Tally.add_all`, many tallies at
once: the driver adds a batch of files' counts to the report in one call); the report is a
:class:`Tally` with the run's facts added, so a chunk's counts, a file's and the report's
cannot drift apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from itertools import chain
from operator import attrgetter
from typing import Any

import msgspec
from msgspec.structs import astuple

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
        if o.status == "converted":
            self.count_converted(o.lossy, o.unwrapped)
        elif o.status == "passed":
            self.count_passed()
        else:
            self.records += 1
            self.rejected += 1
            self.lossy += bool(o.diagnostics)

    def count_converted(self, lossy: int, unwrapped: int, records: int = 1) -> None:
        """Count converted records (``lossy`` of them with a diagnostic the policy selects,
        ``unwrapped`` of them unwrapped; default one record)."""
        self.records += records
        self.converted += records
        self.lossy += lossy
        self.unwrapped += unwrapped

    def count_passed(self) -> None:
        """Count one record passed through (already in the target dialect)."""
        self.records += 1
        self.passed_through += 1

    def add(self, other: SourceCounts) -> None:
        """Add ``other`` into this one."""
        _sum_into(self, SOURCE_COUNTS, (other,))


SOURCE_COUNTS = SourceCounts.__struct_fields__


def _sum_into(target: Any, names: Sequence[str], others: Sequence[msgspec.Struct]) -> None:
    """Add the fields ``names`` (a struct's first fields, in order) of each of ``others`` into
    ``target``: summed column by column in C, one ``setattr`` per field however many ``others``
    there are. Each one's fields are read at once by ``msgspec.structs.astuple`` (its slots in
    order, no attribute lookup by name); the columns after ``names`` are never taken."""
    for name, column in zip(names, zip(*map(astuple, others), strict=True), strict=False):
        setattr(target, name, getattr(target, name) + sum(column))


class Tally(SourceCounts, gc=False):
    """What became of some records: counted per record by the worker, summed per file and per run
    (the :class:`~.report.MigrationReport` is a tally too). Not tracked by the garbage collector:
    it holds counts, names and dicts of them, nothing that refers back to it (a small file's waits
    for its commit)."""

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
        if o.status == "converted":
            self.converted_record(o.source, o.lossy, o.unwrapped, o.kinds)
        elif o.status == "passed":
            self.passed_record(o.source)
        else:
            super().count(o)
            self.of(o.source).count(o)
            self.internal_errors += o.error_type == INTERNAL_ERROR
            kinds = self.diagnostics
            for d in o.diagnostics:
                kinds[d["kind"]] = kinds.get(d["kind"], 0) + 1

    def converted_record(self, source: str | None, lossy: bool, unwrapped: bool, kinds: Iterable[str]) -> None:
        """Count one converted record of ``source`` and the kind of each of its diagnostics (what a
        migration counts per record: no :class:`~.records.Outcome` is built for it)."""
        self.count_converted(lossy, unwrapped)
        self.of(source).count_converted(lossy, unwrapped)
        self._count_kinds(kinds)

    def converted_records(
        self, sources: Sequence[str | None], lossy: Sequence[str | None], kinds: Iterable[str]
    ) -> None:
        """Count converted records, none unwrapped, as one :meth:`converted_record` per record in
        order would (the same counts, sources and kinds in the same order): ``sources`` the source
        of each record, ``lossy`` the source of each lossy one, ``kinds`` the kind of each of their
        diagnostics. Counted in C per source and kind, not per record (a source's records by
        ``list.count``: a run meets a few source dialects, and a ``Counter`` costs more than
        that for a small file's handful of records)."""
        self.count_converted(len(lossy), 0, len(sources))
        by_source = self.by_source
        for source in dict.fromkeys(sources):
            n, bad = sources.count(source), lossy.count(source) if lossy else 0
            key = source or UNDETECTED  # as :meth:`of` names it
            c = by_source.get(key)
            if c is None:  # a source new to this tally (every one in a small file's): made with its counts
                by_source[key] = SourceCounts(n, n, 0, 0, bad)
            else:
                c.count_converted(bad, 0, n)
        self._count_kinds(kinds)

    def _count_kinds(self, kinds: Iterable[str]) -> None:
        """Count each of ``kinds`` (a :class:`~envglot.Kind`, a StrEnum, under its value), new kinds in
        order: a chunk's many by a ``Counter``, a small file's few (a handful of distinct kinds of a
        closed catalogue) each distinct kind's by ``list.count``, in C, without building a ``Counter``."""
        counts = self.diagnostics
        each = list(kinds)
        distinct: Iterable[str]
        count: Callable[[str], int]
        if len(each) > _FEW_KINDS:
            found = Counter(each)
            distinct, count = found, found.__getitem__
        else:
            distinct, count = dict.fromkeys(each), each.count
        for k in distinct:
            n = count(k)
            had = counts.get(k)
            if had is None:
                counts[str(k)] = n
            else:
                counts[k] = had + n  # the key already there (a str) stays

    def passed_record(self, source: str | None) -> None:
        """Count one record of ``source`` passed through."""
        self.count_passed()
        self.of(source).count_passed()

    def of(self, source: str | None) -> SourceCounts:
        """The counts of the records of ``source`` (:data:`UNDETECTED` for ``None``), made on first use."""
        key = source or UNDETECTED
        c = self.by_source.get(key)
        if c is None:
            c = self.by_source[key] = SourceCounts()
        return c

    def add(self, other: SourceCounts) -> None:
        """Add the counts of ``other`` (a :class:`Tally`) into this one."""
        assert isinstance(other, Tally)
        self.add_all((other,))

    def add_all(self, others: Sequence[Tally]) -> None:
        """Add the counts of each of ``others`` into this one, in order (the same counts, sources
        and kinds, in the same order, as one :meth:`add` each)."""
        if not others:
            return
        _sum_into(self, COUNTS, others)
        # every tally's items in one flat iteration (no loop per tally: a small file's tally holds a
        # few sources and kinds, and a commit adds hundreds of them)
        per_source: dict[str, list[SourceCounts]] = {}
        for k, c in chain.from_iterable(map(dict.items, map(_BY_SOURCE, others))):
            per_source.setdefault(k, []).append(c)
        kinds = self.diagnostics
        for k, n in chain.from_iterable(map(dict.items, map(_DIAGNOSTICS, others))):
            kinds[k] = kinds.get(k, 0) + n
        for k, counts in per_source.items():
            _sum_into(self.of(k), SOURCE_COUNTS, counts)


COUNTS = Tally.__struct_fields__[: Tally.__struct_fields__.index("by_source")]
"""The plain counts of a :class:`Tally` (and so of the report), summed field by field: its fields
before its two dicts (``by_source``, ``diagnostics``: its last fields), in order."""
assert (*COUNTS, "by_source", "diagnostics") == Tally.__struct_fields__
_FEW_KINDS = 64
"""Up to this many kinds are counted by ``list.count`` per distinct kind, more by a ``Counter``
(:meth:`Tally._count_kinds`)."""
_BY_SOURCE = attrgetter("by_source")
_DIAGNOSTICS = attrgetter("diagnostics")
