"""result (ADR-003 Result): goldens plus ``to_json()`` key order, values of every JSON type, nullable fields."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import strategies as st

import envglot
from dialects.golden_suite import GoldenSuite
from envelopes import code_of, json_values, objects, record, some_objects, text
from envglot import Envelope, Kind, Problem
from golden import cases

DERIVED = {"$.error_data": ("$.value",)}
"""A failure's ``error_data`` (besides its ``details``) is the payload, whose ``[fields]`` path is the
success slot ``$.value`` (``test_matrix``: a target that drops a failure's payload says so there)."""
OK_ORDER = ["success", "value", "message", "arguments", "instruction", "disposition", "additional_agent_instructions"]
FAILURE_ORDER = [
    "success",
    "error",
    "error_type",
    "error_data",
    "exception_type",
    "exception_message",
    "message",
    "arguments",
    "instruction",
    "disposition",
    "additional_agent_instructions",
]
_EVERYTHING = {
    "summary": "m",
    "arguments": msgspec.Raw(b'{"a":1}'),
    "instruction": "i",
    "disposition": "user/information",
    "additional_instructions": "x",
}


# -- valid envelopes for the shared property tests (tests/envelopes.py finds ``envelopes`` by convention) --

_RESULT_TAIL = {
    "message": text,
    "arguments": objects,
    "instruction": text,
    "disposition": text,
    "additional_agent_instructions": text,
}
_RESULT_FIELDS = frozenset({"value", "error", "error_type", "error_data", "exception_type", "exception_message"})
envelopes = record(
    {"success": True}, {"value": json_values.filter(lambda v: v is not None), **_RESULT_TAIL}, known=_RESULT_FIELDS
) | record(
    {"success": False, "error": st.none() | text, "error_type": st.none() | code_of("result")},
    {"error_data": some_objects, "exception_type": text, "exception_message": text, **_RESULT_TAIL},
    known=_RESULT_FIELDS,
)
"""Valid documents of this dialect, including a newer emitter's unknown keys (``test_properties``)."""


class TestResult(GoldenSuite):
    dialect = "result"
    native = frozenset(c.stem for c in cases("result"))  # json.dumps defaults, ASCII: every case

    def test_success_keys_in_to_json_order(self) -> None:
        out = envglot.write(Envelope(ok=True, payload=msgspec.Raw(b"[1]"), **_EVERYTHING), "result")
        assert list(msgspec.json.decode(out)) == OK_ORDER

    def test_failure_keys_in_to_json_order(self) -> None:
        problem = Problem(
            category="not_found",
            code="not_found",
            domain="result",
            message="gone",
            details=msgspec.Raw(b'{"k":1}'),
            exception_type="KeyError",
            exception_message="'k'",
        )
        out = envglot.write(Envelope(ok=False, problems=(problem,), **_EVERYTHING), "result")
        assert list(msgspec.json.decode(out)) == FAILURE_ORDER

    @pytest.mark.parametrize(
        "value",
        [
            b'["a", "b"]',
            b'"text with \\"quotes\\", \\\\ and \\u00e9 \\ud83d\\ude00"',
            b'{"nested": {"list": [1, 2.5, null, true]}}',
            b"true",
            b"false",
            b"0",
            b"-12",
            b"3.25",
            b"1e+300",
            b'""',
            b"[]",
            b"{}",
        ],
    )
    def test_a_value_of_every_json_type_round_trips_byte_for_byte(self, value: bytes) -> None:
        doc = b'{"success": true, "value": ' + value + b"}"
        assert envglot.read(doc).payload == msgspec.Raw(value)
        assert envglot.convert(doc, to="result", style="native") == doc

    def test_a_failure_carries_no_value(self) -> None:
        with pytest.raises(envglot.ParseError) as exc:
            envglot.read(b'{"success": false, "error": "x", "error_type": "unknown", "value": 1}')
        assert exc.value.path == "$.value"

    def test_a_success_carries_no_error(self) -> None:
        with pytest.raises(envglot.ParseError) as exc:
            envglot.read(b'{"success": true, "error": "x"}', from_="result")
        assert exc.value.path == "$.error"

    def test_a_failure_payload_travels_in_error_data(self) -> None:
        """Class 4: a partial thread failure keeps its posted tweet ids (taxonomy: they must survive)."""
        doc = (
            b'{"success":false,"data":{"posted_tweet_ids":["1901","1902"],"failed_at_index":2},'
            b'"error":{"code":"thread_partial_failure","message":"Tweet 3 failed","retryable":true}}'
        )
        conv = envglot.conversion(doc, from_="errorcode", to="result", unsupported="ignore")
        out = msgspec.json.decode(conv.output)
        # the payload's keys, then the error's details carrying the retryable partial_failure's row does not state
        assert out["error_data"] == {
            "posted_tweet_ids": ["1901", "1902"],
            "failed_at_index": 2,
            "details": {"retryable": True},
        }
        assert "value" not in out
        assert not [d for d in conv.diagnostics if d.path.startswith("$.data")]
        back = envglot.convert(conv.output, from_="result", to="errorcode", unsupported="ignore")
        assert msgspec.json.decode(back)["data"] == msgspec.json.decode(doc)["data"]

    def test_error_data_splits_into_payload_and_details(self) -> None:
        """``details`` in error_data is the error's details; every other key is the failure's payload."""
        doc = (
            b'{"success": false, "error": "bad", "error_type": "validation_error", '
            b'"error_data": {"validation_errors": [{"field": "name", "message": "required"}], "details": {"n": 1}}}'
        )
        env = envglot.read(doc, from_="result")
        assert msgspec.json.decode(env.payload) == {"validation_errors": [{"field": "name", "message": "required"}]}
        assert msgspec.json.decode(env.problems[0].details) == {"n": 1}
        out = envglot.convert(doc, from_="result", to="result", unsupported="raise")
        assert msgspec.json.decode(out) == msgspec.json.decode(doc)

    def test_details_and_payload_share_error_data_and_a_collision_is_reported(self) -> None:
        env = Envelope(
            ok=False,
            payload=msgspec.Raw(b'{"details":"payload own","kept":1}'),
            problems=(Problem(category="internal", message="boom", details=msgspec.Raw(b'{"why":"x"}')),),
        )
        report = envglot.Report("ignore")
        out = envglot.write(env, "result", report=report)
        assert msgspec.json.decode(out)["error_data"] == {"kept": 1, "details": {"why": "x"}}
        assert [d.kind for d in report if d.path == "$.payload.details"] == [Kind.VALUE_COERCED]

    def test_an_empty_error_data_is_never_written(self) -> None:
        """Class 2: Result.to_json() emits error_data only when truthy; an empty payload adds nothing."""
        doc = (
            b'{"success":false,"data":{"tool":"t","version":"1.0","requestId":"abc","generatedAt":'
            b'"2026-01-10T12:00:00.000Z","workspace":{"root":"/r","repoName":"r"},"result":{"error":'
            b'{"code":"INVALID_INPUT","message":"bad"}},"meta":{"approxTokens":0,"truncated":false,"limits":{}}}}'
        )
        env = envglot.read(doc, from_="code-graph")
        for payload in (None, b"{}", b"null"):
            e = msgspec.structs.replace(env, payload=None if payload is None else msgspec.Raw(payload))
            assert "error_data" not in msgspec.json.decode(envglot.write(e, "result", unsupported="ignore"))
        assert envglot.validate(b'{"success": false, "error": "x", "error_type": "t", "error_data": {}}', "result")

    def test_empty_details_are_carried_not_dropped(self) -> None:
        """code-graph's emitter sends ``details: {}``; written as error_data {"details": {}}, read back the same."""
        doc = (
            b'{"success":false,"data":{"tool":"t","version":"1.0","requestId":"abc","generatedAt":'
            b'"2026-01-10T12:00:00.000Z","workspace":{"root":"/r","repoName":"r"},"result":{"error":'
            b'{"code":"INVALID_INPUT","message":"bad","details":{}}},"meta":{"approxTokens":0,"truncated":false,'
            b'"limits":{}}}}'
        )
        out = envglot.convert(doc, from_="code-graph", to="result", unsupported="ignore")
        assert msgspec.json.decode(out)["error_data"] == {"details": {}}
        assert envglot.validate(out, "result") == []
        assert envglot.read(out, from_="result").problems[0].details == msgspec.Raw(b"{}")

    def test_null_error_and_error_type_stay_null(self) -> None:
        doc = b'{"success": false, "error": null, "error_type": null}'
        conv = envglot.conversion(doc, to="result", unsupported="raise")
        assert conv.output == b'{"success":false,"error":null,"error_type":null}'
        assert conv.diagnostics == []

    def test_a_missing_message_is_synthesized_where_the_target_needs_one(self) -> None:
        conv = envglot.conversion(b'{"success": false, "error": null, "error_type": "not_found"}', to="errorcode")
        assert msgspec.json.decode(conv.output)["error"]["message"] == ""
        assert (Kind.SYNTHESIZED, "$.error.message") in [(d.kind, d.path) for d in conv.diagnostics]

    def test_an_unknown_error_type_is_an_open_word_kept_verbatim(self) -> None:
        case = next(c for c in cases("result") if c.stem == "failure-unknown-type")
        conv = envglot.conversion(case.data, to="result", unsupported="raise")
        assert msgspec.json.decode(conv.output)["error_type"] == "index_locked"
        assert [(d.kind, d.path) for d in conv.diagnostics] == [(Kind.CODE_UNKNOWN, "$.error_type")]

    def test_summary_travels_as_message(self) -> None:
        case = next(c for c in cases("dotbot") if c.stem == "spec-1-structure-ok")
        doc = msgspec.json.decode(envglot.convert(case.data, to="result", unsupported="ignore"))
        assert doc["message"] == "Found 12 projects in Axiome solution."
