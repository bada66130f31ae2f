"""dotbot-mcp-response@1: goldens plus the dialect's own rules (computed status, exact schema_id)."""

from __future__ import annotations

import re
from typing import Any

import msgspec
import pytest
from hypothesis import strategies as st

import envglot
from dialects.golden_suite import GoldenSuite
from envelopes import code_of, json_values, objects, record, text
from envglot import Envelope, Kind, Problem
from envglot.canonical import NextStep, Notice
from envglot.mappings import default_mappings
from envglot.mcp import is_error, wrap
from golden import cases

SCHEMA_ID = "dotbot-mcp-response@1"

DERIVED = {"$.status": ("$.errors", "$.warnings")}
"""Wire fields the writer computes from others (``test_matrix``: a change is explained by a base's diagnostic)."""
LOSS_XFAIL = (
    {}
    if default_mappings()["dotbot"].path("next_step.intent") is not None
    else {
        "spec-4-intent": 'mappings/dotbot.toml has no "next_step.intent" = "$.intent" row: a dropped intent '
        "is reported at $.actions"
    }
)
"""Case stem -> why ``test_matrix``'s loss check is expected to fail for it (strict xfail)."""
_PROBLEM = Problem(category="not_found", code="PROJECT_NOT_FOUND", domain="dotbot", message="no such project")


def _write(env: Envelope) -> tuple[dict, list[envglot.Diagnostic]]:
    report = envglot.Report("ignore")
    out = envglot.write(env, "dotbot", report=report)
    return msgspec.json.decode(out), report.diagnostics


# -- valid envelopes for the shared property tests (tests/envelopes.py finds ``envelopes`` by convention) --

_dotbot_issue = record({"code": code_of("dotbot"), "message": text}, {"path": text, "details": objects}, extra=False)
_dotbot_step = record(
    {}, {"id": text, "type": text, "label": text, "reason": text, "tool": text, "parameters": objects}, extra=False
)


def _dotbot(errors: list[Any], warnings: list[Any], rest: dict[str, Any]) -> dict[str, Any]:
    status = "error" if errors else "warning" if warnings else "ok"
    return {"schema_id": "dotbot-mcp-response@1", "status": status, "errors": errors, "warnings": warnings, **rest}


envelopes = st.builds(
    _dotbot,
    st.lists(_dotbot_issue, max_size=3),
    st.lists(text | _dotbot_issue, max_size=2),
    record(
        {
            "tool": text,
            "version": text,
            "summary": text,
            "data": objects | st.builds(lambda v: {"value": v}, json_values),
            "audit": record(
                {"timestamp": text, "duration_ms": st.integers(0, 2**31), "source": text},
                {"host": text, "correlation_id": text, "write_to": text},
                extra=False,
            ),
        },
        {
            "intent": record({}, {"recommended_next": text, "reason": text, "parameters": objects}, extra=False),
            "actions": st.lists(_dotbot_step, min_size=1, max_size=2),
        },
    ),
)
"""Valid documents of this dialect, including a newer emitter's unknown keys (``test_properties``)."""


