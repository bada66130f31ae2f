"""``preserve`` restores the original exactly, and residues main wrote still restore (issue 28).

- ``residues/v2.json``: carriers made by main at ``12760a3`` (digest version 2) from the
  originals of ``residues/v1.json`` (every writable dialect's goldens into every other
  writable dialect, two-hop chains, a document spelling numbers every way JSON allows), with
  the document main restored from each: today's code restores main's carrier to main's
  restored document byte for byte.
- Golden inputs, the real upstream envelopes (read in place), hypothesis envelopes and the
  benchmark corpus's medium and large documents (``benchmarks/corpus.py``), every
  ordered pair of writable dialects: the ``preserve`` output (the fused paths where they
  apply) carries a version 5 residue, the bytes of the general placement
  (:func:`placed_by_definition`: what a pair's ``residue.placer`` and the splice into large
  outputs shortcut), and converting it back restores the minified original
  byte for byte; the version 2 residue its definition gives (convert without ``preserve``,
  convert back, :func:`~envglot.residue.diff` against the minified original, placed at the
  target's slot and sealed) still restores it too.
"""

from __future__ import annotations

import importlib.util
import itertools
import re
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import envglot
from envelopes import documents
from envglot import residue
from envglot.context import Context
from envglot.diagnostics import DISCARD
from envglot.dialect import get_dialect
from envglot.dialects import WRITABLE, code_graph
from envglot.fields import bound_pair, carrying_pair, slot_after_last
from envglot.mappings import default_mappings
from golden import cases, json_key
from roundtrip import upstream_files

RECORDS: list[dict[str, Any]] = msgspec.json.decode((Path(__file__).parent / "residues" / "v2.json").read_bytes())
ENVELOPES = {name: documents(name) for name in WRITABLE}
PAIRS = [(s, d) for s in WRITABLE for d in WRITABLE if s != d]


@cache
def _benchmark_documents() -> dict[str, list[bytes]]:
    """Medium and large documents (3 and 50 KB) of every writable dialect: the benchmark's corpus."""
    spec = importlib.util.spec_from_file_location(
        "bench_corpus", Path(__file__).parents[1] / "benchmarks" / "corpus.py"
    )
    assert spec is not None and spec.loader is not None
    corpus = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # its dataclasses look it up
    spec.loader.exec_module(corpus)
    made = corpus.generate({"medium": 2, "large": 2}, dialects=tuple(WRITABLE))
    return {d: made.payloads(d, "medium") + made.payloads(d, "large") for d in WRITABLE}


def _carry(doc: bytes, at: str, hops: list[str]) -> bytes:
    for dst in hops:
        doc = envglot.convert(doc, from_=at, to=dst, preserve=True, unsupported="ignore")
        at = dst
    return doc


def _restore(carrier: bytes, source: str, hops: list[str]) -> bytes:
    for at, dst in itertools.pairwise([*reversed(hops), source]):
        carrier = envglot.convert(carrier, from_=at, to=dst, preserve=True, unsupported="ignore")
    return carrier


def test_the_fixtures_carry_version_2_residues() -> None:
    assert len(RECORDS) == 100
    assert all('"v":2,"digest":"' in rec["carrier"] for rec in RECORDS)


@pytest.mark.parametrize("rec", RECORDS, ids=lambda r: f"{r['source']}->{'->'.join(r['hops'])}")
def test_mains_version_2_carrier_restores_mains_document(rec: dict[str, Any]) -> None:
    assert _restore(rec["carrier"].encode(), rec["source"], rec["hops"]).decode() == rec["restored"]
    assert _carry(rec["original"].encode(), rec["source"], rec["hops"]) != rec["carrier"].encode()  # v3 now


def reference(data: bytes, src: str, dst: str) -> bytes:
    """The version 2 ``preserve`` output of ``data`` by that residue's definition (no input residue)."""
    m = default_mappings()
    plain = envglot.convert(data, from_=src, to=dst, unsupported="ignore")
    back = envglot.convert(plain, from_=dst, to=src, unsupported="ignore")
    original = msgspec.json.format(data, indent=-1)
    sets, dels = residue.diff(original, back, residue.slot_path(m[src].shape.residue))
    doc = residue.open_document(plain)
    slot = list(residue.slot_path(m[dst].shape.residue))
    residue.set_path(doc, slot, residue.encode_residue(src, original, sets, dels))
    return m.registry.get(dst).seal(residue.encode(doc))


