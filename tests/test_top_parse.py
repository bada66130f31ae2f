"""A forced source's top level parsed into a Struct of its wire Struct's members (issue 28).

``WireDecoder.top_parser`` gives the members :func:`envglot.limits.top_members` gives, or
refuses the document (the straight line then parses it as before); with ``keyed`` it decodes
dotbot's ``errors`` in the same parse, so a failure's ``details`` are skipped once. What must
hold: wherever its members prove the top level laid end to end (``spans_whole``), the members
``top_members`` gives prove it too and are the same (a keyed member's span meaning the same,
its items what ``KeyedItems`` decodes from the input's span), and every face answers as the
general path answers: same bytes, or the same error, message and path (depth included).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envglot.dialects import dotbot
from envglot.errors import EnvglotError
from envglot.keyed import KeyedItems
from envglot.limits import MAX_DEPTH, UTF8_CHUNK, spans_whole, top_members
from envglot.options import Options
from envglot.pipeline import Pipeline
from envglot.registry import bundled
from envglot.toplevel import KEYED_TOP_MIN, TopMembers
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


def _same_members(buf: bytes, parse: Callable[[bytes], dict[str, msgspec.Raw]], keyed: dict[str, KeyedItems]) -> None:
    """Where ``parse``'s members prove ``buf``'s top level, ``top_members``' prove it and match."""
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
        else:
            assert bytes(v) == bytes(want[k])


def test_the_top_parse_gives_the_members_or_refuses() -> None:
    parse = dotbot._DEC.top_parser()
    assert parse is not None
    for buf in DOCS + LARGE:
        _same_members(buf, parse, {"errors": _ITEMS})


def test_only_a_reader_of_keyed_items_has_a_top_parse() -> None:
    """The top level is parsed by a Struct only where the reader reads a member as keyed items."""
    for name, dec in DECODERS:
        assert (dec.top_parser() is not None) == (name == "dotbot")


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
