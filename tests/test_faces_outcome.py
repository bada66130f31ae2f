"""One table of hostile documents through every face (issue 23, item 1): the same outcome everywhere.

Each document is a failure, or one the core refuses; each is given bare and wrapped as an
MCP CallToolResult with ``isError`` false and true, and driven through the Python API
(``convert``, ``conversion``, ``Converter``, ``answer``), the installed ``envglot convert``,
``@emits`` (a tool returning the document), the proxy's ``Rewriter.result`` and ``migrate``
(the per-record ``Migrator`` and the file engine). No face may answer a success: a refusing
face raises envglot's own error (API), exits 65 (CLI) or rejects the record (migrate); a
face that must answer (``answer``, ``@emits``, the proxy) answers a failure whose message is
the refusal, of the ``[refusal]`` category.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import envglot
import envglot.mcp as emcp
from envglot.mappings import default_mappings
from envglot.migration import Migrator
from envglot.proxy.rewrite import Rewriter

ERR = '"error": {"code": "x_rate_limited", "message": "slow down", "retryable": true}'
REFUSED = {  # the classes of document the core refuses
    "lone-surrogate": '{"success": false, "data": null, "error": {"code": "x_rate_limited", '
    '"message": "slow \\ud83d down", "retryable": true}}',  # the repro
    "nan": '{"success": false, "data": NaN, ' + ERR + "}",
    "too-deep": '{"success": false, "data": {"x": ' + "[" * 300 + "]" * 300 + "}, " + ERR + "}",
    "trailing-bytes": '{"success": false, "data": null, ' + ERR + "} x",
    "repeated-success": '{"success": false, "success": true, "data": null, ' + ERR + "}",
    "repeated-success-later-true": '{"success": false, "data": {"x": 1}, "success": true}',
    "repeated-success-escaped": '{"success": false, "data": {"x": 1}, "succ\\u0065ss": true}',
    "broken-contract": '{"success": false, "data": null, "error": {"code": 5, "message": "m", "retryable": true}}',
    "not-json": '{"success": false, error}',
    "invalid-utf8": '{"success": false, "data": null, "error": {"code": "x", "message": "\udcff", "retryable": true}}',
}  # invalid-utf8: the byte 0xff bare (surrogateescape), a lone surrogate once in a CallToolResult
FAILURES = {  # documents the core reads: each says failure somewhere, so each is a failure
    "errorcode": '{"success": false, "data": null, ' + ERR + "}",
    "dotbot-errors-beside-ok": (
        '{"schema_id":"dotbot-mcp-response@1","tool":"t","version":"1.0.0","status":"ok","summary":"s",'
        '"data":{},"warnings":[],"errors":[{"code":"NOT_FOUND","message":"no such task"}],'
        '"audit":{"timestamp":"2026-01-01T00:00:00Z","duration_ms":1,"source":"x"}}'
    ),
    "legacy-error-beside-success": '{"success": true, "data": {"n": 1}, "error": "index is stale"}',
}
WRAPS = ("bare", "isError-false", "isError-true")
CASES = [(name, doc, wrap) for name, doc in {**REFUSED, **FAILURES}.items() for wrap in WRAPS]
IDS = [f"{name}-{wrap}" for name, _, wrap in CASES]
TARGET = "response-v2"
RULE = default_mappings().refusal


def wire(doc: str, wrap: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": doc}], "isError": wrap == "isError-true"}


def data(doc: str, wrap: str) -> bytes:
    return doc.encode("utf-8", "surrogateescape") if wrap == "bare" else json.dumps(wire(doc, wrap)).encode()


def refused(name: str) -> bool:
    return name in REFUSED


def assert_failure(out: bytes, name: str) -> None:
    """A target failure envelope; a refusal's carries the refusal category."""
    doc = json.loads(out)
    assert doc["success"] is False, out
    if refused(name):
        assert doc["data"]["error_type"] == RULE.category, out  # response-v2's word for internal