def placed_by_definition(original: bytes, src: str, dst: str) -> bytes:
    """The ``preserve`` output of ``original`` (minified) the general way: the target's top level
    decoded, :func:`~envglot.residue.whole`'s residue set at its slot by ``set_path``, encoded and
    sealed (what the pair's ``residue.placer`` and the splice into large outputs must give)."""
    m = default_mappings()
    there = m[dst]
    plain = envglot.convert(original, from_=src, to=dst, unsupported="ignore")
    top = residue.open_document(plain)
    takes = residue.take_paths(m[src].fields, there.fields, there.shape.residue)
    res = residue.whole(src, original, None, top, takes)
    residue.set_path(top, list(residue.slot_path(there.shape.residue)), res)
    code_graph._WRITTEN[0] = None  # code-graph's seal counts the whole document, not the writer's count plus
    return m.registry.get(dst).seal(residue.encode(top))


def _check(data: bytes, src: str, dst: str) -> None:
    try:
        envglot.convert(data, from_=src, to=dst, unsupported="ignore")
    except envglot.EnvglotError as exc:  # refused: with preserve too, for the same reason
        with pytest.raises(type(exc), match="^" + re.escape(str(exc)) + "$"):
            envglot.convert(data, from_=src, to=dst, preserve=True, unsupported="ignore")
        return
    conv = envglot.conversion(data, from_=src, to=dst, preserve=True, unsupported="ignore")
    if conv.unwrapped:  # the residue restores the envelope inside the wrapper: not this definition
        return
    original = msgspec.json.format(data, indent=-1)
    slot = default_mappings()[dst].shape.residue
    carried = residue.decode_residue(_at(conv.output, slot), slot)
    assert (carried.v, carried.from_) == (residue.VERSION, src), f"{src} -> {dst}"
    assert conv.output == placed_by_definition(original, src, dst), f"{src} -> {dst}"
    back = envglot.convert(conv.output, from_=dst, to=src, preserve=True, unsupported="ignore")
    assert back == original, f"{src} -> {dst}"
    # the version 2 residue still restores it (its restore puts a declared dialect's keys in
    # declaration order: JSON-equal there)
    old = envglot.convert(reference(data, src, dst), from_=dst, to=src, preserve=True, unsupported="ignore")
    assert json_key(old) == json_key(original), f"{src} -> {dst} (version 2)"


def _spaced_inside(data: bytes) -> bytes:
    """``data`` minified at its top level, each member that is an array or object spaced as
    ``json.dumps`` spaces it (no newline): what ``wire.may_be_loose`` takes as minified."""
    import json

    members = msgspec.json.decode(msgspec.json.format(data, indent=-1), type=dict[str, msgspec.Raw])
    spaced = {
        k: msgspec.Raw(json.dumps(json.loads(bytes(v))).encode()) if bytes(v)[:1] in (b"{", b"[") else v
        for k, v in members.items()
    }
    return msgspec.json.encode(spaced)


@pytest.mark.parametrize(("src", "dst"), PAIRS, ids=lambda p: str(p))
def test_inputs_spaced_inside_their_members_get_the_hubs_bytes_and_are_restored(src: str, dst: str) -> None:
    """The fused path and the hub's take such an input as minified alike: the same output (code-graph's
    ``approxTokens`` counts what the residue carries of it as written on both, the Known limit of its
    page: a fuzz finding, where the hub counted the residue's compact form and the fused path its
    spaces), and converting back restores it (JSON-equal: the residue keeps the spacing)."""
    for case in cases(src):
        data = _spaced_inside(case.path.read_bytes())
        try:
            hub = envglot.conversion(data, from_=src, to=dst, preserve=True, unsupported="ignore").output
        except envglot.EnvglotError:
            continue
        fused = envglot.convert(data, from_=src, to=dst, preserve=True, unsupported="ignore")
        assert fused == hub, f"{case.path.name}: {src} -> {dst}"
        back = envglot.convert(fused, from_=dst, to=src, preserve=True, unsupported="ignore")
        assert json_key(back) == json_key(data), f"{case.path.name}: {src} -> {dst}"


