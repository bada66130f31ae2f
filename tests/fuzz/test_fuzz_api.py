"""The properties over every public API entry point (see :mod:`fuzz.oracle`), one test per family.

Each family (``convert``, ``mcp.wrap``, ``Migrator.record``...) runs all its option
variants on mutated seed envelopes and on hostile documents. A failing test names the
failure groups it saw and a reproducer; ``scripts/fuzz.py`` runs the same at volume.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import given

from fuzz.campaign import reproducer
from fuzz.mutator import Case, Mutator
from fuzz.oracle import PROBES, SDK_PROBES, Failure, Input, Probe
from fuzz.settings import FUZZ, SEED
from fuzz.strategies import documents, mutated_cases

FAMILIES: dict[str, list[Probe]] = defaultdict(list)
for _p in PROBES + SDK_PROBES:
    FAMILIES[_p.family].append(_p)

ENTRY_POINTS = {
    "detect",
    "convert",
    "convert(dict)",
    "conversion",
    "read",
    "read+write",
    "validate",
    "Converter.__call__",
    "Converter.__call__(str)",
    "Converter.convert_bytes",
    "Converter.conversion",
    "mcp.unwrap",
    "mcp.wrap",
    "mcp.emits",
    "inspect",
    "Result",
    "Migrator.record",
    "proxy.Rewriter.result",
}


def test_every_public_entry_point_is_probed() -> None:
    assert set(FAMILIES) == ENTRY_POINTS


def _report(failures: list[Failure]) -> str:
    groups: dict[str, Failure] = {}
    for f in failures:
        groups.setdefault(f.group, f)
    lines = [f"{len(groups)} failure group(s):"]
    for g, f in groups.items():
        lines += [f"- {g}", f"    {f.probe}: {f.detail[:300]}", f"    {reproducer(f.probe, f.data)[:600]}"]
    return "\n".join(lines)


def _check(family: str, case: Case) -> None:
    inp = Input.of(case)
    failures = [f for p in FAMILIES[family] for f in p.run(inp)]
    if failures:
        pytest.fail(_report(failures), pytrace=False)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@FUZZ
@given(case=mutated_cases())
def test_mutated_envelopes(family: str, case: Case) -> None:
    _check(family, case)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@FUZZ
@given(case=documents())
def test_hostile_documents(family: str, case: Case) -> None:
    _check(family, case)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_fixed_seeds(family: str) -> None:
    """The first mutated seeds, outside hypothesis: the same inputs on every run (``ENVGLOT_FUZZ_SEED`` shifts them)."""
    failures = []
    for seed in range(SEED, SEED + 40):
        inp = Input.of(Mutator(seed).case())
        failures += [f for p in FAMILIES[family] for f in p.run(inp)]
    if failures:
        pytest.fail(_report(failures), pytrace=False)
