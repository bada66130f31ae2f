"""Lossless chains (issue 25): with ``preserve`` at every hop, S -> T1 -> ... -> Tn -> S restores S.

A writer that is not the residue's source carries it intact inside its own residue (nested), and
the way back unwinds the nest hop by hop, every hop with the checks of a plain restore (digest,
outcome, carrier). A hop that needs no patch still records its provenance, so a chain through
it restores S too. Every intermediate of a document valid in its dialect validates. Chains of
one, two and three hops, over the goldens (every ordered choice of intermediates) and over
generated envelopes.
"""

from __future__ import annotations

import itertools
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import envglot
from envelopes import documents, sample_files
from envglot.dialects import WRITABLE
from fuzz.settings import FUZZ
from golden import json_key


def _chain(data: bytes, src: str, hops: tuple[str, ...]) -> bytes:
    """The document back in ``src`` after ``hops`` (every intermediate checked by ``validate``)."""
    valid = not envglot.validate(data, src)
    doc, at = data, src
    for dst in (*hops, src):
        doc = envglot.convert(doc, from_=at, to=dst, preserve=True, unsupported="ignore")
        if dst != src and valid:
            assert envglot.validate(doc, dst) == [], f"{src} -> {hops}: {dst} {doc!r}"
        at = dst
    return doc


def _check(data: bytes, src: str, hops: tuple[str, ...]) -> None:
    assert json_key(_chain(data, src, hops)) == json_key(data), f"{src} -> {' -> '.join(hops)} -> {src}"


def _goldens(src: str) -> list[bytes]:
    out = []
    for path in sample_files(src):
        data = path.read_bytes()
        try:
            envglot.read(data, from_=src)
        except envglot.EnvglotError:
            continue  # a golden of a refused document
        out.append(data)
    return out


@pytest.mark.parametrize("length", [1, 2, 3])
@pytest.mark.parametrize("src", WRITABLE)
def test_golden_chains_restore_the_original(src: str, length: int) -> None:
    """Every golden of ``src`` through every ordered choice of ``length`` other dialects."""
    docs = _goldens(src)
    assert docs
    failed = []
    for i, data in enumerate(docs):
        for hops in itertools.permutations([d for d in WRITABLE if d != src], length):
            if json_key(_chain(data, src, hops)) != json_key(data):
                failed.append(f"{i}: {src} -> {' -> '.join(hops)} -> {src}")
    assert not failed, failed[:20]


@pytest.mark.parametrize("src", WRITABLE)
def test_generated_chains_of_one_to_three_hops_restore_the_original(src: str) -> None:
    others = [d for d in WRITABLE if d != src]

    @settings(FUZZ, max_examples=min(FUZZ.max_examples, 40))
    @given(doc=documents(src), hops=st.lists(st.sampled_from(others), min_size=1, max_size=3, unique=True))
    def check(doc: dict[str, Any], hops: list[str]) -> None:
        data = msgspec.json.encode(doc)
        try:
            envglot.read(data, from_=src)
        except envglot.EnvglotError:
            return
        _check(data, src, tuple(hops))

    check()


def _foreign_residues(src: str, dst: str) -> dict[str, bytes]:
    """Well-formed residues a ``src`` document may hold that restore nothing into ``dst`` and nest
    into nothing: for a dialect that cannot be written (or no dialect at all), for ``src`` itself,
    and for ``dst`` with a digest of no document (so rejected)."""
    read_only = [d for d in envglot.dialects.NAMES if d not in WRITABLE]
    forged = {
        "unknown": {"from": "no-such-dialect", "set": [], "digest": ""},
        "self": {"from": src, "set": [['$["x y"]', "error"]], "digest": "0" * 32, "v": 2},
        "target": {"from": dst, "set": [["$", {}]], "digest": "0" * 32, "v": 5},
    }
    forged.update({f"read-only {d}": {"from": d, "set": [['$["x y"]', "error"]], "digest": ""} for d in read_only})
    return {k: msgspec.json.encode(v) for k, v in forged.items()}


