"""The fused pair paths that count (``envglot.fields.tallying_pair``) against the hub.

For every ordered pair of declared dialects, over the goldens and examples, ``../shared/upstream/``,
a deterministic sample of the benchmark corpus and hypothesis-generated documents: a conversion
given a :class:`~envglot.diagnostics.Counting` report (the fused path where it applies) gives
the bytes, the source, the multiset of ``(kind, source path)`` and the outcome (under ``raise``,
the same error) that the hub gives with a full :class:`~envglot.diagnostics.Report`; and
``migrate`` counts the same kinds with and without the fused path, and its per-record loop writes and
counts what each record migrated alone gives.
"""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import envglot
from envelopes import documents, sample_files
from envglot import fields, pipeline
from envglot.context import Context
from envglot.detect import classify_members, top_level
from envglot.diagnostics import Counting, RefusedError, Report
from envglot.dialect import Dialect, registered
from envglot.errors import EnvglotError
from envglot.limits import check_input, within_depth
from envglot.mappings import mappings_for
from envglot.migration.inputs import Task
from envglot.migration.records import Migrator, reject_line
from envglot.migration.tally import Tally
from envglot.migration.workers import ChunkResult, migrate_chunk
from envglot.options import Options
from envglot.pipeline import Pipeline

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = ROOT / ".." / "shared" / "upstream"
DECLARED = [d.name for d in registered() if d.reading is not None]
TARGETS = [d.name for d in registered() if d.writing is not None]
LEVELS = ("ignore", "raise")

_spec = importlib.util.spec_from_file_location("bench_corpus_tally", ROOT / "benchmarks" / "corpus.py")
assert _spec is not None and _spec.loader is not None
bench_corpus = importlib.util.module_from_spec(_spec)
sys.modules["bench_corpus_tally"] = bench_corpus
_spec.loader.exec_module(bench_corpus)

_CALLS = Counter[str]()
"""Fused counting calls that gave the output (``done``) and that left the document to the hub (``hub``)."""


