"""The executors of a local migration give one result: inline (``-j 1``) and the process pool
(``-j N``), whose workers read their own pieces, write a changed output to a temporary
themselves and send back its path (never its bytes). Differential over the benchmark corpus,
the docs' example archive and the migration test corpus; unit tests show a worker's own
temporary and a file put together from its ranges."""

from __future__ import annotations

import gzip
import importlib.util
import itertools
import multiprocessing
import os
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from envglot.migration import TEMP_PREFIX, Migrator, migrate
from envglot.migration.assembly import finish_ranged
from envglot.migration.executors import Pool, WorkerDiedError
from envglot.migration.fs import run_id, temp_path
from envglot.migration.inputs import Task
from envglot.migration.partitions import Piece, PieceResult, RunSpec, plan, ranges, run_task
from envglot.migration.walk import FileSpec
from envglot.migration.workers import migrate_chunk, worker_init
from envglot.options import resolve

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))

from migrate_corpus import make_corpus  # noqa: E402

_spec = importlib.util.spec_from_file_location("bench_corpus", ROOT / "benchmarks" / "corpus.py")
assert _spec is not None and _spec.loader is not None
bench_corpus = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("bench_corpus", bench_corpus)
_spec.loader.exec_module(bench_corpus)

COUNTS = (
    "records",
    "converted",
    "passed_through",
    "rejected",
    "internal_errors",
    "lossy",
    "unwrapped",
    "bytes_in",
    "bytes_out",
    "by_source",
    "diagnostics",
    "files_total",
    "files_written",
    "files_changed",
    "files_unchanged",
    "backups",
    "failed",
    "exit_code",
)
"""What the report of every executor says alike (``jobs`` and times differ)."""


def _bench_records() -> list[bytes]:
    corp = bench_corpus.generate({"tiny": 8, "medium": 4, "large": 1}, seed=11)
    sources = tuple(d for d in bench_corpus.DIALECTS if d != "response-v2")
    return list(bench_corpus.jsonl_mix(corp, sources, corp.seed, 30))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One tree: the benchmark mix (lines, documents, gzip, an unchanged head before a change),
    the docs' example archive and the migration test corpus."""
    root = tmp_path_factory.mktemp("executors") / "in"
    bench = root / "bench"
    bench.mkdir(parents=True)
    records = _bench_records()
    body = b"\n".join(records) + b"\n"
    (bench / "mixed.jsonl").write_bytes(body)
    (bench / "mixed.jsonl.gz").write_bytes(gzip.compress(body, mtime=0))
    for i, r in enumerate(records[:40]):
        (bench / f"doc-{i:02}.json").write_bytes(r)
    # already the target for more than a chunk, then records to convert: the output starts
    # from the input's own bytes, then takes the workers' parts
    converted = [migrate_chunk(Migrator(), Task("x", "doc", r, 1, "compact")).out for r in records[:60]]
    (bench / "head.jsonl").write_bytes(b"\n".join(c for c in converted if c) + b"\n" + body)
    shutil.copytree(ROOT / "docs" / "examples" / "archive", root / "archive")
    make_corpus(root / "corpus", lines_per_file=80)
    return root


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _run(where: Path, inputs: Path, mode: str, jobs: int, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Path]:
    """Migrate a copy of ``inputs`` in ``where`` (named relatively, so reports and rejects name the same files)."""
    where.mkdir()
    shutil.copytree(inputs, where / "in")
    monkeypatch.chdir(where)
    kw: dict[str, Any] = {"out": "out"} if mode == "out" else {"in_place": True}
    rep = migrate(["in"], rejects="rejects.jsonl", jobs=jobs, chunk_bytes=4096, **kw)
    return rep, where / ("out" if mode == "out" else "in")


def _changed(rep: Any, where: Path) -> list[tuple[Any, ...]]:
    """The report's changed files, their outputs named relative to ``where`` (in place: absolute)."""
    return [
        (c.file, os.path.relpath(os.path.join(where, c.output), where), c.converted, c.passed_through, c.rejected)
        for c in rep.changed
    ]


