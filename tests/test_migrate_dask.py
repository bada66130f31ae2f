"""`migrate` on Dask: the same bytes, rejects and accounting as the local engine.

Dask's synchronous scheduler over tmp_path and memory://; a real distributed.LocalCluster
(2 worker processes on loopback) on a mixed archive; a worker killed mid-run, then a re-run.
"""

from __future__ import annotations

import base64
import gzip
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dask", reason="the dask extra is not installed (pip install 'envglot[dask]')")
pytest.importorskip("distributed", reason="the dask extra is not installed (pip install 'envglot[dask]')")
fsspec = pytest.importorskip("fsspec", reason="the dask extra is not installed (pip install 'envglot[dask]')")

from envglot.migration import LOCK_NAME, REJECTS_NAME, TEMP_PREFIX, TEST_DELAY_ENV, driver, migrate  # noqa: E402
from envglot.migration.fs import DASK_TEMP_PREFIX  # noqa: E402
from envglot.migration.partitions import FileSpec, plan  # noqa: E402
from envglot.migration.walk import walk_specs  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from migrate_corpus import legacy_variant, make_corpus  # noqa: E402

POISONED = (
    b'{"success": true, "data": {"a": "\xff\xfe"}}',  # invalid UTF-8 inside a string
    b'{"success": true, "data": {"a": "\xff\xfe"}, "error": {"deep": ' + b"[" * 200 + b"]" * 200 + b"}}",
    b'{"success": true, "data": {"\xff": 1}}',  # invalid UTF-8 in a key
    b'{"success": true, "data": ' + b"[" * 1000 + b"]" * 1000 + b"}",  # deeper than the nesting limit
)


def _archive(root: Path, lines: int = 120) -> Any:
    """The mixed corpus plus poisoned records and a JSON Lines file large enough to be cut in ranges."""
    c = make_corpus(root, lines_per_file=lines)
    big = root / "logs" / "big" / "all.jsonl"
    big.parent.mkdir(parents=True, exist_ok=True)
    recs = [legacy_variant(i, pad=i % 50) for i in range(3000)]
    for i, p in enumerate(POISONED):
        recs.insert(700 + 900 * i, p)
    recs.insert(1500, b"not json")
    big.write_bytes(b"\n".join(recs) + b"\n")
    with gzip.GzipFile(root / "logs" / "big" / "poison.jsonl.gz", "wb", mtime=0) as fh:
        fh.write(b"\n".join([legacy_variant(5), *POISONED, legacy_variant(6)]) + b"\n")
    return c


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _facts(rep: Any) -> dict[str, Any]:
    d = rep.to_dict()
    for k in ("elapsed_s", "records_per_s", "mb_per_s", "jobs", "rejects_file", "changed", "temp_files_removed"):
        d.pop(k)
    d["changed"] = [{k: v for k, v in c.items() if k != "output"} for c in rep.to_dict()["changed"]]
    return d


def _originals(rejects: bytes) -> Counter[tuple[str, bytes]]:
    out: Counter[tuple[str, bytes]] = Counter()
    for line in rejects.splitlines():
        r = json.loads(line)
        raw = r["original"].encode() if "original" in r else base64.b64decode(r["original_b64"])
        out[(r["source"], raw)] += 1
    return out


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces of ~64 KB, so that the big file is read in byte ranges by several tasks."""
    monkeypatch.setattr(driver, "MIN_PARTITION_BYTES", 1)
    monkeypatch.setattr(driver, "DEFAULT_PARTITION_BYTES", 64 * 1024)


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes], Any]:
    """The archive and what the local engine makes of it (the reference)."""
    root = tmp_path_factory.mktemp("dask")
    _archive(root / "in")
    ref = migrate([root / "in"], out=root / "local", jobs=1)
    assert ref.rejected > 0 and ref.exit_code == 1
    return root, _tree(root / "local"), ref


@pytest.mark.parametrize("out", ["out", "./out/", "sub/../out", "ABS", ".", "/"])
def test_walked_files_are_named_as_pathlib_names_them(
    out: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Dask walk's output paths and names (sliced from the walked path, no ``Path`` per file)
    are those of ``store.join(out, rel)`` and ``Path(out) / rel``, for every spelling of ``out``."""
    monkeypatch.chdir(tmp_path)
    for rel in ("a.jsonl", "d/b.jsonl", "d/e/c.json"):
        (tmp_path / "in" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "in" / rel).write_bytes(b"{}\n")
    (tmp_path / "one.jsonl").write_bytes(b"{}\n")
    out = str(tmp_path / "out") if out == "ABS" else out
    _, files, _ = walk_specs(["in", "one.jsonl"], out, None, (), None, None, "out")
    base = os.path.abspath(out)
    rels = ["a.jsonl", "d/b.jsonl", "d/e/c.json", "one.jsonl"]
    assert [f.dst for f in files] == [f"{base.rstrip('/')}/{r}" for r in rels]
    assert [f.shown for f in files] == [str(Path(out) / r) for r in rels]
    assert [f.src for f in files] == [str(tmp_path / "in" / r) for r in rels[:3]] + [str(tmp_path / "one.jsonl")]


