"""Differential proof: declared dialects compiled by ``envglot.fields`` give what the interpreter
of main ``f9aa88e`` gave (``tests/declared/engine.json``, recorded by ``tests/declared_engine_goldens.py``),
with the deliberate changes of issue 25 (the ``h-fidelity`` interpreter's outcomes for the same
documents: a provenance residue on every preserve output into another dialect, and the losses
it reports besides: 342 of the 11460 conversions), and of issue 28 (residues record digest
version 2: the 1000 preserve outputs with a residue were recorded again, each checked to differ
only in the residue's ``v`` and ``digest`` and code-graph's ``approxTokens``, which counts them;
and again when residues that take the payload moved to version 4: the 590 such outputs, each
checked the same way, with the same diagnostics and errors; and again for residue version 5, whose
digest hashes the bytes as they travel: the 972 outputs with a version 3 or 4 residue, each checked
to differ only in the residue's ``v`` and ``digest``, with the same diagnostics and errors).

Every recorded conversion (acme and beta documents, every bundled example, hypothesis-drawn
documents; to and from the declarations, with and without preserve) is replayed through the hub:
the same output bytes, the same diagnostics (kind and path, in order), the same errors (class and
path). Every one without preserve is replayed through the fused pair paths too (``convert`` with
nobody collecting diagnostics): the same bytes, the same errors.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

import envglot
from declared_engine_goldens import GOLDEN, Goldens, categories, declarations, run
from envglot.fields import pair_function, use_compiled
from envglot.mappings import mappings_for

GOLDENS = msgspec.json.decode(GOLDEN.read_bytes(), type=Goldens)


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return declarations(Path(tmp_path_factory.mktemp("decl")))


def test_compiled_declarations_give_the_interpreters_bytes_and_diagnostics(both: list[str]) -> None:
    docs = [d.encode() for d in GOLDENS.docs]
    use_compiled(False)
    try:
        wrong = []
        for want in GOLDENS.cases:
            got = run(docs[want.doc], want.doc, want.src, want.dst, want.preserve, both)
            if got != want:
                wrong.append((GOLDENS.docs[want.doc], want, got))
    finally:
        use_compiled(True)
    assert not wrong, f"{len(wrong)} of {len(GOLDENS.cases)} differ; first: {wrong[0]}"


def test_fused_paths_of_declarations_give_the_interpreters_bytes_and_errors(both: list[str]) -> None:
    docs = [d.encode() for d in GOLDENS.docs]
    wrong = []
    fused = 0
    reg = mappings_for(both).registry
    for want in GOLDENS.cases:
        if want.preserve:
            continue
        src, dst = reg.get(want.src) if want.src else None, reg.get(want.dst)
        fused += src is not None and pair_function(src, dst) is not None
        try:
            got: tuple[str | None, tuple[str, str | None] | None] = (
                envglot.convert(
                    docs[want.doc], from_=want.src, to=want.dst, mappings=both, unsupported="ignore"
                ).decode(),
                None,
            )
        except envglot.EnvglotError as exc:
            got = None, (type(exc).__name__, getattr(exc, "path", None))
        if got != (want.out, want.error):
            wrong.append((GOLDENS.docs[want.doc], want, got))
    assert fused > 1000  # the declarations' pairs do have fused paths
    assert not wrong, f"{len(wrong)} differ; first: {wrong[0]}"


ORDER = """
dialect = "order"

[declare]
description = "order: a nested object declared before a top-level member, its first member absent"

[declare.detect]
keys = ["ord"]

[declare.constants]
"$.ord" = 1

[fields]
request_id = "$.a.x"
summary = "$.b"
tool = "$.a.z"
problems = "$.err"
"problem.code" = "$.err.code"
payload = "$.data"

[codes.E]
category = "internal"
"""


def test_deliberately_different_an_object_is_written_where_it_is_declared(tmp_path: Path) -> None:
    """The one deliberate difference from the interpreter: it put a nested object where its first
    member *with a value* was declared (``{"ord":1,"b":"s","a":{"z":"t"},...}`` here, ``x``
    absent), so the key order depended on which members a document had, and a preserve round
    trip (which restores declared members in declaration order, ``DeclaredDialect.arrange``)
    did not give such a document back byte for byte. The compiled writer builds the declared
    tree: the object goes where it is declared, as ``arrange`` puts it."""
    path = tmp_path / "order.toml"
    path.write_text(ORDER + "".join(f'\n[[write]]\ncategory = "{c}"\ncode = "E"\n' for c in categories()))
    m = [str(path)]
    doc = b'{"ord":1,"b":"s","a":{"z":"t"},"data":1}'
    out = envglot.convert(doc, to="order", mappings=m, unsupported="ignore")
    assert out == b'{"ord":1,"a":{"z":"t"},"b":"s","data":1}'  # the interpreter: doc itself
    assert mappings_for(m).registry.get("order").arrange(out) == out