@pytest.mark.parametrize("mode", ["out", "in-place"])
def test_the_pool_writes_what_the_inline_executor_writes(
    tmp_path: Path, inputs: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    inline, out1 = _run(tmp_path / "j1", inputs, mode, 1, monkeypatch)
    pool, out2 = _run(tmp_path / "j2", inputs, mode, 2, monkeypatch)
    assert (inline.jobs, pool.jobs) == (1, 2)
    assert inline.converted and inline.rejected and inline.passed_through and inline.files_unchanged
    for name in COUNTS:
        assert getattr(pool, name) == getattr(inline, name), name
    assert _changed(pool, tmp_path / "j2") == _changed(inline, tmp_path / "j1")
    assert _tree(out2) == _tree(out1)
    assert (tmp_path / "j2" / "rejects.jsonl").read_bytes() == (tmp_path / "j1" / "rejects.jsonl").read_bytes()
    assert not list(tmp_path.rglob(f"{TEMP_PREFIX}*"))


def test_a_worker_writes_a_changed_range_and_sends_back_its_path(tmp_path: Path) -> None:
    """A pool worker reads its own ranges of the input: a changed range's output is written to a
    temporary of the run beside the destination and only its path comes back; an unchanged
    range writes nothing and sends back only its length."""
    records = _bench_records()
    body = b"\n".join(records[:8]) + b"\n"
    expected = migrate_chunk(Migrator(), Task("x", "lines", body, 1, "compact")).out
    src = tmp_path / "in.jsonl"
    src.write_bytes(expected + body)  # already the target, then records to convert
    dst = tmp_path / "out" / "x.jsonl"
    f = FileSpec(0, "in.jsonl", str(src), str(dst), False, False, src.stat().st_size)
    options = {"to": "response-v2", "from_": None, "options": resolve(None)}
    spec = RunSpec(run_id(dask=False), options, "compact", 1024, False, None, None, sync=False)
    half = len(expected)
    pieces = [Piece(f, 0, 2, 0, half), Piece(f, 1, 2, half, f.size)]
    with ProcessPoolExecutor(max_workers=1, initializer=worker_init, initargs=(options,)) as pool:
        same, changed = pool.submit(run_task, spec, pieces).result()
    assert same.tmp is None and same.same == half and same.kept is None  # nothing written, nothing sent
    assert changed.tmp is not None and changed.kept is None and changed.tally.bytes_out == len(expected)
    tmp = Path(changed.tmp)
    assert tmp.parent == dst.parent and tmp.name.startswith(f"{TEMP_PREFIX}{os.getpid()}-")  # the run's
    assert tmp.read_bytes() == expected
    assert [p.name for p in dst.parent.iterdir()] == [tmp.name]


def _put_together(where: Path) -> tuple[list[bytes], str | None, str]:
    """Three ranges' temporaries of ``where/out.jsonl`` put together by :func:`finish_ranged`:
    the ranges' bytes, and what it returned."""
    dst = str(where / "out.jsonl")
    f = FileSpec(0, "in.jsonl", str(where / "in.jsonl"), dst, False, False, 0)
    spec = RunSpec("r", {}, "compact", 1024, False, None, None, sync=False)
    parts = [b"a" * 70_000 + b"\n", b"b\n" * 5, b"c" * 300_000 + b"\n"]
    results = []
    for i, b in enumerate(parts):
        Path(t := temp_path(dst, "r", f"0.{i}")).write_bytes(b)
        results.append(PieceResult(file=0, part=i, tmp=t))
    return parts, *finish_ranged(spec, f, results, True)


@pytest.mark.parametrize("kernel", ["copies", "refuses", "stops early"])
def test_a_file_read_in_ranges_is_put_together_from_their_temporaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kernel: str
) -> None:
    """The first range's temporary becomes the file's; the next ones are appended (by the kernel,
    or read and written where it cannot copy, or for what it left) and removed."""
    import errno

    real = os.copy_file_range

    def refuse(*_args: object) -> int:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    def stop_early(src: int, dst: int, count: int) -> int:
        return real(src, dst, min(count, 1000)) if count > 50_000 else 0  # a part, then nothing

    if kernel != "copies":
        monkeypatch.setattr(os, "copy_file_range", refuse if kernel == "refuses" else stop_early)
    parts, tmp, error = _put_together(tmp_path)
    assert error == "" and tmp is not None
    assert Path(tmp).read_bytes() == b"".join(parts)
    assert [p.name for p in tmp_path.iterdir()] == [os.path.basename(tmp)]