class TestDotbot(GoldenSuite):
    dialect = "dotbot"
    native = frozenset({"unicode-extra-field", "value-wrapped-list"})

    @pytest.mark.parametrize(
        ("ok", "problems", "warnings", "status"),
        [
            (True, (), (), "ok"),
            (True, (), (Notice(message="stale cache"),), "warning"),
            (False, (_PROBLEM,), (), "error"),
            (False, (_PROBLEM,), (Notice(message="stale cache"),), "error"),
            (False, (), (), "error"),  # a failure without an error object gets one synthesized
            (True, (_PROBLEM,), (), "error"),  # errors win over the flag (reported)
        ],
    )
    def test_status_is_computed_from_errors_and_warnings(self, ok, problems, warnings, status) -> None:
        doc, diags = _write(Envelope(ok=ok, problems=problems, warnings=warnings, summary="s"))
        assert doc["status"] == status
        assert (len(doc["errors"]) > 0) == (status == "error")
        if ok and problems:
            assert any(d.kind is Kind.STATUS_MISMATCH for d in diags)

    def test_an_inconsistent_status_is_reported_on_read_and_recomputed_on_write(self) -> None:
        case = next(c for c in cases("dotbot") if c.stem == "status-mismatch")
        conv = envglot.conversion(case.data, to="dotbot", unsupported="ignore")
        assert [(d.kind, d.path) for d in conv.diagnostics] == [(Kind.STATUS_MISMATCH, "$.status")]
        assert msgspec.json.decode(conv.output)["status"] == "warning"

    @pytest.mark.parametrize("status", ["ok", "warning"])
    def test_errors_beside_a_success_status_are_a_failure(self, status: str) -> None:
        """A failure marker can only make a failure (issue 23, item 12): errors[] wins over status."""
        doc = msgspec.json.encode(
            {
                "schema_id": "dotbot-mcp-response@1",
                "tool": "t",
                "version": "1.0.0",
                "status": status,
                "summary": "s",
                "data": {},
                "warnings": [],
                "errors": [{"code": "NOT_FOUND", "message": "no such task"}],
                "audit": {"timestamp": "2026-01-01T00:00:00Z", "duration_ms": 1, "source": "x"},
            }
        )
        report = envglot.Report("ignore")
        env = envglot.read(doc, report=report)
        assert not env.ok and [p.message for p in env.problems] == ["no such task"]
        assert is_error(doc, "dotbot") and wrap(doc)["isError"] is True
        mismatch = [d for d in report if d.kind is Kind.STATUS_MISMATCH]
        assert [d.path for d in mismatch] == ["$.status"] and "the failure wins" in mismatch[0].message
        for target in ("response-v2", "errorcode", "result", "dotbot"):  # the error is never dropped
            out = envglot.convert(doc, to=target, unsupported="ignore")
            assert envglot.read(out, target).problems[0].message == "no such task"
        # raise with field_dropped ignored: the failure is carried, not dropped behind exit 0
        out = envglot.convert(
            doc, to="response-v2", unsupported=envglot.Policy(level="raise", ignore=("field_dropped",))
        )
        assert msgspec.json.decode(out)["error"] == "no such task"
        with pytest.raises(envglot.UnsupportedError, match="the failure wins"):  # selectable like any kind
            envglot.convert(
                doc, to="response-v2", unsupported=envglot.Policy(level="raise", select=("status_mismatch",))
            )

    @pytest.mark.parametrize("source", [c for c in cases() if c.dialect != "dotbot"], ids=str)
    def test_schema_id_and_key_order_are_written_exactly(self, source) -> None:
        out = envglot.convert(source.data, from_=source.dialect, to="dotbot", unsupported="ignore")
        doc = msgspec.json.decode(out)
        assert doc["schema_id"] == SCHEMA_ID
        assert list(doc)[:9] == [
            "schema_id",
            "tool",
            "version",
            "status",
            "summary",
            "data",
            "warnings",
            "errors",
            "audit",
        ]

    def test_another_schema_id_is_rejected(self) -> None:
        doc = msgspec.json.decode(cases("dotbot")[0].data)
        doc["schema_id"] = "dotbot-mcp-response@2"
        with pytest.raises(envglot.ParseError, match="schema_id") as exc:
            envglot.read(msgspec.json.encode(doc))
        assert exc.value.path == "$.schema_id"

    def test_the_spec_schema_template_is_not_an_envelope(self) -> None:
        """The "Complete Structure" block of the specification lists the status values as one string."""
        template = {
            "schema_id": SCHEMA_ID,
            "tool": "solution.info",
            "version": "1.0.0",
            "status": "ok|warning|error",
            "summary": "One-sentence summary of operation result",
            "data": {"...": "Actual tool-specific output"},
            "warnings": [
                {"code": "WARNING_CODE", "message": "Warning description", "path": "Optional file path", "details": {}}
            ],
            "errors": [
                {"code": "ERROR_CODE", "message": "Error description", "path": "Optional file path", "details": {}}
            ],
            "audit": {
                "timestamp": "2026-01-02T13:57:00Z",
                "duration_ms": 123,
                "source": ".bot/mcp/tools/solution-info/script.ps1",
                "host": "warp|claude-desktop|ci|null",
                "correlation_id": "optional-request-id",
                "write_to": "optional-file-written",
            },
            "intent": {
                "recommended_next": "solution.structure",
                "reason": "Why this action is suggested",
                "parameters": {},
            },
            "actions": [
                {
                    "id": "action-id",
                    "type": "suggestion",
                    "label": "User-facing label",
                    "reason": "Why user should take this action",
                    "tool": "tool.name",
                    "parameters": {},
                }
            ],
        }
        with pytest.raises(envglot.ParseError, match=re.escape("Invalid enum value 'ok|warning|error'")) as exc:
            envglot.read(msgspec.json.encode(template))
        assert exc.value.path == "$.status"
        template["status"] = "error"
        env = envglot.read(msgspec.json.encode(template))
        assert [p.code for p in env.problems] == ["ERROR_CODE"]
        assert [w.code for w in env.warnings] == ["WARNING_CODE"]
        assert [s.kind for s in env.next_steps] == ["intent", "action"]

    def test_plain_string_warnings_stay_strings_and_coded_ones_objects(self) -> None:
        env = Envelope(
            ok=True,
            summary="s",
            warnings=(Notice(message="plain"), Notice(message="coded", code="FRONTMATTER_MISSING", path="a.md")),
        )
        doc, _ = _write(env)
        assert doc["warnings"] == ["plain", {"code": "FRONTMATTER_MISSING", "message": "coded", "path": "a.md"}]
        assert doc["status"] == "warning"

    def test_every_error_is_kept_in_order(self) -> None:
        case = next(c for c in cases("dotbot") if c.stem == "real-multi-error")
        env = envglot.read(case.data)
        assert [p.code for p in env.problems] == ["TECH_STACK_MISSING", "BROKEN_FILE_REFERENCE", "IO_ERROR"]
        back = msgspec.json.decode(envglot.convert(case.data, to="dotbot"))
        assert [e["code"] for e in back["errors"]] == ["TECH_STACK_MISSING", "BROKEN_FILE_REFERENCE", "IO_ERROR"]

    def test_an_unknown_code_goes_back_verbatim(self) -> None:
        case = next(c for c in cases("dotbot") if c.stem == "real-v4-unknown-code")
        conv = envglot.conversion(case.data, to="dotbot", unsupported="raise")
        assert [e["code"] for e in msgspec.json.decode(conv.output)["errors"]] == [
            "SCRIPT_NOT_FOUND",
            "DB_CONNECTION_FAILED",
        ]
        assert (Kind.CODE_UNKNOWN, "$.errors[1].code") in [(d.kind, d.path) for d in conv.diagnostics]

    @pytest.mark.parametrize("value", [b"[1,2]", b'"text"', b"0", b"-1.5", b"true", b"false", b"[]", b'[{"a":null}]'])
    def test_a_non_object_payload_is_wrapped_and_unwrapped(self, value: bytes) -> None:
        src = b'{"success":true,"value":' + value + b"}"
        conv = envglot.conversion(src, to="dotbot", unsupported="ignore")
        doc = msgspec.json.decode(conv.output)
        assert doc["data"] == {"value": msgspec.json.decode(value)}
        assert (Kind.PAYLOAD_WRAPPED, "$.value") in [(d.kind, d.path) for d in conv.diagnostics]
        back = envglot.conversion(conv.output, to="result", unsupported="ignore")
        assert msgspec.json.decode(back.output)["value"] == msgspec.json.decode(value)
        assert Kind.PAYLOAD_UNWRAPPED in [d.kind for d in back.diagnostics]

    def test_an_absent_or_null_payload_becomes_an_empty_object(self) -> None:
        assert _write(Envelope(ok=True, summary="s"))[0]["data"] == {}
        doc, diags = _write(Envelope(ok=True, summary="s", payload=msgspec.Raw(b"null")))
        assert doc["data"] == {}
        assert [d.kind for d in diags if d.path == "$.payload"] == [Kind.VALUE_COERCED]

    def test_audit_keeps_real_emitter_values_and_omits_what_is_unknown(self) -> None:
        case = next(c for c in cases("dotbot") if c.stem == "real-warning-strings")
        audit = msgspec.json.decode(envglot.convert(case.data, to="dotbot"))["audit"]
        assert audit == {
            "timestamp": "2026-01-02T13:57:00.4817352Z",
            "duration_ms": 78,
            "source": ".bot/mcp/tools/solution-standards-list/script.ps1",
        }

    def test_required_fields_are_synthesized_and_reported(self) -> None:
        conv = envglot.conversion(b'{"success": true, "value": {"n": 1}}', to="dotbot", unsupported="ignore")
        doc = msgspec.json.decode(conv.output)
        assert doc["tool"] == "unknown"
        assert doc["version"] == "0.0.0"
        assert doc["summary"] == "Completed."
        assert doc["audit"] == {"timestamp": "1970-01-01T00:00:00Z", "duration_ms": 0, "source": "unknown"}
        synthesized = {d.path for d in conv.diagnostics if d.kind is Kind.SYNTHESIZED}
        assert synthesized == {
            "$.tool",
            "$.version",
            "$.summary",
            "$.audit.timestamp",
            "$.audit.duration_ms",
            "$.audit.source",
        }

    def test_intent_and_actions_round_trip(self) -> None:
        for stem in ("spec-4-intent", "spec-5-actions"):
            case = next(c for c in cases("dotbot") if c.stem == stem)
            doc = msgspec.json.decode(case.data)
            back = msgspec.json.decode(envglot.convert(case.data, to="dotbot"))
            assert back.get("intent") == doc.get("intent")
            assert back.get("actions") == doc.get("actions")

    def test_code_graph_suggestions_become_complete_actions(self) -> None:
        """Class 1: every action has id/type/label (synthesized by the [synthesize] rules, reported)."""
        doc = (
            b'{"success":true,"data":{"tool":"ouroborosai_graph_digest","version":"1.0","requestId":"k3v9q2xa",'
            b'"generatedAt":"2026-02-03T09:14:22.512Z","workspace":{"root":"/src/shop","repoName":"shop"},'
            b'"result":{"files":12},"meta":{"approxTokens":0,"truncated":false,"limits":{},"nextQuerySuggestion":['
            b'{"tool":"ouroborosai_graph_impact","args":{"target":"src/cart.ts"},"reason":"Cart is a hotspot"},'
            b'{"tool":"ouroborosai_graph_impact","args":{"target":"src/pay.ts"}}]}}}'
        )
        conv = envglot.conversion(doc, from_="code-graph", to="dotbot", unsupported="ignore")
        out = msgspec.json.decode(conv.output)
        assert "intent" not in out
        assert out["actions"] == [
            {
                "id": "ouroborosai-graph-impact",
                "type": "suggestion",
                "label": "Run ouroborosai_graph_impact",
                "reason": "Cart is a hotspot",
                "tool": "ouroborosai_graph_impact",
                "parameters": {"target": "src/cart.ts"},
            },
            {
                "id": "ouroborosai-graph-impact-2",
                "type": "suggestion",
                "label": "Run ouroborosai_graph_impact",
                "tool": "ouroborosai_graph_impact",
                "parameters": {"target": "src/pay.ts"},
            },
        ]
        synthesized = {d.path for d in conv.diagnostics if d.kind is Kind.SYNTHESIZED}
        assert {f"$.actions[{i}].{k}" for i in (0, 1) for k in ("id", "type", "label")} <= synthesized
        assert envglot.validate(conv.output, "dotbot") == []

    def test_an_action_keeps_the_id_type_and_label_it_has(self) -> None:
        env = Envelope(ok=True, next_steps=(NextStep(kind="action", tool="a.b", id="mine", type="link", label="L"),))
        report = envglot.Report("ignore")
        out = msgspec.json.decode(envglot.write(env, "dotbot", report=report))
        assert out["actions"] == [{"id": "mine", "type": "link", "label": "L", "tool": "a.b"}]
        assert not [d for d in report if d.path.startswith("$.actions")]

    def test_the_context_can_supply_an_action_type(self) -> None:
        env = Envelope(ok=True, next_steps=(NextStep(kind="query", tool="t"),))
        out = msgspec.json.decode(envglot.write(env, "dotbot", unsupported="ignore", context={"next_step.type": "x"}))
        assert out["actions"][0]["type"] == "x"


