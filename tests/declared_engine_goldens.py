"""Record what declared dialects do (outputs, diagnostics, errors) as goldens, and replay them.

The goldens (``tests/declared/engine.json``) were recorded by running this script on main
``f9aa88e``, where ``envglot.declared`` still interpreted a declaration with its own reader and
writer; ``tests/test_declared_engine.py`` replays them against the compiled declarations, so the
compiler is proven to give the interpreter's bytes and diagnostics. The outcomes (not the
documents) were recorded again with the interpreter of ``h-fidelity`` (``f9aa88e`` plus issue 25:
preserve records every output's provenance, and more losses are reported), by running
:func:`run` over the recorded documents and cases; so were the preserve outputs when residues
moved to digest versions 2 and 5 (issue 28). Run it again only to record a deliberate
change (and say which in that test)::

    python tests/declared_engine_goldens.py

Inputs: the acme declaration and its documents, the richer ``beta`` declaration of
``tests/test_declared.py`` and its documents, ``gamma`` (nested members, an optional nested
payload, counts, a nested constant) and its documents, every bundled example, and
hypothesis-generated documents (canonical envelopes written by every writer, the declarations'
included; arbitrary objects over acme's and beta's keys), drawn with a fixed seed. Each input is
converted to each declaration, and read as each into every writable dialect, with and without
``preserve``.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "declared" / "engine.json"
DECLS = ("acme", "beta", "gamma")
GAMMA = """
dialect = "gamma"

[declare]
description = "gamma: nested members, an optional nested payload, counts and a nested constant"
required = ["$.v.tool", "$.err.kind", "$.err.retry"]
payload = "object"

[declare.constants]
"$.v.rev" = 2

[declare.detect]
keys = ["v"]

[fields]
request_id = "$.rid"
"pagination.total" = "$.page.total"
"pagination.cursor" = "$.page.next"
tool = "$.v.tool"
duration_ms = "$.v.took"
warnings = "$.v.notes[]"
"warning.message" = "$.v.notes[].m"
"warning.code" = "$.v.notes[].c"
problems = "$.err"
"problem.code" = "$.err.kind"
"problem.message" = "$.err.text"
"problem.retryable" = "$.err.retry"
"problem.retry_after_ms" = "$.err.wait.ms"
payload = "$.result.data"

[synthesize]
tool = "t0"

[codes.E1]
category = "invalid_argument"
retryable = false

[codes.E2]
category = "internal"
"""
GAMMA_DOCS = [
    b'{"v":{"rev":2,"tool":"t","took":3,"notes":[{"m":"slow","c":"W"}]},"rid":"r1","page":{"next":"c"},'
    b'"result":{"data":{"n":1}}}',
    b'{"v":{"rev":3,"tool":"t"},"err":{"kind":"E1","retry":false,"wait":{"ms":-5}},"page":{"total":-1}}',
    b'{"v":{"rev":2,"tool":"t"},"err":{"kind":"nope","text":"x","retry":true},"result":{"data":[1]}}',
]


class Case(msgspec.Struct, array_like=True):
    """One conversion: input, forced source (or ``None``), target, preserve; what it gave."""

    doc: int
    """The input's index in :attr:`Goldens.docs`."""
    src: str | None
    dst: str
    preserve: bool
    out: str | None = None
    """The output (``None`` when it raised)."""
    diagnostics: list[tuple[str, str]] = []
    """``(kind, path)`` in order."""
    error: tuple[str, str | None] | None = None
    """``(class name, JSON path)`` of the ``EnvglotError`` raised."""


class Goldens(msgspec.Struct):
    """The inputs (UTF-8) and every conversion of them."""

    docs: list[str]
    cases: list[Case]


def beta_text() -> str:
    """The ``beta`` declaration of ``tests/test_declared.py``."""
    sys.path.insert(0, str(ROOT / "tests"))
    from test_declared import BETA, BETA_WRITE

    return BETA + BETA_WRITE


def declarations(tmp: Path) -> list[str]:
    beta = tmp / "beta.toml"
    beta.write_text(beta_text())
    gamma = tmp / "gamma.toml"
    gamma.write_text(GAMMA + "".join(f'\n[[write]]\ncategory = "{c}"\ncode = "E2"\n' for c in categories()))
    return [str(ROOT / "examples" / "declared" / "acme.toml"), str(beta), str(gamma)]


def categories() -> list[str]:
    from envglot.mappings import default_mappings

    return sorted(default_mappings().categories)


def run(doc: bytes, i: int, src: str | None, dst: str, preserve: bool, mappings: list[str]) -> Case:
    import envglot

    case = Case(i, src, dst, preserve)
    try:
        conv = envglot.conversion(doc, from_=src, to=dst, preserve=preserve, mappings=mappings, unsupported="ignore")
    except envglot.EnvglotError as exc:
        case.error = (type(exc).__name__, getattr(exc, "path", None))
        return case
    case.out = conv.output.decode()
    case.diagnostics = [(d.kind.value, d.path) for d in conv.diagnostics]
    return case


def _generated() -> list[bytes]:
    """Documents drawn by hypothesis with a fixed seed."""
    sys.path.insert(0, str(ROOT / "tests"))
    import envglot
    from envelopes import canonical_envelopes
    from envglot.dialect import writable_names
    from test_declared import ANY_DOCS

    out: list[bytes] = []
    targets = writable_names()  # the bundled ones, acme and beta

    @seed(24)
    @settings(max_examples=150, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(env=canonical_envelopes(), dst=st.sampled_from(targets))
    def canonical(env: envglot.Envelope, dst: str) -> None:
        out.append(envglot.write(env, to=dst, unsupported="ignore"))

    @seed(24)
    @settings(max_examples=60, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(doc=ANY_DOCS)
    def arbitrary(doc: dict[str, Any]) -> None:
        out.append(msgspec.json.encode(doc))

    canonical()
    arbitrary()
    return out


def inputs() -> Iterator[bytes]:
    ex = ROOT / "examples"
    for p in sorted((ex / "declared" / "acme").glob("*.json")):
        yield p.read_bytes().strip()
    sys.path.insert(0, str(ROOT / "tests"))
    from test_declared import BETA_DOCS

    yield from BETA_DOCS
    yield from GAMMA_DOCS
    for p in sorted(ex.glob("*/*.json")):
        if p.parent.name != "declared":
            yield p.read_bytes()


def cases(mappings: list[str], docs: list[bytes]) -> list[Case]:
    from envglot.dialect import writable_names

    bundled = [n for n in writable_names() if n not in DECLS]
    out: list[Case] = []
    for i, doc in enumerate(docs):
        for preserve in (False, True):
            for d in DECLS:
                out.append(run(doc, i, None, d, preserve, mappings))
                for t in (*bundled, *DECLS):
                    out.append(run(doc, i, d, t, preserve, mappings))
    return out


def main() -> None:
    from envglot.mappings import mappings_for

    with tempfile.TemporaryDirectory() as tmp:
        m = declarations(Path(tmp))
        mappings_for(m)
        docs = list(dict.fromkeys([*inputs(), *_generated()]))
        recorded = cases(m, docs)
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    golden = Goldens([d.decode() for d in docs], recorded)
    GOLDEN.write_bytes(msgspec.json.format(msgspec.json.encode(golden), indent=0))
    print(f"{GOLDEN.relative_to(ROOT)}: {len(recorded)} conversions of {len(docs)} documents")


if __name__ == "__main__":
    main()
