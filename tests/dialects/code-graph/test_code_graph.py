"""code-graph (Ouroboros Code Graph): goldens plus approxTokens, version "1.0", nested errors, requestId."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import msgspec
import pytest
from hypothesis import strategies as st

import envglot
from dialects.golden_suite import GoldenSuite
from envelopes import code_of, counts, json_values, objects, record, text
from envglot import Kind
from envglot.canonical import NextStep, Pagination
from golden import cases

DOCUMENTED = {"INVALID_INPUT", "INTERNAL_ERROR", "NOT_AVAILABLE", "MISSING_PARAMS", "UNKNOWN_ACTION"}


def js_stringify(doc: object) -> str:
    """``JSON.stringify(doc)`` for the documents of the corpus (no exotic numbers)."""
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))


def approx_tokens(doc: dict) -> int:
    """``Math.ceil(JSON.stringify(envelope).length / 4)`` with ``approxTokens: 0``, length in UTF-16 units."""
    doc = json.loads(json.dumps(doc))
    doc["data"]["meta"]["approxTokens"] = 0
    return math.ceil(len(js_stringify(doc).encode("utf-16-le")) // 2 / 4)


def _js_safe(out: bytes) -> bool:
    """True if Python re-encodes ``out`` exactly as JSON.stringify would (no exponents, no big ints)."""
    return js_stringify(json.loads(out)).encode() == msgspec.json.format(out, indent=-1)


# -- valid envelopes for the shared property tests (tests/envelopes.py finds ``envelopes`` by convention) --


def _code_graph(ok: bool, result: Any, data: dict[str, Any]) -> dict[str, Any]:
    return {"success": ok, "data": {**data, "result": result}}


_cg_data = record(
    {
        "tool": text,
        "version": "1.0",
        "requestId": text,
        "generatedAt": text,
        "workspace": record({"root": text, "repoName": text}, {"rev": text}, extra=False),
        "meta": record(
            {"approxTokens": counts, "truncated": st.booleans(), "limits": objects},
            {
                "nextQuerySuggestion": st.lists(
                    record({"tool": text, "args": objects}, {"reason": text}, extra=False), min_size=1, max_size=2
                ),
                "page": record({"hasMore": st.booleans()}, {"cursor": text, "total": counts}, extra=False),
            },
            extra=False,
        ),
    },
    extra=False,
)
envelopes = st.builds(_code_graph, st.just(True), json_values, _cg_data) | st.builds(
    _code_graph,
    st.just(False),
    st.builds(
        lambda e: {"error": e},
        record({"code": code_of("code-graph"), "message": text}, {"details": objects}, extra=False),
    ),
    _cg_data,
)
"""Valid documents of this dialect, including a newer emitter's unknown keys (``test_properties``)."""


def _sealed_as_counted(
    data: bytes, dialect: str, doc: bytes, tail: bytes, top: Any = None, minified: bool = False, kept: bool = True
) -> bytes:
    """code-graph's ``seal(doc, top, minified=...)`` right after the writer wrote ``data`` (its
    record of that document kept, or cleared), checked against ``seal(doc)`` with no record (the
    whole document counted): the sealed bytes (``tail``: what was appended, for the message)."""
    from envglot.dialects import code_graph

    envglot.convert(data, from_=dialect, to="code-graph", unsupported="ignore")
    if not kept:
        code_graph._WRITTEN[0] = None
    fast = code_graph.seal(doc, top, minified=minified)
    code_graph._WRITTEN[0] = None
    assert fast == code_graph.seal(doc), tail
    return fast


