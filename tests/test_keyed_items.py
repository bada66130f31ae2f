"""A failure's error ``details`` parsed once for the carried-meaning test (issue 28, large).

``wire.KeyedItems`` decodes a list of error objects with each one's ``details`` also read as
members; it must give exactly what ``list[Issue]`` gives (the details' bytes the input's own
span), and claim the members only where that is proven. ``codes.carries_meaning`` and
``codes.carried_meaning`` answer from those members as from the details' bytes.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import envglot
from envelopes import json_values, text
from envglot.codes import carried_meaning, carries_meaning, details_object, failure_plans
from envglot.context import Context
from envglot.detect import classify_members, top_level
from envglot.diagnostics import Report
from envglot.dialects.dotbot import Issue
from envglot.fields import use_compiled
from envglot.keyed import KeyedItems, KeyedList, details_members
from envglot.limits import check_input, within_depth
from envglot.mappings import mappings_for
from envglot.options import Options
from envglot.pipeline import Pipeline

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_ITEMS = KeyedItems(Issue, "details")
_PLAIN = msgspec.json.Decoder(list[Issue])
_RAW_DICT = msgspec.json.Decoder(dict[str, msgspec.Raw])
_DMAP = mappings_for(None)["dotbot"]


def _same_as_plain(buf: bytes) -> list[Any] | None:
    """``KeyedItems``' result for ``buf``, checked against ``list[Issue]`` (``None``: both refuse)."""
    try:
        plain = _PLAIN.decode(buf)
    except msgspec.ValidationError:
        with pytest.raises(msgspec.ValidationError):
            _ITEMS.decode(msgspec.Raw(buf))
        return None
    got = _ITEMS.decode(msgspec.Raw(buf))
    assert got == plain
    assert [bytes(e.details) for e in got] == [bytes(e.details) for e in plain]
    if type(got) is KeyedList:
        for i, e in enumerate(got):
            members = details_members(got, i)
            if members is None:
                assert e.details is plain[i].details or bytes(e.details) == b""
            else:
                assert members == _RAW_DICT.decode(e.details)
    return got


_DETAILS = b'{"errors":[{"field":"a.b","received":null}],"category":"unavailable","n":1}'


@pytest.mark.parametrize(
    ("buf", "keyed"),
    [
        (b'[{"code":"E","message":"m","details":' + _DETAILS + b"}]", True),
        (b'[{"code":"E","message":"m"}]', True),
        (b"[]", False),  # nothing to prove
        (b'[{"message":"m","details":{"a":1},"code":"E","path":"$.x"}]', True),  # members in another order
        (b'[{"code":"E","message":"m","details":{"a": 1 , "b" :[1, 2]}}]', False),  # spaced inside details
        (b'[{"code":"E","message":"m","details":{"a":[1, 2]}}]', True),  # spaced in a value: the span's own
        (b'[{"code":"E","message":"m","details":{"a":1,"a":2}}]', False),  # a repeated key
        (b'[{"code":"E","message":"m","details":{"\\u0063ategory":"x"}}]', False),  # an escaped key
        (b'[{"code":"E","message":"m","details":{"\\u001F":1}}]', True),  # last: the input's own bytes
        (b'[{"code":"E","message":"m","details":{"\\u001F":1},"path":"p"}]', False),  # else: the escape's case
        (b'[{"code":"E","message":"m","details":{"\\u001f":1},"path":"p"}]', False),  # even as msgspec writes it
        (b'[{"code":"E","message":"m","details":{"\\n":1},"path":"p"}]', False),  # any control character
        (b'[{"code":"E","message":"m","details":{"a":1},"path":"p"}]', True),  # not last: encoded again
        (b'[{"code":"E","message":"\\/","details":{"a":1}}]', False),  # a longer escape elsewhere
        (b'[{"code":"E","message":"m","path":null,"details":{"a":1}}]', False),  # a null stated
        (b'[{"code":"E","message":"m","details":null}]', False),  # no object: list[Issue]'s answer
        (b'[{"code":"E","message":"m","details":[1]}]', False),
        (b'[{"code":"E","message":"m","details":{"a":1}}, {"code":"F","message":"n"}]', False),
        (b'[{"code":"E","message":"m","details":{}},{"code":"F","message":"n","details":{"b":2}}]', True),
        (b'[{"code":"E","message":"m","details":{"a":1},"other":1}]', None),  # an unknown field: refused
        (b'[{"code":1,"message":"m","details":{"a":1}}]', None),
    ],
)
def test_keyed_items_cases(buf: bytes, keyed: bool | None) -> None:
    got = _same_as_plain(buf)
    if keyed is None:
        assert got is None
    else:
        assert got is not None and (type(got) is KeyedList) is keyed, buf


