"""The installed ``envglot`` command under faults: Ctrl-C, SIGTERM, a reader that goes away,
``-o`` and ``--log`` naming one file, nested CallToolResults, huge input-derived messages."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envglot.excerpt import MESSAGE_LIMIT, excerpt

ROOT = Path(__file__).resolve().parents[1]
EC_RATE = ROOT / "examples" / "errorcode" / "rate-limited.json"
ENVGLOT = shutil.which("envglot", path=str(Path(sys.executable).parent)) or shutil.which("envglot")
pytestmark = pytest.mark.skipif(ENVGLOT is None, reason="the envglot executable is not installed")


def run(*args: str | Path, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    assert ENVGLOT is not None
    return subprocess.run([ENVGLOT, *map(str, args)], input=stdin, capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def big_jsonl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """200,000 lossy errorcode records (a few seconds of converting, warnings on stderr)."""
    line = json.dumps(json.loads(EC_RATE.read_bytes())).encode() + b"\n"
    p = tmp_path_factory.mktemp("big") / "big.jsonl"
    p.write_bytes(line * 200_000)
    return p


def _start(args: list[str | Path], cwd: Path) -> subprocess.Popen[bytes]:
    assert ENVGLOT is not None
    return subprocess.Popen(
        [ENVGLOT, *map(str, args)], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )


def _wait_for_temp(cwd: Path, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while not [p for p in cwd.iterdir() if p.name.endswith(".tmp")]:
        assert proc.poll() is None, "the run ended before it could be interrupted"
        assert time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(0.2)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 130)])
def test_convert_interrupted_exits_130_and_leaves_no_temp_file(
    tmp_path: Path, big_jsonl: Path, sig: signal.Signals, code: int
) -> None:
    (tmp_path / "out.jsonl").write_bytes(b"previous\n")
    proc = _start(
        [
            "convert",
            big_jsonl,
            "-t",
            "response-v2",
            "-o",
            "out.jsonl",
            "--log",
            "log.jsonl",
            "--unsupported",
            "ignore",
        ],
        tmp_path,
    )
    _wait_for_temp(tmp_path, proc)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert b"Traceback" not in err and b"interrupted" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]  # no temp file, no half log
    assert (tmp_path / "out.jsonl").read_bytes() == b"previous\n"


@pytest.mark.parametrize(("flags", "head"), [((), b'{"success":false'), (("-v",), b":1: note: ")])
def test_convert_into_a_closed_pipe_exits_141_quietly(big_jsonl: Path, flags: tuple[str, ...], head: bytes) -> None:
    assert ENVGLOT is not None
    # stdout and stderr both into `head -1`, as `envglot convert big.jsonl 2>&1 | head -1` does;
    # by default the first line is a document (the tally comes at the end), with -v a diagnostic
    proc = subprocess.Popen(
        [ENVGLOT, "convert", big_jsonl, "-t", "response-v2", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    assert proc.wait(timeout=60) == 141
    assert first.startswith(head if not flags else str(big_jsonl).encode() + head)


def test_convert_stdout_closed_without_stderr(big_jsonl: Path) -> None:
    assert ENVGLOT is not None
    proc = subprocess.Popen(
        [ENVGLOT, "convert", big_jsonl, "-t", "response-v2", "--unsupported", "ignore"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b'{"success":false')
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 141
    assert err == b""


def test_migrate_to_a_closed_pipe_exits_141_quietly(big_jsonl: Path) -> None:
    assert ENVGLOT is not None
    with open(big_jsonl, "rb") as src:
        proc = subprocess.Popen(
            [ENVGLOT, "migrate", "-", "-j", "1", "-q", "--rejects", os.devnull],
            stdin=src,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline().startswith(b'{"success":false')
        proc.stdout.close()
        err = proc.stderr.read()
        assert proc.wait(timeout=60) == 141
    assert b"Traceback" not in err


@pytest.mark.parametrize("spelling", ["same", "dot", "symlink", "hardlink"])
def test_output_and_log_on_one_file_is_a_usage_error(tmp_path: Path, spelling: str) -> None:
    out = tmp_path / "x.json"
    log: Path | str = out
    if spelling == "dot":
        log = f"{tmp_path}/./x.json"
    elif spelling == "symlink":
        (tmp_path / "link.json").symlink_to(out)
        log = tmp_path / "link.json"
    elif spelling == "hardlink":
        out.write_bytes(b"keep\n")
        os.link(out, tmp_path / "hard.json")
        log = tmp_path / "hard.json"
    r = run("convert", EC_RATE, "-t", "response-v2", "-o", out, "--log", log)
    assert r.returncode == 2, r.stderr
    assert b"name the same file" in r.stderr
    assert not out.exists() or out.read_bytes() == b"keep\n"


def test_validate_nested_call_tool_result_is_a_violation_not_a_key_error(tmp_path: Path) -> None:
    env = {"success": True, "data": {}, "error": None, "meta": {"version": "response-v2"}}
    inner = {"content": [{"type": "text", "text": json.dumps(env)}], "structuredContent": env, "isError": False}
    outer = {"content": [{"type": "text", "text": json.dumps(inner)}], "structuredContent": inner, "isError": False}
    (tmp_path / "nested.json").write_text(json.dumps(outer))
    r = run("validate", tmp_path / "nested.json")
    assert r.returncode == 1, r.stderr
    assert b"Traceback" not in r.stderr and b"KeyError" not in r.stderr
    assert b"inside a transport wrapper" in r.stdout

    from envglot.validation import validate

    found = validate(json.dumps(outer))
    assert [v.path for v in found] == ["$"] and "inside a transport wrapper" in found[0].message


def test_huge_unknown_code_is_quoted_bounded(tmp_path: Path) -> None:
    doc = json.loads(EC_RATE.read_bytes())
    doc["error"]["code"] = "x_" + "q" * 5_000_000
    src = tmp_path / "big.json"
    src.write_text(json.dumps(doc))
    r = run("convert", src, "-t", "dotbot", "--log", tmp_path / "log.jsonl", "-o", tmp_path / "out.json")
    assert b"Traceback" not in r.stderr
    assert len(r.stderr) < 10 * MESSAGE_LIMIT, len(r.stderr)
    log = (tmp_path / "log.jsonl").read_bytes()
    assert len(log) < 20 * MESSAGE_LIMIT
    for line in log.splitlines():
        rec = json.loads(line)
        assert len(rec["message"]) <= MESSAGE_LIMIT + 40 and len(rec["path"] or "") <= MESSAGE_LIMIT + 40


def test_excerpt_keeps_valid_utf8_and_says_what_was_cut() -> None:
    assert excerpt("short") == "short"
    assert excerpt("x" * 300, 10) == "x" * 10 + "… (290 more characters)"
    cut = excerpt("é" * 200, 5)
    assert cut.startswith("ééééé…") and "195 more" in cut
    assert excerpt(b"caf\xe9") == "caf\\xe9"
    assert excerpt("caf\udce9") == "caf\\xe9"  # a surrogateescape'd file name
    assert excerpt("a\ud800b") == "a\\ud800b"  # a lone surrogate from bad input
    big = excerpt(b"\xff" * 1_000_000, 4)
    assert big == "\\xff" * 4 + "… (cut; 1000000 bytes in all)"  # escapes are never split
    for s in (excerpt("a\ud800" * 100, 7), excerpt(b"\xc3\xa9" * 100, 7), big):
        s.encode("utf-8")
    with pytest.raises(ValueError):
        excerpt("x", 0)


@pytest.mark.skipif(sys.platform != "linux", reason="Linux file names are bytes")
def test_convert_detect_validate_with_a_non_utf8_file_name(tmp_path: Path) -> None:
    base = os.fsencode(tmp_path)
    src = base + b"/caf\xe9.jsonl"
    with open(src, "wb") as fh:
        fh.write(b'{"count":1}\nnot json\n')
    name = os.fsdecode(src)
    r = run("convert", name, "-t", "response-v2", "-o", os.fsdecode(base + b"/o\xe9.jsonl"), "--log", tmp_path / "l.j")
    assert r.returncode == 65 and b"Traceback" not in r.stderr
    assert b"caf\\xe9.jsonl:2: error: invalid JSON" in r.stderr
    logged = [json.loads(line) for line in (tmp_path / "l.j").read_bytes().splitlines()]
    assert logged and all(rec["file"].endswith("caf\\xe9.jsonl") for rec in logged)
    assert open(base + b"/o\xe9.jsonl", "rb").read().startswith(b'{"success":true')
    for cmd in ("detect", "validate"):
        r = run(cmd, name)
        assert b"Traceback" not in r.stderr and b"caf\\xe9.jsonl" in r.stdout + r.stderr, cmd