_SET_IN_THE_PARENT: list[int] = []


def _parent_state() -> int:
    return len(_SET_IN_THE_PARENT)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked on Linux only")
def test_the_pools_workers_are_forked_on_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    """On Linux a pool's workers are forked, whatever Python's default start method: they start
    with what the parent holds (its modules, tables, Migrator), not from a new interpreter."""
    monkeypatch.setattr(sys.modules[__name__], "_SET_IN_THE_PARENT", [1, 2])
    pool = Pool(1, {"to": "response-v2", "from_": None, "options": resolve(None)})
    try:
        pool.submit(_parent_state, tag="state")
        assert pool.next() == ("state", 2, None)
    finally:
        pool.close()


def _buffer_faults() -> int:
    """Minor page faults of 10 rounds of eight buffers just under 1 MiB made and freed together
    (as a chunk's input, output and their pieces are), after one such round."""
    import resource

    def round_() -> None:
        held = [b"x" * (1024 * 1024 - 4096) for _ in range(8)]  # written: every page touched
        del held

    round_()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(10):
        round_()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def _glibc() -> bool:
    try:
        return bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (ValueError, OSError):
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux") or not _glibc(), reason="glibc's malloc on Linux only")
def test_a_pool_worker_keeps_its_freed_chunk_buffers() -> None:
    """A worker sets glibc's malloc thresholds where their sliding rule ends (``workers.MMAP_THRESHOLD``):
    freed buffers of a chunk's size stay in its heap for the next one instead of being handed back
    to the kernel and faulted in again. A fresh interpreter with the defaults faults them afresh."""
    code = "import sys; sys.path.insert(0, sys.argv[1]); import test_migrate_executors as t; print(t._buffer_faults())"
    import subprocess

    fresh = int(
        subprocess.run(
            [sys.executable, "-c", code, str(Path(__file__).parent)], capture_output=True, text=True, check=True
        ).stdout
    )
    pool = Pool(1, {"to": "response-v2", "from_": None, "options": resolve(None)})
    try:
        pool.submit(_buffer_faults, tag="faults")
        tag, worker, exc = pool.next()
    finally:
        pool.close()
    assert exc is None and tag == "faults"
    assert fresh > 10 * 8 * 200  # the defaults: each round's pages given back and faulted again
    assert worker < 1000, (worker, fresh)


