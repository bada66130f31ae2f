"""Differential proof: declared dialects compiled by ``envglot.fields`` give what the interpreter
of main ``f9aa88e`` gave (``tests/declared/engine.json``, recorded by ``tests/declared_engine_goldens.py``).

Every recorded conversion (acme and beta documents, every bundled example, hypothesis-drawn
documents; to and from the declarations, with and without preserve) is replayed through the hub
(fused paths off) and through the fused pair paths: the same output bytes, the same diagnostics
(kind and path, in order), the same errors (class and path).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from declared_engine_goldens import GOLDEN, Goldens, declarations, run
from envglot.declared import unregister
from envglot.fields import use_compiled
from envglot.mappings import mappings_for

GOLDENS = msgspec.json.decode(GOLDEN.read_bytes(), type=Goldens)


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    m = declarations(Path(tmp_path_factory.mktemp("decl")))
    mappings_for(m)
    yield m
    unregister("acme")
    unregister("beta")


@pytest.mark.parametrize("compiled", [False, True], ids=["hub", "fused"])
def test_compiled_declarations_give_the_interpreters_bytes_and_diagnostics(both: list[str], compiled: bool) -> None:
    docs = [d.encode() for d in GOLDENS.docs]
    use_compiled(compiled)
    try:
        wrong = []
        for want in GOLDENS.cases:
            got = run(docs[want.doc], want.doc, want.src, want.dst, want.preserve, both)
            if got != want:
                wrong.append((GOLDENS.docs[want.doc], want, got))
    finally:
        use_compiled(True)
    assert not wrong, f"{len(wrong)} of {len(GOLDENS.cases)} differ; first: {wrong[0]}"
