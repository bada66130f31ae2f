"""problem-json (RFC 9457): goldens, the status and category tables, successes as status-200
documents, conversions to and from every other writable dialect, preserve round trips, detection
and its near misses."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import envglot
from dialects.golden_suite import GoldenSuite
from envglot import Envelope, Kind, Problem, mcp
from envglot.dialect import get_dialect
from envglot.dialects import WRITABLE
from envglot.mappings import default_mappings
from golden import cases, json_key

NAME = "problem-json"
M = default_mappings()
OTHERS = [d for d in WRITABLE if d != NAME]
DERIVED = {"$.type": ("$.code",), "$.title": ("$.code",), "$.status": ("$.code",)}
"""Wire fields the writer derives from the code (``test_matrix``: a change is explained by a diagnostic
on the code; a status-coded problem's code diagnostics name ``$.code`` too)."""
UPSTREAM = Path(__file__).resolve().parents[3] / ".." / "shared" / "upstream"

# A bare HTTP status (no `code` member) reads as this category: RFC 9110 statuses, google's
# HTTP mapping where several categories share one (400, 409, 500), nginx's 499.
STATUS_READS_AS = {
    400: "invalid_argument",
    401: "unauthenticated",
    403: "permission_denied",
    404: "not_found",
    405: "unimplemented",
    406: "invalid_argument",
    408: "deadline_exceeded",
    409: "aborted",
    410: "not_found",
    412: "failed_precondition",
    413: "invalid_argument",
    415: "invalid_argument",
    416: "out_of_range",
    422: "invalid_argument",
    429: "resource_exhausted",
    499: "cancelled",
    500: "internal",
    501: "unimplemented",
    502: "unknown",
    503: "unavailable",
    504: "deadline_exceeded",
}
# What a problem of each category is written as: google.rpc.Code's HTTP mapping (code.proto).
CATEGORY_STATUS = {
    "cancelled": 499,
    "unknown": 500,
    "invalid_argument": 400,
    "deadline_exceeded": 504,
    "not_found": 404,
    "already_exists": 409,
    "permission_denied": 403,
    "resource_exhausted": 429,
    "failed_precondition": 400,
    "aborted": 409,
    "out_of_range": 400,
    "unimplemented": 501,
    "internal": 500,
    "unavailable": 503,
    "data_loss": 500,
    "unauthenticated": 401,
}


def _doc(out: bytes) -> dict:
    return msgspec.json.decode(out)


def _write(env: Envelope) -> tuple[dict, list[envglot.Diagnostic]]:
    report = envglot.Report("ignore")
    return _doc(envglot.write(env, NAME, report=report)), report.diagnostics


def _ok(case) -> bool:
    return envglot.read(case.data, from_=case.dialect).ok


def _failures(dialect: str | None = None) -> list:
    return [c for c in cases(dialect) if not envglot.read(c.data, from_=c.dialect).ok]


def _upstream_failures() -> list[Path]:
    if not UPSTREAM.is_dir():
        return []
    out = []
    for p in sorted(UPSTREAM.glob("*/*.json")):
        try:
            if not envglot.read(p.read_bytes()).ok:
                out.append(p)
        except envglot.EnvglotError:  # documented contract breaks: test_upstream_conformance covers them
            continue
    return out


class TestProblemJson(GoldenSuite):
    dialect = NAME
    native = frozenset(
        {
            "pj-bad-gateway-with-data",
            "pj-multi-error",
            "pj-rate-limited-gateway",
            "pj-spring-not-found",
            "pj-unknown-code-known-status",
            "pj-validation-pointers",
            "pj-success-ok",
        }
    )

    # -- the tables ----------------------------------------------------------------------

    @pytest.mark.parametrize(("status", "category"), sorted(STATUS_READS_AS.items()))
    def test_a_bare_status_reads_as_its_category_and_writes_back_as_about_blank(
        self, status: int, category: str
    ) -> None:
        doc = msgspec.json.encode({"type": "about:blank", "status": status, "detail": "d"})
        report = envglot.Report("ignore")
        env = envglot.read(doc, report=report)
        assert env.ok is False
        assert (env.problems[0].category, env.problems[0].code) == (category, str(status))
        assert report.diagnostics == []
        out = _doc(envglot.convert(doc, to=NAME))
        assert (out["type"], out["status"], out["detail"]) == ("about:blank", status, "d")
        assert "code" not in out  # the status is the code
        assert out["title"] == M[NAME].codes[str(status)].note  # the RFC 9110 phrase

    def test_an_unknown_status_keeps_its_number_and_is_reported(self) -> None:
        doc = b'{"type":"about:blank","title":"I\'m a Teapot","status":418}'
        report = envglot.Report("ignore")
        env = envglot.read(doc, report=report)
        assert (env.problems[0].category, env.problems[0].code) == (M.unknown_category, "418")
        assert [(d.kind, d.path) for d in report] == [(Kind.CODE_UNKNOWN, "$.status")]
        assert json_key(envglot.convert(doc, to=NAME, unsupported="ignore")) == json_key(doc)

    @pytest.mark.parametrize(("category", "status"), sorted(CATEGORY_STATUS.items()))
    def test_each_category_is_written_with_its_word_type_title_and_status(self, category: str, status: int) -> None:
        doc, diags = _write(Envelope(ok=False, problems=(Problem(category=category, message="m"),)))
        assert doc == {
            "type": f"urn:envglot:problem:{category}",
            "title": M.categories[category].title,
            "status": status,
            "detail": "m",
            "code": category,
        }
        assert [d.kind for d in diags] == [Kind.SYNTHESIZED]  # the code was chosen for the category
        assert envglot.validate(msgspec.json.encode(doc), NAME) == []
        back = envglot.read(msgspec.json.encode(doc))
        assert (back.problems[0].category, back.extras) == (category, ())

    def test_a_source_code_with_an_http_override_keeps_its_status(self) -> None:
        # errorcode x_api_error: category unknown (500), but its row says 502 ("RFC 9457 export only")
        src = b'{"success":false,"data":null,"error":{"code":"x_api_error","message":"boom","retryable":true}}'
        out = _doc(envglot.convert(src, to=NAME, unsupported="ignore"))
        assert (out["status"], out["code"], out["retryable"]) == (502, "unknown", True)
        back = envglot.read(msgspec.json.encode(out))
        assert back.problems[0].category == "unknown"
        assert [ex.path for ex in back.extras] == ["$.status"]  # more than the code says: kept

    def test_an_unknown_code_with_a_known_status_reads_by_the_status(self) -> None:
        case = next(c for c in cases(NAME) if c.stem == "pj-unknown-code-known-status")
        report = envglot.Report("ignore")
        p = envglot.read(case.data, report=report).problems[0]
        assert (p.category, p.code, p.domain) == ("resource_exhausted", "QUOTA_DAILY", NAME)
        assert [(d.kind, d.path) for d in report] == [(Kind.CODE_UNKNOWN, "$.code")]

    def test_the_reverse_table_covers_only_error_statuses_and_known_categories(self) -> None:
        rows = {k: r for k, r in M[NAME].codes.items() if k.isdigit()}
        assert {int(k) for k in rows} == set(STATUS_READS_AS)
        for key, row in rows.items():
            assert row.http == int(key) and row.category in M.categories and row.note, key

    # -- successes: envglot's status-200 convention ------------------------------------

    @pytest.mark.parametrize("source", [c for c in cases() if c.dialect != NAME and _ok(c)], ids=str)
    def test_every_success_is_written_as_a_status_200_document(self, source) -> None:
        src = envglot.read(source.data, from_=source.dialect)
        conv = envglot.conversion(source.data, from_=source.dialect, to=NAME, unsupported="ignore")
        doc = _doc(conv.output)
        assert (doc["type"], doc["title"], doc["status"]) == ("about:blank", "OK", 200)
        assert set(doc) <= {"type", "title", "status", "request_id", "data", "warnings"}
        assert doc.get("data") == (None if src.payload is None else msgspec.json.decode(src.payload))
        assert doc.get("request_id") == src.request_id
        assert doc.get("warnings", []) == [w.message for w in src.warnings]
        assert envglot.detect(conv.output) == NAME
        assert envglot.validate(conv.output, NAME) == []
        assert get_dialect(NAME).failed(conv.output) is False
        back = envglot.read(conv.output)
        assert (back.ok, back.problems, back.extras) == (True, (), ())

    def test_what_a_success_cannot_carry_is_reported(self) -> None:
        case = next(c for c in cases("dotbot") if c.stem == "spec-2-standards-warning")
        conv = envglot.conversion(case.data, from_="dotbot", to=NAME, unsupported="ignore")
        assert _doc(conv.output) == {
            "type": "about:blank",
            "title": "OK",
            "status": 200,
            "data": {"standards": []},
            "warnings": ["Standard file missing YAML frontmatter"],
        }
        dropped = {d.path for d in conv.diagnostics if d.kind is Kind.FIELD_DROPPED}
        want = {"$.summary", "$.tool", "$.warnings[0].code", "$.warnings[0].path", "$.audit.duration_ms"}
        assert want <= dropped
        with pytest.raises(envglot.UnsupportedError):
            envglot.convert(case.data, from_="dotbot", to=NAME, unsupported="raise")

    def test_a_success_with_errors_reports_them(self) -> None:
        env = Envelope(ok=True, problems=(Problem(category="not_found", message="m"),))
        doc, diags = _write(env)
        assert doc == {"type": "about:blank", "title": "OK", "status": 200}
        assert [(d.kind, d.path) for d in diags] == [(Kind.FIELD_DROPPED, "$.problems")]

    @pytest.mark.parametrize("status", [200, 201, 204, 299, 301, 304, 399])
    def test_a_status_below_400_reads_as_a_success(self, status: int) -> None:
        doc = msgspec.json.encode({"type": "about:blank", "title": "T", "status": status, "data": [1]})
        env = envglot.read(doc, from_=NAME)
        assert (env.ok, env.problems, msgspec.json.decode(env.payload)) == (True, (), [1])
        kept = {ex.path for ex in env.extras}
        assert kept == ({"$.title"} if status == 200 else {"$.title", "$.status"})
        assert get_dialect(NAME).failed(doc) is False
        assert envglot.validate(doc, NAME) == []
        assert json_key(envglot.convert(doc, from_=NAME, to=NAME)) == json_key(doc)
        to_errorcode = envglot.conversion(doc, from_=NAME, to="errorcode", unsupported="ignore")
        assert kept <= {d.path for d in to_errorcode.diagnostics if d.kind is Kind.FIELD_DROPPED}

    @pytest.mark.parametrize("status", [0, 99, 100, 199, 600, 1000, -404])
    def test_a_status_outside_200_599_is_a_clear_error(self, status: int) -> None:
        doc = msgspec.json.encode({"type": "about:blank", "status": status})
        with pytest.raises(envglot.ParseError, match="200-399 is a success, 400-599 a problem") as exc:
            envglot.read(doc, from_=NAME)
        assert exc.value.path == "$.status"
        assert [v.path for v in envglot.validate(doc, NAME)] == ["$.status"]
        with pytest.raises(envglot.ParseError):
            get_dialect(NAME).failed(doc)
        assert envglot.detect(doc) != NAME

    @pytest.mark.parametrize(
        ("member", "value"),
        [("code", "not_found"), ("retryable", True), ("retry_after_ms", 5), ("details", {}), ("errors", [])],
    )
    def test_a_success_carrying_a_problem_member_is_refused(self, member: str, value: object) -> None:
        doc = msgspec.json.encode({"type": "about:blank", "status": 200, member: value})
        with pytest.raises(envglot.ParseError, match="problem member") as exc:
            envglot.read(doc, from_=NAME)
        assert exc.value.path == f"$.{member}"
        assert [v.path for v in envglot.validate(doc, NAME)] == [f"$.{member}"]

    def test_the_outcome_flag_is_the_status(self) -> None:
        d = get_dialect(NAME)
        assert d.outcome_key == "status"
        for case in cases(NAME):
            assert d.failed(case.data) is (not envglot.read(case.data).ok), case
        assert d.failed(b'{"type":"urn:x","code":"not_found"}') is True  # no status: a problem document
        assert d.failed(b'{"type":"urn:x","status":null}') is True
        with pytest.raises(envglot.ParseError):
            d.failed(b"{")
        with pytest.raises(envglot.ParseError):
            d.failed(b'{"status":"200"}')

    def test_mcp_is_error_follows_the_status(self) -> None:
        assert mcp.is_error(b'{"type":"about:blank","title":"OK","status":200}', NAME) is False
        assert mcp.is_error(b'{"type":"about:blank","status":503}', NAME) is True

    # -- several problems ----------------------------------------------------------------

    def test_further_problems_go_to_errors_and_come_back(self) -> None:
        problems = (
            Problem(category="invalid_argument", message="a", code="invalid_argument", domain=NAME),
            Problem(category="not_found", message="b"),
            Problem(category="invalid_argument", message="c"),
        )
        doc, _ = _write(Envelope(ok=False, problems=problems))
        assert [e.get("code") for e in doc["errors"]] == ["not_found", None]  # same type as the document: said once
        back = envglot.read(msgspec.json.encode(doc))
        assert [(p.category, p.message) for p in back.problems] == [(p.category, p.message) for p in problems]

    def test_a_multi_error_dotbot_failure_keeps_every_error(self) -> None:
        for case in _failures("dotbot"):
            src = envglot.read(case.data)
            conv = envglot.conversion(case.data, to=NAME, unsupported="ignore")
            back = envglot.read(conv.output)
            assert [p.category for p in back.problems] == [p.category for p in src.problems], case
            assert Kind.EXTRA_PROBLEM_DROPPED not in [d.kind for d in conv.diagnostics]

    # -- conversions ---------------------------------------------------------------------

    @pytest.mark.parametrize("source", _failures(), ids=str)
    def test_every_failure_converts_to_a_valid_problem(self, source) -> None:
        src = envglot.read(source.data, from_=source.dialect)
        out = envglot.convert(source.data, from_=source.dialect, to=NAME, unsupported="ignore")
        assert envglot.detect(out) == NAME
        assert envglot.validate(out, NAME) == []
        back = envglot.read(out)
        assert back.ok is False
        want = [p.category for p in src.problems] or [M.unknown_category]  # a failure naming no error
        assert [p.category for p in back.problems] == want
        if src.problems and src.problems[0].message:
            assert back.problems[0].message == src.problems[0].message

    @pytest.mark.parametrize("dst", OTHERS)
    @pytest.mark.parametrize("source", cases(NAME), ids=str)
    def test_every_problem_converts_to_every_other_dialect_validly(self, source, dst: str) -> None:
        src = envglot.read(source.data)
        out = envglot.convert(source.data, from_=NAME, to=dst, unsupported="ignore")
        assert envglot.validate(out, dst) == []
        back = envglot.read(out, from_=dst)
        assert back.ok is src.ok
        if not src.ok:
            assert back.problems[0].message == src.problems[0].message

    @pytest.mark.parametrize("dst", OTHERS)
    @pytest.mark.parametrize("source", cases(NAME), ids=str)
    def test_preserve_round_trip_from_problem_json(self, source, dst: str) -> None:
        there = envglot.convert(source.data, from_=NAME, to=dst, preserve=True, unsupported="ignore")
        assert envglot.validate(there, dst) == []
        back = envglot.convert(there, from_=dst, to=NAME, preserve=True, unsupported="ignore")
        assert json_key(back) == json_key(source.data)

    @pytest.mark.parametrize("source", [c for c in cases() if c.dialect in OTHERS], ids=str)
    def test_preserve_round_trip_through_problem_json(self, source) -> None:
        there = envglot.convert(source.data, from_=source.dialect, to=NAME, preserve=True, unsupported="ignore")
        assert envglot.validate(there, NAME) == []
        back = envglot.convert(there, from_=NAME, to=source.dialect, preserve=True, unsupported="ignore")
        assert json_key(back) == json_key(source.data)

    @pytest.mark.parametrize("path", _upstream_failures(), ids=lambda p: f"{p.parent.name}/{p.name}")
    def test_real_upstream_failures_convert_and_round_trip(self, path: Path) -> None:
        data = path.read_bytes()
        src = envglot.read(data)
        out = envglot.convert(data, to=NAME, unsupported="ignore")
        assert envglot.validate(out, NAME) == []
        assert envglot.read(out).problems[0].category == src.problems[0].category
        there = envglot.convert(data, to=NAME, preserve=True, unsupported="ignore")
        assert json_key(envglot.convert(there, to=envglot.detect(data), preserve=True)) == json_key(data)

    def test_loss_is_reported_at_the_source_path(self) -> None:
        src = (
            b'{"success":false,"data":null,"error":{"code":"policy_denied_rate_limited","message":"m",'
            b'"retryable":false,"policy_decision":"denied"},"meta":{"tool_version":"1.0","elapsed_ms":3}}'
        )
        conv = envglot.conversion(src, to=NAME, unsupported="ignore")
        dropped = {d.path for d in conv.diagnostics if d.kind is Kind.FIELD_DROPPED}
        assert {"$.error.policy_decision", "$.meta.elapsed_ms"} <= dropped
        with pytest.raises(envglot.UnsupportedError):
            envglot.convert(src, to=NAME, unsupported="raise")

    def test_a_foreign_error_type_is_reported_not_silently_lost(self) -> None:
        src = b'{"type":"https://example.com/probs/out-of-credit","title":"No credit","status":403}'
        conv = envglot.conversion(src, to="errorcode", unsupported="ignore")
        assert (Kind.FIELD_DROPPED, "$.type") in [(d.kind, d.path) for d in conv.diagnostics]

    @pytest.mark.parametrize("number", [b"1e400", b"9" * 10_000, b"0.1000000000000000000000000000001"])
    def test_numbers_no_float_holds_travel_exactly(self, number: bytes) -> None:
        doc = b'{"type":"about:blank","title":"Bad Request","status":400,"data":{"n":' + number + b"}}"
        src = b'{"success":false,"data":{"n":' + number + b'},"error":{"code":"invalid_input","message":"m",'
        src += b'"retryable":false}}'
        assert b'"n":' + number in envglot.convert(src, to=NAME, unsupported="ignore")
        for dst in OTHERS:
            there = envglot.convert(doc, to=dst, preserve=True, unsupported="ignore")
            assert envglot.convert(there, to=NAME, preserve=True) == doc

    def test_a_stated_retryable_a_target_code_cannot_say_travels_in_its_details(self) -> None:
        """result's codes do not state a retryable: the stated one travels in error_data.details
        (issue 25) and reads back, so nothing is lost."""
        doc = b'{"type":"about:blank","title":"Bad Gateway","status":502,"retryable":true}'
        conv = envglot.conversion(doc, to="result", unsupported="ignore")
        assert msgspec.json.decode(conv.output)["error_data"] == {"details": {"retryable": True}}
        assert "$.retryable" not in [d.path for d in conv.diagnostics if d.lossy]
        assert envglot.read(conv.output, from_="result").problems[0].retryable is True

    def test_a_foreign_type_uri_into_response_v2_is_reported(self) -> None:
        doc = b'{"type":"https://example.com/probs/out-of-credit","title":"No credit","status":403}'
        conv = envglot.conversion(doc, to="response-v2", unsupported="ignore")
        assert (Kind.FIELD_DROPPED, "$.type") in [(d.kind, d.path) for d in conv.diagnostics]

    # -- detection -----------------------------------------------------------------------

    @pytest.mark.parametrize(
        ("doc", "dialect"),
        [
            (b'{"type":"about:blank","status":404}', NAME),
            (b'{"type":"about:blank","title":"Not Found","status":404,"detail":"x"}', NAME),
            (b'{"type":"about:blank","title":"OK","status":200,"data":{}}', NAME),
            (b'{"type":"book","title":"Dune","status":200}', NAME),  # the price of detecting successes
            (b'{"type":"redirect","status":302}', NAME),
            (b'{"type":"book","title":"Dune","status":"200"}', "legacy-v1"),  # status must be a number
            (b'{"type":"x","status":199}', "legacy-v1"),  # not a final HTTP status
            (b'{"type":"x","status":600}', "legacy-v1"),
            (b'{"title":"Not Found","status":404}', "legacy-v1"),  # no type: too weak a marker
            (b'{"type":"about:blank","status":"404"}', "legacy-v1"),  # status must be a number
            (b'{"success":false,"type":"about:blank","status":404}', "legacy-v1"),  # an outcome flag wins
        ],
    )
    def test_what_detects_as_problem_json(self, doc: bytes, dialect: str) -> None:
        assert envglot.detect(doc) == dialect

    def test_schema_export(self) -> None:
        schema = envglot.json_schema(NAME)
        text = msgspec.json.encode(schema)
        for member in (b'"type"', b'"title"', b'"status"', b'"detail"', b'"instance"', b'"errors"'):
            assert member in text


# --- hypothesis: generated problem documents --------------------------------------------

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
text = st.text(max_size=8)
scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False) | text
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3), max_leaves=6
)
_STATUS = st.sampled_from(sorted(STATUS_READS_AS)) | st.integers(400, 599)
_TYPES = st.sampled_from(["about:blank", "urn:envglot:problem:not_found", "https://example.com/probs/x"]) | text
_CODES = st.sampled_from(sorted(M[NAME].codes)) | st.text(alphabet="ABCxyz_4", min_size=1, max_size=6)
_ENTRY = {
    "type": _TYPES,
    "title": text | st.sampled_from(["Not Found", "Not found", "Bad Request"]),
    "status": _STATUS,
    "detail": text,
    "instance": text,
    "code": _CODES,
    "retryable": st.booleans(),
    "retry_after_ms": st.integers(0, 2**53),
    "details": json_values,
    "pointer": text,  # an extension member no table knows
}
entries = st.fixed_dictionaries({}, optional=_ENTRY)
problem_docs = st.fixed_dictionaries(
    {},
    optional={
        **_ENTRY,
        "request_id": text,
        "data": json_values,
        "errors": st.lists(entries, max_size=3),
        "balance": json_values,
    },
)


