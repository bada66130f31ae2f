"""result (ADR-003 Result): goldens plus ``to_json()`` key order, values of every JSON type, nullable fields."""

from __future__ import annotations

import msgspec
import pytest

import envglot
from envglot import Envelope, Kind, Problem
from golden import cases

from .golden_suite import GoldenSuite

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

    def test_a_failure_payload_has_no_place_and_is_reported(self) -> None:
        case = next(c for c in cases("errorcode") if c.stem == "thread-partial-failure")
        conv = envglot.conversion(case.data, to="result", unsupported="ignore")
        doc = msgspec.json.decode(conv.output)
        assert "value" not in doc and "error_data" not in doc
        assert (Kind.FIELD_DROPPED, "$.data") in [(d.kind, d.path) for d in conv.diagnostics]

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