@pytest.mark.parametrize(
    ("notice", "written", "synthesized"),
    [
        (Notice(message="plain"), "plain", False),
        (Notice(message="m", code="FRONTMATTER_MISSING"), {"code": "FRONTMATTER_MISSING", "message": "m"}, False),
        (Notice(message="m", path="a.md"), {"code": "WARNING", "message": "m", "path": "a.md"}, True),
        (
            Notice(message="m", context=msgspec.Raw(b'{"n":1}')),
            {"code": "WARNING", "message": "m", "details": {"n": 1}},
            True,
        ),
        (Notice(message="m", code=""), {"code": "", "message": "m"}, False),  # the source's own code, kept
    ],
)
def test_a_warning_object_without_a_code_gets_a_synthesized_one(
    notice: Notice, written: Any, synthesized: bool
) -> None:
    doc, diags = _write(Envelope(ok=True, summary="s", warnings=(Notice(message="first"), notice)))
    assert doc["warnings"] == ["first", written]
    said = "dotbot requires a code for a warning with a path or details; wrote 'WARNING' (by rule)"
    assert [(d.kind, d.message) for d in diags if d.path == "$.warnings[1].code"] == (
        [(Kind.SYNTHESIZED, said)] if synthesized else []
    )


def test_the_context_can_supply_a_warning_code() -> None:
    env = Envelope(ok=True, summary="s", warnings=(Notice(message="m", path="a.md"),))
    out = msgspec.json.decode(envglot.write(env, "dotbot", unsupported="ignore", context={"warning.code": "STALE"}))
    assert out["warnings"] == [{"code": "STALE", "message": "m", "path": "a.md"}]


