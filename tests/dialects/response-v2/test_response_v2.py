"""response-v2 (foundry-mcp): goldens plus the contract every written document meets."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import strategies as st

import envglot
from dialects.golden_suite import GoldenSuite
from envelopes import code_of, counts, objects, record, some_objects, text
from envglot import Kind
from envglot.mappings import default_mappings
from golden import cases

DERIVED = {"$.data.error_type": ("$.data.error_code",)}
"""Wire fields the writer derives from others (``test_matrix``: a change is explained by a base's diagnostic)."""


def _case(stem: str):
    return next(c for c in cases("response-v2") if c.stem == stem)


# -- valid envelopes for the shared property tests (tests/envelopes.py finds ``envelopes`` by convention) --


def _v2_failure(payload: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if k not in fields} | fields


_v2_meta = record(
    {"version": "response-v2"},
    {
        "request_id": text,
        "warnings": st.lists(text, min_size=1, max_size=2),
        "warning_details": st.lists(
            record({"message": text}, {"code": text, "severity": text, "context": objects}, extra=False),
            min_size=1,
            max_size=2,
        ),
        "pagination": record(
            {}, {"cursor": text, "has_more": st.booleans(), "page_size": counts, "total_count": counts}, extra=False
        ),
        "rate_limit": objects,
        "telemetry": st.builds(lambda d, t: {"duration_ms": d, **t}, st.floats(0, 10**6), objects),
        "content_fidelity": st.sampled_from(["full", "partial", "summary", "reference_only"]),
        "dropped_content_ids": st.lists(text, max_size=2),
    },
)
envelopes = record({"success": True, "data": objects, "error": None, "meta": _v2_meta}, extra=False) | record(
    {
        "success": False,
        "data": st.builds(
            _v2_failure,
            objects,
            record(
                {},
                {
                    "error_code": code_of("response-v2"),
                    "error_type": st.sampled_from(sorted(default_mappings()["response-v2"].types)) | text,
                    "remediation": text,
                    "details": some_objects,
                    "retry_after_seconds": st.integers(0, 3600),
                },
                extra=False,
            ),
        ),
        "error": text.filter(bool),
        "meta": _v2_meta,
    },
    extra=False,
)
"""Valid documents of this dialect, including a newer emitter's unknown keys (``test_properties``)."""


class TestResponseV2(GoldenSuite):
    dialect = "response-v2"
    native = frozenset(
        {
            "empty-success",
            "feature-disabled",
            "real-meta-extras",
            "real-pagination-telemetry",
            "real-raw-type-io",
            "real-spec-not-found",
            "real-unknown-code",
            "unknown-code-and-type",
            "value-wrapped-string",
        }
    )

    @pytest.mark.parametrize("source", cases(), ids=str)
    def test_the_contract_of_every_written_document(self, source) -> None:
        env = envglot.read(source.data, from_=source.dialect)
        out = envglot.convert(source.data, from_=source.dialect, to="response-v2", unsupported="ignore")
        doc = msgspec.json.decode(out)
        assert list(doc) == ["success", "data", "error", "meta"]
        assert next(iter(doc["meta"])) == "version"
        assert doc["meta"]["version"] == "response-v2"
        assert doc["success"] is env.ok
        assert isinstance(doc["data"], dict)
        if env.ok:
            assert doc["error"] is None
        else:
            assert isinstance(doc["error"], str) and doc["error"]
            assert isinstance(doc["data"]["error_code"], str)
            assert isinstance(doc["data"]["error_type"], str)
        assert envglot.detect(out) == "response-v2"

    @pytest.mark.parametrize("value", [b"[1,2]", b'"text"', b"0", b"2.5", b"true", b"[]", b'[{"a":null}]'])
    def test_a_non_object_payload_is_wrapped_and_unwrapped(self, value: bytes) -> None:
        conv = envglot.conversion(b'{"success":true,"value":' + value + b"}", to="response-v2", unsupported="ignore")
        assert msgspec.json.decode(conv.output)["data"] == {"value": msgspec.json.decode(value)}
        assert (Kind.PAYLOAD_WRAPPED, "$.value") in [(d.kind, d.path) for d in conv.diagnostics]
        back = envglot.conversion(conv.output, to="result", unsupported="ignore")
        assert msgspec.json.decode(back.output)["value"] == msgspec.json.decode(value)
        assert (Kind.PAYLOAD_UNWRAPPED, "$.data") in [(d.kind, d.path) for d in back.diagnostics]

    def test_an_object_with_more_than_value_is_not_unwrapped(self) -> None:
        doc = b'{"success":true,"data":{"value":[1],"n":2},"error":null,"meta":{"version":"response-v2"}}'
        assert envglot.read(doc).payload == msgspec.Raw(b'{"value":[1],"n":2}')
        inner_object = b'{"success":true,"data":{"value":{"n":2}},"error":null,"meta":{"version":"response-v2"}}'
        assert envglot.read(inner_object).payload == msgspec.Raw(b'{"value":{"n":2}}')

    def test_telemetry_keeps_a_float_duration_and_other_metrics(self) -> None:
        case = _case("real-pagination-telemetry")
        env = envglot.read(case.data)
        assert env.duration_ms == 12.47
        assert msgspec.json.decode(env.telemetry) == {"backend_calls": 3}
        meta = msgspec.json.decode(envglot.convert(case.data, to="response-v2"))["meta"]
        assert meta["telemetry"] == {"duration_ms": 12.47, "backend_calls": 3}

    def test_retry_after_seconds_travels_as_milliseconds(self) -> None:
        case = _case("real-rate-limited")
        assert envglot.read(case.data).problems[0].retry_after_ms == 45000
        ec = msgspec.json.decode(envglot.convert(case.data, to="errorcode", unsupported="ignore"))
        assert ec["error"]["retry_after_ms"] == 45000
        back = msgspec.json.decode(
            envglot.convert(envglot.convert(case.data, to="errorcode", unsupported="ignore"), to="response-v2")
        )
        assert back["data"]["retry_after_seconds"] == 45

    @pytest.mark.parametrize(
        ("stem", "code", "error_type"),
        [
            ("real-raw-type-io", "OPERATION_FAILED", "io"),
            ("real-unknown-code", "SSRF_REJECTED", "forbidden"),
            ("unknown-code-and-type", "TOTALLY_NEW", "mystery"),
            ("feature-disabled", "FEATURE_DISABLED", "feature_flag"),
        ],
    )
    def test_raw_codes_and_types_go_back_verbatim(self, stem: str, code: str, error_type: str) -> None:
        data = msgspec.json.decode(envglot.convert(_case(stem).data, to="response-v2", unsupported="ignore"))["data"]
        assert (data["error_code"], data["error_type"]) == (code, error_type)

    def test_an_error_type_the_target_cannot_restore_is_reported(self) -> None:
        conv = envglot.conversion(_case("real-raw-type-io").data, to="dotbot", unsupported="ignore")
        assert (Kind.FIELD_DROPPED, "$.data.error_type") in [(d.kind, d.path) for d in conv.diagnostics]
        implied = envglot.conversion(_case("real-spec-not-found").data, to="dotbot", unsupported="ignore")
        assert "$.data.error_type" not in [d.path for d in implied.diagnostics]  # the code restores it

    def test_meta_extras_stay_in_response_v2_and_are_reported_elsewhere(self) -> None:
        case = _case("real-meta-extras")
        meta = msgspec.json.decode(envglot.convert(case.data, to="response-v2"))["meta"]
        assert meta["trace_id"] == "4bf92f3577b34da6"
        assert meta["autonomy"] == {"session_id": "sess_01", "step": 4}
        conv = envglot.conversion(case.data, to="errorcode", unsupported="ignore")
        dropped = {d.path for d in conv.diagnostics if d.kind is Kind.FIELD_DROPPED}
        assert {"$.meta.trace_id", "$.meta.autonomy"} <= dropped

    def test_warning_details_keep_code_severity_and_context(self) -> None:
        case = _case("spec-warning-details")
        env = envglot.read(case.data)
        assert [(w.code, w.severity) for w in env.warnings] == [
            ("PARTIAL_FAILURE", "warning"),
            ("STALE_CACHE", "warning"),
        ]
        dotbot = msgspec.json.decode(envglot.convert(case.data, to="dotbot", unsupported="ignore"))
        assert [w["code"] for w in dotbot["warnings"]] == ["PARTIAL_FAILURE", "STALE_CACHE"]
        conv = envglot.conversion(case.data, to="result", unsupported="ignore")
        paths = {d.path for d in conv.diagnostics if d.kind is Kind.FIELD_DROPPED}
        assert {"$.meta.warnings", "$.meta.warning_details[0].code", "$.meta.warning_details[1].context"} <= paths

    @pytest.mark.parametrize(
        ("doc", "path"),
        [
            (b'{"success":true,"data":{},"error":"x","meta":{"version":"response-v2"}}', "$.error"),
            (b'{"success":false,"data":{},"error":null,"meta":{"version":"response-v2"}}', "$.error"),
            (b'{"success":false,"data":{},"error":"","meta":{"version":"response-v2"}}', "$.error"),
            (b'{"success":true,"data":[1],"error":null,"meta":{"version":"response-v2"}}', "$.data"),
            (b'{"success":true,"data":{},"error":null,"meta":{"version":"response-v1"}}', "$.meta.version"),
            (
                b'{"success":true,"data":{},"error":null,"meta":{"version":"response-v2","warnings":[1]}}',
                "$.meta.warnings[0]",
            ),
        ],
    )
    def test_contract_violations_are_parse_errors(self, doc: bytes, path: str) -> None:
        with pytest.raises(envglot.ParseError) as exc:
            envglot.read(doc, from_="response-v2")
        assert exc.value.path == path

    def test_error_codes_in_meta_are_read_when_data_has_none(self) -> None:
        """Class 5: foundry golden fixtures put error_code/error_type/remediation in meta."""
        doc = (
            b'{"success":false,"data":{"spec_id":"auth-rework"},"error":"Spec not found: auth-rework",'
            b'"meta":{"version":"response-v2","error_code":"SPEC_NOT_FOUND","error_type":"not_found",'
            b'"remediation":"Run spec-list to see the available specs"}}'
        )
        report = envglot.Report("ignore")
        env = envglot.read(doc, from_="response-v2", report=report)
        p = env.problems[0]
        assert (p.category, p.code, p.type) == ("not_found", "SPEC_NOT_FOUND", "not_found")
        assert p.remediation == "Run spec-list to see the available specs"
        assert env.extras == ()
        assert msgspec.json.decode(env.payload) == {"spec_id": "auth-rework"}
        assert sorted((d.kind, d.path) for d in report) == [
            (Kind.FIELD_RELOCATED, "$.meta.error_code"),
            (Kind.FIELD_RELOCATED, "$.meta.error_type"),
            (Kind.FIELD_RELOCATED, "$.meta.remediation"),
        ]
        errorcode = msgspec.json.decode(envglot.convert(doc, from_="response-v2", to="errorcode", unsupported="ignore"))
        assert errorcode["error"]["code"] == "not_found" and errorcode["error"]["retryable"] is False
        back = msgspec.json.decode(envglot.convert(doc, from_="response-v2", to="response-v2", unsupported="ignore"))
        assert back["data"] == {
            "spec_id": "auth-rework",
            "error_code": "SPEC_NOT_FOUND",
            "error_type": "not_found",
            "remediation": "Run spec-list to see the available specs",
        }
        assert back["meta"] == {"version": "response-v2"}

    def test_error_codes_in_data_win_over_meta(self) -> None:
        doc = (
            b'{"success":false,"data":{"error_code":"CONFLICT","error_type":"conflict"},"error":"x",'
            b'"meta":{"version":"response-v2","error_code":"NOT_FOUND"}}'
        )
        env = envglot.read(doc, from_="response-v2", report=envglot.Report("ignore"))
        assert env.problems[0].code == "CONFLICT"
        assert [e.path for e in env.extras] == ["$.meta.error_code"]

    @pytest.mark.parametrize(
        ("fields", "details", "written"),
        [
            ({"details": None}, None, {}),
            ({"details": {"field": "spec_id"}}, {"field": "spec_id"}, {"details": {"field": "spec_id"}}),
            ({"details": {}}, {}, {"details": {}}),
            ({}, None, {}),
            ({"details": None, "remediation": None, "retry_after_seconds": None}, None, {}),
            ({"details": None, "remediation": "retry"}, None, {"remediation": "retry"}),
        ],
    )
    def test_null_error_fields_are_absent(self, fields: dict, details: Any, written: dict) -> None:
        data = {"spec_id": "s", "error_code": "VALIDATION_ERROR", "error_type": "validation", **fields}
        doc = msgspec.json.encode({"success": False, "data": data, "error": "bad", "meta": {"version": "response-v2"}})
        # The spec makes details an object: null breaks the contract (issue 25), yet reads as absent.
        null_details = "details" in fields and fields["details"] is None
        assert [v.path for v in envglot.validate(doc)] == (["$.data.details"] if null_details else [])
        report = envglot.Report("ignore")
        p = envglot.read(doc, report=report).problems[0]
        assert (None if p.details is None else msgspec.json.decode(p.details)) == details
        assert list(report) == []
        back = envglot.conversion(doc, to="response-v2", unsupported="ignore")
        expected = {"spec_id": "s", "error_code": "VALIDATION_ERROR", "error_type": "validation", **written}
        assert msgspec.json.decode(back.output)["data"] == expected
        assert back.diagnostics == []
        for target in ("dotbot", "code-graph", "problem-json", "result"):
            assert b'"details":null' not in envglot.convert(doc, to=target, unsupported="ignore")
        errorcode = envglot.conversion(doc, to="errorcode", unsupported="ignore")  # no place for details
        assert ("$.data.details" in [d.path for d in errorcode.diagnostics]) is (details is not None)

    @pytest.mark.parametrize(
        ("telemetry", "duration_ms", "written", "wrapped"),
        [
            (b"[1]", 5, {"duration_ms": 5, "value": [1]}, True),
            (b'"fast"', 2.5, {"duration_ms": 2.5, "value": "fast"}, True),
            (b"3", None, {"value": 3}, True),
            (b"null", 5, {"duration_ms": 5}, False),
            (b"null", None, None, False),
            (b'{"calls":2}', 5, {"duration_ms": 5, "calls": 2}, False),
            (b'{"duration_ms":1,"calls":2}', 5, {"duration_ms": 5, "calls": 2}, False),
            (None, 5, {"duration_ms": 5}, False),
        ],
    )
    def test_telemetry_is_written_as_an_object(
        self, telemetry: bytes | None, duration_ms: float | None, written: Any, wrapped: bool
    ) -> None:
        env = envglot.Envelope(
            ok=True, duration_ms=duration_ms, telemetry=None if telemetry is None else msgspec.Raw(telemetry)
        )
        report = envglot.Report("ignore")
        out = envglot.write(env, "response-v2", report=report)
        assert msgspec.json.decode(out)["meta"]["telemetry"] == written
        assert [(d.kind, d.path) for d in report] == ([(Kind.PAYLOAD_WRAPPED, "$.telemetry")] if wrapped else [])
        assert envglot.validate(out) == []

    def test_a_non_object_telemetry_read_as_it_is_is_written_wrapped(self) -> None:
        doc = b'{"success":true,"data":{},"error":null,"meta":{"version":"response-v2","telemetry":[1]}}'
        assert [v.path for v in envglot.validate(doc)] == ["$.meta.telemetry"]
        conv = envglot.conversion(doc, to="response-v2", unsupported="ignore")
        assert msgspec.json.decode(conv.output)["meta"]["telemetry"] == {"value": [1]}
        assert [(d.kind, d.path) for d in conv.diagnostics] == [(Kind.PAYLOAD_WRAPPED, "$.meta.telemetry")]
