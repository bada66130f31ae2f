"""envglot.mcp: unwrap/wrap CallToolResults, the ``emits`` decorator, output schemas, a live SDK server."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest
from msgspec import Raw

import envglot
from envglot import Envelope, EnvglotError, Kind, ParseError, Report, Result, UnknownDialectError
from envglot import inspect as env_inspect
from envglot import mcp as emcp
from envglot.dialects import NAMES, WRITABLE, get_dialect

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*/*.json"))
WRAP_CASES = [(p, d) for p in EXAMPLES for d in (None, *WRITABLE)]


def _ids(cases: list[tuple[Path, str | None]]) -> list[str]:
    return [f"{p.parent.name}/{p.stem}->{d or 'as-is'}" for p, d in cases]


def _compact(doc: bytes | str) -> bytes:
    return msgspec.json.format(doc.encode() if isinstance(doc, str) else doc, indent=-1)


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


# ---- wrap / unwrap on wire dicts (no SDK needed) -------------------------------------


@pytest.mark.parametrize(("path", "dialect"), WRAP_CASES, ids=_ids(WRAP_CASES))
def test_wrap_then_unwrap(path: Path, dialect: str | None) -> None:
    raw = path.read_bytes()
    wire = emcp.wrap(raw, dialect, unsupported="ignore")
    expected = raw if dialect is None else envglot.convert(raw, to=dialect, unsupported="ignore")
    assert wire["structuredContent"] == json.loads(expected)
    assert wire["content"] == [_text(_compact(expected).decode())]
    assert wire["isError"] is (not envglot.read(expected).ok)
    assert "resultType" not in wire
    assert emcp.unwrap(wire) == _compact(expected)
    assert json.loads(emcp.unwrap(json.dumps(wire))) == json.loads(expected)  # as it travelled
    for to in WRITABLE:
        assert emcp.unwrap(wire, to, unsupported="ignore") == envglot.convert(
            _compact(expected), to=to, unsupported="ignore"
        )


DOTBOT_WARNING = json.dumps(
    {
        "schema_id": "dotbot-mcp-response@1",
        "tool": "t",
        "version": "1",
        "status": "warning",
        "summary": "s",
        "data": {},
        "warnings": ["w"],
        "errors": [],
        "audit": {"timestamp": "t", "duration_ms": 1, "source": "s"},
    }
).encode()


@pytest.mark.parametrize(
    ("envelope", "is_error"),
    [
        (DOTBOT_WARNING, False),
        (b'{"success": false, "error": "e", "error_type": "not_found"}', True),
        (b'{"success": true, "data": {}, "error": null, "meta": {"version": "response-v2"}}', False),
        (b'{"found": false, "error": "Task not found: t-1"}', True),
    ],
    ids=["dotbot-warning-is-success", "result-failure", "v2-success", "legacy-not-found"],
)
def test_is_error_mirrors_the_envelope(envelope: bytes, is_error: bool) -> None:
    assert emcp.wrap(envelope)["isError"] is is_error


def test_wrap_accepts_every_kind_of_envelope() -> None:
    raw = (EXAMPLES[0]).read_bytes()
    source = EXAMPLES[0].parent.name
    by_bytes = emcp.wrap(raw, "response-v2", unsupported="ignore")
    assert emcp.wrap(raw.decode(), "response-v2", unsupported="ignore") == by_bytes
    assert emcp.wrap(json.loads(raw), "response-v2", unsupported="ignore")["structuredContent"] == envglot.convert(
        json.loads(raw), to="response-v2", unsupported="ignore"
    )
    struct = msgspec.json.decode(raw, type=get_dialect(source).wire)
    assert emcp.wrap(struct, "response-v2", unsupported="ignore") == emcp.wrap(
        msgspec.json.encode(struct), "response-v2", unsupported="ignore"
    )
    canonical = envglot.read(raw)
    assert emcp.wrap(canonical, "response-v2", unsupported="ignore")["structuredContent"] == json.loads(
        envglot.write(canonical, "response-v2", unsupported="ignore")
    )
    with pytest.raises(EnvglotError, match="pass dialect="):
        emcp.wrap(canonical)
    result = Result.failure("nope", "not_found")
    assert emcp.wrap(result)["structuredContent"] == result.to_json()
    assert emcp.wrap(result, "errorcode")["structuredContent"]["error"]["code"] == "not_found"
    assert emcp.wrap(result)["isError"] is True


def test_wrap_result_type_and_bad_input() -> None:
    assert emcp.wrap(b'{"success": true}', result_type=True)["resultType"] == "complete"
    with pytest.raises(EnvglotError, match="cannot wrap a list"):
        emcp.wrap([1, 2])  # type: ignore[arg-type]
    with pytest.raises(EnvglotError, match="not the wire Struct"):
        emcp.wrap(envglot.Problem(category="internal"))
    with pytest.raises(ParseError):
        emcp.wrap(b"[1, 2]")
    with pytest.raises(UnknownDialectError):
        emcp.wrap(b'{"success": true}', "response-v3")


def test_rewrapping_a_call_tool_result_converts_its_envelope() -> None:
    failure = b'{"success": false, "error": "gone", "error_type": "not_found"}'
    upstream = {"content": [_text(failure.decode())], "isError": False}  # the kubeflow#263 bug pattern
    rep = Report("ignore")
    wire = emcp.wrap(upstream, "response-v2", report=rep)
    assert wire["isError"] is True
    assert wire["structuredContent"] == json.loads(envglot.convert(failure, to="response-v2", unsupported="ignore"))
    assert Kind.STATUS_MISMATCH in {d.kind for d in rep}
    assert emcp.wrap(upstream)["structuredContent"] == json.loads(failure)
    plain = {"content": [_text("Error executing tool find: boom")], "isError": True}
    assert emcp.wrap(plain, "result", unsupported="ignore")["structuredContent"] == {
        "success": False,
        "error": "Error executing tool find: boom",
        "error_type": "internal",  # the SDK's text for a tool that raised ([[text]] of mcp-protocol.toml)
    }
    other = {"content": [_text("the disk is full")], "isError": True}
    assert emcp.wrap(other, "result", unsupported="ignore")["structuredContent"]["error_type"] == "unknown"


def test_unwrap_prefers_structured_content() -> None:
    wire = {
        "content": [_text('{"success": true, "value": "from text"}')],
        "structuredContent": {"success": True, "value": "structured"},
    }
    assert json.loads(emcp.unwrap(wire)) == {"success": True, "value": "structured"}
    del wire["structuredContent"]
    assert json.loads(emcp.unwrap(wire)) == {"success": True, "value": "from text"}


@pytest.mark.parametrize(
    "spelling",
    [
        {"structured": "structuredContent", "error": "isError"},  # mcp 1.x
        {"structured": "structured_content", "error": "is_error"},  # mcp 2.x
    ],
    ids=["camelCase", "snake_case"],
)
def test_unwrap_reads_result_objects_by_attribute(spelling: dict[str, str]) -> None:
    envelope = {"success": False, "error": "gone", "error_type": "not_found"}
    text = SimpleNamespace(type="text", text=json.dumps(envelope))
    obj = SimpleNamespace(content=[text], **{spelling["structured"]: envelope, spelling["error"]: True})
    assert json.loads(emcp.unwrap(obj)) == envelope
    assert emcp.wrap(obj, "errorcode", unsupported="ignore")["isError"] is True
    plain = SimpleNamespace(
        content=[{"type": "text", "text": "it broke"}, SimpleNamespace(type="image", data="AA==")],
        **{spelling["structured"]: None, spelling["error"]: True},
    )
    rep = Report("ignore")
    env = emcp.unwrap_envelope(plain, report=rep)
    assert not env.ok and env.problems[0].message == "it broke"
    assert msgspec.json.decode(env.problems[0].details or b"") == {
        "content": [{"type": "image"}]
    }  # referenced, not dropped
    assert [d.kind for d in rep] == [Kind.SYNTHESIZED]


def test_a_result_object_whose_block_is_not_json_is_a_parse_error() -> None:
    odd = SimpleNamespace(type="image", data=object())
    obj = SimpleNamespace(content=[odd], structured_content=None, is_error=False)
    with pytest.raises(ParseError, match="cannot be read as JSON") as exc:
        emcp.unwrap_envelope(obj)
    assert exc.value.path == "$.content"


def test_unwrap_envelope_reports_a_status_mismatch_and_the_failure_wins() -> None:
    rep = Report("ignore")
    env = emcp.unwrap_envelope({"content": [_text('{"success": true, "value": 1}')], "isError": True}, report=rep)
    assert not env.ok
    assert [(d.kind, d.path) for d in rep] == [(Kind.STATUS_MISMATCH, "$.isError")]
    forced = emcp.unwrap_envelope({"content": [_text('{"success": true, "value": 1}')], "isError": True}, "result")
    assert not forced.ok
    assert emcp.unwrap_envelope({"content": [_text('{"success": true, "value": 1}')]}, "result").ok


@pytest.mark.parametrize(
    ("wire", "expected", "diagnostics"),
    [
        (
            {"content": [_text("3 files")]},
            Envelope(ok=True, payload=Raw(b'{"text":"3 files"}')),
            [(Kind.SYNTHESIZED, "$.content")],
        ),
        (
            {"content": [_text("line 1"), _text("line 2")], "isError": False},
            Envelope(ok=True, payload=Raw(b'{"text":"line 1\\nline 2"}')),
            [(Kind.SYNTHESIZED, "$.content")],
        ),
        (
            {
                "content": [
                    _text("Error executing tool x: boom"),
                    {"type": "image", "data": "AA==", "mimeType": "image/png"},
                ],
                "isError": True,
            },
            Envelope(
                ok=False,
                problems=(
                    envglot.Problem(
                        category="internal",
                        origin="server",
                        message="Error executing tool x: boom",
                        details=Raw(b'{"content":[{"type":"image","mimeType":"image/png"}]}'),
                    ),
                ),
            ),
            [(Kind.SYNTHESIZED, "$.content")],
        ),
        (
            {
                "content": [
                    _text("a chart"),
                    {"type": "image", "data": "AA==", "mimeType": "image/png"},
                    {"type": "resource_link", "uri": "file:///r.csv", "name": "r.csv", "mimeType": "text/csv"},
                    {"type": "resource", "resource": {"uri": "file:///n.txt", "text": "n", "mimeType": "text/plain"}},
                    {"type": "audio", "data": "AA==", "mimeType": "audio/wav"},
                ]
            },
            Envelope(
                ok=True,
                payload=Raw(
                    b'{"text":"a chart","content":[{"type":"image","mimeType":"image/png"},'
                    b'{"type":"resource_link","mimeType":"text/csv","uri":"file:///r.csv","name":"r.csv"},'
                    b'{"type":"resource","mimeType":"text/plain","uri":"file:///n.txt"},'
                    b'{"type":"audio","mimeType":"audio/wav"}]}'
                ),
            ),
            [(Kind.SYNTHESIZED, "$.content")],
        ),
        (
            {
                "content": [
                    _text(
                        "Error executing tool add: 1 validation error for addArguments\na\n  Input should be a valid "
                        "integer, unable to parse string as an integer [type=int_parsing, input_value='x']"
                    )
                ],
                "isError": True,
            },
            Envelope(
                ok=False,
                problems=(
                    envglot.Problem(
                        category="invalid_argument",
                        origin="client",
                        message="Error executing tool add: 1 validation error for addArguments\na\n  Input should be "
                        "a valid integer, unable to parse string as an integer [type=int_parsing, input_value='x']",
                    ),
                ),
            ),
            [(Kind.SYNTHESIZED, "$.content")],
        ),
        (
            {"content": [_text("[1, 2]")], "structuredContent": [1, 2]},
            Envelope(ok=True, payload=Raw(b"[1,2]")),
            [(Kind.SYNTHESIZED, "$.content")],
        ),
        (
            {"content": [], "isError": False},
            Envelope(ok=True, payload=Raw(b'{"text":""}')),
            [(Kind.SYNTHESIZED, "$.content")],
        ),
    ],
    ids=[
        "text",
        "two-texts",
        "error-text-and-image",
        "every-block-kind",
        "sdk-input-validation",
        "non-object-structured",
        "empty",
    ],
)
def test_a_result_without_envelope_is_synthesized(
    wire: dict[str, Any], expected: Envelope, diagnostics: list[tuple[Kind, str]]
) -> None:
    rep = Report("ignore")
    assert emcp.unwrap_envelope(wire, report=rep) == expected
    assert [(d.kind, d.path) for d in rep] == diagnostics
    with pytest.raises(ParseError):
        emcp.unwrap(wire)  # no envelope to hand back as it travelled
    rep = Report("ignore")
    out = emcp.unwrap(wire, "response-v2", unsupported="ignore", report=rep)
    assert out == envglot.write(expected, "response-v2", unsupported="ignore")
    assert (Kind.SYNTHESIZED, "$.content") in [(d.kind, d.path) for d in rep]


@pytest.mark.parametrize(
    "not_a_result",
    [b'{"schema_id": "dotbot-mcp-response@1"}', {"content": "text"}, b"not json", [1]],
    ids=["bare-envelope", "content-not-a-list", "not-json", "a-list"],
)
def test_unwrap_rejects_what_is_not_a_call_tool_result(not_a_result: object) -> None:
    with pytest.raises(EnvglotError):
        emcp.unwrap(not_a_result, "response-v2")
    with pytest.raises(EnvglotError):
        emcp.unwrap_envelope(not_a_result)


def _walk(node: object) -> list[str]:
    if isinstance(node, dict):
        return [k for k in node] + [k for v in node.values() for k in _walk(v)]
    if isinstance(node, list):
        return [k for v in node for k in _walk(v)]
    return []


@pytest.mark.parametrize("dialect", NAMES)
def test_output_schema_is_self_contained(dialect: str) -> None:
    schema = emcp.output_schema(dialect)
    assert schema["type"] == "object"
    keys = _walk(schema)
    assert "$ref" not in keys and "$defs" not in keys and "$id" not in keys
    assert emcp.output_schema(dialect) is not schema  # callers may edit their copy


@pytest.mark.parametrize("dialect", WRITABLE)
def test_every_written_envelope_validates_against_the_output_schema(dialect: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(emcp.output_schema(dialect))
    for path in EXAMPLES:
        doc = json.loads(envglot.convert(path.read_bytes(), to=dialect, unsupported="ignore"))
        errors = [f"{e.json_path}: {e.message}" for e in validator.iter_errors(doc)]
        assert not errors, f"{path.name}: {errors}"


_POINT = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
TYPED_PAYLOADS: dict[str, tuple[dict[str, Any], list[Any]]] = {
    "object": (_POINT, [{"n": 1}]),
    "optional-object": ({"anyOf": [_POINT, {"type": "null"}]}, [{"n": 1}, None]),
    "array": ({"type": "array", "items": {"type": "integer"}}, [[1, 2], []]),
    "null": ({"type": "null"}, [None]),
    "string-or-null": ({"type": ["string", "null"]}, ["x", None]),
    "any-object": (
        {"type": "object"},
        [{}, {"error": {"code": 3, "message": "m"}}, {"success": False}, {"content": []}],
    ),
    "referenced": ({"$ref": "#/$defs/P", "$defs": {"P": _POINT}}, [{"n": 2}]),
}


def _typed_errors(schema: dict[str, Any], dialect: str, values: list[Any]) -> list[str]:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(schema)
    errors = []
    for value in values:
        doc = json.loads(
            envglot.convert(json.dumps({"success": True, "value": value}), to=dialect, unsupported="ignore")
        )
        errors += [f"{value!r} -> {doc}: {e.json_path}: {e.message}" for e in validator.iter_errors(doc)]
    return errors


@pytest.mark.parametrize("dialect", WRITABLE)
@pytest.mark.parametrize("kind", sorted(TYPED_PAYLOADS))
def test_a_typed_success_validates_against_its_output_schema(dialect: str, kind: str) -> None:
    """What a writer makes of a typed tool's payload (an object as it is, a null as ``{}``, other
    values and resources that would not read back as themselves as ``{"value": ...}``) is what
    the published ``outputSchema`` says: an MCP client validates structured content against it."""
    schema, values = TYPED_PAYLOADS[kind]
    assert not _typed_errors(emcp.output_schema(dialect, schema), dialect, values)


@pytest.mark.parametrize("dialect", WRITABLE)
@pytest.mark.parametrize("kind", sorted(TYPED_PAYLOADS))
def test_a_typed_envelope_schema_carries_its_payload_type_to_another_dialect(dialect: str, kind: str) -> None:
    """A typed envelope's schema given as a payload schema is read back as its payload type
    (the proxy converting a typed tool's output): the same schema, up to renamed ``$defs``."""
    schema, values = TYPED_PAYLOADS[kind]
    for other in WRITABLE:
        carried = emcp.output_schema(other, emcp.output_schema(dialect, schema))
        if "$ref" not in json.dumps(schema):  # hoisting again renames definitions: compared by what they accept
            assert carried == emcp.output_schema(other, schema)
        assert not _typed_errors(carried, other, values)


# ---- the decorator, without the SDK ---------------------------------------------------


@dataclasses.dataclass
class Point:
    x: int
    y: int


DOTBOT = (Path(__file__).resolve().parents[1] / "examples" / "dotbot" / "register-error.json").read_bytes()
ERRORCODE = (Path(__file__).resolve().parents[1] / "examples" / "errorcode" / "search-ok.json").read_bytes()


def _as_result_dialect(doc: bytes) -> dict[str, Any]:
    return json.loads(envglot.convert(doc, to="result", unsupported="ignore"))


RETURNS: list[tuple[str, object, dict[str, Any], bool]] = [
    ("result-ok", Result.ok([1], message="one"), {"success": True, "value": [1], "message": "one"}, False),
    (
        "result-failure",
        Result.failure("gone", "not_found"),
        {"success": False, "error": "gone", "error_type": "not_found"},
        True,
    ),
    ("dotbot-dict", json.loads(DOTBOT), _as_result_dialect(DOTBOT), True),
    ("errorcode-str", ERRORCODE.decode(), _as_result_dialect(ERRORCODE), False),
    ("errorcode-bytes", ERRORCODE, _as_result_dialect(ERRORCODE), False),
    (
        "wire-struct",
        msgspec.json.decode(ERRORCODE, type=get_dialect("errorcode").wire),
        _as_result_dialect(ERRORCODE),
        False,
    ),
    ("canonical", Envelope(ok=True, payload=Raw(b'{"n":1}')), {"success": True, "value": {"n": 1}}, False),
    (
        "call-tool-result",
        {"content": [_text(DOTBOT.decode())], "isError": True},
        _as_result_dialect(DOTBOT),
        True,
    ),
    ("plain-list", [1, 2], {"success": True, "value": [1, 2]}, False),
    ("plain-int", 7, {"success": True, "value": 7}, False),
    ("plain-none", None, {"success": True}, False),
    ("plain-str", "hello", {"success": True, "value": "hello"}, False),
    (  # JSON object text is a document: one the core refuses is a failure, never a string payload (issue 23)
        "refused-str-brace",
        "{not json",
        {
            "success": False,
            "error": "invalid JSON: JSON is malformed: object keys must be strings (byte 1) (at $)",
            "error_type": "internal",
        },
        True,
    ),
    ("plain-dict", {"items": [1], "count": 1}, {"success": True, "value": {"items": [1], "count": 1}}, False),
    ("plain-json-text", '{"items": []}', {"success": True, "value": {"items": []}}, False),
    ("plain-dataclass", Point(1, 2), {"success": True, "value": {"x": 1, "y": 2}}, False),
]


@pytest.mark.parametrize(("name", "returned", "expected", "is_error"), RETURNS, ids=[r[0] for r in RETURNS])
def test_emits_converts_whatever_the_tool_returns(
    name: str, returned: object, expected: dict[str, Any], is_error: bool
) -> None:
    @emcp.emits("result", output="wire", unsupported="ignore")
    def tool() -> Any:
        return returned

    wire = tool()
    assert wire["structuredContent"] == expected
    assert wire["isError"] is is_error
    assert json.loads(wire["content"][0]["text"]) == expected

    @emcp.emits("result", output="envelope", unsupported="ignore")
    async def atool() -> Any:
        await asyncio.sleep(0)
        return returned

    assert asyncio.run(atool()) == expected


def test_emits_turns_exceptions_into_error_envelopes(caplog: pytest.LogCaptureFixture) -> None:
    @emcp.emits("result", output="wire")
    def tool(path: str) -> Result[str]:
        raise FileNotFoundError(f"no such file: {path}")

    with caplog.at_level(logging.WARNING, logger="envglot.mcp"):
        wire = tool("a.md")
    body = wire["structuredContent"]
    assert wire["isError"] is True
    assert (body["success"], body["exception_type"], body["exception_message"]) == (
        False,
        "FileNotFoundError",
        "no such file: a.md",
    )
    assert body["error"] == "no such file: a.md"
    assert env_inspect.category(body) == "internal"
    assert any(r.exc_info and r.exc_info[0] is FileNotFoundError for r in caplog.records)


def test_emits_answers_a_key_error_as_an_internal_failure() -> None:
    @emcp.emits("errorcode", output="wire")
    def lookup(key: str) -> dict[str, int]:
        return {}[key]  # type: ignore[return-value]

    wire = lookup("nope")
    assert wire["isError"] is True
    # errorcode's closed enum has one generic internal code: it is read back as internal
    assert env_inspect.category(wire["structuredContent"]) == "internal"


def test_emits_carries_the_non_text_blocks_of_a_returned_result() -> None:
    image = {"type": "image", "data": "AA==", "mimeType": "image/png"}

    @emcp.emits("response-v2", output="wire")
    def chart() -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "a chart"}, image], "isError": False}

    wire = chart()
    assert wire["content"][1:] == [image]
    assert wire["structuredContent"]["data"] == {
        "text": "a chart",
        "content": [{"type": "image", "mimeType": "image/png"}],
    }
    assert emcp.media_blocks(wire) == [image]
    assert emcp.wrap(wire, "result")["content"][1:] == [image]


