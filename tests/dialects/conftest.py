"""Parametrize the golden suites: ``case`` over the class's dialect, ``pinned`` over its pinned writes."""

from __future__ import annotations

import pytest

from golden import cases


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    dialect = getattr(metafunc.cls, "dialect", None)
    if dialect is None:
        return
    own = cases(dialect)
    if "case" in metafunc.fixturenames:
        metafunc.parametrize("case", own, ids=[c.stem for c in own])
    if "pinned" in metafunc.fixturenames:
        pairs = [(c, t) for c in own for t in c.pinned if t != dialect]
        metafunc.parametrize("pinned", pairs, ids=[f"{c.stem}->{t}" for c, t in pairs])