def _step(kind: str, tool: str | None = None, **more: Any) -> NextStep:
    return NextStep(kind=kind, tool=tool, **more)


@pytest.mark.parametrize(
    ("steps", "intent", "actions", "coerced"),
    [
        ((_step("intent", "a"),), "a", None, []),
        ((_step("intent", "a"), _step("intent", "b")), "a", ["b"], ["$.next_steps[1]"]),
        ((_step("action", "x"), _step("intent", "a"), _step("intent", "b")), "a", ["x", "b"], ["$.next_steps[2]"]),
        (
            (_step("intent", "a"), _step("intent", "b"), _step("intent", "c")),
            "a",
            ["b", "c"],
            [f"$.next_steps[{i}]" for i in (1, 2)],
        ),
    ],
)
def test_dotbot_carries_one_intent_and_a_further_one_becomes_a_reported_action(
    steps: tuple[NextStep, ...], intent: str, actions: list[str] | None, coerced: list[str]
) -> None:
    doc, diags = _write(Envelope(ok=True, summary="s", next_steps=steps))
    assert doc["intent"]["recommended_next"] == intent
    assert (None if "actions" not in doc else [a["tool"] for a in doc["actions"]]) == actions
    assert [d.path for d in diags if d.kind is Kind.VALUE_COERCED] == coerced


