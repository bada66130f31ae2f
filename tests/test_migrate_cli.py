"""``envglot migrate`` through the installed executable (subprocess): outputs, exit codes,
reports, stdin, progress, and interruption by SIGKILL."""

from __future__ import annotations

import base64
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import envglot
from envglot.migration import LOCK_NAME, REJECTS_NAME, TEMP_PREFIX, TEST_BATCH_ENV, TEST_DELAY_ENV

sys.path.insert(0, str(Path(__file__).parent))
from migrate_corpus import legacy_variant, make_corpus

ENVGLOT = shutil.which("envglot", path=str(Path(sys.executable).parent)) or shutil.which("envglot")
pytestmark = pytest.mark.skipif(ENVGLOT is None, reason="the envglot executable is not installed")
V2 = b'{"success":true,"data":{},"error":null,"meta":{"version":"response-v2"}}'


def run(
    *args: str | Path, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    assert ENVGLOT is not None
    return subprocess.run(
        [ENVGLOT, "migrate", *map(str, args)],
        input=stdin,
        capture_output=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def tree(root: Path, *, temps: bool = False) -> dict[str, bytes]:
    """Every file under ``root`` (relative path -> bytes); temp files only when asked."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and (temps or not p.name.startswith(TEMP_PREFIX)):
            out[p.relative_to(root).as_posix()] = p.read_bytes()
    return out


def records(path: Path) -> list[bytes]:
    data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    if path.name.removesuffix(".gz").endswith(".json"):
        return [data]
    return [ln.rstrip(b"\r") for ln in data.split(b"\n") if ln.strip()]


def test_end_to_end_on_mixed_corpus(tmp_path: Path) -> None:
    corpus = make_corpus(tmp_path / "in")
    before = tree(tmp_path / "in")
    r = run(
        tmp_path / "in", "--out", tmp_path / "out", "--report", tmp_path / "rep.json", "-j", "2", "--chunk-size", "1K"
    )
    assert r.returncode == 1, r.stderr
    assert r.stdout == b""
    err = r.stderr.decode()
    assert "source dialect" in err and "total" in err and f"rejected: {len(corpus.malformed)} records" in err
    rep = json.loads((tmp_path / "rep.json").read_bytes())
    assert rep["records"] == corpus.records == rep["converted"] + rep["passed_through"] + rep["rejected"]
    assert rep["rejected"] == len(corpus.malformed) and rep["exit_code"] == 1
    assert tree(tmp_path / "in") == before
    rejects = [json.loads(ln) for ln in (tmp_path / "out" / REJECTS_NAME).read_bytes().splitlines()]
    originals = sorted(
        r["original"].encode() if "original" in r else base64.b64decode(r["original_b64"]) for r in rejects
    )
    assert originals == sorted(m[2] for m in corpus.malformed)
    outputs = {k: v for k, v in tree(tmp_path / "out").items() if k != REJECTS_NAME}
    n = 0
    for rel in outputs:
        for rec in records(tmp_path / "out" / rel):
            envglot.read(rec, from_="response-v2")
            n += 1
    assert n == corpus.valid
    # re-run on the output: everything passes through, files are byte-identical, exit 0
    r2 = run(tmp_path / "out", "--out", tmp_path / "out2", "--report", tmp_path / "rep2.json")
    assert r2.returncode == 0, r2.stderr
    rep2 = json.loads((tmp_path / "rep2.json").read_bytes())
    assert (rep2["passed_through"], rep2["converted"], rep2["rejected"]) == (corpus.valid, 0, 0)
    assert tree(tmp_path / "out2") == outputs


def test_check_exit_codes_and_writes_nothing(tmp_path: Path) -> None:
    src = tmp_path / "a.jsonl"
    src.write_bytes(legacy_variant(0) + b"\n" + V2 + b"\n")
    r = run(src, "--check")
    assert r.returncode == 1 and b"would migrate" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl"]
    r = run(src, "--dry-run", "-q")
    assert r.returncode == 1 and r.stderr == b""
    v2 = tmp_path / "v2.jsonl"
    v2.write_bytes(V2 + b"\n")
    assert run(v2, "--check").returncode == 0


def test_in_place_backup_and_no_backup(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_bytes(legacy_variant(0) + b"\n")
    b.write_bytes(legacy_variant(1) + b"\n")
    r = run(a, "--in-place", "--backup", ".orig")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "a.jsonl.orig").read_bytes() == legacy_variant(0) + b"\n"
    assert envglot.detect(a.read_bytes()) == "response-v2"
    r = run(b, "-i", "--no-backup")
    assert r.returncode == 0 and not list(tmp_path.glob("b.jsonl.*"))
    assert envglot.detect(b.read_bytes()) == "response-v2"


def test_stdin_to_stdout(tmp_path: Path) -> None:
    data = legacy_variant(1) + b"\n" + b"oops\n" + V2 + b"\n"
    r = run("-", "--rejects", tmp_path / "r.jsonl", "-q", stdin=data)
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert len(lines) == 2 and lines[1] == V2
    assert json.loads(lines[0])["error"] == "Task not found: task-1"
    rej = json.loads((tmp_path / "r.jsonl").read_bytes())
    assert rej["source"] == "<stdin>" and rej["line"] == 2 and rej["original"] == "oops"


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--out", "o", "--in-place"], 2, b"exclude each other"),
        ([], 2, b"say where the output goes"),
        (["--out", "o", "--backup", ".x"], 2, b"only apply with --in-place"),
        (["--in-place", "--backup", ".x", "--no-backup"], 2, b"exclude each other"),
        (["--check", "-t", "nope"], 2, b"unknown dialect"),
        (["--check", "-t", "legacy-v1"], 2, b"read-only"),
        (["--check", "--chunk-size", "lots"], 2, b"not a size"),
        (["--check", "--mappings", "missing.toml"], 66, b"cannot read mapping overlay"),
    ],
)
def test_usage_errors(tmp_path: Path, args: list[str], code: int, message: bytes) -> None:
    src = tmp_path / "a.jsonl"
    src.write_bytes(legacy_variant(0) + b"\n")
    r = run(src, *[str(tmp_path / a) if a in ("o", "missing.toml") else a for a in args])
    assert r.returncode == code, r.stderr
    assert message in r.stderr and b"Traceback" not in r.stderr


def test_missing_input_is_66_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(legacy_variant(0) + b"\n")
    r = run(tmp_path / "a.jsonl", tmp_path / "nope.jsonl", "--out", tmp_path / "out")
    assert r.returncode == 66 and b"no such file" in r.stderr
    assert not (tmp_path / "out").exists()


def test_unreadable_gzip_is_66_but_others_migrate(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    z = gzip.compress(b"\n".join(legacy_variant(i) for i in range(40)) + b"\n")
    (tmp_path / "in" / "cut.jsonl.gz").write_bytes(z[:-20])
    (tmp_path / "in" / "ok.jsonl").write_bytes(legacy_variant(0) + b"\n")
    r = run(tmp_path / "in", "--out", tmp_path / "out")
    assert r.returncode == 66 and b"cut.jsonl.gz: error: cannot read" in r.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["ok.jsonl"]


def test_output_error_is_74(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(legacy_variant(0) + b"\n")
    (tmp_path / "out").write_bytes(b"a file, not a directory")
    r = run(tmp_path / "a.jsonl", "--out", tmp_path / "out")
    assert r.returncode == 74 and b"not a directory" in r.stderr


def test_max_errors_is_65(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(b"bad\n" + legacy_variant(0) + b"\n")
    (tmp_path / "b.jsonl").write_bytes(legacy_variant(0) + b"\n")
    r = run(tmp_path / "a.jsonl", tmp_path / "b.jsonl", "--out", tmp_path / "out", "--max-errors", "0")
    assert r.returncode == 65
    assert b"stopped early" in r.stderr and b"not processed" in r.stderr and b"b.jsonl" in r.stderr
    assert not (tmp_path / "out" / "a.jsonl").exists() and not (tmp_path / "out" / "b.jsonl").exists()


def test_unsupported_raise_rejects_lossy_records(tmp_path: Path) -> None:
    src = tmp_path / "a.jsonl"
    src.write_bytes(legacy_variant(3) + b"\n" + legacy_variant(0) + b"\n")  # the first has schema_version
    r = run(src, "--out", tmp_path / "out", "--unsupported", "raise", "--rejects", tmp_path / "r.jsonl")
    assert r.returncode == 1
    rej = json.loads((tmp_path / "r.jsonl").read_bytes())
    assert rej["error_type"] == "UnsupportedError" and rej["diagnostics"][0]["path"] == "$.schema_version"
    assert rej["original"].encode() == legacy_variant(3)
    assert len(records(tmp_path / "out" / "a.jsonl")) == 1


def test_progress_only_when_asked_or_on_a_tty(tmp_path: Path) -> None:
    src = tmp_path / "a.jsonl"
    src.write_bytes(b"\n".join(legacy_variant(i) for i in range(200)) + b"\n")
    quiet = run(src, "--check")
    assert b"\r" not in quiet.stderr
    shown = run(src, "--check", "--progress", "--chunk-size", "1K", env={TEST_DELAY_ENV: "0.03"})
    assert b"\r" in shown.stderr and b"records" in shown.stderr and b"rec/s" in shown.stderr
    assert b"ETA" in shown.stderr


# --------------------------------------------------------------------------- interruption


def _start(args: list[str | Path]) -> subprocess.Popen[bytes]:
    assert ENVGLOT is not None
    return subprocess.Popen(
        [ENVGLOT, "migrate", *map(str, args), "-j", "2", "--chunk-size", "512", "-q"],
        env={**os.environ, TEST_DELAY_ENV: "0.02", TEST_BATCH_ENV: "2"},  # commit batches of 2 files
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _kill_mid_run(proc: subprocess.Popen[bytes], root: Path, committed: str) -> None:
    """SIGKILL the run while a temp file is being written and an output matching ``committed`` is in place.

    The process group is frozen (SIGSTOP) before the final check, so the state seen is the
    state killed.
    """
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the migration finished before it could be interrupted"
        if list(root.rglob(f"{TEMP_PREFIX}*")) and list(root.rglob(committed)):
            os.killpg(proc.pid, signal.SIGSTOP)
            if list(root.rglob(f"{TEMP_PREFIX}*")):
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
                return
            os.killpg(proc.pid, signal.SIGCONT)
        time.sleep(0.01)
    pytest.fail("no temp file appeared in time")


def test_sigkill_leaves_no_partial_output(tmp_path: Path) -> None:
    make_corpus(tmp_path / "in", lines_per_file=200)
    before = tree(tmp_path / "in")
    ref = run(tmp_path / "in", "--out", tmp_path / "ref", "--rejects", tmp_path / "ref-rejects.jsonl")
    assert ref.returncode == 1
    expected = tree(tmp_path / "ref")
    proc = _start([tmp_path / "in", "--out", tmp_path / "out", "--rejects", tmp_path / "rejects.jsonl"])
    _kill_mid_run(proc, tmp_path / "out", "day1.jsonl")
    assert proc.returncode == -signal.SIGKILL
    assert tree(tmp_path / "in") == before  # inputs intact
    left = tree(tmp_path / "out", temps=True)
    temps = [k for k in left if Path(k).name.startswith(TEMP_PREFIX)]
    assert temps, "the kill did not land mid-file"
    assert left.pop(LOCK_NAME) == f"{proc.pid}\n".encode()  # the dead run's lock is left behind ...
    for rel, data in left.items():
        if rel not in temps:
            assert data == expected[rel], f"{rel} is not a complete output"
    # ... and taken over: the next run ignores and removes the leftovers, and completes the tree
    again = run(tmp_path / "in", "--out", tmp_path / "out", "--rejects", tmp_path / "rejects.jsonl")
    assert again.returncode == 1, again.stderr
    assert tree(tmp_path / "out", temps=True) == expected


def test_sigkill_in_place_with_backup_restores_exactly(tmp_path: Path) -> None:
    make_corpus(tmp_path / "in", lines_per_file=200)
    original = tree(tmp_path / "in")
    shutil.copytree(tmp_path / "in", tmp_path / "ref-in")
    assert run(tmp_path / "ref-in", "--in-place", "--no-backup", "--rejects", tmp_path / "x.jsonl").returncode == 1
    converted = tree(tmp_path / "ref-in")
    proc = _start([tmp_path / "in", "--in-place", "--rejects", tmp_path / "rejects.jsonl"])
    _kill_mid_run(proc, tmp_path / "in", "*.bak")
    state = tree(tmp_path / "in")
    assert any(Path(k).name.startswith(TEMP_PREFIX) for k in tree(tmp_path / "in", temps=True))
    for rel, data in original.items():
        if f"{rel}.bak" in state:  # backed up: the original exactly; the file converted in full or not yet
            assert state[f"{rel}.bak"] == data and state[rel] in (data, converted[rel])
        else:  # not reached: untouched
            assert state[rel] == data
    # finish the run, then restore every backup: the originals come back byte for byte
    again = run(tmp_path / "in", "--in-place", "--rejects", tmp_path / "rejects.jsonl")
    assert again.returncode == 1, again.stderr
    assert {k: v for k, v in tree(tmp_path / "in").items() if not k.endswith(".bak")} == converted
    for bak in list((tmp_path / "in").rglob("*.bak")):
        bak.replace(bak.with_name(bak.name.removesuffix(".bak")))
    assert tree(tmp_path / "in", temps=True) == original


def _workers(pid: int) -> list[int]:
    """The child processes of ``pid`` (Linux)."""
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [int(k) for k in kids]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_dead_worker_ends_the_run_with_70_and_leaves_no_temp(tmp_path: Path) -> None:
    """A worker killed while the pool writes outputs: exit 70, the files committed before are
    complete, no temporary is left (a worker's own included), and a re-run finishes the job."""
    make_corpus(tmp_path / "in", lines_per_file=200)
    assert run(tmp_path / "in", "--out", tmp_path / "ref", "--rejects", tmp_path / "ref.jsonl").returncode == 1
    expected = tree(tmp_path / "ref")
    assert ENVGLOT is not None
    args = [tmp_path / "in", "--out", tmp_path / "out", "--rejects", tmp_path / "rejects.jsonl"]
    proc = subprocess.Popen(
        [ENVGLOT, "migrate", *map(str, args), "-j", "2", "--chunk-size", "512"],
        env={**os.environ, TEST_DELAY_ENV: "0.02"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while not list((tmp_path / "out").rglob(f"{TEMP_PREFIX}*")) or len(_workers(proc.pid)) < 2:
        assert time.monotonic() < deadline and proc.poll() is None, "the run ended before a worker could be killed"
        time.sleep(0.01)
    os.kill(_workers(proc.pid)[0], signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 70, err.decode()[-2000:]
    assert b"a worker process died" in err and b"Traceback" not in err
    left = tree(tmp_path / "out", temps=True)
    assert not [k for k in left if Path(k).name.startswith(TEMP_PREFIX)]
    for rel, data in left.items():
        assert data == expected[rel], f"{rel} is not a complete output"
    assert run(*args).returncode == 1
    assert tree(tmp_path / "out", temps=True) == expected
    assert (tmp_path / "rejects.jsonl").read_bytes() == (tmp_path / "ref.jsonl").read_bytes()


def test_ctrl_c_removes_the_temp_file_and_reports(tmp_path: Path) -> None:
    make_corpus(tmp_path / "in", lines_per_file=200)
    proc = _start([tmp_path / "in", "--out", tmp_path / "out", "--report", tmp_path / "r.json"])
    deadline = time.monotonic() + 60
    while not list((tmp_path / "out").rglob(f"{TEMP_PREFIX}*")):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    assert not list((tmp_path / "out").rglob(f"{TEMP_PREFIX}*"))
    rep = json.loads((tmp_path / "r.json").read_bytes())
    assert rep["stopped"] == "interrupted" and rep["exit_code"] == 130 and rep["not_processed"]


# --------------------------------------------------------------------------- --log and -v


def _diag_corpus(root: Path) -> None:
    root.mkdir(parents=True)
    lines = [b'{"success":true,"count":1,"schema_version":"1.0.0"}', b"not json", V2] * 40
    (root / "a.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    (root / "b.json").write_bytes(b'{"success":false,"error":"gone","error_type":"not_found","extra":1}')


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_log_has_every_diagnostic_and_reject_with_file_and_line(tmp_path: Path, jobs: str) -> None:
    _diag_corpus(tmp_path / "in")
    log = tmp_path / "in" / "diag.jsonl"  # inside the input tree: never read as an input
    args = (tmp_path / "in", "--out", tmp_path / "out", "--log", log, "-j", jobs, "--chunk-size", "300")
    r = run(*args)
    assert r.returncode == 1, r.stderr
    recs = [json.loads(x) for x in log.read_bytes().splitlines()]
    assert set(recs[0]) == {"file", "line", "kind", "path", "message", "dialect", "lossy"}
    a = [x for x in recs if x["file"].endswith("a.jsonl")]
    assert [(x["line"], x["kind"]) for x in a] == [
        (3 * i + k, kind) for i in range(40) for k, kind in ((1, "field_dropped"), (2, "detect_error"))
    ]
    assert a[0] == {
        "file": a[0]["file"],
        "line": 1,
        "kind": "field_dropped",
        "path": "$.schema_version",
        "message": "legacy-v1 field has no place in response-v2",
        "dialect": "response-v2",
        "lossy": True,
    }
    assert a[1]["path"] == "$" and not a[1]["message"].endswith("(at $)") and a[1]["lossy"] is False
    b = [x for x in recs if x["file"].endswith("b.json")]
    assert b and all(x["line"] is None for x in b)
    assert run(*args, "--report", tmp_path / "rep.json").returncode == 1  # again: the log is replaced
    assert [json.loads(x) for x in log.read_bytes().splitlines()] == recs
    rep = json.loads((tmp_path / "rep.json").read_bytes())
    assert rep["files_total"] == 2  # the log file was not taken as an input
    assert sum(rep["diagnostics"].values()) == len([x for x in recs if x["kind"] in rep["diagnostics"]])


def test_verbose_prints_each_record_and_default_prints_none(tmp_path: Path) -> None:
    _diag_corpus(tmp_path / "in")
    quiet = run(tmp_path / "in", "--check")
    assert b"a.jsonl:1:" not in quiet.stderr
    loud = run(tmp_path / "in", "--check", "-v")
    err = loud.stderr.decode()
    assert f"{tmp_path / 'in' / 'a.jsonl'}:1: warning: $.schema_version: legacy-v1 field has no place" in err
    assert "[field_dropped]" in err
    assert f"{tmp_path / 'in' / 'a.jsonl'}:2: error: invalid JSON" in err
    assert err.count(": error: invalid JSON") == 40


def test_log_and_verbose_need_the_local_engine(tmp_path: Path) -> None:
    _diag_corpus(tmp_path / "in")
    r = run(tmp_path / "in", "--out", tmp_path / "out", "--engine", "dask", "--log", tmp_path / "l.jsonl")
    assert r.returncode == 2 and b"--engine local" in r.stderr


# --------------------------------------------------------------------------- ETA and summary


def _eta_seconds(err: str) -> int:
    m, s = err.rsplit("ETA ", 1)[1].split()[0].split(":")
    return int(m) * 60 + int(s)


def test_eta_counts_files_when_the_bytes_are_nearly_done(capsys: pytest.CaptureFixture[str]) -> None:
    """Many small files after one big one: the bytes say "done", the files say otherwise."""
    from envglot.cli.migrate_cmd import _ProgressLine
    from envglot.migration import Progress

    line = _ProgressLine()
    total = 10_000_000
    line(Progress(records=0, bytes_done=0, bytes_total=total, files_done=0, files_total=2001, elapsed_s=5.0))
    line.last = 0.0
    # 10 s after the first report (start-up, 5 s, not counted): the big file (99 % of the bytes) and 100 small ones
    line(
        Progress(records=990, bytes_done=9_900_000, bytes_total=total, files_done=101, files_total=2001, elapsed_s=15.0)
    )
    eta = _eta_seconds(capsys.readouterr().err)
    assert 185 <= eta <= 190  # 1,900 files left at 10 files/s (the bytes alone would say 0:00)


def test_summary_shows_a_rate_only_for_runs_of_a_second_or_more(tmp_path: Path) -> None:
    from envglot.cli.migrate_cmd import format_summary
    from envglot.migration import MigrationReport

    rep = MigrationReport(target="response-v2", source=None, mode="check", jobs=1, records=19, files_total=3)
    rep.elapsed_s, rep.records_per_s = 0.2, 95.0
    assert "records/s" not in format_summary(rep).splitlines()[0]
    assert "19 records" in format_summary(rep).splitlines()[0]
    rep.elapsed_s = 2.0
    assert "(95 records/s" in format_summary(rep).splitlines()[0]


def test_the_loss_warning_lists_only_lossy_kinds(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_bytes((Path(__file__).parents[1] / "examples/result/ok.json").read_bytes())
    r = run(tmp_path / "in", "--check", "-t", "dotbot", "--report", tmp_path / "rep.json")
    rep = json.loads((tmp_path / "rep.json").read_bytes())
    notes = [k for k in rep["diagnostics"] if k in ("synthesized", "payload_wrapped", "status_mismatch")]
    warning = [ln for ln in r.stderr.decode().splitlines() if ln.startswith("warning:")]
    assert rep["lossy"] and notes, rep["diagnostics"]  # the test needs a loss and a note to prove something
    assert len(warning) == 1 and not any(k in warning[0] for k in notes), warning
