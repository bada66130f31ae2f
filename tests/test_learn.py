"""``envglot learn`` (envglot.learn): declarations inferred from invented servers' responses.

Each server under ``tests/learn/<server>/`` has a ``learn/`` subset (what the declaration is
learned from) and a ``check/`` rest it must then read right: detection, outcome, message,
code category and payload. The servers differ in shape: a boolean flag (ferry), the presence
of an array of errors with object warnings and nested metadata (quay), an enum status beside
an error object and a nested payload, pretty-printed (tern), CallToolResults with HTTP-number
codes and camelCase members (dock); codes in SCREAMING_CASE, snake_case, dotted and numeric.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import shlex
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import envglot
from envglot.dialect import registered
from envglot.errors import MappingError
from envglot.learn import (
    MAX_MEMBERS,
    LearnError,
    Sample,
    check_examples,
    from_server,
    learn,
    learn_checked,
    read_samples,
)
from envglot.mappings import Mappings, load_mappings, mappings_for

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "learn"
SERVERS = ["ferry", "quay", "tern", "dock"]
_ANY = msgspec.json.Decoder()

PAYLOAD = {"ferry": ("result",), "quay": ("data",), "tern": ("reply", "body"), "dock": ("payload",)}
"""Where each server keeps its payload (what the held-out samples' payload must be read from)."""
EXPECTED: dict[str, dict[str, tuple[bool, str | None, str | None]]] = {
    "ferry": {
        "list-ok.json": (True, None, None),
        "permission.json": (False, "doc-3 is read-only for you", "unknown"),
        "timeout.json": (False, "the index did not answer in 5 s", "unknown"),
        "not-found-again.json": (False, "no document doc-77", "not_found"),
    },
    "quay": {
        "search-ok.json": (True, None, None),
        "taken.json": (False, "b2 is booked on 2026-05-01", "unknown"),
        "down.json": (False, "the harbour office is closed", "unknown"),
        "limited-again.json": (False, "30 requests per minute", "resource_exhausted"),
    },
    "tern": {
        "survey-ok.json": (True, None, None),
        "timeout.json": (False, "the counter did not answer", "unknown"),
        "missing-again.json": (False, "no species 'Sterna alba'", "not_found"),
    },
    "dock": {
        "schedule-ok.json": (True, None, None),
        "crash.json": (False, "the crane log is corrupt", "internal"),
        "bad-request.json": (False, "eta must be HH:MM", "invalid_argument"),
        "gone-again.json": (False, "no ship 'Vega'", "not_found"),
    },
}
"""Held-out sample -> (ok, message, category). A code the subset never showed reads as the
unknown category (with a code_unknown diagnostic); one it showed reads as learned."""
CATEGORIES = {
    "DOC_NOT_FOUND": "not_found",
    "RATE_LIMITED": "resource_exhausted",
    "ACCESS_DENIED": "permission_denied",
    "UPSTREAM_TIMEOUT": "deadline_exceeded",
    "invalid_berth": "invalid_argument",
    "rate_limited": "resource_exhausted",
    "berth_already_booked": "already_exists",
    "service_unavailable": "unavailable",
    "species.not_found": "not_found",
    "auth.permission_denied": "permission_denied",
    "survey.timeout": "deadline_exceeded",
    "404": "not_found",
    "429": "resource_exhausted",
    "400": "invalid_argument",
    "500": "internal",
}
"""Every code of the corpus that carries meaning in its words, and the category learn infers."""


@pytest.fixture(autouse=True)
def _at_the_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """From the repository root (sample names are relative to it)."""
    monkeypatch.chdir(ROOT)


def _load(text: str, tmp_path: Path, name: str) -> list[str]:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    m = [str(path)]
    mappings_for(m)  # it loads
    return m


def _at(doc: Any, keys: tuple[str, ...]) -> Any:
    for k in keys:
        doc = doc.get(k) if isinstance(doc, dict) else None
    return doc


# --- learned from a subset, right on the rest ---------------------------------------------------


@pytest.mark.parametrize("server", SERVERS)
def test_learned_declaration_reads_the_held_out_responses(server: str, tmp_path: Path) -> None:
    text = learn_checked(read_samples([str(CORPUS / server / "learn")]), server)
    m = _load(text, tmp_path, server)
    held_out = read_samples([str(CORPUS / server / "check")])
    assert {Path(s.name).name for s in held_out} == set(EXPECTED[server])
    for s in held_out:
        ok, message, category = EXPECTED[server][Path(s.name).name]
        assert envglot.detect(s.envelope, mappings=m) == server, s.name
        assert envglot.validate(s.envelope, server, mappings=m) == [], s.name
        conv = envglot.conversion(s.envelope, to="response-v2", mappings=m)
        assert conv.source == server
        env = envglot.read(s.envelope, server, mappings=m)
        assert env.ok is ok, s.name
        doc = _ANY.decode(s.envelope)
        if ok:
            assert env.problems == ()
            assert _ANY.decode(bytes(env.payload)) == _at(doc, PAYLOAD[server])  # type: ignore[arg-type]
        else:
            assert env.problems[0].message == message
            assert env.problems[0].category == category
            kinds = {d.kind.value for d in conv.diagnostics}
            assert ("code_unknown" in kinds) == (category == "unknown"), conv.diagnostics
        if s.is_error is not None:
            assert envglot.mcp.is_error(s.envelope, server, mappings=m) is s.is_error
    assert check_examples(server, [(s.name, s.record) for s in held_out], load_mappings(m)) == []


@pytest.mark.parametrize("server", SERVERS)
def test_every_code_gets_the_category_its_words_say_flagged_for_review(server: str) -> None:
    text = learn_checked(read_samples([str(CORPUS / server)]), server)
    rows = tomllib.loads(text)["codes"]
    seen = {c: r["category"] for c, r in rows.items() if c in CATEGORIES}
    assert seen, text
    for code, cat in seen.items():
        assert cat == CATEGORIES[code], code
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("[codes."):
            assert lines[i - 1].startswith("# ⚑ "), line  # every row is flagged for review


def test_the_rules_found_for_each_shape(tmp_path: Path) -> None:
    ferry = learn(read_samples([str(CORPUS / "ferry" / "learn")]), "ferry")
    assert 'ok = "$.ok"' in ferry and 'problems = "$.error"' in ferry and 'payload = "$.result"' in ferry
    assert 'tool = "$.op"' in ferry and 'request_id = "$.trace_id"' in ferry
    assert "$.warnings holds strings" in ferry  # string warnings: named, not declared (issue 24)
    assert "# outcome: $.ok is true in all 2 successes and false in all 2 failures; none contradicts it" in ferry
    quay = learn(read_samples([str(CORPUS / "quay" / "learn")]), "quay")
    assert 'problems = "$.errors[]"' in quay and '"problem.path" = "$.errors[].field"' in quay
    assert '"problem.retry_after_ms" = "$.errors[].retry_after_ms"' in quay
    assert 'warnings = "$.notes[]"' in quay and '"warning.severity" = "$.notes[].level"' in quay
    assert 'duration_ms = "$.meta.took_ms"' in quay and '"pagination.cursor" = "$.meta.next_cursor"' in quay
    assert "ok = " not in quay  # the outcome is the presence of the errors
    assert "# $.meta.next_cursor in 1 of 4 samples (absent from" in quay
    tern = learn(read_samples([str(CORPUS / "tern" / "learn")]), "tern")
    assert 'payload = "$.reply.body"' in tern and 'request_id = "$.reply.req_id"' in tern
    assert "native_indent = 2" in tern
    assert '$.status is "failed" on failures and "ok"/"partial" on successes: an enum outcome' in tern
    dock = learn(read_samples([str(CORPUS / "dock" / "learn")]), "dock")
    assert '"problem.code" = "$.error.errorCode"' in dock and 'request_id = "$.requestId"' in dock
    assert '"$.dockVersion" = "3"' in dock and 'keys = ["dockVersion"]' in dock


def test_the_proxy_serves_a_learned_declaration(tmp_path: Path) -> None:
    from envglot.proxy.rewrite import Rewriter

    text = learn_checked(read_samples([str(CORPUS / "dock" / "learn")]), "dock")
    m = _load(text, tmp_path, "dock")
    r = Rewriter("response-v2", options=envglot.Options(mappings=m))
    for s in read_samples([str(CORPUS / "dock" / "check")]):
        out = r.result(_ANY.decode(s.record), "ships")
        assert out.source == "dock" and out.is_error is s.is_error
        assert out.result["structuredContent"]["success"] is not s.is_error
    to_dock = Rewriter("dock", options=envglot.Options(mappings=m))
    wire = {"content": [{"type": "text", "text": "{}"}], "structuredContent": {"rows": [1]}, "isError": True}
    out = to_dock.result(wire, "q")
    assert out.is_error and out.result["structuredContent"]["dockVersion"] == "3"
    assert envglot.validate(out.result["structuredContent"], "dock", mappings=m) == []


# --- refusals -----------------------------------------------------------------------------------


def _samples(*docs: bytes) -> list[Sample]:
    return [Sample(name=f"s{i}.json", envelope=d, record=d) for i, d in enumerate(docs)]


def test_a_single_sample_is_refused() -> None:
    with pytest.raises(LearnError, match="a single sample is not enough"):
        learn(read_samples([str(CORPUS / "ferry" / "check" / "list-ok.json")]), "ferry")


def test_only_successes_are_refused_with_the_fix() -> None:
    ok = [s for s in read_samples([str(CORPUS / "quay")]) if b'"errors"' not in s.envelope]
    with pytest.raises(LearnError) as info:
        learn(ok, "quay")
    assert str(info.value) == "no failure seen; the error shape cannot be inferred — add a failing response"


def test_mixed_servers_in_one_folder_are_refused_naming_the_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for server in ("ferry", "quay"):
        for p in (CORPUS / server / "check").iterdir():
            (tmp_path / f"{server}-{p.name}").write_bytes(p.read_bytes())
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LearnError) as info:
        learn(read_samples(["."]), "mixed")
    msg = str(info.value)
    assert "2 kinds of envelope; learn one server at a time" in msg
    assert "[1] " in msg and "[2] " in msg and "ferry-list-ok.json" in msg and "quay-down.json" in msg


