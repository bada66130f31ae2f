"""``--output-format json|sarif|github`` on validate, convert and migrate; ``-`` for --report/--log;
folders for detect/validate; ``migrate --check --diff``; ``convert -q``; shell completion."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import msgspec
import pytest
from click.testing import CliRunner

from envglot.cli import main
from envglot.cli.findings import CONTRACT_PREFIX, rules
from envglot.diagnostics import Kind, kind_help
from envglot.dialect import dialect_names

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
BAD_CG = "examples/code-graph/issues-error.json"
DOTBOT_ERR = "examples/dotbot/register-error.json"


def run(args: list[str], stdin: bytes | None = None, cwd: Path = ROOT) -> Any:
    """``envglot ARGS`` in this process from ``cwd`` (stdout and stderr apart)."""
    old = Path.cwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, ["--no-config", *args], input=stdin, catch_exceptions=False)
    finally:
        os.chdir(old)


# --- SARIF 2.1.0: the parts of the OASIS schema (sarif-schema-2.1.0.json) that envglot's logs use,
# with the schema's required members, value constraints and closed member lists.


def _obj(required: list[str], props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "required": required, "properties": props, "additionalProperties": False}


_TEXT = _obj(["text"], {"text": {"type": "string"}, "markdown": {"type": "string"}, "properties": {}})
_LEVEL = {"enum": ["none", "note", "warning", "error"]}
_RULE = _obj(
    ["id"],
    {
        "id": {"type": "string"},
        "deprecatedIds": {},
        "guid": {},
        "deprecatedGuids": {},
        "name": {"type": "string"},
        "deprecatedNames": {},
        "shortDescription": _TEXT,
        "fullDescription": _TEXT,
        "messageStrings": {},
        "defaultConfiguration": _obj(
            [], {"enabled": {"type": "boolean"}, "level": _LEVEL, "rank": {}, "parameters": {}, "properties": {}}
        ),
        "helpUri": {"type": "string"},
        "help": _TEXT,
        "relationships": {},
        "properties": {},
    },
)
_LOCATION = _obj(
    [],
    {
        "id": {},
        "physicalLocation": _obj(
            [],
            {
                "address": {},
                "artifactLocation": _obj(
                    [], {"uri": {"type": "string"}, "uriBaseId": {}, "index": {}, "description": {}, "properties": {}}
                ),
                "region": {
                    "type": "object",
                    "properties": {"startLine": {"type": "integer", "minimum": 1}},
                },
                "contextRegion": {},
                "properties": {},
            },
        ),
        "logicalLocations": {
            "type": "array",
            "items": _obj(
                [],
                {
                    "name": {"type": "string"},
                    "index": {},
                    "fullyQualifiedName": {"type": "string"},
                    "decoratedName": {},
                    "parentIndex": {},
                    "kind": {"type": "string"},
                    "properties": {},
                },
            ),
        },
        "message": _TEXT,
        "annotations": {},
        "relationships": {},
        "properties": {},
    },
)
_RESULT = {
    "type": "object",
    "required": ["message"],
    "properties": {
        "ruleId": {"type": "string"},
        "ruleIndex": {"type": "integer", "minimum": -1},
        "level": _LEVEL,
        "message": _TEXT,
        "locations": {"type": "array", "items": _LOCATION},
    },
}
SARIF = _obj(
    ["version", "runs"],
    {
        "$schema": {"type": "string", "format": "uri"},
        "version": {"const": "2.1.0"},
        "runs": {
            "type": ["array", "null"],
            "items": {
                "type": "object",
                "required": ["tool"],
                "properties": {
                    "tool": _obj(
                        ["driver"],
                        {
                            "driver": {
                                "type": "object",
                                "required": ["name"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "version": {"type": "string"},
                                    "informationUri": {"type": "string", "format": "uri"},
                                    "rules": {"type": "array", "items": _RULE, "uniqueItems": True},
                                },
                            },
                            "extensions": {},
                            "properties": {},
                        },
                    ),
                    "results": {"type": ["array", "null"], "items": _RESULT},
                },
            },
        },
        "inlineExternalProperties": {},
        "properties": {},
    },
)


def check_sarif(log: dict[str, Any]) -> list[dict[str, Any]]:
    """Validate a SARIF log; every result's ruleIndex names its ruleId. Returns the results."""
    jsonschema.validate(log, SARIF, format_checker=jsonschema.FormatChecker())
    (run_,) = log["runs"]
    table = run_["tool"]["driver"]["rules"]
    ids = [r["id"] for r in table]
    assert len(set(ids)) == len(ids)
    for r in run_["results"]:
        assert table[r["ruleIndex"]]["id"] == r["ruleId"]
    return run_["results"]  # type: ignore[no-any-return]


def test_the_schema_catches_what_sarif_forbids() -> None:
    with pytest.raises(jsonschema.ValidationError):
        check_sarif({"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{}]}]})
    with pytest.raises(jsonschema.ValidationError):
        check_sarif({"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x", "rules": [{"idd": "a"}]}}}]})
    with pytest.raises(jsonschema.ValidationError):
        check_sarif({"version": "2.1", "runs": []})