def _at(doc: bytes, slot: str) -> msgspec.Raw:
    """The value at ``slot`` (a residue slot's path) of ``doc``."""
    node: Any = msgspec.Raw(doc)
    for seg in residue.slot_path(slot):
        node = msgspec.json.decode(node, type=dict[str, msgspec.Raw])[seg]
    return node


@pytest.mark.parametrize(("src", "dst"), PAIRS, ids=lambda p: str(p))
def test_golden_inputs_are_restored_exactly(src: str, dst: str) -> None:
    for case in cases(src):
        _check(case.path.read_bytes(), src, dst)


@pytest.mark.parametrize(("src", "dst"), PAIRS, ids=lambda p: str(p))
def test_upstream_envelopes_are_restored_exactly(src: str, dst: str) -> None:
    files = upstream_files(src)
    if not files:
        pytest.skip(f"no upstream {src} envelopes next to the repository")
    for path in files:
        _check(path.read_bytes(), src, dst)


@pytest.mark.parametrize(("src", "dst"), PAIRS, ids=lambda p: str(p))
def test_large_envelopes_are_restored_exactly(src: str, dst: str) -> None:
    """Documents from 2 KB up, whose top level the checks decode once for every step."""
    docs = _benchmark_documents()[src]
    assert docs and max(map(len, docs)) > 40_000
    for data in docs:
        _check(data, src, dst)


@pytest.mark.parametrize(("src", "dst"), PAIRS, ids=lambda p: str(p))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_generated_envelopes_are_restored_exactly(src: str, dst: str, data: st.DataObject) -> None:
    _check(msgspec.json.encode(data.draw(ENVELOPES[src])), src, dst)


_CG_HEAD = (
    b'{"success":true,"data":{"tool":"t","version":"1.0","requestId":"r1","generatedAt":"2026-04-14T19:57:25.986Z",'
)
_CG_WS = b'"workspace":{"root":"/w","repoName":"p"},'
_CG_META = b'"meta":{"approxTokens":30,"truncated":false,"limits":{}}}}'
_CG_FAILED = (
    b'{"success":false,"data":{"tool":"t","version":"1.0","requestId":"r2","generatedAt":"2026-04-14T19:57:25.986Z",'
    + _CG_WS
    + b'"result":{"error":{"code":"MISSING_PARAMS","message":"m",'
    + b'"details":{"errors":[{"field":"a","received":null}]}}},'
    + _CG_META
)
CODE_GRAPH_ODD = [
    _CG_HEAD + _CG_WS + b'"result":{"count":2,"items":[1,2]},' + _CG_META,
    _CG_HEAD + b'"workspace":{"root": "/w","repoName":"p"},"result":{"count":2},' + _CG_META,  # spaced inside data
    _CG_HEAD + _CG_WS + b'"result":{"count": 2},' + _CG_META,  # spaced payload
    _CG_HEAD + _CG_WS + b'"tool":"u","result":{"count":2},' + _CG_META,  # a key of data repeated
    _CG_HEAD + _CG_WS + b'"result":{"count":1},"result":{"count":2},' + _CG_META,  # the payload's key repeated
    _CG_HEAD + b'"w\\u006frkspace":{"root":"/w","repoName":"p"},"result":{"count":2},' + _CG_META,  # a key escaped
    _CG_HEAD + _CG_WS + b'"result":[1,2,3],' + _CG_META,
    _CG_HEAD + _CG_WS + b'"result":"text",' + _CG_META,
    _CG_HEAD + _CG_WS + b'"result":null,' + _CG_META,
    _CG_HEAD + _CG_WS + _CG_META,  # no payload
    _CG_HEAD + _CG_WS + b'"result":{"error":{"details":{"a":1}}},' + _CG_META,  # a success shaped as a failure
    _CG_HEAD + _CG_WS + b'"result":{"count":2},' + _CG_META[:-1] + b',"x":{"y":1}}',  # a member after data
    _CG_FAILED,
    _CG_FAILED.replace(b'"details":{"errors"', b'"details": {"errors"'),  # spaced details
    _CG_FAILED.replace(b',"details":{"errors":[{"field":"a","received":null}]}', b""),  # no details
    _CG_FAILED.replace(b'"requestId":"r2"', b'"requestId":"r2","requestId":"r3"'),
    _CG_FAILED.replace(b'"result":{"error"', b'"result":{"error":null,"error"'),
    _CG_FAILED.replace(  # details google-rpc carries unchanged
        b'{"errors":[{"field":"a","received":null}]}',
        b'[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"x"}]',
    ),
]


