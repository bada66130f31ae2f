"""The proxy's parts on their own: configuration, protocol table, rewriting, command line."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

import envglot
from envglot.cli import main
from envglot.dialects import WRITABLE
from envglot.errors import EnvglotError, MappingError
from envglot.mappings import mappings_dir, mappings_for
from envglot.mcp import output_schema
from envglot.proxy import META_KEY, Rewriter, load_config
from envglot.proxy.protocol import TABLE_NAME, load_protocol_table, protocol_table

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


# ---- configuration -------------------------------------------------------------------


def test_config_file_with_stdio_and_http_upstreams(tmp_path: Path) -> None:
    p = tmp_path / "p.toml"
    p.write_text(
        'target = "result"\ntimeout = 9\n'
        '[[upstream]]\nprefix = "dot"\ncommand = "dotbot-mcp"\nargs = ["--stdio"]\nenv = { A = "1" }\n'
        '[[upstream]]\nprefix = "graph"\nurl = "http://127.0.0.1:8931/mcp"\ntimeout = 2\n'
    )
    cfg = load_config(p)
    assert cfg.target == "result" and cfg.timeout == 9
    assert [u.public_name("x") for u in cfg.upstream] == ["dot_x", "graph_x"]
    assert cfg.upstream[0].env == {"A": "1"} and cfg.upstream[1].timeout == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "upstream"),
        ("[[upstream]]\nprefix = 'a'\n", "exactly one of command"),
        ("[[upstream]]\nprefix = 'a'\ncommand = 'x'\nurl = 'http://h/mcp'\n", "exactly one of command"),
        ("[[upstream]]\nprefix = 'a'\nurl = 'file:///etc/passwd'\n", "http:// or https://"),
        ("[[upstream]]\nprefix = 'a_b'\ncommand = 'x'\n", "prefix 'a_b'"),
        ("[[upstream]]\nprefix = 'a'\ncommand = 'x'\n[[upstream]]\nprefix = 'a'\ncommand = 'y'\n", "used twice"),
        ("[[upstream]]\ncommand = 'x'\n[[upstream]]\nprefix = 'b'\ncommand = 'y'\n", "needs a prefix"),
        ("[[upstream]]\nprefix = 'a'\ncommand = 'x'\ncolour = 'red'\n", "colour"),
        ("[[upstream]]\nprefix = 'a'\ncommand = 3\n", "upstream[0].command"),
        ("timeout = -1\n[[upstream]]\nprefix = 'a'\ncommand = 'x'\n", "timeout must be a positive number"),
        ("timeout = nan\n[[upstream]]\nprefix = 'a'\ncommand = 'x'\n", "is not accepted (no envglot setting"),
        ("timeout = inf\n[[upstream]]\nprefix = 'a'\ncommand = 'x'\n", "is not accepted (no envglot setting"),
        ("[[upstream]]\nprefix = 'a'\ncommand = 'x'\ntimeout = nan\n", "is not accepted (no envglot setting"),
        ("max_result_bytes = 10\n[[upstream]]\nprefix = 'a'\ncommand = 'x'\n", "max_result_bytes"),
        ("[[upstream\n", "not a valid TOML file"),
    ],
)
def test_bad_config_is_a_clear_error(tmp_path: Path, text: str, message: str) -> None:
    p = tmp_path / "bad.toml"
    p.write_text(text)
    with pytest.raises(EnvglotError) as exc:
        load_config(p)
    assert message in str(exc.value) and "bad.toml" in str(exc.value)


# ---- the protocol table --------------------------------------------------------------


def test_protocol_table_decisions() -> None:
    t = protocol_table()
    assert t.for_code(-32602).answer == "protocol"  # unknown tool, invalid arguments
    assert t.for_code(-32601).answer == "protocol"
    assert (t.for_code(-32603).answer, t.for_code(-32603).category) == ("envelope", "internal")
    assert (t.for_code(-32000).category, t.for_code(-32000).retryable) == ("unavailable", True)
    assert t.for_code(12345) is t.fallback and t.fallback.category == "unknown"
    assert t.events["timeout"].category == "unavailable" and t.events["timeout"].retryable is True
    assert t.events["upstream_exited"].category == "unavailable"
    assert t.for_code(-32602).revision == "2025-11-25" and t.events["timeout"].revision == "proxy"
    sdk_text = "Error executing tool add: 2 validation errors for addArguments\na\n  Input should be a valid integer"
    hit = t.for_text(sdk_text)
    assert hit is not None and hit.category == "invalid_argument"
    raised = t.for_text("Error executing tool add: division by zero")
    assert raised is not None and raised.category == "internal"
    assert t.for_text("Error calling tool 'add': boom") is not None
    assert t.for_text("division by zero") is None


def test_docs_answer_each_event_as_the_table_says() -> None:
    """docs/proxy.md's row for each [events] row of mcp-protocol.toml has its category and retryability."""
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "proxy.md").read_text()
    for name, rule in protocol_table().events.items():
        rows = [ln for ln in doc.splitlines() if ln.startswith("|") and f"(aspect {rule.aspect}" in ln]
        assert rows, f"no row of docs/proxy.md names aspect {rule.aspect} ([events.{name}])"
        for row in rows:
            answer = row.split("|")[3].strip()
            assert re.match(rf"{rule.category}\b", answer), (name, row)
            assert ("retryable" in answer) is bool(rule.retryable), (name, row)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda s: s.replace('category = "internal"\norigin', 'category = "kaput"\norigin', 1),
            "'kaput' is not one of",
        ),
        (
            lambda s: s.replace(
                'answer = "envelope"\ncategory = "internal"', 'answer = "maybe"\ncategory = "internal"'
            ),
            "answer",
        ),
        (lambda s: s.replace('[jsonrpc."-32700"]', '[jsonrpc."parse"]', 1), "not an integer"),
        (lambda s: s.replace("[events.timeout]", "[events.nap]", 1), "missing timeout"),
        (lambda s: s + "\n[fallback.extra]\nx = 1\n", "extra"),
        (lambda s: s.replace('name = "parse error"', 'name = "parse error"\nsurprise = 1', 1), "surprise"),
        (lambda s: s.replace('revision = "sdk"', 'revision = "2027-01-01"', 1), "revision '2027-01-01'"),
        (lambda s: s.replace("pattern = '^Error", "pattern = '(^Error", 1), "not a regular expression"),
        (lambda s: s.replace('revision = "2024-11-05"\n', "", 1), "revision"),
    ],
)
def test_protocol_table_is_validated_strictly(tmp_path: Path, edit: object, message: str) -> None:
    text = (mappings_dir() / TABLE_NAME).read_text()
    p = tmp_path / TABLE_NAME
    p.write_text(edit(text))  # type: ignore[operator]
    with pytest.raises(MappingError) as exc:
        load_protocol_table(p)
    assert message in str(exc.value) and TABLE_NAME in str(exc.value)