@SETTINGS
@given(doc=problem_docs)
def test_generated_problems_round_trip_through_every_other_dialect(doc: dict) -> None:
    data = msgspec.json.encode(doc)
    valid = not envglot.validate(data, NAME)
    for dst in OTHERS:
        there = envglot.convert(data, from_=NAME, to=dst, preserve=True, unsupported="ignore")
        if valid:
            assert envglot.validate(there, dst) == [], f"{dst}: {there!r}"
        assert envglot.read(there, from_=dst).ok is False
        back = envglot.convert(there, from_=dst, to=NAME, preserve=True, unsupported="ignore")
        assert json_key(back) == json_key(data), dst


success_docs = st.fixed_dictionaries(
    {"status": st.integers(200, 399)},
    optional={
        "type": _TYPES,
        "title": text | st.just("OK"),
        "detail": text,
        "instance": text,
        "request_id": text,
        "data": json_values,
        "warnings": st.lists(text, max_size=2),
        "balance": json_values,
    },
)


@SETTINGS
@given(doc=success_docs)
def test_generated_successes_round_trip_through_every_other_dialect(doc: dict) -> None:
    data = msgspec.json.encode(doc)
    assert envglot.validate(data, NAME) == []
    for dst in OTHERS:
        there = envglot.convert(data, from_=NAME, to=dst, preserve=True, unsupported="ignore")
        assert envglot.validate(there, dst) == [], f"{dst}: {there!r}"
        assert envglot.read(there, from_=dst).ok is True
        back = envglot.convert(there, from_=dst, to=NAME, preserve=True, unsupported="ignore")
        assert json_key(back) == json_key(data), dst


@SETTINGS
@given(value=json_values | problem_docs | success_docs)
def test_any_json_read_as_problem_json_converts_or_raises_envglot_error(value: object) -> None:
    data = msgspec.json.encode(value)
    for dst in WRITABLE:
        try:
            ok = envglot.read(data, from_=NAME).ok
            out = envglot.convert(data, from_=NAME, to=dst, unsupported="ignore")
        except envglot.EnvglotError as exc:
            assert str(exc) and (exc.path is None or exc.path.startswith("$"))
        else:
            assert ok is (isinstance(value, dict) and value.get("status") in range(200, 400))
            assert envglot.read(out, from_=dst).ok is ok  # a problem never becomes a success