def test_rules_derive_from_the_catalogues() -> None:
    table = {rid: text for rid, text, _ in rules()}
    for k in Kind:  # one rule per diagnostic kind, its help the docstring under it in diagnostics.py
        assert table[k.value] == kind_help()[k] and table[k.value]
    for name in dialect_names():  # one rule per dialect's contract
        assert name in table[f"{CONTRACT_PREFIX}{name}"]
    assert table["parse_error"].startswith("The input is not valid JSON")
    assert kind_help()[Kind.FIELD_DROPPED] == "A source field has no place in the target and was left out."


def test_validate_json_lists_each_violation() -> None:
    r = run(["validate", BAD_CG, "examples/result/ok.json", "--output-format", "json"])
    assert r.exit_code == 1
    found = msgspec.json.decode(r.stdout)
    assert found == [
        {
            "file": BAD_CG,
            "line": 1,
            "path": "$.data.meta.approxTokens",
            "rule": "contract/code-graph",
            "severity": "error",
            "message": "approxTokens is 150; the emitter computes 122 "
            "(ceil(length of the compact envelope with approxTokens 0 / 4))",
        }
    ]


def test_validate_sarif_is_valid_and_locates_the_jsonl_line(tmp_path: Path) -> None:
    good = (EXAMPLES / "result" / "ok.json").read_bytes().strip()
    (tmp_path / "replies.jsonl").write_bytes(good + b"\n" + b'{"success": 1}\n' + b"not json\n")
    r = run(["validate", "replies.jsonl", "--output-format", "sarif"], cwd=tmp_path)
    assert r.exit_code == 1
    results = check_sarif(msgspec.json.decode(r.stdout))
    assert {x["locations"][0]["physicalLocation"]["region"]["startLine"] for x in results} == {2, 3}
    assert all(x["level"] == "error" and x["ruleId"].startswith(CONTRACT_PREFIX) for x in results)
    assert results[-1]["ruleId"] == "contract/json"
    assert results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "replies.jsonl"


def test_validate_github_annotations_escape_their_text() -> None:
    r = run(["validate", BAD_CG, "--output-format", "github"])
    assert r.stdout.splitlines() == [
        f"::error file={BAD_CG},line=1,title=contract/code-graph::$.data.meta.approxTokens: approxTokens is 150; "
        "the emitter computes 122 (ceil(length of the compact envelope with approxTokens 0 / 4))"
    ]
    r = run(["validate", "-", "--output-format", "github"], stdin=b'{"success": true, "data": {"a%b": 1}\n\n')
    assert "::error file=<stdin>,line=1,title=contract/json::" in r.stdout
    assert "\n" not in r.stdout.rstrip("\n")