# ---- rewriting -----------------------------------------------------------------------


def _wire(doc: object, *, is_error: bool, structured: bool = True) -> dict[str, object]:
    wire: dict[str, object] = {"content": [{"type": "text", "text": json.dumps(doc)}], "isError": is_error}
    if structured:
        wire["structuredContent"] = doc
    return wire


def test_rewrite_converts_the_envelope_and_keeps_upstream_meta() -> None:
    doc = json.loads((EXAMPLES / "errorcode" / "rate-limited.json").read_text())
    wire = {**_wire(doc, is_error=True), "_meta": {"com.example/trace": "t1"}}
    out = Rewriter("result").result(wire, "search")
    assert out.source == "errorcode" and out.is_error
    assert out.result["isError"] is True
    assert out.result["_meta"] == {"com.example/trace": "t1"}
    assert out.result["structuredContent"] == json.loads(out.result["content"][0]["text"])
    assert envglot.read(out.result["structuredContent"], "result").problems[0].category == "resource_exhausted"


def test_upstream_dev_envglot_meta_is_stripped_or_replaced() -> None:
    forged = {META_KEY: [{"kind": "forged"}], "dev.envglot/other": 1, "com.example/trace": "t1"}
    wire = {**_wire({"x": 1}, is_error=False), "_meta": forged}
    assert Rewriter("result").result(wire, "q").result["_meta"] == {"com.example/trace": "t1"}
    annotated = Rewriter("result", annotate=True).result(wire, "q").result["_meta"]
    assert set(annotated) == {"com.example/trace", META_KEY}
    assert all(d["kind"] != "forged" for d in annotated[META_KEY])


