"""A dialect declared in a TOML file alone (``envglot.declared``): the ``examples/declared`` acme
envelope converts to and from every bundled writable dialect, round trips with preserve, validates,
is detected, exports a schema, and bad declarations are clear errors.

A declaration lives only in the tables loaded with it (``mappings=``, their
:class:`~envglot.Registry`): nothing is registered for the process, so the rest of the suite
sees the bundled dialects only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import envglot
from envglot.detect import classify
from envglot.dialect import get_dialect, writable_names
from envglot.errors import MappingError, ParseError, UnknownDialectError
from envglot.mappings import load_mappings, mappings_for
from envglot.mcp import is_error
from envglot.schema import json_schema

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
ACME = EXAMPLES / "declared" / "acme.toml"
ACME_DOCS = sorted((EXAMPLES / "declared" / "acme").glob("*.json"))
BUNDLED_WRITABLE = writable_names()
"""The bundled writable dialects (a declaration never joins them)."""
BUNDLED_EXAMPLES = sorted(
    p for p in EXAMPLES.glob("*/*.json") if p.parent.name != "declared" and p.parent.name in BUNDLED_WRITABLE
)
_DEC = msgspec.json.Decoder()


def _doc(path: Path) -> bytes:
    return path.read_bytes().strip()


@pytest.fixture
def acme() -> list[str]:
    """The acme declaration as a ``mappings=`` value."""
    return [str(ACME)]


def _paths(conv: envglot.Conversion) -> set[str]:
    return {d.path for d in conv.diagnostics}


# --- to and from every other dialect ---------------------------------------------------------


@pytest.mark.parametrize("target", BUNDLED_WRITABLE)
@pytest.mark.parametrize("example", ACME_DOCS, ids=lambda p: p.stem)
def test_acme_converts_to_every_dialect_and_back(acme: list[str], example: Path, target: str) -> None:
    src = _doc(example)
    there = envglot.conversion(src, to=target, mappings=acme)
    assert there.source == "acme"
    assert envglot.validate(there.output, target, mappings=acme) == []
    m = mappings_for(acme)
    carried = m[target].carried
    if "tool" not in carried:  # loss is never silent: tool_id has nowhere to go
        assert "$.tool_id" in _paths(there)
    back = envglot.conversion(there.output, from_=target, to="acme", mappings=acme)  # a success may carry no marker
    assert back.source == target
    assert envglot.validate(back.output, "acme", mappings=acme) == []
    assert classify(back.output, m.registry).dialect == "acme"
    before = envglot.read(src, "acme", mappings=acme)
    after = envglot.read(back.output, "acme", mappings=acme)
    assert after.ok == before.ok
    if [p.category for p in after.problems] != [p.category for p in before.problems]:
        assert any(d.kind.value == "code_mapped" for d in there.diagnostics)  # e.g. code-graph's 5 codes
    if before.ok:
        assert after.payload == before.payload
    else:  # a failure's payload: absent, null and {} are the same nothing in the other dialects
        assert after.payload in (None, msgspec.Raw(b"null"), msgspec.Raw(b"{}"), before.payload)


@pytest.mark.parametrize("target", BUNDLED_WRITABLE)
@pytest.mark.parametrize("example", ACME_DOCS, ids=lambda p: p.stem)
def test_acme_preserve_round_trip_is_byte_for_byte(acme: list[str], example: Path, target: str) -> None:
    src = _doc(example)
    there = envglot.convert(src, to=target, preserve=True, mappings=acme, unsupported="ignore")
    assert envglot.validate(there, target, mappings=acme) == []
    back = envglot.conversion(there, from_=target, to="acme", preserve=True, mappings=acme)
    assert back.output == src
    assert back.lossy is False, back.diagnostics


@pytest.mark.parametrize("example", BUNDLED_EXAMPLES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_bundled_example_converts_to_acme_and_back(acme: list[str], example: Path) -> None:
    src = example.read_bytes()
    there = envglot.conversion(src, to="acme", preserve=True, mappings=acme)
    assert there.source == example.parent.name
    assert envglot.validate(there.output, "acme", mappings=acme) == []
    back = envglot.convert(there.output, to=there.source, preserve=True, mappings=acme, unsupported="ignore")
    assert _DEC.decode(back) == _DEC.decode(src)
    plain = envglot.conversion(src, to="acme", mappings=acme)  # without preserve: every loss reported
    assert envglot.validate(plain.output, "acme", mappings=acme) == []


def test_acme_writes_keys_in_declaration_order_and_synthesizes_what_it_requires(acme: list[str]) -> None:
    out = envglot.conversion(b'{"success":false,"error":"boom","error_type":"not_found"}', to="acme", mappings=acme)
    assert out.output == (
        b'{"tier":"v1","tool_id":"unknown","error":{"error_code":"NOT_FOUND","message":"boom"},"data":null}'
    )
    kinds = {(d.kind.value, d.path) for d in out.diagnostics}
    assert ("synthesized", "$.tool_id") in kinds
    given = envglot.convert(
        b'{"success":true,"value":[1]}', to="acme", mappings=acme, context={"tool": "t"}, unsupported="ignore"
    )
    assert given == b'{"tier":"v1","tool_id":"t","data":[1]}'


def test_unknown_acme_keys_are_kept_for_acme_and_reported_elsewhere(acme: list[str]) -> None:
    doc = b'{"tier":"v1","tool_id":"t","data":{},"trace":{"span":"a1"}}'
    assert envglot.convert(doc, to="acme", mappings=acme) == doc
    out = envglot.conversion(doc, to="result", mappings=acme)
    assert "$.trace" in _paths(out)
    wrong_tier = b'{"tier":"v2","tool_id":"t","data":{}}'
    assert envglot.convert(wrong_tier, from_="acme", to="acme", mappings=acme) == wrong_tier
    assert "$.tier" in _paths(envglot.conversion(wrong_tier, from_="acme", to="errorcode", mappings=acme))


def test_error_on_success_is_refused_never_read_as_success(acme: list[str]) -> None:
    env = envglot.read(_doc(EXAMPLES / "declared" / "acme" / "not-found.json"), mappings=acme)
    assert env.ok is False and env.problems[0].category == "not_found"
    null_error = b'{"tier":"v1","tool_id":"t","error":null,"data":1}'
    assert envglot.read(null_error, "acme", mappings=acme).ok is True


# --- validate, detect, schema, MCP -----------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "path", "words"),
    [
        ({"tier": "v1", "data": 1}, "$.tool_id", "missing required field"),
        ({"tier": "v2", "tool_id": "t", "data": 1}, "$.tier", "must be 'v1'"),
        ({"tier": "v1", "tool_id": 3, "data": 1}, "$.tool_id", "expected a string"),
        ({"tier": "v1", "tool_id": "t", "data": 1, "error": {"message": "m"}}, "$.error.error_code", "missing"),
        (
            {"tier": "v1", "tool_id": "t", "data": 1, "error": {"error_code": "X", "message": "m", "retryable": 1}},
            "$.error.retryable",
            "expected a boolean",
        ),
        ({"tier": "v1", "tool_id": "t"}, "$.data", "missing required field"),
    ],
)
def test_validate_reports_what_the_declaration_requires(
    acme: list[str], doc: dict[str, Any], path: str, words: str
) -> None:
    found = envglot.validate(doc, "acme", mappings=acme)
    assert any(v.path == path and words in v.message for v in found), found


def test_acme_examples_validate_and_are_detected(acme: list[str]) -> None:
    for p in ACME_DOCS:
        assert envglot.validate(_doc(p), mappings=acme) == [], p
        det = envglot.api.detection(_doc(p), mappings=acme)
        assert (det.dialect, det.evidence) == ("acme", "tier")


def test_loading_a_declaration_changes_no_bundled_detection() -> None:
    corpus = sorted((ROOT / "tests" / "dialects").rglob("*.json")) + sorted(EXAMPLES.glob("*/*.json"))
    corpus = [p for p in corpus if "declared" not in p.parts]

    def detected(p: Path, registry: envglot.Registry | None = None) -> str:
        try:
            return classify(p.read_bytes(), registry).dialect
        except envglot.EnvglotError as exc:
            return type(exc).__name__

    before = {p: detected(p) for p in corpus}
    m = mappings_for([str(ACME)])
    assert {p: detected(p, m.registry) for p in corpus} == before  # acme in the registry claims none of them
    assert {p: detected(p) for p in corpus} == before
    assert envglot.detect(_doc(ACME_DOCS[0]), mappings=[str(ACME)]) == "acme"
    assert envglot.detect(_doc(ACME_DOCS[0])) == "legacy-v1"  # not registered: the bundled registry lacks it
    with pytest.raises(UnknownDialectError):
        get_dialect("acme")


def test_json_schema_is_derived_from_the_declaration(acme: list[str]) -> None:
    schema = json_schema("acme", inline=True, mappings=acme)
    assert schema["type"] == "object"
    assert schema["required"] == ["tier", "tool_id", "data"]
    assert list(schema["properties"]) == ["tier", "tool_id", "data", "request_id", "error"]
    error = schema["properties"]["error"]["anyOf"][0]
    assert error["required"] == ["error_code", "message"]


def test_mcp_is_error_follows_the_declared_outcome(acme: list[str]) -> None:
    assert is_error(_doc(EXAMPLES / "declared" / "acme" / "not-found.json"), "acme", mappings=acme) is True
    assert is_error(_doc(EXAMPLES / "declared" / "acme" / "search-ok.json"), "acme", mappings=acme) is False
    wrapped = envglot.mcp.wrap(_doc(EXAMPLES / "declared" / "acme" / "rate-limited.json"), "acme", mappings=acme)
    assert wrapped["isError"] is True


def test_a_declaration_lives_only_in_the_tables_loaded_with_it() -> None:
    stale = load_mappings()  # built before the declaration was loaded
    m = mappings_for([str(ACME)])
    assert envglot.convert(_doc(ACME_DOCS[0]), to="acme", mappings=m) == _doc(ACME_DOCS[0])
    with pytest.raises(UnknownDialectError):  # the default tables never learn it
        envglot.convert(_doc(ACME_DOCS[0]), to="acme")
    with pytest.raises(MappingError, match="no table for dialect 'acme'"):
        stale["acme"]
    assert "acme" not in load_mappings().dialects and "acme" in m.registry


def test_the_same_declaration_twice_is_fine(acme: list[str], tmp_path: Path) -> None:
    copy = tmp_path / "acme-copy.toml"
    copy.write_bytes(ACME.read_bytes())
    assert "acme" in mappings_for([str(copy)]).dialects


# --- a richer declaration: an outcome flag, an array of errors, warnings, nested members ------

BETA = """
dialect = "beta"

