"""A longer document read by its reader's strict decode alone, its outcome member counted outside its payload.

The forced straight line (``pipeline._straight``) reads a strict source's documents below
``KEYED_TOP_MIN`` bytes by the strict decode alone (``fields.STRICT_READ``), the generated
function counting the outcome key outside the top level's ``Raw`` values; from ``SPLIT_MIN``
bytes on too (h-med10's cases, on h-tiny10's count). Every answer must be ``Pipeline.convert``'s.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from envglot.dialect import get_dialect
from envglot.errors import EnvglotError
from envglot.limits import repeated_member
from envglot.options import Options
from envglot.pipeline import SPLIT_MIN, Pipeline

ROOT = Path(__file__).resolve().parents[1]
IGNORE = Options(unsupported="ignore")
STRICT_SOURCES = ("code-graph", "dotbot", "problem-json")
_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw])


def _medium(dialect: str) -> list[bytes]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import corpus
    finally:
        sys.path.pop(0)
    docs = corpus.generate({"medium": 24}, dialects=(dialect,)).payloads(dialect, "medium")
    return [d for d in docs if len(d) >= SPLIT_MIN and msgspec.json.format(d, indent=-1) == d]


MEDIUM = {d: _medium(d) for d in STRICT_SOURCES}


def _encode(members: dict[str, bytes]) -> bytes:
    return msgspec.json.encode({k: msgspec.Raw(v) for k, v in members.items()})


def _variants(doc: bytes, key: str, again: bool = True) -> Iterator[bytes]:
    """``doc`` and the shapes that test the count: the outcome repeated (before, after, escaped),
    in another member's value, the payload's key spaced, repeated, or its value copied into an
    earlier member, another value under its key earlier, a backslash in the payload; ``again``:
    also each shape with a long payload that does not hold the key."""
    quoted = msgspec.json.encode(key)
    members = {k: bytes(v) for k, v in _TOP.decode(doc).items()}
    yield doc
    yield b"{" + quoted + b':"error",' + doc[1:]
    yield doc[:-1] + b"," + quoted + b':"error"}'
    yield b'{"' + key[:-1].encode() + b"\\u00" + b"%02x" % ord(key[-1]) + b'":"error",' + doc[1:]
    yield b"{" + quoted + b":" + members[key] + b"," + doc[1:]  # the same outcome twice
    for name, value in members.items():
        if name == key or value[:1] != b'"':
            continue
        yield _encode({**members, name: quoted})  # the key's spelling as another member's value
        break
    for name, value in members.items():
        if value[:1] not in (b"{", b"["):
            continue
        if again and value[:1] == b"{" and len(value) > 500:  # the same shapes with a payload not holding the key
            yield from _variants(_encode({**members, name: b'{"x":"' + b"y" * len(value) + b'"}'}), key, False)
        yield doc.replace(msgspec.json.encode(name) + b":", msgspec.json.encode(name) + b": ", 1)
        yield doc[:-1] + b"," + msgspec.json.encode(name) + b":" + value + b"}"  # repeated, the same bytes
        yield doc[:-1] + b"," + msgspec.json.encode(name) + b':{"a":1}}'  # repeated, the last one holds
        yield doc[:-1] + b"," + msgspec.json.encode(name) + b":{" + quoted + b":1}}"
        if value[:1] == b"{" and len(value) > 2:
            yield doc.replace(value, value[:-1] + b',"zz":"\\u0041"}', 1)  # a backslash inside it
            yield doc.replace(value, value[:-1] + b"," + quoted + b":1}", 1)
        # the same bytes as an earlier member's nested value, under the same key
        for other, v in members.items():
            if other != name and v[:1] == b"[" and len(v) > 2 and v[1:2] == b"{":
                copy = v[:2] + msgspec.json.encode(name) + b":" + value + b"," + v[2:]
                yield _encode({other: copy, **{k: x for k, x in members.items() if k != other}})
                yield (
                    _encode({other: copy, **{k: x for k, x in members.items() if k != other}})[:-1]
                    + b","
                    + quoted
                    + b':"error"}'
                )
            if other != name and v[:1] == b"{" and len(v) > 2:
                copy = b"{" + msgspec.json.encode(name) + b":" + value + b"," + v[1:]
                rest = _encode({k: x for k, x in members.items() if k != other})
                yield _encode({other: copy, **{k: x for k, x in members.items() if k != other}})
                # another value under the same key earlier, the outcome repeated right after it
                other_value = b"{" + msgspec.json.encode(name) + b':{"a":1},' + v[1:]
                head = b"{" + msgspec.json.encode(other) + b":" + other_value + b","
                yield head + quoted + b':"error",' + rest[1:]


def _answer(fn: Any, doc: bytes) -> Any:
    try:
        return fn(doc)
    except EnvglotError as exc:
        return type(exc).__name__, str(exc), exc.path
    except Exception as exc:
        return type(exc).__name__, str(exc)


def _general(p: Pipeline) -> Any:
    """``p``'s general path, with the report a call gets."""
    return lambda doc: p.convert(doc, p.report())[0]


