"""envglot.migration: the per-record Migrator and the file engine (Python API)."""

from __future__ import annotations

import base64
import gzip
import json
import os
import pickle
import re
import stat
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

import envglot
from envglot.migration import (
    REJECTS_NAME,
    TEMP_PREFIX,
    MigrationError,
    Migrator,
    clean_stale_temps,
    migrate,
    reject_line,
)

sys.path.insert(0, str(Path(__file__).parent))
from migrate_corpus import MALFORMED, examples, legacy_variant, make_corpus, mcp_wrapped

DOCS = Path(__file__).resolve().parents[1] / "docs" / "migration.md"


def _records(path: Path) -> list[bytes]:
    """The records of an output file: one document for .json, non-blank lines for JSON Lines."""
    data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    base = path.name.removesuffix(".gz")
    if base.endswith(".json"):
        return [data] if data.strip() else []
    return [ln.rstrip(b"\r") for ln in data.split(b"\n") if ln.strip()]


def _outputs(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith(".envglot-")
    }


def _converted(record: bytes) -> bytes:
    out = Migrator()(record).output
    assert out is not None
    return out


def _rejects(path: Path) -> list[dict[str, object]]:
    return [json.loads(ln) for ln in path.read_bytes().splitlines()] if path.exists() else []


def _original(rej: dict[str, object]) -> bytes:
    if "original" in rej:
        return str(rej["original"]).encode("utf-8")
    return base64.b64decode(str(rej["original_b64"]))


# --------------------------------------------------------------------------- per record

_V2 = b'{"success":true,"data":{"a":1},"error":null,"meta":{"version":"response-v2"}}'


@pytest.mark.parametrize(
    ("record", "status", "source"),
    [
        (legacy_variant(0), "converted", "legacy-v1"),
        (legacy_variant(1), "converted", "legacy-v1"),
        (legacy_variant(5), "converted", "legacy-v1"),
        *[(msgspec.json.format(b, indent=-1), "converted", d) for d, _, b in examples() if d != "response-v2"],
        (_V2, "passed", "response-v2"),
        (b'  {"success":true,"data":{},"error":null,"meta":{"version":"response-v2"}}  ', "passed", "response-v2"),
        (mcp_wrapped(legacy_variant(2)), "converted", "legacy-v1"),
        *[(bad, "rejected", d) for bad, d in MALFORMED],
    ],
)
def test_record_outcomes(record: bytes, status: str, source: str | None) -> None:
    o = Migrator()(record)
    assert (o.status, o.source) == (status, source)
    if status == "passed":
        assert o.output is record
    elif status == "converted":
        assert o.output is not None and b"\n" not in o.output
        envglot.read(o.output, from_="response-v2")  # validates
    else:
        assert o.output is None and o.error and o.error_type


@pytest.mark.parametrize(
    ("record", "data", "error", "meta"),
    [
        # flat payload wrapped in data; flags such as `found` stay inside it
        (b'{"found":false,"task_id":"t-1"}', {"found": False, "task_id": "t-1"}, None, {"version": "response-v2"}),
        # no success key and a non-empty error: failure, error moved, documented default code/type
        (
            b'{"error":"Task not found: task-9"}',
            {"error_code": "INTERNAL_ERROR", "error_type": "internal"},
            "Task not found: task-9",
            {"version": "response-v2"},
        ),
        # an empty error is no failure
        (b'{"specs":[],"error":""}', {"specs": []}, None, {"version": "response-v2"}),
        # explicit success wins; schema_version dropped
        (
            b'{"success":false,"schema_version":"1.0.0","error":"boom","count":0}',
            {"count": 0, "error_code": "INTERNAL_ERROR", "error_type": "internal"},
            "boom",
            {"version": "response-v2"},
        ),
        # interim envelope: _meta/_warnings move to meta
        (
            b'{"success":true,"data":{"x":1,"_meta":{"version":"1.0","pagination":{"offset":0,"limit":5,'
            b'"total":9,"has_more":true},"timing":{"duration_ms":7}},"_warnings":["w"]},"error":null}',
            {"x": 1},
            None,
            {
                "version": "response-v2",
                "warnings": ["w"],
                "pagination": {"has_more": True, "total_count": 9, "offset": 0, "limit": 5},
                "telemetry": {"duration_ms": 7},
            },
        ),
    ],
)
def test_legacy_v1_rules(record: bytes, data: object, error: str | None, meta: object) -> None:
    o = Migrator()(record)
    assert o.status == "converted" and o.source == "legacy-v1"
    doc = json.loads(o.output or b"")
    assert doc == {"success": error is None, "data": data, "error": error, "meta": meta}


def test_schema_version_drop_is_reported_and_raise_rejects_it() -> None:
    rec = b'{"success":true,"schema_version":"1.0.0","count":1,"error":null}'
    o = Migrator()(rec)
    assert o.status == "converted" and o.source == "legacy-v1"
    assert o.lossy and o.kinds == ("field_dropped",)
    strict = Migrator(unsupported="raise")(rec)
    assert strict.status == "rejected" and strict.error_type == "UnsupportedError"
    assert [d["path"] for d in strict.diagnostics] == ["$.schema_version"]


def test_target_records_pass_even_when_source_is_forced() -> None:
    m = Migrator(from_="legacy-v1")
    assert m(_V2).status == "passed"  # never wrapped twice
    assert m(b'{"specs":[]}').status == "converted"
    # the workaround for foundry-only archives (docs/migration.md, "Limits and caveats")
    flat = Migrator(from_="legacy-v1")(b'{"success":true,"task_id":"task-3"}')
    assert flat.source == "legacy-v1" and json.loads(flat.output or b"")["data"] == {"task_id": "task-3"}
    dotbot = next(msgspec.json.format(b, indent=-1) for d, _, b in examples() if d == "dotbot")
    forced = Migrator(from_="errorcode")(dotbot)
    assert forced.status == "rejected" and forced.source == "errorcode"