@pytest.mark.skipif(not sys.platform.startswith("linux") or not _glibc(), reason="glibc's malloc on Linux only")
def test_the_migrate_commands_process_keeps_its_freed_chunk_buffers(tmp_path: Path) -> None:
    """``envglot migrate`` with the local engine converts (``-j 1``) and appends (``-j N``) in its own
    process, which takes the pool workers' malloc setting; a library call's process is never set
    (the control: ``envglot.migrate`` leaves the defaults)."""
    import subprocess

    src = tmp_path / "in.jsonl"
    src.write_bytes(b'{"status": "ok", "data": {"n": 1}}\n')
    run = (
        "import sys; sys.path.insert(0, sys.argv[1]); import test_migrate_executors as t\n"
        "from envglot.cli import main\n"
        "if sys.argv[2] == 'cli':\n"
        "    try:\n"
        "        main(['migrate', sys.argv[3], '--out', sys.argv[4], '-j', '1', '-q'])\n"
        "    except SystemExit as e:\n"
        "        assert e.code == 0, e.code\n"
        "else:\n"
        "    import envglot.migration as m; m.migrate([sys.argv[3]], to='response-v2', out=sys.argv[4], jobs=1)\n"
        "print(t._buffer_faults())\n"
    )

    def faults(how: str, out: str) -> int:
        args = [sys.executable, "-c", run, str(Path(__file__).parent), how, str(src), str(tmp_path / out)]
        return int(subprocess.run(args, capture_output=True, text=True, check=True).stdout.split()[-1])

    command, library = faults("cli", "out-cli"), faults("api", "out-api")
    assert library > 10 * 8 * 200, library
    assert command < 1000, (command, library)


_SLOW_START = 3.0


def _slow_init(options: dict[str, Any]) -> None:
    time.sleep(_SLOW_START)
    worker_init(options)


def _broken_init(options: dict[str, Any]) -> None:
    raise RuntimeError("this worker cannot start")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked on Linux only")
