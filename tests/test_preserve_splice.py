"""The version 3/4 residue placed into a large output by splicing (``residue.placed_whole``):
the same bytes as placing it through the output's decoded top level, or ``None`` (that route)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import msgspec
import pytest

import envglot
from envglot import residue
from envglot.dialect import get_dialect
from envglot.dialects import WRITABLE
from envglot.limits import members_of
from envglot.mappings import default_mappings

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_corpus", ROOT / "benchmarks" / "corpus.py")
assert _spec is not None and _spec.loader is not None
bench_corpus = importlib.util.module_from_spec(_spec)
sys.modules["bench_corpus"] = bench_corpus
_spec.loader.exec_module(bench_corpus)

M = default_mappings()
LARGE = bench_corpus.generate({"large": 3, "medium": 2}, dialects=tuple(WRITABLE))
PAIRS = [
    (src, dst)
    for src in WRITABLE
    for dst in WRITABLE
    if src != dst
    and residue.payload_paths(M[src].fields.get("payload"), M[dst].fields.get("payload"), M[dst].shape.residue)
]


def _paths(src: str, dst: str) -> residue.Takes:
    takes = residue.take_paths(M[src].fields, M[dst].fields, M[dst].shape.residue)
    assert takes
    return takes


def _decoded(src: str, dst: str, original: bytes, out: bytes) -> bytes:
    """The residue placed through ``out``'s decoded top level (the pipeline's other route)."""
    top = residue.open_document(out)
    res = residue.whole(src, original, members_of(original), top, _paths(src, dst))
    residue.set_path(top, list(residue.slot_path(M[dst].shape.residue)), res)
    return residue.encode(top)


def _spliced(src: str, dst: str, original: bytes, out: bytes) -> bytes | None:
    slot = residue.slot_path(M[dst].shape.residue)
    return residue.placed_whole(src, original, members_of(original), out, _paths(src, dst), slot)


def test_some_pairs_take_the_payload() -> None:
    assert ("dotbot", "response-v2") in PAIRS


@pytest.mark.parametrize(("src", "dst"), PAIRS)
def test_a_spliced_residue_is_the_decoded_placement_byte_for_byte(src: str, dst: str) -> None:
    """Every pair whose residue may take the payload, on medium and large corpus documents: the
    splice gives the decoded placement's bytes or declines, and the converter's output (which
    splices from ``SPLICE_MIN`` bytes on) is that placement, sealed."""
    ignore = envglot.Converter(to=dst, from_=src, unsupported="ignore")
    preserve = envglot.Converter(to=dst, from_=src, unsupported="ignore", preserve=True)
    spliced = 0
    for size in ("medium", "large"):
        for doc in LARGE.payloads(src, size):
            try:
                out = ignore.convert_bytes(doc)
            except envglot.EnvglotError:
                continue
            original = msgspec.json.format(doc, indent=-1)  # the pipeline minifies a spaced document first
            want = _decoded(src, dst, original, out)
            got = _spliced(src, dst, original, out)
            assert got is None or got == want
            spliced += got is not None
            assert preserve.convert_bytes(doc) == get_dialect(dst).seal(want)
    if (src, dst) in (("dotbot", "response-v2"), ("problem-json", "code-graph"), ("code-graph", "result")):
        assert spliced  # a payload one key deep into one key, one into two, two into one


def _dotbot() -> tuple[bytes, bytes]:
    """A large dotbot success and its payload's bytes."""
    for doc in LARGE.payloads("dotbot", "large"):
        members = members_of(doc)
        assert members is not None
        if bytes(members["status"]) == b'"ok"':
            return doc, bytes(members["data"])
    raise AssertionError("no dotbot success in the corpus")


DOC, P = _dotbot()


@pytest.mark.parametrize(
    ("out", "splices"),
    [
        (b'{"success":true,"data":' + P + b',"error":null,"meta":{"version":"response-v2"}}', True),
        (b'{"success":true,"data":' + P + b',"meta":{}}', True),
        (b'{"success":true,"data":' + P + b"}", True),  # the slot's object created after the payload
        (b'{"meta":{"version":"response-v2"},"data":' + P + b"}", True),  # the slot before the payload
        (b'{"meta":{},"data":' + P + b',"data":null}', False),  # a repeated key: the last one counts
        (b'{"meta":{},"data":null,"data":' + P + b"}", False),
        (b'{"x":{"data":' + P + b'},"data":' + P + b',"meta":{}}', False),  # first found nested
        (b'{"x\\"data":' + P + b',"data":' + P + b',"meta":{}}', False),  # first found inside a key
        (b'{"\\u0061":1,"data":' + P + b',"meta":{}}', False),  # a key msgspec spells otherwise
        (b'{"success":true,"data":' + P[:-1] + b" }}", False),  # other bytes
        (b'{"success":true,"data":{"other":1},"meta":{}}', False),
    ],
)
def test_the_splice_declines_what_the_text_does_not_prove(out: bytes, splices: bool) -> None:
    """Repeated keys, a payload key found first elsewhere, keys spelled otherwise, other bytes:
    ``None`` (the decoded placement), never other bytes."""
    got = _spliced("dotbot", "response-v2", DOC, out)
    assert (got is not None) is splices
    if got is not None:
        assert got == _decoded("dotbot", "response-v2", DOC, out)
        assert b'"take":' in got