@pytest.mark.parametrize("dst", [d for d in WRITABLE if d != "code-graph"])
def test_a_code_graph_pairs_placer_gives_the_general_ways_bytes(dst: str) -> None:
    """The pair's placer (its residue by ``residue.placer``'s own function: the payload two keys
    deep taken without the loop over the takes, or nothing taken when the carrier has none) gives
    the bytes of ``residue.whole`` set at the slot, with the original's top level or without."""
    m = default_mappings()
    there = m[dst]
    takes = residue.take_paths(m["code-graph"].fields, there.fields, there.shape.residue)
    slot = residue.slot_path(there.shape.residue)
    place = residue.placer("code-graph", takes, slot)
    assert place is not None
    taken = 0
    for doc in CODE_GRAPH_ODD:
        try:
            out = envglot.convert(doc, from_="code-graph", to=dst, unsupported="ignore")
        except envglot.EnvglotError:
            continue
        members = msgspec.json.decode(doc, type=dict[str, msgspec.Raw])
        for top_level in (members, None):
            top = residue.open_document(out)
            res = residue.whole("code-graph", doc, top_level, residue.open_document(out), takes)
            residue.set_path(top, list(slot), res)
            assert place(doc, top_level, out) == (residue.encode(top), top), doc
            taken += b'"take":' in bytes(res)
        if b"\n" not in doc and b": " not in doc:
            _check(doc, "code-graph", dst)
    assert taken >= 2


def _top_level_pairs() -> list[tuple[str, str]]:
    """The ordered pairs of writable dialects (code-graph's aside) whose first take is one object
    key deep in the source and in the target (``residue._whole_by``'s ``_top_whole``)."""
    m = default_mappings()
    found = []
    for src, dst in itertools.permutations(sorted(d for d in WRITABLE if d != "code-graph"), 2):
        takes = residue.take_paths(m[src].fields, m[dst].fields, m[dst].shape.residue)
        if takes and len(takes[0][0]) == 1 and len(takes[0][1]) == 1:
            found.append((src, dst))
    return found


def _deeper_carrier_pairs() -> list[tuple[str, str]]:
    """The ordered pairs of writable dialects whose first take is one object key deep in the source
    and more than one in the target (into code-graph's ``$.data.result``, problem-json's details
    into google-rpc's ``$.error.details``): ``residue._whole_by``'s ``_top_whole``, given the
    output's top level."""
    m = default_mappings()
    found = []
    for src, dst in itertools.permutations(sorted(WRITABLE), 2):
        takes = residue.take_paths(m[src].fields, m[dst].fields, m[dst].shape.residue)
        if takes and len(takes[0][0]) == 1 and len(takes[0][1]) > 1:
            found.append((src, dst))
    return found


def test_the_deeper_carrier_pairs_are_the_ones_expected() -> None:
    """The payload of every writable source holding one at its top level into code-graph, and
    problem-json's details into google-rpc (google-rpc's first take, its details, is two keys deep)."""
    into_code_graph = {(src, "code-graph") for src in ("dotbot", "errorcode", "problem-json", "response-v2", "result")}
    assert set(_deeper_carrier_pairs()) == into_code_graph | {("problem-json", "google-rpc")}


