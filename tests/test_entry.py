"""``Pipeline.convert_bytes``: the entry chosen once per pipeline gives what ``Pipeline.convert`` gives.

Under ``unsupported="ignore"`` in the compact style a document that needs only the checks and
the fused path takes one straight line (``envglot.pipeline.entry``); every other document (a
BOM, whitespace, a transport wrapper, a repeated outcome member, another dialect's failure,
nesting too deep, broken input) goes through ``Pipeline.convert`` from the start. Both must
answer alike: the same bytes, or the same error with the same message and path.
"""

from __future__ import annotations

import logging
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

import envglot
from envelopes import sample_files
from envglot import Converter
from envglot.diagnostics import DISCARD
from envglot.dialects import WRITABLE
from envglot.errors import EnvglotError
from envglot.fields import use_compiled
from envglot.options import Options
from envglot.pipeline import Pipeline, holds_any
from envglot.registry import bundled
from envglot.wire import may_be_loose, minified, minified_alike

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = next(
    (p for p in (ROOT.parent / "shared" / "upstream", ROOT.parents[1] / "shared" / "upstream") if p.is_dir()),
    ROOT.parent / "shared" / "upstream",
)
SOURCES = sorted(d.name for d in bundled())
SAMPLES = {d: [p.read_bytes() for p in sample_files(d)] for d in SOURCES}
UPSTREAM_DOCS = [p.read_bytes() for p in sorted(UPSTREAM.glob("*/*.json"))]
DOCS = [doc for docs in SAMPLES.values() for doc in docs] + UPSTREAM_DOCS
IGNORE = Options(unsupported="ignore")


def _corpus() -> dict[str, list[bytes]]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import corpus
    finally:
        sys.path.pop(0)
    c = corpus.generate({"tiny": 12, "medium": 4}, dialects=tuple(SOURCES))
    return {d: [b for size in ("tiny", "medium") for b in c.payloads(d, size)] for d in SOURCES}


CORPUS_BY = _corpus()
CORPUS = [b for docs in CORPUS_BY.values() for b in docs]
COMPACT_BY = {d: [b for b in docs if msgspec.json.format(b, indent=-1) == b] for d, docs in CORPUS_BY.items()}


_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw])
FAILURES = [
    b'{"data":{},"summary":"Failed.","tool":"a.b","errors":[{"message":"Not there","code":"NOT_FOUND"}]}',
    b'{"success":false,"data":{"error_code":"FEATURE_DISABLED","error_type":"feature_flag"}}',
    b'{"success":false,"error":"Template failed to render","error_type":"render_error"}',
]
"""Failures of dotbot, response-v2 and result (the markers a forced source's rival check looks for)."""


def _variants(doc: bytes) -> Iterator[bytes]:
    """``doc`` and the same envelope in the shapes that leave the straight line."""
    yield doc
    yield b"\xef\xbb\xbf" + doc
    try:
        pretty = msgspec.json.format(doc, indent=2)
    except msgspec.DecodeError:
        return
    yield pretty
    if not doc.startswith(b"{") or doc == b"{}":
        return
    yield doc.replace(b'":', b'": ', 1)  # one spaced member at the top
    yield doc.replace(b'":', b'" :', 1)  # the first key spaced before its colon
    yield b"{ " + doc[1:]  # a space after the brace
    yield doc[:-1] + b',"zz":1}'  # a key the wire Struct does not have (its strict decode refuses it)
    yield doc[:-1] + b',"zz":"\\u0041"}'  # a backslash
    yield b'{"ok":false,"success":false,' + doc[1:]  # outcome members repeated (where the dialect has them)
    yield doc[:-1] + b',"deep":' + b"[" * 300 + b"]" * 300 + b"}"
    yield doc[:-1] + b',"zz":"\\ud800"}'  # a lone surrogate escape
    yield doc[:-1] + b',"zz":"\xc3\xa9\xff"}'  # invalid UTF-8 after a valid character that is not ASCII
    yield b"\xef\xbb\xbf" + doc[:-1] + b',"zz":"\xc3\xa9"}'  # a BOM before a document that is not ASCII
    for failure in FAILURES:  # another dialect's failure markers beside the envelope's own members
        yield msgspec.json.encode({**_TOP.decode(failure), **_TOP.decode(doc)})
    text = msgspec.json.encode(doc.decode("utf-8", "replace"))
    mcp = b'{"content":[{"type":"text","text":' + text + b'}],"isError":true}'
    yield mcp
    yield b'{"jsonrpc":"2.0","id":1,"result":' + mcp + b"}"