def test_samples_of_a_bundled_dialect_are_refused() -> None:
    with pytest.raises(LearnError, match=r"already errorcode envelopes .a bundled dialect.*no declaration is needed"):
        learn(read_samples([str(ROOT / "examples" / "errorcode")]), "x")
    with pytest.raises(LearnError, match=r"2 kinds of envelope.*errorcode's markers"):
        learn(read_samples([str(ROOT / "examples" / "errorcode"), str(CORPUS / "dock" / "check")]), "x")


@pytest.mark.parametrize(
    ("docs", "words"),
    [
        (
            (b'{"k":"1","ok":true,"out":{}}', b'{"k":"1","ok":false,"err":"boom"}'),
            "is a string; a declared error is an object with a code",
        ),
        (
            (b'{"k":"1","out":{}}', b'{"k":"1","error":{"code":404,"message":"m"}}'),
            "holds integer codes; a declaration reads string codes",
        ),
        (
            (b'{"k":"1","out":{}}', b'{"k":"1","error":{"what":"x"}}'),
            "has no member that reads as a code",
        ),
        (
            (b'{"data":{},"meta":{}}', b'{"error":{"code":"X"},"meta":{}}'),
            "no member present in every sample sets these envelopes apart",
        ),
        (
            (b'{"k":"1","ok":true,"out":{}}', b'{"k":"1","ok":false,"why":"boom"}'),
            "$.ok varies, but no failure carries an error object with a code",
        ),
    ],
)
def test_what_a_declaration_cannot_say_is_refused_by_name(docs: tuple[bytes, ...], words: str) -> None:
    with pytest.raises(LearnError, match=re.escape(words)):
        learn(_samples(*docs), "x")


