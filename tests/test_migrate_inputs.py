"""migrate's input tree (issue 23, item 9): special files, links, bombs, long lines, the --out lock.

Both engines take the same rules from ``envglot.migration.inputs`` and ``.lock``; each rule is
checked on the local engine and on Dask's synchronous scheduler.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from envglot.migration import EX_LOCKED, LOCK_NAME, TEST_DELAY_ENV, MigrationError, Migrator, migrate
from envglot.migration.inputs import GZIP_RATIO_FLOOR, InputRefusedError, RecordReader, open_fd
from envglot.migration.lock import OutLock
from envglot.migration.workers import Task, migrate_chunk

sys.path.insert(0, str(Path(__file__).parent))
from migrate_corpus import legacy_variant

SECRET = b'{"specs":[],"count":0,"note":"SECRET-OUTSIDE-THE-TREE"}'
ENVGLOT = shutil.which("envglot", path=str(Path(sys.executable).parent)) or shutil.which("envglot")


def _engine(engine: str) -> dict[str, Any]:
    if engine == "dask":
        pytest.importorskip("dask")
        pytest.importorskip("fsspec")
        return {"engine": "dask", "scheduler": "synchronous"}
    return {"jobs": 1}


@contextlib.contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    """Fail instead of hanging (a FIFO opened for reading blocks until a writer comes)."""

    def hung(*_: object) -> None:
        raise TimeoutError("the run blocked")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _every_byte_under(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink())


@pytest.fixture
def hostile_tree(tmp_path: Path) -> Iterator[Path]:
    """A tree with a good file, a FIFO, a socket, a link loop, links out of the tree, a dangling link."""
    tree = tmp_path / "in"
    (tree / "sub").mkdir(parents=True)
    (tree / "good.jsonl").write_bytes(legacy_variant(0) + b"\n")
    (tree / "sub" / "inside.jsonl").symlink_to(tree / "good.jsonl")  # inside the tree: followed
    os.mkfifo(tree / "pipe.jsonl")  # no writer ever comes: opening it would block the run
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tree / "sock.jsonl"))
    (tree / "loop-a.jsonl").symlink_to(tree / "loop-b.jsonl")
    (tree / "loop-b.jsonl").symlink_to(tree / "loop-a.jsonl")
    (tmp_path / "secret.jsonl").write_bytes(SECRET + b"\n")
    (tree / "passwd.jsonl").symlink_to(tmp_path / "secret.jsonl")
    (tree / "zero.jsonl").symlink_to("/dev/zero")  # a device: endless if read
    (tree / "dangling.jsonl").symlink_to(tmp_path / "nowhere")
    try:
        yield tree
    finally:
        sock.close()


SKIPPED = {
    "dangling.jsonl": "dangling symbolic link: skipped",
    "loop-a.jsonl": "symbolic link loop: skipped",
    "loop-b.jsonl": "symbolic link loop: skipped",
    "passwd.jsonl": "symbolic link to a file outside the input tree: skipped (--follow-symlinks follows it)",
    "pipe.jsonl": "a FIFO, not a regular file: skipped",
    "sock.jsonl": "a socket, not a regular file: skipped",
    "zero.jsonl": "symbolic link to a character device: skipped",
}


@pytest.mark.parametrize("engine", ["local", "dask"])
def test_only_regular_files_in_the_tree_are_read(hostile_tree: Path, tmp_path: Path, engine: str) -> None:
    with _deadline(60):
        rep = migrate([hostile_tree], out=tmp_path / "out", **_engine(engine))
    assert {Path(f.file).name: f.error for f in rep.failed} == SKIPPED
    assert {f.exit_code for f in rep.failed} == {66} and rep.exit_code == 66
    assert (rep.files_total, rep.converted, rep.rejected) == (2, 2, 0)
    out = tmp_path / "out"
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.jsonl")) == ["good.jsonl", "sub/inside.jsonl"]
    assert (out / "sub" / "inside.jsonl").read_bytes() == (out / "good.jsonl").read_bytes()
    assert b"SECRET" not in _every_byte_under(out)  # neither in an output nor in the rejects file
    assert not (out / LOCK_NAME).exists()


@pytest.mark.parametrize("engine", ["local", "dask"])
def test_follow_symlinks_reads_a_link_out_of_the_tree(hostile_tree: Path, tmp_path: Path, engine: str) -> None:
    with _deadline(60):
        rep = migrate([hostile_tree], out=tmp_path / "out", follow_symlinks=True, **_engine(engine))
    assert "passwd.jsonl" not in {Path(f.file).name for f in rep.failed}  # the user asked for it
    assert {Path(f.file).name for f in rep.failed} == set(SKIPPED) - {"passwd.jsonl"}  # the rest is still skipped
    assert b"SECRET-OUTSIDE-THE-TREE" in (tmp_path / "out" / "passwd.jsonl").read_bytes()


@pytest.mark.skipif(ENVGLOT is None, reason="the envglot executable is not installed")
def test_cli_reports_each_skipped_file_and_exits_66(hostile_tree: Path, tmp_path: Path) -> None:
    assert ENVGLOT is not None
    proc = subprocess.run(
        [ENVGLOT, "migrate", str(hostile_tree), "--out", str(tmp_path / "out"), "-q"], capture_output=True, timeout=60
    )
    assert proc.returncode == 66, proc.stderr
    lines = proc.stderr.decode().splitlines()
    for name, reason in SKIPPED.items():
        assert f"{hostile_tree / name}: error: {reason}" in lines
    assert b"Traceback" not in proc.stderr


@pytest.mark.skipif(ENVGLOT is None, reason="the envglot executable is not installed")
def test_follow_symlinks_only_from_the_command_line(hostile_tree: Path, tmp_path: Path) -> None:
    """A configuration file cannot widen what migrate reads; the flag on the command line can."""
    assert ENVGLOT is not None
    (tmp_path / "envglot.toml").write_text("[migrate]\nfollow-symlinks = true\n")
    args = [ENVGLOT, "migrate", str(hostile_tree), "--out", str(tmp_path / "out"), "-q"]
    refused = subprocess.run(args, cwd=tmp_path, capture_output=True, timeout=60)
    assert refused.returncode == 2 and b"follow-symlinks is taken from the command line only" in refused.stderr
    assert not (tmp_path / "out").exists()
    given = subprocess.run([*args, "--follow-symlinks"], cwd=tmp_path, capture_output=True, timeout=60)
    assert given.returncode == 66, given.stderr  # the FIFO, the socket, the loops... are still skipped
    assert b"SECRET-OUTSIDE-THE-TREE" in (tmp_path / "out" / "passwd.jsonl").read_bytes()


def test_links_named_on_the_command_line(tmp_path: Path) -> None:
    """Named by the user, a link is followed anywhere; a loop or a dangling one is refused before any write."""
    (tmp_path / "secret.jsonl").write_bytes(SECRET + b"\n")
    (tmp_path / "named.jsonl").symlink_to(tmp_path / "secret.jsonl")
    (tmp_path / "loop.jsonl").symlink_to(tmp_path / "loop.jsonl")
    (tmp_path / "dangling.jsonl").symlink_to(tmp_path / "nowhere")
    rep = migrate([tmp_path / "named.jsonl"], out=tmp_path / "out", jobs=1)
    assert rep.converted == 1 and b"SECRET" in (tmp_path / "out" / "named.jsonl").read_bytes()
    for name, why in [("loop.jsonl", "symbolic link loop"), ("dangling.jsonl", "dangling symbolic link")]:
        with pytest.raises(MigrationError, match=why) as info:
            migrate([tmp_path / name], out=tmp_path / "out2", jobs=1)
        assert info.value.exit_code == 66 and not (tmp_path / "out2").exists()


@pytest.mark.parametrize("bad", [{"max_record_bytes": 0}, {"max_gzip_ratio": 0}])
def test_limits_must_be_positive(tmp_path: Path, bad: dict[str, int]) -> None:
    with pytest.raises(MigrationError, match="must be positive") as info:
        migrate([tmp_path], check=True, **bad)  # type: ignore[arg-type]
    assert info.value.exit_code == 2


def test_the_readers_never_follow_a_link_nor_wait_on_a_fifo(tmp_path: Path) -> None:
    """A file swapped for a FIFO or a link after the walk is refused when opened, at once."""
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "file").write_bytes(b"{}\n")
    (tmp_path / "link").symlink_to(tmp_path / "file")
    with _deadline(10), pytest.raises(InputRefusedError, match="a FIFO, not a regular file"):
        open_fd(tmp_path / "fifo")
    with pytest.raises(OSError) as info:
        open_fd(tmp_path / "link")
    assert info.value.errno == errno.ELOOP
    os.close(open_fd(tmp_path / "file"))


# --------------------------------------------------------------------------- bombs and long records


def _gzip_of_zeros(path: Path, mib: int) -> None:
    """``mib`` MiB of zero bytes (one endless line) as gzip: a 1 MiB member (about 1 KB) repeated."""
    member = gzip.compress(bytes(1 << 20), 9, mtime=0)
    with open(path, "wb") as fh:
        for _ in range(mib):
            fh.write(member)


@pytest.mark.parametrize("engine", ["local", "dask"])
@pytest.mark.parametrize("name", ["bomb.jsonl.gz", "bomb.json.gz"])
def test_a_gzip_bomb_is_stopped_by_the_ratio(tmp_path: Path, engine: str, name: str) -> None:
    (tmp_path / "in").mkdir()
    _gzip_of_zeros(tmp_path / "in" / name, 2 * GZIP_RATIO_FLOOR >> 20)
    assert (tmp_path / "in" / name).stat().st_size < 64 * 1024
    (tmp_path / "in" / "ok.jsonl").write_bytes(legacy_variant(0) + b"\n")
    rep = migrate([tmp_path / "in"], out=tmp_path / "out", **_engine(engine))
    [failure] = rep.failed
    assert failure.file.endswith(name) and failure.exit_code == 66
    assert "expands more than 200 times" in failure.error and "--max-gzip-ratio" in failure.error
    assert rep.converted == 1 and not (tmp_path / "out" / name).exists()  # the others are migrated


def test_the_ratio_is_an_option(tmp_path: Path) -> None:
    """Allowed a higher ratio, the stream is read to its end: one line, too long, rejected with its exact size."""
    (tmp_path / "in").mkdir()
    _gzip_of_zeros(tmp_path / "in" / "zeros.jsonl.gz", 2 * GZIP_RATIO_FLOOR >> 20)
    rep = migrate([tmp_path / "in"], out=tmp_path / "out", max_gzip_ratio=10**6, max_record_bytes=1 << 20, jobs=1)
    assert not rep.failed and rep.rejected == 1
    [reject] = [json.loads(x) for x in (tmp_path / "out" / ".envglot-rejects.jsonl").read_bytes().splitlines()]
    assert (reject["line"], reject["original_size"]) == (1, 2 * GZIP_RATIO_FLOOR)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak RSS from /proc (Linux)")
@pytest.mark.parametrize("name", ["bomb.jsonl.gz", "bomb.json.gz"])
def test_a_bomb_is_read_in_bounded_memory(tmp_path: Path, name: str) -> None:
    """A 1 GiB line or document behind 1 MiB of gzip: refused within tens of MB (4.2 GB before the fix).

    The child reports its own peak (``VmHWM``, the high-water mark of the address space it
    runs in). Its ``ru_maxrss`` would not do: Linux folds the pre-exec address space into it,
    and subprocess starts the child by vfork from this process, so it would report the peak of
    the test process itself (a pytest-xdist worker that ran other tests first: 203 MB)."""
    _gzip_of_zeros(tmp_path / name, 1024)
    code = (
        "import sys; from envglot.migration import migrate; "
        "r = migrate([sys.argv[1]], out=sys.argv[2], jobs=1); print(r.exit_code, r.failed[0].error); "
        "print(open('/proc/self/status').read().split('VmHWM:')[1].split()[0])"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / name), str(tmp_path / "out")], stdout=subprocess.PIPE, check=True
    )
    out, peak_kb = proc.stdout.rsplit(b"\n", 2)[:2]
    assert out.startswith(b"66 ") and b"expands more than" in out
    assert int(peak_kb) < 150 * 1024, f"peak RSS {int(peak_kb) // 1024} MB"  # measured: 43 MB (25 at import)


@pytest.mark.parametrize("engine", ["local", "dask"])
def test_a_record_longer_than_the_limit_is_rejected_unread(tmp_path: Path, engine: str) -> None:
    (tmp_path / "in").mkdir()
    long_line = b'{"specs":[],"count":0,"pad":"' + b"x" * 300_000 + b'"}'
    lines = [legacy_variant(0), long_line, b"", legacy_variant(2), long_line + b"\r", legacy_variant(4)]
    (tmp_path / "in" / "log.jsonl").write_bytes(b"\n".join(lines) + b"\n" + long_line)  # the last without "\n"
    with gzip.open(tmp_path / "in" / "log.jsonl.gz", "wb") as fh:
        fh.write(b"\n".join(lines) + b"\n")
    (tmp_path / "in" / "doc.json").write_bytes(long_line)
    (tmp_path / "in" / "small.json").write_bytes(legacy_variant(0))
    kw = _engine(engine) | {"chunk_bytes": 64 * 1024}
    rep = migrate([tmp_path / "in"], out=tmp_path / "out", max_record_bytes=256 * 1024, **kw)
    rejects = [json.loads(x) for x in (tmp_path / "out" / ".envglot-rejects.jsonl").read_bytes().splitlines()]
    where = sorted((Path(r["source"]).name, r["line"], r["original_size"]) for r in rejects)
    n = len(long_line)
    assert where == [
        ("doc.json", None, 256 * 1024),  # a document is not read past the limit
        ("log.jsonl", 2, n),
        ("log.jsonl", 5, n + 1),
        ("log.jsonl", 7, n),
        ("log.jsonl.gz", 2, n),
        ("log.jsonl.gz", 5, n + 1),
    ]
    assert all("original" not in r and "original_b64" not in r for r in rejects)
    assert all(r["error_type"] == "ParseError" and "--max-record-bytes" in r["error"] for r in rejects)
    assert (rep.converted, rep.rejected, rep.exit_code) == (7, 6, 1)
    assert not (tmp_path / "out" / "doc.json").exists()
    kept = (tmp_path / "out" / "log.jsonl").read_bytes().split(b"\n")
    assert [ln for ln in kept if ln] == [Migrator()(legacy_variant(i)).output for i in (0, 2, 4)]


@pytest.mark.parametrize("jobs", [1, 2])
def test_in_place_without_backup_never_drops_a_record_it_could_not_copy(tmp_path: Path, jobs: int) -> None:
    """In place with no backup, a too-long record's only copy is the input: that file is left as it is
    (also when the process pool cuts it into byte ranges: ``chunk_bytes`` far below its size)."""
    log = tmp_path / "log.jsonl"
    data = b"".join(legacy_variant(i) + b"\n" for i in range(40)) + b'{"pad":"' + b"x" * 2000 + b'"}\n'
    log.write_bytes(data)
    rep = migrate([log], in_place=True, backup=None, max_record_bytes=1000, jobs=jobs, chunk_bytes=512)
    assert log.read_bytes() == data and rep.rejected == 1 and rep.converted == 40
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".envglot-tmp-")]
    rep = migrate([log], in_place=True, max_record_bytes=1000, jobs=jobs, chunk_bytes=512)  # with a backup, rewritten
    assert (tmp_path / "log.jsonl.bak").read_bytes() == data and log.read_bytes() != data


def _read_all(data: bytes, read_size: int, limit: int = 1 << 30) -> tuple[list[Task], float]:
    t0 = time.perf_counter()
    reader = RecordReader(
        io.BytesIO(data), source="x", style="compact", doc=False, read_size=read_size, max_record=limit
    )
    tasks = list(reader)
    return tasks, time.perf_counter() - t0


def test_a_long_line_is_joined_in_linear_time() -> None:
    """8 MB and 32 MB lines read in 16 KiB blocks: 4 times the bytes, about 4 times the time (it was 16)."""
    times = {}
    for mb in (8, 32):
        line = b"a" * (mb << 20)
        best = min(_read_all(line + b"\n{}\n", 16 * 1024)[1] for _ in range(3))
        tasks, _ = _read_all(line + b"\n{}\n", 16 * 1024)
        assert [t.data for t in tasks] == [line + b"\n{}\n"]
        times[mb] = best
    assert times[32] < 8 * times[8] + 0.2, times  # quadratic: 16 times, seconds


def test_an_over_long_line_is_counted_not_held() -> None:
    """Past the limit the line's blocks are dropped as they come; its length and line number are exact."""
    data = b"{}\n" + b"z" * (5 << 20) + b"\r\n{}\n"
    tasks, _ = _read_all(data, 4096, limit=1 << 20)
    assert [(t.kind, t.first_line, t.size) for t in tasks] == [
        ("lines", 1, 0),
        ("oversize", 2, (5 << 20) + 1),
        ("lines", 3, 0),
    ]