class TestCodeGraph(GoldenSuite):
    dialect = "code-graph"
    native = frozenset(
        {
            "real-file-not-found",
            "real-invalid-params",
            "real-lsp-not-available",
            "real-nonascii-search",
            "real-tree-truncated",
            "real-zod-invalid-input",
            "unknown-action",
            "unknown-graph-code",
        }
    )

    @pytest.mark.parametrize("source", cases(), ids=str)
    def test_approx_tokens_counts_the_compact_envelope(self, source) -> None:
        out = envglot.convert(source.data, from_=source.dialect, to="code-graph", unsupported="ignore")
        if not _js_safe(out):
            assert re.search(rb"\d[eE][-+]?\d|\d{17,}", source.data), "only exotic numbers may skip this check"
            return
        doc = json.loads(out)
        assert doc["data"]["meta"]["approxTokens"] == approx_tokens(doc)
        assert doc["data"]["version"] == "1.0" or source.dialect == "code-graph"

    def test_approx_tokens_counts_utf16_units_not_bytes_or_code_points(self) -> None:
        case = next(c for c in cases("code-graph") if c.stem == "real-nonascii-search")
        doc = json.loads(case.data)
        doc["data"]["meta"]["approxTokens"] = 0
        text = js_stringify(doc)
        assert math.ceil(len(text) / 4) == 124  # code points: the emoji is one
        assert math.ceil(len(text.encode()) / 4) == 129  # UTF-8 bytes
        out = json.loads(envglot.convert(case.data, to="code-graph"))
        assert out["data"]["meta"]["approxTokens"] == 125  # UTF-16 units, as JavaScript counts

    @pytest.mark.parametrize(
        "text",
        ["plain ascii", "caf\u00e9", "\U0001f600 grin", "\u4e2d\u6587\U00010348\U0010ffff", 'q\\"uote', ""],
    )
    def test_the_utf16_length_is_counted_without_the_utf16_text(self, text: str) -> None:
        from envglot.dialects.code_graph import _utf16_length

        raw = text.encode()
        assert _utf16_length(raw) == len(raw.decode().encode("utf-16-le")) // 2

    def test_seal_given_the_decoded_top_level_gives_the_same_bytes(self) -> None:
        from envglot.dialects import code_graph
        from envglot.residue import open_document

        for case in cases("code-graph")[:8]:
            out = envglot.convert(case.data, to="code-graph", unsupported="ignore", preserve=True)
            top = open_document(out)
            top["_added"] = msgspec.Raw(b'{"k":"\\u00e9 \\/ x"}')
            doc = msgspec.json.encode(top)
            kept = dict(top)
            assert code_graph.seal(doc, top) == code_graph.seal(doc)
            assert top == kept  # the caller's top level is not changed
            assert json.loads(code_graph.seal(doc))["data"]["meta"]["approxTokens"] == code_graph.counted_tokens(doc)

    def test_seal_counts_the_document_itself_only_where_its_levels_encode_to_it(self) -> None:
        """``seal`` counts ``doc`` less its stated digits when its top level, ``data`` and ``meta``
        encode to it (proven by the lengths); otherwise (a repeated key, whitespace, a count that
        is no digits) it counts the levels encoded with 0: the same rule, ``counted_tokens``."""
        from envglot.dialects import code_graph
        from envglot.residue import open_document

        out = envglot.convert(cases("code-graph")[0].data, to="code-graph", unsupported="ignore", preserve=True)
        meta = b'"meta":{"approxTokens":'
        assert meta in out
        variants = [
            out,
            out.replace(meta, meta.replace(b"{", b'{"approxTokens":5,'), 1),  # repeated in meta
            out.replace(meta, b'"meta": {"approxTokens":', 1),  # whitespace in data
            out.replace(meta, meta.replace(b"{", b'{"\\u001F":1,'), 1),  # msgspec writes \u001f
            out[:-1] + b',"\\u001F":1}',
            out.replace(b'"approxTokens":', b'"approxTokens":-', 1),
            out.replace(b'"approxTokens":', b'"approxTokens":12345678', 1),
            out.replace(b'"data":{', b'"data":{"tool":"x",', 1),  # repeated in data
        ]
        for doc in variants:
            sealed = code_graph.seal(doc, open_document(doc))
            assert sealed == code_graph.seal(doc), doc
            assert json.loads(sealed)["data"]["meta"]["approxTokens"] == code_graph.counted_tokens(doc), doc

    @pytest.mark.parametrize("source", cases(), ids=str)
    def test_seal_adds_to_the_writers_count_the_bytes_of_the_general_way(self, source) -> None:
        """``seal`` of the writer's last document with members appended adds their count to the
        writer's; the same bytes as counting the whole document (the record cleared), also for
        members it must not add: a key the writer writes, one msgspec spells otherwise, whitespace
        between members, and whitespace inside their values (which does not count)."""
        from envglot.dialects import code_graph

        out = envglot.convert(source.data, from_=source.dialect, to="code-graph", unsupported="ignore")
        added = [
            b',"_envglot":{"from":"x","set":[["$",{"a": [1,  2], "b":"\\u00e9 \\/ \xc3\xa9 \xf0\x9f\x98\x80"}]]}}',
            b',"_envglot":{"k":1},"other":"v"}',
            b',"success":true}',
            b',"\\u001F":1}',
            b', "_envglot":1}',
            b',"_envglot":1,"_envglot":2}',
        ]
        for tail in added:
            doc = out[:-1] + tail
            fast = _sealed_as_counted(source.data, source.dialect, doc, tail)
            assert json.loads(fast)["data"]["meta"]["approxTokens"] == code_graph.counted_tokens(doc), tail

    @pytest.mark.parametrize("source", cases(), ids=str)
    def test_seal_given_the_top_level_adds_the_last_member_unparsed_the_bytes_of_the_general_way(self, source) -> None:
        """With ``top`` given (the pipeline's placed residue), one member appended under a key the
        writer does not write is counted without decoding it; anything else (two members, a key
        the writer writes, a key spelled otherwise, whitespace, a repeated key) takes the decode
        as before: the same bytes as counting the whole document."""
        from envglot.dialects import code_graph
        from envglot.residue import open_document

        out = envglot.convert(source.data, from_=source.dialect, to="code-graph", unsupported="ignore")
        added = [
            b',"_envglot":{"from":"x","set":[["$",{"a": [1,  2], "b":"\\u00e9 \\/ \xc3\xa9 \xf0\x9f\x98\x80"}]]}}',
            b',"_envglot":{"from":"x","v":5,"digest":"00"}}',
            b',"_envglot":{"k":1},"other":"v"}',
            b',"success":true}',
            b',"\\u001F":1}',
            b',"\\u005fenvglot":1}',
            b', "_envglot":1}',
            b',"_envglot":1,"_envglot":2}',
            b',"_envglot":[1, 2]}',
        ]
        for tail in added:
            doc = out[:-1] + tail
            fast = _sealed_as_counted(source.data, source.dialect, doc, tail, open_document(doc))
            assert json.loads(fast)["data"]["meta"]["approxTokens"] == code_graph.counted_tokens(doc), tail
        # the shortcut is taken where it applies (no decode of the appended member)
        doc = out[:-1] + added[1]
        envglot.convert(source.data, from_=source.dialect, to="code-graph", unsupported="ignore")
        assert code_graph._appended_last(added[1][1:], open_document(doc))

    @pytest.mark.parametrize("source", cases(), ids=str)
    def test_seal_of_a_minified_document_formats_nothing_the_bytes_of_the_general_way(self, source) -> None:
        """``minified`` (the caller's word that the document holds no whitespace outside strings,
        as the pipeline's fused path gives it) counts without formatting: for minified documents
        (whitespace only inside strings, escapes, characters beyond the BMP), with the writer's
        record and without it, with ``top`` and without, the bytes of counting the whole document."""
        from envglot.dialects import code_graph
        from envglot.residue import open_document

        data = msgspec.json.format(source.data, indent=-1)
        out = envglot.convert(data, from_=source.dialect, to="code-graph", unsupported="ignore")
        added = [
            b',"_envglot":{"from":"x","set":[["$",{"a":"1  2","b":"\\u00e9 \\/ \\n\xc3\xa9 \xf0\x9f\x98\x80"}]]}}',
            b',"_envglot":{"from":"x","v":5,"digest":"00"}}',
            b',"_envglot":{"k":1},"other":"v"}',
            b',"success":true}',
            b',"\\u001F":" "}',
            b',"_envglot":1,"_envglot":2}',
        ]
        for tail in added:
            doc = out[:-1] + tail
            assert msgspec.json.format(doc, indent=-1) == doc
            for top in (None, open_document(doc)):
                for kept in (True, False):
                    _sealed_as_counted(data, source.dialect, doc, tail, top, minified=True, kept=kept)
        assert not code_graph._appended_last(b'"_envglot":{}}', {"_envglot": {}})  # not Raw: decoded

    @pytest.mark.parametrize("style", ["compact", "pretty"])
    @pytest.mark.parametrize("preserve", [False, True])
    @pytest.mark.parametrize("via", [None, "dotbot", "response-v2"])
    def test_a_source_object_spelling_the_count_is_carried_unchanged(self, via, preserve, style) -> None:
        """``meta.limits`` and a suggestion's ``args`` are the source's objects, written after
        ``approxTokens``: when they spell ``"meta":{"approxTokens":0`` (compact or spaced) they
        are carried byte for byte and the writer's own count is the one set (the rule of
        ``counted_tokens``), from code-graph itself and through another dialect, fused or not."""
        from envglot.dialects import code_graph

        doc = json.loads(next(c for c in cases("code-graph") if c.stem == "spec-digest-ok").data)
        spelled = {"meta": {"approxTokens": 0}, "x": [{"meta": {"approxTokens": 0}}]}
        doc["data"]["meta"]["limits"] = spelled
        doc["data"]["meta"]["nextQuerySuggestion"][0]["args"] = spelled
        doc["data"]["result"] = {"meta": {"approxTokens": 0}}
        for data in (json.dumps(doc, separators=(",", ":")).encode(), json.dumps(doc, indent=1).encode()):
            if via is not None:
                data = envglot.convert(data, to=via, unsupported="ignore", preserve=preserve)
            out = envglot.convert(data, to="code-graph", unsupported="ignore", preserve=preserve, style=style)
            if via is not None and preserve:
                assert json.loads(out) == doc  # the round trip restores the original, its count too
                continue
            meta = json.loads(out)["data"]["meta"]
            assert json.loads(out)["data"]["result"] == {"meta": {"approxTokens": 0}}
            assert meta["limits"] in (spelled, {})  # {}: the limits the source dialect cannot carry
            assert [s["args"] for s in meta.get("nextQuerySuggestion", ())] in ([spelled], [])
            assert meta["approxTokens"] == code_graph.counted_tokens(out) > 0

    def test_a_stale_estimate_is_recomputed_and_reported(self) -> None:
        case = next(c for c in cases("code-graph") if c.stem == "spec-digest-ok")
        conv = envglot.conversion(case.data, to="code-graph", unsupported="ignore")
        assert [(d.kind, d.path) for d in conv.diagnostics] == [(Kind.VALUE_COERCED, "$.data.meta.approxTokens")]

    def test_version_is_always_1_0_and_another_one_is_kept_as_an_extra(self) -> None:
        doc = json.loads(cases("code-graph")[0].data)
        doc["data"]["version"] = "2.0"
        data = json.dumps(doc).encode()
        assert json.loads(envglot.convert(data, to="code-graph"))["data"]["version"] == "2.0"
        via = envglot.convert(envglot.convert(data, to="response-v2", unsupported="ignore"), to="code-graph")
        assert json.loads(via)["data"]["version"] == "1.0"
        conv = envglot.conversion(data, to="result", unsupported="ignore")
        assert (Kind.FIELD_DROPPED, "$.data.version") in [(d.kind, d.path) for d in conv.diagnostics]

    @pytest.mark.parametrize(
        ("stem", "code", "category"),
        [
            ("real-invalid-params", "INVALID_PARAMS", "invalid_argument"),
            ("real-file-not-found", "FILE_NOT_FOUND", "not_found"),
            ("real-lsp-not-available", "LSP_NOT_AVAILABLE", "unavailable"),
            ("spec-issues-error", "INVALID_INPUT", "invalid_argument"),
            ("unknown-action", "UNKNOWN_ACTION", "invalid_argument"),
        ],
    )
    def test_the_error_nested_in_data_result_error(self, stem: str, code: str, category: str) -> None:
        case = next(c for c in cases("code-graph") if c.stem == stem)
        env = envglot.read(case.data)
        assert not env.ok
        assert (env.problems[0].code, env.problems[0].category) == (code, category)
        assert json.loads(envglot.convert(case.data, to="code-graph"))["data"]["result"]["error"]["code"] == code

    def test_an_empty_details_object_survives(self) -> None:
        case = next(c for c in cases("code-graph") if c.stem == "real-lsp-not-available")
        assert envglot.read(case.data).problems[0].details == msgspec.Raw(b"{}")
        out = json.loads(envglot.convert(case.data, to="code-graph"))
        assert out["data"]["result"]["error"]["details"] == {}

    @pytest.mark.parametrize("source", [c for c in cases() if c.dialect != "code-graph"], ids=str)
    def test_other_dialects_only_get_documented_codes(self, source) -> None:
        env = envglot.read(source.data, from_=source.dialect)
        doc = json.loads(envglot.convert(source.data, from_=source.dialect, to="code-graph", unsupported="ignore"))
        assert doc["success"] is env.ok
        assert list(doc["data"]) == ["tool", "version", "requestId", "generatedAt", "workspace", "result", "meta"]
        if not env.ok:
            assert doc["data"]["result"]["error"]["code"] in DOCUMENTED
            assert set(doc["data"]["result"]["error"]) <= {"code", "message", "details"}

    def test_the_synthesized_request_id_is_short_base36_and_reproducible(self) -> None:
        data = b'{"success": true, "value": {"n": 1}}'
        conv = envglot.conversion(data, to="code-graph", unsupported="ignore")
        rid = json.loads(conv.output)["data"]["requestId"]
        assert re.fullmatch(r"[0-9a-z]{8}", rid)
        assert json.loads(envglot.convert(data, to="code-graph", unsupported="ignore"))["data"]["requestId"] == rid
        other = json.loads(
            envglot.convert(b'{"success": true, "value": {"n": 2}}', to="code-graph", unsupported="ignore")
        )
        assert other["data"]["requestId"] != rid
        assert (Kind.SYNTHESIZED, "$.data.requestId") in [(d.kind, d.path) for d in conv.diagnostics]