def test_a_call_result_that_contradicts_the_rule_is_refused() -> None:
    ok = b'{"k":"1","out":{}}'
    wrapped = msgspec.json.encode({"structuredContent": _ANY.decode(ok), "isError": True})
    bad = Sample(name="w.json", envelope=ok, record=wrapped, is_error=True)
    fail = b'{"k":"1","error":{"code":"BROKEN","message":"m"}}'
    with pytest.raises(LearnError, match=r"w\.json: its CallToolResult says isError=true"):
        learn([*_samples(fail, ok), bad], "x")


def test_names_are_checked() -> None:
    docs = read_samples([str(CORPUS / "ferry" / "learn")])
    with pytest.raises(LearnError, match="lowercase"):
        learn(docs, "Ferry Co")
    with pytest.raises(LearnError, match="already a dialect's name"):
        learn(docs, "errorcode")


def test_a_declaration_that_fails_its_samples_is_never_handed_out() -> None:
    # these carry bundled dialects' markers, which always win over a declaration (issue 23): the
    # learned declaration is refused as it loads, and learn hands nothing out
    docs = _samples(
        b'{"success":true,"k":"1","data":{},"meta":{"elapsed_ms":"x"}}',
        b'{"success":false,"k":"1","error":{"code":"X","message":"m"},"data":{}}',
    )
    with pytest.raises(LearnError, match=r"does not load: .*overlaps the bundled dialect legacy-v1"):
        learn_checked(docs, "x")
    assert "x" not in {d.name for d in registered()}  # the trial declaration was never registered