def _top_level_variants(src: str, doc: bytes) -> list[bytes]:
    """``doc`` (minified) and documents made from it for the placer's rules: the payload carried
    unchanged, changed, absent or ``null``; each later take's first member present (``null``, an
    object holding the take's key, a value), absent; every take's first member the same object
    (a later take inside the carried payload, so carried too); a key escaped (the rest re-encodes
    shorter)."""
    m = default_mappings()
    members = msgspec.json.decode(doc, type=dict[str, msgspec.Raw])
    firsts = {paths[0][0] for dst in WRITABLE for paths in _takes(m, src, dst)}
    out = [doc, b'{"\\u0078":1,' + doc[1:]]
    for key in sorted(firsts):
        for value in (None, b"null", b"[1,2]", b'"text"', b'{"details":{"a":1},"x":2}', b'{"a":1}'):
            changed = dict(members)
            if value is None:
                changed.pop(key, None)
            else:
                changed[key] = msgspec.Raw(value)
            out.append(msgspec.json.encode(changed))
    for value in (b'{"details":{"a":1},"x":2}', b'{"a":1}'):  # every one the same: carried twice
        out.append(msgspec.json.encode({**members, **{key: msgspec.Raw(value) for key in firsts}}))
    for outer, inner in itertools.permutations(sorted(firsts), 2):  # one take's value inside another's
        nested = {outer: msgspec.Raw(b'{"details":{"a":1}}'), inner: msgspec.Raw(b'{"a":1}')}
        out.append(msgspec.json.encode({**members, **nested}))
    return out


def _takes(m: Any, src: str, dst: str) -> residue.Takes:
    return residue.take_paths(m[src].fields, m[dst].fields, m[dst].shape.residue) if src != dst else ()


def _placers(src: str, dst: str) -> tuple[residue.Takes, tuple[str | int, ...], residue.Placer, residue.Placer]:
    """The pair's takes, the target's residue slot, the pair's general placer (output decoded,
    residue set, encoded) and its written placer."""
    m = default_mappings()
    takes = _takes(m, src, dst)
    slot = residue.slot_path(m[dst].shape.residue)
    place = residue.placer(src, takes, slot)
    written = residue.written_placer(src, takes, slot)
    assert place is not None and written is not None
    return takes, slot, place, written


def _converted_variants(src: str, dst: str) -> Iterator[tuple[bytes, bytes, dict[str, msgspec.Raw]]]:
    """Each golden ``src`` document's :func:`_top_level_variants` that converts to ``dst``, with its
    output and its top level."""
    for case in cases(src):
        for doc in _top_level_variants(src, msgspec.json.format(case.data, indent=-1)):
            try:
                out = envglot.convert(doc, from_=src, to=dst, unsupported="ignore")
            except envglot.EnvglotError:
                continue
            yield doc, out, msgspec.json.decode(doc, type=dict[str, msgspec.Raw])


@pytest.mark.parametrize(("src", "dst"), _top_level_pairs() + _deeper_carrier_pairs())
def test_a_top_level_payloads_placer_gives_the_general_ways_bytes(src: str, dst: str) -> None:
    """The pair's placer (a payload one key deep in the source, at one key of the target or more,
    taken without the loop over the takes when no later take is in the original) gives the bytes
    of ``residue.whole`` set at the slot, with the original's top level or without, and each
    document converts and restores exactly."""
    m = default_mappings()
    there = m[dst]
    takes = _takes(m, src, dst)
    slot = residue.slot_path(there.shape.residue)
    place = residue.placer(src, takes, slot)
    assert place is not None
    taken = placed = 0
    for doc, out, members in _converted_variants(src, dst):
        # and a carrier holding every take's value of the original (none of the writers does)
        every = residue.open_document(out)
        for here, there in takes:
            value = residue.value_at(members, here)
            if value is not None:
                residue.set_path(every, list(there), value)
        for carrier in (out, residue.encode(every)):
            for top_level in (members, None):
                top = residue.open_document(carrier)
                res = residue.whole(src, doc, top_level, residue.open_document(carrier), takes)
                residue.set_path(top, list(slot), res)
                assert place(doc, top_level, carrier) == (residue.encode(top), top), doc
                taken += b'"take":' in bytes(res)
                placed += 1
        _check(doc, src, dst)
    assert placed >= 4 and taken >= 2