def test_blank_lines_are_skipped_cheaply() -> None:
    """2 x 16 MiB of blank lines: copied through in about 0.2 s (the loop per line it replaces: 24 s)."""
    blank = b"\n" * (8 << 20) + b" \t\r\n" * (2 << 20)
    task = Task("x.jsonl", "lines", blank + b"not json\n" + blank, 1, "compact")
    t0 = time.perf_counter()
    res = migrate_chunk(Migrator(), task)
    elapsed = time.perf_counter() - t0
    assert res.out == blank + blank and res.tally.rejected == 1
    assert res.rejects[0][0] == 1 + (8 << 20) + (2 << 20)  # the record's line number counts the blank lines
    assert elapsed < 2.5, elapsed


# --------------------------------------------------------------------------- the --out lock


@pytest.mark.parametrize("engine", ["local", "dask"])
def test_a_second_run_into_a_locked_out_is_refused(tmp_path: Path, engine: str) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_bytes(b"not json\n")
    with OutLock(tmp_path / "out"):  # held by a live run
        with pytest.raises(MigrationError) as info:
            migrate([tmp_path / "in"], out=tmp_path / "out", **_engine(engine))
        assert info.value.exit_code == EX_LOCKED == 75
        assert f"another migration (pid {os.getpid()}) is writing into" in info.value.message
        assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [LOCK_NAME]  # nothing written
    rep = migrate([tmp_path / "in"], out=tmp_path / "out", **_engine(engine))  # released: runs
    assert rep.rejected == 1 and not (tmp_path / "out" / LOCK_NAME).exists()