def test_plan_groups_small_files_and_cuts_large_ones() -> None:
    small = [FileSpec(i, f"f{i}.jsonl", f"/f{i}.jsonl", None, False, False, 1000) for i in range(10_000)]
    tasks = plan(small, 1024 * 1024)
    assert len(tasks) == 10  # 10,000 files of 1 KB: 10 tasks, not 10,000
    assert [p.file.index for t in tasks for p in t] == list(range(10_000))
    big = FileSpec(0, "big.jsonl", "/big.jsonl", None, False, False, 10_000_000)
    gz = FileSpec(1, "big.jsonl.gz", "/big.jsonl.gz", None, False, True, 10_000_000)
    doc = FileSpec(2, "big.json", "/big.json", None, True, False, 10_000_000)
    tasks = plan([big, gz, doc], 1024 * 1024)
    ranges = [t[0] for t in tasks if t[0].file.index == 0]
    assert len(ranges) == 10 and ranges[0].start == 0 and ranges[-1].end == 10_000_000
    assert all(a.end == b.start for a, b in itertools.pairwise(ranges))
    assert [p.file.index for t in tasks[10:] for p in t] == [1, 2]  # .gz and a document: whole


def test_synchronous_byte_identical_with_ranges(archive: Any, small_pieces: None, tmp_path: Path) -> None:
    root, ref_tree, ref = archive
    rep = migrate([root / "in"], out=tmp_path / "out", engine="dask", scheduler="synchronous", chunk_bytes=4096)
    assert _tree(tmp_path / "out") == ref_tree  # outputs and the rejects file, byte for byte
    assert _facts(rep) == _facts(ref)
    assert rep.records == rep.converted + rep.passed_through + rep.rejected
    assert rep.exit_code == ref.exit_code == 1


_V2 = b'{"success":true,"data":{"a":1},"error":null,"meta":{"version":"response-v2"}}'