def test_synthesized_request_id_does_not_depend_on_input_whitespace() -> None:
    import json

    import envglot

    doc = {"success": True, "value": {"a": [1, 2], "b": "x, y"}}
    loose = envglot.convert(json.dumps(doc, indent=2).encode(), to="code-graph", unsupported="ignore")
    tight = envglot.convert(json.dumps(doc, separators=(",", ":")).encode(), to="code-graph", unsupported="ignore")
    assert loose == tight


def _write(env: envglot.Envelope, **context: Any) -> tuple[dict[str, Any], list[tuple[Kind, str, str]]]:
    report = envglot.Report("ignore")
    out = envglot.write(env, "code-graph", report=report, context=context or None)
    assert envglot.validate(out, "code-graph") == []
    return json.loads(out), [(d.kind, d.path, d.message) for d in report]


@pytest.mark.parametrize(
    ("steps", "written", "dropped"),
    [
        ((NextStep(kind="query", tool="a"),), ["a"], []),
        ((NextStep(kind="query"),), None, ["$.next_steps[0]"]),
        (
            (NextStep(kind="intent", reason="r"), NextStep(kind="action", tool="b"), NextStep(kind="action")),
            ["b"],
            ["$.next_steps[0]", "$.next_steps[2]"],
        ),
    ],
)
def test_a_next_step_without_a_tool_is_left_out_and_reported(
    steps: tuple[NextStep, ...], written: list[str] | None, dropped: list[str]
) -> None:
    doc, diags = _write(envglot.Envelope(ok=True, next_steps=steps))
    suggestions = doc["data"]["meta"].get("nextQuerySuggestion")
    assert (None if suggestions is None else [s["tool"] for s in suggestions]) == written
    assert [p for k, p, m in diags if k is Kind.FIELD_DROPPED and "names no tool" in m] == dropped