[declare]
description = "beta: ok/result/errors[]/notes[]/meta"
required = ["$.ok", "$.result", "$.errors[].code"]
payload = "object"
residue = "$.meta._envglot"

[declare.detect]
keys = ["ok", "result"]

[fields]
ok = "$.ok"
summary = "$.summary"
problems = "$.errors[]"
"problem.code" = "$.errors[].code"
"problem.message" = "$.errors[].msg"
"problem.path" = "$.errors[].field"
warnings = "$.notes[]"
"warning.message" = "$.notes[].text"
"warning.code" = "$.notes[].code"
payload = "$.result"
duration_ms = "$.meta.took_ms"
"pagination.cursor" = "$.meta.page.next"
"pagination.has_more" = "$.meta.page.more"

[codes.bad]
category = "invalid_argument"

[codes.oops]
category = "internal"
"""
BETA_WRITE = "".join(
    f'\n[[write]]\ncategory = "{c}"\ncode = "{"bad" if c == "invalid_argument" else "oops"}"\n'
    for c in (
        "cancelled unknown invalid_argument deadline_exceeded not_found already_exists permission_denied "
        "resource_exhausted failed_precondition aborted out_of_range unimplemented internal unavailable "
        "data_loss unauthenticated"
    ).split()
)


@pytest.fixture
def beta(tmp_path: Path) -> list[str]:
    path = tmp_path / "beta.toml"
    path.write_text(BETA + BETA_WRITE)
    return [str(path)]


BETA_DOCS = [
    b'{"ok":true,"summary":"2 found","notes":[{"text":"slow index","code":"W1"}],"result":{"n":2},'
    b'"meta":{"took_ms":12,"page":{"next":"c2","more":true}}}',
    b'{"ok":false,"errors":[{"code":"bad","msg":"x is required","field":"x"},{"code":"oops","msg":"and then"}],'
    b'"result":{}}',
]


@pytest.mark.parametrize("target", BUNDLED_WRITABLE)
@pytest.mark.parametrize("doc", BETA_DOCS, ids=["ok", "errors"])
def test_a_richer_declaration_round_trips_with_every_dialect(beta: list[str], doc: bytes, target: str) -> None:
    assert envglot.validate(doc, mappings=beta) == []
    there = envglot.convert(doc, to=target, preserve=True, mappings=beta, unsupported="ignore")
    assert envglot.validate(there, target, mappings=beta) == []
    back = envglot.conversion(there, from_=target, to="beta", preserve=True, mappings=beta)
    assert back.output == doc
    plain = envglot.conversion(doc, to=target, mappings=beta)
    again = envglot.conversion(plain.output, from_=target, to="beta", mappings=beta)
    assert envglot.validate(again.output, "beta", mappings=beta) == []


def test_a_richer_declaration_reads_every_declared_field(beta: list[str]) -> None:
    ok = envglot.read(BETA_DOCS[0], mappings=beta)
    assert (ok.ok, ok.summary, ok.duration_ms) == (True, "2 found", 12)
    assert ok.pagination == envglot.canonical.Pagination(cursor="c2", has_more=True)
    assert [(w.message, w.code) for w in ok.warnings] == [("slow index", "W1")]
    failed = envglot.read(BETA_DOCS[1], mappings=beta)
    assert [(p.category, p.code, p.path) for p in failed.problems] == [
        ("invalid_argument", "bad", "x"),
        ("internal", "oops", None),
    ]
    with pytest.raises(ParseError, match="must be absent"):
        envglot.read(b'{"ok":true,"errors":[{"code":"bad"}],"result":{}}', "beta", mappings=beta)
    found = envglot.validate(b'{"ok":false,"result":{}}', "beta", mappings=beta)
    assert [v.path for v in found] == ["$.errors"]
    assert is_error(BETA_DOCS[1], "beta", mappings=beta) is True
    assert is_error(b'{"ok":true,"errors":[],"result":{}}', "beta", mappings=beta) is False
    assert is_error(b'{"ok":false,"result":{}}', "beta", mappings=beta) is True
    with pytest.raises(ParseError, match="ok"):  # the outcome flag is always required
        envglot.read(b'{"errors":[],"result":{}}', "beta", mappings=beta)


# --- bad declarations ----------------------------------------------------------------------------


def _acme_with(old: str, new: str) -> str:
    text = ACME.read_text()
    assert old in text, old
    return text.replace(old, new, 1)


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ('dialect = "acme"', 'dialect = "errorcode"', "is a bundled dialect"),
        ('tool = "$.tool_id"', 'next_steps = "$.tool_id"', "need a Python dialect"),
        ('tool = "$.tool_id"', 'tool = "tool_id"', "must start with '$.'"),
        ('tool = "$.tool_id"', 'tool = "$.tool id"', "is not a plain key"),
        ('tool = "$.tool_id"', 'tool = "$.tool-id"', "is not a plain key"),
        ('tool = "$.tool_id"', 'tool = "$' + ".a" * 17 + '"', "deeper than 16"),
        ('dialect = "acme"', 'dialect = "Acme Co"', "a dialect name is lowercase"),
        ('request_id = "$.request_id"', 'request_id = "$.tool_id"', "share the wire path"),
        ('keys = ["tier", "tool_id"]', 'keys = ["data"]', "keys of bundled dialects"),
        ('keys = ["tier", "tool_id"]', 'keys = ["tier", "request_id"]', "'request_id' is an optional member"),
        ('"$.tier", "$.tool_id",', '"$.tier",', "'tool_id' is an optional member"),
        ('keys = ["tier", "tool_id"]', 'keys = ["tier", "error"]', "'error' is an optional member"),
        ('keys = ["tier", "tool_id"]', 'keys = ["nope"]', "no top-level member"),
        ("priority = 80", "priority = 5", "priority must be at least"),
        ('[synthesize]\ntool = "unknown"', "[synthesize]", "[synthesize] needs a rule for 'tool'"),
        ('residue = "$._envglot"', 'residue = "$.tool_id"', "residue"),
        ("native_indent = 2", 'native_indent = "two"', "$.declare.native_indent"),
        ("native_indent = 2", "colour = 2", "colour"),
        ('problems = "$.error"', 'problems = "$.request_id"', "lies inside a problems/warnings object"),
        ('[[write]]\ncategory = "unavailable"\ncode = "UNAVAILABLE"', "", "unavailable"),
        ('required = ["$.tier",', 'required = ["$.error", "$.tier",', "never required"),
        ("[synthesize]", '[types.x]\ncategory = "internal"\n\n[synthesize]', "needs a Python dialect"),
    ],
)
def test_bad_declarations_are_clear_errors(tmp_path: Path, old: str, new: str, words: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(_acme_with(old, new))
    with pytest.raises(MappingError) as info:
        mappings_for([str(path)])
    assert str(path) in str(info.value)
    assert words in str(info.value) or words == info.value.path
    with pytest.raises(UnknownDialectError):  # a declaration that failed is nowhere
        get_dialect("acme")


def test_a_different_declaration_under_a_registered_name_is_refused(acme: list[str], tmp_path: Path) -> None:
    other = tmp_path / "acme2.toml"
    other.write_text(_acme_with('"$.tier" = "v1"', '"$.tier" = "v2"'))
    with pytest.raises(MappingError, match="already declared differently"):
        mappings_for([*acme, str(other)])
    assert "acme" in mappings_for([str(other)]).registry  # on its own, in its own tables: fine


# --- the installed command ---------------------------------------------------------------------


def _exe() -> str:
    beside = Path(sys.executable).with_name("envglot")
    found = str(beside) if beside.exists() else shutil.which("envglot")
    assert found, "envglot is not installed (pip install -e .)"
    return found


def _run(*args: str | Path, stdin: bytes = b"", cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "ENVGLOT_MAPPINGS_DIR"}
    return subprocess.run([_exe(), *map(str, args)], input=stdin, capture_output=True, env=env, cwd=cwd, timeout=60)


def test_cli_converts_to_and_from_the_declared_dialect() -> None:
    ec = EXAMPLES / "errorcode" / "rate-limited.json"
    p = _run("convert", "--mappings", ACME, "-t", "acme", ec)
    assert p.returncode == 0, p.stderr
    assert _DEC.decode(p.stdout)["error"]["error_code"] == "RATE_LIMITED"
    p = _run("convert", "-t", "acme", "--mappings", ACME, "--preserve", ACME_DOCS[0], "-t", "result")
    assert p.returncode == 0, p.stderr
    back = _run("convert", "-t", "acme", "--mappings", ACME, "--preserve", stdin=p.stdout)
    assert back.stdout.strip() == _doc(ACME_DOCS[0])
    v = _run("validate", "--mappings", ACME, *ACME_DOCS)
    assert v.returncode == 0, v.stdout + v.stderr


def test_cli_lists_the_declared_dialect_when_loaded(tmp_path: Path) -> None:
    plain = _run("dialects", "--json")
    assert "acme" not in [d["name"] for d in _DEC.decode(plain.stdout)]
    p = _run("dialects", "--json", "--mappings", ACME)
    listed = {d["name"]: d for d in _DEC.decode(p.stdout)}
    assert listed["acme"]["writable"] is True
    (tmp_path / "envglot.toml").write_text(f"mappings = [{str(ACME)!r}]\n")
    p = _run("dialects", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert any(line.startswith("acme ") for line in p.stdout.decode().splitlines())


def test_cli_detect_and_schema_know_the_declared_dialect_with_its_mappings_only() -> None:
    with_it = _run("detect", "--mappings", ACME, ACME_DOCS[0])
    assert with_it.returncode == 0 and with_it.stdout.startswith(b"acme"), with_it.stdout + with_it.stderr
    without = _run("detect", ACME_DOCS[0])
    assert without.returncode == 0 and without.stdout.startswith(b"legacy-v1"), without.stdout
    schema = _run("schema", "acme", "--mappings", ACME, "--inline")
    assert schema.returncode == 0 and _DEC.decode(schema.stdout)["required"] == ["tier", "tool_id", "data"]
    assert _run("schema", "acme").returncode == 2


def test_cli_bad_declaration_exits_65(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(_acme_with('dialect = "acme"', 'dialect = "result"'))
    p = _run("convert", "--mappings", bad, "-t", "result", ACME_DOCS[0])
    assert p.returncode == 65
    assert "is a bundled dialect" in p.stderr.decode()
    assert str(bad) in p.stderr.decode()


# --- a declaration proves itself (issue 24) -----------------------------------------------------

OPTIONAL_KEY = _acme_with('"$.tier", "$.tool_id",', '"$.tier",')
"""acme with ``tool_id``, a detection key, optional: the issue's repro."""