def test_each_record_is_checked_and_detected_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Migrator hands its input check and detection to the converter (issue 12)."""
    from envglot import pipeline
    from envglot.migration import records

    calls: list[str] = []

    def counting(name: str, real: object) -> object:
        def wrapper(*args: object, **kwargs: object) -> object:
            calls.append(name)
            return real(*args, **kwargs)  # type: ignore[operator]

        return wrapper

    monkeypatch.setattr(pipeline, "classify", counting("classify", pipeline.classify))
    monkeypatch.setattr(records, "classify_members", counting("classify", records.classify_members))
    for mod in (pipeline, records):
        monkeypatch.setattr(mod, "check_input", counting("check_input", mod.check_input))
    dotbot = next(msgspec.json.format(b, indent=-1) for d, _, b in examples() if d == "dotbot")
    want = envglot.conversion(dotbot, to="response-v2", unsupported="ignore").output
    calls.clear()
    out = Migrator()(dotbot)
    assert out.status == "converted" and out.output == want
    assert sorted(calls) == ["check_input", "classify"]
    calls.clear()
    wrapped = Migrator()(mcp_wrapped(dotbot))  # the envelope inside is checked and detected after unwrapping
    assert wrapped.status == "converted" and wrapped.unwrapped and wrapped.output == want
    assert sorted(calls) == ["check_input", "check_input", "classify", "classify"]


def test_other_targets() -> None:
    m = Migrator(to="errorcode")
    out = m(legacy_variant(1))
    assert out.status == "converted" and envglot.detect(out.output or b"") == "errorcode"
    assert m(out.output or b"").status == "passed"
    with pytest.raises(envglot.EnvglotError):
        Migrator(to="legacy-v1")


def test_migrator_pickles_and_rebuilds() -> None:
    m = Migrator(to="response-v2", unsupported="raise")
    m2 = pickle.loads(pickle.dumps(m))
    assert repr(m2) == repr(m)
    assert m2(legacy_variant(0)) == m(legacy_variant(0))
    assert [o.status for o in m.lines([legacy_variant(0), b"x", _V2])] == ["converted", "rejected", "passed"]


@pytest.mark.parametrize(
    ("original", "key"),
    [(b'{"a": "\xc3\xbc"', "original"), (b"\xff\xfe{}", "original_b64"), (b"", "original")],
)
def test_reject_line_keeps_exact_bytes(original: bytes, key: str) -> None:
    o = Migrator()(original or b" ")
    rec = json.loads(reject_line("f.jsonl", 3, original, o))
    assert key in rec and rec["source"] == "f.jsonl" and rec["line"] == 3
    assert _original(rec) == original


# --------------------------------------------------------------------------- files


def test_mixed_corpus_end_to_end(tmp_path: Path) -> None:
    corpus = make_corpus(tmp_path / "in")
    before = _outputs(tmp_path / "in")
    rejects = tmp_path / "rejects.jsonl"
    rep = migrate([tmp_path / "in"], out=tmp_path / "out", rejects=rejects, jobs=2, chunk_bytes=512)
    # counts add up, and match the corpus by construction
    assert rep.records == corpus.records
    assert rep.records == rep.converted + rep.passed_through + rep.rejected
    assert rep.rejected == len(corpus.malformed)
    assert rep.unwrapped == corpus.unwrapped
    for d, n in corpus.by_dialect.items():
        c = rep.by_source[d]
        expected_rejects = sum(1 for m in corpus.malformed if m[3] == d)
        assert c.records == n + expected_rejects, d
        assert c.converted + c.passed_through == n, d
    assert rep.by_source["response-v2"].converted == 0
    assert rep.exit_code == 1 and rep.stopped is None and not rep.failed
    assert _outputs(tmp_path / "in") == before  # inputs untouched
    # rejects hold the original bytes, with file and line
    rej = _rejects(rejects)
    assert len(rej) == len(corpus.malformed)
    got = sorted((str(r["source"]), r["line"], _original(r)) for r in rej)
    want = sorted((str(tmp_path / "in" / f), ln, b) for f, ln, b, _ in corpus.malformed)
    assert got == want
    # the tree is mirrored (names, containers, gzip), ignored files are not copied
    outs = _outputs(tmp_path / "out")
    assert set(outs) == {f for f in corpus.files if f != "docs/broken.json"}
    assert not any(f in outs for f in corpus.ignored)
    n_out = 0
    for rel in outs:
        for rec in _records(tmp_path / "out" / rel):
            envglot.read(rec, from_="response-v2")
            n_out += 1
    assert n_out == corpus.valid
    # re-running on the output changes nothing: all passed through, byte-identical files
    rep2 = migrate([tmp_path / "out"], out=tmp_path / "out2", rejects=tmp_path / "r2.jsonl", jobs=2, chunk_bytes=512)
    assert (rep2.records, rep2.passed_through, rep2.converted, rep2.rejected) == (corpus.valid, corpus.valid, 0, 0)
    assert rep2.exit_code == 0 and rep2.files_changed == 0
    assert _outputs(tmp_path / "out2") == outs
    assert not (tmp_path / "r2.jsonl").exists()


def test_line_structure_is_kept(tmp_path: Path) -> None:
    src = tmp_path / "in" / "x.ndjson"
    src.parent.mkdir()
    src.write_bytes(b"%s\r\n\r\n%s\r\n   \n%s" % (legacy_variant(0), _V2, legacy_variant(1)))
    migrate([src], out=tmp_path / "out", jobs=1)
    lines = (tmp_path / "out" / "x.ndjson").read_bytes().split(b"\n")
    assert len(lines) == 5 and lines[1] == b"\r" and lines[2] == _V2 + b"\r" and lines[3] == b"   "
    assert lines[0].endswith(b"\r") and not lines[4].endswith(b"\r")  # CRLF kept, no newline added at the end


@pytest.mark.parametrize("jobs", [1, 2])
def test_order_is_preserved_across_chunks(tmp_path: Path, jobs: int) -> None:
    recs = [legacy_variant(i) for i in range(500)]
    src = tmp_path / "big.jsonl"
    src.write_bytes(b"\n".join(recs) + b"\n")
    rep = migrate([src], out=tmp_path / "out", jobs=jobs, chunk_bytes=300)
    out = (tmp_path / "out" / "big.jsonl").read_bytes().splitlines()
    assert rep.converted == 500 and len(out) == 500
    assert out == [Migrator()(r).output for r in recs]


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_unchanged_file_is_copied_not_rewritten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int) -> None:
    """Records all in the target dialect: no output is written record by record; the input is copied
    (``--out``) or left as it is (in place)."""
    from envglot.migration import pieceout

    writes: list[int] = []
    real = pieceout.TempWriter.write
    monkeypatch.setattr(pieceout.TempWriter, "write", lambda self, b: (writes.append(len(b)), real(self, b))[1])
    (tmp_path / "in").mkdir()
    body = (_V2 + b"\n\n") * 20000  # ~1.6 MB: many chunks
    (tmp_path / "in" / "a.jsonl").write_bytes(body)
    (tmp_path / "in" / "b.jsonl.gz").write_bytes(gzip.compress(body))
    rep = migrate([tmp_path / "in"], out=tmp_path / "out", jobs=jobs, chunk_bytes=64 * 1024)
    assert rep.passed_through == 40000 and rep.files_unchanged == 2 and rep.exit_code == 0
    assert rep.bytes_out == rep.bytes_in == 2 * len(body)
    assert (tmp_path / "out" / "a.jsonl").read_bytes() == body
    assert (tmp_path / "out" / "b.jsonl.gz").read_bytes() == (tmp_path / "in" / "b.jsonl.gz").read_bytes()
    mtime = (tmp_path / "in" / "a.jsonl").stat().st_mtime_ns
    rep = migrate([tmp_path / "in"], in_place=True, jobs=jobs, chunk_bytes=64 * 1024)
    assert rep.files_unchanged == 2 and rep.backups == 0 and (tmp_path / "in" / "a.jsonl").stat().st_mtime_ns == mtime
    assert writes == []


def test_a_small_file_is_read_once_and_written_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A small file takes one direct path: its input opened once (an unchanged one's output is the
    bytes read, not the input read again), its temporary created whole with the input's mode."""
    from envglot.migration import fs, partitions

    opened: list[str] = []
    for module in (partitions, fs):  # the direct path, and the copy of the streamed path
        real = module.open_fd
        monkeypatch.setattr(module, "open_fd", lambda p, real=real: (opened.append(os.fspath(p)), real(p))[1])
    (tmp_path / "in").mkdir()
    same, changed = tmp_path / "in" / "same.jsonl", tmp_path / "in" / "changed.jsonl"
    same.write_bytes((_V2 + b"\n") * 5 + b"\n")
    changed.write_bytes(_V2 + b"\n" + legacy_variant(1) + b"\nnot json\n")
    same.chmod(0o640)
    rep = migrate([tmp_path / "in"], out=tmp_path / "out", jobs=1)
    assert sorted(opened) == sorted([str(same), str(changed)])
    assert (rep.files_unchanged, rep.files_changed, rep.converted, rep.rejected) == (1, 1, 1, 1)
    assert (tmp_path / "out" / "same.jsonl").read_bytes() == same.read_bytes()
    assert stat.S_IMODE((tmp_path / "out" / "same.jsonl").stat().st_mode) == 0o640
    assert _records(tmp_path / "out" / "changed.jsonl") == [_V2, _converted(legacy_variant(1))]
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".envglot-tmp")]