@pytest.fixture(autouse=True)
def _spy(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def spied(fn: Any) -> Any:
        def spy(*args: Any) -> Any:
            out = fn(*args)
            _CALLS["done" if out is not None else "hub"] += 1
            return out

        spy.spied = fn  # type: ignore[attr-defined]
        return spy

    def spying(src: Dialect, dst: Dialect, mappings: Any) -> Any:
        fn = fields.tallying_pair(src, dst, mappings)
        return None if fn is None else spied(fn)

    def bound_spying(fn: Any, ctx: Any) -> Any:  # the counter's function bound to its context
        # a pipeline built before this test (a cached Converter) holds its unspied function
        return spied(fields.bound_tally(getattr(fn, "spied", fn), ctx))

    monkeypatch.setattr(pipeline, "tallying_pair", spying)
    monkeypatch.setattr(pipeline, "bound_tally", bound_spying)
    yield
    fields.use_compiled(True)


_PIPES: dict[tuple[str | None, str, str], Pipeline] = {}


def _pipe(src: str | None, dst: str, level: str) -> Pipeline:
    key = (src, dst, level)
    p = _PIPES.get(key)
    if p is None:
        p = _PIPES[key] = Pipeline(src, dst, Options(unsupported=level))
    return p


def _refused(exc: EnvglotError) -> tuple[Any, ...]:
    return (type(exc).__name__, str(exc), exc.path, sorted((d.kind, d.path) for d in getattr(exc, "diagnostics", ())))


def _hub(p: Pipeline, doc: bytes) -> tuple[Any, ...]:
    try:
        conv = p.run(doc, Report(p.policy))
    except EnvglotError as exc:
        return _refused(exc)
    lossy = any(p.policy.selects(d) for d in conv.diagnostics)
    return ("ok", conv.output, conv.source, conv.unwrapped, sorted((d.kind, d.path) for d in conv.diagnostics), lossy)


def _counted(p: Pipeline, doc: bytes) -> tuple[Any, ...]:
    report = Counting(p.policy)
    try:
        t = p.tally(doc)
        p.convert(doc, report)  # the multiset with paths (tally keeps the kinds only)
    except EnvglotError as exc:
        return _refused(exc)
    assert sorted(t.kinds) == sorted(k for k, _ in report.seen)
    return ("ok", t.output, t.source, t.unwrapped, sorted(report.seen), t.selected)


def _check(doc: bytes, dst: str, src: str | None = None) -> None:
    for level in LEVELS:
        p = _pipe(src, dst, level)
        hub, counted = _hub(p, doc), _counted(p, doc)
        assert counted == hub, f"{src or 'detected'} -> {dst} ({level}) differs for {doc[:300]!r}"


def _files() -> list[Path]:
    out = [p for d in registered() for p in sample_files(d.name)]
    if UPSTREAM.is_dir():
        out += sorted(UPSTREAM.rglob("*.json"))
    return out


FILES = _files()
DOCUMENTS = {name: documents(name) for name in DECLARED}


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_files_count_what_the_hub_reports(path: Path) -> None:
    doc = path.read_bytes()
    for dst in TARGETS:
        _check(doc, dst)


@pytest.fixture(scope="module")
def corpus() -> list[Any]:
    return list(bench_corpus.generate({"tiny": 8, "medium": 3, "large": 1}, seed=11, dialects=tuple(DECLARED)))


def test_the_benchmark_corpus_counts_what_the_hub_reports(corpus: list[Any]) -> None:
    before = _CALLS["done"]
    for rec in corpus:
        for dst in TARGETS:
            _check(rec.data, dst, src=rec.dialect)
            _check(rec.data, dst)
    assert _CALLS["done"] - before >= len(corpus) * len(TARGETS), "the fused counting path was not taken"


def _fresh(p: Pipeline, doc: bytes, checked: Any, members: Any) -> tuple[Any, ...]:
    """``doc`` converted with a fresh :class:`Counting` report (a refusal: as the full report says it)."""
    report = Counting(p.policy)
    try:
        try:
            out, src, unwrapped = p.convert(doc, report, checked, members)
        except RefusedError:
            p.convert(doc, Report(p.policy), checked, members)
            raise AssertionError("refused with a Counting report, not with a full one") from None
    except EnvglotError as exc:
        return _refused(exc)
    return ("ok", out, src, unwrapped, list(report.seen), bool(report.seen) and report.selected())


@pytest.mark.parametrize("unsupported", ["ignore", "warn", "raise"])
def test_a_counter_counts_each_document_as_a_fresh_report_would(corpus: list[Any], unsupported: str) -> None:
    """:meth:`Pipeline.counter` (one report, and one context per source, for every document; a
    detected document straight to the counting function) against :meth:`Pipeline.convert` with a
    fresh :class:`Counting` report per document, given the same detection: the same output,
    source, ``(kind, path)`` list in order and selection, or the same error; over the benchmark
    corpus, a weakly detected payload, a BOM and whitespace."""
    p = Pipeline(None, "response-v2", Options(unsupported=unsupported))
    count = p.counter()
    docs = [rec.data for rec in corpus]
    docs += [b'{"just": "a payload"}', b'\xef\xbb\xbf{"just": 1}', b' {"status": "ok", "data": {}}']
    before, weak = _CALLS["done"], 0
    for doc in docs:
        clean, bom = check_input(doc, p.max_depth, depth=False)
        members = within_depth(top_level, clean, p.max_depth, bom)
        checked = (clean, bom, classify_members(members, p.registry))
        weak += checked[2].evidence is None
        want = _fresh(p, doc, checked, members)
        try:
            out, src, unwrapped, seen, selected = count(doc, checked, members)
            got: tuple[Any, ...] = ("ok", out, src, unwrapped, list(seen), selected)
        except EnvglotError as exc:
            got = _refused(exc)
        assert got == want, f"{unsupported}: {doc[:300]!r}"
    assert weak >= 2
    assert _CALLS["done"] - before >= len(corpus), "the fused counting path was not taken"


_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("src", DECLARED)
@_SETTINGS
@given(data=st.data())
def test_generated_documents_count_what_the_hub_reports(src: str, data: st.DataObject) -> None:
    doc = msgspec.json.encode(data.draw(DOCUMENTS[src]))
    dst = data.draw(st.sampled_from(TARGETS))
    _check(doc, dst, src=src)
    _check(doc, dst)


def _errorcode_failure(**error: object) -> bytes:
    """An errorcode failure of one code and stated ``retryable`` (one failure plan's key), ``error``'s
    members added."""
    e = {"code": "x_rate_limited", "message": "Rate limit exceeded", "retryable": True, **error}
    return msgspec.json.encode(
        {"success": False, "data": None, "error": e, "meta": {"tool_version": "1.0", "elapsed_ms": 3}}
    )


def _ordered(p: Pipeline, doc: bytes) -> list[tuple[str, str]]:
    """The ``(kind, path)`` list, in order, the chunk loop's counter gives ``doc`` (a fresh counter)."""
    clean, bom = check_input(doc, p.max_depth, depth=False)
    top = within_depth(top_level, clean, p.max_depth, bom)
    out = p.counter()(doc, (clean, bom, classify_members(top, p.registry)), top)
    return [(str(k), path) for k, path in out[3]]


def test_a_failure_counts_what_its_values_decide() -> None:
    """Failures of one failure plan (code, stated ``retryable``) whose error members are all present
    and truthy but whose values differ count what the hub reports, and count differently: a failure's
    ``(kind, path)`` list is not a function of its plan and which members it has (a negative
    ``retry_after_ms`` is dropped, 2**62 coerced), so counting a failure from its plan must
    take its values into account (docs/performance.md, "the failure plans on the counting path")."""
    docs = [_errorcode_failure(retry_after_ms=ms, rate_limit_reset="soon") for ms in (5, -5, 2**62)]
    for doc in docs:
        for dst in TARGETS:
            _check(doc, dst, src="errorcode")
            _check(doc, dst)
    p = _pipe(None, "response-v2", "ignore")
    before = _CALLS["done"]
    lists = [_ordered(p, doc) for doc in docs]
    assert _CALLS["done"] - before == len(docs), "the fused counting path was not taken"
    assert lists[0] == [("field_dropped", "$.error.rate_limit_reset"), ("code_respelled", "$.error.code")]
    assert lists[1] == [*lists[0], ("field_dropped", "$.error.retry_after_ms")]
    assert lists[2] == [*lists[0], ("value_coerced", "$.error.retry_after_ms")]


def _outcomes(m: Migrator, records: list[bytes]) -> list[tuple[Any, ...]]:
    return [
        (o.status, o.output, o.source, o.lossy, o.unwrapped, sorted(o.kinds), o.error, o.error_type, o.path)
        for o in map(m.record, records)
    ]


@pytest.mark.parametrize("unsupported", ["warn", "raise"])
def test_migrate_counts_the_same_with_and_without_the_fused_path(
    corpus: list[Any], tmp_path: Path, unsupported: str
) -> None:
    records = [rec.data for rec in corpus if b"\n" not in rec.data]
    assert records
    fast = Migrator(to="response-v2", unsupported=unsupported)
    full = Migrator(to="response-v2", unsupported=unsupported, details=True)  # every record through the hub
    assert _outcomes(fast, records) == _outcomes(full, records)
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"\n".join(records) + b"\n")
    reports = []
    for compiled in (True, False):
        fields.use_compiled(compiled)
        out = tmp_path / f"out-{compiled}"
        rep = envglot.migrate([src], out=out, to="response-v2", unsupported=unsupported, jobs=1)
        d = msgspec.json.decode(msgspec.json.encode(rep.to_dict()).replace(str(out).encode(), b"OUT"))
        for timing in ("elapsed_s", "records_per_s", "mb_per_s"):
            del d[timing]
        reports.append((d, (out / src.name).read_bytes()))
    fields.use_compiled(True)
    assert reports[0] == reports[1]
    assert reports[0][0]["diagnostics"], "nothing was counted"