def test_transport_notes_come_first_among_the_diagnostics() -> None:
    from envglot.diagnostics import Diagnostic, Kind

    note = Diagnostic(kind=Kind.VALUE_COERCED, path="$", message="2 invalid UTF-8 sequence(s) replaced")
    out = Rewriter("result").result(_wire({"x": 1}, is_error=False), "q", notes=[note])
    assert out.diagnostics[0] == note
    plain = {"content": [{"type": "text", "text": "caf\ufffd"}], "isError": False}
    assert Rewriter("result").result(plain, "q", notes=[note]).diagnostics[0] == note


def test_output_check_never_runs_an_upstream_regex() -> None:
    from envglot.proxy.outschema import OutputCheck, without_patterns

    schema = {
        "type": "object",
        "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}, "e": {"enum": ["a"]}, "n": {"type": "integer"}},
        "patternProperties": {"^(x+)+$": {"type": "string"}},
        "additionalProperties": False,
    }
    stripped, skipped = without_patterns(schema)
    assert skipped and "pattern" not in json.dumps(stripped) and "additionalProperties" not in stripped
    assert stripped["properties"]["e"] == {"enum": ["a"]}
    check = OutputCheck(schema)
    assert check.skipped and check.unchecked is None
    assert check.problem({"s": "a" * 40 + "!", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx!": "v"}) is None  # instant
    assert "outputSchema" in (check.problem({"n": "seven"}) or "")
    assert "no structuredContent" in (check.problem(None) or "")
    named = {
        "type": "object",
        "properties": {"pattern": {"type": "string", "pattern": "^(a+)+$"}},
        "required": ["pattern"],
    }
    kept, _ = without_patterns(named)
    assert kept == {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]}
    assert "pattern" in (OutputCheck(named).problem({"other": 1}) or "")  # a property's name is not a keyword
    remote = OutputCheck({"$ref": "https://example.invalid/schema.json"})
    assert remote.problem({"a": 1}) is None and "cannot be resolved" in (remote.unchecked or "")
    deep: dict[str, object] = {}
    node = deep
    for _ in range(100):
        node["items"] = node = {}
    assert "deeper than" in (OutputCheck(deep).unchecked or "")


def test_rewrite_is_deterministic() -> None:
    doc = json.loads((EXAMPLES / "dotbot" / "structure-ok.json").read_text())
    r = Rewriter("code-graph")
    a = r.result(_wire(doc, is_error=False), "structure", started=0.0)
    b = r.result(_wire(doc, is_error=False), "structure", started=0.0)
    assert a.result == b.result


def test_structured_non_envelope_is_the_payload() -> None:
    wire = {"content": [{"type": "text", "text": "{}"}], "structuredContent": {"rows": [1, 2]}, "isError": False}
    out = Rewriter("response-v2").result(wire, "q")
    assert not out.is_error and out.result["isError"] is False
    assert out.result["structuredContent"]["data"] == {"rows": [1, 2]}


def test_is_error_never_becomes_a_success() -> None:
    wire = {"content": [{"type": "text", "text": "{}"}], "structuredContent": {"rows": [1, 2]}, "isError": True}
    out = Rewriter("response-v2", annotate=True).result(wire, "q")
    assert out.is_error and out.result["isError"] is True
    doc = out.result["structuredContent"]
    assert doc["success"] is False and doc["data"]["details"]["rows"] == [1, 2]
    assert "outcome_inferred" in [d["kind"] for d in out.result["_meta"][META_KEY]]


def test_non_text_blocks_travel_after_the_envelope_and_are_referenced() -> None:
    image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    link = {"type": "resource_link", "uri": "file:///a.csv", "name": "a.csv"}
    wire = {"content": [image, {"type": "text", "text": "hi"}, link]}
    out = Rewriter("result").result(wire, "snap")
    assert not [d for d in out.diagnostics if d.kind.value == "field_dropped"]
    refs = [
        {"type": "image", "mimeType": "image/png"},
        {"type": "resource_link", "uri": "file:///a.csv", "name": "a.csv"},
    ]
    assert out.result["structuredContent"] == {"success": True, "value": {"text": "hi", "content": refs}}
    assert out.result["content"][1:] == [image, link]  # unchanged, in order, after the envelope's text block
    assert json.loads(out.result["content"][0]["text"]) == out.result["structuredContent"]
    # an envelope that came with an image: converted, and the image still follows it
    env = {"success": True, "value": {"n": 1}}
    carried = Rewriter("response-v2").result({"content": [{"type": "text", "text": json.dumps(env)}, image]}, "t")
    assert carried.source == "result" and carried.result["content"][1:] == [image]
    # the client's unwrap keeps the references
    assert json.loads(envglot.mcp.unwrap(out.result))["value"]["content"] == refs


def test_failure_of_a_protocol_error_keeps_the_code() -> None:
    r = Rewriter("response-v2")
    out = r.failure(r.table.for_code(-32099), "weird", "t", code=-32099)
    doc = out.result["structuredContent"]
    assert out.is_error and doc["success"] is False and doc["error"] == "weird"
    # INTERNAL_ERROR reads as internal: the category (unknown) travels in the details (issue 25)
    assert doc["data"]["details"] == {"jsonrpc_code": -32099, "category": "unknown"}


def test_tool_listing_rewrite() -> None:
    tool = {"name": "search", "inputSchema": {"type": "object"}}
    out = Rewriter("dotbot").tool(tool, "gh_search")
    assert out["name"] == "gh_search" and out["inputSchema"] == tool["inputSchema"]
    assert out["outputSchema"] == output_schema("dotbot")
    enveloped = {**tool, "outputSchema": output_schema("errorcode")}  # an envelope is no payload
    assert Rewriter("dotbot").tool(enveloped, "x")["outputSchema"] == output_schema("dotbot")


WEATHER = {
    "$defs": {
        "City": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        "Payload": {"type": "string"},  # collides with the hoisted root's default name
    },
    "type": "object",
    "properties": {"city": {"$ref": "#/$defs/City"}, "celsius": {"type": "number"}, "again": {"$ref": "#"}},
    "required": ["city", "celsius"],
}


def typed_exactly(target: str) -> bool:
    """A success's payload is the tool's schema alone: the outcome member is a boolean (``if``/``then``)
    or the payload is the whole document (``anyOf`` it and the failure document)."""
    table = mappings_for(None)[target]
    ok = (table.path("ok") or "").removeprefix("$.")
    return table.path("payload") == "$" or output_schema(target)["properties"].get(ok, {}).get("type") == "boolean"


@pytest.mark.parametrize("target", WRITABLE)
def test_a_typed_tool_keeps_its_payload_schema(target: str) -> None:
    validator = pytest.importorskip("jsonschema").Draft202012Validator
    tool = {"name": "weather", "inputSchema": {"type": "object"}, "outputSchema": WEATHER}
    schema = Rewriter(target).tool(tool, "w")["outputSchema"]
    validator.check_schema(schema)
    text = json.dumps(schema)
    refs = set(re.findall(r'"\$ref": "#/\$defs/([^"/]+)', text))
    assert refs and refs <= set(schema["$defs"])  # self-contained: no dangling $ref
    assert {"City", "Payload", "Payload_2"} <= set(schema["$defs"])  # hoisted, renamed without collision
    assert schema["type"] == "object" and "$schema" in schema

    def check(doc: dict[str, object]) -> list[str]:
        wire = {"content": [{"type": "text", "text": json.dumps(doc)}], "structuredContent": doc}
        out = Rewriter(target).result(wire, "weather")
        return [e.message for e in validator(schema).iter_errors(out.result["structuredContent"])]

    assert check({"city": {"name": "Oslo"}, "celsius": 3.5}) == []
    failure = Rewriter(target).result({"content": [{"type": "text", "text": "no such city"}], "isError": True}, "w")
    assert list(validator(schema).iter_errors(failure.result["structuredContent"])) == []
    if typed_exactly(target):
        assert check({"city": {"name": 3}, "celsius": 3.5}) != []


@pytest.mark.parametrize("source", WRITABLE)
def test_an_upstream_envelope_schema_keeps_its_payload_type(source: str) -> None:
    """An upstream that answers in a dialect publishes that envelope's schema: its payload type is carried over."""
    typed = output_schema(source, WEATHER)
    pruned = json.loads(re.sub(r'"title": "[A-Za-z]+", ', "", json.dumps(typed)))  # as FastMCP lists it
    validator = pytest.importorskip("jsonschema").Draft202012Validator
    for listed in (typed, pruned):
        schema = Rewriter("result").tool({"name": "w", "outputSchema": listed}, "w")["outputSchema"]
        member = schema["then"]["properties"]["value"]
        # the payload's type alone: neither a wrong payload nor the source's failure document is one
        assert validator(schema).is_valid({"success": True, "value": {"city": {"name": "Oslo"}, "celsius": 3.5}})
        for wrong in ({"city": {"name": 3}, "celsius": 3.5}, {"error": {"code": 404}}):
            assert not validator(schema).is_valid({"success": True, "value": wrong})
        if source in ("response-v2", "dotbot"):  # object payloads: the type is as their data member holds it
            assert "City" in json.dumps(schema["$defs"]) or "City" in json.dumps(member)
        else:
            assert schema["$defs"][member["$ref"].rpartition("/")[2]] is not None
        validator.check_schema(schema)
    assert Rewriter("result").tool({"name": "w", "outputSchema": output_schema(source)}, "w")["outputSchema"] == (
        output_schema("result")
    )


def test_a_schema_that_refers_outside_itself_is_published_plain(caplog: pytest.LogCaptureFixture) -> None:
    tool = {"name": "t", "outputSchema": {"type": "object", "properties": {"a": {"$ref": "https://x/s.json"}}}}
    assert Rewriter("result").tool(tool, "t")["outputSchema"] == output_schema("result")
    assert "refers outside itself" in caplog.text


def test_read_only_target_is_refused() -> None:
    with pytest.raises(EnvglotError, match="read-only"):
        Rewriter("legacy-v1")


# ---- command line --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["proxy", "-t", "result"], "no upstream"),
        (["proxy", "--", "x"], "no target dialect"),
        (["proxy", "-t", "result", "--listen", "0.0.0.0:8000", "--", "x"], "not every interface"),
        (["proxy", "-t", "result", "--listen", "192.168.1.9:8000", "--", "x"], "loopback only"),
        (["proxy", "-t", "result", "--listen", "127.0.0.2:8000", "--", "x"], "loopback only"),
        (["proxy", "-t", "result", "--listen", "127.0.0.1:²", "--", "x"], "HOST:PORT"),
        (["proxy", "-t", "result", "--listen", "127.0.0.1:70000", "--", "x"], "HOST:PORT"),
        (["proxy", "-t", "result", "--listen", "example.com:80", "--", "x"], "IP address or localhost"),
        (["proxy", "-t", "result", "--timeout", "nan", "--", "x"], "positive number"),
        (["proxy", "-t", "result", "--timeout", "inf", "--", "x"], "positive number"),
        (["proxy", "-t", "result", "--timeout", "0", "--", "x"], "positive number"),
        (["proxy", "-t", "result", "--timeout", "-3", "--", "x"], "positive number"),
        (["proxy", "-t", "result", "--max-result-bytes", "10", "--", "x"], "max-result-bytes"),
        (["proxy", "-t", "result", "--listen-token", "t" * 20, "--", "x"], "needs --listen"),
        (["proxy", "-t", "result", "--listen", "127.0.0.1:1", "--listen-token", "short", "--", "x"], "16 visible"),
        (["proxy", "-t", "result", "--listen", "localhost", "--", "x"], "HOST:PORT"),
        (["proxy", "-t", "result", "--prefix", "a.b", "--", "x"], "prefix 'a.b'"),
        (["proxy", "-t", "nope", "--", "x"], "nope"),
    ],
)
def test_usage_errors(args: list[str], message: str) -> None:
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2, res.output
    assert message in res.output