def test_emits_answers_without_blocks_the_sdk_refuses(caplog: pytest.LogCaptureFixture) -> None:
    """An image block without its mimeType is no SDK ImageContent: the envelope is answered alone, and said."""
    pytest.importorskip("mcp")
    broken = {"type": "image", "data": "AAAA"}

    @emcp.emits("code-graph")
    def chart() -> dict[str, Any]:
        return {
            "content": [
                broken,
                {"type": "text", "text": '{"success": false, "error": "no", "error_type": "not_found"}'},
            ],
            "isError": True,
        }

    with caplog.at_level(logging.WARNING, logger="envglot.mcp"):
        res = chart()
    assert res.is_error is True and len(res.content) == 1 and res.content[0].type == "text"
    assert any("content block(s) the MCP SDK refuses" in r.getMessage() for r in caplog.records)


def test_emits_turns_a_failed_conversion_into_an_error_envelope() -> None:
    @emcp.emits("response-v2", output="wire", unsupported="raise")
    def lossy() -> Result[int]:
        return Result.ok(1, instruction="say it")  # response-v2 has no instruction field

    @emcp.emits("response-v2", output="wire", unsupported="raise")
    def unencodable() -> object:
        return {1, object()}

    for tool in (lossy, unencodable):
        wire = tool()
        assert wire["isError"] is True
        assert wire["structuredContent"]["data"]["error_type"] == "internal"
    assert "lossy" in lossy()["structuredContent"]["error"]