def _stated_pairs() -> list[tuple[str, str]]:
    """Every ordered pair of writable dialects whose target's writer states its output's shape
    (``fields.slot_after_last``), the payload at any depth: a written placer places their residue."""
    m = default_mappings()
    return [
        (src, dst)
        for src, dst in itertools.permutations(sorted(WRITABLE), 2)
        if slot_after_last(get_dialect(dst).steps()[1], residue.slot_path(m[dst].shape.residue))
    ]


def _written_pairs() -> list[tuple[str, str]]:
    """The top-level pairs whose target's writer states its output's shape
    (``fields.slot_after_last``): a written placer places their residue."""
    stated = set(_stated_pairs())
    return [pair for pair in _top_level_pairs() if pair in stated]


def test_the_writers_that_state_their_shape() -> None:
    """A writer states its output's shape for a slot it never writes, one key, or two whose first
    is its object's last member and always written: dotbot's, errorcode's, problem-json's and
    response-v2's for their residue slots; not result's or google-rpc's (the result a hook's
    value), code-graph's (a ``finish`` hook), nor a slot a Build writes or not at its object's end."""
    m = default_mappings()
    stated = {d for d in WRITABLE if slot_after_last(get_dialect(d).steps()[1], residue.slot_path(m[d].shape.residue))}
    assert stated == {"dotbot", "errorcode", "problem-json", "response-v2"}
    writing = get_dialect("response-v2").steps()[1]
    assert slot_after_last(writing, ("meta", "_envglot"))
    assert slot_after_last(writing, ("_envglot",))
    assert not slot_after_last(writing, ("meta", "version"))  # written
    assert not slot_after_last(writing, ("success",))
    assert not slot_after_last(writing, ("data", "_envglot"))  # not the last member
    assert not slot_after_last(writing, ("meta", 0))
    assert not slot_after_last(writing, ())
    assert not slot_after_last(None, ("_envglot",))


@pytest.mark.parametrize(("src", "dst"), _written_pairs())
def test_a_written_placer_gives_the_general_placers_bytes(src: str, dst: str) -> None:
    """Where the target's writer states its output's shape, the residue is written before the fused
    output's last closing brace(s) without decoding it: the bytes of the pair's placer (which
    decodes it, sets the residue and encodes it), on the fused outputs of the golden documents and
    their variants, with the original's top level or without (then the placer decides), and an
    object at the slot's parent left empty; each document converts and restores exactly."""
    _, slot, place, written = _placers(src, dst)
    spliced = 0
    for doc, out, members in _converted_variants(src, dst):
        outs = [out]
        if len(slot) == 2:  # the slot's parent an empty object: no comma before the residue
            top = residue.open_document(out)
            top[str(slot[0])] = msgspec.Raw(b"{}")
            outs.append(residue.encode(top))
        for carrier in outs:
            for top_level in (members, None):
                want = place(doc, top_level, carrier)
                got = written(doc, top_level, carrier)
                assert want is not None and got is not None
                assert got[0] == want[0], doc
                spliced += got[1] is None
        _check(doc, src, dst)
    assert spliced >= 2