def test_bad_config_file_exit_codes(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["proxy", "--upstreams", str(tmp_path / "missing.toml")])
    assert res.exit_code == 66
    bad = tmp_path / "bad.toml"
    bad.write_text("[[upstream]]\nprefix = 'a'\n")
    res = CliRunner().invoke(main, ["proxy", "--upstreams", str(bad)])
    assert res.exit_code == 65 and "exactly one of command" in res.output


def test_a_busy_port_is_one_line_and_exit_69() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        res = CliRunner().invoke(main, ["proxy", "-t", "result", "--listen", f"127.0.0.1:{port}", "--", "x"])
    assert res.exit_code == 69, res.output
    lines = res.output.strip().splitlines()
    assert lines == [f"error: cannot listen on 127.0.0.1:{port}: Address already in use"]


def _http_config(tmp_path: Path, headers: str = "") -> str:
    config = tmp_path / "p.toml"
    config.write_text(f'[[upstream]]\nprefix = "web"\nurl = "http://127.0.0.1:1/mcp"\n{headers}')
    return str(config)


def test_headers_for_http_upstreams_come_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = load_config(Path(_http_config(tmp_path, 'headers = { Authorization = "Bearer ${TOK}", X-Cost = "$$5" }\n')))
    monkeypatch.setenv("TOK", "s3cret")
    assert spec.upstream[0].resolved_headers() == {"Authorization": "Bearer s3cret", "X-Cost": "$5"}
    monkeypatch.delenv("TOK")
    with pytest.raises(EnvglotError, match="header Authorization: environment variable TOK is not set") as exc:
        spec.upstream[0].resolved_headers()
    assert "Bearer" not in str(exc.value)  # the value is never echoed
    res = CliRunner().invoke(
        main, ["proxy", "-t", "result", "--upstreams", _http_config(tmp_path), "--header", "X-Key=$NOPE_UNSET"]
    )
    assert res.exit_code == 2 and "environment variable NOPE_UNSET is not set" in res.output
    for bad in ("NoEquals", "Bad Name=x"):
        res = CliRunner().invoke(
            main, ["proxy", "-t", "result", "--upstreams", _http_config(tmp_path), "--header", bad]
        )
        assert res.exit_code == 2 and "--header must be NAME=VALUE" in res.output
    res = CliRunner().invoke(main, ["proxy", "-t", "result", "--header", "A=b", "--", "x"])
    assert res.exit_code == 2 and "--header is for url" in res.output
    stdio = tmp_path / "s.toml"
    stdio.write_text('[[upstream]]\ncommand = "x"\nheaders = { A = "b" }\n')
    res = CliRunner().invoke(main, ["proxy", "-t", "result", "--upstreams", str(stdio)])
    assert res.exit_code == 65 and "headers are for a url" in res.output