_SPACES = st.sampled_from(["", "", "", " ", "\n"])
_KEYS = st.sampled_from(["category", "retryable", "a", "é", "\u2028", "\x1f", "\n"]) | text


@st.composite
def error_lists(draw: st.DrawFn) -> bytes:
    """A list of dotbot errors written member by member: details' keys may repeat, be escaped
    (either case of hex), be spaced; the errors' own members too."""

    def spell(s: str) -> str:
        out = json.dumps(s, ensure_ascii=draw(st.booleans()))
        return re.sub(r"\\u([0-9a-f]{4})", lambda m: "\\u" + m[1].upper(), out) if draw(st.booleans()) else out

    def obj(members: list[tuple[str, str]]) -> str:
        parts = [draw(_SPACES) + spell(k) + draw(_SPACES) + ":" + v + draw(_SPACES) for k, v in members]
        return "{" + ",".join(parts) + "}"

    errors = []
    for _ in range(draw(st.integers(0, 3))):
        members = [("code", spell(draw(text))), ("message", spell(draw(text)))]
        if draw(st.booleans()):
            members.append(("path", "null" if draw(st.booleans()) else spell(draw(text))))
        if draw(st.integers(0, 4)):
            keys = draw(st.lists(_KEYS, max_size=4))
            members.append(("details", obj([(k, json.dumps(draw(json_values), ensure_ascii=False)) for k in keys])))
        errors.append(obj(draw(st.permutations(members))))
    return ("[" + ",".join(errors) + "]").encode()


@SETTINGS
@given(error_lists())
def test_keyed_items_is_list_of_issue(buf: bytes) -> None:
    got = _same_as_plain(buf)
    if got is None:
        return
    for i, e in enumerate(got):
        details = None if bytes(e.details) == b"" else e.details
        members = details_members(got, i)
        assert carries_meaning(details, _DMAP, members) is carries_meaning(details, _DMAP)


@SETTINGS
@given(error_lists())
def test_carried_meaning_from_members_is_from_bytes(buf: bytes) -> None:
    got = _same_as_plain(buf)
    if got is None or type(got) is not KeyedList:
        return
    m = mappings_for(None)
    for i, e in enumerate(got):
        if bytes(e.details) == b"":
            continue
        p = envglot.Problem(category="internal", code=e.code, details=e.details)
        said, said_report = Context(m, Report(), _DMAP), Context(m, Report(), _DMAP)
        assert carried_meaning(p, _DMAP, said, details_members(got, i)) == carried_meaning(p, _DMAP, said_report)
        assert said.report.diagnostics == said_report.report.diagnostics


def _dotbot_failure(code: str, details: dict[str, Any]) -> dict[str, Any]:
    """A dotbot failure of one error ``code`` with ``details``."""
    return {
        "schema_id": "dotbot-mcp-response@1",
        "tool": "t",
        "version": "1.0.0",
        "status": "error",
        "summary": "s",
        "data": {},
        "warnings": [],
        "errors": [{"code": code, "message": "m", "details": details}],
        "audit": {"timestamp": "2026-01-01T00:00:00Z", "duration_ms": 1, "source": "s"},
    }


def test_a_large_failure_reads_its_carried_category_from_the_members() -> None:
    """A large dotbot failure (read from the members) whose details carry a category converts
    as its spaced twin (read by the decoder, its details then parsed again)."""
    doc = _dotbot_failure("INTERNAL", {"category": "unavailable", "retryable": True, "rows": ["x" * 40] * 80})
    tight = msgspec.json.encode(doc)
    spaced = json.dumps(doc, indent=1).encode()
    assert len(tight) > 2048
    for to in ("response-v2", "errorcode", "result"):
        conv = envglot.Converter(to=to, from_="dotbot", unsupported="ignore")
        assert conv.convert_bytes(tight) == conv.convert_bytes(spaced)
        reports = Report(), Report()
        outs = [
            envglot.convert(b, to=to, from_="dotbot", report=r) for b, r in zip((tight, spaced), reports, strict=True)
        ]
        assert outs[0] == outs[1]
        assert reports[0].diagnostics == reports[1].diagnostics


def test_what_the_members_form_cannot_read_is_decoded_as_before() -> None:
    """A details key msgspec refuses to read (a lone surrogate) is left to ``list[Issue]``."""
    buf = b'[{"code":"E","message":"m","details":{"\\ud800":1}}]'
    with pytest.raises(msgspec.DecodeError) as plain:
        _PLAIN.decode(buf)
    with pytest.raises(msgspec.DecodeError) as keyed:
        _ITEMS.decode(msgspec.Raw(buf))
    assert str(keyed.value) == str(plain.value)