@pytest.mark.parametrize(("src", "dst"), _stated_pairs())
def test_a_written_placer_joins_the_general_placers_bytes_at_every_size(src: str, dst: str) -> None:
    """Into a target whose writer states its shape the residue is joined before the output's last
    closing brace(s) for every pair, whatever it takes (code-graph's payload two keys deep,
    google-rpc's details, nothing): the pair's placer's bytes (output decoded, residue set,
    encoded), below ``WRITTEN_MIN`` and above it (the payload padded: the carrier's payload then
    looked for in the output's text), for successes and failures, with the original's top level or
    without; each document converts and restores exactly."""
    takes, _, place, written = _placers(src, dst)
    sizes = {"small": 0, "large": 0}
    for case in cases(src):
        doc = msgspec.json.format(case.data, indent=-1)
        pad = msgspec.Raw(b'{"pad":"' + b"p" * residue.WRITTEN_MIN + b'"}')
        top = residue.open_document(doc)
        for here, _ in takes:  # each present take's value an object of more than WRITTEN_MIN bytes
            residue.set_path(top, list(here), pad, create=False)
        padded = residue.encode(top) if takes else doc.replace(b'"}', b"p" * residue.WRITTEN_MIN + b'"}')
        for data in (doc, padded):
            try:
                out = envglot.convert(data, from_=src, to=dst, unsupported="ignore")
            except envglot.EnvglotError:
                continue
            members = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
            for top_level in (members, None):
                want = place(data, top_level, out)
                got = written(data, top_level, out)
                assert want is not None and got is not None
                assert got[0] == want[0], data
                assert got[1] is None
                sizes["small" if len(out) < residue.WRITTEN_MIN else "large"] += 1
            _check(data, src, dst)
    one_key = bool(takes) and len(takes[0][0]) == len(takes[0][1]) == 1  # the payload looked for in the text
    assert sizes["small"] >= 2 and (sizes["large"] >= 2 or not one_key), sizes


_CARRIERS = [
    b'{"success":true,"data":PAYLOAD,"error":null}',  # found after a scalar: taken from the text
    b'{"success":true,"data":OTHER,"error":null}',  # other bytes there: nothing taken
    b'{"success":true,"error":null}',  # no carrier member: nothing taken
    b'{"note":"{[","data":PAYLOAD}',  # an opening byte in a string before it: decoded
    b'{"meta":{"data":PAYLOAD},"data":OTHER}',  # a nested member of the key first: decoded
    b'{"meta":{"data":OTHER},"data":PAYLOAD}',
    b'{"list":[1],"data":PAYLOAD}',
    b'{"a\\"data":1,"data":PAYLOAD}',  # the key's text inside another key: not after { or ,
    b'{"data":PAYLOAD1}',  # a number continuing past the payload's bytes: another value
    b'{"data":PAYLOAD}',
]


@pytest.mark.parametrize(
    ("src", "dst"), [("dotbot", "errorcode"), ("problem-json", "errorcode"), ("code-graph", "errorcode")]
)
@pytest.mark.parametrize(
    ("payload", "carrier"),
    [
        (payload, carrier)
        for payload in (b'{"x":[1,2]}', b"12", b'"s"', b"[]")
        for carrier in _CARRIERS
        if payload.isdigit() or b"PAYLOAD1" not in carrier  # (JSON only for a number)
    ],
)
def test_a_written_placer_finds_the_carriers_payload_in_the_text_or_decodes(
    src: str, dst: str, payload: bytes, carrier: bytes
) -> None:
    """A pair whose carrier holds the payload one key deep (into errorcode's ``$.data``) reads the
    carrier's payload from the output's text where its first ``"data":`` follows ``{`` or ``,`` with
    no object or array before it, and decodes the output otherwise: either way the general placer's
    bytes (output decoded, residue set, encoded), for payloads carried unchanged, other bytes there,
    a number continuing past the payload's bytes, and no carrier member; the output's text can mislead
    the search (a string or a nested object before the member), never the residue."""
    _, _, place, written = _placers(src, dst)
    key = {"dotbot": b"data", "problem-json": b"data", "code-graph": b"result"}[src]
    inner = b'{"' + key + b'":' + payload + b',"k":1}'
    original = b'{"data":' + inner + b',"status":"ok"}' if src == "code-graph" else inner
    members = msgspec.json.decode(original, type=dict[str, msgspec.Raw])
    out = carrier.replace(b"PAYLOAD", payload).replace(b"OTHER", b'{"x":0}')
    want = place(original, members, out)
    got = written(original, members, out)
    assert want is not None and got is not None
    assert got[0] == want[0]
    res = residue.decode_residue(msgspec.Raw(residue.open_document(got[0])["_envglot"]), "$")
    carried = out.startswith(b'{"success":true,"data":' + payload + b",") or (
        out == b'{"data":' + payload + b"}" or out.endswith(b',"data":' + payload + b"}")
    )
    assert bool(res.take) == carried