@pytest.mark.parametrize(("name", "doc", "wrap"), CASES, ids=IDS)
def test_python_api(name: str, doc: str, wrap: str) -> None:
    buf = data(doc, wrap)
    conv = envglot.Converter(to=TARGET)
    for face in (
        lambda: envglot.convert(buf, to=TARGET),
        lambda: envglot.conversion(buf, to=TARGET).output,
        lambda: conv(buf),
        lambda: conv.conversion(buf).output,
    ):
        if refused(name):
            with pytest.raises(envglot.ParseError):
                face()
        else:
            assert_failure(face(), name)
    answered = envglot.answer(buf, to=TARGET)
    assert_failure(answered.output, name)
    assert (answered.source == "refused") is refused(name)
    if refused(name):
        assert answered.diagnostics[0].kind is envglot.Kind.SYNTHESIZED


@pytest.mark.parametrize(("name", "doc", "wrap"), CASES, ids=IDS)
def test_cli_convert(name: str, doc: str, wrap: str) -> None:
    exe = shutil.which("envglot")
    assert exe is not None, "the envglot command is installed with the package"
    run = subprocess.run([exe, "convert", "-t", TARGET], input=data(doc, wrap), capture_output=True, timeout=60)
    if refused(name):  # refused (exit 65); a stream the CLI splits may convert its other records
        assert run.returncode == 65 and b"Traceback" not in run.stderr, run
        assert all(json.loads(line)["success"] is False for line in run.stdout.splitlines()), run
    else:
        assert run.returncode == 0, run.stderr
        assert_failure(run.stdout, name)


@pytest.mark.parametrize(("name", "doc", "wrap"), CASES, ids=IDS)
def test_emits(name: str, doc: str, wrap: str, caplog: pytest.LogCaptureFixture) -> None:
    @emcp.emits(TARGET, output="wire")
    def tool() -> Any:
        return data(doc, wrap) if wrap == "bare" else wire(doc, wrap)

    answered = tool()
    assert answered["isError"] is True
    assert_failure(json.dumps(answered["structuredContent"]).encode(), name)
    if refused(name):  # answered by envglot.refusal, not as an exception
        assert "returned a document envglot refuses" in caplog.text
        assert "answering with an error envelope" not in caplog.text


WRAPPED = [c for c in CASES if c[2] != "bare"]


@pytest.mark.parametrize(("name", "doc", "wrap"), WRAPPED, ids=[f"{n}-{w}" for n, _, w in WRAPPED])
def test_proxy_rewriter(name: str, doc: str, wrap: str) -> None:
    out = Rewriter(TARGET).result(wire(doc, wrap), "tool")
    assert out.is_error is True and out.result["isError"] is True
    assert_failure(json.dumps(out.result["structuredContent"]).encode(), name)
    assert (out.source == "refused") is refused(name)


@pytest.mark.parametrize(("name", "doc", "wrap"), CASES, ids=IDS)
def test_migrate_record(name: str, doc: str, wrap: str) -> None:
    for migrator in (Migrator(to=TARGET), Migrator(to=TARGET, from_="legacy-v1")):
        o = migrator(data(doc, wrap))
        if o.status == "rejected":
            assert o.error and o.output is None
            continue
        assert not refused(name) or migrator.from_ is not None, o  # detected: a refused record is a reject
        assert o.output is not None
        assert json.loads(o.output)["success"] is False, (migrator, o)


def test_migrate_file_engine(tmp_path: Path) -> None:
    src = tmp_path / "in" / "records.jsonl"
    src.parent.mkdir()
    src.write_bytes(b"".join(data(doc, wrap) + b"\n" for _, doc, wrap in CASES))
    out = tmp_path / "out"
    report = envglot.migrate([src.parent], out=out, to=TARGET)
    written = [json.loads(line) for line in (out / "records.jsonl").read_bytes().splitlines() if line.strip()]
    assert written and all(doc["success"] is False for doc in written)
    assert report.rejected == sum(1 for name, _, _ in CASES if refused(name))
    assert report.converted == len(written) == len(CASES) - report.rejected


def test_proxy_answers_an_envelope_no_result_dict_can_carry_as_a_refusal() -> None:
    """A number past a float's range passes through conversion exactly, but no MCP result dict
    (Python floats) can carry it: the proxy answers the refusal, not a traceback (found by fuzz)."""
    out = Rewriter(TARGET, timing=False).result(wire('{"specs": [5], "count": -1e400}', "isError-false"), "tool")
    assert out.is_error is True and out.source == "refused"
    assert "cannot be carried in an MCP result" in out.result["structuredContent"]["error"]