class _CountingDecoder:
    """``codes._RAW_DICT`` counting its decodes (a details object parsed again)."""

    def __init__(self) -> None:
        self.calls = 0

    def decode(self, buf: Any) -> dict[str, msgspec.Raw]:
        self.calls += 1
        return _RAW_DICT.decode(buf)


@pytest.mark.parametrize("rows", [1, 60, 420])  # read strictly (tiny and medium), by the top parse
@pytest.mark.parametrize("key", ["rows", "\x1f"])  # a control character's escape: spelled otherwise
def test_a_carried_category_is_added_to_the_members_the_reader_read(
    monkeypatch: pytest.MonkeyPatch, rows: int, key: str
) -> None:
    """A dotbot failure whose code response-v2 says as another category carries it in the
    details: where the reader read the details' members and the details are their encoding,
    the writer adds to those members without parsing the details again; the output is the
    hub's either way (tight, spaced, an escape in upper case in the details' last key)."""
    doc = _dotbot_failure("STATE_NOT_INITIALIZED", {"a": 1, key: ["x" * 40] * rows})
    tight = msgspec.json.encode(doc).replace(b"\\u001f", b"\\u001F")
    spaced = json.dumps(doc, indent=1).encode()
    import envglot.codes

    for to in ("response-v2", "result"):
        conv = envglot.Converter(to=to, from_="dotbot", unsupported="ignore")
        for buf in (tight, spaced):
            want = envglot.convert(buf, to=to, from_="dotbot", report=Report())
            spy = _CountingDecoder()
            monkeypatch.setattr(envglot.codes, "_RAW_DICT", spy)
            assert conv.convert_bytes(buf) == want
            monkeypatch.undo()
            if to == "response-v2":
                assert b'"category"' in want  # the meaning carried: the branch under test
            if buf is tight and key == "rows" and rows > 1:
                # by the top parse (420 rows) the reader read the details' members: no decode; 60
                # rows are read strictly (its errors a plain list: the details decoded once, for
                # the carried-meaning test and the writer together) or, where the converter's last
                # document was spaced, by the members' line (read there: no decode)
                assert spy.calls <= (rows != 420), (to, rows)


def _refuse(keys: Any) -> Any:
    raise AssertionError("the details decoded a second time by the carried-meaning test")


@pytest.mark.parametrize("rows", [0, 1, 20])  # tiny and medium: read by the strict decode alone
def test_the_strict_reads_failure_decodes_its_details_once(monkeypatch: pytest.MonkeyPatch, rows: int) -> None:
    """A dotbot failure read by the strict decode (its ``errors`` a plain list) decodes its
    details' members once: the carried-meaning test looks them up (no ``_carries`` decode) and a
    writer that adds the category takes them; the output is the hub's."""
    import envglot.codes

    doc = _dotbot_failure("STATE_NOT_INITIALIZED", {"a": 1, "rows": ["x" * 40] * rows})
    buf = msgspec.json.encode(doc)
    for to in ("response-v2", "result", "code-graph", "errorcode", "problem-json"):
        conv = envglot.Converter(to=to, from_="dotbot", unsupported="ignore")
        want = envglot.convert(buf, to=to, from_="dotbot", report=Report())
        spy = _CountingDecoder()
        monkeypatch.setattr(envglot.codes, "_RAW_DICT", spy)
        monkeypatch.setattr(envglot.codes, "_carries", _refuse)
        assert conv.convert_bytes(buf) == want
        monkeypatch.undo()
        assert spy.calls == 1, to
        if to == "response-v2":
            assert b'"category"' in want  # the writer added to the members it was given


_FAILURE_DETAILS = [
    None,  # absent
    b"null",
    b"[1]",
    b'"text"',
    b"{}",
    b'{"a":1}',
    b'{"a":1,"a":2}',  # a repeated key: the members are not the details' spelling
    b'{"a": 1}',  # spaced
    b'{"category":"unavailable"}',  # carries a category: the hooks read it
    b'{"retryable":true,"a":[1]}',
    b'{"x":"\\u0063ategory"}',  # an escape: not the strict read
    b'{"errors":[{"field":"a.b","received":null}],"n":1.50}',
]