def test_a_dead_runs_lock_is_taken_over(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / LOCK_NAME).write_text(f"{dead.pid}\n")
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_bytes(legacy_variant(0) + b"\n")
    rep = migrate([tmp_path / "in"], out=tmp_path / "out", jobs=1)
    assert rep.exit_code == 0 and not (tmp_path / "out" / LOCK_NAME).exists()


@pytest.mark.skipif(ENVGLOT is None, reason="the envglot executable is not installed")
def test_two_concurrent_runs_into_one_out(tmp_path: Path) -> None:
    """The second run is refused (exit 75) while the first runs; the rejects are written once."""
    assert ENVGLOT is not None
    (tmp_path / "in").mkdir()
    for i in range(4):
        (tmp_path / "in" / f"{i}.jsonl").write_bytes(b"not json\n" * 3 + legacy_variant(i) + b"\n")
    args = [ENVGLOT, "migrate", str(tmp_path / "in"), "--out", str(tmp_path / "out"), "-q", "-j", "1"]
    # 4 chunks x 1.5 s: the second run starts and meets the lock well within that, even loaded
    first = subprocess.Popen(args, env={**os.environ, TEST_DELAY_ENV: "1.5"}, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not (tmp_path / "out" / LOCK_NAME).exists():
        assert time.monotonic() < deadline and first.poll() is None, "the first run never took the lock"
        time.sleep(0.02)
    second = subprocess.run(args, capture_output=True, timeout=60)
    assert first.wait(timeout=60) == 1
    assert second.returncode == 75, second.stderr
    assert f"another migration (pid {first.pid}) is writing into".encode() in second.stderr
    assert b"Traceback" not in second.stderr
    rejects = (tmp_path / "out" / ".envglot-rejects.jsonl").read_bytes().splitlines()
    assert len(rejects) == 12  # 4 files x 3, none twice


def test_blank_runs_end_where_the_first_non_blank_byte_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """The windowed scan agrees with the plain definition, across window edges."""
    import random

    from envglot.migration import workers

    monkeypatch.setattr(workers, "_WINDOW", 4)
    rng = random.Random(23)
    for _ in range(2000):
        data = bytes(rng.choice(b" \t\n\r\x0b\x0cx{") for _ in range(rng.randrange(0, 40)))
        pos = rng.randrange(0, len(data) + 1)
        rest = data[pos:]
        assert workers._blank_run(data, pos) == pos + len(rest) - len(rest.lstrip()), (data, pos)


def test_the_lock_is_never_taken_through_a_link(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "elsewhere").write_text("keep\n")
    (tmp_path / "out" / LOCK_NAME).symlink_to(tmp_path / "elsewhere")
    with pytest.raises(MigrationError, match="through the symbolic link") as info:
        migrate([tmp_path / "elsewhere"], out=tmp_path / "out", jobs=1)
    assert info.value.exit_code == 74 and (tmp_path / "elsewhere").read_text() == "keep\n"


@pytest.mark.parametrize(
    ("data", "doc"),
    [
        (b"", False),
        (b"\n\n  \n", False),
        (b'{"ok":true,"data":1}\nnot json\n{"ok":false,"error":"x"}', False),  # no last terminator
        (b'\r\n{"ok":true,"data":1}\r\n\n{"a":1}\n   ', False),
        (b'{"ok":true,"data":{"n":1}}', True),
        (b"", True),
    ],
)
def test_a_file_in_memory_is_converted_as_the_readers_chunks_are(data: bytes, doc: bool) -> None:
    """``RecordReader.whole`` (a small file's bytes as one chunk) gives what reading them gives, cut
    into chunks of any size: the same output, counts, reject lines and line terminators."""
    mig = Migrator()
    tasks = RecordReader.whole(data, source="x", style="compact", doc=doc, max_record=1 << 20)
    assert tasks is not None
    for read_size in (1, 7, 1 << 20):
        reader = RecordReader(
            io.BytesIO(data), source="x", style="compact", doc=doc, read_size=read_size, max_record=1 << 20
        )
        chunks = [migrate_chunk(mig, t) for t in reader]
        ours = [migrate_chunk(mig, t) for t in tasks]
        assert b"".join(c.out for c in ours) == b"".join(c.out for c in chunks)
        assert [r for c in ours for r in c.rejects] == [r for c in chunks for r in c.rejects]
        assert sum(c.lines for c in ours) == reader.lines  # the chunk loop's count: whole counts none
        if chunks:
            want, got = chunks[0].tally, ours[0].tally
            want.add_all([c.tally for c in chunks[1:]])
            assert msgspec.json.encode(got) == msgspec.json.encode(want)
        else:
            assert ours == []


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\n\n  \n",
        b'{"ok":true,"data":1}\nnot json\n{"ok":false,"error":"x"}',  # no last terminator
        b'\r\n{"ok":true,"data":1}\r\n\n{"a":1}\n   ',  # a blank last line without its terminator
        b'{"a":1}\n'
        + b"z" * 40
        + b"\nnot json\n\n"
        + b"y" * 45
        + b'\n \t\n{"ok":true,"data":2}\r\n',  # over-long lines
    ],
)
def test_the_chunk_loop_counts_the_lines_its_reader_need_not(data: bytes) -> None:
    """A chunk's line terminators, counted by the chunk loop (``ChunkResult.lines``) and told to its
    reader (``RecordReader.took``), number the chunks after it as the reader's own count does: the
    same tasks, first lines, reject lines and ``lines``, whatever the read size and the limit."""
    mig = Migrator()
    for read_size in (1, 5, 16, 1 << 20):
        counted = RecordReader(
            io.BytesIO(data), source="x", style="compact", doc=False, read_size=read_size, max_record=30
        )
        want = list(counted)
        told = RecordReader(
            io.BytesIO(data), source="x", style="compact", doc=False, read_size=read_size, max_record=30
        )
        got, results = [], []
        for task in told:
            c = migrate_chunk(mig, task)
            assert c.lines == (task.data.count(b"\n") if task.kind == "lines" else 0)
            told.took(task, c.lines)
            got.append(task)
            results.append(c)
        assert got == want
        assert told.lines == counted.lines == data.count(b"\n")
        assert [r for c in results for r in c.rejects] == [r for t in want for r in migrate_chunk(mig, t).rejects]


def test_a_file_in_memory_longer_than_a_record_may_be_is_left_to_the_reader() -> None:
    data = b"{}\n" + b"z" * 100 + b"\n"
    assert RecordReader.whole(data, source="x", style="compact", doc=False, max_record=50) is None
    assert RecordReader.whole(data, source="x", style="compact", doc=True, max_record=50) is None