ACME = ROOT / "examples" / "declared" / "acme.toml"


@pytest.mark.parametrize("unsupported", ["warn", "raise"])
def test_a_dialect_declared_in_toml_counts_what_the_hub_reports(unsupported: str) -> None:
    """A TOML-declared dialect (its own tables and steps, loaded as an overlay) both ways."""
    docs = [p.read_bytes() for p in sorted((ACME.parent / "acme").glob("*.json"))]
    assert docs
    before = _CALLS["done"]
    records = [msgspec.json.format(d, indent=-1) for d in docs]
    home = Migrator(to="acme", unsupported=unsupported, mappings=[str(ACME)])
    home_full = Migrator(to="acme", unsupported=unsupported, mappings=[str(ACME)], details=True)
    for to in ("response-v2", "dotbot", "errorcode"):
        fast = Migrator(to=to, unsupported=unsupported, mappings=[str(ACME)])
        full = Migrator(to=to, unsupported=unsupported, mappings=[str(ACME)], details=True)
        outs = _outcomes(fast, records)
        assert outs == _outcomes(full, records)
        back = [o[1] for o in outs if o[1] is not None]  # and the converted records back into acme
        assert back or unsupported == "raise"  # under raise every record may be refused
        assert _outcomes(home, back) == _outcomes(home_full, back)
    assert _CALLS["done"] > before, "the fused counting path was not taken"