@pytest.mark.parametrize(
    ("steps", "ids"),
    [
        ((_step("action", "a.b"), _step("action", "a.b")), ["a-b", "a-b-2"]),
        ((_step("action", "a.b"), _step("action", "x", id="a-b")), ["a-b-2", "a-b"]),  # a later explicit id
        (
            (_step("action", "a.b"), _step("query", "a.b"), _step("action", "x", id="a-b-2")),
            ["a-b", "a-b-3", "a-b-2"],
        ),
        ((_step("intent", "a.b", id="a-b"), _step("action", "a.b")), ["a-b"]),  # the intent's id is not written
        ((_step("action", "a.b", id="mine"), _step("action", "mine")), ["mine", "mine-2"]),
    ],
)
def test_a_synthesized_action_id_is_unique_in_the_document(steps: tuple[NextStep, ...], ids: list[str]) -> None:
    doc, _ = _write(Envelope(ok=True, summary="s", next_steps=steps))
    assert [a["id"] for a in doc["actions"]] == ids


def test_a_dotbot_action_without_an_id_avoids_a_later_explicit_one() -> None:
    case = next(c for c in cases("dotbot") if c.stem == "spec-5-actions")
    doc = msgspec.json.decode(case.data)
    doc["actions"] = [{"tool": "solution.structure"}, {**doc["actions"][0], "id": "solution-structure"}]
    data = msgspec.json.encode(doc)
    conv = envglot.conversion(data, to="dotbot", unsupported="ignore")
    assert [a["id"] for a in msgspec.json.decode(conv.output)["actions"]] == [
        "solution-structure-2",
        "solution-structure",
    ]
    assert (Kind.SYNTHESIZED, "$.actions[0].id") in [(d.kind, d.path) for d in conv.diagnostics]
    assert envglot.convert(data, to="dotbot", unsupported="ignore") == conv.output
    assert envglot.validate(conv.output, "dotbot") == []