def test_emits_lets_base_exceptions_through() -> None:
    class Stop(BaseException):  # like KeyboardInterrupt / CancelledError
        pass

    @emcp.emits("result", output="wire")
    def tool() -> None:
        raise Stop

    with pytest.raises(Stop):
        tool()


def test_emits_keeps_the_signature() -> None:
    def search(query: str, limit: int = 10, *, exact: bool = False) -> list[str]:
        """Search the docs."""
        return [query] * limit

    wrapped = emcp.emits("response-v2", output="wire")(search)
    assert (wrapped.__name__, wrapped.__doc__, wrapped.__wrapped__) == ("search", "Search the docs.", search)  # type: ignore[attr-defined]
    sig = inspect.signature(wrapped)
    # the parameters, with string annotations (this module uses `from __future__ import annotations`) evaluated
    assert list(sig.parameters.values()) == list(inspect.signature(search, eval_str=True).parameters.values())
    assert sig.return_annotation == dict[str, Any]
    assert wrapped("q", 2)["structuredContent"]["data"] == {"value": ["q", "q"]}


def test_emits_keeps_async_functions_async() -> None:
    async def tool() -> int:
        return 1

    wrapped = emcp.emits("result", output="envelope")(tool)
    assert inspect.iscoroutinefunction(wrapped)
    assert asyncio.run(wrapped()) == {"success": True, "value": 1}


