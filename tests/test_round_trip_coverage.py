"""Loss is never silent, meaning never flips (issue 25): S -> T -> S over real and generated envelopes.

For every document of the corpus (the goldens, the real upstream envelopes read in place, a slice
of the benchmark corpus) and every ordered pair of writable dialects, every source value the
round trip changes or drops is named by a diagnostic of one of the two conversions, and the
outcome, category and stated ``retryable`` never change unless a diagnostic says so
(``tests/roundtrip.py``). The same holds for generated envelopes (hypothesis).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

import envglot
from envelopes import canonical_envelopes, documents, sample_files
from envglot.dialect import dialect_names
from envglot.dialects import WRITABLE
from envglot.mappings import default_mappings
from fuzz.settings import FUZZ
from roundtrip import inverted, uncovered, upstream_files

ROOT = Path(__file__).resolve().parents[1]


def _bench_corpus() -> Any:
    spec = importlib.util.spec_from_file_location("bench_corpus", ROOT / "benchmarks" / "corpus.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_corpus", mod)
    spec.loader.exec_module(mod)
    return mod


def _corpus() -> list[tuple[str, str, bytes]]:
    """(dialect, name, bytes) of every document that reads in its own dialect."""
    out = []
    for d in WRITABLE:
        for p in (*sample_files(d), *upstream_files(d)):
            out.append((d, f"{p.parent.parent.name}/{d}/{p.name}", p.read_bytes()))
    bench = _bench_corpus().generate({"tiny": 10}, dialects=WRITABLE)
    for i, rec in enumerate(bench):
        out.append((rec.dialect, f"bench/{rec.dialect}/{i}", rec.data))
    readable = []
    for d, name, data in out:
        try:
            envglot.read(data, from_=d)
        except envglot.EnvglotError:
            continue  # a golden of a refused document (its own tests cover the refusal)
        readable.append((d, name, data))
    return readable


CORPUS = _corpus()


@pytest.mark.parametrize("dst", WRITABLE)
@pytest.mark.parametrize("src", WRITABLE)
def test_corpus_round_trip_changes_nothing_silently(src: str, dst: str) -> None:
    problems = []
    for d, name, data in CORPUS:
        if d != src:
            continue
        for line in (*uncovered(data, src, dst), *inverted(data, src, dst)):
            problems.append(f"{src} -> {dst}: {name}: {line}")
    assert not problems, f"{src} -> {dst} -> {src}:\n" + "\n".join(problems[:40])


@pytest.mark.parametrize("src", WRITABLE)
def test_generated_round_trip_changes_nothing_silently(src: str) -> None:
    @FUZZ
    @given(doc=documents(src), dst=st.sampled_from(WRITABLE))
    def check(doc: dict[str, Any], dst: str) -> None:
        data = msgspec.json.encode(doc)
        try:
            envglot.read(data, from_=src)
        except envglot.EnvglotError:
            return
        found = [
            f"{src} -> {dst}: generated: {line}" for line in (*uncovered(data, src, dst), *inverted(data, src, dst))
        ]
        assert found == []

    check()


def test_a_message_synthesized_for_a_single_error_target_is_covered() -> None:
    """Found by the property above: a dotbot error with an empty message is written to code-graph
    with the summary as its message; the ``synthesized`` diagnostic at code-graph's index-less
    ``$.data.result.error.message`` names the first error's ``$.errors[0].message``."""
    doc = {
        "schema_id": "dotbot-mcp-response@1",
        "status": "error",
        "errors": [{"message": "", "code": "ALIAS_CONFLICT"}],
        "warnings": [],
        "tool": "",
        "version": "",
        "summary": "Output",
        "data": {},
        "audit": {"timestamp": "", "duration_ms": 0, "source": ""},
    }
    data = msgspec.json.encode(doc)
    assert uncovered(data, "dotbot", "code-graph") == []
    assert inverted(data, "dotbot", "code-graph") == []


@pytest.mark.parametrize("dst", WRITABLE)
def test_every_writer_output_over_the_corpus_validates(dst: str) -> None:
    """envglot never writes what its own validator rejects (issue 25): the output of every
    writer, from every corpus document valid in its own dialect, passes ``validate`` in its
    dialect. (A document that breaks its own contract keeps its unknown members when written
    back to its own dialect: that is preservation, not a new violation.)"""
    bad = []
    for d, name, data in CORPUS:
        if envglot.validate(data, d):
            continue
        out = envglot.convert(data, from_=d, to=dst, unsupported="ignore")
        found = envglot.validate(out, dst)
        if found:
            bad.append(f"{name} -> {dst}: {found[0]}")
    assert not bad, "\n".join(bad[:20])