# ---- routing and protocol failures, with a stand-in upstream ---------------------------


class _FakeUpstream:
    """Answers like an upstream session would: a result, a JSON-RPC error, silence or a death."""

    def __init__(self, behaviour: str) -> None:
        from envglot.proxy.config import UpstreamSpec

        self.spec = UpstreamSpec(prefix="f", command="fake")
        self.timeout = 0.2
        self.behaviour = behaviour

        self.listing_failure = None

    async def session(self) -> None:
        return None

    async def settled(self) -> None:
        return None

    def timed_out(self) -> None:
        self.behaviour = "timed out"

    async def call(self, name: str, arguments: object, relay: object = None) -> object:
        import anyio

        from envglot.proxy.sdk import make_error
        from envglot.proxy.upstream import Called, UpstreamGoneError

        if self.behaviour == "slow":
            await anyio.sleep(5)
        if self.behaviour == "gone":
            raise UpstreamGoneError("upstream f closed the connection during the request", exited=True)
        if self.behaviour.startswith("jsonrpc"):
            raise make_error(int(self.behaviour.split(":")[1]), "upstream says no")
        return Called(wire={"content": [{"type": "text", "text": "ok"}], "isError": False})


def _call(behaviour: str, target: str = "response-v2") -> dict[str, object]:
    import anyio

    from envglot.proxy.config import ProxyConfig
    from envglot.proxy.server import Proxy

    proxy = Proxy(ProxyConfig(upstream=[_FakeUpstream(behaviour).spec]), Rewriter(target))
    up = _FakeUpstream(behaviour)
    proxy.upstreams = [up]  # type: ignore[list-item]
    proxy.routes = {"f_tool": (up, "tool")}  # type: ignore[dict-item]
    return anyio.run(proxy.call_tool, "f_tool", {})