def test_emits_tool_name_and_context() -> None:
    @emcp.emits("dotbot", output="envelope", unsupported="ignore")
    def list_specs() -> list[str]:
        return []

    @emcp.emits("dotbot", output="envelope", tool="specs.list", context={"tool_version": "2.0.0"}, unsupported="ignore")
    def named() -> list[str]:
        return []

    @emcp.emits("dotbot", output="envelope", tool="ignored", context={"tool": "from-context"}, unsupported="ignore")
    def ctx_wins() -> list[str]:
        return []

    assert list_specs()["tool"] == "list_specs"
    assert (named()["tool"], named()["version"]) == ("specs.list", "2.0.0")
    assert ctx_wins()["tool"] == "from-context"


def test_emits_offers_the_call_time_to_dialects_that_need_it() -> None:
    from datetime import datetime

    def tool() -> list[str]:
        return []

    audit = emcp.emits("dotbot", output="envelope", unsupported="ignore")(tool)()["audit"]
    stamp = audit["timestamp"]
    assert stamp.endswith("Z") and datetime.fromisoformat(stamp.replace("Z", "+00:00")).year >= 2025
    assert isinstance(audit["duration_ms"], int) and audit["duration_ms"] >= 0
    graph = emcp.emits("code-graph", output="envelope", unsupported="ignore")(tool)()
    assert graph["data"]["generatedAt"].endswith("Z")
    fixed = {"timestamp": "2026-01-02T13:57:00Z", "duration_ms": 5}
    audit = emcp.emits("dotbot", output="envelope", context=fixed, unsupported="ignore")(tool)()["audit"]
    assert (audit["timestamp"], audit["duration_ms"]) == ("2026-01-02T13:57:00Z", 5)  # the caller's values win
    audit = emcp.emits("dotbot", output="envelope", timing=False, unsupported="ignore")(tool)()["audit"]
    assert (audit["timestamp"], audit["duration_ms"]) == ("1970-01-01T00:00:00Z", 0)  # the documented rule
    assert "timestamp" not in emcp.emits("response-v2", output="envelope")(tool)()["meta"]