def test_small_files_are_read_converted_and_written_in_groups(tmp_path: Path) -> None:
    """A task's small files go in groups (all read, then all converted, then all written): each
    file's result, output, error and order are those of one file at a time, across a large file
    between two groups, a file gone since the walk, and one grown past the direct path's limit."""
    from envglot.migration import fs, partitions
    from envglot.migration.fs import run_id
    from envglot.migration.walk import FileSpec
    from envglot.options import resolve

    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    bodies = {
        "a.jsonl": _V2 + b"\n",  # unchanged: its bytes as read
        "b.jsonl": legacy_variant(0) + b"\nnot json\n",
        "c.jsonl": b"",  # gone after the walk
        "d.jsonl": legacy_variant(1) + b"\n",  # grows past fs.HOLD_BYTES after the walk
        "e.jsonl": (legacy_variant(2) + b"\n") * 2000,  # a large file: streamed, between groups
        "f.jsonl": legacy_variant(3) + b"\n",
        "g.json": legacy_variant(4),
    }
    walked = {}
    for name, body in bodies.items():
        (src / name).write_bytes(body)
        walked[name] = len(body)
    (src / "c.jsonl").unlink()
    grown = (legacy_variant(1) + b"\n") * (fs.HOLD_BYTES // len(legacy_variant(1)) + 1)
    (src / "d.jsonl").write_bytes(grown)
    files = [
        FileSpec(i, name, str(src / name), str(out / name), name.endswith(".json"), False, size, 0o644)
        for i, (name, size) in enumerate(walked.items())
    ]
    options = {"to": "response-v2", "from_": None, "options": resolve(None)}
    pieces = [partitions.Piece(f, 0, 1, 0, f.size) for f in files]
    results = {}
    for group in (3, 2, 1):  # groups of three, of two, then one file at a time
        spec = partitions.RunSpec(run_id(dask=False), options, "compact", 1024, False, sync=False)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(partitions, "SMALL_GROUP_FILES", group)
            got = partitions.run_task(spec, pieces)
        assert [r.file for r in got] == list(range(len(files)))
        results[group] = [
            (r.error_code, r.tally.records, r.tally.rejected, len(r.rejects), r.tmp and Path(r.tmp).read_bytes())
            for r in got
        ]
    assert results[3] == results[2] == results[1]
    codes = [r[0] for r in results[2]]
    assert codes == [0, 0, 66, 0, 0, 0, 0]
    assert results[2][0][4] == bodies["a.jsonl"] and results[2][3][4] is not None
    assert results[2][3][1] == grown.count(b"\n") and results[2][4][1] == 2000
    assert results[2][1][4] == _converted(legacy_variant(0)) + b"\n" and results[2][1][3] == 1


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("name", ["a.jsonl", "a.jsonl.gz"])
def test_a_late_change_copies_the_unchanged_part_from_the_input(tmp_path: Path, jobs: int, name: str) -> None:
    """The unchanged chunks before the first change are not written as they pass; the output is the same."""
    recs = [_V2] * 3000 + [legacy_variant(1), b"not json", _V2]
    body = b"\n".join(recs) + b"\n"
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / name).write_bytes(gzip.compress(body) if name.endswith(".gz") else body)
    rep = migrate([tmp_path / "in"], out=tmp_path / "out", jobs=jobs, chunk_bytes=16 * 1024)
    assert (rep.converted, rep.rejected, rep.passed_through) == (1, 1, 3001)
    assert _records(tmp_path / "out" / name) == [*[_V2] * 3000, _converted(legacy_variant(1)), _V2]
    rep = migrate([tmp_path / "in"], in_place=True, jobs=jobs, chunk_bytes=16 * 1024)
    assert _records(tmp_path / "in" / name) == [*[_V2] * 3000, _converted(legacy_variant(1)), _V2]
    bak = (tmp_path / "in" / (name + ".bak")).read_bytes()
    assert (gzip.decompress(bak) if name.endswith(".gz") else bak) == body


def test_an_input_that_changes_before_its_unchanged_part_is_copied_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The unchanged part is read again to be copied: if its bytes differ, the file fails (66), nothing is written."""
    from envglot.migration import partitions

    src = tmp_path / "in" / "a.jsonl"
    src.parent.mkdir()
    src.write_bytes(b"\n".join([_V2] * 2000 + [legacy_variant(1)]) + b"\n")
    other = tmp_path / "in" / "b.jsonl"
    other.write_bytes(legacy_variant(2) + b"\n")
    changed: list[bool] = []
    real = partitions.migrate_chunk

    def first_chunk_then_edit(mig: Any, task: Any) -> Any:
        res = real(mig, task)
        if not changed:  # after the first chunk was read: the same length, other bytes
            changed.append(True)
            data = src.read_bytes()
            src.write_bytes(data.replace(b'"a":1', b'"a":2', 1))
        return res

    monkeypatch.setattr(partitions, "migrate_chunk", first_chunk_then_edit)
    rep = migrate([src.parent], out=tmp_path / "out", jobs=1, chunk_bytes=16 * 1024)
    assert [(f.file, f.exit_code) for f in rep.failed] == [(str(src), 66)] and rep.exit_code == 66
    assert "changed while it was being migrated" in rep.failed[0].error
    assert not (tmp_path / "out" / "a.jsonl").exists() and (tmp_path / "out" / "b.jsonl").exists()
    assert rep.files_written == 1


def test_a_ranged_input_that_changes_before_its_unchanged_range_is_copied_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``-j 2`` cuts the file into ranges, put together by the driver as they come in: an unchanged
    range whose input bytes changed before it is copied fails the file (66), nothing is written."""
    from envglot.migration import assembly

    src = tmp_path / "in" / "a.jsonl"
    src.parent.mkdir()
    src.write_bytes(b"\n".join([_V2] * 2000 + [legacy_variant(1)]) + b"\n")
    (tmp_path / "in" / "b.jsonl").write_bytes(legacy_variant(2) + b"\n")
    edited: list[int] = []
    real = assembly.Assembly.add

    def edit_then_add(self: Any, p: Any) -> None:
        if p.same and not edited:  # the same length, another byte, in the first range (no reader sees a short file)
            at = src.read_bytes().index(b'"a":1') + 4
            with src.open("r+b") as fh:
                fh.seek(at)
                fh.write(b"2")
            edited.append(at)
        real(self, p)

    monkeypatch.setattr(assembly.Assembly, "add", edit_then_add)
    rep = migrate([src.parent], out=tmp_path / "out", jobs=2, chunk_bytes=16 * 1024)
    assert edited, "no unchanged range was copied by the driver"
    assert [(f.file, f.exit_code) for f in rep.failed] == [(str(src), 66)] and rep.exit_code == 66
    assert "changed while it was being migrated" in rep.failed[0].error
    assert not (tmp_path / "out" / "a.jsonl").exists() and (tmp_path / "out" / "b.jsonl").exists()
    assert rep.files_written == 1
    assert [p.name for p in (tmp_path / "out").iterdir() if p.name.startswith(".envglot-tmp")] == []


def test_a_write_error_while_a_ranged_file_is_put_together_stops_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``-j 2``: appending a range to the file's output fails (a full disk): the run stops as when
    the task that put the file together failed; no output, no temporary is left."""
    from envglot.migration import assembly

    src = tmp_path / "in" / "a.jsonl"
    src.parent.mkdir()
    src.write_bytes(b"\n".join(legacy_variant(i) for i in range(3000)) + b"\n")

    def full(*_: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(assembly, "copy_rest", full)
    rep = migrate([src.parent], out=tmp_path / "out", jobs=2, chunk_bytes=16 * 1024)
    assert [f.file for f in rep.failed] == [str(src)] and rep.exit_code != 0
    assert "No space left on device" in rep.failed[0].error
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if not p.name.startswith(".envglot-rejects")) == []


@pytest.mark.parametrize("size", ["small", "large", "ranges"])  # held; written as it comes; read in ranges
def test_outputs_keep_the_input_mode_whatever_the_umask(tmp_path: Path, size: str) -> None:
    (tmp_path / "in").mkdir()
    lines = 1 if size == "small" else 4000
    modes = {"a.jsonl": 0o644, "b.jsonl": 0o666, "c.jsonl": 0o600, "d.jsonl": 0o755, "e.jsonl": 0o640}
    v2 = b'{"success":true,"data":{"a":1},"error":null,"meta":{"version":"response-v2"}}\n'
    for i, (name, mode) in enumerate(modes.items()):
        data = (legacy_variant(0) + b"\n") * lines
        if size == "ranges" and i % 2:  # the first ranges unchanged: the output is made from the input's copy
            data = v2 * 4000 + data
        (tmp_path / "in" / name).write_bytes(data)
        os.chmod(tmp_path / "in" / name, mode)
    old = os.umask(0o022)
    try:
        for mask in (0o022, 0o077, 0o000):  # the umask changing between runs of one process, too
            os.umask(mask)
            out = tmp_path / f"out-{mask:o}"
            # in ranges: the file put together from its ranges, its first one unchanged or not
            ranged: dict[str, Any] = {"jobs": 2, "chunk_bytes": 16 * 1024} if size == "ranges" else {"jobs": 1}
            rep = migrate([tmp_path / "in"], out=out, **ranged)
            assert rep.exit_code == 0 and rep.files_written == len(modes)
            for name, mode in modes.items():
                assert stat.S_IMODE(os.stat(out / name).st_mode) == mode, (name, oct(mask))
    finally:
        os.umask(old)


def test_outputs_keep_the_input_mode_under_a_default_acl(tmp_path: Path) -> None:
    """A directory's default ACL, not the umask, masks a created file's mode: the output still gets its input's."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_bytes(legacy_variant(0) + b"\n")
    os.chmod(tmp_path / "in" / "a.jsonl", 0o644)
    (tmp_path / "out").mkdir()
    # u::rwx g::r-x o::--- (POSIX ACL xattr, version 2: tag, perm, id per entry)
    acl = b"\x02\x00\x00\x00" + b"".join(
        tag.to_bytes(2, "little") + perm.to_bytes(2, "little") + (0xFFFFFFFF).to_bytes(4, "little")
        for tag, perm in ((0x01, 7), (0x04, 5), (0x20, 0))
    )
    try:
        os.setxattr(tmp_path / "out", "system.posix_acl_default", acl)
    except (OSError, AttributeError) as exc:
        pytest.skip(f"no POSIX ACLs here: {exc}")
    rep = migrate([tmp_path / "in"], out=tmp_path / "out", jobs=1)
    assert rep.exit_code == 0
    assert stat.S_IMODE(os.stat(tmp_path / "out" / "a.jsonl").st_mode) == 0o644