def _handed_pairs() -> list[tuple[str, str]]:
    """The stating pairs whose payload is one key deep in source and carrier: the fused function
    hands the written placer what it wrote at the carrier's member (``fields.carrying_pair``)."""
    m = default_mappings()
    return [(src, dst) for src, dst in _stated_pairs() if residue.handed_key(_takes(m, src, dst)) is not None]


@pytest.mark.parametrize(("src", "dst"), _handed_pairs())
def test_a_carrying_fused_function_hands_the_written_placer_the_carriers_payload(src: str, dst: str) -> None:
    """A preserve pipeline's fused function (``fields.carrying_pair``) returns the plain fused
    function's bytes and what its writer wrote at the carrier's member: a ``Raw`` there is that
    member's bytes in the output (an empty one, ``ABSENT``, none). Handed it, the written placer
    gives the general placer's bytes without searching the output, for successes (the payload
    carried unchanged) and failures (other bytes there), on the golden documents, their variants
    and the benchmark's medium and large ones; a value that is no ``Raw`` (handed by no fused
    function) leaves the placer to the text."""
    m = default_mappings()
    takes, _, place, written = _placers(src, dst)
    key = residue.handed_key(takes)
    assert key is not None
    source, target = get_dialect(src), get_dialect(dst)
    ctx = Context(m, DISCARD, m[src], None, True)
    plain, carrying = bound_pair(source, target, ctx), carrying_pair(source, target, ctx, key)
    assert plain is not None and carrying is not None
    docs = [doc for doc, _, _ in _converted_variants(src, dst)] + _benchmark_documents()[src]
    seen = {"taken": 0, "other": 0}
    for doc in docs:
        want_out = plain(doc)
        got = carrying(doc)
        if want_out is None:
            assert got is None
            continue
        assert got is not None
        out, carried = got
        assert out == want_out
        if type(carried) is not msgspec.Raw:
            continue
        top = residue.open_document(out)
        if carried:  # (empty: ABSENT, the member left out)
            assert bytes(top[key]) == bytes(carried)
        else:
            assert key not in top
        members = msgspec.json.decode(doc, type=dict[str, msgspec.Raw])
        for top_level in (members, None):
            want = place(doc, top_level, out)
            assert want is not None
            for handed in (carried, None, bytes(carried)):
                placed = written(doc, top_level, out, handed)
                assert placed is not None and placed[0] == want[0], doc
        seen["taken" if members.get(str(takes[0][0][0])) == carried else "other"] += 1
    assert seen["taken"] >= 2 and seen["other"] >= 1, seen


@pytest.mark.parametrize("meta", [b"null", b"[]", b'"m"', b"1", b"{}", b'{"version":"response-v2"}'])
def test_a_nested_slots_placer_declines_a_parent_that_is_no_object(meta: bytes) -> None:
    """Into response-v2 (slot ``$.meta._envglot``) the placer sets the residue inside an object
    ``meta`` (the general way's bytes) and declines any other value there (``None``: the general
    way decides), as before it opened ``meta`` by decoding it."""
    m = default_mappings()
    takes = _takes(m, "dotbot", "response-v2")
    slot = residue.slot_path(m["response-v2"].shape.residue)
    place = residue.placer("dotbot", takes, slot)
    assert place is not None and slot == ("meta", "_envglot")
    doc = b'{"status":"ok","data":{"x":1},"version":"1.0.0"}'
    members = msgspec.json.decode(doc, type=dict[str, msgspec.Raw])
    out = b'{"success":true,"data":{"x":1},"error":null,"meta":' + meta + b"}"
    got = place(doc, members, out)
    if not meta.startswith(b"{"):
        assert got is None
        return
    top = residue.open_document(out)
    res = residue.whole("dotbot", doc, members, residue.open_document(out), takes)
    residue.set_path(top, list(slot), res)
    assert got == (residue.encode(top), top)
    assert b'"take":[["$.data","$.data"]]' in bytes(res)