@pytest.mark.parametrize(
    ("behaviour", "target", "category", "retryable"),
    [
        ("jsonrpc:-32603", "errorcode", "internal", None),
        ("jsonrpc:-32000", "errorcode", "unavailable", True),
        ("jsonrpc:-32001", "errorcode", "unavailable", True),
        ("jsonrpc:-32050", "result", "unknown", None),  # errorcode has no word for unknown
        ("slow", "errorcode", "unavailable", True),
        ("gone", "errorcode", "unavailable", True),
    ],
)
def test_protocol_failures_become_failure_envelopes(
    behaviour: str, target: str, category: str, retryable: bool | None
) -> None:
    result = _call(behaviour, target)
    assert result["isError"] is True
    problem = envglot.read(result["structuredContent"], target).problems[0]  # type: ignore[arg-type]
    assert problem.category == category
    if retryable is not None:
        assert problem.retryable is retryable


@pytest.mark.parametrize("code", [-32700, -32600, -32601, -32602])
def test_request_errors_stay_protocol_errors(code: int) -> None:
    from envglot.proxy.sdk import ProtocolError, error_code

    with pytest.raises(ProtocolError) as exc:
        _call(f"jsonrpc:{code}")
    assert error_code(exc.value) == code and "upstream says no" in str(exc.value)