def test_a_short_read_loses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file system that returns short reads (FUSE, network) is read to its end."""
    from envglot.migration import reading

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_bytes((legacy_variant(0) + b"\n") * 4)
    real = os.read
    monkeypatch.setattr(reading.os, "read", lambda fd, n: real(fd, min(n, 58)))
    assert len(list(reading.input_records([str(tmp_path / "in")]))) == 4  # read whole in one call, if it can
    rep = migrate([tmp_path / "in"], out=tmp_path / "out", jobs=1)
    assert rep.records == 4 and rep.converted == 4
    assert len((tmp_path / "out" / "a.jsonl").read_bytes().splitlines()) == 4


def test_a_small_input_is_read_whole_in_one_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """fs.open_read of a small local file: one read when it has the size walked; a file that grew
    or shrank since, or reads short, is read to its end."""
    from envglot.migration import fs

    src = tmp_path / "a.jsonl"
    src.write_bytes(b"x" * 1000)
    reads: list[int] = []
    real = os.read
    monkeypatch.setattr(fs.os, "read", lambda fd, n: reads.append(n) or real(fd, n))
    assert fs.open_read(None, str(src), 1000).read() == b"x" * 1000 and reads == [1001]
    for walked in (10, 5000):  # grew, shrank
        assert fs.open_read(None, str(src), walked).read() == b"x" * 1000
    monkeypatch.setattr(fs.os, "read", lambda fd, n: real(fd, min(n, 7)))
    assert fs.open_read(None, str(src), 1000).read() == b"x" * 1000


def test_a_small_output_is_created_whole_at_its_close(tmp_path: Path) -> None:
    """fs.open_output for a small input: nothing on disk until closed, then one new file with the
    mode asked for (whatever the umask); past the spill size it is created and written as it comes."""
    from envglot.migration import fs

    tmp = str(tmp_path / "t")
    old = os.umask(0o077)
    try:
        w = fs.open_output(None, tmp, None, mode=0o644, size=10, run="r1")
        assert isinstance(w, fs.HeldTemp)
        w.write(b"abc")
        assert not os.path.exists(tmp)
        w.close()
        assert Path(tmp).read_bytes() == b"abc" and stat.S_IMODE(os.stat(tmp).st_mode) == 0o644
        os.unlink(tmp)
        w = fs.open_output(None, tmp, None, mode=0o640, size=10, run="r1")
        w.write(b"y" * (fs.SPILL_BYTES + 1))
        assert os.path.exists(tmp)
        w.write(b"z")
        w.close()
        assert Path(tmp).read_bytes() == b"y" * (fs.SPILL_BYTES + 1) + b"z"
        assert stat.S_IMODE(os.stat(tmp).st_mode) == 0o640
    finally:
        os.umask(old)


def test_a_temporary_is_created_new_never_through_a_link(tmp_path: Path) -> None:
    """fs.create_new: a link at a temporary's name is replaced, its target untouched; a leftover of
    the same name (a task run again) is replaced."""
    from envglot.migration import fs

    (tmp_path / "target").write_bytes(b"precious")
    tmp = tmp_path / "t"
    tmp.symlink_to(tmp_path / "target")
    fs.write_new(str(tmp), b"new", 0o600)
    assert not tmp.is_symlink() and tmp.read_bytes() == b"new"
    assert (tmp_path / "target").read_bytes() == b"precious"
    fs.write_new(str(tmp), b"again", None)
    assert tmp.read_bytes() == b"again"


def test_a_short_write_of_a_small_temporary_is_written_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """fs.write_new writes what one os.write left (a signal, a nearly full disk) to the end."""
    from envglot.migration import fs

    real = os.write
    monkeypatch.setattr(fs.os, "write", lambda fd, b: real(fd, bytes(b)[:3]))
    fs.write_new(str(tmp_path / "t"), b"0123456789", None)
    assert (tmp_path / "t").read_bytes() == b"0123456789"


@pytest.mark.parametrize("dst", ["a/b/c.jsonl", "/c.jsonl", "c.jsonl", "//c.jsonl", "a/caf\udce9.jsonl", "a/", "/"])
def test_a_temporary_and_its_directory_as_the_path_spells_them(dst: str) -> None:
    """fs.temp_path replaces the name after the last "/" (as os.path.split and join did for a path
    the walk spells); fs.parents is os.path.dirname, taken once per directory."""
    from envglot.migration import fs

    tmp = fs.temp_path(dst, "1-ab", "7")
    head, name = os.path.split(dst)
    assert tmp == os.path.join(head, f".envglot-tmp-1-ab-7-{name}")
    assert os.path.dirname(tmp) == os.path.dirname(dst)
    assert fs.parents([dst, tmp, "x/y", "x/z"]) == {os.path.dirname(dst), "x"}
    for name in ("a" * 58, "a" * 230, "é" * 58, "é" * 100, "\udce9" * 240, "😀" * 57, "😀" * 60):  # cut or not
        got = fs.temp_path(f"d/{name}", "1-ab", "7").removeprefix("d/")
        whole = os.fsencode(f".envglot-tmp-1-ab-7-{name}")
        assert os.fsencode(got) == whole[:255]  # a character cut in two: its bytes kept, as walked


def test_a_tally_adds_many_as_it_adds_each() -> None:
    """Tally.add_all: the counts, sources and kinds of one add each, in the same order (the report's JSON)."""
    from envglot.migration.tally import Tally

    def tally(n: int, sources: list[str], kinds: list[str]) -> Tally:
        t = Tally(bytes_in=n, bytes_out=2 * n, internal_errors=n % 2)
        for i, src in enumerate(sources):
            t.converted_record(src, bool(i % 2), i == 0, kinds)
        t.passed_record(None)
        return t

    parts = [
        tally(3, ["dotbot", "result"], ["synthesized"]),
        tally(5, ["errorcode"], []),
        tally(7, ["result", "code-graph", "dotbot"], ["weak_detection", "synthesized"]),
    ]
    one = Tally()
    one.passed_record("problem-json")
    want: dict[str, Any] = msgspec.to_builtins(one)  # summed here field by field, one tally after another
    for p in parts:
        got: dict[str, Any] = msgspec.to_builtins(p)
        for k, v in got.items():
            if isinstance(v, int):
                want[k] += v
        for src, counts in got["by_source"].items():
            into = want["by_source"].setdefault(src, dict.fromkeys(counts, 0))
            for k, v in counts.items():
                into[k] += v
        for k, n in got["diagnostics"].items():
            want["diagnostics"][k] = want["diagnostics"].get(k, 0) + n
    one.add_all(parts)
    assert msgspec.json.encode(one) == msgspec.json.encode(want)  # the same keys in the same order
    assert list(one.by_source) == ["problem-json", "dotbot", "result", "(undetected)", "errorcode", "code-graph"]
    assert list(one.diagnostics) == ["synthesized", "weak_detection"]
    assert (one.records, one.converted, one.bytes_in, one.internal_errors) == (10, 6, 15, 3)
    single = Tally()
    single.add(parts[0])
    assert msgspec.json.encode(single) == msgspec.json.encode(parts[0])


def test_converted_records_count_as_one_converted_record_each() -> None:
    """Tally.converted_records (the chunk loop's records counted together): the counts, sources and
    kinds, in the same order, of one converted_record per record; a kind (a StrEnum) under its value."""
    from envglot.diagnostics import Kind
    from envglot.migration.tally import Tally

    records = [
        ("dotbot", True, [Kind.FIELD_DROPPED, Kind.CODE_MAPPED]),
        ("result", False, []),
        ("dotbot", False, [Kind.FIELD_DROPPED]),
        ("errorcode", True, [Kind.SYNTHESIZED, Kind.FIELD_DROPPED]),
    ]
    one, each = Tally(), Tally()
    for t in (one, each):
        t.converted_record("problem-json", False, True, ["synthesized"])  # counted before: its kind's key stays
    for src, lossy, kinds in records:
        each.converted_record(src, lossy, False, [str(k) for k in kinds])
    one.converted_records(
        [src for src, _, _ in records],
        [src for src, lossy, _ in records if lossy],
        [k for *_, ks in records for k in ks],
    )
    assert msgspec.json.encode(one) == msgspec.json.encode(each)
    assert list(one.diagnostics) == ["synthesized", "field_dropped", "code_mapped"]
    assert all(type(k) is str for k in one.diagnostics)
    assert (one.records, one.lossy, one.by_source["dotbot"].lossy, one.by_source["dotbot"].records) == (5, 2, 1, 2)


def test_a_held_output_that_spills_onto_a_full_disk_is_an_output_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An output held in memory (fs.HeldTemp) that grows past the spill size, where its temporary
    cannot be created: the write fails, and nothing is left behind however it is then closed."""
    from envglot.migration import fs

    real_open = os.open

    def full(path: Any, flags: int, mode: int = 0o777) -> int:
        if TEMP_PREFIX in os.fspath(path):
            raise OSError(28, "No space left on device")
        return real_open(path, flags, mode)

    out = fs.open_output(None, str(tmp_path / f"{TEMP_PREFIX}x"), None, mode=0o644, size=10, run="r1")
    assert isinstance(out, fs.HeldTemp)
    monkeypatch.setattr(fs.os, "open", full)
    with pytest.raises(OSError, match="No space left"):
        out.write(b"x" * (fs.SPILL_BYTES + 1))
    with pytest.raises(OSError, match="No space left"):
        out.close()  # still held: creating it fails again, nothing is made
    assert list(tmp_path.iterdir()) == []


def test_in_place_with_backup_restores_exactly(tmp_path: Path) -> None:
    corpus = make_corpus(tmp_path / "in")
    original = _outputs(tmp_path / "in")
    os.chmod(tmp_path / "in" / "logs/2025/11/day1.jsonl", 0o640)
    rep = migrate([tmp_path / "in"], in_place=True, jobs=2, chunk_bytes=1024)
    assert rep.mode == "in-place" and rep.backups == rep.files_changed - 1  # broken.json is left as it was
    assert (tmp_path / "in" / "docs/broken.json").read_bytes() == original["docs/broken.json"]
    assert not (tmp_path / "in" / "docs/broken.json.bak").exists()
    assert os.stat(tmp_path / "in" / "logs/2025/11/day1.jsonl").st_mode & 0o777 == 0o640
    assert len(_rejects(tmp_path / "in" / REJECTS_NAME)) == len(corpus.malformed)
    # a second run finds only the rejected document again; nothing is backed up twice
    rep2 = migrate([tmp_path / "in"], in_place=True, rejects=tmp_path / "r.jsonl", jobs=1)
    assert rep2.converted == 0 and rep2.rejected == 1 and rep2.backups == 0
    # restoring every backup gives the originals, byte for byte
    for bak in (tmp_path / "in").rglob("*.bak"):
        bak.replace(bak.with_name(bak.name.removesuffix(".bak")))
    assert _outputs(tmp_path / "in") == original


def test_in_place_refuses_to_overwrite_a_backup(tmp_path: Path) -> None:
    f = tmp_path / "a.jsonl"
    f.write_bytes(legacy_variant(0) + b"\n")
    (tmp_path / "a.jsonl.orig").write_bytes(b"keep me")
    rep = migrate([f], in_place=True, backup=".orig", jobs=1)
    assert rep.exit_code == 74 and "already exists" in rep.failed[0].error
    assert f.read_bytes() == legacy_variant(0) + b"\n"
    assert (tmp_path / "a.jsonl.orig").read_bytes() == b"keep me"


def test_in_place_reuses_a_backup_left_by_an_interrupted_run(tmp_path: Path) -> None:
    f = tmp_path / "a.jsonl"
    f.write_bytes(legacy_variant(0) + b"\n")
    os.link(f, tmp_path / "a.jsonl.bak")  # killed after the backup, before the rename
    rep = migrate([f], in_place=True, jobs=1)
    assert rep.exit_code == 0 and rep.backups == 1
    assert (tmp_path / "a.jsonl.bak").read_bytes() == legacy_variant(0) + b"\n"
    assert f.read_bytes() == _converted(legacy_variant(0)) + b"\n"


def test_in_place_without_backup(tmp_path: Path) -> None:
    f = tmp_path / "a.jsonl"
    f.write_bytes(legacy_variant(0) + b"\nnot json\n")
    rep = migrate([f], in_place=True, backup=None, jobs=1)
    assert rep.backups == 0 and not list(tmp_path.glob("*.bak"))
    assert f.read_bytes() == _converted(legacy_variant(0)) + b"\n"
    assert _original(_rejects(tmp_path / REJECTS_NAME)[0]) == b"not json"


def test_check_writes_nothing(tmp_path: Path) -> None:
    make_corpus(tmp_path / "in")
    before = sorted(p.as_posix() for p in tmp_path.rglob("*"))
    rep = migrate([tmp_path / "in"], check=True, jobs=2, chunk_bytes=2048)
    assert rep.exit_code == 1 and rep.files_changed > 0 and rep.converted > 0
    assert rep.rejects_file is None
    assert sorted(p.as_posix() for p in tmp_path.rglob("*")) == before


def test_check_on_migrated_tree_is_clean(tmp_path: Path) -> None:
    src = tmp_path / "a.jsonl"
    src.write_bytes(b"\n".join(legacy_variant(i) for i in range(20)) + b"\n")
    migrate([src], out=tmp_path / "out", jobs=1)
    rep = migrate([tmp_path / "out"], check=True, jobs=1)
    assert rep.exit_code == 0 and rep.passed_through == 20 and rep.files_changed == 0


def test_max_errors_stops_and_says_what_was_not_processed(tmp_path: Path) -> None:
    d = tmp_path / "in"
    d.mkdir()
    (d / "a.jsonl").write_bytes(legacy_variant(0) + b"\n")
    (d / "b.jsonl").write_bytes(b"bad 1\n" + legacy_variant(1) + b"\nbad 2\n")
    (d / "c.jsonl").write_bytes(legacy_variant(2) + b"\n")
    rep = migrate([d], out=tmp_path / "out", max_errors=1, jobs=1, report=tmp_path / "rep.json")
    assert rep.exit_code == 65
    assert rep.stopped is not None and f"{d / 'b.jsonl'}:3" in rep.stopped
    assert rep.not_processed == [str(d / "b.jsonl"), str(d / "c.jsonl")]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [REJECTS_NAME, "a.jsonl"]
    assert json.loads((tmp_path / "rep.json").read_bytes())["not_processed"] == rep.not_processed


def test_unreadable_gzip_fails_that_file_only(tmp_path: Path) -> None:
    d = tmp_path / "in"
    d.mkdir()
    good = gzip.compress(b"\n".join(legacy_variant(i) for i in range(50)) + b"\n")
    (d / "bad.jsonl.gz").write_bytes(good[: len(good) // 2])
    (d / "good.jsonl").write_bytes(legacy_variant(3) + b"\n")
    rep = migrate([d], out=tmp_path / "out", jobs=1)
    assert rep.exit_code == 66 and [f.file for f in rep.failed] == [str(d / "bad.jsonl.gz")]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["good.jsonl"]


def test_output_error_stops_with_74(tmp_path: Path) -> None:
    d = tmp_path / "in"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "a.jsonl").write_bytes(legacy_variant(0) + b"\n")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "sub").write_bytes(b"a file where a directory is needed")
    rep = migrate([d], out=tmp_path / "out", jobs=1)
    assert rep.exit_code == 74 and rep.failed and rep.stopped is not None


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({}, 2),
        ({"out": "o", "in_place": True}, 2),
        ({"out": "o", "style": "fancy"}, 2),
        ({"out": "o", "to": "legacy-v1"}, 2),
        ({"out": "o", "max_errors": -1}, 2),
    ],
)
def test_bad_options(tmp_path: Path, kwargs: dict[str, object], code: int) -> None:
    (tmp_path / "a.jsonl").write_bytes(b"{}\n")
    with pytest.raises(MigrationError) as ei:
        migrate([tmp_path / "a.jsonl"], **kwargs)  # type: ignore[arg-type]
    assert ei.value.exit_code == code


def test_missing_input_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(legacy_variant(0) + b"\n")
    with pytest.raises(MigrationError) as ei:
        migrate([tmp_path / "a.jsonl", tmp_path / "nope"], out=tmp_path / "out")
    assert ei.value.exit_code == 66 and not (tmp_path / "out").exists()


def test_output_inside_input_is_not_read_back(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(legacy_variant(0) + b"\n")
    rep = migrate([tmp_path], out=tmp_path / "out", jobs=1)
    assert rep.files_total == 1
    rep2 = migrate([tmp_path], out=tmp_path / "out", jobs=1)
    assert rep2.files_total == 1 and rep2.converted == 1


def test_include_exclude(tmp_path: Path) -> None:
    for rel in ("a/x.jsonl", "a/skip/y.jsonl", "b/z.log", "b/w.json"):
        (tmp_path / "in" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "in" / rel).write_bytes(legacy_variant(0) + b"\n")
    rep = migrate([tmp_path / "in"], check=True, include=["*.jsonl", "*.log"], exclude=["skip"], jobs=1)
    assert sorted(c.file for c in rep.changed) == [str(tmp_path / "in" / "a/x.jsonl"), str(tmp_path / "in" / "b/z.log")]
    rep = migrate([tmp_path / "in"], check=True, exclude=["a/*"], jobs=1)
    assert [c.file for c in rep.changed] == [str(tmp_path / "in" / "b/w.json")]


@pytest.mark.parametrize(
    "patterns",
    [
        ["*.jsonl", "*.log"],
        ["a/*", "skip"],
        ["*"],
        [],
        ["[ab]*/x.json?", "*.gz"],
        ["a/skip/*.jsonl"],
        ["*.j?on", "*.log"],
        ["*[ab]"],
        ["*.["],
        ["**.json"],
        ["", "*.gz"],
        ["*.jsonl", "a/*.json"],
        ["*\\x"],
    ],
)
def test_compiled_patterns_match_as_fnmatch(patterns: list[str]) -> None:
    import fnmatch

    from envglot.migration.fs import Patterns

    compiled = Patterns(patterns)
    rels = ("x.jsonl", "a/x.jsonl", "a/skip/y.jsonl", "b/z.log", "b/w.json", "skip", "c/d.json.gz", "é/ü.jsonl")
    odd = ("", ".json", "x.JSON", "a[", "a.[", "ab", "a\nb.json", "x.json\n", "a\\x", "x.jsonl.gz", "a/.gz")
    for rel in rels + odd:
        base = rel.rsplit("/", 1)[-1]
        expected = any(fnmatch.fnmatchcase(rel if "/" in p else base, p) for p in patterns)
        assert compiled.match(rel, base) is expected, (patterns, rel)


def test_patterns_that_are_a_literal_ending_are_matched_without_a_regex() -> None:
    """The default include (``*.json``, ``*.jsonl``, ...: a ``*`` then a literal ending) is matched by
    ``str.endswith``, as fnmatch matches it (a case-sensitive ending, any name before it); a
    wildcard after the first ``*`` keeps the regex."""
    from operator import methodcaller

    from envglot.migration.constants import DEFAULT_INCLUDE
    from envglot.migration.fs import Patterns

    assert isinstance(Patterns(DEFAULT_INCLUDE).base, methodcaller)
    for wild in (["*.j?on"], ["*[ab]"], ["**.json"], ["x*.json"], ["*.json", "a.jsonl"]):
        assert not isinstance(Patterns(wild).base, methodcaller), wild


@pytest.mark.parametrize("spelling", [".", "./", "in/..", "{tmp}", "{tmp}/"])
def test_walked_names_are_spelled_as_pathlib_spells_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    """The names in reports and rejects (which a re-run matches) do not depend on how the walk was written."""
    from envglot.migration.walk import walk_inputs

    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    for rel in ("a.jsonl", "sub/b.jsonl", "sub/deeper/c.json"):
        (tmp_path / rel).write_bytes(b"{}\n")
    (tmp_path / "in").mkdir()
    (tmp_path / "sub" / "link").symlink_to(tmp_path / "sub" / "deeper")  # a linked directory is not entered
    (tmp_path / "broken.jsonl").symlink_to(tmp_path / "nowhere")  # nor is a dangling link read: it is reported
    monkeypatch.chdir(tmp_path)
    arg = spelling.format(tmp=tmp_path)
    jobs, bad = walk_inputs([arg], None, ("*.json", "*.jsonl"), (), set(), None)
    root = Path(arg)
    assert [(b.file, b.error, b.exit_code) for b in bad] == [
        (str(root / "broken.jsonl"), "dangling symbolic link: skipped", 66)
    ]
    assert [j.name for j in jobs] == [str(root / r) for r in ("a.jsonl", "sub/b.jsonl", "sub/deeper/c.json")]
    assert all(j.size == 3 and j.perm == (tmp_path / "a.jsonl").stat().st_mode & 0o7777 for j in jobs)


def test_json_document_style(tmp_path: Path) -> None:
    src = tmp_path / "doc.json"
    src.write_bytes(b'{\n  "specs": [],\n  "count": 0\n}\n')
    migrate([src], out=tmp_path / "c", jobs=1)
    migrate([src], out=tmp_path / "p", jobs=1, style="pretty")
    compact = (tmp_path / "c" / "doc.json").read_bytes()
    pretty = (tmp_path / "p" / "doc.json").read_bytes()
    assert compact.endswith(b"}\n") and compact.count(b"\n") == 1
    assert pretty.startswith(b'{\n  "success": true,') and json.loads(pretty) == json.loads(compact)


def test_stdin_to_stdout(tmp_path: Path) -> None:
    import io

    out = io.BytesIO()
    data = legacy_variant(0) + b"\nnope\n" + _V2 + b"\n"
    rep = migrate(["-"], stdin=io.BytesIO(data), stdout=out, rejects=tmp_path / "r.jsonl", jobs=1)
    assert rep.mode == "stdout" and rep.records == 3 and rep.rejected == 1
    assert out.getvalue() == _converted(legacy_variant(0)) + b"\n" + _V2 + b"\n"
    assert _rejects(tmp_path / "r.jsonl")[0]["source"] == "<stdin>"


def test_stale_temp_files_are_ignored_and_cleaned(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_bytes(legacy_variant(0) + b"\n")
    dead = tmp_path / "in" / f"{TEMP_PREFIX}999999999-00000000-a.jsonl"
    dead.write_bytes(b"half a reco")
    mine = tmp_path / "in" / f"{TEMP_PREFIX}{os.getpid()}-00000000-b.jsonl"
    mine.write_bytes(b"in progress")
    rep = migrate([tmp_path / "in"], check=True, include=["*"], jobs=1)
    assert rep.files_total == 1 and dead.exists()  # never an input; a check run deletes nothing
    rep = migrate([tmp_path / "in"], in_place=True, jobs=1)
    assert rep.temp_files_removed == 1
    assert not dead.exists() and mine.exists()  # a live process's temp file is left alone
    assert clean_stale_temps(tmp_path / "in") == []


def test_a_runs_temporaries_name_its_process(tmp_path: Path) -> None:
    """``--in-place`` takes no lock: a run's temporaries carry its pid, so a start-up sweep removes
    those of a dead run and leaves a live run's alone, whichever executor wrote them."""
    from envglot.migration.fs import run_id, temp_path

    (tmp_path / "in").mkdir()
    live, dead = run_id(dask=False), f"999999999-{run_id(dask=False).split('-', 1)[1]}"
    assert live.startswith(f"{os.getpid()}-")
    other = Path(temp_path(os.fspath(tmp_path / "in" / "a.jsonl"), live, "0"))
    stale = Path(temp_path(os.fspath(tmp_path / "in" / "a.jsonl"), dead, "0.1"))
    other.write_bytes(b"another run's piece")
    stale.write_bytes(b"a dead run's piece")
    assert clean_stale_temps(tmp_path / "in") == [stale]
    assert other.exists() and run_id(dask=True).startswith("dask-")
    # an in-place run: its own temporaries carry its pid; it removes a dead run's, not a live one's
    from envglot.migration import fs

    stale.write_bytes(b"a dead run's piece")
    live_other = Path(temp_path(os.fspath(tmp_path / "in" / "a.jsonl"), f"{os.getppid()}-0000", "0"))
    live_other.write_bytes(b"a live run's piece")
    (tmp_path / "in" / "a.jsonl").write_bytes(legacy_variant(0) + b"\n")
    named: list[str] = []
    real = fs.temp_path
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fs, "temp_path", lambda *a: named.append(real(*a)) or named[-1])
        rep = migrate([tmp_path / "in"], in_place=True, jobs=1)
    assert rep.temp_files_removed == 1 and rep.files_written == 1 and not stale.exists() and live_other.exists()
    assert named and all(os.path.basename(n).startswith(f"{TEMP_PREFIX}{os.getpid()}-") for n in named)