def test_an_optional_detection_key_is_refused_where_it_used_to_pass_the_check(tmp_path: Path) -> None:
    """Before issue 24 this declaration passed ``mappings check --examples`` (its examples all carry
    ``tool_id``), yet envglot wrote ``{"tier":"v1","data":...}`` for a source without a tool and
    read that back as a legacy-v1 bare payload. Now it does not load, with a clear error."""
    path = tmp_path / "acme-optional.toml"
    path.write_text(OPTIONAL_KEY)
    with pytest.raises(MappingError) as info:
        load_mappings([str(path)])
    assert str(path) in str(info.value) and info.value.path == "$.declare.detect.keys"
    assert "would not be detected as acme" in str(info.value)
    p = _run("mappings", "check", path, "--examples", EXAMPLES / "declared" / "acme")
    assert p.returncode == 65, p.stdout + p.stderr
    err = p.stderr.decode()
    assert err.startswith(f"{path}: error: [declare.detect] key 'tool_id' is an optional member"), err
    assert "(at $.declare.detect.keys)" in err and b"ok" not in p.stdout and "Traceback" not in err
    converted = _run("convert", "--mappings", path, "-t", "acme", EXAMPLES / "result" / "ok.json")
    assert converted.returncode == 65 and "optional member" in converted.stderr.decode()