# --- determinism --------------------------------------------------------------------------------


@pytest.mark.parametrize("server", SERVERS)
def test_same_samples_in_any_order_give_the_same_bytes(server: str, tmp_path: Path) -> None:
    docs = read_samples([str(CORPUS / server)])
    first = learn(docs, server)
    rng = random.Random(30)
    for _ in range(3):
        shuffled = docs[:]
        rng.shuffle(shuffled)
        assert learn(shuffled, server) == first
    copy = tmp_path / "copy"
    copy.mkdir()
    for s in docs:  # the same records read from elsewhere: only the names in comments change
        (copy / f"{Path(s.name).name.replace(':', '-')}.json").write_bytes(s.record + b"\n")
    again = learn(read_samples([str(copy)]), server)
    strip = lambda t: [ln for ln in t.splitlines() if not ln.startswith("# ")]  # noqa: E731
    assert strip(again) == strip(first)


# --- a live server, the proxy, the command line ---------------------------------------------------


def _envglot(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("envglot")
    env = {k: v for k, v in os.environ.items() if k != "ENVGLOT_MAPPINGS_DIR"}
    return subprocess.run([str(exe), *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


def test_from_server_reads_output_schemas_and_calls_only_what_call_names(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    marker = tmp_path / "called"
    server = [sys.executable, str(CORPUS / "marker_server.py"), str(marker)]
    schemas, called = from_server(server)
    assert [t for t, _ in schemas] == ["mark"] and called == []
    assert not marker.exists()  # tools/list only: no tool was called
    text = learn(read_samples([str(CORPUS / "ferry" / "learn")]), "ferry", schemas)
    assert "#   $.ferry: listed by 1 of 1, required by 1 of 1; ⚑ mark says another type or value" in text
    assert "#   $.op: listed by 1 of 1, required by 1 of 1\n" in text
    schemas, called = from_server(server, ("mark", {}))
    assert marker.exists() and len(called) == 1
    assert called[0].is_error is True and b'"DOC_NOT_FOUND"' in called[0].envelope
    p = _envglot(
        "learn", str(CORPUS / "ferry" / "learn"), "--name", "ferry", "--from-server", "--call", "mark", "{}",
        "--", *server,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "from 5 samples" in p.stdout and "outputSchema of 1 tool" in p.stdout
    gone = _envglot("learn", str(CORPUS / "ferry" / "learn"), "--from-server", "--", sys.executable, "-c", "pass")
    assert gone.returncode == 65 and "error: " in gone.stderr and "Traceback" not in gone.stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--call", "t", "{}"], "--call needs --from-server"),
        (["--from-server"], "--from-server needs the server's command after --"),
        (["--", "x"], "a command after -- needs --from-server"),
        (["--from-server", "--call", "t", "[1]", "--", "x"], "ARGS_JSON must be a JSON object"),
    ],
)
def test_cli_usage_errors(args: list[str], words: str) -> None:
    p = _envglot("learn", "tests/learn/ferry/learn", *args)
    assert p.returncode == 2 and words in p.stderr, p.stderr


def test_cli_writes_atomically_and_never_overwrites_without_force(tmp_path: Path) -> None:
    out = tmp_path / "ferry.toml"
    p = _envglot("learn", "tests/learn/ferry/learn", "-o", str(out))
    assert p.returncode == 0 and f"wrote {out} (dialect ferry, 4 samples)" in p.stderr
    assert out.read_text() == learn(read_samples(["tests/learn/ferry/learn"]), "ferry")
    again = _envglot("learn", "tests/learn/ferry/learn", "-o", str(out))
    assert again.returncode == 2 and "exists; use --force" in again.stderr
    assert _envglot("learn", "tests/learn/nothing-here").returncode == 66
    only_ok = _envglot("learn", "tests/learn/ferry/check/list-ok.json", "tests/learn/quay/check/search-ok.json")
    assert only_ok.returncode == 65 and not (tmp_path / "learned.toml").exists()


def test_mappings_check_examples_needs_a_declaration() -> None:
    p = _envglot("mappings", "check", "docs/examples/overlays/good.toml", "--examples", "examples/learn/samples")
    assert p.returncode == 65 and "--examples checks a declaration" in p.stderr
    ok = _envglot("mappings", "check", "examples/learn/pier.toml", "--examples", "examples/learn/samples")
    assert ok.returncode == 0 and ok.stdout == "examples/learn/pier.toml: ok (5 examples)\n"


def test_the_example_declaration_is_what_learn_writes() -> None:
    fresh = learn_checked(read_samples(["examples/learn/samples"]), "pier")
    assert (ROOT / "examples" / "learn" / "pier.toml").read_text() == fresh


def test_the_proxy_of_docs_learn_md_answers_in_response_v2() -> None:
    """The ``envglot proxy`` line of docs/learn.md, run as written, with an MCP client calling the pier server."""
    pytest.importorskip("mcp")
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    line = next(ln for ln in (ROOT / "docs" / "learn.md").read_text().splitlines() if ln.startswith("envglot proxy"))
    args = [sys.executable if a == "python3" else a for a in shlex.split(line)[1:]]

    async def call() -> Any:
        exe = str(Path(sys.executable).with_name("envglot"))
        params = StdioServerParameters(command=exe, args=args, cwd=str(ROOT))
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (r, w), ClientSession(r, w) as session:
                await session.initialize()
                with anyio.fail_after(60):
                    return await session.call_tool("get_berth", {"berth": "Z9"})

    result = anyio.run(call)
    v2 = hasattr(result, "structured_content")  # SDK 2.x names; the 1.x ones only on 1.x
    doc = result.structured_content if v2 else result.structuredContent
    is_error = result.is_error if v2 else result.isError
    assert is_error is True
    assert doc["success"] is False and doc["data"]["error_code"] == "NOT_FOUND" and doc["error"] == "no berth Z9"


def test_only_failures_are_refused_with_the_fix() -> None:
    failures = [s for s in read_samples([str(CORPUS / "quay")]) if b'"errors"' in s.envelope]
    with pytest.raises(LearnError, match=r"no success seen: \$\.errors holds an error in every sample"):
        learn(failures, "quay")


def test_sample_names_and_long_values_cannot_break_the_declaration(tmp_path: Path) -> None:
    evil = tmp_path / 'x\n[codes.EVIL]\ncategory = "internal".json'
    evil.write_bytes((CORPUS / "ferry" / "check" / "timeout.json").read_bytes())
    (tmp_path / "ok.json").write_bytes((CORPUS / "ferry" / "check" / "list-ok.json").read_bytes())
    text = learn_checked(read_samples([str(tmp_path)]), "ferry")
    assert "EVIL" not in tomllib.loads(text)["codes"]  # the name is a comment, escaped, never a row
    assert all(line.startswith("#") or "EVIL" not in line for line in text.splitlines())
    big = b'{"k":"1","out":{}}', b'{"k":"1","error":{"code":"' + b"C" * 200 + b'","message":"m"}}'
    with pytest.raises(LearnError, match="a code of 200 characters"):
        learn(_samples(*big), "x")


def test_the_vocabulary_table_names_only_fields_learn_looks_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for p in (ROOT / "mappings").glob("*.toml"):
        (tmp_path / p.name).write_bytes(p.read_bytes())
    monkeypatch.setenv("ENVGLOT_MAPPINGS_DIR", str(tmp_path))
    docs = read_samples([str(CORPUS / "ferry" / "learn")])
    assert learn(docs, "ferry")  # the bundled table loads
    with (tmp_path / "learn.toml").open("a") as f:
        f.write('next_steps = ["then"]\n')
    with pytest.raises(MappingError, match="'next_steps' is not a field learn looks for"):
        learn(docs, "ferry")


_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["", "a", "NOT_FOUND", "x.y", "404"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "code", "msg", "ok"]), inner),
    max_leaves=6,
)
_SHAPE = st.fixed_dictionaries(
    {
        "flag": st.sampled_from(["ok", "good", None]),
        "error": st.sampled_from(["error", "errors", "fault"]),
        "payload": st.sampled_from(["data", "result"]),
        "extra": st.dictionaries(st.sampled_from(["meta", "took_ms", "notes", "status", "tool"]), _VALUE, max_size=3),
        "outcomes": st.lists(st.booleans(), min_size=2, max_size=5),
        "codes": st.lists(st.sampled_from(["NOT_FOUND", "rate_limited", "x.timeout", "404", "E1"]), min_size=5),
    }
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_SHAPE)
def test_any_samples_give_a_declaration_that_passes_its_check_or_a_refusal(shape: dict[str, Any]) -> None:
    docs = []
    for n, ok in enumerate(shape["outcomes"]):
        d: dict[str, Any] = {"srv": "9", **shape["extra"]}
        if shape["flag"]:
            d[shape["flag"]] = ok
        if ok:
            d[shape["payload"]] = {"n": n}
        else:
            e = {"code": shape["codes"][n], "message": f"failure {n}"}
            d[shape["error"]] = [e] if shape["error"] == "errors" else e
        docs.append(msgspec.json.encode(d))
    try:
        text = learn_checked(_samples(*docs), "fz")
    except LearnError:
        return
    with _trial_file(text) as m:
        assert check_examples("fz", [(f"s{i}", d) for i, d in enumerate(docs)], m) == []