@pytest.mark.parametrize("jobs", [1, 2])
def test_in_place_an_unchanged_file_keeps_its_rejects(tmp_path: Path, jobs: int) -> None:
    """A file an earlier in-place run committed holds only target records: a re-run leaves it and
    its lines in the rejects file; a file changed again has its lines replaced."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_bytes(legacy_variant(0) + b"\nnot json\n")
    (tmp_path / "in" / "b.jsonl").write_bytes(legacy_variant(1) + b"\n")
    rejects = tmp_path / "r.jsonl"
    migrate([tmp_path / "in"], in_place=True, rejects=rejects, jobs=jobs, chunk_bytes=16)
    assert [r["source"] for r in _rejects(rejects)] == [os.fspath(tmp_path / "in" / "a.jsonl")]
    (tmp_path / "in" / "b.jsonl").write_bytes(legacy_variant(2) + b"\n{\n")
    rep = migrate([tmp_path / "in"], in_place=True, backup=None, rejects=rejects, jobs=jobs, chunk_bytes=16)
    assert rep.files_unchanged == 1 and rep.converted == 1 and rep.rejected == 1
    assert sorted(_original(r) for r in _rejects(rejects)) == [b"not json", b"{"]


@pytest.mark.parametrize("jobs", [1, 2])
def test_check_on_output_gives_what_out_writes(tmp_path: Path, jobs: int) -> None:
    """``on_output`` (``--check --diff``) is told, in walk order, each changed file's output as
    ``--out`` writes it, also for a file the pool reads in byte ranges; unchanged files are not told."""
    make_corpus(tmp_path / "in")
    (tmp_path / "in" / "big.jsonl").write_bytes(b"".join(legacy_variant(i) + b"\n" for i in range(300)))
    (tmp_path / "in" / "same.jsonl").write_bytes(_V2 + b"\n")
    told: list[tuple[str, str, bytes]] = []
    rep = migrate([tmp_path / "in"], check=True, jobs=jobs, chunk_bytes=1024, on_output=lambda *a: told.append(a))
    migrate([tmp_path / "in"], out=tmp_path / "out", jobs=1)
    names = [t[0] for t in told]
    assert names == sorted(names, key=lambda n: Path(n).relative_to(tmp_path / "in").parts) and len(names) > 2
    assert len(told) == rep.files_changed - len(rep.failed) - 1  # the rejected document has no output
    for name, src, data in told:  # a .gz file's output as written, decompressed
        written = (tmp_path / "out" / Path(name).relative_to(tmp_path / "in")).read_bytes()
        assert src == name and data == (gzip.decompress(written) if name.endswith(".gz") else written)


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("late", [True, False])
def test_stdin_to_out_is_written_whole(tmp_path: Path, jobs: int, late: bool) -> None:
    """stdin cannot be read again: with ``--out`` its output is written as it comes — a change after
    unchanged chunks, or no change at all (then ``stdin.jsonl`` is a copy), loses no record (an
    assertion and an empty ``--out`` before)."""
    import io

    data = (_V2 + b"\n") * 400 + (legacy_variant(1) + b"\n" if late else b"")
    rep = migrate(["-"], stdin=io.BytesIO(data), out=tmp_path / "out", jobs=jobs, chunk_bytes=1024)
    assert rep.exit_code == 0 and rep.files_written == 1 and rep.failed == [] and rep.converted == int(late)
    expected = (_V2 + b"\n") * 400 + (_converted(legacy_variant(1)) + b"\n" if late else b"")
    assert (tmp_path / "out" / "stdin.jsonl").read_bytes() == expected


def _mixed_stream() -> bytes:
    """JSON Lines as they come from a pipe: records of every dialect, corrupt, blank and too long
    lines, CRLF terminators, and a last line without a newline."""
    lines = []
    for i in range(120):
        lines.append(
            [legacy_variant(i), _V2, b"{not json", b"", b"  \t", b'{"x":"' + b"y" * 3000 + b'"}'][i % 6]
            + (b"\r\n" if i % 7 == 0 else b"\n")
        )
    return b"".join(lines) + legacy_variant(999)


@pytest.mark.parametrize("jobs", [1, 2])
def test_stdin_gives_what_the_same_bytes_in_a_file_give(tmp_path: Path, jobs: int) -> None:
    """stdin, cut into pieces as it is read, is migrated as the same bytes in a file are, in every
    mode: outputs, counts, rejects (but for their source) and diagnostics alike."""
    import io

    data = _mixed_stream()
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "stdin.jsonl").write_bytes(data)  # the name stdin's output takes under --out
    kw: dict[str, Any] = {"jobs": jobs, "chunk_bytes": 1024, "max_record_bytes": 2048}
    seen: dict[str, list[tuple[int | None, str]]] = {"file": [], "stdin": []}

    def log(key: str) -> Any:
        return lambda _f, line, item: seen[key].append((line, type(item).__name__))

    f = migrate([tmp_path / "in"], out=tmp_path / "f", rejects=tmp_path / "f.rej", on_diagnostic=log("file"), **kw)
    s = migrate(
        ["-"], stdin=io.BytesIO(data), out=tmp_path / "s", rejects=tmp_path / "s.rej", on_diagnostic=log("stdin"), **kw
    )
    assert f.rejected and f.converted and f.passed_through
    assert (tmp_path / "s" / "stdin.jsonl").read_bytes() == (tmp_path / "f" / "stdin.jsonl").read_bytes()
    assert seen["stdin"] == seen["file"]
    for name in ("records", "converted", "passed_through", "rejected", "lossy", "bytes_in", "bytes_out", "by_source"):
        assert getattr(s, name) == getattr(f, name), name
    assert (s.jobs, s.files_written, s.exit_code) == (f.jobs, 1, f.exit_code)
    named = [dict(r, source=None) for r in _rejects(tmp_path / "s.rej")]
    assert named == [dict(r, source=None) for r in _rejects(tmp_path / "f.rej")]
    out = io.BytesIO()
    t = migrate(["-"], stdin=io.BytesIO(data), stdout=out, rejects=tmp_path / "t.rej", **kw)
    assert (t.converted, t.rejected, t.files_written) == (f.converted, f.rejected, 1)
    assert out.getvalue() == (tmp_path / "f" / "stdin.jsonl").read_bytes()
    assert (tmp_path / "t.rej").read_bytes() == (tmp_path / "s.rej").read_bytes()
    c = migrate(["-"], stdin=io.BytesIO(data), check=True, **kw)
    assert (c.converted, c.rejected, c.files_changed, c.exit_code) == (f.converted, f.rejected, 1, 1)
    assert not list(tmp_path.rglob(f"{TEMP_PREFIX}*"))


@pytest.mark.parametrize("jobs", [1, 2])
def test_stdin_is_written_as_it_is_read(tmp_path: Path, jobs: int) -> None:
    """stdin is not read ahead of its output by more than the pieces in flight (a few chunks): its
    first output is written to stdout long before its end is read, so memory stays bounded."""
    import io

    from envglot.migration.stream import MAX_IN_FLIGHT_BYTES

    data = (legacy_variant(1) + b"\n") * 20000  # ~ 3 MB
    src = io.BytesIO(data)
    first: list[int] = []

    class Out(io.BytesIO):
        def write(self, b: Any) -> int:
            if not first:
                first.append(src.tell())
            return super().write(b)

    out = Out()
    rep = migrate(["-"], stdin=src, stdout=out, rejects=tmp_path / "r.jsonl", jobs=jobs, chunk_bytes=4096)
    assert rep.converted == 20000 and out.getvalue().count(b"\n") == 20000
    assert first[0] <= min(len(data) // 4, MAX_IN_FLIGHT_BYTES)
    assert first[0] <= (jobs + 2) * (4096 + len(legacy_variant(1)) + 1)


@pytest.mark.parametrize("jobs", [1, 2])
def test_stdin_among_files_keeps_walk_order(tmp_path: Path, jobs: int) -> None:
    """Files before and after stdin: committed, their rejects written and their diagnostics told in
    walk order (stdin's turn comes once the files before it are committed)."""
    import io

    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_bytes(_mixed_stream())
    order: list[str] = []

    def log(f: str, _line: int | None, _item: Any) -> None:
        if not order or order[-1] != f:
            order.append(f)

    names = [str(tmp_path / "a.jsonl"), "-", str(tmp_path / "b.jsonl")]
    rep = migrate(
        names, stdin=io.BytesIO(_mixed_stream()), out=tmp_path / "out", jobs=jobs, chunk_bytes=1024, on_diagnostic=log
    )
    assert order == [names[0], "<stdin>", names[2]]
    assert [c.file for c in rep.changed] == order and rep.files_written == 3
    sources = [r["source"] for r in _rejects(tmp_path / "out" / ".envglot-rejects.jsonl")]
    assert list(dict.fromkeys(sources)) == order
    assert (tmp_path / "out" / "stdin.jsonl").read_bytes() == (tmp_path / "out" / "a.jsonl").read_bytes()


@pytest.mark.parametrize("jobs", [1, 2])
def test_stdin_stopped_by_max_errors_writes_no_output(tmp_path: Path, jobs: int) -> None:
    """max-errors passed in stdin: its output is not committed (no temporary left), its rejects so
    far are, the counts are those of the pieces taken up to the one where the limit passed."""
    import io

    rep = migrate(
        ["-"], stdin=io.BytesIO(_mixed_stream()), out=tmp_path / "out", jobs=jobs, chunk_bytes=1024, max_errors=3
    )
    assert rep.exit_code == 65 and rep.stopped is not None and "<stdin>:" in rep.stopped
    assert rep.not_processed == ["<stdin>"] and rep.files_written == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".envglot-rejects.jsonl"]
    assert len(_rejects(tmp_path / "out" / ".envglot-rejects.jsonl")) == rep.rejected > 3