def test_emits_from_reads_documents_as_that_dialect() -> None:
    """A legacy flat dict with an outcome flag is read as legacy-v1, guessed or declared; only a
    marker-less object is a plain payload."""
    legacy = {"found": False, "error": "Task not found: t-1"}

    @emcp.emits("result", output="wire", unsupported="ignore")
    def guessed() -> dict[str, Any]:
        return legacy

    @emcp.emits("result", output="wire", from_="legacy-v1", unsupported="ignore")
    def declared() -> dict[str, Any]:
        return legacy

    assert guessed()["isError"] is True  # an outcome flag is evidence: a legacy failure, never a success
    assert guessed()["structuredContent"] == declared()["structuredContent"]
    assert declared()["isError"] is True
    assert declared()["structuredContent"]["error"] == "Task not found: t-1"


@pytest.mark.parametrize(
    ("args", "kwargs", "error"),
    [
        (("response-v3",), {}, UnknownDialectError),
        (("legacy-v1",), {}, EnvglotError),
        (("result",), {"output": "text"}, EnvglotError),
        (("result",), {"unsupported": "loud"}, EnvglotError),
    ],
)
def test_emits_checks_its_options_when_decorating(args: tuple[str], kwargs: dict[str, str], error: type) -> None:
    with pytest.raises(error):
        emcp.emits(*args, **kwargs)  # type: ignore[arg-type]