_DOTBOT_STEPS = (
    b'{"schema_id":"dotbot-mcp-response@1","tool":"t","version":"1.0.0","status":"ok","summary":"s","data":{},'
    b'"warnings":[],"errors":[],"audit":{"timestamp":"2026-01-02T13:57:00Z","duration_ms":1,"source":"x"},'
    b'"intent":{"reason":"look first"},"actions":[{"id":"a","type":"suggestion","label":"A","tool":"t.a"},'
    b'{"id":"b","type":"link","label":"Docs"}]}'
)


def test_steps_without_a_tool_are_reported_at_their_source_paths() -> None:
    conv = envglot.conversion(_DOTBOT_STEPS, to="code-graph", unsupported="ignore")
    assert [s["tool"] for s in json.loads(conv.output)["data"]["meta"]["nextQuerySuggestion"]] == ["t.a"]
    dropped = [d.path for d in conv.diagnostics if d.kind is Kind.FIELD_DROPPED and "names no tool" in d.message]
    assert dropped == ["$.intent", "$.actions[1]"]
    assert envglot.convert(_DOTBOT_STEPS, to="code-graph", unsupported="ignore") == conv.output


@pytest.mark.parametrize(
    ("limits", "context", "written", "diag"),
    [
        (None, {}, {}, (Kind.SYNTHESIZED, "$.data.meta.limits")),
        (None, {"limits": {"maxItems": 5}}, {"maxItems": 5}, (Kind.SYNTHESIZED, "$.data.meta.limits")),
        (b'{"maxItems":3}', {}, {"maxItems": 3}, None),
        (b"{}", {}, {}, None),
        (b"null", {}, {}, (Kind.VALUE_COERCED, "$.limits")),
        (b"5", {}, {"value": 5}, (Kind.PAYLOAD_WRAPPED, "$.limits")),
    ],
)
def test_limits_is_an_object_and_a_missing_one_is_synthesized(
    limits: bytes | None, context: dict[str, Any], written: dict[str, Any], diag: tuple[Kind, str] | None
) -> None:
    env = envglot.Envelope(ok=True, limits=None if limits is None else msgspec.Raw(limits))
    doc, diags = _write(env, **context)
    assert doc["data"]["meta"]["limits"] == written
    assert [(k, p) for k, p, _ in diags if "limits" in p] == ([] if diag is None else [diag])