@pytest.mark.parametrize("details", _FAILURE_DETAILS)
@pytest.mark.parametrize("data", [b"{}", b'{"error_code":"x","k":1}'])  # empty; a payload key replaced
@pytest.mark.parametrize("code", ["STATE_NOT_INITIALIZED", "PROJECT_NOT_FOUND", "NOT_A_CODE"])
def test_a_fused_dotbot_failure_converts_as_the_hub_does(details: bytes | None, data: bytes, code: str) -> None:
    """Every target: a dotbot failure's fused conversion (its plan, the details' members read
    once, response-v2's data written as bytes for an empty payload) gives the hub's output."""
    doc = _dotbot_failure(code, {})
    tight = msgspec.json.encode(doc).replace(b',"data":{}', b',"data":' + data)
    tight = tight.replace(b',"details":{}', b"" if details is None else b',"details":' + details)
    for to in ("response-v2", "result", "code-graph", "errorcode", "problem-json"):
        conv = envglot.Converter(to=to, from_="dotbot", unsupported="ignore")
        try:
            want = envglot.convert(tight, to=to, from_="dotbot", report=Report())
        except envglot.EnvglotError as exc:
            with pytest.raises(type(exc)):
                conv.convert_bytes(tight)
            continue
        assert conv.convert_bytes(tight) == want, to


def _shaped_failure(shape: str, code: str, details: bytes | None) -> bytes:
    """A tight dotbot failure of one ``code`` with ``details`` in one of :data:`_FAILURE_SHAPES`."""
    doc = _dotbot_failure(code, {})
    if shape == "warned":
        doc["warnings"] = ["w"]
    elif shape == "warned objects":
        doc["warnings"] = [{"code": "W", "message": "w", "details": {"a": 1}}]
    elif shape == "status warning":
        doc["status"] = "warning"
    elif shape == "status ok":
        doc["status"] = "ok"
    elif shape == "no errors":
        doc["errors"] = []
    elif shape == "two errors":
        doc["errors"].append({"code": "IO_ERROR", "message": "n"})
    elif shape == "empty message":
        doc["errors"][0]["message"] = ""
    elif shape == "empty message and summary":
        doc["errors"][0]["message"], doc["summary"] = "", ""
    elif shape == "path":
        doc["errors"][0]["path"] = "src/a.py"
    elif shape == "spaced":
        return json.dumps(doc, indent=1).encode().replace(b'"details": {}', b'"details": ' + (details or b"{}"))
    tight = msgspec.json.encode(doc)
    return tight.replace(b',"details":{}', b"" if details is None else b',"details":' + details)


_FAILURE_SHAPES = [
    "plain",
    "warned",
    "warned objects",
    "status warning",
    "status ok",
    "no errors",
    "two errors",
    "empty message",
    "empty message and summary",
    "path",
    "spaced",
]


@pytest.mark.parametrize("shape", _FAILURE_SHAPES)
def test_every_dotbot_code_fails_on_the_fused_path_as_the_hub_does(shape: str) -> None:
    """Every code of dotbot's table (and an unknown one), in each failure shape and with details
    absent, null, a string, an object, or one carrying a category or ``retryable``, to each of
    dotbot's targets: the fused output (the status and outcome hooks' failure cases inline, the
    plan's carried members computed once, response-v2's error details, delay, error type and
    message taken inline) is the hub's (fused paths off), or both refuse alike; so is the fused
    path's with a collecting report (the hooks, not the plan), diagnostics and all."""
    details_shapes = [None, b"null", b'"text"', b'{"a":1}', b'{"category":"unavailable"}', b'{"retryable":false}']
    docs = [_shaped_failure(shape, code, d) for code in [*_DMAP.codes, "NOT_A_CODE"] for d in details_shapes]
    for to in ("response-v2", "result", "code-graph", "errorcode", "problem-json"):
        use_compiled(False)
        try:
            hub = [_answer(doc, to) for doc in docs]
        finally:
            use_compiled(True)
        assert [_answer(doc, to) for doc in docs] == hub, to
        conv = envglot.Converter(to=to, from_="dotbot", unsupported="ignore")
        for doc, (want, _) in zip(docs, hub, strict=True):
            try:
                got: bytes | str = conv.convert_bytes(doc)
            except envglot.EnvglotError as exc:
                got = f"{type(exc).__name__}: {exc}"
            assert got == want, (to, doc)


def _answer(doc: bytes, to: str) -> tuple[bytes | str, list[tuple[str, str, str]]]:
    """``convert``'s output (or error) for ``doc`` with a collecting report, and its diagnostics."""
    report = Report()
    try:
        out: bytes | str = envglot.convert(doc, to=to, from_="dotbot", report=report)
    except envglot.EnvglotError as exc:
        out = f"{type(exc).__name__}: {exc}"
    return out, [(str(d.kind), d.path, d.message) for d in report.diagnostics]


