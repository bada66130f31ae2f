"""A probe's declared needs (``Probe.needs``) and the skip they allow a forced source (issue 24).

A forced source's success is checked against "another dialect's failure wins" (issue 23),
which needs the document's detection. ``envglot.detect.forced_rival`` generates it per
registry and source, running only the probes whose needs the top-level keys meet; these
tests hold the needs to the probes (every bundled document, generated top levels) and the
generated detection to the full one (the same documents, for every forced source).
"""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import envglot
from envelopes import sample_files
from envglot.detect import JSONRPC, MCP, Detection, classify, forced_rival
from envglot.dialect import Facts, registered
from envglot.errors import DetectError, EnvglotError
from envglot.limits import members_of
from envglot.mappings import mappings_for
from envglot.registry import Registry, bundled

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = next(
    (p for p in (ROOT.parent / "shared" / "upstream", ROOT.parents[1] / "shared" / "upstream") if p.is_dir()),
    ROOT.parent / "shared" / "upstream",
)
ACME = ROOT / "examples" / "declared" / "acme.toml"
BUNDLED = sorted(d.name for d in registered())
DOCS = [p.read_bytes() for d in BUNDLED for p in sample_files(d)] + [
    p.read_bytes() for p in sorted(UPSTREAM.glob("*/*.json"))
]


def _corpus() -> list[bytes]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import corpus
    finally:
        sys.path.pop(0)
    c = corpus.generate({"tiny": 40, "medium": 10}, dialects=tuple(BUNDLED))
    return [b for d in BUNDLED for size in ("tiny", "medium") for b in c.payloads(d, size)]


ALL = DOCS + _corpus()


def _fires_without_its_needs(present: dict[str, msgspec.Raw], reg: Registry) -> list[str]:
    """The probes that name evidence in ``present`` though it holds none of their needs."""
    wrong = []
    keys = present.keys()
    for d in reg:
        for probe in d.probes:
            if probe.needs is None:
                continue
            facts = Facts(present, frozenset(present))
            if probe.test(facts) is not None and not any(keys >= s for s in probe.needs):
                wrong.append(f"{d.name} {probe.priority}")
    return wrong


def test_the_documents_are_there() -> None:
    assert len(DOCS) > 50 and len(ALL) > 400


def test_every_bundled_probe_declares_its_needs() -> None:
    """Without needs a forced source reading any document runs every probe (no skip at all)."""
    undeclared = [f"{d.name} {p.priority}" for d in registered() for p in d.probes if p.needs is None]
    assert undeclared == []


def test_no_probe_fires_on_a_known_document_without_its_needs() -> None:
    reg = bundled()
    for doc in ALL:
        present = members_of(doc)
        if present is not None:
            assert _fires_without_its_needs(present, reg) == [], doc[:200]


_VALUES = [
    b"true",
    b"false",
    b"null",
    b"0",
    b"200",
    b"404",
    b'"x"',
    b'"response-v2"',
    b"[]",
    b'[{"code":"E"}]',
    b"{}",
    b'{"requestId":"r","generatedAt":"t"}',
    b'{"code":404,"message":"m"}',
    b'{"version":"response-v2","request_id":"r"}',
    b'{"tool_version":"1","elapsed_ms":3}',
    b'{"warnings":[]}',
]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_no_probe_fires_on_a_generated_top_level_without_its_needs(data: st.DataObject) -> None:
    """Top levels made of the keys the dialects define, with values their probes look at."""
    reg = bundled()
    known = sorted({k for d in reg for k in d.keys} | {"status", "type", "found", "schema_id", "jsonrpc"})
    present = data.draw(st.dictionaries(st.sampled_from(known), st.sampled_from(_VALUES).map(msgspec.Raw), max_size=6))
    assert _fires_without_its_needs(present, reg) == []


def _ignored(det: Detection | None, src: str) -> bool:
    """What ``pipeline._other_dialect`` ignores: the source itself, a wrapper, no evidence."""
    return det is None or det.evidence is None or det.dialect in (src, MCP, JSONRPC)


