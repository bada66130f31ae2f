"""envglot.Result: the ADR-003 API, mcp-guide's JSON, and direct writes to every dialect."""

from __future__ import annotations

import dataclasses
import functools
import json
from typing import Any

import msgspec
import pytest

import envglot
from envglot import EnvglotError, Report, Result, UnsupportedError
from envglot.dialects import WRITABLE


class BoomError(Exception):
    pass


RESULTS: dict[str, Result[Any]] = {
    "ok-bare": Result.ok(),
    "ok-value": Result.ok({"files": ["a.md", "b.md"], "count": 2}),
    "ok-scalar": Result.ok(42),
    "ok-falsy-value": Result.ok(0),
    "ok-string": Result.ok("plain text"),
    "ok-every-field": Result.ok(
        ["x", {"y": None}],
        message="2 documents found",
        instruction="Display this content to the user verbatim.",
        arguments={"query": "guide", "limit": 2},
        disposition="user/information",
        additional_agent_instructions="Then ask what to open.",
    ),
    "ok-empty-strings": Result.ok([], message="", instruction=""),
    "fail-bare": Result.failure("Project 'demo' not found"),
    "fail-known-type": Result.failure("Project 'demo' not found", "not_found"),
    "fail-every-field": Result.failure(
        "Invalid tool arguments: 1 validation error(s)",
        "validation_error",
        exception=BoomError("category: field required"),
        message="Check the arguments",
        instruction="Return error to user without attempting remediation",
        error_data={"validation_errors": [{"field": "category", "message": "field required"}]},
        arguments={"category": None},
        disposition="agent/instruction",
        additional_agent_instructions="Queued: re-read the guide.",
    ),
    "fail-unknown-type": Result.failure("quota", "quota_exhausted_somewhere"),
    "fail-none-error": Result(success=False),
    "fail-empty-error-data": Result.failure("x", "file_error", error_data={}),
    "fail-with-value": Result(success=False, value=[1], error="ignored value", error_type="save_error"),
}
PARITY = [(name, d) for name in RESULTS for d in WRITABLE]


@pytest.mark.parametrize(("name", "dialect"), PARITY)
def test_to_equals_converting_the_rendered_json(name: str, dialect: str) -> None:
    r = RESULTS[name]
    mine = Report("ignore")
    direct = r.to(dialect, unsupported="ignore", report=mine)
    via_json = envglot.conversion(r.to_json(), from_="result", to=dialect, unsupported="ignore")
    assert direct == via_json.output
    assert mine.diagnostics == via_json.diagnostics
    # the ADR's rendering: json.dumps separators travel inside the payload (msgspec.Raw keeps them),
    # so compare bytes after compacting the text, and JSON values for the text as rendered -- except
    # code-graph, whose requestId hash (and approxTokens count) are taken over those payload bytes
    text = r.to_json_str()
    compact = msgspec.json.format(text.encode(), indent=-1)
    assert direct == envglot.convert(compact, from_="result", to=dialect, unsupported="ignore")
    if dialect != "code-graph":
        assert json.loads(direct) == json.loads(envglot.convert(text, from_="result", to=dialect, unsupported="ignore"))


@pytest.mark.parametrize("name", RESULTS)
def test_to_envelope_equals_reading_the_json(name: str) -> None:
    r = RESULTS[name]
    assert r.to_envelope() == envglot.read(r.to_json(), from_="result")


@pytest.mark.parametrize("name", [n for n in RESULTS if RESULTS[n].error is not None or RESULTS[n].success])
def test_result_dialect_writes_to_json(name: str) -> None:
    r = RESULTS[name]
    assert r.to("result", unsupported="ignore") == msgspec.json.encode(r.to_json())


def test_adr_constructors_and_predicates() -> None:
    ok = Result.ok([1], "done", "show it")
    assert (ok.success, ok.value, ok.message, ok.instruction) == (True, [1], "done", "show it")
    assert ok.is_ok() and not ok.is_failure()
    exc = ValueError("bad")
    bad: Result[int] = Result.failure("it broke", exception=exc, message="sorry", instruction="stop")
    assert (bad.success, bad.error, bad.error_type, bad.exception) == (False, "it broke", "unknown", exc)
    assert bad.is_failure() and not bad.is_ok()
    assert Result.ok().value is None


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (Result.ok(), {"success": True}),
        (Result.ok(None, message="m"), {"success": True, "message": "m"}),
        (Result.ok(False), {"success": True, "value": False}),
        (Result.ok("", message="", instruction=""), {"success": True, "value": ""}),
        (Result(success=False), {"success": False, "error": None, "error_type": None}),
        (Result.failure("e", error_data={}), {"success": False, "error": "e", "error_type": "unknown"}),
        (
            Result.failure("e", "not_found", KeyError("k"), "m", "i", error_data={"d": 1}, arguments="a=1"),
            {
                "success": False,
                "error": "e",
                "error_type": "not_found",
                "error_data": {"d": 1},
                "exception_type": "KeyError",
                "exception_message": "'k'",
                "message": "m",
                "arguments": "a=1",
                "instruction": "i",
            },
        ),
    ],
)
def test_to_json_fields_and_truthiness(result: Result[Any], expected: dict[str, Any]) -> None:
    got = result.to_json()
    assert got == expected
    assert list(got) == list(expected)  # key order as mcp-guide emits it
    assert result.to_json_str() == json.dumps(expected)