@pytest.mark.parametrize("details", _FAILURE_DETAILS)
def test_details_object_makes_the_carried_meaning_test_with_its_decode(details: bytes | None) -> None:
    """``details_object`` (the strict read's one decode of a failure's details): ``None`` where
    there is nothing to test (absent, no object), ``False`` exactly where ``carries_meaning``
    says the details carry meaning, else their members as ``dict[str, Raw]`` decodes them; a
    dialect that carries nothing decodes nothing."""
    raw = None if details is None else msgspec.Raw(details)
    got = details_object(raw, _DMAP)
    if raw is None or details[:1] != b"{":
        assert got is None
        assert not carries_meaning(raw, _DMAP)
    elif carries_meaning(raw, _DMAP):
        assert got is False
    else:
        assert got == msgspec.json.decode(details, type=dict[str, msgspec.Raw])
    quiet = next(d for d in mappings_for(None).dialects.values() if d.meaning_keys[0] is None)
    assert details_object(raw, quiet) is None


@pytest.mark.parametrize("to", ["response-v2", "result", "code-graph", "errorcode", "problem-json"])
def test_a_failure_plan_spells_its_code_and_word_as_msgspec_encodes_them(to: str) -> None:
    """Every dotbot code's plan (with ``retryable`` unstated, true, false) keeps its choice's
    code and word encoded once: what encoding them for each failure gave."""
    target = mappings_for(None).dialects[to]
    plans = failure_plans(_DMAP, target)
    for code in [*_DMAP.codes, "NOT_A_CODE"]:
        for retryable in (None, True, False):
            plan = plans[code, retryable, None]
            if plan is None:
                continue
            assert plan.code_json == msgspec.json.encode(plan.choice.code)
            word = plan.choice.word
            assert plan.word_json == (None if word is None else msgspec.json.encode(word))


def _counted_by_the_chunk_loop(p: Pipeline, doc: bytes) -> tuple[bytes | str, list[tuple[str, str]]]:
    """``doc`` through the counting path ``migrate``'s chunk loop takes (``Pipeline.counter`` given the
    detection): its output (or error) and its ``(kind, path)`` entries, sorted."""
    try:
        clean, bom = check_input(doc, p.max_depth, depth=False)
        top = within_depth(top_level, clean, p.max_depth, bom)
        out = p.counter()(doc, (clean, bom, classify_members(top, p.registry)), top)
    except envglot.EnvglotError as exc:
        return f"{type(exc).__name__}: {exc}", []
    return out[0], sorted((str(k), path) for k, path in out[3])


def _by_the_hub(p: Pipeline, doc: bytes) -> tuple[bytes | str, list[tuple[str, str]]]:
    """``doc`` converted by the hub (fused paths off) with a full report: output (or error) and sorted
    ``(kind, path)`` entries."""
    use_compiled(False)
    try:
        conv = p.run(doc, Report(p.policy))
    except envglot.EnvglotError as exc:
        return f"{type(exc).__name__}: {exc}", []
    finally:
        use_compiled(True)
    return conv.output, sorted((str(d.kind), d.path) for d in conv.diagnostics)


@pytest.mark.parametrize("shape", _FAILURE_SHAPES)
def test_every_dotbot_code_counts_on_the_counting_path_what_the_hub_reports(shape: str) -> None:
    """The variants of :func:`test_every_dotbot_code_fails_on_the_fused_path_as_the_hub_does` through
    the counting path ``migrate`` takes (``Pipeline.counter``, detected): the hub's output and
    ``(kind, path)`` entries, or its error, for each target; a failure's count depends on its details'
    JSON type, not only on its code (docs/performance.md, h-cnt15)."""
    details_shapes = [None, b"null", b'"text"', b'{"a":1}', b'{"category":"unavailable"}', b'{"retryable":false}']
    docs = [_shaped_failure(shape, code, d) for code in [*_DMAP.codes, "NOT_A_CODE"] for d in details_shapes]
    for to in ("response-v2", "result", "code-graph", "errorcode", "problem-json"):
        p = Pipeline(None, to, Options(unsupported="ignore"))
        for doc in docs:
            assert _counted_by_the_chunk_loop(p, doc) == _by_the_hub(p, doc), (to, doc)
    p = Pipeline(None, "response-v2", Options(unsupported="ignore"))
    text, obj = (
        _counted_by_the_chunk_loop(p, _shaped_failure(shape, "PROJECT_NOT_FOUND", d))[1] for d in details_shapes[2:4]
    )
    wrapped = ("payload_wrapped", "$.errors[].details")
    if shape != "no errors":  # (no error there)
        assert wrapped in text and wrapped not in obj
