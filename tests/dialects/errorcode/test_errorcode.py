"""errorcode (TuitBot Session 05): goldens plus retryable derived from the code, data null on errors, meta."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import strategies as st

import envglot
from dialects.golden_suite import GoldenSuite
from envelopes import code_of, counts, json_values, objects, record, text
from envglot import Envelope, Kind, Problem
from envglot.dialects import errorcode
from envglot.limits import top_members
from envglot.mappings import default_mappings
from envglot.wire import WireDecoder
from golden import cases

# The Session 05 contract's table, verbatim: the only codes whose retryable is true.
SPEC_RETRYABLE = {
    "x_rate_limited",
    "x_network_error",
    "x_api_error",
    "db_error",
    "llm_error",
    "thread_partial_failure",
    "policy_error",
}
DERIVED = {"$.error.retryable": ("$.error.code",)}
"""Wire fields the writer derives from others (``test_matrix``: a change is explained by a base's diagnostic)."""
CODES = sorted(default_mappings()["errorcode"].codes)


def _error(env: Envelope) -> tuple[dict, list[envglot.Diagnostic]]:
    report = envglot.Report("ignore")
    doc = msgspec.json.decode(envglot.write(env, "errorcode", report=report))
    return doc, report.diagnostics


# -- valid envelopes for the shared property tests (tests/envelopes.py finds ``envelopes`` by convention) --


def _tool_error(code: str, retryable: bool, rest: dict[str, Any]) -> dict[str, Any]:
    row = default_mappings()["errorcode"].codes.get(code)
    return {"code": code, "retryable": retryable if row is None else bool(row.retryable), **rest}


_errorcode_meta = record(
    {"tool_version": "1.0", "elapsed_ms": counts},
    {
        "mode": text,
        "approval_mode": st.booleans(),
        "pagination": record({}, {"next_token": text, "result_count": counts, "has_more": st.booleans()}, extra=False),
        "correlation_id": text,
    },
)
envelopes = record(
    {"success": True, "data": json_values}, {"meta": _errorcode_meta}, known=frozenset({"error"})
) | record(
    {
        "success": False,
        "data": st.none() | objects,
        "error": st.builds(
            _tool_error,
            code_of("errorcode"),
            st.booleans(),
            record({"message": text}, {"rate_limit_reset": text, "retry_after_ms": counts, "policy_decision": text}),
        ),
    },
    {"meta": _errorcode_meta},
)
"""Valid documents of this dialect, including a newer emitter's unknown keys (``test_properties``)."""


class TestErrorcode(GoldenSuite):
    dialect = "errorcode"
    native = frozenset(
        {
            "null-data-success",
            "policy-denied",
            "rate-limited-workflow",
            "routed-to-approval",
            "scalar-data-pagination",
            "search-ok-api",
            "thread-partial-failure",
            "utility-error-no-meta",
        }
    )

    @pytest.mark.parametrize("code", CODES)
    def test_retryable_is_derived_from_the_code_never_copied(self, code: str) -> None:
        row = default_mappings()["errorcode"].codes[code]
        for stated in (True, False, None):
            problem = Problem(category=row.category, code=code, domain="errorcode", message="m", retryable=stated)
            doc, diags = _error(Envelope(ok=False, problems=(problem,)))
            assert doc["error"]["code"] == code
            assert doc["error"]["retryable"] is (code in SPEC_RETRYABLE)
            changed = [d for d in diags if d.kind is Kind.RETRYABLE_CHANGED]
            assert bool(changed) == (stated is not None and stated is not (code in SPEC_RETRYABLE))

    def test_the_table_has_exactly_the_spec_retryable_codes(self) -> None:
        codes = default_mappings()["errorcode"].codes
        assert {c for c, r in codes.items() if r.retryable} == SPEC_RETRYABLE

    @pytest.mark.parametrize("source", [c for c in cases() if c.dialect != "errorcode"], ids=str)
    def test_written_shape(self, source) -> None:
        env = envglot.read(source.data, from_=source.dialect)
        doc = msgspec.json.decode(
            envglot.convert(source.data, from_=source.dialect, to="errorcode", unsupported="ignore")
        )
        assert list(doc)[:2] == ["success", "data"]
        assert doc["success"] is env.ok
        if env.ok:
            assert "error" not in doc  # omitted on success, never null
        else:
            assert list(doc["error"])[:3] == ["code", "message", "retryable"]
            assert doc["error"]["code"] in CODES  # a closed enum
            if env.payload is None or env.payload == msgspec.Raw(b"{}"):
                assert doc["data"] is None  # data: null on errors
        if "meta" in doc:
            assert list(doc["meta"])[:2] == ["tool_version", "elapsed_ms"]
            assert doc["meta"]["tool_version"] == "1.0"
            assert isinstance(doc["meta"]["elapsed_ms"], int)

    def test_meta_is_omitted_when_there_is_nothing_to_say(self) -> None:
        doc, _ = _error(Envelope(ok=True, payload=msgspec.Raw(b"[]")))
        assert doc == {"success": True, "data": []}

    def test_workflow_mode_is_flattened_into_meta(self) -> None:
        case = next(c for c in cases("errorcode") if c.stem == "rate-limited-workflow")
        env = envglot.read(case.data)
        assert (env.mode, env.approval_mode) == ("autopilot", True)
        doc, _ = _error(env)
        assert doc["meta"] == {"tool_version": "1.0", "elapsed_ms": 212, "mode": "autopilot", "approval_mode": True}

    def test_a_float_duration_is_rounded_and_reported(self) -> None:
        doc, diags = _error(Envelope(ok=True, duration_ms=3.21))
        assert doc["meta"]["elapsed_ms"] == 3
        assert [d.kind for d in diags] == [Kind.VALUE_COERCED]

    def test_the_non_contract_tweet_index_stays_in_errorcode_and_is_reported_elsewhere(self) -> None:
        case = next(c for c in cases("errorcode") if c.stem == "tweet-too-long-compact")
        assert msgspec.json.decode(envglot.convert(case.data, to="errorcode"))["error"]["tweet_index"] == 2
        for target in ("dotbot", "result", "code-graph", "response-v2"):
            conv = envglot.conversion(case.data, to=target, unsupported="ignore")
            assert (Kind.FIELD_DROPPED, "$.error.tweet_index") in [(d.kind, d.path) for d in conv.diagnostics]
            assert b"tweet_index" not in conv.output

    def test_a_partial_failure_keeps_its_data(self) -> None:
        case = next(c for c in cases("errorcode") if c.stem == "thread-partial-failure")
        for target in ("response-v2", "dotbot", "code-graph"):
            back = envglot.read(envglot.convert(case.data, to=target, unsupported="ignore"))
            assert msgspec.json.decode(back.payload) == {
                "failed_at_index": 2,
                "posted_tweet_ids": ["1893011", "1893012"],
            }

    def test_an_unknown_code_is_mapped_into_the_closed_enum(self) -> None:
        case = next(c for c in cases("errorcode") if c.stem == "unknown-enum-code")
        conv = envglot.conversion(case.data, to="errorcode", unsupported="ignore")
        kinds = [(d.kind, d.path) for d in conv.diagnostics]
        assert kinds == [(Kind.CODE_UNKNOWN, "$.error.code"), (Kind.CODE_MAPPED, "$.error.code")]
        with pytest.raises(envglot.UnsupportedError):
            envglot.convert(case.data, to="errorcode", unsupported="raise")

    def test_a_stated_retryable_that_contradicts_the_code_is_reported_on_read(self) -> None:
        case = next(c for c in cases("errorcode") if c.stem == "retryable-contradicts-code")
        report = envglot.Report("ignore")
        assert envglot.read(case.data, report=report).problems[0].retryable is True
        assert [(d.kind, d.path) for d in report] == [(Kind.STATUS_MISMATCH, "$.error.retryable")]

    def test_a_success_carries_no_error_object(self) -> None:
        doc = b'{"success": true, "data": null, "error": {"code": "db_error", "message": "m", "retryable": true}}'
        with pytest.raises(envglot.ParseError, match="absent when success is true") as exc:
            envglot.read(doc)
        assert exc.value.path == "$.error"

    def test_pagination_is_written_only_when_complete(self) -> None:
        """Class 3: PaginationInfo requires result_count and has_more; an incomplete one is dropped, reported."""
        v2 = (
            b'{"success":true,"data":{"tweets":[]},"error":null,"meta":{"version":"response-v2",'
            b'"pagination":{"cursor":"c2","has_more":true}}}'
        )
        conv = envglot.conversion(v2, from_="response-v2", to="errorcode", unsupported="ignore")
        out = msgspec.json.decode(conv.output)
        assert "meta" not in out
        dropped = {d.path for d in conv.diagnostics if d.kind is Kind.FIELD_DROPPED}
        assert {"$.meta.pagination.cursor", "$.meta.pagination.has_more"} <= dropped
        assert envglot.validate(conv.output, "errorcode") == []
        with pytest.raises(envglot.UnsupportedError):
            envglot.convert(v2, from_="response-v2", to="errorcode", unsupported="raise")

    def test_a_requested_page_size_is_not_a_result_count(self) -> None:
        """response-v2 ``page_size`` is the requested limit, errorcode ``result_count`` the number
        of results in this page (issue 25): one never stands in for the other."""
        v2 = (
            b'{"success":true,"data":{"tweets":[]},"error":null,"meta":{"version":"response-v2",'
            b'"pagination":{"cursor":"c2","has_more":false,"page_size":20}}}'
        )
        conv = envglot.conversion(v2, from_="response-v2", to="errorcode", unsupported="ignore")
        assert "meta" not in msgspec.json.decode(conv.output)
        assert "$.meta.pagination.page_size" in [d.path for d in conv.diagnostics if d.lossy]

    def test_complete_pagination_is_written(self) -> None:
        doc = (
            b'{"success":true,"data":[],"meta":{"tool_version":"1.0","elapsed_ms":3,'
            b'"pagination":{"next_token":"c2","result_count":1,"has_more":false}}}'
        )
        assert envglot.read(doc, from_="errorcode").pagination == envglot.canonical.Pagination(
            cursor="c2", count=1, has_more=False
        )
        out = msgspec.json.decode(envglot.convert(doc, from_="errorcode", to="errorcode"))
        assert out["meta"]["pagination"] == {"next_token": "c2", "result_count": 1, "has_more": False}

    def test_validate_requires_result_count_and_has_more(self) -> None:
        doc = b'{"success":true,"data":{},"meta":{"tool_version":"1.0","elapsed_ms":3,"pagination":{"next_token":"n"}}}'
        paths = [v.path for v in envglot.validate(doc, "errorcode")]
        assert paths == ["$.meta.pagination.result_count", "$.meta.pagination.has_more"]


_MEMBER_CASES = [
    b'{"success":true,"data":{"a":1},"meta":{"tool_version":"1.0","elapsed_ms":3}}',
    b'{"success":true,"data":[1,2]}',
    b'{"success":true,"data":null,"error":null,"meta":null}',
    b'{"success":false,"data":null,"error":{"code":"db_error","message":"m","retryable":true}}',
    b'{"success":false,"data":null,"error":{"code":"db_error","message":"m","retryable":"yes"}}',
    b'{"success": true,"data":1}',  # a spaced literal: the generic loop's
    b'{"success":1,"data":1}',
    b'{"success":true}',
    b'{"success":true,"data":1,"meta":{"tool_version":"1.0","elapsed_ms":3,"extra":1}}',
    b'{"success":true,"data":1,"other":2}',
    b'{"data":1,"meta":null,"error":null}',
]


class _Loop(dict[str, msgspec.Raw]):
    """Members :meth:`~envglot.wire.WireDecoder.from_members` reads by its per-member loop."""


_MEMBER_SUCCESS = [True, True, True, False, None, True, None, None, None, None, None]
"""Each of ``_MEMBER_CASES``' Struct's ``success`` (``None``: no Struct, the decoder decides)."""


@pytest.mark.parametrize(("buf", "success"), list(zip(_MEMBER_CASES, _MEMBER_SUCCESS, strict=True)))
def test_usual_members_read_as_the_generic_loop_reads_them(buf: bytes, success: bool | None) -> None:
    """errorcode's ``from_members`` (a plain members dict: the reader generated for its wire
    Struct, ``success`` compared with the literals) gives the per-member loop's Struct, or
    ``None`` where that gives none."""
    decoder = errorcode.READING.decoder
    assert isinstance(decoder, WireDecoder)
    members = top_members(buf)
    got = decoder.from_members(members)
    assert got == WireDecoder.from_members(decoder, _Loop(members))
    assert (None if got is None else got.success) is success