def test_unchanged_ranges_and_files_are_not_rewritten(
    small_pieces: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unchanged files and unchanged ranges write no temporary of their own: an unchanged file is
    copied; a file changed late has its unchanged ranges copied from the input when it is put together."""
    from envglot.migration import fs

    opened: list[str] = []
    real = fs.open_output
    out = str(tmp_path / "out")  # the Dask run's (the local reference writes its own temporaries too)
    monkeypatch.setattr(
        fs, "open_output", lambda f, p, *r, **k: (p.startswith(out) and opened.append(p), real(f, p, *r, **k))[1]
    )
    src = tmp_path / "in"
    src.mkdir()
    same = b"\n".join([_V2] * 4000) + b"\n"  # ~330 KB: several ranges
    late = b"\n".join([_V2] * 4000 + [legacy_variant(1), b"not json", _V2]) + b"\n"
    (src / "same.jsonl").write_bytes(same)
    (src / "late.jsonl").write_bytes(late)
    (src / "same.jsonl.gz").write_bytes(gzip.compress(same))
    ref = migrate([src], out=tmp_path / "local", jobs=1)
    rep = migrate([src], out=tmp_path / "out", engine="dask", scheduler="synchronous", chunk_bytes=16 * 1024)
    assert _tree(tmp_path / "out") == _tree(tmp_path / "local")
    assert _facts(rep) == _facts(ref)
    # one temporary per file; for late.jsonl also the range holding its change (the others are not written)
    names = sorted(p.rsplit("-", 1)[-1] for p in opened if DASK_TEMP_PREFIX in p)
    assert names == ["late.jsonl", "late.jsonl", "same.jsonl", "same.jsonl.gz"]


def test_a_changed_file_in_ranges_is_put_together_from_its_first_range(
    small_pieces: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file read in ranges whose first range changed: that range's temporary becomes the file's
    (renamed, not written again), the other ranges' are appended; the output is the local one."""
    from envglot.migration import fs

    opened: list[str] = []
    real = fs.open_output
    out = str(tmp_path / "out")  # the Dask run's (the local reference writes its own temporaries too)
    monkeypatch.setattr(
        fs, "open_output", lambda f, p, *r, **k: (p.startswith(out) and opened.append(p), real(f, p, *r, **k))[1]
    )
    src = tmp_path / "in"
    src.mkdir()
    lines = [legacy_variant(i) for i in range(3000)] + [b"not json", _V2]
    (src / "all.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    ref = migrate([src], out=tmp_path / "local", jobs=1)
    rep = migrate([src], out=tmp_path / "out", engine="dask", scheduler="synchronous", chunk_bytes=16 * 1024)
    assert _tree(tmp_path / "out") == _tree(tmp_path / "local")
    assert _facts(rep) == _facts(ref)
    ranges = [p for p in opened if DASK_TEMP_PREFIX in p]
    assert len(ranges) > 2 and all(p.rsplit("-", 2)[-2].startswith("0.") for p in ranges)  # only the ranges wrote
    assert not list((tmp_path / "out").glob(f"{DASK_TEMP_PREFIX}*"))


def test_a_file_in_ranges_is_synced_once_when_put_together(
    small_pieces: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Dask task syncs a whole file's temporary, never a range's (it is not committed): the
    file put together from the ranges is synced, once, before its commit."""
    from envglot.migration import fs

    synced: list[str] = []
    real = fs.sync_local_files
    monkeypatch.setattr(fs, "sync_local_files", lambda paths: (synced.extend(paths), real(paths))[1])
    src = tmp_path / "in"
    src.mkdir()
    (src / "all.jsonl").write_bytes(b"\n".join(legacy_variant(i) for i in range(3000)) + b"\n")
    (src / "small.jsonl").write_bytes(legacy_variant(0) + b"\n")
    ref = migrate([src], out=tmp_path / "local", jobs=1)
    synced.clear()
    rep = migrate([src], out=tmp_path / "out", engine="dask", scheduler="synchronous", chunk_bytes=16 * 1024)
    assert _tree(tmp_path / "out") == _tree(tmp_path / "local")
    assert _facts(rep) == _facts(ref)
    temps = [p for p in synced if DASK_TEMP_PREFIX in p]
    pieces = sorted(p.rsplit("-", 2)[-2] for p in temps)
    assert pieces == ["0", "1"]  # all.jsonl put together (file 0), small.jsonl whole (file 1): no range


def test_a_range_changed_before_its_file_is_put_together_fails_that_file(
    small_pieces: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unchanged range is copied from the input when its file is put together, checked against
    what its task read: an input changed in between fails (66), nothing of it is written."""
    src = tmp_path / "in"
    src.mkdir()
    late = src / "late.jsonl"
    late.write_bytes(b"\n".join([_V2] * 4000 + [legacy_variant(1)]) + b"\n")
    (src / "other.jsonl").write_bytes(legacy_variant(2) + b"\n")
    real = driver.finish_ranged

    def edit_then_finish(*args: Any) -> Any:
        late.write_bytes(late.read_bytes().replace(b'"a":1', b'"a":2', 1))  # same length, other bytes
        return real(*args)

    monkeypatch.setattr(driver, "finish_ranged", edit_then_finish)
    rep = migrate([src], out=tmp_path / "out", engine="dask", scheduler="synchronous", chunk_bytes=16 * 1024)
    assert [(f.file, f.exit_code) for f in rep.failed] == [(str(late), 66)] and rep.exit_code == 66
    assert "changed while it was being migrated" in rep.failed[0].error
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["other.jsonl"]


def test_rerun_replaces_rejects_and_cleans_leftovers(archive: Any, small_pieces: None, tmp_path: Path) -> None:
    root, ref_tree, _ = archive
    out = tmp_path / "out"
    migrate([root / "in"], out=out, engine="dask", scheduler="synchronous")
    (out / "logs" / "2025" / "11" / f"{DASK_TEMP_PREFIX}dead-3-day1.jsonl").write_bytes(b"half a fi")
    again = migrate([root / "in"], out=out, engine="dask", scheduler="synchronous")
    assert again.temp_files_removed == 1
    assert _tree(out) == ref_tree  # no duplicated rejects, no leftover


def test_interrupted_client_then_rerun_exactly_once(archive: Any, small_pieces: None, tmp_path: Path) -> None:
    root, ref_tree, _ = archive
    out = tmp_path / "out"
    calls = 0

    def stop_midway(p: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        migrate([root / "in"], out=out, engine="dask", scheduler="synchronous", progress=stop_midway)
    partial = _tree(out)
    assert 0 < len(partial) < len(ref_tree)
    assert all(ref_tree[k] == v for k, v in partial.items() if k != REJECTS_NAME)  # committed files are whole
    assert not [k for k in partial if DASK_TEMP_PREFIX in k]
    rep = migrate([root / "in"], out=out, engine="dask", scheduler="synchronous")
    assert _tree(out) == ref_tree
    assert rep.exit_code == 1


def test_a_failed_commit_fails_the_rest_of_its_batch_then_rerun_exactly_once(
    archive: Any, small_pieces: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Dask driver commits through the local engine's commit batch: a rename that fails (disk
    full) fails the batch's files not yet renamed (74) and removes their temporaries; the files
    renamed before it are whole, and a re-run finishes the job."""
    from envglot.migration import fs

    root, ref_tree, _ = archive
    out = tmp_path / "out"
    real, renamed = fs.commit, []

    def full_at_second(f: Any, tmp: str, dst: str, mode: int | None = None, sync_dir: bool = True) -> None:
        if len(renamed) == 1:
            raise OSError(28, "No space left on device")
        real(f, tmp, dst, mode, sync_dir)
        renamed.append(dst)

    monkeypatch.setattr(fs, "commit", full_at_second)
    rep = migrate([root / "in"], out=out, engine="dask", scheduler="synchronous")
    assert rep.exit_code == 74 and rep.stopped is not None and rep.stopped.startswith("output error")
    assert rep.failed and {f.exit_code for f in rep.failed} == {74} and rep.files_written == 1
    partial = _tree(out)
    assert all(ref_tree[k] == v for k, v in partial.items() if k != REJECTS_NAME)  # the renamed file is whole
    assert not [k for k in partial if DASK_TEMP_PREFIX in k]
    monkeypatch.setattr(fs, "commit", real)
    again = migrate([root / "in"], out=out, engine="dask", scheduler="synchronous")
    assert _tree(out) == ref_tree and again.exit_code == 1


def test_memory_filesystem(archive: Any, small_pieces: None) -> None:
    root, ref_tree, ref = archive
    mem = fsspec.filesystem("memory")
    base = f"/envglot-test-{os.getpid()}"
    mem.put(str(root / "in"), f"{base}/in", recursive=True)
    try:
        rep = migrate([f"memory://{base}/in"], out=f"memory://{base}/out", engine="dask", scheduler="synchronous")
        got = {p[len(f"{base}/out/") :]: mem.cat_file(p) for p in mem.find(f"{base}/out")}
        rejects = got.pop(REJECTS_NAME)
        expected = dict(ref_tree)
        ref_rejects = expected.pop(REJECTS_NAME)
        assert got == expected
        local = str(root / "in")
        assert rejects == ref_rejects.replace(local.encode(), f"memory://{base}/in".encode())
        assert _facts(rep)["by_source"] == _facts(ref)["by_source"]
        assert rep.changed[0].output is not None and rep.changed[0].output.startswith("memory://")
    finally:
        mem.rm(base, recursive=True)


def test_dask_engine_refuses_in_place_and_stdin(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(b"{}\n")
    with pytest.raises(envglot_error()) as exc:
        migrate([tmp_path / "a.jsonl"], in_place=True, engine="dask", scheduler="synchronous")
    assert "engine='local'" in str(exc.value)
    with pytest.raises(envglot_error()) as exc:
        migrate(["-", tmp_path / "a.jsonl"], out=tmp_path / "out", engine="dask", scheduler="synchronous")
    assert "stdin" in str(exc.value)


def envglot_error() -> type[Exception]:
    from envglot.migration import MigrationError

    return MigrationError


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A real LocalCluster: 2 worker processes, loopback only, always closed."""
    from distributed import Client, LocalCluster

    monkeypatch.setenv(TEST_DELAY_ENV, "0.02")  # inherited by the workers: a run lasts long enough to hit
    c = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None, silence_logs=50
    )
    client = Client(c)
    try:
        yield client
    finally:
        client.close()
        c.close()


def _timed(seconds: float) -> None:
    """Fail (not hang) a test that runs past its bound."""

    def alarm(signum: int, frame: Any) -> None:
        raise TimeoutError(f"test exceeded {seconds} s")

    signal.signal(signal.SIGALRM, alarm)
    signal.alarm(int(seconds))


@pytest.fixture
def bounded() -> Iterator[None]:
    _timed(60)
    try:
        yield
    finally:
        signal.alarm(0)


def test_local_cluster_byte_identical(
    archive: Any, small_pieces: None, cluster: Any, bounded: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, ref_tree, ref = archive
    targets: list[tuple[int, int, int]] = []
    real = driver.plan
    monkeypatch.setattr(
        driver,
        "plan",
        lambda f, t, **k: (targets.append((sum(x.size for x in f), t, k["taper"])), real(f, t, **k))[1],
    )
    assembled = _assemblies_here(monkeypatch)
    rep = migrate([root / "in"], out=tmp_path / "out", engine="dask", client=cluster, chunk_bytes=8192)
    assert rep.jobs == 2
    # a cluster of the user's keeps its own settings (envglot's batch settings are its own cluster's)
    assert all(cluster.run(lambda dask_worker: "profile" in dask_worker.periodic_callbacks).values())
    total = targets[0][0]
    assert total > 0 and {t for _, t, _ in targets} == {min(64 * 1024, total // 16)}  # 8 pieces per worker
    assert {taper for _, _, taper in targets} == {2}  # the last ranges cut small: both workers end together
    assert _tree(tmp_path / "out") == ref_tree
    assert _facts(rep) == _facts(ref)
    assert rep.records == ref.records == rep.converted + rep.passed_through + rep.rejected
    # the workers are on this machine: the ranged file is put together here, no task does it
    assert str(root / "in" / "logs" / "big" / "all.jsonl") in assembled


def _assemblies_here(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The inputs whose ranges the driver puts together in this process (not a task on a worker)."""
    seen: list[str] = []

    class Counted(driver.Assembly):
        def __init__(self, spec: Any, f: Any) -> None:
            seen.append(f.src)
            super().__init__(spec, f)

    monkeypatch.setattr(driver, "Assembly", Counted)
    return seen


def test_workers_elsewhere_sync_their_own_and_a_task_puts_ranges_together(
    archive: Any, small_pieces: None, cluster: Any, bounded: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client connected to a scheduler's address (no ``LocalCluster`` of its own) takes the workers
    to be elsewhere: each task makes its temporaries durable, a task puts a ranged file together.
    The same bytes and report as on this machine's plan."""
    from distributed import Client

    root, ref_tree, ref = archive
    assembled = _assemblies_here(monkeypatch)
    with Client(cluster.scheduler.address) as remote:
        rep = migrate([root / "in"], out=tmp_path / "out", engine="dask", client=remote, chunk_bytes=8192)
    assert _tree(tmp_path / "out") == ref_tree
    assert _facts(rep) == _facts(ref)
    assert assembled == []


def test_killed_worker_then_rerun_exactly_once(
    archive: Any, small_pieces: None, cluster: Any, bounded: None, tmp_path: Path
) -> None:
    root, ref_tree, ref = archive
    out = tmp_path / "out"
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["rep"] = migrate([root / "in"], out=out, engine="dask", client=cluster, chunk_bytes=2048)
        except BaseException as exc:  # reported below
            box["exc"] = exc

    t = threading.Thread(target=run)
    t.start()
    pids = cluster.run(os.getpid)
    time.sleep(1.0)
    victim = sorted(pids.values())[0]
    assert t.is_alive(), "the run ended before a worker could be killed"
    os.kill(victim, signal.SIGKILL)
    t.join(50)
    assert not t.is_alive()
    first = box.get("rep")
    # Dask reschedules the dead worker's tasks: the run completes, or fails cleanly (exit 70)
    assert "exc" not in box, box.get("exc")
    assert first is not None and first.exit_code in (1, 70)
    assert not [k for k in _tree(out) if DASK_TEMP_PREFIX in k]
    rep = migrate([root / "in"], out=out, engine="dask", client=cluster, chunk_bytes=8192)
    got = _tree(out)
    assert got == ref_tree  # every record exactly once: outputs whole, rejects not duplicated
    assert _originals(got[REJECTS_NAME]) == _originals(ref_tree[REJECTS_NAME])
    assert rep.records == ref.records


ENVGLOT = shutil.which("envglot", path=str(Path(sys.executable).parent)) or shutil.which("envglot")


@pytest.mark.skipif(ENVGLOT is None, reason="the envglot executable is not installed")
def test_cli_starts_a_local_cluster_and_prints_the_dashboard(archive: Any, tmp_path: Path) -> None:
    root, ref_tree, _ = archive
    assert ENVGLOT is not None
    p = subprocess.run(
        [ENVGLOT, "migrate", str(root / "in"), "--out", str(tmp_path / "out"), "--engine", "dask", "--workers", "2"],
        capture_output=True,
        timeout=60,
    )
    err = p.stderr.decode()
    assert p.returncode == 1, err
    assert "Dask dashboard: http://127.0.0.1:" in err
    assert "total" in err and "rejected:" in err
    assert _tree(tmp_path / "out") == ref_tree


@pytest.mark.skipif(ENVGLOT is None, reason="the envglot executable is not installed")
def test_cli_engine_options_need_dask(tmp_path: Path) -> None:
    assert ENVGLOT is not None
    (tmp_path / "a.jsonl").write_bytes(b"{}\n")
    p = subprocess.run(
        [ENVGLOT, "migrate", str(tmp_path), "--check", "--workers", "2"], capture_output=True, timeout=30
    )
    assert p.returncode == 2 and b"--engine dask" in p.stderr


def test_check_mode_reports_like_local(archive: Any, tmp_path: Path) -> None:
    root, _, _ = archive
    ref = migrate([root / "in"], check=True, rejects=tmp_path / "local.jsonl", jobs=1)
    rep = migrate([root / "in"], check=True, rejects=tmp_path / "dask.jsonl", engine="dask", scheduler="synchronous")
    assert _facts(rep) == _facts(ref)
    assert rep.exit_code == ref.exit_code == 1 and rep.files_written == 0
    assert (tmp_path / "dask.jsonl").read_bytes() == (tmp_path / "local.jsonl").read_bytes()


def test_max_errors_stops_at_the_same_file(archive: Any, small_pieces: None, tmp_path: Path) -> None:
    root, ref_tree, _ = archive
    ref = migrate([root / "in"], out=tmp_path / "local", jobs=1, max_errors=3)
    rep = migrate([root / "in"], out=tmp_path / "dask", engine="dask", scheduler="synchronous", max_errors=3)
    assert rep.exit_code == ref.exit_code == 65
    assert rep.stopped == ref.stopped and rep.stopped is not None and rep.stopped.startswith("max-errors")
    assert rep.not_processed == ref.not_processed and rep.not_processed
    local, dask = _tree(tmp_path / "local"), _tree(tmp_path / "dask")
    assert {k: v for k, v in dask.items() if k != REJECTS_NAME} == {k: v for k, v in local.items() if k != REJECTS_NAME}
    assert all(ref_tree[k] == v for k, v in dask.items() if k != REJECTS_NAME)


def test_unreadable_gzip_fails_that_file_only(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.jsonl").write_bytes(legacy_variant(1) + b"\n")
    (src / "b.jsonl.gz").write_bytes(gzip.compress(legacy_variant(2) + b"\n")[:-12])  # truncated
    (src / "c.jsonl").write_bytes(legacy_variant(3) + b"\n")
    rep = migrate([src], out=tmp_path / "out", engine="dask", scheduler="synchronous")
    assert [f.file for f in rep.failed] == [str(src / "b.jsonl.gz")] and rep.failed[0].exit_code == 66
    assert rep.exit_code == 66
    assert sorted(_tree(tmp_path / "out")) == ["a.jsonl", "c.jsonl"]


@pytest.mark.parametrize("where", ["local", "memory"])
def test_rejects_file_replaces_per_source_and_cuts_a_torn_line(where: str, tmp_path: Path) -> None:
    """One rejects class for every executor: the same protocol on a local path and on an fsspec store."""
    from envglot.migration.fs import resolve
    from envglot.migration.rejects import RejectsFile

    name = str(tmp_path / "r.jsonl") if where == "local" else f"memory:///envglot-rejects-{os.getpid()}/r.jsonl"
    fs, path = resolve(name)
    on = None if where == "local" else fs
    fs.pipe_file(path, b'{"source":"a","line":1}\n{"source":"b","line":1}\n{"source":"c","li')  # killed mid-write
    r = RejectsFile(path, on)
    r.add([b'{"source":"c","line":2}\n'])
    r.commit("c", replace=True)  # c is new: appended after the cut
    assert fs.cat_file(path) == b'{"source":"a","line":1}\n{"source":"b","line":1}\n{"source":"c","line":2}\n'
    r.add([b'{"source":"a","line":5}\n'])
    r.commit("a", replace=True)  # a and b re-emitted: replaced in place
    r.commit("b", replace=True)
    assert fs.cat_file(path) == b'{"source":"a","line":5}\n{"source":"c","line":2}\n'
    again = RejectsFile(path, on)  # a re-run of everything: the same file, byte for byte
    for source, line in (("a", b'{"source":"a","line":5}\n'), ("c", b'{"source":"c","line":2}\n')):
        again.add([line])
        again.commit(source, replace=True)
    assert fs.cat_file(path) == b'{"source":"a","line":5}\n{"source":"c","line":2}\n'
    assert not [p for p in fs.find(path.rsplit("/", 1)[0]) if TEMP_PREFIX in p]
    if where == "memory":
        fs.rm(path.rsplit("/", 1)[0], recursive=True)


@pytest.mark.skipif(ENVGLOT is None, reason="the envglot executable is not installed")
def test_sigkilled_client_then_rerun_exactly_once(archive: Any, tmp_path: Path) -> None:
    root, ref_tree, _ = archive
    assert ENVGLOT is not None
    out = tmp_path / "out"
    argv = [ENVGLOT, "migrate", str(root / "in"), "--out", str(out), "--engine", "dask"]
    env = {**os.environ, TEST_DELAY_ENV: "0.05"}
    p = subprocess.Popen([*argv, "--scheduler", "synchronous", "--chunk-size", "2K", "-q"], env=env)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (out / "logs").exists():
        time.sleep(0.05)
    time.sleep(0.5)
    assert p.poll() is None, "the run ended before it could be killed"
    p.kill()
    p.wait(10)
    partial = _tree(out)
    assert partial.pop(LOCK_NAME) == f"{p.pid}\n".encode()  # the dead client's lock, taken over by the re-run
    assert {k for k in partial if DASK_TEMP_PREFIX not in k} != set(ref_tree)  # killed mid-run
    assert all(ref_tree[k] == v for k, v in partial.items() if DASK_TEMP_PREFIX not in k and k != REJECTS_NAME)
    again = subprocess.run([*argv, "--scheduler", "synchronous", "-q"], capture_output=True, timeout=60)
    assert again.returncode == 1, again.stderr
    assert _tree(out) == ref_tree  # leftovers removed, rejects once, every output whole


_PRINTED_LEVELS = """
import json, logging, os
import distributed  # noqa: F401  (installs its log handler)
from envglot.migration.executors import dask_executor

def malloc():
    return {k: v for k, v in os.environ.items() if k.startswith("MALLOC_")}

def printed():
    return sorted({h.level for h in logging.getLogger("distributed").handlers if isinstance(h, logging.StreamHandler)})

def settings(dask_worker=None):
    import dask

    keys = ("distributed.worker.profile.enabled", "distributed.admin.tick.interval")
    here = [dask.config.get(k) for k in keys]
    if dask_worker is not None:  # what the worker runs, not only what its config says
        here += [sorted(dask_worker.periodic_callbacks), dask_worker._tick_interval]
    return here

before = printed()
ex = dask_executor(None, None, 1, None)
try:
    during, workers = printed(), list(ex.client.run(printed).values())
    config = {"client": settings(), "workers": list(ex.client.run(settings).values())}
    env = {"client": malloc(), "workers": list(ex.client.run(malloc).values())}
finally:
    ex.close()
levels = {"before": before, "during": during, "workers": workers, "after": printed()}
print(json.dumps({**levels, "config": config, "env": env}))
"""


def test_a_cluster_envglot_starts_prints_only_critical_logs_and_runs_the_batch_settings() -> None:
    """Under load ``distributed`` logs a missed heartbeat with its traceback (at error level): a
    LocalCluster envglot starts prints only critical records of its log, in the main process and
    in the workers, and the main process's handler gets its level back when the cluster is closed.
    Its workers run envglot's batch settings (no profiler, a 500 ms tick); the main process's
    configuration is left as it was (a cluster of the user's is untouched:
    :func:`test_local_cluster_byte_identical`). (Run in a fresh interpreter: under pytest
    ``distributed`` installs no handler of its own.)"""
    # a value in the environment wins over the cluster's (distributed's rule): none here, though an
    # earlier LocalCluster in this process (the other tests') left distributed's in os.environ
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    r = subprocess.run([sys.executable, "-c", _PRINTED_LEVELS], capture_output=True, timeout=120, check=True, env=env)
    levels = json.loads(r.stdout.splitlines()[-1])
    assert levels["before"] == [0] and levels["after"] == [0]
    assert levels["during"] == [50] and levels["workers"] == [[50]]
    assert b"Traceback" not in r.stderr and b"INFO" not in r.stderr
    assert levels["config"]["client"] == [True, "20ms"]
    [(enabled, tick, callbacks, interval)] = levels["config"]["workers"]
    assert (enabled, tick, interval) == (False, "500ms", 0.5)
    assert "heartbeat" in callbacks and "profile" not in callbacks and "profile-cycle" not in callbacks
    # the workers' allocator keeps its freed megabytes (not distributed's 64 KiB trim threshold); the
    # nanny's environment variables are not left in this process (nor in its later children)
    big = {"MALLOC_TRIM_THRESHOLD_": str(64 * 2**20), "MALLOC_MMAP_THRESHOLD_": str(32 * 2**20)}
    assert levels["env"] == {"client": {}, "workers": [big]}


@pytest.mark.parametrize(("mib", "tapered"), [(24, True), (4, False)])
def test_a_clusters_last_ranges_are_cut_small_when_its_pieces_are_above_the_least_size(
    mib: int, tapered: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cluster's workers take tasks as they free up: a file's last ranges are cut small (as the
    pool's) so that both end together — when the pieces are above the least size (1 MiB); at that
    size already, the ranges stay equal (a taper would only make the last one larger). The
    cluster's planning attributes on executors run here (two workers' plan, run in order); the
    output is ``-j 1``'s."""
    from envglot.migration import dask_engine
    from envglot.migration.executors import DaskCluster, Inline

    class PlannedAsACluster(Inline):
        jobs = 2
        cuts, cheap_tasks, tapers, spread = DaskCluster.cuts, DaskCluster.cheap_tasks, DaskCluster.tapers, 8
        in_process = False

    record = legacy_variant(1, pad=40)
    src = tmp_path / "in" / "big.jsonl"
    src.parent.mkdir()
    src.write_bytes(b"\n".join([record] * (mib * 2**20 // (len(record) + 1))) + b"\n")
    planned: list[list[Any]] = []
    real = driver.plan
    monkeypatch.setattr(driver, "plan", lambda f, t, **k: (planned.extend(r := real(f, t, **k)), r)[1])
    monkeypatch.setattr(dask_engine, "dask_executor", lambda *a: PlannedAsACluster())
    rep = migrate([src], out=tmp_path / "dask", engine="dask")
    sizes = [t[0].end - t[0].start for t in planned]
    target = src.stat().st_size // 16
    if tapered:
        assert max(sizes) <= target and sizes[-2] < target and len(sizes) > 16
    else:
        assert max(sizes) - min(sizes) <= 1 and len(sizes) == -(-src.stat().st_size // 2**20)
    ref = migrate([src], out=tmp_path / "local", jobs=1)
    assert _tree(tmp_path / "dask") == _tree(tmp_path / "local") and _facts(rep) == _facts(ref)


def _pieces_of(spec: Any, pieces: list[Any]) -> list[tuple[int, int]]:
    """A task run on a worker: its pieces as ``(file, part)``; a piece of file ``-1`` fails."""
    if any(p.file.index < 0 for p in pieces):
        raise ValueError("no such file")
    return [(p.file.index, p.part) for p in pieces]


def test_a_clusters_tasks_take_and_give_one_blob_each(cluster: Any, bounded: None, tmp_path: Path) -> None:
    """A task's arguments (the run's spec and its pieces: a thousand small files' names) and its
    result travel as one pickled blob each (:func:`~envglot.migration.executors.run_packed`): the
    scheduler holds bytes, not pieces to unpickle and pickle again, under a key named after the
    function (as the dashboard shows it); the driver gets the result (or the task's exception) as
    the function gave it."""
    from distributed import wait

    from envglot.migration.executors import DaskCluster, run_packed
    from envglot.migration.partitions import Piece

    files = [FileSpec(i, f"f{i}", f"/in/f{i}", None, False, False, 10) for i in range(1000)]
    [task] = plan(files, 10**9)
    ex = DaskCluster(cluster)
    ex.submit(_pieces_of, "spec", task, tag="small files")
    ex.submit(_pieces_of, "spec", [Piece(FileSpec(-1, "x", "x", None, False, False, 1), 0, 1, 0, 1)], tag="bad")
    wait(ex.futures)
    on_scheduler = cluster.run_on_scheduler(
        lambda dask_scheduler: [
            (str(ts.key).split("-")[0], ts.run_spec.func.__name__, [type(a).__name__ for a in ts.run_spec.args])
            for ts in dask_scheduler.tasks.values()
        ]
    )
    assert sorted(on_scheduler) == [("_pieces_of", run_packed.__name__, ["function", "bytes"])] * 2
    got = {}
    while ex.pending():
        tag, value, exc = ex.next()
        got[tag] = (value, type(exc).__name__ if exc is not None else None)
    assert got["small files"] == ([(i, 0) for i in range(1000)], None)
    assert got["bad"] == (None, "ValueError")
    ex.close()