@pytest.mark.parametrize("jobs", [1, 2])
def test_stdin_interrupted_leaves_no_temporary(tmp_path: Path, jobs: int) -> None:
    """Ctrl-C while stdin is read: the run stops as interrupted, the files before stdin are
    committed, stdin's output temporary and uncommitted rejects are dropped."""
    import io

    (tmp_path / "a.jsonl").write_bytes(_mixed_stream())

    class Interrupted(io.BytesIO):
        def read(self, n: int | None = -1) -> bytes:
            if self.tell() > 20_000:
                raise KeyboardInterrupt
            return super().read(n if n is None or n < 0 else min(n, 4096))

    with pytest.raises(KeyboardInterrupt):
        migrate(
            [str(tmp_path / "a.jsonl"), "-"],
            stdin=Interrupted(_mixed_stream() * 20),
            out=tmp_path / "out",
            report=tmp_path / "r.json",
            jobs=jobs,
            chunk_bytes=1024,
        )
    rep = json.loads((tmp_path / "r.json").read_bytes())
    assert rep["stopped"] == "interrupted" and rep["not_processed"] == ["<stdin>"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".envglot-rejects.jsonl", "a.jsonl"]
    assert {r["source"] for r in _rejects(tmp_path / "out" / ".envglot-rejects.jsonl")} == {str(tmp_path / "a.jsonl")}


