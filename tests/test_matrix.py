"""Every reader x every writer over the golden corpus, with semantic assertions.

For each golden case (every registered source dialect) and each writable target: the outcome, the
summary and first error message (where the target has a place), the payload (modulo the
documented ``{"value": ...}`` wrapping) and the first problem's category survive; the code
written is the one the mapping tables choose; diagnostics are well formed; and whatever a
round trip back to the source loses is named by a diagnostic (loss is never silent).
"""

from __future__ import annotations

import fnmatch
import functools
import re
from typing import Any

import msgspec
import pytest

import envglot
from envelopes import unit_table
from envglot import Envelope, Kind, Problem
from envglot.dialects import NAMES, WRITABLE
from envglot.mappings import default_mappings
from envglot.residue import format_path, parse_path
from golden import DIALECTS, Case, cases, pinned_writes, written_files

M = default_mappings()
PAIRS = [(case, dst) for case in cases() for dst in WRITABLE]
IDS = [f"{case}->{dst}" for case, dst in PAIRS]


_EMPTY = {None, b"null", b"{}"}


@functools.cache
def _convert(case: Case, dst: str) -> tuple[Envelope, envglot.Conversion, Envelope]:
    src_env = envglot.read(case.data, from_=case.dialect)
    conv = envglot.conversion(case.data, from_=case.dialect, to=dst, unsupported="ignore")
    return src_env, conv, envglot.read(conv.output, from_=dst)


def _payload(raw: msgspec.Raw | None) -> bytes | None:
    """The payload as a comparison key; absent, ``null`` and ``{}`` all mean "empty"."""
    if raw is None:
        return None
    key = msgspec.json.encode(msgspec.json.decode(raw), order="sorted")
    return None if key in _EMPTY else key


def _within(path: str, parent: str) -> bool:
    return path == parent or path.startswith((parent + ".", parent + "["))


def _names(diag_path: str, field: str) -> bool:
    """A diagnostic names a field if one path lies inside the other."""
    return _within(field, diag_path) or _within(diag_path, field)


def _at(doc: Any, path: str) -> tuple[bool, Any]:
    cur = doc
    for seg in parse_path(path):
        if isinstance(seg, int):
            if not isinstance(cur, list) or seg >= len(cur):
                return False, None
        elif not isinstance(cur, dict) or seg not in cur:
            return False, None
        cur = cur[seg]
    return True, cur


def expected_code(p: Problem, dst: str) -> str | None:
    """The native code the tables (and the documented identity rules) give ``p`` in ``dst``."""
    dmap = M[dst]
    if p.code is None and p.domain == dst:
        return None  # a code its own dialect left out stays out (Result's error_type: null)
    if p.code is not None and p.domain == dst and p.code not in dmap.codes and not dmap.shape.closed:
        return p.code  # an unknown code goes back verbatim to its own open vocabulary
    return dmap.choose(p.category, p.code, p.domain, p.origin, p.upstream, p.aspect, p.partial, p.retryable)


def test_the_golden_corpus_is_consistent() -> None:
    stems = [c.stem for c in cases()]
    assert len(stems) == len(set(stems)), "case stems must be unique across dialects (expected/ is keyed by stem)"
    assert set(pinned_writes()) <= set(stems), "expected/ pins writes of cases that do not exist"
    assert {t for ts in pinned_writes().values() for t in ts} <= set(WRITABLE)
    assert {c.dialect for c in cases()} == set(NAMES)
    want = {c.canonical_path for c in cases()} | {c.expected_path(t) for c in cases() for t in c.pinned}
    assert written_files() == want, "run tests/golden/regen.py and review what it writes"


def test_every_pinned_write_has_its_reason() -> None:
    """A dialect's ``expected/README.md`` names each case it pins (or a ``prefix-*`` of them)."""
    for folder in sorted({p.parent for p in DIALECTS.glob("*/expected/*.json")}):
        readme = folder / "README.md"
        assert readme.is_file(), f"{folder} pins writes without a README.md saying why"
        text = readme.read_text(encoding="utf-8")
        globs = re.findall(r"`([\w.-]*\*)`", text)
        for p in sorted(folder.glob("*.json")):
            stem = p.name[: -len(".json")].rpartition(".")[0]
            named = f"`{stem}" in text or any(fnmatch.fnmatch(stem, g) for g in globs)
            assert named, f"{readme}: no reason for {p.name}"


@pytest.mark.parametrize(("case", "dst"), PAIRS, ids=IDS)
def test_outcome_is_preserved(case: Case, dst: str) -> None:
    src, _, out = _convert(case, dst)
    assert out.ok is src.ok


@pytest.mark.parametrize(("case", "dst"), PAIRS, ids=IDS)
def test_summary_and_message_are_preserved_where_the_target_has_a_place(case: Case, dst: str) -> None:
    src, _, out = _convert(case, dst)
    if src.summary is not None and "summary" in M[dst].carried:
        assert out.summary == src.summary
    if not src.ok and src.problems[0].message:
        assert out.problems[0].message == src.problems[0].message


@pytest.mark.parametrize(("case", "dst"), PAIRS, ids=IDS)
def test_payload_is_preserved(case: Case, dst: str) -> None:
    """Carried, or dropped with a ``field_dropped`` at the source's payload path (a writer may
    leave a payload out that its wire cannot hold, if it says so: result's ``error_data`` holds
    an object only); no dialect is named here."""
    src, conv, out = _convert(case, dst)
    if _payload(out.payload) != _payload(src.payload):
        where = M[case.dialect].path("payload")
        assert (Kind.FIELD_DROPPED, where) in [(d.kind, d.path) for d in conv.diagnostics]
        assert out.payload is None