def test_a_counting_function_is_generated_for_one_pair_of_tables() -> None:
    """Its loss check comes from the two tables' loss facts: the same tables give the same function,
    other tables (an overlay's) another one, and a document that sets a field the target cannot
    carry counts it with the source path of the tables it was converted with."""
    by = {d.name: d for d in registered()}
    src, dst = by["errorcode"], by["response-v2"]
    bundled, overlaid = mappings_for(None), mappings_for([str(ACME)])
    fn = fields.tallying_pair(src, dst, bundled)
    assert fn is not None and fn is fields.tallying_pair(src, dst, bundled)
    assert fields.tallying_pair(src, dst, overlaid) not in (None, fn)
    doc = b'{"success":true,"data":{},"meta":{"tool_version":"1.0","elapsed_ms":5,"mode":"plan","approval_mode":true}}'
    _check(doc, "response-v2", "errorcode")  # the hub's bytes, (kind, path) multiset and outcome
    report = Counting("ignore")
    assert fn(Context(bundled, report, bundled["errorcode"]), doc) is not None
    assert {p for _, p in report.seen} >= {"$.meta.mode", "$.meta.approval_mode"}


def _chunk_by_record(m: Migrator, task: Task) -> ChunkResult:
    """What the chunk loop must give: each line through :meth:`Migrator.record` and :meth:`Tally.count`
    (a blank line copied as it is, a record's terminator kept, a reject leaving no output)."""
    res = ChunkResult(out=b"", rejects=[], tally=Tally(bytes_in=len(task.data)))
    out = []
    for i, line in enumerate(task.data.splitlines(keepends=True)):
        lineno = task.first_line + i
        if not line.strip():
            out.append(line)
            continue
        body = line.rstrip(b"\n")
        term = line[len(body) :]
        if term and body.endswith(b"\r"):
            body, term = body[:-1], b"\r\n"
        o = m.record(body)
        res.tally.count(o)
        if o.status == "converted":
            assert o.output is not None
            out.append(o.output + term)
        elif o.status == "passed":
            out.append(line)
        else:
            res.rejects.append((lineno, reject_line(task.source, lineno, body, o)))
    res.out = b"".join(out)
    res.tally.bytes_out = len(res.out)
    return res