@pytest.mark.parametrize("jobs", [1, 2])
def test_stdin_to_a_full_disk_fails_with_74_and_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    """An output error while stdin's output is written: stdin fails (74), the run stops, its
    temporary is removed and its rejects are not committed."""
    import io

    from envglot.migration import stream

    real = stream.store.open_write

    class Full(io.FileIO):
        def write(self, b: Any) -> int:
            if self.tell() > 2000:
                raise OSError(28, "No space left on device")
            return super().write(b)

    def open_write(fs: Any, path: str, root: str | None = None, *, mode: int | None, run: str | None = None) -> Any:
        real(fs, path, root, mode=mode, run=run).close()
        return Full(path, "wb")

    monkeypatch.setattr(stream.store, "open_write", open_write)
    rep = migrate(["-"], stdin=io.BytesIO(_mixed_stream() * 5), out=tmp_path / "out", jobs=jobs, chunk_bytes=1024)
    shown = os.fspath(tmp_path / "out" / "stdin.jsonl")
    assert rep.exit_code == 74 and rep.stopped == f"output error: cannot write {shown}"
    assert [(f.file, f.error) for f in rep.failed] == [("<stdin>", f"cannot write {shown}: No space left on device")]
    assert list((tmp_path / "out").iterdir()) == []


def test_mapping_overlay_is_used(tmp_path: Path) -> None:
    overlay = tmp_path / "ov.toml"
    overlay.write_text('dialect = "response-v2"\n\n[[write]]\ncategory = "internal"\ncode = "OPERATION_FAILED"\n')
    src = tmp_path / "a.jsonl"
    src.write_bytes(legacy_variant(1) + b"\n")
    migrate([src], out=tmp_path / "out", mappings=[overlay], jobs=2, chunk_bytes=1)
    doc = json.loads((tmp_path / "out" / "a.jsonl").read_bytes())
    assert doc["data"]["error_code"] == "OPERATION_FAILED"