@pytest.mark.parametrize(
    ("pagination", "context", "has_more", "how"),
    [
        (Pagination(has_more=True), {}, True, None),
        (Pagination(has_more=False, cursor="c2"), {}, False, None),
        (Pagination(cursor="c2"), {}, True, "by rule"),  # a cursor names the next page
        (Pagination(cursor="c2", offset=5, limit=5, total=10), {}, True, "by rule"),
        (Pagination(offset=0, limit=5, total=10), {}, True, "by rule"),
        (Pagination(offset=5, limit=5, total=10), {}, False, "by rule"),
        (Pagination(offset=0, limit=5), {}, False, "by rule"),
        (Pagination(total=10), {}, False, "by rule"),
        (Pagination(total=10), {"pagination.has_more": True}, True, "from the caller"),
    ],
)
def test_has_more_is_synthesized_when_the_source_does_not_say(
    pagination: Pagination, context: dict[str, Any], has_more: bool, how: str | None
) -> None:
    doc, diags = _write(envglot.Envelope(ok=True, pagination=pagination), **context)
    assert doc["data"]["meta"]["page"]["hasMore"] is has_more
    synthesized = [m for k, p, m in diags if (k, p) == (Kind.SYNTHESIZED, "$.data.meta.page.hasMore")]
    assert synthesized == ([] if how is None else [f"code-graph requires page.hasMore; wrote {has_more} ({how})"])


