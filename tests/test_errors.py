"""Bad input, unsupported levels, determinism and caller-supplied context.

Every failure is an :class:`envglot.EnvglotError` subclass whose ``.path`` names the JSON
path and whose message says what was expected; a conversion is byte-for-byte reproducible.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import textwrap

import msgspec
import pytest

import envglot
from envglot import Kind
from envglot.dialects import NAMES, WRITABLE
from golden import cases

DOTBOT = next(c for c in cases("dotbot") if c.stem == "spec-3-register-error").data
ERRORCODE = next(c for c in cases("errorcode") if c.stem == "rate-limited-workflow").data
CODE_GRAPH = next(c for c in cases("code-graph") if c.stem == "spec-issues-error").data
V2 = next(c for c in cases("response-v2") if c.stem == "spec-validation-error").data
LOSSY = next(c for c in cases("dotbot") if c.stem == "real-multi-error").data


def _edit(data: bytes, path: tuple[str | int, ...], value: object = None, delete: bool = False) -> bytes:
    doc = msgspec.json.decode(data)
    parent = doc
    for seg in path[:-1]:
        parent = parent[seg]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return msgspec.json.encode(doc)


# ---------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("from_", [None, *NAMES])
@pytest.mark.parametrize("data", [b"", b"{", b'{"success": tru}', b'{"a": 1} trailing'])
def test_invalid_json(data: bytes, from_: str | None) -> None:
    with pytest.raises(envglot.ParseError, match="invalid JSON") as exc:
        envglot.convert(data, to="response-v2", from_=from_)
    assert exc.value.path == "$"


@pytest.mark.parametrize("from_", [None, *NAMES])
@pytest.mark.parametrize("data", [b"[1, 2]", b'"text"', b"42", b"null", b"true"])
def test_a_document_that_is_not_an_object(data: bytes, from_: str | None) -> None:
    with pytest.raises(envglot.ParseError, match="object") as exc:
        envglot.convert(data, to="dotbot", from_=from_)
    assert exc.value.path == "$"
    assert isinstance(exc.value, envglot.DetectError) is (from_ is None)


@pytest.mark.parametrize(
    ("data", "from_", "path", "expected"),
    [
        (_edit(DOTBOT, ("audit", "duration_ms"), "12"), "dotbot", "$.audit.duration_ms", "Expected `int | float`"),
        (_edit(DOTBOT, ("errors", 0, "code"), 7), "dotbot", "$.errors[0].code", "Expected `str`"),
        (_edit(DOTBOT, ("status",), "ok|warning|error"), "dotbot", "$.status", "Invalid enum value 'ok|warning|error'"),
        (_edit(ERRORCODE, ("error", "retryable"), "yes"), "errorcode", "$.error.retryable", "Expected `bool`"),
        (_edit(ERRORCODE, ("meta", "elapsed_ms"), -1.5), "errorcode", "$.meta.elapsed_ms", "Expected `int`"),
        (
            _edit(CODE_GRAPH, ("data", "meta", "approxTokens"), "150"),
            "code-graph",
            "$.data.meta.approxTokens",
            "Expected `int`",
        ),
        (
            _edit(CODE_GRAPH, ("data", "result", "error", "code"), None),
            "code-graph",
            "$.data.result.error.code",
            "expected a string",
        ),
        (_edit(V2, ("meta", "request_id"), 1), "response-v2", "$.meta.request_id", "Expected `str | null`"),
        (_edit(V2, ("data", "error_code"), ["X"]), "response-v2", "$.data.error_code", "expected a string"),
        (b'{"success": "yes", "value": 1}', "result", "$.success", "Expected `bool`"),
        (b'{"success": "yes", "count": 1}', "legacy-v1", "$.success", "must be a boolean"),
    ],
)
def test_a_wrong_type_names_its_path_and_the_expected_type(data: bytes, from_: str, path: str, expected: str) -> None:
    with pytest.raises(envglot.ParseError) as exc:
        envglot.convert(data, to="response-v2", from_=from_)
    assert exc.value.path == path
    assert expected in exc.value.message
    assert exc.value.dialect == from_
    assert path in str(exc.value)


@pytest.mark.parametrize(
    ("data", "from_", "path", "missing"),
    [
        (_edit(DOTBOT, ("audit",), delete=True), "dotbot", "$", "audit"),
        (_edit(DOTBOT, ("audit", "source"), delete=True), "dotbot", "$.audit", "source"),
        (_edit(DOTBOT, ("errors", 0, "message"), delete=True), "dotbot", "$.errors[0]", "message"),
        (_edit(ERRORCODE, ("error", "retryable"), delete=True), "errorcode", "$.error", "retryable"),
        (_edit(ERRORCODE, ("meta", "tool_version"), delete=True), "errorcode", "$.meta", "tool_version"),
        (_edit(CODE_GRAPH, ("data", "requestId"), delete=True), "code-graph", "$.data", "requestId"),
        (
            _edit(CODE_GRAPH, ("data", "result", "error", "message"), delete=True),
            "code-graph",
            "$.data.result.error",
            "message",
        ),
        (_edit(V2, ("meta",), delete=True), "response-v2", "$", "meta"),
        (b'{"value": 1}', "result", "$", "success"),
    ],
)
def test_a_missing_required_field_names_it(data: bytes, from_: str, path: str, missing: str) -> None:
    with pytest.raises(envglot.ParseError, match=f"missing required field [`']{missing}[`']") as exc:
        envglot.read(data, from_=from_)
    assert exc.value.path == path


@pytest.mark.parametrize(
    ("data", "from_", "expected"),
    [
        (ERRORCODE, "dotbot", "not a valid dotbot envelope"),
        (DOTBOT, "errorcode", "not a valid errorcode envelope"),
        (V2, "code-graph", "not a valid code-graph envelope"),
        (CODE_GRAPH, "response-v2", "not a valid response-v2 envelope"),
        (ERRORCODE, "code-graph", "not a valid code-graph envelope"),
        (DOTBOT, "response-v2", "not a valid response-v2 envelope"),
    ],
)
def test_a_from_that_does_not_match(data: bytes, from_: str, expected: str) -> None:
    with pytest.raises(envglot.ParseError, match=expected) as exc:
        envglot.convert(data, to="result", from_=from_)
    assert exc.value.dialect == from_
    assert exc.value.path is not None and exc.value.path.startswith("$")


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("respons-v2", "response-v2"),
        ("dotbt", "dotbot"),
        ("code_grap", "code-graph"),
        ("errorcodes", "errorcode"),
        ("qwerty", None),
    ],
)
@pytest.mark.parametrize("role", ["to", "from_"])
def test_an_unknown_dialect_name_suggests_the_closest(name: str, suggestion: str | None, role: str) -> None:
    kwargs = {"to": "dotbot", role: name}
    with pytest.raises(envglot.UnknownDialectError) as exc:
        envglot.convert(DOTBOT, **kwargs)
    assert exc.value.suggestion == suggestion
    assert (f"did you mean {suggestion!r}" in str(exc.value)) is (suggestion is not None)
    assert all(n in str(exc.value) for n in NAMES)
    assert isinstance(exc.value, ValueError)


@pytest.mark.parametrize(
    ("alias", "name"), [("v2", "response-v2"), ("code_graph", "code-graph"), ("adr-003", "result")]
)
def test_aliases_resolve(alias: str, name: str) -> None:
    assert envglot.conversion(DOTBOT, to=alias, unsupported="ignore").target == name


@pytest.mark.parametrize(
    ("data", "from_", "path"),
    [
        (_edit(DOTBOT, ("data",), [1, 2]), "dotbot", "$.data"),
        (_edit(DOTBOT, ("data",), "text"), "dotbot", "$.data"),
        (_edit(V2, ("data",), [1]), "response-v2", "$.data"),
        (_edit(V2, ("data",), None), "response-v2", "$.data"),
        (_edit(CODE_GRAPH, ("data", "result"), "oops"), "code-graph", "$.data.result"),
    ],
)
def test_a_non_object_payload_where_the_dialect_forbids_one(data: bytes, from_: str, path: str) -> None:
    with pytest.raises(envglot.ParseError, match="object") as exc:
        envglot.read(data, from_=from_)
    assert exc.value.path == path


def test_writing_a_read_only_dialect() -> None:
    with pytest.raises(envglot.EnvglotError, match="read-only"):
        envglot.convert(DOTBOT, to="legacy-v1")


def test_an_error_names_file_and_line_when_located() -> None:
    with pytest.raises(envglot.ParseError) as exc:
        envglot.read(_edit(DOTBOT, ("status",), "fine"), from_="dotbot")
    err = exc.value.located(source="batch.jsonl", line=7)
    assert str(err).startswith("batch.jsonl:7: ")
    assert "$.status" in str(err)


@pytest.mark.parametrize(("kwargs", "needle"), [({"unsupported": "loud"}, "unsupported"), ({"style": "tabs"}, "style")])
def test_bad_options(kwargs: dict[str, str], needle: str) -> None:
    with pytest.raises(envglot.EnvglotError, match=needle):
        envglot.convert(DOTBOT, to="result", **kwargs)


# ---------------------------------------------------------------------------
# unsupported levels
# ---------------------------------------------------------------------------


def test_ignore_is_silent_but_keeps_the_diagnostics(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="envglot")
    conv = envglot.conversion(LOSSY, to="errorcode", unsupported="ignore")
    assert conv.lossy
    assert caplog.records == []


def test_warn_logs_one_record_naming_kinds_paths_and_tool(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="envglot")
    conv = envglot.conversion(LOSSY, to="errorcode", unsupported="warn")
    records = [r for r in caplog.records if r.name == "envglot"]
    assert len(records) == 1
    (r,) = records
    assert r.levelno == logging.WARNING
    text = r.getMessage()
    assert text.startswith("dotbot -> errorcode (tool solution-health-check): ")
    for d in conv.diagnostics:
        if d.lossy:
            assert str(d.kind) in text
    assert r.diagnostics == tuple(d for d in conv.diagnostics if d.lossy)  # type: ignore[attr-defined]


def test_raise_raises_unsupported_error_with_the_lossy_diagnostics() -> None:
    expected = [d for d in envglot.conversion(LOSSY, to="errorcode", unsupported="ignore").diagnostics if d.lossy]
    with pytest.raises(envglot.UnsupportedError, match="conversion is lossy") as exc:
        envglot.convert(LOSSY, to="errorcode", unsupported="raise")
    assert exc.value.diagnostics == expected
    assert exc.value.path == expected[0].path
    assert Kind.EXTRA_PROBLEM_DROPPED in {d.kind for d in exc.value.diagnostics}


def test_raise_lets_a_lossless_conversion_through() -> None:
    conv = envglot.conversion(V2, to="response-v2", unsupported="raise")
    assert conv.diagnostics == []
    synthesized_only = envglot.conversion(b'{"success": true, "value": {"n": 1}}', to="code-graph", unsupported="raise")
    assert synthesized_only.diagnostics and not synthesized_only.lossy


def test_a_caller_report_collects_the_diagnostics() -> None:
    report = envglot.Report("ignore")
    envglot.convert(LOSSY, to="errorcode", unsupported="ignore", report=report)
    assert report.lossy and len(report) > 0


# ---------------------------------------------------------------------------
# determinism
# ---------------------------------------------------------------------------

PAIRS = [(c, dst) for c in cases() for dst in WRITABLE]


@pytest.mark.parametrize(("case", "dst"), PAIRS, ids=[f"{c}->{d}" for c, d in PAIRS])
def test_the_same_input_twice_gives_byte_identical_output(case, dst: str) -> None:
    for preserve in (False, True):
        first = envglot.conversion(case.data, from_=case.dialect, to=dst, preserve=preserve, unsupported="ignore")
        second = envglot.conversion(case.data, from_=case.dialect, to=dst, preserve=preserve, unsupported="ignore")
        assert first.output == second.output
        assert first.diagnostics == second.diagnostics


_DIGEST = textwrap.dedent(
    """
    import hashlib, sys
    sys.path.insert(0, sys.argv[1])
    import envglot
    from golden import cases
    from envglot.dialects import WRITABLE
    h = hashlib.sha256()
    for case in cases():
        for dst in WRITABLE:
            h.update(envglot.convert(case.data, from_=case.dialect, to=dst, unsupported="ignore"))
    print(h.hexdigest())
    """
)


def test_output_does_not_depend_on_the_process() -> None:
    """Hash randomization cannot change an output (synthesized request ids included)."""
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    digests = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        run = subprocess.run(
            [sys.executable, "-c", _DIGEST, tests_dir], env=env, capture_output=True, text=True, check=True
        )
        digests.add(run.stdout.strip())
    here = hashlib.sha256()
    for case in cases():
        for dst in WRITABLE:
            here.update(envglot.convert(case.data, from_=case.dialect, to=dst, unsupported="ignore"))
    assert digests == {here.hexdigest()}


# ---------------------------------------------------------------------------
# caller-supplied context
# ---------------------------------------------------------------------------

_BARE = b'{"success": true, "value": {"n": 1}}'


CALLER, RULE = "(from the caller)", "(by rule)"


@pytest.mark.parametrize(
    ("dst", "context", "expected"),
    [
        (
            "dotbot",
            {"tool": "docs.search", "tool_version": "2.1.0", "timestamp": "2026-03-01T00:00:00Z", "source": "srv.py"},
            {
                "$.tool": ("docs.search", CALLER),
                "$.version": ("2.1.0", CALLER),
                "$.audit.timestamp": ("2026-03-01T00:00:00Z", CALLER),
                "$.audit.duration_ms": (0, RULE),
                "$.audit.source": ("srv.py", CALLER),
            },
        ),
        (
            "code-graph",
            {"tool": "graph", "request_id": "req42", "workspace.root": "/srv/app"},
            {
                "$.data.tool": ("graph", CALLER),
                "$.data.requestId": ("req42", CALLER),
                "$.data.generatedAt": ("1970-01-01T00:00:00.000Z", RULE),
                "$.data.workspace.root": ("/srv/app", CALLER),
                "$.data.workspace.repoName": ("app", RULE),  # derived from the caller's root
            },
        ),
    ],
)
def test_context_values_are_used_and_reported_as_from_the_caller(dst: str, context: dict, expected: dict) -> None:
    conv = envglot.conversion(_BARE, to=dst, context=context, unsupported="ignore")
    doc = msgspec.json.decode(conv.output)
    synthesized = {d.path: d.message for d in conv.diagnostics if d.kind is Kind.SYNTHESIZED}
    for path, (value, how) in expected.items():
        node = doc
        for seg in path[2:].split("."):
            node = node[seg]
        assert node == value, path
        assert synthesized[path].endswith(how), (path, synthesized[path])


def test_context_never_overrides_what_the_source_says() -> None:
    conv = envglot.conversion(
        DOTBOT, to="code-graph", context={"tool": "other", "timestamp": "x"}, unsupported="ignore"
    )
    data = msgspec.json.decode(conv.output)["data"]
    assert data["tool"] == "solution.project.register"
    assert data["generatedAt"] == "2026-01-02T13:57:00Z"
    assert "$.data.tool" not in {d.path for d in conv.diagnostics if d.kind is Kind.SYNTHESIZED}


def test_a_converter_reuses_its_context() -> None:
    conv = envglot.Converter(to="code-graph", context={"request_id": "fixed"}, unsupported="ignore")
    assert msgspec.json.decode(conv(_BARE))["data"]["requestId"] == "fixed"
    assert conv(_BARE) == conv(_BARE)
