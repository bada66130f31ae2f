"""The declaration vocabulary real envelopes need (docs/declared-dialects.md, "Declaration
vocabulary"), on the three third-party-style declarations of ``examples/declared``:

- ``orbit``: an outcome word (``status``: ok / partial / error), ``"error": null`` on success,
  ``"warnings": []`` when there are none, warnings as plain strings;
- ``quarry``: ``"errors": []`` on success, ``retry_after`` in seconds;
- ``nimbus``: an id synthesized from a template, a nested payload, a duration in seconds.

Each converts to every writable dialect and back, passes ``envglot mappings check --examples``,
and its declared dialect is compiled like a bundled one (hub and fused paths, dumped modules).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

import envglot
from envglot.canonical import Envelope, Notice, Problem
from envglot.detect import classify
from envglot.dialect import get_dialect, writable_names
from envglot.errors import MappingError, ParseError
from envglot.mappings import mappings_for
from envglot.mcp import is_error

ROOT = Path(__file__).resolve().parents[1]
DECLARED = ROOT / "examples" / "declared"
NAMES = ("orbit", "quarry", "nimbus")
BUNDLED_WRITABLE = writable_names()
"""Computed at collection, before any declaration is loaded."""
EXAMPLES = [p for n in NAMES for p in sorted((DECLARED / n).glob("*.json"))]
_DEC = msgspec.json.Decoder()


@pytest.fixture(scope="module")
def three() -> list[str]:
    return [str(DECLARED / f"{n}.toml") for n in NAMES]


def _doc(path: Path) -> bytes:
    return path.read_bytes().strip()


def _kinds(conv: envglot.Conversion) -> set[tuple[str, str]]:
    return {(d.kind.value, d.path) for d in conv.diagnostics}


# --- every example, to every dialect and back -------------------------------------------------


@pytest.mark.parametrize("target", BUNDLED_WRITABLE)
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_examples_convert_to_every_dialect_and_back(three: list[str], example: Path, target: str) -> None:
    src = _doc(example)
    name = example.parent.name
    assert envglot.validate(src, mappings=three) == []
    there = envglot.conversion(src, to=target, mappings=three)
    assert there.source == name
    assert envglot.validate(there.output, target, mappings=three) == []
    # a dialect whose successes carry no marker (google-rpc) is read back with from_
    via = None if get_dialect(target).shape.marked_success else target
    back = envglot.conversion(there.output, to=name, from_=via, mappings=three)
    assert envglot.validate(back.output, name, mappings=three) == []
    assert classify(back.output, mappings_for(three).registry).dialect == name
    before = envglot.read(src, name, mappings=three)
    after = envglot.read(back.output, name, mappings=three)
    assert after.ok == before.ok
    assert is_error(back.output, name, mappings=three) is not before.ok
    preserved = envglot.convert(src, to=target, preserve=True, mappings=three, unsupported="ignore")
    assert envglot.convert(preserved, to=name, from_=via, preserve=True, mappings=three) == src


@pytest.mark.parametrize("name", NAMES)
def test_each_declaration_passes_mappings_check_with_its_examples(name: str) -> None:
    exe = Path(sys.executable).with_name("envglot")
    p = subprocess.run(
        [str(exe), "mappings", "check", f"examples/declared/{name}.toml", "--examples", f"examples/declared/{name}"],
        cwd=ROOT,
        capture_output=True,
    )
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout.decode().startswith(f"examples/declared/{name}.toml: ok")


# --- orbit: an outcome word, null error, string warnings ----------------------------------------


def test_an_outcome_word_reads_and_writes_success_warning_and_failure(three: list[str]) -> None:
    partial = envglot.read(_doc(DECLARED / "orbit" / "partial.json"), mappings=three)
    assert partial.ok is True
    assert [n.message for n in partial.warnings] == ["index is 2 hours stale", "query truncated"]
    assert partial.warnings[1].code == "TRUNCATED"
    failed = envglot.read(_doc(DECLARED / "orbit" / "not-found.json"), mappings=three)
    assert failed.ok is False and failed.problems[0].category == "not_found"
    ok = envglot.convert(b'{"success":true,"value":{"n":1}}', to="orbit", mappings=three, unsupported="ignore")
    assert ok == b'{"api":"orbit/1","status":"ok","result":{"n":1},"error":null,"warnings":[]}'
    warned = envglot.write(Envelope(ok=True, warnings=(Notice(message="slow"),)), to="orbit", mappings=three)
    assert _DEC.decode(warned)["status"] == "partial"
    assert _DEC.decode(warned)["warnings"] == ["slow"]  # a message alone is a plain string
    with pytest.raises(ParseError) as exc:
        envglot.read(b'{"api":"orbit/1","status":"maybe","result":null}', "orbit", mappings=three)
    assert exc.value.path == "$.status"
    with pytest.raises(ParseError):  # an error under a success word is never a success
        envglot.read(
            b'{"api":"orbit/1","status":"ok","result":null,"error":{"code":"NOT_FOUND","message":"x"}}',
            "orbit",
            mappings=three,
        )


def test_validate_knows_the_outcome_words_and_the_absent_forms(three: list[str]) -> None:
    bad = envglot.validate(b'{"api":"orbit/1","status":"maybe","result":null}', "orbit", mappings=three)
    assert any(v.path == "$.status" and "must be one of" in v.message for v in bad)
    flagged = envglot.validate(
        b'{"api":"orbit/1","status":"ok","result":null,"error":{"code":"NOT_FOUND","message":"x"}}',
        "orbit",
        mappings=three,
    )
    assert [v.path for v in flagged] == ["$.error"]
    assert envglot.validate(b'{"api":"orbit/1","status":"ok","result":null}', "orbit", mappings=three) == []
    assert is_error(
        b'{"api":"orbit/1","status":"error","result":null,"error":{"code":"X","message":"m"}}', "orbit", mappings=three
    )


# --- quarry: errors [] on success, seconds ---------------------------------------------------


def test_an_empty_errors_list_is_the_declared_success(three: list[str]) -> None:
    ok = _doc(DECLARED / "quarry" / "ok.json")
    assert envglot.validate(ok, "quarry", mappings=three) == []
    assert envglot.read(ok, mappings=three).ok is True
    assert not is_error(ok, "quarry", mappings=three)
    written = envglot.convert(b'{"success":true,"value":[1]}', to="quarry", mappings=three, unsupported="ignore")
    assert b'"errors":[]' in written
    failure = b'{"ok":false,"items":null,"errors":[],"trace_id":"t"}'  # a failure needs its errors
    assert any(v.path == "$.errors" for v in envglot.validate(failure, "quarry", mappings=three))


def test_a_retry_delay_in_seconds_is_milliseconds_everywhere_else(three: list[str]) -> None:
    src = _doc(DECLARED / "quarry" / "rate-limited.json")
    assert envglot.read(src, mappings=three).problems[0].retry_after_ms == 30000
    pj = _DEC.decode(envglot.convert(src, to="problem-json", mappings=three, unsupported="ignore"))
    assert pj["retry_after_ms"] == 30000

    def written(ms: int) -> object:
        env = Envelope(ok=False, problems=(Problem(category="unavailable", code="unavailable", retry_after_ms=ms),))
        return _DEC.decode(envglot.write(env, to="quarry", mappings=three))["errors"][0]["retry_after"]

    assert written(30000) == 30
    assert written(1500) == 1.5
    assert written(1) == 0.001
    exact = b'{"ok":false,"items":null,"errors":[{"code":"unavailable","detail":"d","retry_after":1.1}],"trace_id":"t"}'
    assert envglot.read(exact, mappings=three).problems[0].retry_after_ms == 1100
    tiny = exact.replace(b"1.1", b"0.0015")
    report = envglot.Report("ignore")
    assert envglot.read(tiny, mappings=three, report=report).problems[0].retry_after_ms == 2  # never shortened
    assert [(d.kind.value, d.path) for d in report.diagnostics] == [("value_coerced", "$.errors[0].retry_after")]


# --- nimbus: a templated id, a nested payload ----------------------------------------------------


def test_a_templated_id_is_deterministic_and_the_caller_wins(three: list[str]) -> None:
    doc = b'{"success":true,"value":{"q":"x"}}'
    one = envglot.conversion(doc, to="nimbus", mappings=three, context={"tool": "Search.Docs"})
    again = envglot.convert(doc, to="nimbus", mappings=three, context={"tool": "Search.Docs"}, unsupported="ignore")
    assert one.output == again
    call_id = _DEC.decode(one.output)["call_id"]
    assert call_id.startswith("search-docs-") and len(call_id) == len("search-docs-") + 8
    assert ("synthesized", "$.call_id") in _kinds(one)
    other = envglot.convert(
        b'{"success":true,"value":{"q":"y"}}',
        to="nimbus",
        mappings=three,
        context={"tool": "Search.Docs"},
        unsupported="ignore",
    )
    assert _DEC.decode(other)["call_id"] != call_id  # a hash of the document
    given = envglot.convert(doc, to="nimbus", mappings=three, context={"request_id": "r-1"}, unsupported="ignore")
    assert _DEC.decode(given)["call_id"] == "r-1"


def test_a_nested_payload_and_a_duration_in_seconds(three: list[str]) -> None:
    env = envglot.read(_doc(DECLARED / "nimbus" / "ok.json"), mappings=three)
    assert env.payload == msgspec.Raw(b'{"hits":2}')
    assert env.duration_ms == 250
    out = envglot.write(
        Envelope(ok=True, payload=msgspec.Raw(b"[1]"), duration_ms=1250),
        to="nimbus",
        mappings=three,
        context={"tool": "t"},
    )
    assert _DEC.decode(out)["response"] == {"data": [1], "took_s": 1.25}


# --- bad vocabulary is a clear error -----------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ('"$.error" = "null"', '"$.status" = "null"', "not the problems, warnings or payload path"),
        ('"$.error" = "null"', '"$.error" = "empty"', "needs an array path"),
        ('string_items = ["$.warnings[]"]', 'string_items = ["$.error"]', "only the warnings array"),
        ('warning = "partial"', 'warning = "ok"', "names a value twice"),
        ("[declare.absent]", '[declare.units]\n"$.error.code" = "s"\n\n[declare.absent]', "is not the duration_ms"),
    ],
)
def test_bad_vocabulary_is_a_clear_error(tmp_path: Path, old: str, new: str, words: str) -> None:
    text = (DECLARED / "orbit.toml").read_text()
    assert old in text
    bad = tmp_path / "orbit.toml"
    bad.write_text(text.replace(old, new, 1).replace('dialect = "orbit"', 'dialect = "orbit-bad"'))
    with pytest.raises(MappingError, match=words):
        mappings_for([str(bad)])


def test_a_template_with_an_unknown_placeholder_is_refused(tmp_path: Path) -> None:
    text = (DECLARED / "nimbus.toml").read_text().replace('"{slug}-{id}"', '"{slug}-{uuid}"')
    bad = tmp_path / "nimbus.toml"
    bad.write_text(text.replace('dialect = "nimbus"', 'dialect = "nimbus-bad"'))
    with pytest.raises(MappingError, match=r"unknown placeholder \{uuid\}"):
        mappings_for([str(bad)])


# --- compiled like a bundled dialect ------------------------------------------------------------


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_fused_paths_give_the_hubs_bytes(three: list[str], example: Path) -> None:
    src = _doc(example)
    for target in (*BUNDLED_WRITABLE, *NAMES):
        hub = envglot.conversion(src, to=target, mappings=three).output  # collects diagnostics: the hub
        assert envglot.convert(src, to=target, mappings=three, unsupported="ignore") == hub
        back = envglot.conversion(hub, to=example.parent.name, mappings=three).output
        assert envglot.convert(hub, to=example.parent.name, mappings=three, unsupported="ignore") == back


def test_dump_compiled_writes_a_declared_dialects_modules(tmp_path: Path) -> None:
    code = (
        "import envglot\n"
        "m = ['examples/declared/quarry.toml']\n"
        "doc = open('examples/declared/quarry/rate-limited.json', 'rb').read()\n"
        "envglot.convert(doc, to='dotbot', mappings=m, unsupported='ignore')\n"
        "envglot.conversion(doc, to='quarry', mappings=m)\n"
    )
    env = {**os.environ, "ENVGLOT_DUMP_COMPILED": str(tmp_path)}
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True)
    names = {p.name for p in tmp_path.iterdir()}
    assert {"read_quarry.py", "write_quarry.py", "quarry_to_dotbot.py"} <= names
    fused = (tmp_path / "quarry_to_dotbot.py").read_text()
    assert "def quarry_to_dotbot(buf, ctx):" in fused


def test_any_canonical_envelope_writes_a_valid_document_that_reads_back(three: list[str]) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from envelopes import canonical_envelopes

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(env=canonical_envelopes(), name=st.sampled_from(NAMES))
    def check(env: Envelope, name: str) -> None:
        out = envglot.write(env, to=name, mappings=three, unsupported="ignore")
        assert envglot.validate(out, name, mappings=three) == [], out
        assert classify(out, mappings_for(three).registry).dialect == name
        back = envglot.read(out, name, mappings=three)
        assert back.ok == env.ok
        assert is_error(out, name, mappings=three) is not env.ok
        if name == "orbit":  # the one of the three with warnings
            assert [n.message for n in back.warnings] == [n.message for n in env.warnings]
        hub = envglot.conversion(out, to="dotbot", mappings=three).output
        assert envglot.convert(out, to="dotbot", mappings=three, unsupported="ignore") == hub

    check()


def test_a_toml_declaration_sets_example_code_and_reader_kinds(tmp_path: Path) -> None:
    """``example_code`` and ``reader_kinds`` are keys of every ``[declare]`` (``envglot.declare.Common``):
    a declaration in TOML alone sets them as a bundled dialect's does."""
    from envglot.crosswalk import overlay_template
    from envglot.diagnostics import Kind

    text = (DECLARED / "quarry.toml").read_text().replace('dialect = "quarry"', 'dialect = "quarry-kinds"')
    head = "[declare]\n"
    assert head in text
    decl = tmp_path / "quarry-kinds.toml"
    decl.write_text(text.replace(head, head + 'example_code = "E_EXAMPLE"\nreader_kinds = ["code_unknown"]\n', 1))
    m = mappings_for([str(decl)])
    d = m.registry.get("quarry-kinds")
    assert (d.example_code, d.reader_kinds) == ("E_EXAMPLE", frozenset({Kind.CODE_UNKNOWN}))
    assert "[codes.E_EXAMPLE]" in overlay_template("quarry-kinds", m)
    doc = b'{"ok": false, "items": null, "errors": [{"code": "NO_SUCH_CODE", "detail": "d"}], "trace_id": "t"}'
    found = envglot.validate(doc, dialect="quarry-kinds", mappings=m)
    assert [v.path for v in found] == ["$.errors[0].code"]
    bad = tmp_path / "quarry-bad.toml"
    bad.write_text(decl.read_text().replace('"code_unknown"', '"no_such_kind"').replace("quarry-kinds", "quarry-bad"))
    with pytest.raises(MappingError, match=r"quarry-bad.toml: \[declare\] reader_kinds"):
        mappings_for([str(bad)])