def test_the_pool_is_ready_once_its_workers_are_forked(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Pool()`` returns once its workers are forked, without waiting for them to start (the run
    plans and submits its tasks meanwhile): a worker that takes seconds to start does not hold it."""
    from envglot.migration import executors

    monkeypatch.setattr(executors, "worker_init", _slow_init)
    t0 = time.monotonic()
    pool = Pool(2, {"to": "response-v2", "from_": None, "options": resolve(None)})
    try:
        assert time.monotonic() - t0 < _SLOW_START
        assert len(multiprocessing.active_children()) >= 2  # both forked already
        pool.submit(_parent_state, tag="state")
        assert pool.next()[1:] == (len(_SET_IN_THE_PARENT), None)
    finally:
        pool.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked on Linux only")
def test_a_worker_that_cannot_start_is_reported_by_the_first_task(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that fails to start breaks the pool: the first task comes back as a worker that
    died (the run stops with exit 70), not as a success; so does a task submitted to the pool
    once it is known to be broken."""
    from envglot.migration import executors

    monkeypatch.setattr(executors, "worker_init", _broken_init)
    pool = Pool(1, {"to": "response-v2", "from_": None, "options": resolve(None)})
    try:
        for tag in ("first", "after"):
            pool.submit(_parent_state, tag=tag)
            got, value, exc = pool.next()
            assert got == tag and value is None and isinstance(exc, WorkerDiedError)
            assert not pool.pending()
    finally:
        pool.close()


def test_a_range_appended_is_handed_to_the_disk_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each range put together into the file's temporary starts its way to the disk when it is in
    (the commit's sync then finds it written): the ranges' bytes, in order, each once."""
    from envglot.migration import assembly

    started: list[tuple[int, int]] = []
    real = assembly.write_back

    def spy(fd: int, offset: int, length: int) -> None:
        started.append((offset, length))
        real(fd, offset, length)

    monkeypatch.setattr(assembly, "write_back", spy)
    parts, tmp, error = _put_together(tmp_path)
    assert error == "" and tmp is not None and Path(tmp).read_bytes() == b"".join(parts)
    assert started == [(0, 70_001), (70_001, 10), (70_011, 300_001)]


def test_the_pool_cuts_its_last_ranges_small_so_its_workers_end_together() -> None:
    """Tapered (a process pool's workers take the tasks as they free up): a range is at most the
    piece size, at most a quarter of the run left from its start for two workers, and not under
    the least size (a smaller remainder joins the last range): the last ranges are small.
    Untapered: equal ranges."""
    mb = 1 << 20
    size = 200_000_111
    target = -(-size // 8)
    cut = ranges(size, target, 0, 2, mb)
    assert cut[0][0] == 0 and cut[-1][1] == size and all(a[1] == b[0] for a, b in itertools.pairwise(cut))
    sizes = [b - a for a, b in cut]
    assert sizes[0] == target and min(sizes) >= mb and mb <= sizes[-1] < 2 * mb
    assert all(a >= b for a, b in itertools.pairwise(sizes[:-1]))
    assert all(b - a <= max(mb, -(-(size - a) // 4)) for a, b in cut[:-1])
    assert len(cut) == 19
    assert ranges(size, target, 0, 0, mb) == [(i * target, min((i + 1) * target, size)) for i in range(8)]
    # much of the run still to come after this file: its ranges are all of the piece size
    assert ranges(100 * mb, 10 * mb, 1000 * mb, 2, mb) == [(i * 10 * mb, (i + 1) * 10 * mb) for i in range(10)]
    # a file under the least size is one range
    assert ranges(mb // 2, 4096, 0, 2, mb) == [(0, mb // 2)]
    # plan: the bytes of the files after a cut file count as what is left of the run
    big = FileSpec(0, "a.jsonl", "/a.jsonl", None, False, False, 40 * mb)
    after = FileSpec(1, "b.jsonl", "/b.jsonl", None, False, False, 40 * mb)
    tasks = plan([big, after], 8 * mb, taper=2, least=mb)
    first = [t[0] for t in tasks if t[0].file.index == 0]
    assert [p.end - p.start for p in first] == [8 * mb] * 5 and all(p.parts == 5 for p in first)
    last = [t[0].end - t[0].start for t in tasks if t[0].file.index == 1]
    assert sum(last) == 40 * mb and last[-1] < 2 * mb


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_long_non_ascii_name_gets_a_temporary_of_at_most_255_bytes(tmp_path: Path, jobs: int) -> None:
    """A piece's temporary is named ``.envglot-tmp-dask-<run>-<piece>-<name>`` cut to 255 bytes:
    a 240-byte UTF-8 name is written, not refused as too long."""
    from migrate_corpus import legacy_variant

    name = "é" * 117 + ".jsonl"  # 240 bytes
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / name).write_bytes(b"\n".join(legacy_variant(i) for i in range(40)) + b"\n")
    rep = migrate([tmp_path / "in"], out=tmp_path / "out", jobs=jobs, chunk_bytes=512)
    assert rep.failed == [] and rep.files_written == 1 and rep.files_changed == 1
    assert (tmp_path / "out" / name).read_bytes().count(b"\n") == 40


def test_an_inline_run_takes_small_files_a_few_hundred_a_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In this process a task's results wait for its end to be committed: an inline run's tasks hold
    at most SMALL_GROUP_FILES files (their results die young), a pool's up to TASK_FILES."""
    from envglot.migration import executors
    from envglot.migration.partitions import SMALL_GROUP_FILES, TASK_FILES

    src = tmp_path / "in"
    src.mkdir()
    n = SMALL_GROUP_FILES * 2 + 3
    for i in range(n):
        (src / f"{i:04d}.jsonl").write_bytes(b'{"ok": true, "data": {"n": %d}}\n' % i)
    sizes: list[int] = []
    real = executors.Inline.submit

    def submit(self: executors.Inline, fn: Any, *args: Any, tag: Any) -> None:
        if tag[0] == "pieces":
            sizes.append(len(tag[1]))
        real(self, fn, *args, tag=tag)

    monkeypatch.setattr(executors.Inline, "submit", submit)
    rep = migrate(src, out=tmp_path / "out", jobs=1)
    assert rep.files_written == n and rep.exit_code == 0
    assert sum(sizes) == n and max(sizes) == SMALL_GROUP_FILES and len(sizes) == 3
    assert SMALL_GROUP_FILES < TASK_FILES
    files = [FileSpec(i, f"f{i}", f"f{i}", None, False, False, 10) for i in range(n)]
    assert [len(t) for t in plan(files, 1 << 30)] == [n]  # the default (a pool, Dask): one task
