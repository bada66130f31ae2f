"""Declarations compiled twice (``envglot.fields``): the fused pair paths against the hub.

Every ordered pair of dialects that declare ``reading``/``writing``: the fused path and the
hub (reader -> canonical -> writer) give the same bytes, or the same error, over the
goldens, the examples, ``../shared/upstream/``, the benchmark corpus, hypothesis-generated
and -mutated documents, in every output style, and failures of every code class of every
writable dialect. Where diagnostics are collected, preserve
is on, or an MCP outcome is reconciled, the fused path never runs (so the diagnostics are
the hub's by construction); the counting variant that ``migrate`` uses is checked against
the hub's diagnostics in ``test_fused_tally.py``.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import random
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec import Raw

import envglot
from envelopes import documents, json_values, sample_files
from envglot import codes, fields, mcp, pipeline
from envglot.canonical import Envelope, Notice, Problem
from envglot.context import Context
from envglot.diagnostics import DISCARD, Report
from envglot.dialect import Dialect, get_dialect, registered
from envglot.dialects import WRITABLE
from envglot.errors import EnvglotError
from envglot.mappings import default_mappings

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = ROOT / ".." / "shared" / "upstream"
DECLARED = [d.name for d in registered() if d.reading is not None]
TARGETS = [d.name for d in registered() if d.writing is not None]
STYLES = ("compact", "native", "pretty")

_spec = importlib.util.spec_from_file_location("bench_corpus", ROOT / "benchmarks" / "corpus.py")
assert _spec is not None and _spec.loader is not None
bench_corpus = importlib.util.module_from_spec(_spec)
sys.modules["bench_corpus"] = bench_corpus
_spec.loader.exec_module(bench_corpus)


def _outcome(doc: bytes, dst: str, style: str, src: str | None) -> tuple[str, Any]:
    try:
        return "ok", envglot.convert(doc, to=dst, from_=src, unsupported="ignore", style=style)
    except EnvglotError as exc:
        return type(exc).__name__, (str(exc), getattr(exc, "path", None))


def _both(doc: bytes, dst: str, style: str = "compact", src: str | None = None) -> tuple[Any, Any, int]:
    """``(hub outcome, compiled outcome, fused calls)`` of one conversion."""
    fields.use_compiled(False)
    try:
        hub = _outcome(doc, dst, style, src)
    finally:
        fields.use_compiled(True)
    before = _CALLS[0]
    compiled = _outcome(doc, dst, style, src)
    return hub, compiled, _CALLS[0] - before


_CALLS = [0]


@pytest.fixture(autouse=True)
def _count_fused(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Count the calls of every fused function (pipelines built during the test see the spy)."""

    def counting(src: Dialect, dst: Dialect, ctx: Any) -> Any:
        fn = fields.bound_pair(src, dst, ctx)
        if fn is None:
            return None

        def spy(buf: bytes, *members: Any) -> Any:
            _CALLS[0] += 1
            return fn(buf, *members)

        return spy

    monkeypatch.setattr(pipeline, "bound_pair", counting)
    pipeline._PIPELINES.clear()
    pipeline._BACK_PIPELINES.clear()
    yield
    pipeline._PIPELINES.clear()
    pipeline._BACK_PIPELINES.clear()
    fields.use_compiled(True)


def _check(doc: bytes, dst: str, style: str = "compact", src: str | None = None) -> int:
    hub, compiled, calls = _both(doc, dst, style, src)
    assert compiled == hub, f"{src or 'detected'} -> {dst} ({style}) differs for {doc[:300]!r}"
    return calls


def _files() -> list[Path]:
    out = [p for d in registered() for p in sample_files(d.name)]
    if UPSTREAM.is_dir():
        out += sorted(p for p in UPSTREAM.rglob("*.json"))
    return out


FILES = _files()
DOCUMENTS = {name: documents(name) for name in DECLARED}
"""Each dialect's document strategy, resolved at collection: a unit module imported from inside a
running ``@given`` test trips hypothesis's nested-given check (problem-json's has ``@given`` tests)."""


def test_some_dialects_are_declared() -> None:
    assert DECLARED and TARGETS, "no dialect declares reading/writing: the fused paths are untested"


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_files_convert_identically(path: Path) -> None:
    doc = path.read_bytes()
    calls = 0
    for dst in TARGETS:
        for style in STYLES:
            calls += _check(doc, dst, style)
    found = envglot.detect(doc) if _detects(doc) else None
    if found in DECLARED:
        assert calls, "a declared pair never took its fused path"


def _detects(doc: bytes) -> bool:
    try:
        envglot.detect(doc)
    except EnvglotError:
        return False
    return True


@pytest.fixture(scope="module")
def corpus() -> list[Any]:
    c = bench_corpus.generate({"tiny": 6, "medium": 3, "large": 1}, seed=7, dialects=tuple(DECLARED))
    return list(c)


def test_the_benchmark_corpus_converts_identically(corpus: list[Any]) -> None:
    calls = 0
    for rec in corpus:
        for dst in TARGETS:
            calls += _check(rec.data, dst, src=rec.dialect)
            calls += _check(rec.data, dst)
    assert calls >= len(corpus) * len(TARGETS)


_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("src", DECLARED)
@_SETTINGS
@given(data=st.data())
def test_generated_documents_convert_identically(src: str, data: st.DataObject) -> None:
    doc = msgspec.json.encode(data.draw(DOCUMENTS[src]))
    dst = data.draw(st.sampled_from(TARGETS))
    _check(doc, dst, src=src)
    _check(doc, dst)


def _mutate(draw: Callable[..., Any], doc: Any, depth: int = 0) -> Any:
    """One structural change somewhere in ``doc``: a key dropped, added or retyped."""
    if not isinstance(doc, dict) or not doc or depth > 3:
        return draw(json_values)
    keys = sorted(doc)
    key = draw(st.sampled_from(keys))
    how = draw(st.sampled_from(("drop", "add", "retype", "descend")))
    out = dict(doc)
    if how == "drop":
        del out[key]
    elif how == "add":
        out[draw(st.sampled_from(("extra", "_envglot", key + "_x", "meta", "error", "status")))] = draw(json_values)
    elif how == "retype":
        out[key] = draw(json_values)
    else:
        out[key] = _mutate(draw, out[key], depth + 1)
    return out


@pytest.mark.parametrize("src", DECLARED)
@_SETTINGS
@given(data=st.data())
def test_mutated_documents_convert_identically(src: str, data: st.DataObject) -> None:
    base = data.draw(DOCUMENTS[src])
    doc = msgspec.json.encode(_mutate(data.draw, base))
    for dst in TARGETS:
        _check(doc, dst, src=src)


def test_mutated_samples_convert_identically() -> None:
    """A seeded walk over the sample files: every key dropped or retyped in turn."""
    rng = random.Random(12)
    for path in FILES:
        try:
            base = msgspec.json.decode(path.read_bytes())
        except msgspec.DecodeError:
            continue
        if not isinstance(base, dict):
            continue
        for key in sorted(base):
            for variant in ({k: v for k, v in base.items() if k != key}, {**base, key: rng.choice([None, 1, "x", []])}):
                doc = msgspec.json.encode(variant)
                for dst in TARGETS:
                    _check(doc, dst)


def _failure_problems(src: str) -> Iterator[Problem]:
    """One problem per code class of ``src`` (see the module's docstring)."""
    m = default_mappings()
    dmap = m[src]
    cat_key, retry_key = dmap.meaning_keys
    for code in sorted(dmap.codes):
        plan = dmap.plan(code)
        assert plan is not None
        yield Problem(category=plan.category, code=code, domain=src, message=f"failed: {code}")
        other = "internal" if plan.category != "internal" else "not_found"
        if cat_key is not None:
            carried = {"note": "kept", cat_key: other} | ({retry_key: True} if retry_key else {})
            yield Problem(
                category=plan.category,
                code=code,
                domain=src,
                message="carried",
                details=Raw(msgspec.json.encode(carried)),
            )
        yield Problem(category=plan.category, code=code, domain=src, retryable=not plan.retryable, remediation="retry")
    yield Problem(category="internal", code="ZZ_NOT_IN_ANY_TABLE", domain=src, message="unknown code")
    for category in sorted(m.categories):
        yield Problem(category=category, message=f"no code, {category}")


def _failure_documents(src: str) -> list[bytes]:
    out: list[bytes] = []
    for p in _failure_problems(src):
        try:
            doc = envglot.write(Envelope(ok=False, problems=(p,), summary="failed"), to=src, unsupported="ignore")
        except EnvglotError:
            continue  # a problem this dialect's writer refuses is no document of it
        if doc not in out:
            out.append(doc)
    return out


