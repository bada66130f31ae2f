"""Faults around ``envglot migrate``: SIGKILL at random moments, a full disk, symlinks planted
under ``--out``, non-UTF-8 file names and poisoned records. Every record must end exactly
once in the outputs or the rejects file."""

from __future__ import annotations

import base64
import collections
import gzip
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from envglot.detect import Detection
from envglot.migration import REJECTS_NAME, TEMP_PREFIX, TEST_BATCH_ENV, TEST_DELAY_ENV, migrate
from envglot.registry import Registry

ENVGLOT = shutil.which("envglot", path=str(Path(sys.executable).parent)) or shutil.which("envglot")
needs_exe = pytest.mark.skipif(ENVGLOT is None, reason="the envglot executable is not installed")
RID = re.compile(rb"rid-\d+")
V2 = '{{"success":true,"data":{{"rid":"{rid}"}},"error":null,"meta":{{"version":"response-v2"}}}}'
DEEP = 1000


# --- a corpus whose every record carries its identity --------------------------------------


def _record(rid: str, kind: int) -> bytes:
    """One record of one of seven kinds; ``rid`` appears exactly once in it."""
    if kind == 0:  # legacy-v1 flat dict: converted
        return json.dumps({"rid": rid, "count": 1, "items": ["x" * 20]}).encode()
    if kind == 1:  # already response-v2: passed through
        return V2.format(rid=rid).encode()
    if kind == 2:  # legacy-v1 failure: converted
        return json.dumps({"success": False, "error": f"not found: {rid}"}).encode()
    if kind == 3:  # not JSON: rejected
        return f"not json {rid}".encode()
    if kind == 4:  # invalid UTF-8 in a key: poisoned
        return b'{"\xff\xfe":1,"rid":"' + rid.encode() + b'"}'
    if kind == 5:  # 1,000-deep nesting: poisoned
        return b'{"rid":"' + rid.encode() + b'","a":' + b"[" * DEEP + b"]" * DEEP + b"}"
    return b"[1, 2, " + rid.encode() + b"]"  # not an object: rejected


def make_corpus(root: Path, files: int = 6, lines: int = 60, seed: int = 0) -> collections.Counter[bytes]:
    """JSON Lines files (one gzipped) and .json documents; returns the record identities."""
    rng = random.Random(seed)
    ids: collections.Counter[bytes] = collections.Counter()
    n = 0
    for f in range(files):
        sub = root / f"d{f % 2}"
        sub.mkdir(parents=True, exist_ok=True)
        body = bytearray()
        for _ in range(lines):
            n += 1
            rid = f"rid-{n}"
            body += _record(rid, rng.randrange(7)) + b"\n"
            ids[rid.encode()] += 1
        name = sub / f"f{f}.jsonl"
        if f == 3:
            (sub / f"f{f}.jsonl.gz").write_bytes(gzip.compress(bytes(body), mtime=0))
        else:
            name.write_bytes(bytes(body))
    for kind in (0, 1, 3, 4, 5):  # one document per kind: a rejected one leaves no output
        n += 1
        rid = f"rid-{n}"
        (root / f"doc{kind}.json").write_bytes(_record(rid, kind))
        ids[rid.encode()] += 1
    return ids


def _records_of(path: Path) -> Iterator[bytes]:
    data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    if path.name.removesuffix(".gz").endswith(".json"):
        yield data
        return
    yield from (ln for ln in data.split(b"\n") if ln.strip())


def accounted(outputs: Path, rejects: Path, skip_suffix: str | None = None) -> collections.Counter[bytes]:
    """Identities found in the outputs under ``outputs`` plus those in the rejects file."""
    seen: collections.Counter[bytes] = collections.Counter()
    for p in sorted(outputs.rglob("*")):
        if not p.is_file() or p.name.startswith(TEMP_PREFIX) or p == rejects or p.name == REJECTS_NAME:
            continue
        if skip_suffix and p.name.endswith(skip_suffix):
            continue
        for rec in _records_of(p):
            found = RID.findall(rec)
            assert len(found) == 1, (p, rec[:200])
            seen[found[0]] += 1
    if rejects.exists():
        data = rejects.read_bytes()
        assert not data or data.endswith(b"\n"), "the rejects file ends in a torn line"
        for line in data.splitlines():
            r = json.loads(line)
            original = r["original"].encode() if "original" in r else base64.b64decode(r["original_b64"])
            found = RID.findall(original)
            assert len(found) == 1, r
            seen[found[0]] += 1
    return seen