def _detection(doc: bytes, reg: Registry) -> Detection | None:
    try:
        return classify(doc, reg)
    except DetectError:
        return None


def _check_forced(doc: bytes, reg: Registry, src: str) -> Detection | None:
    """``forced_rival`` of ``doc`` as ``src``, checked against the full detection (``None``: no rival)."""
    present = members_of(doc)
    if present is None:
        return None
    return _check_rival(present, reg, src, doc)


def _check_rival(present: dict[str, msgspec.Raw], reg: Registry, src: str, doc: bytes = b"") -> Detection | None:
    full = _detection(doc or msgspec.json.encode(present), reg)
    rival = forced_rival(reg, src)(present)
    if rival is None:
        assert _ignored(full, src), (src, full, present)
        return None
    assert full is not None and not _ignored(full, src) and rival is reg.get(full.dialect), (src, full, rival, present)
    return full


def test_the_generated_detection_agrees_with_detection_on_every_known_document() -> None:
    reg = bundled()
    rivals = 0
    for doc in ALL:
        for src in BUNDLED:
            rivals += _check_forced(doc, reg, src) is not None
    assert rivals > len(ALL) // 2  # most documents have another dialect's probe fire for some source


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_the_generated_detection_agrees_with_detection_on_generated_top_levels(data: st.DataObject) -> None:
    reg = bundled()
    known = sorted({k for d in reg for k in d.keys} | {"status", "type", "found", "schema_id", "jsonrpc", "content"})
    present = data.draw(st.dictionaries(st.sampled_from(known), st.sampled_from(_VALUES).map(msgspec.Raw), max_size=6))
    for src in BUNDLED:
        _check_rival(present, reg, src)


def test_the_generated_detection_of_a_declared_registry_agrees_with_detection() -> None:
    reg = mappings_for([str(ACME)]).registry
    docs = ALL + [p.read_bytes() for p in sorted((ROOT / "examples" / "declared" / "acme").glob("*.json"))]
    for doc in docs:
        for src in (*BUNDLED, "acme"):
            _check_forced(doc, reg, src)


def _never_a_success(doc: bytes, src: str, **kw: object) -> None:
    """``doc`` forced as ``src`` is refused or converts to a failure, on the fused and the hub path."""
    for convert in (envglot.convert, lambda *a, **k: envglot.conversion(*a, **k).output):
        try:
            out = convert(doc, to="errorcode", from_=src, unsupported="ignore", **kw)
        except EnvglotError:
            continue
        assert msgspec.json.decode(out)["success"] is False, (src, doc)


RESULT_FAIL = b'{"success":false,"error":"no task t-1","error_type":"not_found"}'
PROBLEM_FAIL = b'{"type":"https://x.dev/not-found","status":404,"title":"Not found","detail":"no task t-1"}'
ERRORCODE_FAIL = b'{"success":false,"data":null,"error":{"code":"not_found","message":"no task t-1"}}'


@pytest.mark.parametrize(
    ("doc", "dialect"),
    [(RESULT_FAIL, "result"), (PROBLEM_FAIL, "problem-json"), (ERRORCODE_FAIL, "errorcode")],
    ids=["result", "problem-json", "errorcode"],
)
def test_forced_dotbot_still_detects_another_dialects_failure(doc: bytes, dialect: str) -> None:
    reg = bundled()
    assert forced_rival(reg, "dotbot")(members_of(doc)) is reg.get(dialect)
    assert classify(doc, reg).dialect == dialect
    _never_a_success(doc, "dotbot")


def test_a_toml_dialects_failure_is_still_detected_by_a_forced_source() -> None:
    m = mappings_for([str(ACME)])
    doc = (ROOT / "examples" / "declared" / "acme" / "not-found.json").read_bytes()
    assert forced_rival(m.registry, "legacy-v1")(members_of(doc)) is m.registry.get("acme")
    for src in BUNDLED:
        _never_a_success(doc, src, mappings=[str(ACME)])