@pytest.mark.parametrize(
    ("pagination", "has_more"),
    [(b'{"cursor":"c2","page_size":10}', True), (b'{"page_size":10,"total_count":3}', False)],
)
def test_a_response_v2_pagination_without_has_more(pagination: bytes, has_more: bool) -> None:
    src = b'{"success":true,"data":{},"error":null,"meta":{"version":"response-v2","pagination":' + pagination + b"}}"
    conv = envglot.conversion(src, to="code-graph", unsupported="ignore")
    assert json.loads(conv.output)["data"]["meta"]["page"]["hasMore"] is has_more
    assert (Kind.SYNTHESIZED, "$.data.meta.page.hasMore") in [(d.kind, d.path) for d in conv.diagnostics]
    assert envglot.convert(src, to="code-graph", unsupported="ignore") == conv.output


def _with_details(details: bytes) -> bytes:
    return (
        b'{"success":false,"data":{"tool":"t","version":"1.0","requestId":"r","generatedAt":"2026-01-10T12:00:00.000Z",'
        b'"workspace":{"root":"/w","repoName":"w"},"result":{"error":{"code":"INVALID_INPUT","message":"m","details":'
        + details
        + b'}},"meta":{"approxTokens":0,"truncated":false,"limits":{}}}}'
    )