@pytest.mark.parametrize(
    ("step", "dropped"),
    [
        (_step("intent", "a", reason="r"), []),
        (_step("intent", "a", label="Go"), ["$.next_steps[0].label"]),
        (_step("intent", "a", id="i", type="suggestion"), ["$.next_steps[0].id", "$.next_steps[0].type"]),
    ],
)
def test_what_an_intent_cannot_carry_is_reported(step: NextStep, dropped: list[str]) -> None:
    doc, diags = _write(Envelope(ok=True, summary="s", next_steps=(step,)))
    assert doc["intent"]["recommended_next"] == "a"
    assert [d.path for d in diags if d.kind is Kind.FIELD_DROPPED] == dropped


def _with_duration(ms: bytes) -> bytes:
    return (
        b'{"schema_id":"dotbot-mcp-response@1","tool":"t","version":"1.0.0","status":"ok","summary":"s","data":{},'
        b'"warnings":[],"errors":[],"audit":{"timestamp":"2026-01-02T13:57:00Z","duration_ms":'
        + ms
        + b',"source":"x"}}'
    )


@pytest.mark.parametrize(
    ("ms", "whole", "exact"),
    [
        (b"78", 78, 78),
        (b"12.5", 12, 12.5),  # half to even, as PowerShell's [int] cast rounds
        (b"13.5", 14, 13.5),
        (b"12.0", 12, 12.0),
        (b"123456789012345678901234567890", 123456789012345678901234567890, 123456789012345678901234567890),
    ],
)
def test_a_float_duration_is_read_exactly_and_rounding_is_reported(ms: bytes, whole: int, exact: int | float) -> None:
    """The standard and the emitter say integer; a float is read as it is (validate reports it)."""
    data = _with_duration(ms)
    read = envglot.read(data).duration_ms
    assert (read, type(read)) == (exact, type(exact))
    assert bool(envglot.validate(data, "dotbot")) is isinstance(exact, float)
    rounded = ["$.audit.duration_ms"] if isinstance(exact, float) else []
    for target, member in (("dotbot", "audit.duration_ms"), ("errorcode", "meta.elapsed_ms")):
        conv = envglot.conversion(data, to=target, unsupported="ignore")
        outer, inner = member.split(".")
        assert msgspec.json.decode(conv.output)[outer][inner] == whole
        assert [d.path for d in conv.diagnostics if d.kind is Kind.VALUE_COERCED] == rounded
    out = envglot.convert(data, to="response-v2", unsupported="ignore")
    assert msgspec.json.decode(out)["meta"]["telemetry"]["duration_ms"] == exact