@pytest.mark.parametrize(("case", "dst"), PAIRS, ids=IDS)
def test_first_problem_category_and_code(case: Case, dst: str) -> None:
    src, conv, out = _convert(case, dst)
    if src.ok:
        assert out.problems == ()
        return
    limit = M[dst].shape.max_problems or len(src.problems)
    assert len(out.problems) == min(limit, len(src.problems))
    for i, (p, q) in enumerate(zip(src.problems, out.problems, strict=False)):
        assert q.code == expected_code(p, dst), f"problem #{i}"
        if q.category != p.category:
            # a coarser target vocabulary: the code was changed (or chosen), and that was reported
            assert q.code != p.code
            assert any(d.kind is (Kind.CODE_MAPPED if p.code else Kind.SYNTHESIZED) for d in conv.diagnostics)
            assert q.category == M[dst].codes[q.code].category


@pytest.mark.parametrize(("case", "dst"), PAIRS, ids=IDS)
def test_diagnostics_are_well_formed(case: Case, dst: str) -> None:
    _, conv, _ = _convert(case, dst)
    assert (conv.source, conv.target) == (case.dialect, dst)
    for d in conv.diagnostics:
        assert isinstance(d.kind, Kind) and Kind(d.kind.value) is d.kind
        assert d.path.startswith("$"), d
        parse_path(d.path)
        assert d.dialect is None or d.dialect in NAMES
        assert d.message


def _loss_cases() -> list[Any]:
    out = []
    for case, dst in PAIRS:
        if case.dialect not in WRITABLE:
            continue
        marks = []
        reason = unit_table(case.dialect, "LOSS_XFAIL").get(case.stem)
        if isinstance(reason, dict):  # a gap of some targets only (a field they drop unreported)
            reason = reason.get(dst)
        if reason is not None and dst != case.dialect:
            marks.append(pytest.mark.xfail(strict=True, reason=reason))
        out.append(pytest.param(case, dst, marks=marks, id=f"{case}->{dst}"))
    return out


def _changes(original: Any, produced: Any) -> list[tuple[str, Any]]:
    """``(path, original value)`` of every value ``produced`` lacks or changed (JSON equality)."""
    out: list[tuple[str, Any]] = []

    def walk(o: Any, p: Any, segs: list[str | int]) -> None:
        if isinstance(o, dict) and isinstance(p, dict):
            for k, v in o.items():
                if k not in p:
                    out.append((format_path([*segs, k]), v))
                else:
                    walk(v, p[k], [*segs, k])
        elif type(o) is not type(p) or o != p:
            out.append((format_path(segs), o))

    walk(original, produced, [])
    return out


@pytest.mark.parametrize(("case", "dst"), _loss_cases())
def test_loss_is_never_silent(case: Case, dst: str) -> None:
    """Whatever ``read(write(x))`` loses is named by a lossy (or status_mismatch) diagnostic."""
    _, conv, _ = _convert(case, dst)
    back = envglot.convert(conv.output, from_=dst, to=case.dialect, unsupported="ignore")
    original, produced = msgspec.json.decode(case.data), msgspec.json.decode(back)
    named = [d.path for d in conv.diagnostics if d.lossy or d.kind is Kind.STATUS_MISMATCH]
    derived = unit_table(case.dialect, "DERIVED")
    silent = []
    for path, value in _changes(original, produced):
        if any(_names(d, path) for d in named):
            continue
        bases = [b for where, bs in derived.items() if _within(path, where) for b in bs]  # a derived member's own
        if any(_names(d, base) for base in bases for d in named):
            continue
        if value is None and _at(produced, path)[0]:
            continue  # a null the writer had to fill in: nothing was there to lose
        silent.append((path, value))
    assert not silent, f"lost without a diagnostic: {silent}; diagnostics: {[str(d) for d in conv.diagnostics]}"


@pytest.mark.parametrize(("case", "dst"), [(c, d) for c, d in PAIRS if c.dialect in WRITABLE], ids=str)
def test_preserve_round_trip_through_a_valid_intermediate(case: Case, dst: str) -> None:
    """Every pair: the preserve intermediate is a valid ``dst`` document (when the source is valid
    in its own dialect) and converting it back restores the source, JSON-equal (issue 11, class 7)."""
    there = envglot.convert(case.data, from_=case.dialect, to=dst, preserve=True, unsupported="ignore")
    if not envglot.validate(case.data, case.dialect):
        assert envglot.validate(there, dst) == [], there
    back = envglot.convert(there, from_=dst, to=case.dialect, preserve=True, unsupported="ignore")
    assert msgspec.json.decode(back) == msgspec.json.decode(case.data)


_CONTRARY = b'{"success":false,"data":null,"error":{"code":"x_rate_limited","message":"slow down","retryable":false}}'
"""An errorcode failure whose stated ``retryable`` contradicts its code's row (read as stated)."""


@pytest.mark.parametrize("dst", [d for d in WRITABLE if "problem.retryable" not in M[d].carried])
def test_a_stated_retryable_the_target_cannot_carry_is_reported(dst: str) -> None:
    """A ``retryable`` the source's own code row does not imply is information of its own: a
    target with no place for it (and no category word implying one) reports it at its path."""
    conv = envglot.conversion(_CONTRARY, to=dst, unsupported="ignore")
    paths = [d.path for d in conv.diagnostics if d.lossy]
    assert "$.error.retryable" in paths, [str(d) for d in conv.diagnostics]
    agreeing = _CONTRARY.replace(b'"retryable":false', b'"retryable":true')
    conv = envglot.conversion(agreeing, to=dst, unsupported="ignore")
    assert "$.error.retryable" not in [d.path for d in conv.diagnostics], "a retryable the code implies is no loss"