ODD = [b"", b"[1]", b"not json", b"\xff\xfe{}", b'{"a":1}', b'{"a":1} x', b"{}", b'{"a":NaN}']
ODD += [  # UTF-8 checked by one decode up to limits.UTF8_CHUNK bytes, in pieces past it: both sides of it
    b'{"a":"' + "\u00e9".encode() * n + tail + b'"}' for n in (3, 8200) for tail in (b"", b"\xff", b"\xc3")
]


def _answer(fn: Callable[[bytes], bytes], doc: bytes) -> Any:
    try:
        return fn(doc)
    except EnvglotError as exc:
        return type(exc).__name__, str(exc), exc.path
    except Exception as exc:  # any other failure must be the same failure too
        return type(exc).__name__, str(exc)


def _general(p: Pipeline) -> Callable[[bytes], bytes]:
    """``p``'s general path, with the report a call gets (:data:`DISCARD` under ``ignore``)."""
    return lambda doc: p.convert(doc, p.report())[0]


# every document as it is; three of each dialect and every fourth upstream one in every odd shape
ODD_SHAPES = [
    v for doc in [*(d for docs in SAMPLES.values() for d in docs[:3]), *UPSTREAM_DOCS[::4]] for v in _variants(doc)
]
VARIED = DOCS + ODD + CORPUS + ODD_SHAPES


@pytest.mark.parametrize("src", [None, *SOURCES])
def test_the_entry_answers_as_convert(src: str | None) -> None:
    for to in WRITABLE:
        for strict in (False, True) if src is None else (False,):
            options = IGNORE.replace(strict=strict)
            entry = Pipeline(src, to, options).convert_bytes
            general = _general(Pipeline(src, to, options))
            for doc in VARIED:
                assert _answer(entry, doc) == _answer(general, doc), (src, to, strict, doc[:120])


@pytest.mark.parametrize("src", [None, *SOURCES])
def test_the_entry_answers_as_convert_with_preserve(src: str | None) -> None:
    """With ``preserve`` the straight line adds the residue ``Pipeline.convert`` adds; a document
    holding a residue of its own (a carrier converted on) takes the general path."""
    options = IGNORE.replace(preserve=True)
    for to in WRITABLE:
        entry = Pipeline(src, to, options).convert_bytes
        general = _general(Pipeline(src, to, options))
        carriers = [_answer(general, doc) for doc in DOCS[:12]]
        for doc in [*VARIED, *(c for c in carriers if isinstance(c, bytes))]:
            assert _answer(entry, doc) == _answer(general, doc), (src, to, doc[:120])


@pytest.mark.parametrize("options", [IGNORE.replace(style="pretty"), Options()])
def test_other_pipelines_take_convert(options: Options) -> None:
    for src in (None, "errorcode"):
        p = Pipeline(src, "dotbot", options)
        general = _general(Pipeline(src, "dotbot", options))
        for doc in DOCS[:20]:
            assert _answer(p.convert_bytes, doc) == _answer(general, doc)