@pytest.mark.parametrize("dst", WRITABLE)
@pytest.mark.parametrize("src", WRITABLE)
def test_a_residue_that_restores_nothing_leaves_the_output_of_the_document_without_it(src: str, dst: str) -> None:
    """An input residue that is dropped or rejected (reported) changes nothing: the output, its new
    residue included, is what the same document without it gets (so code-graph's ``approxTokens``,
    which counts the residue, too), and the way back restores that document. (A fuzz finding: such
    a residue was digested with the document yet left out of the diff, so the way back rejected
    its own residue, and the output differed from the bare document's.)"""
    from envglot.mappings import default_mappings
    from envglot.residue import parse_path, set_path

    slot = parse_path(default_mappings()[src].shape.residue)
    residues = _foreign_residues(src, dst)
    for golden in _goldens(src)[:6]:
        # its top level re-encoded as the held documents' are (the members' own spacing kept)
        data = msgspec.json.encode(msgspec.json.decode(golden, type=dict[str, msgspec.Raw]))
        bare = envglot.convert(data, from_=src, to=dst, preserve=True, unsupported="ignore")
        for name, res in residues.items():
            doc = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
            assert set_path(doc, slot, msgspec.Raw(res))
            held = msgspec.json.encode(doc)
            out = envglot.convert(held, from_=src, to=dst, preserve=True, unsupported="ignore")
            assert out == bare, f"{name}: {src} -> {dst}"
            conv = envglot.conversion(held, from_=src, to=dst, preserve=True, unsupported="ignore")
            kinds = {str(d.kind) for d in conv.diagnostics}
            assert kinds & {"residue_dropped", "residue_rejected"}, f"{name}: {src} -> {dst}: {kinds}"
            if dst != src:
                back = envglot.convert(out, from_=dst, to=src, preserve=True, unsupported="ignore")
                assert json_key(back) == json_key(data), f"{name}: {src} -> {dst} -> {src}"


@pytest.mark.parametrize(
    ("doc", "slot", "bare"),
    [
        (b'{"a":1,"_envglot":{"x":[1,{"y":"}"}]},"b":"s,t"}', "$._envglot", b'{"a":1,"b":"s,t"}'),
        (b'{"_envglot":1,"a":1}', "$._envglot", b'{"a":1}'),
        (b'{"_envglot":1}', "$._envglot", b"{}"),
        (b'{"a": 1, "_envglot": 2, "a": 3, "_envglot" : "x"}', "$._envglot", b'{"a": 1, "a": 3}'),
        (b'{"_envglot":1,"_envglot":2,"a":1}', "$._envglot", b'{"a":1}'),
        (b' {"meta":{"v":1},"meta":{"_envglot":{},"k":2}}', "$.meta._envglot", b' {"meta":{"v":1},"meta":{"k":2}}'),
        (b'{"meta":5}', "$.meta._envglot", b'{"meta":5}'),
        (b'{"\\u005fenvglot":1,"a":"\\"_envglot\\":"}', "$._envglot", b'{"a":"\\"_envglot\\":"}'),
        (b'{"a":true,"_envglot":null}', "$._envglot", b'{"a":true}'),
    ],
)
def test_the_document_without_its_residue_keeps_every_other_byte(doc: bytes, slot: str, bare: bytes) -> None:
    """A repeated key and the spacing stay (the residue restores the document byte for byte)."""
    from envglot.residue import without

    assert without(doc, slot) == bare


def test_a_dropped_residue_beside_a_repeated_member_leaves_the_bare_documents_output() -> None:
    bare = b'{"success":false,"error":"x","exception_message":"a","exception_message":"b"}'
    held = bare[:-1] + b',"_envglot":{"from":"nope","digest":""}}'
    for dst in WRITABLE:
        want = envglot.convert(bare, from_="result", to=dst, preserve=True, unsupported="ignore")
        assert envglot.convert(held, from_="result", to=dst, preserve=True, unsupported="ignore") == want, dst