@pytest.mark.parametrize("src", STRICT_SOURCES)
def test_a_longer_document_takes_no_members_parse(src: str, members_parses: list[bytes]) -> None:
    """A strict source's plain documents from ``SPLIT_MIN`` bytes on are read without the members'
    parse and answer as ``Pipeline.convert``; so do the shapes that test the count, mixed in."""
    parsed = members_parses
    key = get_dialect(src).outcome_key
    docs = [d for d in MEDIUM[src] if 92 not in d]
    assert docs
    odd = [v for doc in docs[:4] for v in _variants(doc, key)]
    for to in ("response-v2", "errorcode", "result"):
        general = Pipeline(src, to, IGNORE)
        want = [_answer(_general(general), doc) for doc in docs]
        p = Pipeline(src, to, IGNORE)
        del parsed[:]
        assert [_answer(p.convert_bytes, doc) for doc in docs] == want
        assert parsed == []
        mixed = [d for pair in zip(odd, docs * 8, strict=False) for d in pair]
        for doc in mixed:  # a fresh pipeline each time: the line's guesses do not hide a case
            fresh = Pipeline(src, to, IGNORE)
            assert _answer(fresh.convert_bytes, doc) == _answer(_general(general), doc), (to, doc[:160])
        assert [_answer(p.convert_bytes, doc) for doc in mixed] == [_answer(_general(general), doc) for doc in mixed]


def test_a_payload_key_found_earlier_with_other_bytes_is_not_taken_for_the_payload() -> None:
    """dotbot's first ``"data":`` inside an earlier error's ``details`` (another value), the
    outcome repeated right after it: refused as ``Pipeline.convert`` refuses it."""
    members = {k: bytes(v) for k, v in _TOP.decode(MEDIUM["dotbot"][0]).items()}
    members["data"] = b'{"x":"' + b"y" * 3000 + b'"}'
    members["status"] = b'"error"'
    error = b'[{"code":"E","message":"m","details":{"data":{"a":1}}}]'
    rest = _encode({k: v for k, v in members.items() if k != "errors"})
    doc = b'{"errors":' + error + b',"status":"ok",' + rest[1:]
    assert repeated_member(doc, "status")
    general = Pipeline("dotbot", "response-v2", IGNORE)
    p = Pipeline("dotbot", "response-v2", IGNORE)
    assert _answer(p.convert_bytes, doc) == _answer(_general(general), doc)
    assert _answer(p.convert_bytes, doc)[0] == "ParseError"


def _tiny(dialect: str) -> list[bytes]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import corpus
    finally:
        sys.path.pop(0)
    return corpus.generate({"tiny": 24}, dialects=(dialect,)).payloads(dialect, "tiny")


_ERRORCODE_ODD = [
    b'{"success":true,"data":{"requestId":"r","generatedAt":"g"}}',
    b'{"success":true,"data":{"requestId":"r","generatedAt":"g","error":{"code":"E"}},"error":null}',
    b'{"success":true,"data":{"requestId":"r","generatedAt":"g","success":false}}',
    b'{"success":true,"data":{"request\\u0049d":"r","generatedAt":"g"}}',
    b'{"success":true,"data":{"requestId":"r"},"data":{"requestId":"r","generatedAt":"g"}}',
    b'{"success":true,"data":{"a":1},"error":null}',
    b'{"success":true,"data":{"error":"boom"},"error":null}',
    b'{"success":true,"data":[1],"error":null}',
    b'{"success":true,"data":{},"meta":{"tool_version":"1.0","elapsed_ms":1,"version":"response-v2"}}',
    b'{"success":true,"data":{},"meta":null,"error":null}',
    b'{ "success" : true , "data" : { "requestId" : "r" , "generatedAt" : "g" } }',
]
"""errorcode documents another dialect's probe may name (code-graph's keys in ``data``,
legacy-v1's shape), with escapes, repeated and spaced members."""