def test_to_json_key_order_with_every_field() -> None:
    assert list(RESULTS["ok-every-field"].to_json()) == [
        "success",
        "value",
        "message",
        "arguments",
        "instruction",
        "disposition",
        "additional_agent_instructions",
    ]
    assert list(RESULTS["fail-every-field"].to_json()) == [
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


def test_default_instructions_come_from_the_class() -> None:
    class GuideResult(Result[Any]):
        default_success_instruction = "Display this content to the user verbatim."
        default_failure_instruction = "Present this error to the user; do not act."

    assert GuideResult.ok(1).instruction == "Display this content to the user verbatim."
    assert GuideResult.failure("x").instruction == "Present this error to the user; do not act."
    assert "instruction" not in GuideResult.ok(1, instruction="").to_json()  # "" suppresses the default
    assert isinstance(GuideResult.ok(1), GuideResult)
    assert Result.ok(1).instruction is None


def test_dataclass_behaviour() -> None:
    a = Result.failure("x", exception=ValueError("1"))
    b = Result.failure("x", exception=KeyError("2"))
    assert a == b  # the exception is not compared
    assert "exception" not in repr(a)
    assert Result[int].ok(3).value == 3
    assert (
        dataclasses.replace(a, additional_agent_instructions="next").to_json()["additional_agent_instructions"]
        == "next"
    )


@dataclasses.dataclass
class Point:
    x: int
    y: int


class WithToDict:
    def to_dict(self) -> dict[str, int]:
        return {"n": 1}


class WithToJsonText:
    def to_json(self) -> str:
        return '{\n  "rows": [1, 2]\n}'


class WithToJsonDict:
    def to_json(self) -> dict[str, bool]:
        return {"ok": True}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Point(1, 2), {"x": 1, "y": 2}),
        ((1, "a"), [1, "a"]),
        (WithToDict(), {"n": 1}),
        (WithToJsonText(), {"rows": [1, 2]}),
        (WithToJsonDict(), {"ok": True}),
        ([WithToDict(), Point(0, 0)], [{"n": 1}, {"x": 0, "y": 0}]),
    ],
)
def test_values_use_the_adr_fallbacks(value: object, expected: object) -> None:
    out = json.loads(Result.ok(value).to("result"))
    assert out == {"success": True, "value": expected}


def test_pydantic_value() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Item(pydantic.BaseModel):
        name: str
        tags: list[str]

    out = json.loads(Result.ok([Item(name="a", tags=["t"])]).to("response-v2"))
    assert out["data"] == {"value": [{"name": "a", "tags": ["t"]}]}


def test_unencodable_value_names_the_field() -> None:
    with pytest.raises(EnvglotError) as info:
        Result.ok(object()).to("result")
    assert info.value.path == "$.value"
    with pytest.raises(EnvglotError) as info:
        Result.failure("x", error_data={"when": object()}).to("result")
    assert info.value.path == "$.error_data"


def test_options_style_context_and_raise() -> None:
    r = RESULTS["fail-every-field"]
    assert r.to("errorcode", style="pretty", unsupported="ignore") == msgspec.json.format(
        r.to("errorcode", unsupported="ignore"), indent=2
    )
    dotbot = json.loads(Result.ok({"a": 1}).to("dotbot", context={"tool": "find", "source": "tools/find.py"}))
    assert (dotbot["tool"], dotbot["audit"]["source"]) == ("find", "tools/find.py")
    with pytest.raises(UnsupportedError) as info:
        r.to("response-v2", unsupported="raise")
    assert {d.path for d in info.value.diagnostics} >= {"$.exception_type", "$.instruction"}
    assert json.loads(r.to("result", unsupported="raise")) == r.to_json()


def test_unknown_error_type_is_reported() -> None:
    rep = Report("ignore")
    env = RESULTS["fail-unknown-type"].to_envelope(report=rep)
    assert env.problems[0].category == "unknown"
    assert env.problems[0].code == "quota_exhausted_somewhere"
    assert [(d.kind, d.path) for d in rep] == [(envglot.Kind.CODE_UNKNOWN, "$.error_type")]


def test_exported_from_the_package() -> None:
    assert envglot.Result is Result
    assert "Result" in envglot.__all__


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ({"\ud800": 1}, "lone surrogate"),
        (["ok", "\udcff"], "lone surrogate"),
        (10**5000, "digits"),
        (functools.reduce(lambda inner, _: [inner], range(5000), []), "nested too deeply"),
    ],
    ids=["surrogate-key", "surrogate-value", "10k-digit-int", "5000-deep"],
)
def test_a_value_no_json_can_hold_is_an_envglot_error(value: object, says: str) -> None:
    """Found by the fuzz suite: these raised UnicodeEncodeError, ValueError and RecursionError."""
    with pytest.raises(EnvglotError, match=says) as info:
        Result.ok(value).to("result")
    assert info.value.path == "$.value"