# ---- with the MCP SDK -----------------------------------------------------------------


@pytest.fixture
def sdk() -> Any:
    return pytest.importorskip("mcp.types")


def test_call_tool_result_is_an_sdk_object(sdk: Any) -> None:
    obj = emcp.call_tool_result(DOTBOT, "response-v2", unsupported="ignore")
    assert isinstance(obj, sdk.CallToolResult)
    dumped = obj.model_dump(mode="json", by_alias=True, exclude_none=True)
    wire = emcp.wrap(DOTBOT, "response-v2", unsupported="ignore")
    assert {k: dumped[k] for k in wire} == wire
    assert emcp.unwrap(obj) == emcp.unwrap(wire)
    assert emcp.unwrap_envelope(obj) == emcp.unwrap_envelope(wire)
    again = emcp.call_tool_result(obj, "errorcode", unsupported="ignore")  # re-wrap an SDK result
    assert emcp.unwrap(again) == envglot.convert(DOTBOT, to="errorcode", unsupported="ignore")


def test_unwrap_accepts_sdk_objects_built_from_the_wire(sdk: Any) -> None:
    obj = sdk.CallToolResult.model_validate({"content": [_text("plain words")], "isError": True})
    env = emcp.unwrap_envelope(obj)
    assert not env.ok and env.problems[0].message == "plain words"


def test_emits_returns_an_sdk_result_by_default(sdk: Any) -> None:
    @emcp.emits("errorcode", unsupported="ignore")
    def tool(fail: bool) -> Result[int]:
        return Result.failure("no", "not_found") if fail else Result.ok(1)

    for fail in (False, True):
        obj = tool(fail)
        assert isinstance(obj, sdk.CallToolResult)
        dumped = obj.model_dump(mode="json", by_alias=True)
        assert dumped["isError"] is fail
        assert dumped["structuredContent"]["success"] is (not fail)
    ann = inspect.signature(tool).return_annotation
    assert ann.__origin__ is sdk.CallToolResult
    assert inspect.signature(emcp.emits("errorcode", schema=False)(tool.__wrapped__)).return_annotation is (  # type: ignore[attr-defined]
        sdk.CallToolResult
    )


def _server(name: str) -> Any:
    try:  # mcp 2.x
        from mcp.server.mcpserver import MCPServer

        return MCPServer(name)
    except ImportError:  # mcp 1.x
        from mcp.server.fastmcp import FastMCP

        return FastMCP(name)


@asynccontextmanager
async def _client(server: Any) -> AsyncIterator[Any]:
    try:  # mcp 2.x: an in-process Client
        from mcp import Client  # type: ignore[attr-defined]
    except ImportError:  # mcp 1.x
        from mcp.shared.memory import create_connected_server_and_client_session

        async with create_connected_server_and_client_session(server._mcp_server) as session:
            yield session
        return
    async with Client(server) as client:
        yield client


