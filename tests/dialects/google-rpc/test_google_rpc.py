"""google-rpc (AIP-193): goldens, the status table, ErrorInfo/RetryInfo/other details, successes
as the resource itself (read with ``from_``), detection of failures only, the contract."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

import envglot
from dialects.golden_suite import GoldenSuite
from envglot import Kind
from envglot.dialects.google_rpc import ERROR_INFO, RETRY_INFO, VALUE, duration, duration_ms
from envglot.mappings import default_mappings

NAME = "google-rpc"
ROOT = Path(__file__).resolve().parents[3]
M = default_mappings()
DERIVED = {"$.error.code": ("$.error.status", "$.error.details"), "$.error.status": ("$.error.details",)}
"""The HTTP ``code`` follows the status, the status the category (a code in ErrorInfo: ``details``)."""
CODES = (
    "CANCELLED UNKNOWN INVALID_ARGUMENT DEADLINE_EXCEEDED NOT_FOUND ALREADY_EXISTS PERMISSION_DENIED "
    "RESOURCE_EXHAUSTED FAILED_PRECONDITION ABORTED OUT_OF_RANGE UNIMPLEMENTED INTERNAL UNAVAILABLE "
    "DATA_LOSS UNAUTHENTICATED"
).split()
"""google.rpc.Code's 16 non-OK names (googleapis google/rpc/code.proto)."""


def _failure(status: str, code: int, *details: dict) -> bytes:
    err: dict = {"code": code, "message": "m", "status": status}
    if details:
        err["details"] = list(details)
    return msgspec.json.encode({"error": err})