def test_without_unwrapping_a_wrapper_is_refused_as_convert_refuses_it() -> None:
    for src in (None, "errorcode", "dotbot"):
        options = IGNORE
        entry = Pipeline(src, "response-v2", options, unwrap=False).convert_bytes
        general = _general(Pipeline(src, "response-v2", options, unwrap=False))
        for doc in VARIED:
            assert _answer(entry, doc) == _answer(general, doc)


@pytest.fixture
def general_calls(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The documents given to ``Pipeline.convert`` from now on."""
    calls: list[bytes] = []
    convert = Pipeline.convert

    def counted(self: Pipeline, buf: bytes, *args: Any) -> tuple[bytes, str, bool]:
        calls.append(buf)
        return convert(self, buf, *args)

    monkeypatch.setattr(Pipeline, "convert", counted)
    return calls


def test_a_plain_document_takes_the_straight_line(general_calls: list[bytes]) -> None:
    """Compact corpus documents never reach ``Pipeline.convert``, their source forced or detected."""
    for to in ("dotbot", "response-v2", "errorcode"):
        detected = Pipeline(None, to, IGNORE)
        for src, docs in COMPACT_BY.items():
            forced = Pipeline(src, to, IGNORE)
            for doc in docs:
                assert forced.convert_bytes(doc) == detected.convert_bytes(doc)
    assert general_calls == []


def test_a_document_that_is_not_ascii_takes_the_straight_line(general_calls: list[bytes]) -> None:
    """A forced source's compact document with characters past ASCII is checked by one decode on
    the straight line; one with a BOM or invalid UTF-8 reaches ``Pipeline.convert``, which removes
    the BOM or says where the encoding breaks."""
    docs = [doc for doc in COMPACT_BY["dotbot"] if not doc.isascii()]
    assert docs
    want = [_general(Pipeline("dotbot", "response-v2", IGNORE))(doc) for doc in docs]
    del general_calls[:]
    p = Pipeline("dotbot", "response-v2", IGNORE)
    assert [p.convert_bytes(doc) for doc in docs] == want
    assert general_calls == []
    bom, broken = b"\xef\xbb\xbf" + docs[0], docs[0][:-1] + b',"zz":"\xff"}'
    assert p.convert_bytes(bom) == want[0]
    with pytest.raises(EnvglotError, match="invalid UTF-8"):
        p.convert_bytes(broken)
    assert general_calls == [bom, broken]


def test_a_spaced_document_forced_takes_the_straight_line(general_calls: list[bytes]) -> None:
    """``json.dumps``'s spacing (result's corpus documents), the source forced: minified on the
    straight line as ``Pipeline.convert`` minifies it, the same answer without reaching it."""
    spaced = [doc for doc in CORPUS_BY["result"] if doc not in COMPACT_BY["result"]]
    assert spaced
    for to in ("dotbot", "errorcode", "problem-json"):
        want = [_general(Pipeline("result", to, IGNORE))(doc) for doc in spaced]
        del general_calls[:]
        p = Pipeline("result", to, IGNORE)
        assert [p.convert_bytes(doc) for doc in spaced] == want
        assert general_calls == []


def test_the_layout_guessed_from_the_last_document_never_changes_an_answer(general_calls: list[bytes]) -> None:
    """After a spaced document the next is tried as spaced first: spaced and minified documents in
    any order, and spaced ones the straight line refuses (a repeated member, too deep, broken, a
    wrapper), answer as ``Pipeline.convert``; only those refused ones reach it."""
    spaced = [doc for doc in CORPUS_BY["result"] if doc not in COMPACT_BY["result"]][:6]
    tight = [msgspec.json.format(doc, indent=-1) for doc in spaced]
    refused = [
        b'{"success": false, "success": true, "value": 1}',
        b'{"success": true, "value": ' + b"[" * 300 + b"]" * 300 + b"}",
        b'{"success": true, "value": [1, }',
        b'{"content": [{"type": "text", "text": "{}"}], "isError": true}',
    ]
    order = [d for pair in zip(spaced, tight, spaced[1:] + refused, tight[::-1], strict=False) for d in pair]
    order += refused + spaced[:2] + refused[::-1] + tight[:2]
    for to in ("errorcode", "dotbot"):
        want = [_answer(_general(Pipeline("result", to, IGNORE)), doc) for doc in order]
        del general_calls[:]
        p = Pipeline("result", to, IGNORE)
        assert [_answer(p.convert_bytes, doc) for doc in order] == want
        assert general_calls and set(general_calls) <= set(refused)


def test_the_entry_waits_for_the_fused_paths(general_calls: list[bytes]) -> None:
    """Chosen while the fused paths are off, the entry would keep the hub: it is chosen when they are on."""
    doc = COMPACT_BY["errorcode"][0]
    p = Pipeline("errorcode", "dotbot", IGNORE)
    use_compiled(False)
    try:
        off = p.convert_bytes(doc)
    finally:
        use_compiled(True)
    assert general_calls == [doc]
    assert p.convert_bytes(doc) == off
    assert p.convert_bytes(doc) == off
    assert general_calls == [doc]


def test_converter_and_convert_use_the_entry(general_calls: list[bytes]) -> None:
    doc = COMPACT_BY["errorcode"][0]
    want = Pipeline("errorcode", "dotbot", IGNORE).convert(doc, DISCARD)[0]
    del general_calls[:]
    assert Converter("dotbot", "errorcode", unsupported="ignore").convert_bytes(doc) == want
    assert Converter("dotbot", unsupported="ignore")(doc) == want
    assert envglot.convert(doc, to="dotbot", from_="errorcode", unsupported="ignore") == want
    assert general_calls == []


def test_warn_decides_per_call_whether_anybody_listens(caplog: pytest.LogCaptureFixture) -> None:
    """Under ``warn`` the report is :data:`DISCARD` only while nobody listens: a listener added
    after the entry was chosen still gets its record (and an ``ignore`` pipeline never logs)."""
    lossy = [(s, d) for s, docs in SAMPLES.items() if s != "dotbot" for d in docs if _lossy(s, d)]
    assert lossy
    src, doc = lossy[0]
    for forced in (src, None):
        warn = Pipeline(forced, "dotbot", Options())
        ignore = Pipeline(forced, "dotbot", IGNORE)
        caplog.clear()
        with caplog.at_level(logging.CRITICAL + 1, logger="envglot"):
            quiet = warn.convert_bytes(doc)
        assert [r for r in caplog.records if r.name == "envglot"] == []
        caplog.set_level(logging.DEBUG, logger="envglot")
        assert warn.convert_bytes(doc) == quiet == ignore.convert_bytes(doc)
        assert len([r for r in caplog.records if r.name == "envglot"]) == 1


def _lossy(src: str, doc: bytes) -> bool:
    try:
        return envglot.conversion(doc, to="dotbot", from_=src).lossy
    except EnvglotError:
        return False


def test_the_generated_member_test_answers_as_isdisjoint() -> None:
    """``holds_any`` (the straight line's wrapper test) is ``not keys.isdisjoint(members)`` for any
    key set, quotes, backslashes and characters past ASCII in keys included."""
    sets = [frozenset(), frozenset(("content", "structuredContent", "jsonrpc")), frozenset(('a"b', "x'y\\", "\u00e9"))]
    members = [{}, {"content": 1}, {"jsonrpc": 1, "z": 2}, {'a"b': 1}, {"x'y\\": 1}, {"\u00e9": 1}, {"a": 1, "b": 2}]
    for keys in sets:
        test = holds_any(keys)
        assert test is holds_any(keys)  # built once per key set
        for m in members:
            assert test(m) is (not keys.isdisjoint(m)), (keys, m)


def test_a_short_document_read_strictly_takes_no_members_parse(members_parses: list[bytes]) -> None:
    """A forced code-graph source's compact tiny documents are read by the strict decode alone (no
    members' parse), and answer as ``Pipeline.convert``; so do its documents in every odd shape
    (which take the members' line or the general path), in any order."""
    import envglot.pipeline as pipeline

    parsed = members_parses
    tiny = [doc for doc in COMPACT_BY["code-graph"] if len(doc) < pipeline.SPLIT_MIN]
    assert tiny
    odd = [v for doc in tiny[:4] for v in _variants(doc)]
    for to in ("errorcode", "result", "dotbot"):
        general = _general(Pipeline("code-graph", to, IGNORE))
        want = [general(doc) for doc in tiny]
        p = Pipeline("code-graph", to, IGNORE)
        del parsed[:]
        assert [p.convert_bytes(doc) for doc in tiny] == want
        assert parsed == []
        mixed = [d for pair in zip(odd, tiny * 4, strict=False) for d in pair]
        assert [_answer(p.convert_bytes, doc) for doc in mixed] == [_answer(general, doc) for doc in mixed]


def _top_repeats(doc: bytes, key: bytes) -> Iterator[bytes]:
    """``doc`` (a compact object holding ``"key"`` at its top and in a value) with that key's
    spelling shown twice outside its top level's ``Raw`` values, or at the top only once, every
    way the strict read's count must tell apart."""
    quoted = b'"' + key + b'"'
    value = bytes(_TOP.decode(doc)[key.decode()])  # a value its wire Struct reads
    yield b"{" + quoted + b":" + value + b"," + doc[1:]  # repeated at the top, first
    yield doc[:-1] + b"," + quoted + b":" + value + b"}"  # repeated at the top, last
    yield doc[:-1] + b',"zz":' + quoted + b"}"  # a string value spelled as the key (a key the Struct refuses)
    yield doc[:-1] + b',"zz":{' + quoted + b":1}}"  # nested in an unknown member's value
    yield b'{"data":{' + quoted + b":1}," + doc[1:]  # a repeated payload: the first one's is not counted
    yield b'{"data":{' + quoted + b':1},"data":{' + quoted + b":2}," + doc[1:]
    yield b'{"summary":' + quoted + b"," + doc[1:]  # a decoded member's value spelled as the key
    yield doc.replace(b'"data":{', b'"data":{"x":' + quoted + b",", 1)  # one more inside the payload


@pytest.mark.parametrize("src", ["dotbot", "problem-json"])
def test_an_outcome_key_nested_in_the_payload_keeps_the_strict_read(src: str, members_parses: list[bytes]) -> None:
    """dotbot's and problem-json's tiny documents mostly show ``"status"`` in their payload too:
    the strict read counts it outside the top level's ``Raw`` values, so they take no members'
    parse; a document showing it twice outside them (repeated at the top, in a decoded member, in
    an unknown member) answers as ``Pipeline.convert``, refused where the outcome repeats."""
    import envglot.pipeline as pipeline

    parsed = members_parses
    docs = [doc for doc in COMPACT_BY[src] if len(doc) < pipeline.SPLIT_MIN and b"\\" not in doc]
    twice = [doc for doc in docs if doc.count(b'"status"') > 1]
    assert twice
    for to in ("response-v2", "errorcode"):
        general = _general(Pipeline(src, to, IGNORE))
        want = [_answer(general, doc) for doc in docs]
        p = Pipeline(src, to, IGNORE)
        del parsed[:]
        assert [_answer(p.convert_bytes, doc) for doc in docs] == want
        assert parsed == []
        odd = [v for doc in twice[:4] for v in _top_repeats(doc, b"status")]
        mixed = [d for pair in zip(odd, twice * 8, strict=False) for d in pair]
        assert [_answer(p.convert_bytes, doc) for doc in mixed] == [_answer(general, doc) for doc in mixed]
        refused = [_answer(p.convert_bytes, doc) for i, doc in enumerate(odd) if i % 8 < 2]  # repeated at the top
        assert all(type(r) is tuple and "appears more than once" in r[1] for r in refused), refused


def test_a_strict_read_refused_is_not_tried_again_on_a_document_showing_the_key_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """problem-json failures listing their problems show ``"status"`` in decoded entries, which the
    strict read's count cannot set aside: after one is refused, the next such document takes the
    members' line untried; one showing the key once is tried again, and its success resumes the
    strict reads (each seen as the straight line's strict reader is called). Every answer is
    ``Pipeline.convert``'s."""
    import envglot.pipeline as pipeline

    tried: list[bytes] = []
    reader = pipeline.strict_reader

    def counted(fn: Any) -> Callable[[bytes], bytes | None]:
        strictly = reader(fn)

        def read(buf: bytes) -> bytes | None:
            tried.append(buf)
            return strictly(buf)

        return read

    monkeypatch.setattr(pipeline, "strict_reader", counted)
    listed = [
        b'{"type":"urn:x:bad","title":"Bad","status":400,"detail":"two %d","errors":[{"title":"A","status":400},'
        b'{"title":"B","status":422}]}' % i
        for i in range(3)
    ]
    once = [doc for doc in COMPACT_BY["problem-json"] if doc.count(b'"status"') == 1 and len(doc) < 2048][:1]
    nested = [doc for doc in COMPACT_BY["problem-json"] if doc.count(b'"status"') > 1 and b"errors" not in doc][:1]
    assert once and nested
    order = listed + once + nested + listed[:1] + nested
    general = _general(Pipeline("problem-json", "errorcode", IGNORE))
    want = [_answer(general, doc) for doc in order]
    p = Pipeline("problem-json", "errorcode", IGNORE)
    p.convert_bytes(once[0])  # (the entry is chosen on the first call)
    del tried[:]
    assert [_answer(p.convert_bytes, doc) for doc in order] == want
    assert tried == [listed[0], *once, *nested, listed[0]]  # (the last: twice, after a refusal)


def test_a_declared_source_with_its_outcome_key_in_the_payload_keeps_the_strict_read(
    members_parses: list[bytes],
) -> None:
    """A TOML dialect read through a ``WireDecoder`` (quarry, outcome ``ok``) gets the same
    generated count: ``"ok"`` inside its ``items`` takes no members' parse; shown twice at its top,
    or in a member it does not have, the document answers as ``Pipeline.convert``."""
    parsed = members_parses
    quarry = Options(unsupported="ignore", mappings=[str(ROOT / "examples" / "declared" / "quarry.toml")])
    nested = [
        b'{"ok":true,"items":[{"sku":"q-1","ok":4},{"ok":true}],"errors":[],"trace_id":"t-1"}',
        b'{"ok":true,"items":{"ok":{"ok":"ok"}},"errors":[],"trace_id":"t-2"}',
    ]
    odd = [v for doc in nested for v in _top_repeats(doc, b"ok")]
    for to in ("response-v2", "dotbot"):
        general = _general(Pipeline("quarry", to, quarry))
        want = [_answer(general, doc) for doc in nested]
        p = Pipeline("quarry", to, quarry)
        p.convert_bytes(nested[0])  # (the entry is chosen on the first call)
        del parsed[:]
        assert [_answer(p.convert_bytes, doc) for doc in nested] == want
        assert parsed == []
        assert [_answer(p.convert_bytes, doc) for doc in odd] == [_answer(general, doc) for doc in odd]
        assert all("appears more than once" in str(_answer(p.convert_bytes, doc)) for doc in odd[:2])


def test_minified_answers_as_may_be_loose() -> None:
    """``wire.minified`` is ``not may_be_loose`` for any document: spaced heads of every kind, a
    backslash in the first key, short and odd documents."""
    heads = [b'{"a":1}', b'{"a": 1}', b'{"a" :1}', b'{ "a":1}', b' {"a":1}', b'{"a":\x0b1}', b'{"a":\x0c1}']
    heads += [b'{"a\\"b":1}', b'{"a\\"b": 1}', b'{"a\\\\": 1}', b'{"":1}', b'{"": 1}', b'{"a":', b'{"a"', b"{", b""]
    heads += [
        b'{"a":1,\n"b":2}',
        b'{"a":"\t"}',
        b"[1, 2]",
        b'{"' + b"k" * 5000 + b'": 1}',
        b'{"' + b"k" * 4092 + b'":1}',
    ]
    heads += [b'{"' + b"k" * n + b'": 1}' for n in range(4088, 4096)]
    heads += [b'{"' + b"k" * n + b'":' + end for n in range(4090, 4096) for end in (b"", b"1", b" ")]
    rng = random.Random(28)  # short heads of the bytes either test looks at, in any order
    heads += [bytes(rng.choice(b'{}":\\ \t\n\r\x0b\x0cak1') for _ in range(rng.randrange(12))) for _ in range(20000)]
    heads += [b'{"' + h for h in heads[-20000:]]
    for doc in heads + DOCS + CORPUS + ODD_SHAPES:
        assert minified(doc) is (not may_be_loose(doc)), doc[:80]


def test_minified_alike_answers_as_minified_after_any_heads() -> None:
    """``wire.minified_alike`` (the kept heads tested first) answers as ``minified`` whatever it kept
    before: tight heads that differ only in the first value's byte (``t``/``f``), in the key's
    length, a kept head followed by a spaced, a tabbed or a newline document, more heads than it
    keeps, a head of 64 bytes and one longer, a document that is a kept head's prefix."""
    tight = [b'{"success":true}', b'{"success":false}', b'{"audit":{"a":1}}', b'{"a":1}', b'{"ab":[1]}']
    near = [b'{"success": true}', b'{"success":\ttrue}', b'{"success":true,\n"x":1}', b'{"success":\x0btrue}']
    near += [b'{"success"', b'{"success":', b'{"succes":true}', b'{"successes":1}', b'{"":0}', b'{"":0 }', b'{"": 0}']
    near += [b'{"' + b"k" * n + b'":1}' for n in (58, 59, 60, 61)] + [b'{"' + b"k" * n + b'": 1}' for n in (59, 60)]
    rng = random.Random(1828)
    pool = tight + near + DOCS + CORPUS + ODD_SHAPES
    rounds = [tight + near, near + tight, pool, [rng.choice(pool) for _ in range(5000)]]
    odd = [bytes(rng.choice(b'{}":\\ \t\n\x0bsa1') for _ in range(rng.randrange(9))) for _ in range(5000)]
    rounds += [odd, [b'{"' + doc for doc in odd]]
    for docs in rounds:
        alike = minified_alike()
        for doc in docs:
            assert alike(doc) is minified(doc), doc[:80]


def test_a_reader_without_a_strict_decode_is_handed_the_members_at_any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """legacy-v1's reader (a Python decoder, no strict decode) takes the members the straight line
    parsed at every size (``split_min`` 0), so its tiny documents' top level is not decoded a second
    time; a wire reader takes them from ``SPLIT_MIN`` bytes on. Answers as ``Pipeline.convert``."""
    import envglot.pipeline as pipeline
    from envglot.dialects import legacy_v1

    reg = bundled()
    assert pipeline.split_min(reg.get("legacy-v1")) == 0
    for src in ("dotbot", "errorcode", "response-v2", "code-graph"):
        assert pipeline.split_min(reg.get(src)) == pipeline.SPLIT_MIN, src
    tiny = [doc for doc in COMPACT_BY["legacy-v1"] if len(doc) < pipeline.SPLIT_MIN]
    assert len(tiny) >= 10
    decoded: list[bytes] = []

    class Counting:
        def decode(self, buf: Any) -> Any:
            decoded.append(bytes(buf))
            return real.decode(buf)

    real = legacy_v1._RAW_DICT
    for to in ("dotbot", "response-v2", "errorcode"):
        want = [_answer(_general(Pipeline("legacy-v1", to, IGNORE)), doc) for doc in tiny]
        p = Pipeline("legacy-v1", to, IGNORE)
        monkeypatch.setattr(legacy_v1, "_RAW_DICT", Counting())
        del decoded[:]
        assert [_answer(p.convert_bytes, doc) for doc in tiny] == want
        monkeypatch.setattr(legacy_v1, "_RAW_DICT", real)
        assert not set(decoded) & set(tiny), to  # (an interim document's data is decoded: not the document)
        assert decoded  # the interim documents' data


def test_a_document_the_strict_read_accepts_within_its_floor_is_read_without_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Up to ``2 * max_depth + strict_floor(src)`` bytes the straight line reads strictly without
    ``within_depth`` (an accepted document there nests within the limit); every answer is
    ``Pipeline.convert``'s: accepted documents in and past that window, nesting at and past the limit
    (arrays in ``data``, brackets inside strings, unclosed, a top level missing members), non-ASCII."""
    import envglot.pipeline as pipeline
    from envglot.fields import strict_floor

    floor = strict_floor(bundled().get("dotbot"))
    assert floor > len('"schema_id":"","tool":"","version":"","status":"ok","summary":"","data":,')
    tried: list[bytes] = []
    within = pipeline.within_depth

    def counted(fn: Any, buf: bytes, *args: Any) -> Any:
        tried.append(buf)
        return within(fn, buf, *args)

    monkeypatch.setattr(pipeline, "within_depth", counted)

    def doc(data: bytes, summary: str = "s") -> bytes:
        return (
            b'{"schema_id":"dotbot-mcp-response@1","tool":"t","version":"1.0.0","status":"ok","summary":%s,'
            b'"data":%s,"warnings":[],"errors":[],"audit":{"timestamp":"2026-01-01T00:00:00Z","duration_ms":1,'
            b'"source":"s"}}' % (msgspec.json.encode(summary), data)
        )

    for max_depth in (40, 64, 256):
        window = 2 * max_depth + floor
        docs = [doc(b'{"a":%s}' % (b"[" * k + b"]" * k)) for k in range(max_depth - 4, max_depth + 2)]
        docs += [doc(b"{}", "[{" * n + "é" * (n % 3)) for n in range(0, window, 7)]  # brackets in a string
        base = len(doc(b"{}", ""))
        docs += [doc(b"{}", "x" * (window - base + d)) for d in (-1, 0, 1)]  # at the window's edge
        docs += [b'{"data":' + b"[" * n + b"]" * n + b"}" for n in range(max_depth - 2, max_depth + 80, 3)]
        docs += [b'{"data":' + b"[" * n for n in (max_depth, max_depth + 1, window)]  # unclosed
        docs += [doc(b'{"a":%s}' % (b"[" * n + b"]" * n)) for n in (max_depth - 3, max_depth - 2, max_depth - 1)]
        docs += [d for d in COMPACT_BY["dotbot"] if len(d) < 2048][:20]
        opts = Options(unsupported="ignore", max_depth=max_depth)
        general = _general(Pipeline("dotbot", "response-v2", opts))
        want = [_answer(general, d) for d in docs]
        p = Pipeline("dotbot", "response-v2", opts)
        p.convert_bytes(docs[-1])  # (the entry is chosen on the first call)
        del tried[:]
        assert [_answer(p.convert_bytes, d) for d in docs] == want
        assert any("nesting deeper" in str(w) for w in want)
        read = [d for d in docs if 2 * max_depth < len(d) <= window and not isinstance(_answer(general, d), tuple)]
        assert read and not set(read) & set(tried)  # read strictly, without the budget
        assert any(len(d) > window for d in tried)