@pytest.mark.parametrize("src", ["errorcode", "response-v2"])
def test_a_short_document_read_strictly_asks_its_rival_as_the_members_line_does(
    src: str, members_parses: list[bytes]
) -> None:
    """A source whose rival is not silent after a strict read (errorcode; response-v2's is, after a
    plain one: its version check's value known) reads its short plain documents by the strict
    decode alone, the rival asked of their members after it: no members parse, every answer
    ``Pipeline.convert``'s, on the corpus's tiny records, the odd documents above and the count's
    shapes."""
    docs = [d for d in _tiny(src) if 92 not in d and len(d) < SPLIT_MIN]
    assert docs
    key = get_dialect(src).outcome_key
    odd = (_ERRORCODE_ODD if src == "errorcode" else []) + [v for doc in docs[:3] for v in _variants(doc, key)]
    for to in ("code-graph", "dotbot", "problem-json", "result"):
        if to == src:
            continue
        general = Pipeline(src, to, IGNORE)
        want = [_answer(_general(general), doc) for doc in docs]
        p = Pipeline(src, to, IGNORE)
        del members_parses[:]
        assert [_answer(p.convert_bytes, doc) for doc in docs] == want
        assert members_parses == []
        for doc in odd:
            fresh = Pipeline(src, to, IGNORE)
            assert _answer(fresh.convert_bytes, doc) == _answer(_general(general), doc), (to, doc[:160])


_WIRED = ("code-graph", "dotbot", "problem-json", "result", "response-v2", "errorcode")


def _outcome_test(src: str) -> tuple[Any, Any]:
    """``src``'s strict decode and the generated ``(buf, w)`` test of its outcome key shown twice."""
    from envglot import fields

    strict = get_dialect(src).steps()[0].decoder.decoder()  # type: ignore[union-attr]
    u = fields.Unit("outcome_test")
    expr = fields._outcome_twice(u, strict.type, get_dialect(src).outcome_key)
    return strict.decode, eval(f"lambda buf, w: {expr}", u.ns)  # the compiler's own expression


def _counted_apart(buf: bytes, w: Any, quoted: bytes) -> int:
    """The outcome key's count in ``buf`` less its count in a copy of each top-level ``Raw`` value."""
    values = [v for v in (getattr(w, f) for f in w.__struct_fields__) if type(v) is msgspec.Raw and v]
    return buf.count(quoted) - sum(bytes(v).count(quoted) for v in values)


@pytest.mark.parametrize("src", _WIRED)
def test_the_outcome_count_around_a_raw_value_is_the_count_less_its_copy(src: str) -> None:
    """The generated test (the key counted around the one present ``Raw`` value's span in the
    document, else the whole count, as main counts it) answers as the whole count less each value's
    copy, on the corpus's documents and the shapes that test it: the outcome repeated, a value's
    key spaced or repeated, its bytes copied under its key into an earlier member, another value
    under its key first (dotbot: inside an error's details, the outcome repeated after it);
    problem-json with ``details`` and ``data`` both present, each alone."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import corpus
    finally:
        sys.path.pop(0)
    decode, twice = _outcome_test(src)
    key = get_dialect(src).outcome_key
    quoted = msgspec.json.encode(key)
    generated = corpus.generate({"tiny": 30, "medium": 12}, seed=11, dialects=(src,))
    docs = [msgspec.json.format(d, indent=-1) for s in ("tiny", "medium") for d in generated.payloads(src, s)]
    docs = [v for doc in docs[:6] + docs[-4:] for v in _variants(doc, key)] + docs
    if src == "dotbot":  # the payload's key first inside an error's details, the outcome repeated after it
        members = {k: bytes(v) for k, v in _TOP.decode(MEDIUM["dotbot"][0]).items()}
        members["data"] = b'{"x":"' + b"y" * 3000 + b'"}'
        error = b'[{"code":"E","message":"m","details":{"data":{"a":1}}}]'
        rest = _encode({k: v for k, v in members.items() if k != "errors"})
        docs += [b'{"errors":' + error + b',"status":"ok",' + rest[1:], b'{"errors":' + error + b"," + rest[1:]]
    if src == "problem-json":
        both = b'{"type":"urn:x:a","title":"A","status":400,"details":{"status":1},"data":{"status":2,"x":[1]}}'
        docs += [
            both,
            both.replace(b',"data":{"status":2,"x":[1]}', b""),
            both.replace(b'"details":{"status":1},', b""),
        ]
        docs += [both.replace(b'"status":400,', b""), b'{"data":{"status":2,"x":[1]},' + both[1:]]
    checked = 0
    for doc, w in _strictly_read(docs, decode):
        assert bool(twice(doc, w)) == (_counted_apart(doc, w, quoted) > 1), doc[:200]
        checked += 1
    assert checked > 40


@pytest.mark.parametrize("src", _WIRED)
def test_a_value_is_copied_for_the_outcome_count_only_where_the_whole_count_shows_it_twice(src: str) -> None:
    """Below the span's bound the generated test counts the outcome key in the whole document
    first and copies a ``Raw`` value to count it there only where that count is more than one (a
    count of at most one less anything is at most one): a failure's document, showing the key
    once, makes no copy; the answer is the whole count less each value's copy, as before."""
    from envglot import fields

    strict = get_dialect(src).steps()[0].decoder.decoder()  # type: ignore[union-attr]
    key = get_dialect(src).outcome_key
    quoted = msgspec.json.encode(key)
    u = fields.Unit("outcome_test")
    expr = fields._outcome_twice(u, strict.type, key)
    copied: list[bytes] = []
    for name, value in list(u.ns.items()):
        if type(getattr(value, "__self__", None)) is msgspec.json.Encoder:

            def encode(raw: Any, _encode: Any = value) -> bytes:
                copied.append(_encode(raw))
                return copied[-1]

            u.ns[name] = encode
    twice = eval(f"lambda buf, w: {expr}", u.ns)
    once = seen = 0
    docs = _tiny(src) + [v for doc in _tiny(src)[:4] for v in _variants(doc, key)]
    for doc, w in _strictly_read(docs, strict.decode):
        del copied[:]
        assert bool(twice(doc, w)) == (_counted_apart(doc, w, quoted) > 1), doc[:200]
        if doc.count(quoted) <= 1:
            assert copied == [], doc[:200]
            once += 1
        seen += bool(copied)
    assert once and (seen or src == "code-graph")