@contextlib.contextmanager
def _trial_file(text: str) -> Iterator[Mappings]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fz.toml"
        path.write_text(text)
        yield load_mappings([str(path)])


def test_the_excerpt_in_docs_learn_md_is_from_the_example_declaration() -> None:
    page = (ROOT / "docs" / "learn.md").read_text()
    block = page.split("```toml\n", 1)[1].split("```", 1)[0]
    lines = set((ROOT / "examples" / "learn" / "pier.toml").read_text().splitlines())
    shown = [ln for ln in block.splitlines() if ln and ln != "..."]
    assert shown and [ln for ln in shown if ln not in lines] == []


def test_inference_is_bounded_by_the_members_it_compares() -> None:
    wide = {"k": "1", "ok": True, "data": {f"key{j}": {"a": j} for j in range(500)}}  # a payload is not walked
    fail = {"k": "1", "ok": False, "error": {"code": "NOT_FOUND", "message": "m"}}
    assert 'payload = "$.data"' in learn(_samples(*(msgspec.json.encode(d) for d in (wide, fail))), "x")
    many = [msgspec.json.encode({"k": "1", **{f"m{i}_{j}": {"x": 1} for j in range(30)}}) for i in range(200)]
    with pytest.raises(LearnError, match=f"more than {MAX_MEMBERS} distinct members"):
        learn(_samples(*many), "x")