class TestGoogleRpc(GoldenSuite):
    dialect = NAME
    native = frozenset(
        {
            "bad-request-field-violations",
            "internal-debug-info",
            "not-found-bare",
            "quota-exceeded-retry",
            "resource-ok",
            "service-disabled-localized",
            "unavailable-fractional-delay",
        }
    )

    # -- the table ----------------------------------------------------------------------

    def test_every_google_rpc_code_reads_its_own_category(self) -> None:
        assert list(M[NAME].codes) == CODES
        for status in CODES:
            category = status.lower()
            doc = _failure(status, M.http(category))
            p = envglot.read(doc).problems[0]
            assert (p.category, p.code, p.domain) == (category, status, NAME)
            assert envglot.convert(doc, to=NAME) == doc

    @pytest.mark.parametrize(("status", "category"), [("EDIT_CONFLICT", "already_exists"), (None, "already_exists")])
    def test_a_status_no_table_knows_is_read_by_the_http_code(self, status: str | None, category: str) -> None:
        err: dict = {"code": 409, "message": "m"} | ({"status": status} if status else {})
        doc = msgspec.json.encode({"error": err})
        conv = envglot.conversion(doc, from_=NAME, to=NAME)
        p = envglot.read(doc, from_=NAME).problems[0]
        assert (p.category, p.code) == (category, None)
        if status:  # kept as stated for google-rpc, reported as no google.rpc.Code name
            assert conv.output == doc
            assert (Kind.CODE_UNKNOWN, "$.error.status") in [(d.kind, d.path) for d in conv.diagnostics]
            assert [v.path for v in envglot.validate(doc, NAME)] == ["$.error.status"]
        else:  # written with the status of its category
            assert msgspec.json.decode(conv.output)["error"]["status"] == "ALREADY_EXISTS"

    def test_a_foreign_code_is_written_by_its_category_and_reported(self) -> None:
        doc = b'{"success":false,"data":null,"error":{"code":"x_rate_limited","message":"slow","retryable":true}}'
        conv = envglot.conversion(doc, to=NAME)
        err = msgspec.json.decode(conv.output)["error"]
        assert (err["code"], err["status"], "details" in err) == (429, "RESOURCE_EXHAUSTED", False)
        said = {d.kind for d in conv.diagnostics if d.path == "$.error.code"}
        assert said & {Kind.CODE_MAPPED, Kind.CODE_RESPELLED}, [str(d) for d in conv.diagnostics]

    # -- details ---------------------------------------------------------------------------

    def test_error_info_reason_is_the_code_and_its_domain_and_metadata_are_reported_elsewhere(self) -> None:
        info = {"@type": ERROR_INFO, "reason": "API_DISABLED", "domain": "googleapis.com", "metadata": {"a": "b"}}
        doc = _failure("PERMISSION_DENIED", 403, info)
        p = envglot.read(doc).problems[0]
        assert (p.category, p.code, p.details) == ("permission_denied", "API_DISABLED", None)
        assert envglot.convert(doc, to=NAME) == doc
        conv = envglot.conversion(doc, to="response-v2", unsupported="ignore")
        dropped = {d.path for d in conv.diagnostics if d.kind is Kind.FIELD_DROPPED}
        assert {"$.error.details[0].domain", "$.error.details[0].metadata"} <= dropped

    def test_an_error_info_naming_the_status_stays_a_detail(self) -> None:
        info = {"@type": ERROR_INFO, "reason": "NOT_FOUND", "domain": "d"}
        doc = _failure("NOT_FOUND", 404, info)
        p = envglot.read(doc).problems[0]
        assert p.code == "NOT_FOUND" and msgspec.json.decode(p.details) == [info]
        assert envglot.convert(doc, to=NAME) == doc

    @pytest.mark.parametrize(
        ("text", "ms"),
        [("30s", 30000), ("1.5s", 1500), ("0.001s", 1), ("0s", 0), ("2.000000000s", 2000), ("0.0005s", None),
         ("-1s", None), ("1.5", None), ("01s", None), ("1.s", None)],
    )  # fmt: skip
    def test_retry_delay_durations(self, text: str, ms: int | None) -> None:
        assert duration_ms(text) == ms
        if ms is not None:
            assert duration_ms(duration(ms)) == ms

    def test_retry_info_is_the_retry_delay_and_its_spelling_comes_back(self) -> None:
        doc = _failure("UNAVAILABLE", 503, {"@type": RETRY_INFO, "retryDelay": "2.5s"})
        assert envglot.read(doc).problems[0].retry_after_ms == 2500
        assert envglot.convert(doc, to=NAME) == doc
        out = envglot.convert(doc, to="errorcode", unsupported="ignore")
        assert msgspec.json.decode(out)["error"]["retry_after_ms"] == 2500
        back = msgspec.json.decode(envglot.convert(out, to=NAME, unsupported="ignore"))
        assert {"@type": RETRY_INFO, "retryDelay": "2.500s"} in back["error"]["details"]

    def test_a_sub_millisecond_retry_delay_stays_a_detail(self) -> None:
        retry = {"@type": RETRY_INFO, "retryDelay": "0.0005s"}
        p = envglot.read(_failure("UNAVAILABLE", 503, retry)).problems[0]
        assert p.retry_after_ms is None and msgspec.json.decode(p.details) == [retry]

    def test_another_dialects_details_travel_in_one_value_entry(self) -> None:
        doc = ROOT.joinpath("examples", "response-v2", "validation-error.json").read_bytes()
        details = msgspec.json.decode(doc)["data"]["details"]
        out = envglot.convert(doc, to=NAME, unsupported="ignore")
        assert msgspec.json.decode(out)["error"]["details"] == [{"@type": VALUE, "value": details}]
        assert msgspec.json.decode(envglot.read(out).problems[0].details) == details

    def test_details_holding_a_number_beyond_a_double_are_dropped_and_reported(self) -> None:
        doc = b'{"type":"about:blank","status":400,"title":"Bad","details":{"n":-1e400}}'
        conv = envglot.conversion(doc, to=NAME, unsupported="ignore")
        assert "details" not in msgspec.json.decode(conv.output)["error"]
        assert (Kind.FIELD_DROPPED, "$.details") in [(d.kind, d.path) for d in conv.diagnostics]

    # -- outcome and detection -------------------------------------------------------------

    def test_a_success_is_the_resource_and_needs_from(self) -> None:
        book = b'{"name":"shelves/1/books/2","error":{"code":3}}'  # an error member beside others: a resource
        env = envglot.read(book, from_=NAME)
        assert env.ok and bytes(env.payload or b"") == book
        assert envglot.detect(book) != NAME
        assert envglot.convert(envglot.convert(book, from_=NAME, to="dotbot"), to=NAME) == book

    def test_a_resource_that_would_read_as_a_failure_is_wrapped(self) -> None:
        doc = b'{"success":true,"data":{"error":{"code":400}},"error":null,"meta":{"version":"response-v2"}}'
        conv = envglot.conversion(doc, to=NAME, unsupported="ignore")
        assert msgspec.json.decode(conv.output) == {"value": {"error": {"code": 400}}}
        assert (Kind.PAYLOAD_WRAPPED, "$.data") in [(d.kind, d.path) for d in conv.diagnostics]
        assert envglot.read(conv.output, from_=NAME).ok

    @pytest.mark.parametrize(
        "payload",
        [b'{"error":"boom"}', b'{"success":false,"value":1}', b'{"content":[],"isError":true}'],
        ids=["legacy-v1 failure", "result failure", "CallToolResult"],
    )
    def test_a_resource_another_dialect_reads_as_a_failure_is_wrapped(self, payload: bytes) -> None:
        """A forced source's success yields to another dialect's failure markers (the failure
        wins), and a transport wrapper is unwrapped: written bare, such a resource would not come back."""
        out = envglot.write(envglot.Envelope(ok=True, payload=msgspec.Raw(payload)), to=NAME, unsupported="ignore")
        assert out == b'{"value":' + payload + b"}"
        env = envglot.read(out, from_=NAME)
        assert env.ok and bytes(env.payload or b"") == payload

    def test_a_resource_repeating_error_is_wrapped(self) -> None:
        """A payload that repeats ``error`` at its top would be a document a parser reads either way."""
        payload = b'{"error":"x","error":{"code":500},"data":1}'
        out = envglot.write(envglot.Envelope(ok=True, payload=msgspec.Raw(payload)), to=NAME, unsupported="ignore")
        assert out == b'{"value":' + payload + b"}"
        assert bytes(envglot.read(out, from_=NAME).payload or b"") == payload
        assert envglot.validate(out, NAME) == []

    @pytest.mark.parametrize(
        ("doc", "dialect"),
        [
            (b'{"error":{"code":404,"message":"x","status":"NOT_FOUND"}}', NAME),
            (b'{"error":{"code":404}}', NAME),
            (b'{"error":{"code":"404"}}', "legacy-v1"),  # not an integer code
            (b'{"error":{"code":404},"name":"x"}', "legacy-v1"),  # a resource with an error member
            (b'{"error":"not found"}', "legacy-v1"),  # a flat dict's error string
            (b'{"success":false,"error":{"code":"not_found","message":"x"}}', "errorcode"),
        ],
    )
    def test_detection_and_its_near_misses(self, doc: bytes, dialect: str) -> None:
        assert envglot.detect(doc) == dialect

    # -- contract -----------------------------------------------------------------------------

    @pytest.mark.parametrize(
        ("doc", "path"),
        [
            (b'{"error":{"code":404,"message":"x","status":"GONE"}}', "$.error.status"),
            (b'{"error":{"code":400,"message":"x","status":"NOT_FOUND"}}', "$.error.code"),
            (b'{"error":{"code":404,"status":"NOT_FOUND","details":[{"reason":"X"}]}}', "$.error.details[0]"),
            (
                _failure("UNAVAILABLE", 503, {"@type": RETRY_INFO, "retryDelay": "soon"}),
                "$.error.details[0].retryDelay",
            ),
        ],
    )  # fmt: skip
    def test_the_contract(self, doc: bytes, path: str) -> None:
        assert path in [v.path for v in envglot.validate(doc, NAME)]

    def test_a_success_has_no_contract(self) -> None:
        assert envglot.validate(b'{"anything":[1,2]}', NAME) == []