@pytest.mark.parametrize("src", WRITABLE)
def test_failures_of_every_code_class_convert_identically(src: str) -> None:
    """For each code of ``src``'s table a failure with its row's category, one with another
    category carried in ``details`` (where ``src`` has a place for it) and one with a stated
    ``retryable`` against its row's; a code the tables do not know; no code, for every
    category: written by ``src``'s writer, converted to every target (issue 28)."""
    docs = _failure_documents(src)
    assert len(docs) > len(default_mappings()[src].codes), f"{src}: too few failure documents"
    calls = 0
    for doc in docs:
        assert not envglot.read(doc, from_=src).ok
        for dst in WRITABLE:
            calls += _check(doc, dst, src=src)
    assert calls >= len(docs) * len(TARGETS) // 2, f"{src}: the fused path was seldom taken ({calls})"


_PROBLEM_LAYERS = (
    codes.read_problem,
    codes.read_planned,
    codes.problem_of,
    codes.carried_meaning,
    codes.write_plan,
    codes.planned,
    codes.choice,
    codes.row_problem,
    codes.meaning_to_carry,
)
"""What reads a failure into a canonical ``Problem`` and writes one: not called for a failure
whose code has a :class:`~envglot.codes.FailurePlan` on a fused pair with failure forms (what the
code carries in the details is the plan's, :attr:`~envglot.codes.FailurePlan.carried`)."""


def _into(out: list[object], fn: Callable[[bytes], object], doc: bytes) -> None:
    out.append(fn(doc))


def _calls_during(fn: Callable[[], object]) -> set[Any]:
    """The code objects of the Python functions ``fn`` calls."""
    seen: set[Any] = set()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            seen.add(frame.f_code)

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return seen


def _generated(src: str, dst: str, marker: str) -> bool:
    fn = fields.pair_function(get_dialect(src), get_dialect(dst))
    return fn is not None and marker in fields.source(fn)


FORMS = [(s, d) for s in DECLARED for d in TARGETS if _generated(s, d, "t_failure = ")]
"""The pairs whose generated function takes a failure's plan (both sides declare failure forms)."""


def test_every_ordered_pair_of_bundled_dialects_has_failure_forms() -> None:
    """Every bundled reader and writer declares its failure form, and every ordered pair of them
    takes it but problem-json to itself, whose same-dialect extras (its title, status and
    instance beyond what the code implies) are read with its problems (issue 28)."""
    from envglot.dialects import NAMES

    for s in NAMES:
        assert get_dialect(s).reading.failure is not None, s  # type: ignore[union-attr]
    for d in WRITABLE:
        assert get_dialect(d).writing.failure is not None, d  # type: ignore[union-attr]
    assert {(s, d) for s in NAMES for d in WRITABLE} - set(FORMS) == {("problem-json", "problem-json")}


def _carries_meaning(node: object, keys: tuple[str | None, str | None]) -> bool:
    """A ``details`` object anywhere in a decoded document with a member of ``keys``."""
    if isinstance(node, dict):
        d = node.get("details")
        if isinstance(d, dict) and any(k in d for k in keys if k is not None):
            return True
        return any(_carries_meaning(v, keys) for v in node.values())
    return isinstance(node, list) and any(_carries_meaning(v, keys) for v in node)


def _planned_documents(src: str) -> Iterator[bytes]:
    """A failure of each code of ``src`` with its row's category whose details carry no meaning
    (those the hooks read: :func:`~envglot.codes.carried_meaning`); a read-only source's failure samples."""
    m = default_mappings()
    if get_dialect(src).writing is None:
        for path in sample_files(src):
            doc = msgspec.json.format(path.read_bytes(), indent=-1)  # compact, as the pipeline gives it
            if not envglot.read(doc, from_=src).ok:
                yield doc
        return
    for code in sorted(m[src].codes):
        plan = m[src].plan(code)
        assert plan is not None
        p = Problem(category=plan.category, code=code, domain=src, message=f"failed: {code}")
        try:
            doc = envglot.write(Envelope(ok=False, problems=(p,), summary="failed"), to=src, unsupported="ignore")
        except EnvglotError:
            continue
        if not _carries_meaning(msgspec.json.decode(doc), m[src].meaning_keys):
            yield doc