def _run(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    assert ENVGLOT is not None
    return subprocess.run(
        [ENVGLOT, "migrate", *map(str, args)],
        capture_output=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def _run_and_kill(args: list[str | Path], after: float, batch: int | None = None) -> int | None:
    """Start a slowed-down run and SIGKILL its process group after ``after`` seconds (if still running).

    ``batch``: files per commit batch (small batches: the kill lands between and inside commits).
    """
    assert ENVGLOT is not None
    env = {**os.environ, TEST_DELAY_ENV: "0.008"}
    if batch is not None:
        env[TEST_BATCH_ENV] = str(batch)
    proc = subprocess.Popen(
        [ENVGLOT, "migrate", *map(str, args), "-q"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        proc.wait(timeout=after)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    return proc.returncode


EXECUTORS = [pytest.param({"jobs": 1}, id="inline"), pytest.param({"jobs": 2, "chunk_bytes": 8}, id="pool")]
"""The local executors: in this process, and the process pool whose workers write their own
outputs (chunks of a line or two, so even a tiny tree is cut into several)."""


# --- SIGKILL at random moments -------------------------------------------------------------


@needs_exe
@pytest.mark.parametrize(
    ("mode", "jobs", "seed", "batch"),
    [("out", 1, s, None) for s in range(3)]
    + [("out", 2, s, None) for s in range(3)]
    + [("in-place", 1, 7, None), ("in-place", 2, 8, None)]
    + [("out", 1, 20, 2), ("out", 2, 21, 3), ("in-place", 1, 22, 2), ("in-place", 2, 23, 3)],
)
def test_sigkill_then_rerun_accounts_for_every_record_once(
    tmp_path: Path, mode: str, jobs: int, seed: int, batch: int | None
) -> None:
    rng = random.Random(seed)
    ids = make_corpus(tmp_path / "in", seed=seed)
    rejects = tmp_path / "rejects.jsonl"
    where: list[str | Path] = ["--out", tmp_path / "out"] if mode == "out" else ["--in-place"]
    args: list[str | Path] = [tmp_path / "in", *where, "--rejects", rejects, "-j", str(jobs), "--chunk-size", "600"]
    kills = 0
    for upper in (0.8, 1.6):  # killed once or twice (a killed re-run, too), then a run to the end
        if _run_and_kill(args, rng.uniform(0.2, upper), batch) == -signal.SIGKILL:
            kills += 1
    for after in (0.15, 0.05):  # a loaded or fast machine finished first: kill earlier
        if kills:
            break
        if _run_and_kill(args, after, batch) == -signal.SIGKILL:
            kills += 1
    assert kills >= 1, "no run could be killed before it ended"
    final = _run(*args)
    assert final.returncode in (1, 70), final.stderr.decode()[-2000:]
    assert b"Traceback" not in final.stderr
    outputs = tmp_path / ("out" if mode == "out" else "in")
    expected = ids + _rejected_documents_left_in_place(rejects) if mode == "in-place" else ids
    assert accounted(outputs, rejects, ".bak" if mode == "in-place" else None) == expected
    assert not list(outputs.rglob(f"{TEMP_PREFIX}*")), "a temp file survived the final run"
    # and a further run changes nothing: the rejects are replaced, not appended
    before = rejects.read_bytes()
    assert _run(*args).returncode in (0, 1, 70)
    assert rejects.read_bytes() == before
    assert accounted(outputs, rejects, ".bak" if mode == "in-place" else None) == expected


def _rejected_documents_left_in_place(rejects: Path) -> collections.Counter[bytes]:
    """A rejected ``.json`` document is left as it is by ``--in-place`` (docs/migration.md): it is
    in the tree, unmigrated, and in the rejects file; every other record is in one place only."""
    docs: collections.Counter[bytes] = collections.Counter()
    for line in rejects.read_bytes().splitlines():
        r = json.loads(line)
        if r["source"].endswith(".json"):
            original = r["original"].encode() if "original" in r else base64.b64decode(r["original_b64"])
            docs[RID.findall(original)[0]] += 1
    assert len(docs) == 3  # doc3 (not JSON), doc4 (bad UTF-8 key), doc5 (too deep)
    return docs


@pytest.mark.parametrize("executor", EXECUTORS)
def test_rejects_file_torn_line_is_cut_and_rerun_replaces(tmp_path: Path, executor: dict[str, int]) -> None:
    ids = make_corpus(tmp_path / "in", files=2, lines=20)
    rejects = tmp_path / "rejects.jsonl"
    migrate([tmp_path / "in"], out=tmp_path / "out", rejects=rejects, **executor)
    whole = rejects.read_bytes()
    lines = whole.splitlines(keepends=True)
    rejects.write_bytes(b"".join(lines[:-1]) + lines[-1][:15])  # as a run killed while appending leaves it
    migrate([tmp_path / "in"], out=tmp_path / "out", rejects=rejects, **executor)
    assert rejects.read_bytes() == whole
    assert accounted(tmp_path / "out", rejects) == ids


def test_rejects_of_other_sources_are_kept(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x.jsonl").write_bytes(b"bad a\n")
    (tmp_path / "b" / "y.jsonl").write_bytes(b"bad b\n")
    rejects = tmp_path / "r.jsonl"
    for _ in range(2):
        migrate([tmp_path / "a"], out=tmp_path / "oa", rejects=rejects, jobs=1)
        migrate([tmp_path / "b"], out=tmp_path / "ob", rejects=rejects, jobs=1)
    got = [json.loads(line)["original"] for line in rejects.read_bytes().splitlines()]
    assert got == ["bad a", "bad b"]


@pytest.mark.parametrize("executor", EXECUTORS)
def test_max_errors_then_rerun_does_not_duplicate(tmp_path: Path, executor: dict[str, int]) -> None:
    ids = make_corpus(tmp_path / "in", files=3, lines=30)
    rejects = tmp_path / "r.jsonl"
    stopped = migrate([tmp_path / "in"], in_place=True, rejects=rejects, max_errors=3, **executor)
    assert stopped.stopped and stopped.stopped.startswith("max-errors") and stopped.not_processed
    assert not list((tmp_path / "in").rglob(f"{TEMP_PREFIX}*"))
    migrate([tmp_path / "in"], in_place=True, rejects=rejects, **executor)
    assert accounted(tmp_path / "in", rejects, ".bak") == ids + _rejected_documents_left_in_place(rejects)


# --- poisoned records ------------------------------------------------------------------------


@pytest.mark.parametrize("executor", EXECUTORS)
def test_poisoned_records_do_not_stop_the_run(tmp_path: Path, executor: dict[str, int]) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_bytes(_record("rid-1", 4) + b"\n" + _record("rid-2", 5) + b"\n")
    (tmp_path / "in" / "b.jsonl").write_bytes(_record("rid-3", 0) + b"\n")
    rep = migrate([tmp_path / "in"], out=tmp_path / "out", **executor)
    assert rep.records == 3 and rep.rejected == 2 and rep.converted == 1
    assert (tmp_path / "out" / "b.jsonl").exists(), "the file after the poisoned one was not migrated"
    rejects = [json.loads(x) for x in (tmp_path / "out" / REJECTS_NAME).read_bytes().splitlines()]
    assert [r["line"] for r in rejects] == [1, 2]
    internal = [r for r in rejects if r["error_type"] == "InternalError"]
    assert rep.internal_errors == len(internal)
    for r in internal:  # a bug of ours, said as such, bounded
        assert r["error"].startswith("internal error: ") and len(r["error"]) < 700
    assert rep.exit_code == (70 if internal else 1)


def test_an_internal_error_is_a_counted_reject(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import envglot.migration.records as records

    real = records.classify_members

    def buggy(members: dict[str, Any], registry: Registry | None = None) -> Detection:
        if "boom" in members:
            raise KeyError("x" * 10_000)
        return real(members, registry)

    monkeypatch.setattr(records, "classify_members", buggy)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_bytes(b'{"boom":1}\n{"count":2}\nnot json\n')
    rep = migrate([tmp_path / "in"], out=tmp_path / "out", jobs=1)
    assert (rep.rejected, rep.internal_errors, rep.converted, rep.exit_code) == (2, 1, 1, 70)
    first = json.loads((tmp_path / "out" / REJECTS_NAME).read_bytes().splitlines()[0])
    assert first["error_type"] == "InternalError"
    assert first["error"].startswith("internal error: KeyError: 'xxx") and "more characters" in first["error"]
    assert len(first["error"]) < 250


@needs_exe
def test_cli_summary_says_internal_errors_apart(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_bytes(_record("rid-1", 4) + b"\n" + _record("rid-2", 3) + b"\n")
    r = _run(tmp_path / "in", "--out", tmp_path / "out")
    assert b"Traceback" not in r.stderr
    rejects = [json.loads(x) for x in (tmp_path / "out" / REJECTS_NAME).read_bytes().splitlines()]
    if any(x["error_type"] == "InternalError" for x in rejects):
        assert r.returncode == 70 and b"internal errors: 1 of the rejected records" in r.stderr
    else:  # the core reports the bad key as bad input
        assert r.returncode == 1 and b"internal errors" not in r.stderr


# --- a full disk -----------------------------------------------------------------------------


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs (skips where mounting is not permitted)."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if shutil.which("mount") is None:
        pytest.skip("no mount command")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip() or r.returncode}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


@pytest.mark.parametrize("executor", EXECUTORS)
def test_full_disk_never_leaves_half_a_line_in_the_rejects(
    tmp_path: Path, tiny_fs: Path, executor: dict[str, int]
) -> None:
    (tmp_path / "in").mkdir()
    n = 0
    ids: collections.Counter[bytes] = collections.Counter()
    for f in range(6):
        body = bytearray()
        for _ in range(4):
            n += 1
            body += f"not json rid-{n} ".encode() + b"y" * 1500 + b"\n"
            ids[f"rid-{n}".encode()] += 1
        (tmp_path / "in" / f"f{f}.jsonl").write_bytes(bytes(body))
    filler = tiny_fs / "filler"
    with open(filler, "wb") as fh:  # leave about 12 KiB: room for 2 files' rejects, not 6
        fh.write(b"\0" * (52 * 1024))
    rejects = tiny_fs / "rejects.jsonl"
    rep = migrate([tmp_path / "in"], out=tmp_path / "out", rejects=rejects, **executor)
    assert rep.exit_code == 74 and rep.stopped and rep.stopped.startswith("output error")
    data = rejects.read_bytes() if rejects.exists() else b""
    assert not data or data.endswith(b"\n")
    for line in data.splitlines():
        json.loads(line)  # every line whole
    assert not [p for p in tiny_fs.iterdir() if p.name.startswith(TEMP_PREFIX)]
    filler.unlink()  # space again: the re-run completes, every record exactly once
    again = migrate([tmp_path / "in"], out=tmp_path / "out", rejects=rejects, **executor)
    assert again.exit_code == 1
    assert accounted(tmp_path / "out", rejects) == ids


@pytest.mark.parametrize("executor", EXECUTORS)
def test_full_disk_for_the_outputs_fails_the_file_and_leaves_no_temp(
    tmp_path: Path, tiny_fs: Path, executor: dict[str, int]
) -> None:
    """The outputs' disk fills up (with the pool, under the workers' own temporaries): exit 74,
    nothing half-written is left, and a re-run with space accounts for every record once."""
    ids = make_corpus(tmp_path / "in", files=4, lines=40)
    filler = tiny_fs / "filler"
    with open(filler, "wb") as fh:  # leave about 8 KiB: less than the outputs need
        fh.write(b"\0" * (56 * 1024))
    out, rejects = tiny_fs / "out", tmp_path / "r.jsonl"
    rep = migrate([tmp_path / "in"], out=out, rejects=rejects, **executor)
    assert rep.exit_code == 74 and rep.stopped and rep.stopped.startswith("output error")
    assert [f.exit_code for f in rep.failed] == [74]
    assert not list(tiny_fs.rglob(f"{TEMP_PREFIX}*"))
    filler.unlink()
    again = migrate([tmp_path / "in"], out=out, rejects=rejects, **executor)
    assert again.exit_code == 1
    assert accounted(out, rejects) == ids


# --- symlinks under --out ----------------------------------------------------------------------


def _small_tree(root: Path) -> None:
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "x.jsonl").write_bytes(b'{"count":1}\nnot json\n')
    (root / "top.jsonl").write_bytes(b'{"count":2}\n')


def test_linked_rejects_file_is_refused(tmp_path: Path) -> None:
    _small_tree(tmp_path / "in")
    (tmp_path / "out").mkdir()
    (tmp_path / "elsewhere").write_bytes(b"precious\n")
    (tmp_path / "out" / REJECTS_NAME).symlink_to(tmp_path / "elsewhere")
    from envglot.migration import MigrationError

    with pytest.raises(MigrationError, match="symbolic link") as info:
        migrate([tmp_path / "in"], out=tmp_path / "out", jobs=1)
    assert info.value.exit_code == 74
    assert (tmp_path / "elsewhere").read_bytes() == b"precious\n"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [REJECTS_NAME]  # nothing written


@pytest.mark.parametrize("executor", EXECUTORS)
def test_linked_subdirectory_is_refused(tmp_path: Path, executor: dict[str, int]) -> None:
    _small_tree(tmp_path / "in")
    (tmp_path / "out").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "out" / "sub").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    rep = migrate([tmp_path / "in"], out=tmp_path / "out", **executor)
    assert rep.exit_code == 74
    assert "symbolic link" in rep.failed[0].error
    assert list((tmp_path / "elsewhere").iterdir()) == []


@pytest.mark.parametrize("executor", EXECUTORS)
def test_linked_output_file_is_replaced_not_followed(tmp_path: Path, executor: dict[str, int]) -> None:
    _small_tree(tmp_path / "in")
    (tmp_path / "out").mkdir()
    (tmp_path / "target").write_bytes(b"precious\n")
    (tmp_path / "out" / "top.jsonl").symlink_to(tmp_path / "target")
    rep = migrate([tmp_path / "in"], out=tmp_path / "out", **executor)
    assert rep.exit_code == 1
    assert not (tmp_path / "out" / "top.jsonl").is_symlink()
    assert b'"count":2' in (tmp_path / "out" / "top.jsonl").read_bytes()
    assert (tmp_path / "target").read_bytes() == b"precious\n"


def test_a_link_planted_between_two_runs_of_one_process_is_refused(tmp_path: Path) -> None:
    """A run checks each output directory once (fs.prepare_dir); the next run in the same process
    checks again: a subdirectory of --out swapped for a link in between is refused, not written through."""
    _small_tree(tmp_path / "in")
    assert migrate([tmp_path / "in"], out=tmp_path / "out", jobs=1).exit_code == 1
    (tmp_path / "elsewhere").mkdir()
    shutil.rmtree(tmp_path / "out" / "sub")
    (tmp_path / "out" / "sub").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    rep = migrate([tmp_path / "in"], out=tmp_path / "out", jobs=1)
    assert rep.exit_code == 74 and "symbolic link" in rep.failed[0].error
    assert list((tmp_path / "elsewhere").iterdir()) == []


# --- non-UTF-8 file names --------------------------------------------------------------------------


@needs_exe
@pytest.mark.skipif(sys.platform != "linux", reason="Linux file names are bytes")
@pytest.mark.parametrize("jobs", [["-j", "1"], ["-j", "2", "--chunk-size", "8"]], ids=["inline", "pool"])
def test_non_utf8_file_names_end_to_end(tmp_path: Path, jobs: list[str]) -> None:
    src = os.fsencode(tmp_path / "in")
    os.mkdir(src)
    with open(src + b"/caf\xe9.jsonl", "wb") as fh:
        fh.write(b'{"count":1}\nnot json\n')
    with open(src + b"/caf\xe9.json", "wb") as fh:
        fh.write(b'{"count":2}')
    r = _run(tmp_path / "in", "--out", tmp_path / "out", "--report", tmp_path / "r.json", *jobs)
    assert r.returncode == 1, r.stderr
    assert json.loads((tmp_path / "r.json").read_bytes())["jobs"] == int(jobs[1])
    assert b"Traceback" not in r.stderr
    outs = sorted(os.listdir(os.fsencode(tmp_path / "out")))
    assert outs == [b".envglot-rejects.jsonl", b"caf\xe9.json", b"caf\xe9.jsonl"]  # same bytes as the inputs
    rej = json.loads((tmp_path / "out" / REJECTS_NAME).read_bytes())
    assert rej["source"].endswith("caf\\xe9.jsonl") and rej["original"] == "not json"
    rep = json.loads((tmp_path / "r.json").read_bytes())
    assert {Path(c["file"]).name for c in rep["changed"]} == {"caf\\xe9.json", "caf\\xe9.jsonl"}
    check = _run(tmp_path / "in", "--check")
    assert check.returncode == 1 and b"would migrate" in check.stderr and b"caf\\xe9.jsonl" in check.stderr
    # re-running replaces the rejects of that file (the display name is stable)
    assert _run(tmp_path / "in", "--out", tmp_path / "out", *jobs).returncode == 1
    assert len((tmp_path / "out" / REJECTS_NAME).read_bytes().splitlines()) == 1


def test_stale_rewrite_temp_beside_the_rejects_file_is_removed(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_bytes(b"not json\n")
    (tmp_path / "rej").mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / "rej" / f"{TEMP_PREFIX}{int(dead.stdout)}-0000-r.jsonl"
    stale.write_bytes(b"half")  # as a run killed while rewriting the rejects file leaves it
    rep = migrate([tmp_path / "in"], out=tmp_path / "out", rejects=tmp_path / "rej" / "r.jsonl", jobs=1)
    assert not stale.exists() and rep.temp_files_removed == 1
    assert len((tmp_path / "rej" / "r.jsonl").read_bytes().splitlines()) == 1


# --- commit batches: one sync per batch, rejects durable before any rename ------------------


def _trace_commits(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the order of rejects commits, batch syncs and renames of one in-process run."""
    from envglot.migration import commit, files, rejects

    events: list[str] = []
    real_sync, real_rename = commit.sync_local_files, files.AtomicOutput.rename
    real_move = commit.CommitBatch.move
    real_append, real_rewrite = rejects.RejectsFile._append, rejects.RejectsFile._rewrite

    def sync(paths: list[str]) -> None:
        events.append(f"sync {len(paths)}")
        real_sync(paths)

    def rename(self: files.AtomicOutput, mode: int | None) -> None:
        events.append(f"rename {self.dst.name}")
        real_rename(self, mode)

    def move(self: commit.CommitBatch[Any], tmp: str, dst: str) -> None:  # a temporary a piece wrote
        events.append(f"rename {os.path.basename(dst)}")
        real_move(self, tmp, dst)

    def append(self: rejects.RejectsFile) -> None:
        events.append("rejects")
        real_append(self)

    def rewrite(self: rejects.RejectsFile, source: str) -> None:
        events.append("rejects")
        real_rewrite(self, source)

    monkeypatch.setattr(commit, "sync_local_files", sync)
    monkeypatch.setattr(files.AtomicOutput, "rename", rename)
    monkeypatch.setattr(commit.CommitBatch, "move", move)
    monkeypatch.setattr(rejects.RejectsFile, "_append", append)
    monkeypatch.setattr(rejects.RejectsFile, "_rewrite", rewrite)
    return events


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("rerun", [False, True])
def test_a_batch_commits_its_rejects_before_any_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rerun: bool, executor: dict[str, int]
) -> None:
    ids = make_corpus(tmp_path / "in", files=8, lines=20)
    rejects = tmp_path / "r.jsonl"
    if rerun:  # the second run replaces (rewrites) each file's rejects instead of appending
        migrate([tmp_path / "in"], out=tmp_path / "out", rejects=rejects, jobs=1)
    monkeypatch.setenv(TEST_BATCH_ENV, "3")
    events = _trace_commits(monkeypatch)
    rep = migrate([tmp_path / "in"], out=tmp_path / "out", rejects=rejects, **executor)
    assert rep.files_written == rep.files_total - 3  # three rejected documents leave no output
    syncs = [i for i, e in enumerate(events) if e.startswith("sync")]
    assert [events[i] for i in syncs] == ["sync 3", "sync 3", "sync 3", "sync 1"]  # 10 outputs, batches of 3
    start = 0
    for s in syncs:  # every rename follows its batch's sync; no rejects commit between a sync and its renames
        renames = [e for e in events[s + 1 :] if not e.startswith("sync")]
        n = int(events[s].split()[1])
        assert all(e.startswith("rename") for e in renames[:n]), events
        assert "rejects" not in events[s : s + n + 1]
        assert all(not e.startswith("rename") for e in events[start:s]), events
        start = s + n + 1
    assert accounted(tmp_path / "out", rejects) == ids


@pytest.mark.parametrize("executor", EXECUTORS)
def test_a_failed_rename_mid_batch_fails_the_rest_and_leaves_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, executor: dict[str, int]
) -> None:
    from envglot.migration import commit

    ids = make_corpus(tmp_path / "in", files=8, lines=20)
    rejects = tmp_path / "r.jsonl"
    real = commit.CommitBatch.move  # how an --out run's driver moves a temporary a piece wrote
    calls = {"n": 0}

    def flaky(self: commit.CommitBatch[Any], tmp: str, dst: str) -> None:
        calls["n"] += 1
        if calls["n"] == 5:
            raise OSError(28, "No space left on device")
        real(self, tmp, dst)

    monkeypatch.setenv(TEST_BATCH_ENV, "3")
    monkeypatch.setattr(commit.CommitBatch, "move", flaky)
    rep = migrate([tmp_path / "in"], out=tmp_path / "out", rejects=rejects, **executor)
    assert rep.exit_code == 74 and rep.stopped and rep.stopped.startswith("output error")
    assert rep.files_written == 4
    assert len([f for f in rep.failed if f.exit_code == 74]) == 2  # the unrenamed rest of the second batch
    assert not list((tmp_path / "out").rglob(f"{TEMP_PREFIX}*"))
    monkeypatch.setattr(commit.CommitBatch, "move", real)
    again = migrate([tmp_path / "in"], out=tmp_path / "out", rejects=rejects, jobs=1)
    assert again.exit_code == 1
    assert accounted(tmp_path / "out", rejects) == ids


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="syncfs is Linux-only (elsewhere: an fsync per file)")
@pytest.mark.parametrize("executor", EXECUTORS)
def test_many_small_files_cost_a_few_fsyncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, executor: dict[str, int]
) -> None:
    (tmp_path / "in").mkdir()
    for i in range(60):
        (tmp_path / "in" / f"f{i:03}.jsonl").write_bytes(_record(f"rid-{i}", 0) + b"\n")
    count = {"n": 0}
    real = os.fsync

    def counting(fd: int) -> None:
        count["n"] += 1
        real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    rep = migrate([tmp_path / "in"], out=tmp_path / "out", **executor)
    assert rep.files_written == 60
    assert count["n"] <= 10, f"{count['n']} fsyncs for 60 files"  # was 120: two per file