def _wire_of(result: Any) -> dict[str, Any]:
    out: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return out


def test_live_server_and_client(sdk: Any) -> None:
    server = _server("envglot-test")

    @server.tool()
    @emcp.emits("dotbot", context={"tool_version": "1.2.0", "source": "tests/find.py"})
    def find(name: str, limit: int = 2) -> Result[list[str]]:
        """Find things by name."""
        if name == "boom":
            raise RuntimeError("exploded")
        return Result.ok([name] * limit, message=f"{limit} found")

    @server.tool()
    @emcp.emits("response-v2", unsupported="ignore")
    async def count(text: str) -> int:
        """Count words."""
        if not text:
            return Result.failure("empty text", "validation_error")  # type: ignore[return-value]
        return len(text.split())

    @server.tool()
    @emcp.emits("result", schema=False)
    def plain() -> str:
        return "hi"

    async def scenario() -> dict[str, Any]:
        async with _client(server) as client:
            listed = await client.list_tools()
            tools = {t.name: t.model_dump(mode="json", by_alias=True) for t in listed.tools}
            calls = {
                "ok": await client.call_tool("find", {"name": "x", "limit": 3}),
                "raised": await client.call_tool("find", {"name": "boom"}),
                "async-ok": await client.call_tool("count", {"text": "a b c"}),
                "async-failure": await client.call_tool("count", {"text": ""}),
                "plain": await client.call_tool("plain", {}),
            }
        return {"tools": tools, "calls": {k: _wire_of(v) for k, v in calls.items()}}

    got = asyncio.run(scenario())
    tools, calls = got["tools"], got["calls"]

    assert tools["find"]["description"] == "Find things by name."
    assert tools["find"]["inputSchema"]["properties"].keys() == {"name", "limit"}
    assert tools["find"]["inputSchema"]["required"] == ["name"]
    # the envelope's schema, with the tool's own payload type (list[str]) on success
    assert tools["find"]["outputSchema"] == emcp.output_schema("dotbot", emcp.payload_schema(Result[list[str]]))
    assert tools["find"]["outputSchema"]["properties"]["data"]["anyOf"][0]["properties"]["value"] == {
        "type": "array",
        "items": {"type": "string"},
    }
    assert tools["count"]["outputSchema"] == emcp.output_schema("response-v2")
    assert tools["plain"].get("outputSchema") is None

    ok = calls["ok"]
    assert ok["isError"] is False
    assert ok["structuredContent"]["status"] == "ok"
    assert ok["structuredContent"]["data"] == {"value": ["x", "x", "x"]}
    assert ok["structuredContent"]["summary"] == "3 found"
    assert (ok["structuredContent"]["tool"], ok["structuredContent"]["version"]) == ("find", "1.2.0")
    assert json.loads(ok["content"][0]["text"]) == ok["structuredContent"]

    raised = calls["raised"]
    assert raised["isError"] is True
    assert raised["structuredContent"]["status"] == "error"
    assert raised["structuredContent"]["errors"][0]["message"] == "exploded"
    assert env_inspect.category(raised["structuredContent"]) == "internal"
    assert json.loads(raised["content"][0]["text"]) == raised["structuredContent"]

    assert calls["async-ok"]["isError"] is False
    assert calls["async-ok"]["structuredContent"]["data"] == {"value": 3}
    assert calls["async-failure"]["isError"] is True
    assert env_inspect.category(calls["async-failure"]["structuredContent"]) == "invalid_argument"
    assert calls["plain"]["structuredContent"] == {"success": True, "value": "hi"}

    for wire in calls.values():  # what a client-side adapter reads back
        assert emcp.unwrap_envelope(wire).ok is (not wire["isError"])


# ---- client-side decisions: envglot.inspect -------------------------------------------

EX = Path(__file__).resolve().parents[1] / "examples"
DB_ERROR = b'{"success": false, "data": null, "error": {"code": "db_error", "message": "locked", "retryable": true}}'
INSPECT_CASES: list[tuple[str, object, str | None, bool | None, int]] = [
    ("errorcode-rate-limited", (EX / "errorcode" / "rate-limited.json").read_bytes(), "resource_exhausted", True, 429),
    (
        "response-v2-validation",
        (EX / "response-v2" / "validation-error.json").read_bytes(),
        "invalid_argument",
        False,
        400,
    ),
    ("dotbot-not-found", (EX / "dotbot" / "register-error.json").read_bytes(), "not_found", False, 404),
    ("result-not-found-dict", json.loads((EX / "result" / "not-found.json").read_bytes()), "not_found", False, 404),
    ("stated-retryable-wins", DB_ERROR, "internal", True, 500),  # the internal category default is False
    ("success", (EX / "dotbot" / "standards-warning-real.json").read_bytes(), None, None, 200),
    ("canonical-failure-without-problem", Envelope(ok=False), "unknown", False, 500),
    ("canonical-success", Envelope(ok=True), None, None, 200),
]


