"""Whatever an overlay remaps, envglot's own output validates against the same tables.

The writer and the contract check must derive every code-dependent value (errorcode's
``retryable``, a closed vocabulary's membership) by one rule; an overlay that changes a
code's category or leaves ``retryable`` to the category must not split them.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import envglot
import envglot.crosswalk
from envglot.dialect import registered
from envglot.mappings import default_mappings
from golden import cases

M = default_mappings()
CATEGORIES = sorted(M.categories)
WRITABLE = [d.name for d in registered() if d.shape.writable]
SOURCES = [c for c in cases() if not c.stem.startswith("bad")]


@st.composite
def overlays(draw: st.DrawFn) -> tuple[str, dict[str, object]]:
    """An overlay that remaps a few existing codes of one writable dialect (category, retryable or not)."""
    dialect = draw(st.sampled_from(WRITABLE))
    codes = sorted(M[dialect].codes)
    picked = draw(st.lists(st.sampled_from(codes), min_size=1, max_size=4, unique=True)) if codes else []
    rows: dict[str, object] = {}
    for code in picked:
        row: dict[str, object] = {"category": draw(st.sampled_from(CATEGORIES))}
        retryable = draw(st.sampled_from([None, True, False]))
        if retryable is not None:
            row["retryable"] = retryable
        if M[dialect].codes[code].type is not None:
            row["type"] = M[dialect].codes[code].type
        rows[code] = row
    return dialect, {"dialect": dialect, "codes": rows}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(overlay=overlays())
def test_outputs_validate_under_any_code_remapping(overlay: tuple[str, dict[str, object]], tmp_path: Path) -> None:
    dialect, table = overlay
    path = tmp_path / f"overlay-{abs(hash(tomli_w.dumps(table)))}.toml"
    path.write_text(tomli_w.dumps(table))
    try:
        envglot.crosswalk.check_overlay(path)
    except envglot.MappingError:  # e.g. a remap that leaves a category without a writer choice
        return
    for case, target in itertools.product(SOURCES, [dialect]):
        try:
            out = envglot.convert(case.data, to=target, mappings=[path], unsupported="ignore")
        except envglot.EnvglotError:
            continue  # inputs the source tables refuse are not this test's subject
        assert envglot.validate(out, target, mappings=[path]) == [], (str(case), target, table)


@pytest.mark.parametrize("target", WRITABLE)
def test_outputs_validate_with_the_bundled_tables(target: str) -> None:
    for case in SOURCES:
        try:
            out = envglot.convert(case.data, to=target, unsupported="ignore")
        except envglot.EnvglotError:
            continue
        assert envglot.validate(out, target) == [], str(case)