def test_the_check_converts_every_example_everywhere_and_back(acme: list[str]) -> None:
    from envglot.learn import check_examples

    m = load_mappings(acme)
    examples = [(p.name, p.read_bytes()) for p in ACME_DOCS]
    assert check_examples("acme", examples, m) == []
    # an example that is no acme document, one that breaks the contract, one whose CallToolResult
    # contradicts it: each named with its reason and JSON path
    broken = _doc(ACME_DOCS[0]).replace(b'"tool_id":"get_doc"', b'"tool_id":7')
    wrapped = msgspec.json.encode(
        {"content": [{"type": "text", "text": _doc(ACME_DOCS[0]).decode()}], "isError": False}
    )
    found = dict(
        check_examples(
            "acme",
            [("plain.json", b'{"ok": true}'), ("broken.json", broken), ("wrapped.json", wrapped)],
            m,
        )
    )
    assert found["plain.json"] == "$: detected as legacy-v1 (no dialect's markers), not acme"
    assert found["broken.json"].startswith("does not validate: $.tool_id: ")
    assert found["wrapped.json"].startswith("$.isError: isError=false but acme reads the other outcome")


def test_a_difference_is_named_by_its_json_path() -> None:
    from envglot.learn import first_difference

    assert first_difference({"a": {"b": [1, 2]}}, {"a": {"b": [1, 3]}}) == "$.a.b[1]"
    assert first_difference({"a": 1, "x y": 2}, {"a": 1}) == '$["x y"]'
    assert first_difference({"a": 1}, {"a": 1, "b": 2}) == "$.b"
    assert first_difference([1], [1, 2]) == "$"