@pytest.mark.parametrize(
    ("name", "doc", "category", "retryable", "http"), INSPECT_CASES, ids=[c[0] for c in INSPECT_CASES]
)
def test_inspect_answers_whatever_the_dialect(
    name: str, doc: object, category: str | None, retryable: bool | None, http: int
) -> None:
    assert env_inspect.category(doc) == category
    assert env_inspect.is_retryable(doc) is retryable
    assert env_inspect.http_status(doc) == http
    problem = env_inspect.primary_problem(doc)
    assert (problem is None) is (category is None)
    env = doc if isinstance(doc, Envelope) else envglot.read(doc)  # type: ignore[arg-type]
    assert env_inspect.category(env) == category  # a canonical envelope gives the same answers


def test_inspect_uses_mapping_overlays(tmp_path: Path) -> None:
    overlay = tmp_path / "words.toml"
    overlay.write_text('dialect = "result"\n\n[codes.quota_exhausted]\ncategory = "resource_exhausted"\n')
    doc = {"success": False, "error": "monthly quota used up", "error_type": "quota_exhausted"}
    assert (env_inspect.category(doc), env_inspect.is_retryable(doc)) == ("unknown", False)
    assert (env_inspect.category(doc, [overlay]), env_inspect.is_retryable(doc, [overlay])) == (
        "resource_exhausted",
        True,
    )
    assert env_inspect.http_status(doc, mappings=[overlay]) == 429


@pytest.mark.parametrize(
    ("envelope", "dialect"),
    [
        (b'{"success":true,"data":{"n":1e400}}', None),  # a number no Python float holds
        (b'{"success":true,"data":{"n":1e400}}', "dotbot"),
        (b'{"success":true,"data":{"k\xff":1}}', None),  # invalid UTF-8 carried in a payload
    ],
    ids=["1e400", "1e400-converted", "invalid-utf8"],
)
def test_wrap_refuses_what_a_dict_cannot_carry(envelope: bytes, dialect: str | None) -> None:
    """Found by the fuzz suite: msgspec.ValidationError / UnicodeDecodeError escaped wrap()."""
    with pytest.raises(ParseError):
        emcp.wrap(envelope, dialect, unsupported="ignore")


@pytest.mark.parametrize("output", ["wire", "envelope", "sdk"])
def test_emits_answers_an_error_when_the_answer_cannot_be_carried(output: str, caplog: Any) -> None:
    """Found by the fuzz suite: the final decode ran outside the tool's error handling and raised."""

    @emcp.emits("result", output=output)  # type: ignore[arg-type]
    def tool() -> bytes:
        return b'{"success":true,"data":{"n":1e400}}'

    with caplog.at_level(logging.WARNING, logger="envglot.mcp"):
        answer = tool()
    wire = answer if isinstance(answer, dict) else answer.model_dump(by_alias=True, exclude_none=True)
    envelope = wire if output == "envelope" else wire["structuredContent"]
    assert envelope["success"] is False and envelope["error_type"] == "internal"
    assert output == "envelope" or wire["isError"] is True
    assert "cannot be returned as a dict" in caplog.text


try:
    from pydantic import BaseModel
except ImportError:  # pragma: no cover - pydantic comes with the mcp extra
    BaseModel = object  # type: ignore[assignment,misc]


class City(BaseModel):
    name: str


class Weather(BaseModel):
    """A payload type with ``$defs`` (City) in its schema."""

    city: City
    celsius: float


def test_emits_above_the_tool_decorator_is_a_clear_error(sdk: Any) -> None:
    server = _server("wrong-order")
    with pytest.raises(EnvglotError, match=r"@emits\('result'\) is above the server's tool decorator") as exc:

        @emcp.emits("result")
        @server.tool()
        def search(query: str) -> dict[str, Any]:
            return {"hits": [query]}

    assert "@server.tool()\n    @emits('result')\n    def search" in str(exc.value)


def test_emits_publishes_a_model_return_type_at_the_payload_member(sdk: Any) -> None:
    validator = pytest.importorskip("jsonschema").Draft202012Validator
    server = _server("typed")

    @server.tool()
    @emcp.emits("response-v2")
    def weather(city: str) -> Weather:
        """Today's weather."""
        if city == "nowhere":
            raise KeyError(city)
        return Weather(city=City(name=city), celsius=3.5)

    async def scenario() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        async with _client(server) as client:
            schema = (await client.list_tools()).tools[0].model_dump(mode="json", by_alias=True)["outputSchema"]
            calls = [await client.call_tool("weather", {"city": c}) for c in ("Oslo", "nowhere")]
        return schema, [_wire_of(c) for c in calls]

    schema, (ok, failed) = asyncio.run(scenario())
    validator.check_schema(schema)
    assert "$ref" not in json.dumps(schema)  # self-contained (pydantic needs it inlined)
    assert schema["then"]["properties"]["data"]["properties"]["city"]["properties"]["name"] == {
        "title": "Name",
        "type": "string",
    }
    assert ok["isError"] is False and list(validator(schema).iter_errors(ok["structuredContent"])) == []
    assert failed["isError"] is True and list(validator(schema).iter_errors(failed["structuredContent"])) == []
    assert failed["structuredContent"]["data"]["error_type"] == "internal"  # a KeyError is an internal error
    bad = {**ok["structuredContent"], "data": {"city": {"name": 1}, "celsius": "hot"}}
    assert list(validator(schema).iter_errors(bad))