def _strictly_read(docs: Iterable[bytes], decode: Any) -> Iterator[tuple[bytes, Any]]:
    """Each of ``docs`` without a backslash (the strict read takes none) that ``decode`` reads,
    with what it read."""
    for doc in docs:
        if 92 in doc:
            continue
        try:
            w = decode(doc)
        except msgspec.MsgspecError:
            continue
        yield doc, w


def _top_count(doc: bytes, key: str) -> int:
    """How many times the top level of ``doc`` holds the member ``key`` (repeats counted)."""
    import json

    pairs: list[list[tuple[str, Any]]] = []
    json.loads(doc, object_pairs_hook=lambda p: pairs.append(p) or dict(p))
    return sum(k == key for k, _ in pairs[-1])


def _dotbot_failures() -> list[bytes]:
    """dotbot failures of ``KEYED_TOP_MIN`` bytes or more whose first error's details are more
    than half of the document, and the shapes that test the count around them: the outcome key
    inside the details (once, twice), repeated at the top before and after the errors, inside the
    payload, escaped at the top, another ``"details":`` first (an earlier warning's, other bytes;
    the same bytes), a second error, the details' key spaced."""
    failure = b'{"schema_id":"dotbot-mcp-response@1","tool":"t","version":"1.0.0","status":"error",'
    failure += b'"summary":"s","data":{},"warnings":[],"errors":[{"code":"NOT_FOUND","message":"m",'
    failure += b'"details":DETAILS}],"audit":{"timestamp":"2026-01-01T00:00:00Z","duration_ms":1,"source":"x"}}'
    long = b'{"items":[' + b",".join(b'{"n":%d,"s":"v"}' % i for i in range(1200)) + b"]}"
    docs = []
    for details in (
        long,
        long[:-1] + b',"status":"ok"}',
        long[:-1] + b',"status":1,"x":{"status":2}}',
        b'{"a":"' + b"status" * 3000 + b'"}',
    ):
        doc = failure.replace(b"DETAILS", details)
        docs += [doc, doc.replace(b'"details":', b'"details": ', 1)]
        docs.append(doc.replace(b'"status":"error",', b'"status":"error","status":"error",', 1))
        docs.append(doc[:-1] + b',"status":"error"}')
        docs.append(doc.replace(b'"data":{}', b'"data":{"status":"error"}', 1))
        docs.append(doc.replace(b'"status":"error"', b'"st\\u0061tus":"error","status":"error"', 1))
        docs.append(doc.replace(b'"warnings":[]', b'"warnings":[{"code":"W","message":"w","details":{"z":1}}]', 1))
        warning = b'"warnings":[{"code":"W","message":"w","details":' + details + b"}]"
        docs.append(doc.replace(b'"warnings":[]', warning, 1))  # the same bytes first
        docs.append(doc.replace(b'"errors":[{', b'"errors":[{"code":"E","message":"e"},{', 1))
        docs.append(doc.replace(b"}],", b'},{"code":"E","message":"e","details":{"status":1}}],', 1))
    return docs