@pytest.mark.parametrize("unsupported", ["ignore", "warn", "raise"])
def test_the_chunk_loop_counts_and_writes_what_each_record_gives(corpus: list[Any], unsupported: str) -> None:
    """``migrate``'s per-record loop (records counted straight into the chunk's tally) against each
    record migrated alone and counted from its Outcome: the same bytes, rejects and counts, over
    the benchmark corpus, target records, corrupt records, blank lines, CRLF and a last line
    without its terminator."""
    recs = [rec.data for rec in corpus if b"\n" not in rec.data and b"\r" not in rec.data]
    v2 = [r for r in recs if Migrator(to="response-v2").record(r).status == "passed"]
    assert v2, "no record passes through"
    lines = [
        *(r + b"\n" for r in recs),
        b"\n",
        b"  \t \n",
        b"\r\n",
        recs[0] + b"\r\n",
        b"   " + recs[1] + b"\n",
        b"not json at all\n",
        b'\xff\xfe{"bad utf-8": 1}\n',
        b'{"truncated": \r\n',
        v2[0] + b"\r\n",
        b"\x0b\x0c\n",
        recs[2],  # the last line, without its terminator
    ]
    data = b"".join(lines)
    for details in (False, True):
        m = Migrator(to="response-v2", unsupported=unsupported, details=details)
        task = Task("in.jsonl", "lines", data, 7, "compact")
        got, want = migrate_chunk(m, task), _chunk_by_record(m, task)
        assert got.out == want.out
        assert got.rejects == want.rejects
        assert msgspec.to_builtins(got.tally) == msgspec.to_builtins(want.tally)
        assert msgspec.json.encode(got.tally) == msgspec.json.encode(want.tally)  # in order (the JSON report)
        assert got.tally.rejected >= 3 and got.tally.passed_through >= 2 and got.tally.diagnostics


@pytest.mark.parametrize("details", [False, True])
def test_a_threads_counting_state_serves_its_chunks_one_at_a_time(corpus: list[Any], details: bool) -> None:
    """:meth:`Migrator.counter`'s state is built once per thread and lent to one chunk at a time:
    chunk after chunk (sources met in earlier chunks), chunks in four threads at once, and a chunk
    started before the last one's ``done``, each give what its records migrated alone give."""
    recs = [rec.data for rec in corpus if b"\n" not in rec.data and b"\r" not in rec.data]
    bad = [b"not json\n", b'{"truncated": \n', b"\n"]
    lines = [r + b"\n" for r in recs]
    tasks = [
        Task(f"in{i}.jsonl", "lines", b"".join([*lines[i::5], bad[i % 3]]), 1, "compact")
        for i in range(5)  # each chunk its own mix of sources, a reject or a blank line in each
    ]
    m = Migrator(to="response-v2", unsupported="warn", details=details)
    want = [_chunk_by_record(m, t) for t in tasks]

    def same(got: ChunkResult, exp: ChunkResult) -> None:
        assert (got.out, got.rejects) == (exp.out, exp.rejects)
        assert msgspec.json.encode(got.tally) == msgspec.json.encode(exp.tally)  # in order

    for _ in range(2):  # the second pass on the state the first left
        for t, exp in zip(tasks, want, strict=True):
            same(migrate_chunk(m, t), exp)
    count, done = m.counter(Tally())
    done()
    lent, lent_done = m.counter(Tally())
    assert lent is count, "the thread's state is built again"
    inner, inner_done = m.counter(Tally())  # started before lent_done: a state of its own
    assert inner is not lent
    inner_done()
    lent_done()
    with ThreadPoolExecutor(4) as pool:
        for got, exp in zip(pool.map(lambda t: migrate_chunk(m, t), tasks * 4), want * 4, strict=True):
            same(got, exp)