@pytest.mark.parametrize("dst", WRITABLE)
def test_errorcode_tool_version_is_reported_where_meta_cannot_come_back(dst: str) -> None:
    """errorcode ``meta.tool_version`` is the contract's constant: it comes back with ``meta``
    when any of meta's fields has a place in the target, and is reported at its own path when
    none has (result, problem-json: no duration). The report looks at the first conversion only:
    code-graph has no place for the duration, but its synthesized ``requestId`` brings a ``meta``
    (``correlation_id``) back, so there the report is conservative."""
    data = b'{"success": true, "data": {"a": 1}, "meta": {"tool_version": "1.0", "elapsed_ms": 5}}'
    there = envglot.conversion(data, from_="errorcode", to=dst, unsupported="ignore")
    back = msgspec.json.decode(envglot.convert(there.output, from_=dst, to="errorcode", unsupported="ignore"))
    said = [d for d in there.diagnostics if d.path == "$.meta.tool_version"]
    if "meta" in back:
        assert back["meta"]["tool_version"] == "1.0"
        assert (said == []) == ("duration_ms" in default_mappings()[dst].carried)
    else:
        assert [d.kind for d in said] == [envglot.Kind.FIELD_DROPPED], there.diagnostics
        assert "the contract's constant" in said[0].message
    assert uncovered(data, "errorcode", dst) == []


def test_a_failure_payload_key_replaced_is_named_at_the_failure_payload() -> None:
    """Found by the generated property: result ``error_data.error`` (a payload key of a failure)
    replaced by code-graph's error is reported at ``$.error_data.error``, not the success slot."""
    data = b'{"success": false, "error": "m", "error_data": {"bind": 1, "error": 2}}'
    c = envglot.conversion(data, from_="result", to="code-graph", unsupported="ignore")
    assert "$.error_data.error" in [d.path for d in c.diagnostics if d.kind is envglot.Kind.VALUE_COERCED]
    assert uncovered(data, "result", "code-graph") == []


def test_actions_after_a_flattened_intent_are_reported_moved() -> None:
    """Found by the generated property: a dotbot intent becomes a plain code-graph next step
    before the actions; read back, it is ``actions[0]`` and every action moves one place on.
    Each action is reported at its own path (``value_coerced``), not only the intent."""
    doc = {
        "schema_id": "dotbot-mcp-response@1",
        "tool": "t",
        "version": "1.0.0",
        "status": "ok",
        "summary": "s",
        "data": {},
        "warnings": [],
        "errors": [],
        "audit": {"timestamp": "2026-01-01T00:00:00Z", "duration_ms": 1, "source": "x"},
        "intent": {"recommended_next": "a.b", "parameters": {"x": 1}, "reason": "why"},
        "actions": [
            {"id": "c-d", "type": "suggestion", "label": "Run c.d", "tool": "c.d", "parameters": {}, "reason": "r"}
        ],
    }
    data = msgspec.json.encode(doc)
    c = envglot.conversion(data, from_="dotbot", to="code-graph", unsupported="ignore")
    moved = [d for d in c.diagnostics if d.path == "$.actions[0]"]
    assert [d.kind for d in moved] == [envglot.Kind.VALUE_COERCED] and "moves 1 place(s) on" in moved[0].message
    assert uncovered(data, "dotbot", "code-graph") == []


@pytest.mark.parametrize("src", dialect_names())
def test_envglot_never_writes_what_its_validator_rejects(src: str) -> None:
    """The property over the reader x writer matrix (issue 25): a generated document valid in
    its dialect, converted to every writable dialect, passes ``validate`` there (the validators
    are as strict as the specs: never ``null`` for an absent optional member, an object where
    the spec says object)."""

    docs = documents(src)
    if src in WRITABLE:  # and what its own writer makes of canonical envelopes (valid by construction)
        docs |= canonical_envelopes().map(lambda e: msgspec.json.decode(envglot.write(e, to=src, unsupported="ignore")))
    seen = [0]

    @FUZZ
    @given(doc=docs, dst=st.sampled_from(WRITABLE))
    def check(doc: dict[str, Any], dst: str) -> None:
        data = msgspec.json.encode(doc)
        if envglot.validate(data, src):
            return  # not valid in its own dialect: nothing to keep
        seen[0] += 1
        out = envglot.convert(data, from_=src, to=dst, unsupported="ignore")
        assert envglot.validate(out, dst) == [], out[:2000]

    check()
    assert seen[0], f"no generated {src} document was valid: the property checked nothing"