def test_a_large_failures_outcome_test_and_answers_hold(members_parses: list[bytes]) -> None:
    """On large dotbot failures whose details are long and the shapes around them (the outcome key
    inside the details, repeated at the top, in the payload, escaped, another ``"details":``
    first), the generated outcome test is false only where the top level holds ``status`` at most
    once (a parse's count); a failure's spelling at the start takes the members' line (no strict
    read); every answer of the converter is the general path's."""
    decode, twice = _outcome_test("dotbot")
    checked = 0
    for doc, w in _strictly_read(_dotbot_failures(), decode):
        if not twice(doc, w):
            assert _top_count(doc, "status") <= 1, doc[:200]
        checked += 1
    assert checked > 30
    for to in ("response-v2", "errorcode", "result", "problem-json", "code-graph"):
        general = Pipeline("dotbot", to, IGNORE)
        p = Pipeline("dotbot", to, IGNORE)
        for doc in _dotbot_failures():
            want = _answer(_general(general), doc)
            del members_parses[:]
            assert _answer(p.convert_bytes, doc) == want, (to, doc[:160])
            assert members_parses or 92 in doc or b'"status":"error","status"' in doc, doc[:160]


def _large(dialect: str) -> list[bytes]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import corpus
    finally:
        sys.path.pop(0)
    docs = corpus.generate({"large": 8}, seed=5, dialects=(dialect,)).payloads(dialect, "large")
    return [msgspec.json.format(d, indent=-1) for d in docs]


@pytest.mark.parametrize("src", STRICT_SOURCES)
def test_a_large_document_is_read_strictly_where_its_ends_show_a_success(src: str, members_parses: list[bytes]) -> None:
    """From ``KEYED_TOP_MIN`` bytes on, a silent rival's strict source reads a document strictly
    where the outcome member within ``OUTCOME_PEEK`` bytes of an end is no failure
    (``shows_success``), else on the members' line: every answer is ``Pipeline.convert``'s, the
    documents guessed a success take no members parse, those guessed a failure take it; so do the
    shapes that test the count (the outcome repeated, escaped, in another value, moved to the end
    after a long payload, a failure's outcome after a success's spelling in the head)."""
    from envglot import fields
    from envglot.pipeline import OUTCOME_PEEK, shows_success
    from envglot.toplevel import KEYED_TOP_MIN

    d = get_dialect(src)
    key = d.outcome_key
    seen = msgspec.json.encode(key) + b":"
    docs = [doc for doc in _large(src) if 92 not in doc and len(doc) >= KEYED_TOP_MIN]
    assert docs
    peeks = fields.counted_around(d)  # code-graph's count is the whole document's: no strict read
    assert peeks == (src != "code-graph")
    guessed = [peeks and shows_success(doc, seen, d.failure_value) for doc in docs]
    assert src != "dotbot" or (any(guessed) and not all(guessed))  # (problem-json: no failure spelling)
    for to in ("response-v2", "errorcode", "result"):
        if to == src:
            continue
        general = Pipeline(src, to, IGNORE)
        p = Pipeline(src, to, IGNORE)
        for doc, success in zip(docs, guessed, strict=True):
            want = _answer(_general(general), doc)
            del members_parses[:]
            assert _answer(p.convert_bytes, doc) == want
            assert (members_parses == []) == success, (to, doc[:160])
    members = {k: bytes(v) for k, v in _TOP.decode(docs[0]).items()}
    last = _encode({**{k: v for k, v in members.items() if k != key}, key: members[key]})
    odd = [v for doc in docs[:2] for v in _variants(doc, key)] + [last]
    odd += [seen + d.failure_value + b"," + doc[1:] for doc in docs[:2]]  # a failure's spelling first
    odd += [doc[:-1] + b"," + seen + d.failure_value + b"}" for doc in docs[:2]]
    odd += [b'{"x":{' + seen + b'"ok"},' + doc[1:] for doc in docs[:2]]  # (an unknown member: refused)
    assert any(len(doc) >= KEYED_TOP_MIN and doc.rfind(seen) > len(doc) - OUTCOME_PEEK for doc in odd)
    for to in ("response-v2", "dotbot", "problem-json"):
        if to == src:
            continue
        general = Pipeline(src, to, IGNORE)
        p = Pipeline(src, to, IGNORE)
        for doc in odd:
            fresh = Pipeline(src, to, IGNORE)
            assert _answer(fresh.convert_bytes, doc) == _answer(_general(general), doc), (to, doc[:160])
            assert _answer(p.convert_bytes, doc) == _answer(_general(general), doc), (to, doc[:160])