@pytest.mark.parametrize(("src", "dst"), FORMS, ids=[f"{s}->{d}" for s, d in FORMS])
def test_a_planned_failure_builds_no_problem_on_the_fused_path(src: str, dst: str) -> None:
    """A failure whose code the source's tables know, its category the row's, goes from the
    source's wire error to the target's through its code's plan: no problem read or written,
    the hub's bytes (issue 28)."""
    m = default_mappings()
    conv = envglot.Converter(dst, src, unsupported="ignore")
    fused = fields.bound_pair(get_dialect(src), get_dialect(dst), Context(m, DISCARD, m[src]))
    assert fused is not None
    layers = {getattr(f, "__wrapped__", f).__code__ for f in _PROBLEM_LAYERS}
    writer = get_dialect(dst).writing.failure  # type: ignore[union-attr]
    assert writer is not None
    form = writer.hook.__code__
    docs = list(_planned_documents(src))
    assert len(docs) >= (len(m[src].codes) // 2 if m[src].codes else 1), f"{src}: too few failure documents"
    for doc in docs:
        fused(doc)  # warm: the code's plan is built on first use
        out: list[object] = []
        seen = _calls_during(functools.partial(_into, out, fused, doc))
        assert form in seen
        assert not seen & layers, f"{src} -> {dst}: {doc!r} went through the problem hooks"
        fields.use_compiled(False)
        assert out[0] == conv.convert_bytes(doc)  # the hub's bytes
        fields.use_compiled(True)


TEXTS = [(s, d) for s in DECLARED for d in TARGETS if _generated(s, d, "t_texts = ")]
"""The pairs whose generated function takes plain warnings' messages (the source declares a texts
form, the target one too or no warnings; a pure warnings step a target does not read is left out)."""


def _plain_warning_documents(src: str) -> Iterator[bytes]:
    """Successes and a failure of ``src`` with warnings that are nothing but messages; a read-only
    source's samples with warnings."""
    if get_dialect(src).writing is None:
        for path in sample_files(src):
            doc = msgspec.json.format(path.read_bytes(), indent=-1)
            if envglot.read(doc, from_=src).warnings:
                yield doc
        return
    notes = (Notice(message="first"), Notice(message="second, \u00e9"))
    m = default_mappings()
    code = sorted(m[src].codes)[0]
    plan = m[src].plan(code)
    assert plan is not None
    for env in (
        Envelope(ok=True, payload=Raw(b'{"a":1}'), summary="done", warnings=notes),
        Envelope(ok=True, warnings=notes[:1]),
        Envelope(
            ok=False,
            summary="failed",
            warnings=notes,
            problems=(Problem(category=plan.category, code=code, domain=src, message="x"),),
        ),
    ):
        yield envglot.write(env, to=src, unsupported="ignore")


@pytest.mark.parametrize(("src", "dst"), TEXTS, ids=[f"{s}->{d}" for s, d in TEXTS])
def test_plain_warnings_build_no_notice_on_the_fused_path(src: str, dst: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Warnings that are nothing but messages go from the source's list to the target's through
    the two sides' ``texts`` forms (a target without warnings: the source's alone): no canonical
    ``Notice`` built, the hub's bytes (issue 28)."""
    from envglot import canonical

    m = default_mappings()
    conv = envglot.Converter(dst, src, unsupported="ignore")
    fused = fields.bound_pair(get_dialect(src), get_dialect(dst), Context(m, DISCARD, m[src]))
    assert fused is not None
    texts = get_dialect(dst).writing.texts  # type: ignore[union-attr]
    forms = {get_dialect(src).reading.texts.__code__}  # type: ignore[union-attr]
    forms |= {texts.hook.__code__} if texts is not None else set()  # a target without warnings has none
    built: list[object] = []
    real = canonical.Notice
    docs = list(_plain_warning_documents(src))
    assert docs, f"{src}: no document with plain warnings"
    for doc in docs:
        fused(doc)  # warm
        out: list[object] = []
        monkeypatch.setattr(canonical, "Notice", lambda *a, **k: (built.append(a or k), real(*a, **k))[1])
        seen = _calls_during(functools.partial(_into, out, fused, doc))
        monkeypatch.setattr(canonical, "Notice", real)
        assert forms <= seen, f"{src} -> {dst}: {doc!r} did not take the warnings' forms"
        assert not built, f"{src} -> {dst}: {doc!r} built notices"
        fields.use_compiled(False)
        assert out[0] == conv.convert_bytes(doc)  # the hub's bytes
        fields.use_compiled(True)


def test_listening_mcp_and_an_input_residue_take_the_hub() -> None:
    doc = sample_files(DECLARED[0])[0].read_bytes()
    dst = next(t for t in TARGETS if t != DECLARED[0])
    carrier = envglot.convert(doc, from_=DECLARED[0], to=dst, preserve=True, unsupported="ignore")
    before = _CALLS[0]
    envglot.conversion(doc, to=dst)  # diagnostics collected
    wrapped = mcp.wrap(doc)
    envglot.convert(msgspec.json.encode(wrapped), to=dst, unsupported="ignore")
    # a residue to apply: the hub reads it (restored: no residue to compute either)
    envglot.convert(carrier, from_=dst, to=DECLARED[0], preserve=True, unsupported="ignore")
    assert _CALLS[0] == before
    envglot.convert(doc, to=dst, unsupported="ignore")
    assert _CALLS[0] == before + 1


def test_preserve_without_an_input_residue_takes_the_fused_paths() -> None:
    """Forward only (a version 3 residue needs no conversion back): one fused call, the hub's bytes."""
    src = DECLARED[0]
    doc = sample_files(src)[0].read_bytes()
    dst = next(t for t in TARGETS if t != src)
    before = _CALLS[0]
    out = envglot.convert(doc, from_=src, to=dst, preserve=True, unsupported="ignore")
    assert _CALLS[0] == before + 1
    fields.use_compiled(False)
    assert envglot.convert(doc, from_=src, to=dst, preserve=True, unsupported="ignore") == out


def test_use_compiled_turns_the_fused_paths_off() -> None:
    doc = sample_files(DECLARED[0])[0].read_bytes()
    fields.use_compiled(False)
    before = _CALLS[0]
    envglot.convert(doc, to=TARGETS[0], unsupported="ignore")
    assert _CALLS[0] == before


def test_generated_source_is_readable_and_dumped(tmp_path: Path) -> None:
    src, dst = get_dialect(DECLARED[0]), get_dialect(TARGETS[0])
    fn = fields.pair_function(src, dst)
    assert fn is not None
    text = fields.source(fn)
    assert text.startswith(f"def {src.name.replace('-', '_')}_to_{dst.name.replace('-', '_')}(buf, ctx):")
    code = (
        "import envglot\n"
        "from envglot.dialect import registered\n"
        "from envglot.fields import pair_function\n"
        "for s in registered():\n"
        "    for d in registered():\n"
        "        pair_function(s, d)\n"
        "    if s.reading is not None:\n"
        "        s._generate()\n"
    )
    env = {**os.environ, "ENVGLOT_DUMP_COMPILED": str(tmp_path)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=ROOT)
    dumped = sorted(p.name for p in tmp_path.iterdir())
    pairs = [f"{s.replace('-', '_')}_to_{d.replace('-', '_')}.py" for s in DECLARED for d in TARGETS]
    assert set(pairs) <= set(dumped)
    assert {f"read_{s.replace('-', '_')}.py" for s in DECLARED} <= set(dumped)
    for p in tmp_path.iterdir():
        compile(p.read_text(), str(p), "exec")  # plain Python, as dumped


# ---- the declaration language itself ------------------------------------------------------


class _Inner(msgspec.Struct):
    value: int | None = None


class _Outer(msgspec.Struct):
    flag: bool
    inner: _Inner | None = None
    blob: msgspec.Raw = fields.ABSENT


class _Out(msgspec.Struct, omit_defaults=True):
    success: bool
    value: int | None = None
    note: str | None = None


class _Decoder:
    """A decoder as Reading expects one: ``(wire, extras, residue)``."""

    def decode(self, buf: bytes) -> tuple[_Outer, tuple[Any, ...], None]:
        return msgspec.json.decode(buf, type=_Outer), (), None


class _Toy(Dialect):
    """Not registered (no ``name`` in the class body): a dialect made only to compile."""


def _toy(reading: fields.Reading, writing: fields.Writing | None = None) -> Dialect:
    toy = _Toy()
    toy.name = "toy"  # type: ignore[misc]
    toy.reading = reading  # type: ignore[misc]
    toy.writing = writing  # type: ignore[misc]
    return toy


class _Ctx:
    """What generated code reads of a context here: the tables by dialect name."""

    def __init__(self) -> None:
        self.mappings: dict[str, None] = {"toy": None, "toy2": None}


def test_a_move_is_none_safe_along_its_path_and_maps_absent_raw() -> None:
    r = fields.Reading(
        _Decoder(),
        fields.Move("ok", "w.flag"),
        fields.Move("duration_ms", "w.inner.value"),
        fields.Move("payload", "w.blob", absent=True),
    )
    read, _, _ = fields.hub(_toy(r))
    env = read(b'{"flag":true}', _Ctx())
    assert (env.ok, env.duration_ms, env.payload) == (True, None, None)
    env = read(b'{"flag":false,"inner":{"value":3},"blob":[1]}', _Ctx())
    assert (env.ok, env.duration_ms, bytes(env.payload)) == (False, 3, b"[1]")


def test_hook_parameters_are_bound_by_name_and_an_unknown_one_is_refused() -> None:
    def double(w: _Outer) -> int | None:
        return None if w.inner is None or w.inner.value is None else 2 * w.inner.value

    def note(doubled: int | None, ok: bool, spare: str = "kept default") -> str:
        return f"{doubled}/{ok}/{spare}"

    r = fields.Reading(
        _Decoder(),
        fields.Move("ok", "w.flag"),
        fields.Let("doubled", double),
        fields.Let("summary", note),
    )
    read, _, _ = fields.hub(_toy(r))
    assert read(b'{"flag":true,"inner":{"value":4}}', _Ctx()).summary == "8/True/kept default"

    def needs(nowhere: int) -> int:
        return nowhere

    with pytest.raises(TypeError, match="'nowhere', which no step defines"):
        fields.hub(_toy(fields.Reading(_Decoder(), fields.Move("ok", "w.flag"), fields.Let("x", needs))))


def test_a_let_binds_a_parameter_to_another_name_with_args() -> None:
    def twice(value: int | None) -> int | None:  # one hook, two fields
        return None if value is None else 2 * value

    r = fields.Reading(
        _Decoder(),
        fields.Move("ok", "w.flag"),
        fields.Move("raw", "w.inner.value"),
        fields.Let("duration_ms", twice, args=(("value", "raw"),)),
        fields.Let("token_estimate", twice, args=(("value", "duration_ms"),)),
    )
    assert fields.inputs(r.steps[2]) == {"raw"}
    read, _, _ = fields.hub(_toy(r))
    env = read(b'{"flag":true,"inner":{"value":3}}', _Ctx())
    assert (env.duration_ms, env.token_estimate) == (6, 12)
    with pytest.raises(TypeError, match="'nowhere', which no step defines"):
        bad = fields.Let("summary", twice, args=(("value", "nowhere"),))
        fields.hub(_toy(fields.Reading(_Decoder(), fields.Move("ok", "w.flag"), bad)))


def test_a_reading_must_define_ok() -> None:
    with pytest.raises(TypeError, match="defines no 'ok'"):
        fields.hub(_toy(fields.Reading(_Decoder(), fields.Move("summary", "w.flag"))))


def test_a_fused_pair_skips_pure_steps_the_target_does_not_use() -> None:
    seen: list[str] = []

    def pure(w: _Outer) -> str:
        seen.append("pure")
        return "x"

    def impure(w: _Outer) -> None:
        seen.append("impure")

    r = fields.Reading(
        _Decoder(),
        fields.Move("ok", "w.flag"),
        fields.Let("summary", pure, pure=True),
        fields.Check(impure),
        fields.Move("duration_ms", "w.inner.value"),
    )
    w = fields.Writing(fields.Build.of("out", _Out, success="ok", value="duration_ms", note=fields.Const("n")))
    src, dst = _toy(r), _toy(r, w)
    dst.name = "toy2"  # type: ignore[misc]
    fn = fields._compile_pair(src, dst)
    ctx = _Ctx()
    assert fn(b'{"flag":true,"inner":{"value":5}}', ctx) == b'{"success":true,"value":5,"note":"n"}'
    assert seen == ["impure"]  # the target writes no summary: the pure step never ran
    text = fields.source(fn)
    assert "pure(" not in text.replace("impure(", "") and "summary" not in text


def test_the_generated_code_shown_in_the_guide_is_current() -> None:
    """docs/adding-a-dialect.md quotes errorcode -> result as generated: it must not go stale."""
    text = (ROOT / "docs" / "adding-a-dialect.md").read_text(encoding="utf-8")
    fn = fields.pair_function(get_dialect("errorcode"), get_dialect("result"))
    assert fn is not None
    unbound, bind = fields.source(fn).split("\n\ndef bind(ctx):\n")
    assert "```python\n" + unbound + "\n```" in text
    assert "try:" in bind and "shareable" not in bind  # nothing of result's writing is constant for errorcode


def test_a_bound_pair_runs_the_steps_constant_for_its_context_once() -> None:
    runs: list[str] = []

    def label(summary: str | None, ctx: _Ctx) -> str:  # the source never defines a summary
        runs.append("label")
        return "none" if summary is None else summary

    def listed(label: str) -> list[str]:
        return [label]

    def opaque(label: str) -> object:
        return object()

    r = fields.Reading(_Decoder(), fields.Move("ok", "w.flag"), fields.Move("duration_ms", "w.inner.value"))
    w = fields.Writing(
        fields.Let("label", label),
        fields.Let("listed", listed),
        fields.Build.of("out", _Out, success="ok", value="duration_ms", note="label"),
    )
    src, dst = _toy(r), _toy(r, w)
    dst.name = "toy2"  # type: ignore[misc]
    ctx = _Ctx()
    bound = fields.bound_pair(src, dst, ctx)  # type: ignore[arg-type]
    assert bound is not None and runs == ["label"]
    docs = [b'{"flag":true,"inner":{"value":5}}', b'{"flag":false}']
    unbound = fields.pair_function(src, dst)
    assert unbound is not None
    assert [bound(b) for b in docs] == [unbound(b, ctx) for b in docs]  # type: ignore[arg-type]
    assert runs == ["label"] * 3  # once when bound, once per unbound call
    text = fields.source(unbound)
    assert "def bind(ctx):" in text and "label(summary, ctx)" in text.split("_bound(buf):")[0]

    # a value that is not plain data is never shared: the binding gives way to the unbound function
    w2 = fields.Writing(
        fields.Let("label", label), fields.Let("handle", opaque), fields.Build.of("out", _Out, success="ok")
    )
    dst2 = _toy(r, w2)
    dst2.name = "toy2"  # type: ignore[misc]
    assert fields._BINDERS[fields.pair_function(src, dst2)](ctx) is None  # type: ignore[index]
    bound2 = fields.bound_pair(src, dst2, ctx)  # type: ignore[arg-type]
    assert bound2 is not None and bound2(docs[0]) == b'{"success":true}'


def test_a_hooks_common_case_is_written_inline_and_its_body_called_otherwise() -> None:
    calls: list[str] = []

    @fields.common(fields.When("w.inner", "is", None), value=fields.Const(0))
    def depth(w: _Outer) -> int:
        calls.append("depth")
        assert w.inner is not None
        return w.inner.value + 1

    @fields.common(fields.When("w.flag", "truthy"), fields.When("w.blob", "is", fields.ABSENT))
    def refuse(w: _Outer) -> None:
        calls.append("refuse")
        raise ValueError("refused")

    # a direct call takes the common case without the body, every other case through it
    assert depth(_Outer(flag=True)) == 0 and calls == []
    assert depth(_Outer(flag=True, inner=_Inner(value=4))) == 5 and calls == ["depth"]
    assert refuse(_Outer(flag=True)) is None and calls == ["depth"]
    with pytest.raises(ValueError, match="refused"):
        refuse(w=_Outer(flag=False))
    assert depth.__name__ == "depth" and depth.__wrapped__.__name__ == "depth"  # type: ignore[attr-defined]

    r = fields.Reading(_Decoder(), fields.Move("ok", "w.flag"), fields.Check(refuse), fields.Let("duration_ms", depth))
    w = fields.Writing(fields.Build.of("out", _Out, success="ok", value="duration_ms"))
    src, dst = _toy(r), _toy(r, w)
    dst.name = "toy2"  # type: ignore[misc]
    fn = fields._compile_pair(src, dst)
    ctx = _Ctx()
    calls.clear()
    assert fn(b'{"flag":true}', ctx) == b'{"success":true,"value":0}' and calls == []
    assert fn(b'{"flag":true,"inner":{"value":2}}', ctx) == b'{"success":true,"value":3}' and calls == ["depth"]
    with pytest.raises(ValueError, match="refused"):
        fn(b'{"flag":true,"blob":[]}', ctx)
    text = fields.source(fn)
    assert "if not (w.flag and w.blob is ABSENT):" in text
    assert "duration_ms = 0 if w.inner is None else depth(w)" in text


def test_a_hooks_further_cases_are_tested_in_turn_inline_and_by_a_direct_call() -> None:
    """``also``: each further case is tested after the ones before fail, its value taken without
    a call; the body only when none holds; a check's cases make one condition. The direct call
    and the generated code agree on every input."""
    calls: list[str] = []

    @fields.common(
        fields.When("w.inner", "is", None),
        value=fields.Const(0),
        also=[
            fields.Case((fields.When("w.flag", "falsy"),), fields.Const(-1)),
            fields.Case((fields.When("w.blob", "is not", fields.ABSENT),), "w.inner.value"),
        ],
    )
    def depth(w: _Outer) -> int:
        calls.append("depth")
        assert w.inner is not None
        return w.inner.value + 1

    @fields.common(
        fields.When("w.flag", "truthy"),
        fields.When("w.blob", "is", fields.ABSENT),
        also=[fields.Case((fields.When("w.inner", "is not", None),))],
    )
    def refuse(w: _Outer) -> None:
        calls.append("refuse")
        raise ValueError("refused")

    assert depth(_Outer(flag=False)) == 0 and calls == []  # the first case before the second
    assert depth(_Outer(flag=False, inner=_Inner(value=4))) == -1 and calls == []
    assert depth(_Outer(flag=True, inner=_Inner(value=4), blob=Raw(b"[]"))) == 4 and calls == []
    assert depth(_Outer(flag=True, inner=_Inner(value=4))) == 5 and calls == ["depth"]
    assert refuse(_Outer(flag=False, inner=_Inner(value=1))) is None and calls == ["depth"]
    with pytest.raises(ValueError, match="refused"):
        refuse(_Outer(flag=False))

    r = fields.Reading(_Decoder(), fields.Move("ok", "w.flag"), fields.Check(refuse), fields.Let("duration_ms", depth))
    w = fields.Writing(fields.Build.of("out", _Out, success="ok", value="duration_ms"))
    src, dst = _toy(r), _toy(r, w)
    dst.name = "toy2"  # type: ignore[misc]
    fn = fields._compile_pair(src, dst)
    text = fields.source(fn)
    assert "if not ((w.flag and w.blob is ABSENT) or (w.inner is not None)):" in text
    assert (
        "duration_ms = 0 if w.inner is None else -1 if not w.flag else w.inner.value if w.blob is not ABSENT "
        "else depth(w)" in text
    )
    calls.clear()
    assert fn(b'{"flag":true}', _Ctx()) == b'{"success":true,"value":0}'
    assert fn(b'{"flag":false,"inner":{"value":2}}', _Ctx()) == b'{"success":false,"value":-1}'
    assert fn(b'{"flag":true,"inner":{"value":2},"blob":[]}', _Ctx()) == b'{"success":true,"value":2}'
    assert calls == []
    assert fn(b'{"flag":true,"inner":{"value":2}}', _Ctx()) == b'{"success":true,"value":3}' and calls == ["depth"]
    with pytest.raises(ValueError, match="refused"):
        fn(b'{"flag":false}', _Ctx())
    with pytest.raises(TypeError, match="takes no further cases"):
        fields.common(fields.When("w", "falsy"), holds=True, also=[fields.Case((fields.When("w", "truthy"),))])
    with pytest.raises(TypeError, match="unknown test 'in'"):
        fields.common(fields.When("w", "falsy"), also=[fields.Case((fields.When("w", "in", ()),))])


def test_dotbots_status_and_outcome_cases_answer_as_their_bodies() -> None:
    """dotbot's ``_status_agrees`` and ``_ok``: on every combination of status, errors and
    warnings, each case that holds gives what the hook's body gives (and the body reports nothing there)."""
    from envglot.dialects import dotbot

    issue = dotbot.Issue(code="X", message="m")
    audit = dotbot.Audit(timestamp="2026-01-01T00:00:00Z", duration_ms=1, source="s")
    for hook in (dotbot._status_agrees, dotbot._ok):
        c = hook.__envglot_common__  # type: ignore[attr-defined]
        assert c.also, hook
        for status in ("ok", "warning", "error"):
            for errors in ([], [issue]):
                for warnings in ([], ["w"]):
                    w = dotbot.Envelope(
                        dotbot.SCHEMA_ID, "t", "1.0.0", status, "s", Raw(b"{}"), warnings, errors, audit
                    )  # type: ignore[arg-type]
                    for case in (fields.Case(c.when, c.value), *c.also):
                        env = {"w": w}
                        if not all(_holds(t, env) for t in case.when):
                            continue
                        ctx = Context(default_mappings(), Report())
                        args = (w, ctx) if hook is dotbot._status_agrees else (w,)
                        assert c.body(*args) == case.value.value, (hook, status, errors, warnings)
                        assert not ctx.report.diagnostics


def _holds(t: fields.When, env: dict[str, Any]) -> bool:
    """One ``==`` / ``falsy`` / ``truthy`` / ``is`` / ``is not`` / ``matches`` / ``type is`` / ``>=`` test of a
    common case, evaluated on ``env``."""
    head, *rest = t.path.split(".")
    v = env[head]
    for a in rest:
        v = getattr(v, a)
    return {
        "==": lambda: v == t.value,
        "falsy": lambda: not v,
        "truthy": lambda: bool(v),
        "is": lambda: v is t.value,
        "is not": lambda: v is not t.value,
        "matches": lambda: t.value(v) is not None,  # type: ignore[operator]
        "type is": lambda: type(v) is t.value,
        ">=": lambda: v >= t.value,  # type: ignore[operator]
    }[t.op]()


def test_dotbots_status_and_notices_and_response_v2s_checks_answer_as_their_bodies() -> None:
    """dotbot's ``_status`` (a failure's case: ``"error"``) and ``_notices`` (none: an empty
    sequence, encoded as the body's list), response-v2's ``_valid`` (a failure's case) and
    ``_version`` (its tests hold: the body raises exactly when they fail): on every combination,
    each case that holds gives what the body gives, and the body raises nothing there."""
    from envglot.dialects import dotbot, response_v2
    from envglot.errors import ParseError

    issue = dotbot.Issue(code="X", message="m")
    for errors in ([], [issue]):
        for notices in ([], ["w"]):
            c = dotbot._status.__envglot_common__  # type: ignore[attr-defined]
            for case in (fields.Case(c.when, c.value), *c.also):
                if all(_holds(t, {"errors": errors, "notices": notices}) for t in case.when):
                    assert c.body(errors, notices) == case.value.value
    c = dotbot._notices.__envglot_common__  # type: ignore[attr-defined]
    ctx = Context(default_mappings(), Report())
    assert msgspec.json.encode(c.value.value) == msgspec.json.encode(c.body((), ctx, None)) == b"[]"
    for hook in (response_v2._valid, response_v2._version):
        c = hook.__envglot_common__  # type: ignore[attr-defined]
        for version in ("response-v2", "response-v1", ""):
            for data in (Raw(b"{}"), Raw(b'{"a":1}'), Raw(b"[]"), Raw(b"null")):
                for success in (True, False):
                    for error in (None, "", "m"):
                        meta = response_v2.Meta(version=version)
                        w = response_v2.Envelope(success=success, data=data, error=error, meta=meta)
                        held = [all(_holds(t, {"w": w}) for t in case.when) for case in (c, *c.also)]
                        if c.holds or any(held):
                            try:
                                c.body(w)
                                raised = False
                            except ParseError:
                                raised = True
                            assert raised is (not any(held)) if c.holds else not raised, (hook, w)


def test_dotbots_audit_ms_and_response_v2s_failure_payload_answer_as_before() -> None:
    """dotbot's ``_audit_ms`` (a float's case, :class:`~envglot.fields.Rounded`, where nothing is
    reported) gives the body's value and the body reports nothing there; response-v2's failure
    ``payload`` (made by ``_failure``, taken inline by ``_payload``'s case) is ``data`` without
    the error's fields, as encoded before."""
    from envglot.dialects import dotbot, response_v2

    m = default_mappings()
    c = dotbot._audit_ms.__envglot_common__  # type: ignore[attr-defined]
    nan, inf = float("nan"), float("inf")
    for v in (0, 7, -3, 0.0, -0.0, 0.5, 1.5, 2.5, 352.27, 1e20, -1.5, nan, None, True):
        for report in (Report(), DISCARD):
            ctx = Context(m, report)
            env = {"duration_ms": v, "ctx": ctx}
            for case in (fields.Case(c.when, c.value), *c.also):
                if all(_holds(t, env) for t in case.when):
                    want = c.body(v, ctx, m["dotbot"])
                    got = round(v) if isinstance(case.value, fields.Rounded) else v  # type: ignore[arg-type]
                    assert got == want and type(got) is type(want), v
                    assert not (isinstance(report, Report) and report.diagnostics), v
                    break
            assert dotbot._audit_ms(v, Context(m, DISCARD), m["dotbot"]) == c.body(v, Context(m, DISCARD), m["dotbot"])
    with pytest.raises(OverflowError):  # as the body's round() raises
        dotbot._audit_ms(inf, Context(m, DISCARD), m["dotbot"])

    for data in (
        b"{}",
        b'{"error_code":"X","error_type":"internal"}',
        b'{"error_code":"X","a":1,"b":[2]}',
        b'{"z":{}}',
    ):
        w = response_v2.Envelope(success=False, data=Raw(data), error="m", meta=response_v2.Meta(version="response-v2"))
        failure = response_v2._failure(w, (), Context(m, DISCARD))
        rest = {k: v for k, v in msgspec.json.decode(data).items() if k not in response_v2._ERROR_KEY_SET}
        assert bytes(failure.payload) == (msgspec.json.encode(rest) if rest else b"{}")
        assert response_v2._payload(w, failure, Context(m, DISCARD)) is failure.payload


def test_next_steps_and_tool_cases_and_code_graphs_failure_result_answer_as_before() -> None:
    """dotbot's ``_next`` (no steps) and ``_tool`` (a tool given), code-graph's
    ``_data_request_id`` (one given) and ``_next_steps`` (no suggestions): each case that holds
    gives the body's value and the body reports nothing there; code-graph's failure ``result``
    joined as bytes is what encoding its members gives."""
    from envglot import canonical as c
    from envglot.dialects import code_graph, dotbot

    m = default_mappings()
    for tool in (None, "t", ""):
        for steps in ((), (c.NextStep(kind="query", tool="x"),)):
            for hook, args, env in (
                (dotbot._tool, (tool,), {"tool": tool}),
                (dotbot._next, (steps,), {"next_steps": steps}),
            ):
                common = hook.__envglot_common__  # type: ignore[attr-defined]
                ctx = Context(m, Report())
                if all(_holds(t, env) for t in common.when):
                    want = common.body(*args, ctx, m["dotbot"])
                    got = env[common.value] if isinstance(common.value, str) else common.value.value
                    assert got == want and type(got) is type(want), (hook, args)
                    assert not ctx.report.diagnostics
    common = code_graph._data_request_id.__envglot_common__  # type: ignore[attr-defined]
    for rid in ("r-1", ""):
        assert all(_holds(t, {"request_id": rid}) for t in common.when)
        ctx = Context(m, Report())
        assert common.body(rid, "t", True, None, None, ctx, m["code-graph"]) == rid and not ctx.report.diagnostics
    assert not all(_holds(t, {"request_id": None}) for t in common.when)
    meta = code_graph.Meta(approx_tokens=0, truncated=False, limits=Raw(b"{}"))
    common = code_graph._next_steps.__envglot_common__  # type: ignore[attr-defined]
    for suggestions in (None, []):
        meta.next_query_suggestion = suggestions
        assert all(_holds(t, {"meta": meta}) for t in common.when)
        assert common.body(meta) == common.value.value == ()

    from envglot.wire import error_details

    dmap = m["code-graph"]
    for category in ("not_found", "cancelled", "internal"):  # a category the codes say, one they carry
        problem = Problem(category=category, code="NF", message="m")  # type: ignore[arg-type]
        chosen = code_graph.write_plan(problem, dmap, Context(m, DISCARD), 0)
        for extra in (None, Raw(b"{}"), Raw(b'{"hint":"h"}'), Raw(b'{"message":"x","a":1}')):
            for details in (None, Raw(b"null"), Raw(b'{"k":1}'), Raw(b"[1]")):
                for payload in (None, Raw(b"null"), Raw(b"{}"), Raw(b'{"a":1}'), Raw(b'{"error":1}'), Raw(b"[]")):
                    for message in ("m", ""):
                        ctx = Context(m, DISCARD)
                        args = (problem, chosen, extra, message, details, payload, "s", ctx, dmap)
                        got = code_graph._failure_result(*args)
                        err = msgspec.json.decode(extra, type=dict[str, Raw]) if extra is not None else {}
                        err["code"] = Raw(msgspec.json.encode(chosen.code))
                        err["message"] = Raw(msgspec.json.encode(message or "s"))
                        shown = error_details(details, ctx, "code-graph")
                        carried = codes.with_carried(shown, codes.meaning_to_carry(problem, chosen, dmap))
                        if carried is not None:
                            err["details"] = carried
                        res = {}
                        if payload is not None and bytes(payload)[:1] == b"{":
                            res = msgspec.json.decode(payload, type=dict[str, Raw])
                            res.pop("error", None)
                        res["error"] = Raw(msgspec.json.encode(err))
                        assert bytes(got) == msgspec.json.encode(res), (category, extra, details, payload, message)


def test_a_common_case_tests_an_exact_type_and_a_bound() -> None:
    """``type is`` is the exact type (a ``bool`` is no ``int``), ``>=`` a bound; the direct call
    and the generated code take the same tests."""
    calls: list[object] = []

    @fields.common(fields.When("v", "type is", int), fields.When("v", ">=", 0), value="v")
    def whole(v: object) -> object:
        calls.append(v)
        return -1

    assert [whole(3), whole(0), whole(True), whole(-2), whole(2.0), whole(None)] == [3, 0, -1, -1, -1, -1]
    assert calls == [True, -2, 2.0, None]
    with pytest.raises(TypeError, match="'type is' takes a type"):
        fields.common(fields.When("v", "type is", "int"))
    r = fields.Reading(_Decoder(), fields.Move("ok", "w.flag"), fields.Move("duration_ms", "w.inner.value"))

    def value(duration_ms: int | None) -> int | None:
        return whole(duration_ms)  # type: ignore[return-value]

    w = fields.Writing(
        fields.Let("value", fields.common(fields.When("duration_ms", "type is", int), value="duration_ms")(value)),
        fields.Build.of("out", _Out, success="ok", value="value"),
    )
    src, dst = _toy(r), _toy(r, w)
    dst.name = "toy2"  # type: ignore[misc]
    fn = fields._compile_pair(src, dst)
    assert "type(duration_ms) is TYPE" in fields.source(fn)
    calls.clear()
    assert fn(b'{"flag":true,"inner":{"value":-4}}', _Ctx()) == b'{"success":true,"value":-4}' and calls == []
    assert fn(b'{"flag":true}', _Ctx()) == b'{"success":true,"value":-1}' and calls == [None]


def test_a_common_cases_direct_call_takes_any_parameter_name() -> None:
    """A parameter named like a name the direct-call machinery uses (``body``, as response-v2's
    ``_data`` has; ``made``) is the caller's value, on the common case and the other."""

    @fields.common(fields.When("wire_error", "is", None), value="body")
    def data(body: str, wire_error: str | None, made: int = 0) -> str:
        return f"{body}+{wire_error}+{made}"

    assert data("b", None) == "b"
    assert data("b", "e") == "b+e+0"
    assert data(body="b", wire_error="e", made=2) == "b+e+2"


def test_a_common_case_is_checked_when_declared() -> None:
    with pytest.raises(TypeError, match="unknown test 'in'"):
        fields.common(fields.When("w", "in", ()))
    with pytest.raises(TypeError, match="no parameter for every test"):
        fields.common(fields.When("v", "falsy"))(lambda w: None)
    with pytest.raises(TypeError, match="plain parameters only"):
        fields.common(fields.When("w", "falsy"))(lambda *w: None)


class _Head(msgspec.Struct, omit_defaults=True):
    count: int | None
    blob: msgspec.Raw = fields.ABSENT
    label: str | None = None


class _Doc(msgspec.Struct, omit_defaults=True):
    success: bool
    head: _Head
    note: str | None = None
    extra: msgspec.Raw = fields.ABSENT


class _Tagged(msgspec.Struct, omit_defaults=True, tag=True):
    success: bool


class _Unset(msgspec.Struct, omit_defaults=True):
    success: bool
    maybe: int | msgspec.UnsetType = msgspec.UNSET


def test_a_build_result_is_written_from_a_byte_template_as_msgspec_encodes_it() -> None:
    """The template leaves a default out, writes a Raw as it is, ``null`` for a required None,
    and gives msgspec's bytes; a Struct it cannot spell (a tag, an UNSET field) is constructed."""

    def blob(payload: msgspec.Raw | None) -> msgspec.Raw:
        return fields.ABSENT if payload is None else payload

    def label(duration_ms: int | None) -> str | None:
        return None if duration_ms is None else f'v"{duration_ms}'

    r = fields.Reading(
        _Decoder(),
        fields.Move("ok", "w.flag"),
        fields.Move("duration_ms", "w.inner.value"),
        fields.Move("payload", "w.blob", absent=True),
    )
    w = fields.Writing(
        fields.Let("blob", blob),
        fields.Let("label", label),
        fields.Build.of("head", _Head, count="duration_ms", blob="blob", label="label"),
        fields.Build.of("out", _Doc, success="ok", head="head", note=fields.Const("n\u00e9")),
    )
    src, dst = _toy(r), _toy(r, w)
    dst.name = "toy2"  # type: ignore[misc]
    fn = fields.pair_function(src, dst)
    assert fn is not None
    text = fields.source(fn)
    assert "b''.join(" in text and "_Doc(" not in text and "_Head(" not in text
    docs = [
        b'{"flag":true}',
        b'{"flag":false,"inner":{"value":5},"blob":[1, 2]}',
        b'{"flag":true,"inner":{"value":null},"blob":{"a":"\\u00e9"}}',
    ]
    for b in docs:
        o = msgspec.json.decode(b, type=_Outer)
        value = None if o.inner is None else o.inner.value
        want = msgspec.json.encode(_Doc(o.flag, _Head(value, o.blob, label(value)), "n\u00e9"))
        assert fn(b, _Ctx()) == want  # type: ignore[arg-type]
    for struct in (_Tagged, _Unset):
        w2 = fields.Writing(fields.Build.of("out", struct, success="ok"))
        dst2 = _toy(r, w2)
        dst2.name = "toy2"  # type: ignore[misc]
        fn2 = fields.pair_function(src, dst2)
        assert fn2 is not None and f"{struct.__name__}(" in fields.source(fn2)
        assert fn2(docs[1], _Ctx()) == msgspec.json.encode(struct(False))  # type: ignore[arg-type]


def test_a_pair_function_is_its_own_declarations_where_others_were_freed_before() -> None:
    """Compiled pairs are keyed by the declarations themselves: a writing made where a freed one
    lived (CPython reuses addresses at once) gets its own function, never the freed one's (keyed
    by ``id()``, the test above failed now and then after another test's toy pair)."""
    r = fields.Reading(_Decoder(), fields.Move("ok", "w.flag"))
    for note in ("a", "b", "c", "d", "e", "f"):
        w = fields.Writing(fields.Build.of("out", _Doc, success="ok", head=fields.Const(None), note=fields.Const(note)))
        dst = _toy(r, w)
        dst.name = "toy2"  # type: ignore[misc]
        fn = fields.pair_function(_toy(r), dst)
        assert fn is not None
        assert fn(b'{"flag":true}', _Ctx()) == msgspec.json.encode(_Doc(True, None, note))  # type: ignore[arg-type]
        del w, dst, fn


def test_a_bound_pairs_constant_output_parts_are_joined_once() -> None:
    """A run of the template's parts that reads only the binding's constant steps is joined once
    when the pair is bound: msgspec's bytes, the unbound function's; a constant that cannot be
    encoded is still an error for every document, as unbound."""

    def stamp(summary: str | None) -> str:  # constant: the source never defines a summary
        return "s\u00e9" if summary is None else summary

    def broken(summary: str | None) -> str:
        return "\ud800"  # a lone surrogate: msgspec cannot encode it

    r = fields.Reading(_Decoder(), fields.Move("ok", "w.flag"), fields.Move("duration_ms", "w.inner.value"))
    docs = [b'{"flag":true}', b'{"flag":false,"inner":{"value":5}}']
    for hook, error in ((stamp, None), (broken, UnicodeEncodeError)):
        w = fields.Writing(
            fields.Let("stamp", hook),
            fields.Build.of("head", _Head, count="duration_ms", label="stamp"),
            fields.Build.of("out", _Doc, success="ok", head="head", note="stamp"),
        )
        src, dst = _toy(r), _toy(r, w)
        dst.name = "toy2"  # type: ignore[misc]
        unbound = fields._compile_pair(src, dst)  # not the cache: its key is the declarations' ids
        bind = fields.source(unbound).split("\ndef bind(ctx):\n")[1].split("_bound(buf, members=None):")[0]
        assert "t_fixed1 = b''.join(" in bind and "t_fixed2" not in bind  # label, '}', note, '}': one run
        ctx = _Ctx()
        bound = fields._BINDERS[unbound](ctx)
        for b in docs:
            if error is not None:
                assert bound is None  # no binding: the unbound function raises for every document
                with pytest.raises(error):
                    unbound(b, ctx)  # type: ignore[arg-type]
                continue
            assert bound is not None
            o = msgspec.json.decode(b, type=_Outer)
            count = None if o.inner is None else o.inner.value
            want = msgspec.json.encode(_Doc(o.flag, _Head(count, label="s\u00e9"), "s\u00e9"))
            assert bound(b) == unbound(b, ctx) == want  # type: ignore[arg-type]


def test_a_common_case_tests_a_pattern_inline() -> None:
    """``matches`` / ``no match`` take a compiled pattern's ``match``; the direct call takes the tests too."""
    from envglot.wire import OBJECT_AT

    calls: list[bytes] = []

    @fields.common(fields.When("raw", "matches", OBJECT_AT), value="raw")
    def obj(raw: bytes) -> bytes:
        calls.append(raw)
        return b"{}"

    assert (obj(b'{"a":1}'), obj(b"[1]"), calls) == (b'{"a":1}', b"{}", [b"[1]"])
    with pytest.raises(TypeError, match="takes a pattern's match"):
        fields.common(fields.When("raw", "matches", "{"))
    with pytest.raises(TypeError, match="takes a pattern's match"):
        fields.common(fields.When("raw", "is", OBJECT_AT))


def test_generated_code_tests_a_one_byte_pattern_by_its_first_byte_and_others_negated() -> None:
    """In generated code a pattern of one literal byte (``OBJECT_AT``) is read as the value's first
    byte (no regex call), any other ``matches`` by its negated pattern (no match object made where
    it holds); both answer as the pattern's ``match`` for every value, as the direct call's form
    (the ``match`` call, kept) does."""
    import re

    from envglot.wire import OBJECT_AT, WRAPPED_AT

    assert fields._first_byte(OBJECT_AT) == ord("{")
    others = (WRAPPED_AT, re.compile(rb"a|b").match, re.compile(rb"\d").match, re.compile(rb"a", re.I).match)
    for other in (*others, re.compile("a").match, re.compile(rb"a").search, re.compile(rb"").match, len):
        assert fields._first_byte(other) is None
    assert fields._negated(re.compile(rb"(?s)a").match) is None  # a global flag cannot be wrapped
    values = [Raw(b""), Raw(b"{}"), Raw(b'{"value":1}'), Raw(b'{ "value" :2}'), Raw(b"[1]"), Raw(b" {}")]
    values += [b"{", b"", b"x", bytearray(b"{x"), memoryview(b"[")]
    for pattern in (OBJECT_AT, WRAPPED_AT, re.compile(rb"x").match, re.compile(rb"\[").match):
        for op in ("matches", "no match"):
            ns: dict[str, Any] = {}

            def ref(obj: object, hint: str, ns: dict[str, Any] = ns) -> str:
                ns[f"{hint}_{len(ns)}"] = obj
                return f"{hint}_{len(ns) - 1}"

            c = fields.Common((fields.When("v", op, pattern),), fields.Const(True), lambda v: None)
            inline, _ = fields._common_exprs(c, lambda p: p, ref)
            plain, _ = fields._common_exprs(c, lambda p: p, ref, False)
            assert ("FIRST_BYTE" in inline) is (pattern is not WRAPPED_AT), inline
            assert ("is None" in inline) is (pattern is WRAPPED_AT), inline  # negated, or "no match" as it was
            assert "FIRST_BYTE" not in plain and plain.endswith("is not None" if op == "matches" else "is None")
            for v in values:
                want = (pattern(v) is not None) is (op == "matches")
                assert bool(eval(inline, ns, {"v": v})) is want, (inline, v)
                assert bool(eval(plain, ns, {"v": v})) is want, (plain, v)


def test_generated_code_tests_no_match_of_a_byte_class_literal_head_by_its_first_bytes() -> None:
    """A ``no match`` of a pattern that is a byte, a class repeated ``*`` and literal bytes
    (``WRAPPED_AT``) is first decided on the value's first bytes (``_head_rule``), the ``match``
    call taken only where they cannot say; it answers as the pattern's ``match`` for every value:
    spaced heads, a changed byte at every place, short values, ``Raw``, ``bytearray``, ``memoryview``."""
    import random
    import re

    from envglot.wire import OBJECT_AT, WRAPPED_AT

    assert fields._head_rule(WRAPPED_AT) == (b'{"value"', frozenset(b" \t\r\n"))
    assert fields._head_rule(re.compile(rb"a[ ]*bc").match) == (b"abc", frozenset(b" "))
    for other in (
        OBJECT_AT,
        re.compile(rb"a[ ]*b|c").match,  # an alternation
        re.compile(rb"a[^ ]*bc").match,  # a negated class
        re.compile(rb"a[ ]+bc").match,  # not ``*``
        re.compile(rb"a[ ]*b*c").match,  # the literal repeated: one byte left
        re.compile(rb"a[b]*bc").match,  # the literal's first byte in the class
        re.compile(rb"a[ ]*bc", re.I).match,
        re.compile(r"a[ ]*bc").match,
        re.compile(rb"a[ ]*bc").search,
        re.compile(rb"\d[ ]*bc").match,
        len,
    ):
        assert fields._head_rule(other) is None, other
    rng = random.Random(1828)
    heads = [b'{"value":1}', b'{ "value" :2}', b'{\t"value":3}', b'{"values":1}', b'{"valu"', b"{}", b"[1]", b""]
    heads += [b'{"value":1}'[:i] + bytes((b,)) + b'{"value":1}'[i + 1 :] for i in range(9) for b in b'{ "\tvx:}\x00']
    heads += [bytes(rng.choice(b'{ \t"value:x}') for _ in range(rng.randrange(14))) for _ in range(3000)]
    values: list[Any] = [f(h) for h in heads for f in (Raw, bytes)] + [bytearray(h) for h in heads[:40]]
    values += [memoryview(h) for h in heads[:40]]
    for pattern in (WRAPPED_AT, re.compile(rb"a[ ]*bc").match):
        ns: dict[str, Any] = {}

        def ref(obj: object, hint: str, ns: dict[str, Any] = ns) -> str:
            ns[f"{hint}_{len(ns)}"] = obj
            return f"{hint}_{len(ns) - 1}"

        c = fields.Common((fields.When("v", "no match", pattern),), fields.Const(True), lambda v: None)
        inline, _ = fields._common_exprs(c, lambda p: p, ref)
        assert "HEAD" in inline, inline
        for v in values:
            assert bool(eval(inline, ns, {"v": v})) is (pattern(v) is None), (inline, v)


def test_a_holding_checks_tests_are_known_to_a_later_common_case_on_the_value_it_gave() -> None:
    """After a ``holds`` check, a common case whose tests are the check's, on a value a path-valued
    common case gave (``payload`` from ``w.blob``), is taken by ``payload is w.blob`` first; any
    other value still takes the tests, and the outputs are those of the tests alone."""
    from envglot.wire import OBJECT_AT

    @fields.common(fields.When("w.blob", "matches", OBJECT_AT), holds=True)
    def blob_is_object(w: _Outer) -> None:
        raise ValueError("blob must be an object")

    @fields.common(fields.When("w.flag", "truthy"), value="w.blob")
    def payload_of(w: _Outer) -> msgspec.Raw:
        return msgspec.Raw(b"[1]")  # another value than w.blob: the writer's tests decide

    @fields.common(
        fields.When("payload", "is not", None), fields.When("payload", "matches", OBJECT_AT), value="payload"
    )
    def body(payload: msgspec.Raw | None) -> msgspec.Raw:
        return msgspec.Raw(b"{}")

    def note(body: msgspec.Raw) -> str:
        return bytes(body).decode()

    def reading(check: Callable[..., None]) -> fields.Reading:
        return fields.Reading(
            _Decoder(), fields.Move("ok", "w.flag"), fields.Check(check), fields.Let("payload", payload_of)
        )

    w = fields.Writing(
        fields.Let("body", body), fields.Let("note", note), fields.Build.of("out", _Out, success="ok", note="note")
    )
    src, dst = _toy(reading(blob_is_object)), _toy(reading(blob_is_object), w)
    dst.name = "toy2"  # type: ignore[misc]
    fn = fields._compile_pair(src, dst)
    assert "w_body = payload if payload is w.blob or payload is not None and " in fields.source(fn)
    assert fn(b'{"flag":true,"blob":{"a":1}}', _Ctx()) == b'{"success":true,"note":"{\\"a\\":1}"}'
    assert fn(b'{"flag":false,"blob":{"a":1}}', _Ctx()) == b'{"success":false,"note":"{}"}'
    with pytest.raises(ValueError, match="must be an object"):
        fn(b'{"flag":true,"blob":[2]}', _Ctx())

    # without ``holds`` nothing is known: the tests alone
    plain = fields.common(fields.When("w.blob", "matches", OBJECT_AT))(blob_is_object.__wrapped__)  # type: ignore[attr-defined]
    src2, dst2 = _toy(reading(plain)), _toy(reading(plain), w)
    dst2.name = "toy2"  # type: ignore[misc]
    assert "payload is w.blob" not in fields.source(fields._compile_pair(src2, dst2))


def test_a_common_case_writes_an_integer_into_a_pattern() -> None:
    """``int in`` takes an ``int`` (not a ``bool``, not a float) within its bounds; ``Formatted``
    writes it into its pattern as a ``Raw``; anything else takes the body."""
    calls: list[object] = []

    @fields.common(
        fields.When("t", "is", None), fields.When("ms", "int in", (0, 9)), value=fields.Formatted(b'{"ms":%d}', "ms")
    )
    def timing(t: object, ms: object) -> msgspec.Raw:
        calls.append(ms)
        return msgspec.Raw(b"body")

    got = [bytes(timing(None, v)) for v in (0, 9, 10, -1, True, 3.0)]
    assert got == [b'{"ms":0}', b'{"ms":9}', b"body", b"body", b"body", b"body"]
    assert calls == [10, -1, True, 3.0] and bytes(timing(1, 3)) == b"body"
    with pytest.raises(TypeError, match=r"takes \(lowest, highest\) integers"):
        fields.common(fields.When("ms", "int in", (0, 1.5)))
    with pytest.raises(TypeError, match=r"takes \(lowest, highest\) integers"):
        fields.common(fields.When("ms", "is", (0, 1)))


def test_dotbot_to_response_v2_writes_metas_constant_members_from_its_binder() -> None:
    """The real pair, beside the toy one above: the bound dotbot -> response-v2 function writes
    meta's members that no document changes (pagination, rate_limit, the content-fidelity
    members) from runs its binder joined, and reads none of their steps per document."""
    conv = envglot.Converter(to="response-v2", from_="dotbot", unsupported="ignore")
    doc = (
        b'{"schema_id":"dotbot-mcp-response@1","tool":"t","version":"1.0.0","status":"ok","summary":"s",'
        b'"data":{"a":1},"warnings":[],"errors":[],'
        b'"audit":{"timestamp":"2026-01-01T00:00:00Z","duration_ms":3,"source":"x"}}'
    )
    assert conv.convert_bytes(doc).endswith(b'"meta":{"version":"response-v2","telemetry":{"duration_ms":3}}}')
    fn = fields.pair_function(get_dialect("dotbot"), get_dialect("response-v2"))
    assert fn is not None
    binder, per_document = fields.source(fn).split("\ndef bind(ctx):\n")[1].split("_bound(buf, members=None):")
    runs = [line for line in binder.splitlines() if line.strip().startswith("t_fixed")]
    members = (b"pagination", b"rate_limit", b"content_fidelity", b"content_fidelity_schema_version")
    assert all(any(repr(b',"' + m + b'":') in r for r in runs) for m in members)
    for name in ("w_page", "w_rate", "w_fid"):
        assert name not in per_document
    assert all(r.split("=", 1)[0].strip() in per_document for r in runs)


@pytest.mark.parametrize("src", ["code-graph", "dotbot", "errorcode", "legacy-v1"])
def test_a_bound_pair_read_strictly_gives_its_bytes_or_none(src: str) -> None:
    """``members=STRICT_READ``: the document read by its reader's strict decode alone, the same
    output as without members where that decode reads it, ``None`` (take the hub) where it refuses
    it (a key its wire Struct does not have) or where there is no strict decode (legacy-v1)."""
    m = default_mappings()
    reader = get_dialect(src).steps()[0]
    assert reader is not None
    strict = getattr(reader.decoder, "decoder", None)
    read = 0
    for dst in ("response-v2", "result"):
        fused = fields.bound_pair(get_dialect(src), get_dialect(dst), Context(m, DISCARD, m[src]))
        assert fused is not None
        for doc in [p.read_bytes() for p in sample_files(src)]:
            tight = msgspec.json.format(doc, indent=-1)
            if strict is None:
                assert fused(tight, fields.STRICT_READ) is None
                continue
            try:
                strict().decode(tight)
            except msgspec.MsgspecError:  # an unknown key, ...: only the other decode reads it
                assert fused(tight, fields.STRICT_READ) is None
                continue
            read += 1
            assert fused(tight, fields.STRICT_READ) == fused(tight), (src, dst, doc[:80])
            assert fused(tight[:-1] + b',"zz-unknown":1}', fields.STRICT_READ) is None
    assert read or strict is None


@pytest.mark.parametrize("src", ["code-graph", "dotbot", "legacy-v1"])
def test_a_strict_reader_is_the_bound_pair_called_with_strict_read(src: str) -> None:
    """``strict_reader(fused)(buf)`` answers as ``fused(buf, STRICT_READ)`` (bytes, ``None``, the
    same error), through the same code with that default where ``fused`` is a bound pair function
    (generated, or the wrapper of one that is not: legacy-v1's), without a frame of its own;
    ``fused`` itself keeps its default; a function of another signature is wrapped."""
    m = default_mappings()
    for dst in ("response-v2", "errorcode"):
        fused = fields.bound_pair(get_dialect(src), get_dialect(dst), Context(m, DISCARD, m[src]))
        assert fused is not None
        strictly = fields.strict_reader(fused)
        assert strictly.__code__ is fused.__code__ and strictly.__defaults__ == (fields.STRICT_READ,)
        docs = [msgspec.json.format(p.read_bytes(), indent=-1) for p in sample_files(src)]
        docs += [doc[:-1] + b',"zz-unknown":1}' for doc in docs[:3]] + [b'{"a":', b"[]", b'{"status":"ok"}']
        for doc in docs:
            want: Any
            try:
                want = fused(doc, fields.STRICT_READ)
            except Exception as exc:  # (an error is an answer too)
                want = (type(exc), str(exc))
            try:
                got: Any = strictly(doc)
            except Exception as exc:
                got = (type(exc), str(exc))
            assert got == want, (src, dst, doc[:80])
        assert fused.__defaults__ == (None,)
    seen: list[tuple[bytes, object]] = []

    def other(buf: bytes, members: object, extra: int = 0) -> None:
        seen.append((buf, members))

    fields.strict_reader(other)(b"{}")
    assert seen == [(b"{}", fields.STRICT_READ)]


def test_the_encoder_gives_a_raw_value_as_it_is() -> None:
    """The strict read's count takes a ``Raw`` member's bytes by the encoder (cheaper than
    ``bytes()``): it must give them as they are, spaced, escaped or not UTF-8-minimal alike."""
    encode = msgspec.json.Encoder().encode
    values = [b'{"status":1}', b'{ "a" : [1, 2] }', b'"\\u00e9\\""', b'"\xc3\xa9"', b"[]", b"1e2", b"null", b""]
    for text in values:
        raw = Raw(text)
        assert encode(raw) == bytes(raw) == text
    top = msgspec.json.Decoder(dict[str, Raw]).decode(b'{"data":{ "status" : "ok" },"x":"\\u00e9"}')
    assert [encode(v) for v in top.values()] == [b'{ "status" : "ok" }', b'"\\u00e9"']


class _SlotMeta(msgspec.Struct, omit_defaults=True):
    version: str
    note: str | None = None


class _SlotDoc(msgspec.Struct, omit_defaults=True):
    ok: bool
    meta: _SlotMeta


class _SlotTagged(msgspec.Struct, omit_defaults=True, tag=True):
    ok: bool


def _slot_touch(meta: _SlotMeta) -> int:
    return 0


def test_slot_after_last_reads_the_writings_declaration() -> None:
    """``fields.slot_after_last``: a slot the result Build's Struct never writes (a field given no
    member, left out at its default), or two keys whose first is the object's last field, always
    written, a Build's; refused after a ``finish`` hook, for a Build another step reads (a hook may
    change it), for a result that is no Build, a Struct not written as an object of its fields,
    and a slot the Build writes or not at the object's end."""
    meta = fields.Build.of("meta", _SlotMeta, version=fields.Const("1"))
    out = fields.Build.of("out", _SlotDoc, ok=fields.Const(True), meta="meta")
    writing = fields.Writing(meta, out)
    assert fields.slot_after_last(writing, ("meta", "_envglot"))
    assert fields.slot_after_last(writing, ("meta", "note"))  # never given: left out
    assert fields.slot_after_last(writing, ("_envglot",))
    assert not fields.slot_after_last(writing, ("meta", "version"))
    assert not fields.slot_after_last(writing, ("ok", "x"))  # not the last field
    assert not fields.slot_after_last(writing, ("ok",))
    noted = fields.Writing(fields.Build.of("meta", _SlotMeta, version=fields.Const("1"), note="x"), out)
    assert not fields.slot_after_last(noted, ("meta", "note"))
    assert not fields.slot_after_last(fields.Writing(meta, out, finish=lambda doc: doc), ("_envglot",))
    read = fields.Writing(meta, fields.Let("seen", _slot_touch), out)
    assert not fields.slot_after_last(read, ("meta", "_envglot"))
    assert fields.slot_after_last(read, ("_envglot",))  # a nested Struct changed: no key of the top level

    def _slot_seal(out: _SlotDoc) -> int:
        return 0

    assert not fields.slot_after_last(fields.Writing(meta, out, fields.Let("sealed", _slot_seal)), ("_envglot",))
    hooked = fields.Writing(meta, fields.Let("out", _slot_touch))
    assert not fields.slot_after_last(hooked, ("_envglot",))
    tagged = fields.Writing(fields.Build.of("out", _SlotTagged, ok=fields.Const(True)))
    assert not fields.slot_after_last(tagged, ("_envglot",))