def test_unknown_tool_is_invalid_params() -> None:
    import anyio

    from envglot.proxy.config import ProxyConfig
    from envglot.proxy.sdk import ProtocolError, error_code
    from envglot.proxy.server import Proxy

    proxy = Proxy(ProxyConfig(upstream=[_FakeUpstream("ok").spec]), Rewriter("result"))
    with pytest.raises(ProtocolError) as exc:
        anyio.run(proxy.call_tool, "nope", {})
    assert error_code(exc.value) == -32602


def test_stdin_lines_skip_an_overlong_message() -> None:
    import asyncio

    from envglot.proxy.pipes import LineReader

    async def lines() -> list[str]:
        r = asyncio.StreamReader(limit=16)
        r.feed_data(b'{"a":1}\n' + b"x" * 100 + b'\n{"b":2}\n{"c":')
        r.feed_eof()
        return [line async for line in LineReader(r)]

    assert asyncio.run(lines()) == ['{"a":1}\n', "\n", '{"b":2}\n', '{"c":']


# ---- the stdio transport, on a scripted process ------------------------------------------


def test_stdio_transport_reads_lines_across_chunks_and_refuses_what_it_cannot_take() -> None:
    """Lines split over writes, several in one write, an over-long one, a bad byte, a log line."""
    import sys

    import anyio

    from envglot.proxy.sdk import SessionMessage, parse_message, wire
    from envglot.proxy.stdio import REFUSED, StdioTransport

    writes = [
        b'{"jsonrpc": "2.0", "id": 1, "res',
        b'ult": {"a": 1}}\n{"jsonrpc": "2.0", "id": 2, "result": {"t": "caf\xe9"}}\nnot json, a log line\n',
        b'{"jsonrpc": "2.0", "id": 3, "result": {"big": "' + b"x" * 3000,
        b"x" * 3000 + b'"}}\n{"jsonrpc": "2.0", "id": 4, "result": [1]}\n',
    ]
    script = (
        "import sys, time\nsys.stdin.readline()\n"
        f"for w in {writes!r}:\n    sys.stdout.buffer.write(w); sys.stdout.buffer.flush(); time.sleep(0.05)\n"
    )
    transport = StdioTransport(
        sys.executable, ["-c", script], env=None, cwd=None, errlog=sys.stderr, max_bytes=4096, label="t"
    )
    got: list[dict[str, object]] = []

    async def run() -> None:
        with anyio.fail_after(20):
            async with transport.open() as (read, write):
                for rid in (3, 4):  # pending requests: the refusals below answer them
                    await write.send(SessionMessage(parse_message(f'{{"jsonrpc":"2.0","id":{rid},"method":"ping"}}')))
                async for message in read:
                    got.append(wire(message.message))
                    if len(got) == 4:
                        break

    anyio.run(run)
    assert [m["id"] for m in got] == [1, 2, 3, 4]
    assert got[0]["result"] == {"a": 1}
    assert got[1]["result"]["t"] == "caf\ufffd"  # type: ignore[index]
    assert got[1]["result"]["_meta"] == {transport.mark: {"replaced_bytes": 1}}  # type: ignore[index]
    for refused, words in [(got[2], "over 4096 bytes"), (got[3], "result is not an object")]:
        error: dict[str, object] = refused["error"]  # type: ignore[assignment]
        assert error["code"] == REFUSED and words in str(error["message"])
        assert error["data"] == {transport.mark: {"refused": error["message"]}}


