"""A forced source's top level parsed into a Struct of its wire Struct's members (issue 28).

``WireDecoder.top_parser`` gives the members :func:`envglot.limits.top_members` gives, or
refuses the document (the straight line then parses it as before); with ``keyed`` it decodes
dotbot's ``errors`` in the same parse, so a failure's ``details`` are skipped once, with
``typed`` code-graph's ``data``, so its payload is skipped once. What must hold: wherever its
members prove the top level laid end to end (``spans_whole``), the members ``top_members``
gives prove it too and are the same (a keyed or typed member's span meaning the same, its
value what the reader decodes from the input's span), and every face answers as the general
path answers: same bytes, or the same error, message and path (depth included).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envglot.dialects import code_graph, dotbot
from envglot.errors import EnvglotError
from envglot.keyed import KeyedItems
from envglot.limits import MAX_DEPTH, UTF8_CHUNK, spans_whole, top_members
from envglot.options import Options
from envglot.pipeline import Pipeline
from envglot.registry import bundled
from envglot.toplevel import KEYED_TOP_MIN, TopMembers, never_longer
from envglot.wire import WireDecoder
from test_entry import CORPUS_BY, DOCS

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
IGNORE = Options(unsupported="ignore")
_ITEMS = KeyedItems(dotbot.Issue, "details")
_JSON = msgspec.json.Decoder()


def _decoders() -> list[tuple[str, WireDecoder]]:
    out = []
    for d in bundled():
        reading = d.steps()[0]
        if reading is not None and isinstance(reading.decoder, WireDecoder):
            out.append((d.name, reading.decoder))
    return out


DECODERS = _decoders()

_AUDIT = b'"audit":{"timestamp":"2026-11-27T10:00:00Z","duration_ms":12,"source":"s"}'


def _failure(details: bytes, error: bytes = b"", top: bytes = b"") -> bytes:
    """A dotbot failure (``error``: more members of its one error, before ``details``)."""
    return (
        b'{"schema_id":"dotbot-mcp-response@1","tool":"a.b","version":"1.0.0","status":"error",'
        b'"summary":"Failed.","data":{},"warnings":[],"errors":[{"code":"NOT_FOUND","message":"gone"'
        + error
        + b',"details":'
        + details
        + b"}],"
        + top
        + _AUDIT
        + b"}"
    )


_BIG = b'{"category":"not_found","rows":[' + b",".join(b'{"i":%d,"t":"x\\u00e9y"}' % i for i in range(900)) + b"]}"


def _variants(big: bytes) -> Iterator[bytes]:
    """A large failure and the same in every spelling a length proof must see through."""
    yield _failure(big)
    yield _failure(big, b',"path":"$.a"')
    yield _failure(big, b',"path":null')  # an explicit default: the encoding is shorter
    yield _failure(big, top=b'"errors":[],')  # a repeated top-level member (the last wins)
    yield _failure(big, top=b'"errors":5,')  # a repeated member the Struct refuses first
    yield _failure(big, b',"code":"OTHER"')  # a repeated key inside an error
    yield _failure(big[:-1] + b',"category":"internal"}')  # a repeated key inside details
    yield _failure(big, b',"p\\u0061th":"$.a"')  # an escaped key inside an error
    yield _failure(big[:-1] + b',"\\u0063ategory":"internal"}')  # an escaped key inside details
    yield _failure(big[:-1] + b',"c\\u001Fx":1,"c\\u001fy":2}')  # a control character's escapes, either case
    yield _failure(big, b',"message":"g\\u00e9ne"')  # an escape msgspec writes shorter
    yield _failure(big, b',"message":"a\\/b"')
    yield _failure(big, b', "message":"spaced"')  # whitespace inside an error
    yield _failure(big[:-1] + b', "n":1}')  # whitespace inside details
    yield _failure(big[:-1] + b',"n":1e2,"m":-0,"f":1.50}')  # numbers spelled longer than msgspec's
    yield _failure(big, top=b'"extra":1e2,')  # an unknown member: parsed as before
    yield _failure(big, top=b'"d\\u0061ta":{},')  # an escaped top-level key
    yield _failure(big).replace(b'"errors":[{', b'"errors":[{"code":"A","message":"b","details":{}},{', 1)
    pad = b',"pad":"' + b"x" * KEYED_TOP_MIN + b'"}'
    for n in (5, 4, 3):  # the whole document nested max_depth - 1, max_depth and max_depth + 1 levels
        yield _failure(b'{"deep":' + b"[" * (MAX_DEPTH - n) + b"]" * (MAX_DEPTH - n) + pad)
    yield _failure(b'{"deep":' + b"[" * 400 + b"]" * 400 + b"}")


VARIANTS = list(_variants(_BIG))
LARGE = [b for d in ("dotbot", "response-v2", "errorcode") for b in CORPUS_BY[d]] + VARIANTS


def _same_members(
    buf: bytes,
    parse: Callable[[bytes], dict[str, msgspec.Raw]],
    keyed: dict[str, KeyedItems],
    typed: dict[str, Callable[[msgspec.Raw], Any]] | None = None,
) -> None:
    """Where ``parse``'s members prove ``buf``'s top level, ``top_members``' prove it and match
    (``typed``: a typed member's wire name -> the decode of its type)."""
    try:
        got = parse(buf)
    except (msgspec.DecodeError, RecursionError):
        return
    if not spans_whole(buf, got):
        return
    want = top_members(buf)
    assert spans_whole(buf, want), buf[:200]
    assert set(got) == set(want)
    for k, v in got.items():
        if k in keyed:
            assert _JSON.decode(v) == _JSON.decode(want[k])
            assert type(got) is TopMembers
            items, plain = got.decoded[k], keyed[k].decode(want[k])
            assert items == plain
            assert [bytes(e.details) for e in items] == [bytes(e.details) for e in plain]
        elif typed and k in typed:
            assert _JSON.decode(v) == _JSON.decode(want[k])
            assert type(got) is TopMembers
            assert got.decoded[k] == typed[k](want[k])
        else:
            assert bytes(v) == bytes(want[k])


def test_the_top_parse_gives_the_members_or_refuses() -> None:
    parse = dotbot._DEC.top_parser()
    assert parse is not None
    for buf in DOCS + LARGE:
        _same_members(buf, parse, {"errors": _ITEMS})


def test_an_empty_keyed_member_is_what_its_encoding_and_from_twins_give() -> None:
    """A success's ``"errors":[]``: the top parse gives msgspec's encoding of the empty list as
    its span and the items ``from_twins`` gives (without calling it); spaced, the span proof
    fails as for any other member."""
    parse = dotbot._DEC.top_parser()
    assert parse is not None
    doc = _failure(b"{}").replace(b'"errors":[{"code":"NOT_FOUND","message":"gone","details":{}}]', b'"errors":[]')
    assert b'"errors":[]' in doc
    got = parse(doc)
    assert bytes(got["errors"]) == msgspec.json.encode([]) == bytes(top_members(doc)["errors"])
    twins = msgspec.json.decode(b"[]", type=_ITEMS.twins)
    assert got.decoded["errors"] == _ITEMS.from_twins(twins, msgspec.Raw(b"[]"), False) == []
    assert spans_whole(doc, got)
    spaced = doc.replace(b'"errors":[]', b'"errors":[ ]')
    assert not spans_whole(spaced, parse(spaced))
    _same_members(doc, parse, {"errors": _ITEMS})


def test_only_a_reader_of_keyed_items_or_typed_members_has_a_top_parse() -> None:
    """The top level is parsed by a Struct only where the reader reads a member as keyed items
    (dotbot) or decodes one by its type (code-graph)."""
    for name, dec in DECODERS:
        assert (dec.top_parser() is not None) == (name in ("dotbot", "code-graph"))


def test_a_typed_member_is_never_encoded_longer() -> None:
    """Only types whose encoding is never longer than any spelling of the same value are typed."""
    assert never_longer(code_graph.Data)
    for tp in (float, int | float, dict[str, int], list[float], dotbot.Audit):
        assert not never_longer(tp), tp

    class Written(msgspec.Struct):  # writes a default the input may leave out
        a: int = 0

    class Tagged(msgspec.Struct, omit_defaults=True, tag=True):
        a: int = 0

    for tp in (Written, Tagged, list[Written] | None):
        assert not never_longer(tp), tp
    with pytest.raises(TypeError):
        WireDecoder(dotbot.Envelope, "dotbot", "$._envglot", typed=frozenset({"audit"})).top_parser()


_DATA_HEAD = (
    b'"tool":"t.x","version":"1.0","requestId":"r1","generatedAt":"2026-11-27T10:00:00Z",'
    b'"workspace":{"root":"/r","repoName":"n"}'
)
_META = b'{"approxTokens":0,"truncated":false,"limits":{}}'


def _cg(result: bytes, data: bytes = b"", meta: bytes = _META, ok: bool = True, top: bytes = b"") -> bytes:
    """A code-graph document (``data``: more members of ``data``, after its head; ``top``: more
    top-level members, first)."""
    head = b"{" + top + b'"success":' + (b"true" if ok else b"false") + b',"data":{' + _DATA_HEAD + data
    return head + b',"result":' + result + b',"meta":' + meta + b"}}"


def _cg_failure(details: bytes, error: bytes = b"") -> bytes:
    return _cg(b'{"error":{"code":"NOT_FOUND","message":"gone"' + error + b',"details":' + details + b"}}", ok=False)


def _cg_variants(big: bytes) -> Iterator[bytes]:
    """Large code-graph documents, and the same in every spelling a length proof must see through."""
    yield _cg(big)
    yield _cg_failure(big)
    yield _cg_failure(big, b',"hint":"x"')
    yield _cg(big).replace(b'"data":{', b'"data":{"result":[],', 1)  # a repeated key inside data
    yield _cg(big).replace(b'"data":{"tool":"t.x",', b'"data":{', 1).replace(b',"meta":', b',"tool":"t.x","meta":')
    yield _cg(big).replace(b'"repoName":"n"}', b'"repoName":"n","rev":null}')  # an explicit default
    yield _cg(big).replace(b'"repoName":"n"}', b'"repoName":"n","rev":"abc"}')
    yield _cg(big).replace(b'"requestId"', b'"r\\u0065questId"')  # an escaped key inside data
    yield _cg(big).replace(b'"tool":"t.x"', b'"tool":"t\\u001Fx"')  # a control character's escape, upper case
    yield _cg(big).replace(b'"tool":"t.x"', b'"tool":"t\\u001fx"')
    yield _cg(big).replace(b'"tool":"t.x"', b'"tool":"t\\u00e9x"')  # an escape msgspec writes shorter
    yield _cg(big).replace(b'"tool":"t.x"', b'"tool":"t\\/x"')
    yield _cg(big).replace(b'"tool":"t.x"', b'"tool": "t.x"')  # whitespace inside data
    yield _cg(big, b',"extra":1')  # an unknown member inside data: parsed as before
    yield _cg(big, top=b'"extra":1,')  # an unknown top-level member
    yield _cg(big, top=b'"data":{},')  # a repeated top-level member (the last wins)
    yield _cg(big, top=b'"data":5,')  # one the Struct refuses first
    yield _cg(big, top=b'"d\\u0061ta":{},')  # an escaped top-level key
    yield _cg(big, meta=_META.replace(b":0,", b":1e2,"))  # a number an int refuses
    yield _cg(big, meta=_META.replace(b":0,", b":-0,"))  # an int spelled longer than msgspec's
    yield _cg(big, meta=_META[:-1] + b',"page":{"hasMore":true,"cursor":null,"total":3}}')
    args = b'{"q":' + big + b"}"
    yield _cg(b"{}", meta=_META[:-1] + b',"nextQuerySuggestion":[{"tool":"a","args":' + args + b',"reason":null}]}')
    pad = b',"pad":"' + b"x" * KEYED_TOP_MIN + b'"}'
    for n in (5, 4, 3, 2):  # nested max_depth - 2 to max_depth + 1 levels, below typed levels too
        deep = b'{"deep":' + b"[" * (MAX_DEPTH - n) + b"]" * (MAX_DEPTH - n) + pad
        yield _cg(deep)
        yield _cg(b"{}", meta=_META.replace(b'"limits":{}', b'"limits":' + deep))
        deep_args = b'{"deep":' + b"[" * (MAX_DEPTH - n - 3) + b"]" * (MAX_DEPTH - n - 3) + pad
        yield _cg(b"{}", meta=_META[:-1] + b',"nextQuerySuggestion":[{"tool":"a","args":' + deep_args + b"}]}")
    yield _cg(b'{"deep":' + b"[" * 400 + b"]" * 400 + pad)


CG_VARIANTS = list(_cg_variants(_BIG))
_DATA = msgspec.json.Decoder(code_graph.Data).decode


def test_the_code_graph_top_parse_gives_the_members_or_refuses() -> None:
    parse = code_graph._DEC.top_parser()
    assert parse is not None
    for buf in DOCS + CG_VARIANTS + CORPUS_BY["code-graph"]:
        _same_members(buf, parse, {}, {"data": _DATA})


@pytest.mark.parametrize("to", ["response-v2", "errorcode", "dotbot", "result", "problem-json"])
def test_a_large_code_graph_document_answers_as_convert(to: str) -> None:
    """code-graph's typed ``data`` on the straight line: its bytes or error (message and path,
    the depth's included, at typed levels too) are the general path's."""
    assert all(len(doc) >= KEYED_TOP_MIN for doc in CG_VARIANTS)
    entry = Pipeline("code-graph", to, IGNORE).convert_bytes
    general = _general(Pipeline("code-graph", to, IGNORE))
    for doc in CG_VARIANTS + CORPUS_BY["code-graph"]:
        assert _answer(entry, doc) == _answer(general, doc), doc[:160]


def test_a_large_code_graph_payload_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """On the straight line a large code-graph document's ``data`` is decoded by the top parse only."""
    doc = CG_VARIANTS[0]
    want = Pipeline("code-graph", "result", IGNORE).convert_bytes(doc)
    seen: list[Any] = []
    from_members = WireDecoder.from_members

    def counted(self: WireDecoder, members: dict[str, msgspec.Raw]) -> Any:
        seen.append(type(members) is TopMembers and "data" in members.decoded)
        return from_members(self, members)

    monkeypatch.setattr(WireDecoder, "from_members", counted)
    assert Pipeline("code-graph", "result", IGNORE).convert_bytes(doc) == want
    assert seen == [True]


@given(
    st.lists(st.sampled_from(["code", "message", "path", "details", "c\\u006fde", "x"]), max_size=6),
    st.lists(st.sampled_from(['"a"', '"\\u00e9"', '"\\/"', "null", "1e2", "{}", '{"k":1,"k":2}', " 1"]), max_size=6),
)
@SETTINGS
def test_any_error_spelling_proves_only_what_is_so(keys: list[str], values: list[str]) -> None:
    """Errors with keys repeated, escaped or unknown and values in any spelling."""
    members = ",".join(f'"{k}":{v}' for k, v in zip(keys, values, strict=False))
    doc = _failure(_BIG).replace(b'"errors":[{', ('"errors":[{' + members + ("," if members else "")).encode(), 1)
    parse = dotbot._DEC.top_parser()
    assert parse is not None
    _same_members(doc, parse, {"errors": _ITEMS})


def _answer(fn: Callable[[bytes], bytes], doc: bytes) -> Any:
    try:
        return fn(doc)
    except EnvglotError as exc:
        return type(exc).__name__, str(exc), exc.path


def _general(p: Pipeline) -> Callable[[bytes], bytes]:
    return lambda doc: p.convert(doc, p.report())[0]


@pytest.mark.parametrize("to", ["response-v2", "errorcode", "code-graph"])
def test_a_forced_source_answers_as_convert(to: str) -> None:
    """Large failures in every spelling, and the corpus: the straight line's bytes or error
    (message and path, the depth's included) are the general path's."""
    for src in ("dotbot", "response-v2", "errorcode", "result"):
        entry = Pipeline(src, to, IGNORE).convert_bytes
        general = _general(Pipeline(src, to, IGNORE))
        for doc in LARGE + CORPUS_BY[src]:
            assert _answer(entry, doc) == _answer(general, doc), doc[:160]


def test_a_large_failure_skips_its_details_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """On the straight line a large dotbot failure's ``errors`` are decoded by the top parse only."""
    doc = VARIANTS[0]
    assert len(doc) >= KEYED_TOP_MIN
    want = Pipeline("dotbot", "response-v2", IGNORE).convert_bytes(doc)
    calls: list[bytes] = []
    decode = KeyedItems.decode

    def counted(self: KeyedItems, raw: msgspec.Raw) -> list[Any]:
        calls.append(bytes(raw))
        return decode(self, raw)

    monkeypatch.setattr(KeyedItems, "decode", counted)
    assert Pipeline("dotbot", "response-v2", IGNORE).convert_bytes(doc) == want
    assert calls == []


def _non_ascii(text: bytes) -> Iterator[bytes]:
    """Large documents that are not ASCII (``text`` holds characters above U+00FF in every UTF-8
    piece), with a BOM, spaced, and with invalid UTF-8 in a piece, across a piece's end, at the end."""
    success = _failure(b"{}").replace(b'"status":"error"', b'"status":"ok"')
    success = success.replace(b'[{"code":"NOT_FOUND","message":"gone","details":{}}]', b"[]")
    success = success.replace(b'"data":{}', b'"data":{"text":"' + text + b'"}')
    for doc in (_failure(b'{"text":"' + text + b'"}'), success):
        spaced = msgspec.json.format(doc, indent=2)
        yield from (doc, b"\xef\xbb\xbf" + doc, spaced, b"\xef\xbb\xbf" + spaced)
        start = doc.index(text)
        for at in (1, UTF8_CHUNK // 2, UTF8_CHUNK - start - 1, UTF8_CHUNK - start, 2 * UTF8_CHUNK - start + 1):
            for bad in (b"\xff", b"\xe6\x9d", b"\xed\xa0\x80", b"\xc3"):  # stray, cut short, surrogate, cut by ASCII
                yield doc[: start + at] + bad + doc[start + at :]
        yield doc[:-2] + b"\xe6" + doc[-2:]


def test_a_large_non_ascii_document_answers_as_convert() -> None:
    """The straight line's UTF-8 step past ``UTF8_CHUNK`` (``utf8_error``; a BOM left to the top
    level's parse) answers as the general path: the same bytes, or the same error and path."""
    text = "東京 é Ω a ".encode() * (4 * UTF8_CHUNK // 15)
    docs = list(_non_ascii(text))
    assert all(len(d) > 3 * UTF8_CHUNK for d in docs) and not docs[0].isascii()
    p = Pipeline("dotbot", "response-v2", IGNORE)
    general = _general(Pipeline("dotbot", "response-v2", IGNORE))
    for doc in docs + docs:  # twice: after a spaced document the line tries the spaced layout first
        assert _answer(p.convert_bytes, doc) == _answer(general, doc), doc[:160]


@pytest.mark.parametrize(
    ("src", "doc"),
    [
        ("code-graph", _cg(_BIG).replace(b'"repoName":"n"}', b'"repoName":"n","rev":null}')),
        ("code-graph", _cg(_BIG).replace(b'"tool":"t.x"', b'"tool":"t\\u00e9x"')),
        ("dotbot", _failure(_BIG, b',"path":null')),
    ],
)
def test_a_decoded_member_spelled_longer_keeps_the_straight_line(
    src: str, doc: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A member the top parse decoded, spelled longer than its encoding (an explicit default, a
    longer escape), does not prove the top level: the members parse does, and the document is
    converted on the straight line, not by the general path."""
    want = _general(Pipeline(src, "response-v2", IGNORE))(doc)
    calls: list[bytes] = []
    convert = Pipeline.convert

    def counted(self: Pipeline, buf: bytes, *args: Any, **kwargs: Any) -> Any:
        calls.append(buf)
        return convert(self, buf, *args, **kwargs)

    monkeypatch.setattr(Pipeline, "convert", counted)
    assert Pipeline(src, "response-v2", IGNORE).convert_bytes(doc) == want
    assert calls == []
