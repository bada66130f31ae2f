"""``envglot migrate`` as the program ends without the interpreter's teardown (``exits.end_after_exit``):
nothing it wrote is lost — outputs, stdout through a pipe, ``--report -``, ``--log -``, ``-v``, the
rejects file, the summary — the exit code is the run's, ``atexit`` handlers still run, and a closed
stdout pipe still ends with 141. Any other caller of ``main`` gets the ``SystemExit`` it always got."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from envglot.cli import main
from envglot.cli.exits import EX_PIPE, Finished

sys.path.insert(0, str(Path(__file__).parent))
from migrate_corpus import legacy_variant

BAD = b"{not json"

# The program as the `envglot` script runs it (`main()` reading sys.argv), with an object whose
# finaliser says whether the interpreter tore its modules down, an atexit handler registered as a
# module used by the run would (after the CLI's), and a thread the interpreter must wait for.
_PROGRAM = """\
import atexit, os, sys, threading, time
class _Teardown:
    def __del__(self):
        os.write(2, b"<teardown>\\n")
_t = _Teardown()
from envglot.cli import main
atexit.register(lambda: os.write(2, b"<atexit>\\n"))
def _late():
    threading.main_thread().join()  # until the interpreter's exit
    time.sleep(0.2)
    os.write(2, b"<thread>\\n")
threading.Thread(target=_late).start()
main()
"""


def program(*args: str | Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """``envglot ARGS`` as the program, stdout and stderr pipes read to their end."""
    return subprocess.run(
        [sys.executable, "-c", _PROGRAM, *map(str, args)], input=stdin, capture_output=True, timeout=300
    )


def mixed(n: int) -> bytes:
    """``n`` records to convert, every tenth one a reject."""
    return b"".join((BAD if i % 10 == 9 else legacy_variant(i)) + b"\n" for i in range(n))


def in_process(*args: str | Path, stdin: bytes | None = None) -> tuple[int, bytes]:
    """The same command through ``CliRunner`` (which ends with the interpreter's usual exit)."""
    r = CliRunner().invoke(main, ["migrate", *map(str, args)], input=stdin)
    assert isinstance(r.exception, SystemExit | None), r.exception
    return r.exit_code, r.stdout_bytes


def test_stdout_through_a_pipe_and_the_rejects_are_complete(tmp_path: Path) -> None:
    data = mixed(30_000)  # megabytes: many times a pipe's buffer
    rejects = tmp_path / "r.jsonl"
    got = program("migrate", "-", "--rejects", rejects, stdin=data)
    assert got.returncode == 1, got.stderr[-2000:]
    assert got.stderr.endswith(b"<thread>\n<atexit>\n")  # the thread joined, then atexit handlers run
    assert b"<teardown>" not in got.stderr  # and no teardown
    assert b"rejected: 3,000 records" in got.stderr and b"total" in got.stderr  # the summary, whole
    kept = rejects.read_bytes()
    rejects.unlink()
    code, want = in_process("-", "--rejects", rejects, stdin=data)
    assert code == 1 and got.stdout == want and len(want.splitlines()) == 27_000
    assert kept == rejects.read_bytes() and len(kept.splitlines()) == 3_000


def test_report_log_and_verbose_through_pipes_are_complete(tmp_path: Path) -> None:
    src = tmp_path / "in" / "a.jsonl"
    src.parent.mkdir()
    src.write_bytes(mixed(2_000))
    got = program("migrate", src, "--out", tmp_path / "out", "--report", "-", "-v", "--log", tmp_path / "log.jsonl")
    assert got.returncode == 1 and b"<teardown>" not in got.stderr
    report = json.loads(got.stdout)
    assert report["records"] == 2_000 and report["rejected"] == 200 and report["exit_code"] == 1
    log = (tmp_path / "log.jsonl").read_bytes().splitlines()
    verbose = [ln for ln in got.stderr.splitlines() if b"a.jsonl:" in ln]
    assert len(verbose) == len(log) >= 200
    assert len((tmp_path / "out" / "a.jsonl").read_bytes().splitlines()) == 1_800
    assert len((tmp_path / "out" / ".envglot-rejects.jsonl").read_bytes().splitlines()) == 200
    logged = program("migrate", src, "--check", "--log", "-")
    assert logged.returncode == 1 and logged.stdout.splitlines() == log


def test_a_pool_run_ends_at_once_with_its_outputs(tmp_path: Path) -> None:
    src = tmp_path / "in" / "a.jsonl"
    src.parent.mkdir()
    src.write_bytes(mixed(20_000))
    got = program("migrate", src, "--out", tmp_path / "out", "-j", "2", "--chunk-size", "64K", "-q")
    assert got.returncode == 1 and b"<atexit>" in got.stderr and b"<teardown>" not in got.stderr
    code, _ = in_process(src, "--out", tmp_path / "again", "-j", "1", "-q")
    assert code == 1
    for name in ("a.jsonl", ".envglot-rejects.jsonl"):
        assert (tmp_path / "out" / name).read_bytes() == (tmp_path / "again" / name).read_bytes()


def test_a_closed_stdout_pipe_still_ends_with_141(tmp_path: Path) -> None:
    reader, writer = os.pipe()
    os.close(reader)  # nobody reads: the first write fails
    p = subprocess.run(
        [sys.executable, "-c", _PROGRAM, "migrate", "-", "--rejects", str(tmp_path / "r.jsonl")],
        input=mixed(100),
        stdout=writer,
        stderr=subprocess.PIPE,
        timeout=120,
    )
    os.close(writer)
    assert p.returncode == EX_PIPE


def test_other_commands_and_callers_end_as_before(tmp_path: Path) -> None:
    src = tmp_path / "a.jsonl"
    src.write_bytes(mixed(20))
    convert = program("convert", src, "-t", "result")
    assert b"<teardown>" in convert.stderr  # a command that does not end with Finished
    with pytest.raises(Finished) as done:  # main([...]): a caller's, not the program's
        main(["migrate", str(src), "--check", "-q"])
    assert isinstance(done.value, SystemExit) and done.value.code == 1