def test_report_json_round_trips(tmp_path: Path) -> None:
    src = tmp_path / "a.jsonl"
    src.write_bytes(legacy_variant(0) + b"\n" + _V2 + b"\n")
    rep = migrate([src], out=tmp_path / "out", report=tmp_path / "r.json", jobs=1)
    data = json.loads((tmp_path / "r.json").read_bytes())
    assert data == rep.to_dict()
    assert data["by_source"]["legacy-v1"]["converted"] == 1 and data["by_source"]["response-v2"]["passed_through"] == 1


def test_a_stopped_run_lists_the_rest_not_processed_except_the_failed() -> None:
    """Both drivers record an early stop with ``MigrationReport.stop``: a file that failed already is
    listed once, as failed, not also as not processed (max-errors, output error or interruption)."""
    from envglot.migration import FileFailure, MigrationReport

    rep = MigrationReport(target="response-v2", source=None, mode="out", jobs=1, files_total=3)
    rep.failed.append(FileFailure(file="b.jsonl", error="cannot read: Input/output error", exit_code=66))
    rep.stop("interrupted", iter(["b.jsonl", "c.jsonl"]))
    assert rep.stopped == "interrupted" and rep.not_processed == ["c.jsonl"]


# --------------------------------------------------------------------------- docs


def test_docs_python_api_example_runs() -> None:
    section = DOCS.read_text().split("## Python API", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    exec(compile(code.group(1), "docs/migration.md", "exec"), {})


def test_docs_before_after_examples_are_what_the_converter_produces() -> None:
    """Every before/after pair in docs/migration.md is re-generated by the real converter."""
    text = DOCS.read_text()
    pairs = re.findall(r"Before:\n\n```json\n(.*?)\n```\n\nAfter:\n\n```json\n(.*?)\n```", text, re.S)
    assert len(pairs) >= 8
    m = Migrator()
    for before, after in pairs:
        o = m(before.encode())
        assert o.status == "converted", before
        assert o.output == after.encode(), before


def test_docs_reject_lines_are_what_reject_line_writes() -> None:
    section = DOCS.read_text().split("**Format:**", 1)[1]
    block = re.search(r"```json\n(.*?)```", section, re.S)
    assert block is not None
    lines = block.group(1).strip().splitlines()
    assert len(lines) == 3
    for line in lines:
        rec = json.loads(line)
        original = _original(rec)
        m = Migrator(unsupported="raise" if rec["error_type"] == "UnsupportedError" else "warn")
        assert reject_line(str(rec["source"]), rec["line"], original, m(original)) == line.encode() + b"\n"  # type: ignore[arg-type]