def test_a_number_payload_is_not_matched_by_its_prefix() -> None:
    doc = b'{"status":"ok","data":12,"warnings":[],"errors":[]}'
    assert _spliced("dotbot", "response-v2", doc, b'{"success":true,"data":123,"meta":{}}') is None
    out = b'{"success":true,"data":12,"meta":{}}'
    assert _spliced("dotbot", "response-v2", doc, out) == _decoded("dotbot", "response-v2", doc, out)


def _problem_json() -> tuple[bytes, bytes]:
    """A large problem-json success and its payload's bytes (code-graph's ``data.result``)."""
    for doc in LARGE.payloads("problem-json", "large"):
        members = members_of(doc)
        assert members is not None
        if bytes(members["status"]) == b"200" and "data" in members:
            return doc, bytes(members["data"])
    raise AssertionError("no problem-json success in the corpus")


PJ, Q = _problem_json()
HEAD = b'{"success":true,"data":{"tool":"t","version":"1.0","requestId":"r","generatedAt":"g"'
META = b'"meta":{"approxTokens":0,"truncated":false,"limits":{}}'


@pytest.mark.parametrize(
    ("out", "splices"),
    [
        (HEAD + b',"result":' + Q + b"," + META + b"}}", True),
        (HEAD + b',"result":' + Q + b"}}", True),
        (b'{"data":{"result":' + Q + b"}}", True),
        (b'{"data":{"result":' + Q + b'},"success":true}', True),
        (HEAD + b',"result":' + Q + b',"result":null}}', False),  # a repeated key: the last one counts
        (HEAD + b',"result":' + Q + b'},"data":{"result":null}}', False),
        (b'{"x":{"data":{"result":' + Q + b'}},"data":{"result":' + Q + b"}}", False),  # first found nested
        (b'{"data":{"x":{"result":' + Q + b'},"result":' + Q + b"}}", False),
        (b'{"data":{"x":1},"result":' + Q + b"}", False),  # the second key outside the first's object
        (b'{"data":{"x\\"result":' + Q + b',"result":' + Q + b"}}", False),  # first found inside a key
        (b'{"data":{"\\u0061":1,"result":' + Q + b"}}", False),  # a key msgspec spells otherwise
        (b'{"data":{"result":' + Q[:-1] + b" }}}", False),  # other bytes
        (b'{"data":"x","result":' + Q + b"}", False),
    ],
)
def test_a_payload_two_keys_deep_is_spliced_only_where_the_text_proves_it(out: bytes, splices: bool) -> None:
    """Into code-graph (the payload at ``$.data.result``): the same declines, at either level."""
    got = _spliced("problem-json", "code-graph", PJ, out)
    assert (got is not None) is splices
    if got is not None:
        assert got == _decoded("problem-json", "code-graph", PJ, out)
        assert b'"take":' in got


@pytest.mark.parametrize(
    ("out", "splices"),
    [
        (b'{"type":"about:blank","status":200,"data":' + P + b"}", True),  # the slot a new last member
        (b'{"type":"a,\\"data\\":","data":' + P + b',"warnings":[]}', True),  # the key's text in a string first
        (b'{"type":"{[","data":' + P + b"}", True),  # a bracket before it: proven by decoding
        (b'{"x":[{"data":' + P + b'}],"data":' + P + b"}", False),  # first found nested
        (b'{"envglot":1,"data":' + P + b"}", True),  # the slot present: set in place, encoded
        (b'{"data":' + P + b',"envglot":{"v":1}}', True),
        (b'{"data":' + P + b',"data":null}', False),  # a repeated key: the last one counts
        (b'{"type" :"x","data":' + P + b"}", False),  # spaced: does not re-encode to itself
        (b'{"\\u0074ype":"x","data":' + P + b"}", False),  # a key msgspec spells otherwise
    ],
)
def test_a_one_key_slot_splices_at_the_end_or_declines(out: bytes, splices: bool) -> None:
    """Into a target whose slot is one key (problem-json's ``$.envglot``): the residue appended as
    ``out``'s last member is the decoded placement's bytes, a key's place is proven with or without
    a bracket before it, and whatever the text does not prove is ``None``."""
    got = _spliced("dotbot", "problem-json", DOC, out)
    assert (got is not None) is splices
    if got is not None:
        assert got == _decoded("dotbot", "problem-json", DOC, out)


def test_a_failures_details_are_spliced_when_it_has_no_payload() -> None:
    """A large problem-json failure (no ``data``, its ``details`` large) into result: the splice
    places the residue at the details' place (``$.error_data.details``), the decoded placement's
    bytes, and the converter's output is that placement."""
    ignore = envglot.Converter(to="result", from_="problem-json", unsupported="ignore")
    preserve = envglot.Converter(to="result", from_="problem-json", unsupported="ignore", preserve=True)
    spliced = 0
    for doc in LARGE.payloads("problem-json", "large"):
        original = msgspec.json.format(doc, indent=-1)
        members = members_of(original)
        assert members is not None
        if "data" in members or "details" not in members:
            continue
        out = ignore.convert_bytes(doc)
        got = _spliced("problem-json", "result", original, out)
        assert got is not None and got == _decoded("problem-json", "result", original, out)
        assert preserve.convert_bytes(doc) == got
        spliced += 1
    assert spliced
