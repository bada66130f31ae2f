"""The error code is looked up once per side (issue 24): one lookup of the source's code
table while reading a problem, one derivation of the target's plan while writing it.

A *lookup* is a call, from outside the table layer, to one of its primitives: an access to a
dialect's ``codes`` or ``types`` table, :meth:`DialectMap.plan`, :meth:`DialectMap.choose`,
:func:`~envglot.tables.type_for`, or :func:`envglot.codes.choice` (the write side's one
derivation: what it consults inside, the source's row included, is part of that one lookup).
Calls made inside a primitive are not counted again. Counted on a warm conversion (the fused
path's per-pair constants are built on the first one), for every failure case of every
dialect's corpus and every writable target, fused path and hub alike.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest

import envglot
from envglot import codes, tables
from envglot.context import Context
from envglot.dialects import WRITABLE
from envglot.mappings import default_mappings
from envglot.tables import DialectMap
from golden import Case, cases

READ_TWICE: dict[str, str] = {
    "response-v2": "a failure states two native members with a row each: error_code (its code row) "
    "and error_type (its category word's row: an unknown word is reported, its retryable read)",
    "problem-json/pj-unknown-code-known-status": "a code the tables do not know: its lookup finds no row, "
    "so the status's row is looked up for the category",
}
"""A reader (``dialect``) or one case (``dialect/stem``) that genuinely looks up two rows per
problem, and why (reviewed). No writer needs more than its one :class:`~envglot.codes.Choice`."""


class _Count:
    depth = 0
    calls: ClassVar[Counter[str]] = Counter()

    @classmethod
    def hit(cls, what: str) -> None:
        if cls.depth == 0:
            cls.calls[what] += 1


def _primitive(fn: Callable[..., Any], name: Callable[..., str]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def counted(*args: Any, **kwargs: Any) -> Any:
        _Count.hit(name(*args, **kwargs))
        _Count.depth += 1
        try:
            return fn(*args, **kwargs)
        finally:
            _Count.depth -= 1

    return counted


class _CountedTable(dict[str, Any]):
    """A ``codes`` / ``types`` table that counts each access from outside a primitive."""

    def __init__(self, rows: dict[str, Any], what: str) -> None:
        super().__init__(rows)
        self.what = what

    def get(self, key: str, default: Any = None) -> Any:
        _Count.hit(self.what)
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        _Count.hit(self.what)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        _Count.hit(self.what)
        return super().__contains__(key)


@contextlib.contextmanager
def counting() -> Iterator[Counter[str]]:
    """Count the table lookups made inside the block (by kind and dialect)."""
    m = default_mappings()
    saved = {d.name: (d.codes, d.types) for d in m.dialects.values()}
    patched: list[tuple[object, str, object]] = []

    def patch(owner: object, attr: str, new: object) -> None:
        patched.append((owner, attr, getattr(owner, attr)))
        setattr(owner, attr, new)

    patch(DialectMap, "plan", _primitive(DialectMap.plan, lambda d, *a, **k: f"plan {d.name}"))
    patch(DialectMap, "choose", _primitive(DialectMap.choose, lambda d, *a, **k: f"choose {d.name}"))
    type_for = _primitive(tables.type_for, lambda _m, dialect, *a, **k: f"type_for {dialect}")
    choice = _primitive(codes.choice, lambda _p, d, *a, **k: f"choice {d.name}")
    for mod in [m for n, m in sys.modules.items() if n.startswith("envglot") and m is not None]:
        for attr, original, new in (("type_for", tables.type_for, type_for), ("choice", codes.choice, choice)):
            if getattr(mod, attr, None) is original:
                patch(mod, attr, new)
    for d in m.dialects.values():
        d.codes = _CountedTable(d.codes, f"codes {d.name}")
        d.types = _CountedTable(d.types, f"types {d.name}")
    _Count.calls = Counter()
    try:
        yield _Count.calls
    finally:
        for owner, attr, old in reversed(patched):
            setattr(owner, attr, old)
        for d in m.dialects.values():
            d.codes, d.types = saved[d.name]


def _failures() -> dict[str, list[Case]]:
    out: dict[str, list[Case]] = {}
    for c in cases():
        if not envglot.read(c.data, from_=c.dialect).ok:
            out.setdefault(c.dialect, []).append(c)
    return out


FAILURES = _failures()
PAIRS = [(src, dst) for src in FAILURES for dst in WRITABLE]


def test_every_reader_has_a_failure_case() -> None:
    assert set(FAILURES) >= set(WRITABLE)


def _excess(case: Case, dst: str) -> str | None:
    """What ``case`` converted to ``dst`` looks up beyond one lookup per problem and side (two
    on the read side where :data:`READ_TWICE` says why)."""
    problems = max(1, len(envglot.read(case.data, from_=case.dialect).problems))
    envglot.conversion(case.data, from_=case.dialect, to=dst, unsupported="ignore")  # warm
    with counting() as read:
        envglot.read(case.data, from_=case.dialect)
    with counting() as both:
        envglot.conversion(case.data, from_=case.dialect, to=dst, unsupported="ignore")
    n_read, n_write = sum(read.values()), sum(both.values()) - sum(read.values())
    per_read = 2 if case.dialect in READ_TWICE or str(case) in READ_TWICE else 1
    if n_read > per_read * problems:
        return f"{case}: read side: {n_read} lookups for {problems} problem(s): {dict(read)}"
    if n_write > problems:
        return f"{case}: write side: {n_write} lookups for {problems} problem(s): {dict(both - read)}"
    return None


@pytest.mark.parametrize(("src", "dst"), PAIRS, ids=[f"{s}->{d}" for s, d in PAIRS])
def test_one_lookup_per_side(src: str, dst: str) -> None:
    """Every failure case of ``src`` converted to ``dst``: at most one lookup per problem on
    each side."""
    excess = [e for case in FAILURES[src] if (e := _excess(case, dst)) is not None]
    assert not excess, "\n".join(excess)


@pytest.mark.parametrize(("src", "dst"), PAIRS, ids=[f"{s}->{d}" for s, d in PAIRS])
def test_one_lookup_per_side_on_the_fused_path(src: str, dst: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same bound where nobody sees diagnostics (``convert``: a fused pair path). A fused path
    that declines a document hands it to the hub, which reads it again: that conversion is
    the hub's, held by :func:`test_one_lookup_per_side`, and is left out here."""
    hub: list[Context] = []  # the hub builds a Context per document; a bound fused path has its own
    init = Context.__init__
    monkeypatch.setattr(Context, "__init__", lambda self, *a, **k: (hub.append(self), init(self, *a, **k))[1])
    over = []
    for case in FAILURES[src]:
        problems = max(1, len(envglot.read(case.data, from_=src).problems))
        per_read = 2 if src in READ_TWICE or str(case) in READ_TWICE else 1
        envglot.convert(case.data, from_=src, to=dst, unsupported="ignore")  # warm: the pair path is built
        hub.clear()
        with counting() as seen:
            envglot.convert(case.data, from_=src, to=dst, unsupported="ignore")
        if not hub and sum(seen.values()) > (per_read + 1) * problems:
            over.append(f"{case}: {sum(seen.values())} lookups for {problems} problem(s): {dict(seen)}")
    assert not over, "\n".join(over)


def test_each_read_twice_entry_is_needed() -> None:
    """An entry of :data:`READ_TWICE` names a reader or case that does look up two rows."""
    for key in READ_TWICE:
        dialect, _, stem = key.partition("/")
        counts = []
        for case in FAILURES[dialect]:
            if stem and case.stem != stem:
                continue
            problems = len(envglot.read(case.data, from_=case.dialect).problems)
            with counting() as read:
                envglot.read(case.data, from_=case.dialect)
            counts.append(sum(read.values()) > problems)
        assert any(counts), f"{key}: no case looks up more than one row per problem"


def test_the_counter_counts() -> None:
    """A direct table access and a plan derivation are each one lookup; nested ones are not."""
    m = default_mappings()
    with counting() as seen:
        m["errorcode"].codes.get("NOT_FOUND")
        m["errorcode"].choose("not_found")  # its own access to the rows is part of it
    assert seen == Counter({"codes errorcode": 1, "choose errorcode": 1})