@pytest.mark.parametrize("details", [b'["x",1]', b'"text"', b"7", b"true"])
@pytest.mark.parametrize(
    ("target", "kind"),
    [
        ("code-graph", Kind.PAYLOAD_WRAPPED),
        ("dotbot", Kind.PAYLOAD_WRAPPED),
        ("response-v2", Kind.PAYLOAD_WRAPPED),
        ("errorcode", Kind.FIELD_DROPPED),
        ("result", None),  # error_data.details takes any JSON: carried as it is
        ("problem-json", None),
    ],
)
def test_non_object_details_are_read_verbatim_and_reported_where_a_target_changes_them(
    details: bytes, target: str, kind: Kind | None
) -> None:
    """The reader keeps them (canonical ``details`` is any JSON); a writer reports wrapping or dropping them."""
    data = _with_details(details)
    assert envglot.read(data).problems[0].details == msgspec.Raw(details)
    conv = envglot.conversion(data, to=target, unsupported="ignore")
    kinds = [d.kind for d in conv.diagnostics if d.path == "$.data.result.error.details"]
    if kind is None:
        assert kinds == []
        assert envglot.read(conv.output, from_=target).problems[0].details == msgspec.Raw(details)
    else:
        assert kinds == [kind]
    assert envglot.validate(conv.output, target) == []


def test_document_key_is_the_hash_s_eight_lowest_base36_digits_lowest_first() -> None:
    """The documented rule, digit by digit, against :func:`envglot.wire.document_key`'s table form."""
    import hashlib
    import random

    from msgspec import Raw

    from envglot.wire import document_key

    rnd = random.Random(20261127)
    for _ in range(2000):
        tool = rnd.choice([None, "", "search", "Search.Docs", "東京"])
        ok = rnd.random() < 0.5
        payload = rnd.choice([None, Raw(b"{}"), Raw(bytes(rnd.randrange(256) for _ in range(rnd.randrange(40))))])
        first = rnd.choice([None, (None, None), ("NOT_FOUND", "no such node"), (None, "é")])
        h = hashlib.blake2b(digest_size=8)
        h.update((tool or "").encode() + (b"1" if ok else b"0"))
        h.update(b"" if payload is None else bytes(payload))
        h.update(b"" if first is None else (first[0] or "").encode() + (first[1] or "").encode())
        n, digits = int.from_bytes(h.digest(), "big"), ""
        for _ in range(8):
            n, r = divmod(n, 36)
            digits += "0123456789abcdefghijklmnopqrstuvwxyz"[r]
        assert document_key(tool, ok, payload, first) == digits