# --- untrusted input ------------------------------------------------------------------------------

_SCALARS = st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["", "v1", "bad", "NOT_FOUND", "x"])
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=6,
)
_KEYS = [
    "tier",
    "tool_id",
    "request_id",
    "error",
    "data",
    "error_code",
    "message",
    "retryable",
    "ok",
    "result",
    "errors",
    "code",
    "msg",
    "field",
    "notes",
    "text",
    "meta",
    "took_ms",
    "page",
    "next",
    "more",
    "_envglot",
    "success",
]
ANY_DOCS = st.recursive(
    st.dictionaries(st.sampled_from(_KEYS), _JSON, max_size=6),
    lambda inner: st.dictionaries(st.sampled_from(_KEYS), inner | _JSON | st.lists(inner, max_size=2), max_size=6),
    max_leaves=4,
)


def test_any_input_converts_or_raises_envglot_error_and_outputs_validate(acme: list[str], beta: list[str]) -> None:
    both = acme + beta

    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(doc=ANY_DOCS)
    def check(doc: dict[str, Any]) -> None:
        data = msgspec.json.encode(doc)
        for src in (None, "acme", "beta"):
            for dst in ("acme", "beta", "result"):
                try:
                    out = envglot.convert(data, from_=src, to=dst, mappings=both, unsupported="ignore")
                except envglot.EnvglotError:
                    continue
                assert envglot.validate(out, dst, mappings=both) == [], (src, dst, data, out)
        envglot.validate(data, mappings=both)

    check()


@pytest.mark.parametrize("jobs", [1, 2])
def test_migrate_to_and_from_the_declared_dialect(tmp_path: Path, jobs: int) -> None:
    src = tmp_path / "in"
    src.mkdir()
    for p in ACME_DOCS:
        (src / p.name).write_bytes(p.read_bytes())
    report = envglot.migrate([src], out=tmp_path / "v2", to="response-v2", mappings=[str(ACME)], jobs=jobs)
    assert report.exit_code == 0, report
    outs = sorted((tmp_path / "v2").glob("*.json"))
    assert len(outs) == len(ACME_DOCS)
    assert all(envglot.detect(p.read_bytes()) == "response-v2" for p in outs)
    back = envglot.migrate([tmp_path / "v2"], out=tmp_path / "acme", to="acme", mappings=[str(ACME)], jobs=jobs)
    assert back.exit_code == 0, back
    for p in sorted((tmp_path / "acme").glob("*.json")):
        assert envglot.validate(p.read_bytes(), "acme", mappings=[str(ACME)]) == [], p