@pytest.mark.parametrize("speaks_discover", [True, False])
def test_the_upstream_handshake_falls_back_to_initialize(speaks_discover: bool) -> None:
    import anyio

    from envglot.proxy.sdk import handshake, make_error

    class Session:
        def __init__(self) -> None:
            self.protocol_version: str | None = None
            self.calls: list[str] = []

        async def discover(self) -> None:
            self.calls.append("discover")
            if not speaks_discover:
                raise make_error(-32601, "Method not found")
            self.protocol_version = "2026-07-28"

        async def initialize(self) -> None:
            self.calls.append("initialize")
            self.protocol_version = "2025-11-25"

    session = Session()
    assert anyio.run(handshake, session) == ("2026-07-28" if speaks_discover else "2025-11-25")
    assert session.calls == (["discover"] if speaks_discover else ["discover", "initialize"])


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://user:secret@example.com:8443/mcp?token=abc", "https://***@example.com:8443/mcp?***"),
        ("http://127.0.0.1:9000/mcp", "http://127.0.0.1:9000/mcp"),
        ("https://token@example.com/", "https://***@example.com/"),
    ],
)
def test_logs_never_show_url_credentials(tmp_path: Path, url: str, shown: str) -> None:
    """The start-up line and every log line name a url upstream without its user info or query
    (where credentials and tokens travel)."""
    f = tmp_path / "up.toml"
    f.write_text(f'[[upstream]]\nprefix = ""\nurl = "{url}"\n')
    (spec,) = load_config(f).upstream
    assert spec.shown_url == shown
    assert "secret" not in spec.label and "abc" not in spec.label
