"""The golden tests every dialect module runs (sqlglot's ``Validator``, pandoc's reader goldens).

A dialect's test module subclasses :class:`GoldenSuite`, sets ``dialect`` (and ``native``,
the cases whose native-style write-back reproduces the emitter byte for byte) and adds
its own dialect-specific tests. ``conftest.py`` parametrizes ``case`` over
``tests/dialects/<dialect>/cases/*.json`` and ``pinned`` over the case's pinned cross-dialect writes.
"""

from __future__ import annotations

from typing import ClassVar

import pytest

import envglot
from envelopes import detected_as
from envglot.dialects import WRITABLE
from golden import Case, canonical_form, cases, json_key, pretty, write


class GoldenSuite:
    """Read, write back and pinned writes of every golden case of one dialect."""

    dialect: ClassVar[str]
    native: ClassVar[frozenset[str]] = frozenset()
    """Case stems whose ``style="native"`` write-back is byte-equal to the input."""

    def test_detected_as_its_dialect(self, case: Case) -> None:
        assert detected_as(case.data, self.dialect)

    def test_read_matches_the_canonical_golden(self, case: Case) -> None:
        assert case.canonical_path.exists(), f"no canonical golden for {case}: run tests/golden/regen.py, review it"
        assert canonical_form(case).decode() == case.canonical_path.read_text(encoding="utf-8")

    def test_auto_detection_reads_the_same(self, case: Case) -> None:
        if envglot.detect(case.data) != self.dialect:  # a success without a marker (detected_as)
            pytest.skip(f"{self.dialect} successes carry no marker: read with from_ only")
        assert envglot.read(case.data) == envglot.read(case.data, from_=self.dialect)

    def test_write_back(self, case: Case) -> None:
        if self.dialect not in WRITABLE:
            with pytest.raises(envglot.EnvglotError, match="read-only"):
                envglot.convert(case.data, from_=self.dialect, to=self.dialect)
            return
        out = envglot.convert(case.data, from_=self.dialect, to=self.dialect, unsupported="ignore")
        if self.dialect in case.pinned:
            assert json_key(out) != json_key(case.data), f"{case} writes back unchanged: unpin it"
            assert pretty(out).decode() == case.expected_path(self.dialect).read_text(encoding="utf-8")
        else:
            assert json_key(out) == json_key(case.data)

    def test_native_style_reproduces_the_emitter(self) -> None:
        own = {c.stem: c for c in cases(self.dialect)}
        assert self.native <= own.keys(), f"unknown cases in native: {sorted(self.native - own.keys())}"
        for stem in sorted(self.native):
            data = own[stem].data
            out = envglot.convert(data, from_=self.dialect, to=self.dialect, style="native", unsupported="ignore")
            assert out.decode() == data.decode().rstrip("\n"), stem

    def test_pinned_write(self, pinned: tuple[Case, str]) -> None:
        case, target = pinned
        assert write(case, target).decode() == case.expected_path(target).read_text(encoding="utf-8")