def test_convert_formats_go_to_stdout_with_o_and_to_stderr_without(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    r = run(["convert", DOTBOT_ERR, "-t", "response-v2", "-o", str(out), "--output-format", "json"])
    found = msgspec.json.decode(r.stdout)
    assert r.exit_code == 0 and out.exists() and r.stderr == ""
    assert ("field_dropped", "$.summary", "warning") in {(f["rule"], f["path"], f["severity"]) for f in found}
    assert ("code_mapped", "$.errors[0].code", "warning") in {(f["rule"], f["path"], f["severity"]) for f in found}
    r = run(["convert", DOTBOT_ERR, "-t", "response-v2", "--output-format", "sarif"])
    assert msgspec.json.decode(r.stdout)["success"] is False  # stdout: the document, stderr: the SARIF log
    results = check_sarif(msgspec.json.decode(r.stderr))
    assert len(results) == len(found)


def test_convert_errors_and_refusals_are_findings() -> None:
    r = run(["convert", "-t", "response-v2", "--output-format", "github"], stdin=b'{"success": tru\n')
    assert r.exit_code == 65
    (annotation,) = r.stderr.splitlines()
    assert annotation.startswith("::error file=<stdin>,line=1,title=detect_error::$: invalid JSON: ")
    r = run(
        [
            *("convert", "examples/errorcode/rate-limited.json", "-t", "code-graph", "--unsupported", "raise"),
            *("--ignore", "field_dropped", "--output-format", "json"),
        ]
    )
    assert r.exit_code == 1
    rows = [(f["rule"], f["severity"]) for f in msgspec.json.decode(r.stderr)]
    assert rows == [("code_mapped", "error"), ("unsupported_error", "error")]


def test_convert_quiet_prints_no_tally_but_errors() -> None:
    r = run(["convert", DOTBOT_ERR, "-t", "response-v2", "-q"])
    assert r.exit_code == 0 and r.stderr == "" and r.stdout.startswith('{"success":false')
    r = run(["convert", "-t", "response-v2", "-q"], stdin=b"[1]\n")
    assert r.exit_code == 65 and "error:" in r.stderr
    assert run(["convert", DOTBOT_ERR, "-t", "result", "-q", "-v"]).exit_code == 2


def test_convert_log_dash_is_stdout(tmp_path: Path) -> None:
    r = run(["convert", DOTBOT_ERR, "-t", "response-v2", "-o", str(tmp_path / "o.json"), "--log", "-"])
    logged = [msgspec.json.decode(line) for line in r.stdout.splitlines()]
    assert r.exit_code == 0 and {d["kind"] for d in logged} == {"field_dropped", "code_mapped"}
    assert not (ROOT / "-").exists()
    r = run(["convert", DOTBOT_ERR, "-t", "response-v2", "--log", "-"])
    assert r.exit_code == 2 and "share stdout" in r.stderr


def _archive(tmp_path: Path) -> Path:
    src = tmp_path / "archive"
    (src / "a").mkdir(parents=True)
    shutil.copy(EXAMPLES / "result" / "ok.json", src / "a" / "ok.json")
    shutil.copy(EXAMPLES / "response-v2" / "validation-error.json", src / "v2.json")
    lines = [
        (EXAMPLES / n).read_bytes().strip() for n in ("result/not-found.json", "response-v2/validation-error.json")
    ]
    (src / "log.jsonl.gz").write_bytes(gzip.compress(b"\n".join(lines) + b"\n"))
    (src / "notes.txt").write_text("not an input")
    return src


def test_migrate_check_diff(tmp_path: Path) -> None:
    _archive(tmp_path)
    r = run(["migrate", "archive", "--check", "--diff", "-q", "-j", "1"], cwd=tmp_path)
    assert r.exit_code == 1
    lines = r.stdout.splitlines()
    assert lines[:3] == ["--- a/archive/log.jsonl.gz", "+++ b/archive/log.jsonl.gz", "@@ -1,2 +1,2 @@"]  # as read
    assert lines[3].startswith('-{"success": false, "error": "Project') and lines[5].startswith(" {")  # unchanged
    i = lines.index("--- a/archive/a/ok.json")
    assert lines[i + 1 : i + 3] == ["+++ b/archive/a/ok.json", "@@ -1 +1 @@"]
    converted = '{"success":true,"data":{"value":["docs/guide.md","docs/api.md"]},"error":null,' + (
        '"meta":{"version":"response-v2"}}'
    )
    assert lines[i + 4] == "+" + converted
    assert not any("v2.json" in line for line in lines)  # unchanged: no diff
    assert run(["migrate", "archive/v2.json", "--check", "--diff"], cwd=tmp_path).stdout == ""
    assert run(["migrate", "archive", "--out", "o", "--diff"], cwd=tmp_path).exit_code == 2


def test_migrate_report_and_log_dash_and_formats(tmp_path: Path) -> None:
    _archive(tmp_path)
    r = run(["migrate", "archive", "--check", "--report", "-", "-q", "-j", "1"], cwd=tmp_path)
    rep = msgspec.json.decode(r.stdout)
    assert rep["mode"] == "check" and rep["files_total"] == 3 and not (tmp_path / "-").exists()
    r = run(["migrate", "archive", "--out", "o", "--log", "-", "-q", "-j", "1"], cwd=tmp_path)
    assert {msgspec.json.decode(x)["kind"] for x in r.stdout.splitlines()} >= {"field_dropped"}
    r = run(["migrate", "archive", "--check", "--output-format", "sarif", "-q", "-j", "1"], cwd=tmp_path)
    results = check_sarif(msgspec.json.decode(r.stdout))
    assert {x["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for x in results} == {
        "archive/a/ok.json",
        "archive/log.jsonl.gz",
    }
    r = run(["migrate", "archive", "--check", "--report", "-", "--log", "-"], cwd=tmp_path)
    assert r.exit_code == 2 and "--report - and --log - would share stdout" in r.stderr


def test_migrate_summary_names_the_outputs_and_the_bytes(tmp_path: Path) -> None:
    _archive(tmp_path)
    r = run(["migrate", "archive", "--out", "converted", "-j", "1"], cwd=tmp_path)
    assert "  outputs: converted/ (the inputs' names and layout)" in r.stderr.splitlines()
    assert any(x.endswith("out (records, uncompressed)") for x in r.stderr.splitlines())
    r = run(["migrate", "archive", "--check"], cwd=tmp_path)
    assert "  outputs: none written (--check)" in r.stderr.splitlines()


def test_detect_and_validate_walk_folders_as_migrate_does(tmp_path: Path) -> None:
    _archive(tmp_path)
    r = run(["detect", "archive"], cwd=tmp_path)
    assert r.stdout.splitlines() == [
        "archive/log.jsonl.gz:1: result",
        "archive/log.jsonl.gz:2: response-v2",
        "archive/v2.json: response-v2",
        "archive/a/ok.json: result",
    ]
    r = run(["validate", "archive"], cwd=tmp_path)
    assert r.exit_code == 0 and "archive/a/ok.json: valid result" in r.stdout.splitlines()
    assert "notes.txt" not in r.stdout


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_shell_completion_script(shell: str) -> None:
    from test_cli_transcripts import envglot_exe

    env = {**os.environ, "_ENVGLOT_COMPLETE": f"{shell}_source"}
    p = subprocess.run([envglot_exe()], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "_ENVGLOT_COMPLETE" in p.stdout and len(p.stdout.splitlines()) > 5
