"""The CLI commands on one input, through the installed ``envglot`` command (a subprocess each).

Allowed exit codes are those docs/cli.md and docs/migration.md document for a bad input;
a Python traceback on stderr is always a finding, and so is an output that is not a
valid document of its target or that turns a failure into a success.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import envglot
from envglot.cli.detect_cmd import MARKERLESS
from envglot.dialect import writable_names

from .oracle import Failure, Input, _Broken, _check_doc, _head

__all__ = ["ENVGLOT", "cli_runs"]

ENVGLOT = shutil.which("envglot", path=str(Path(sys.executable).parent)) or shutil.which("envglot") or "envglot"
_TIMEOUT = 120
_TRACEBACK = b"Traceback (most recent call last)"


def _run(args: list[str], stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run([ENVGLOT, *args], input=stdin, capture_output=True, timeout=_TIMEOUT, env=env, check=False)


def _failure(cmd: str, group: str, detail: str, inp: Input) -> Failure:
    return Failure(f"cli {group}", f"cli {cmd}", detail, inp.data)


def _stderr_check(cmd: str, proc: subprocess.CompletedProcess[bytes], allowed: set[int], inp: Input) -> list[Failure]:
    ran = "envglot " + " ".join(str(a) for a in proc.args[1:])
    if _TRACEBACK in proc.stderr:
        last = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1]
        return [_failure(cmd, f"traceback: {_head(last, 60)}", f"`{ran}` exit {proc.returncode}: {last[:300]}", inp)]
    if proc.returncode not in allowed:
        err = proc.stderr.decode("utf-8", "replace").strip()[:300]
        detail = f"`{ran}`: undocumented exit {proc.returncode}: {err}"
        return [_failure(cmd, f"{cmd} exit {proc.returncode}", detail, inp)]
    return []


def _outputs(out: bytes, target: str, inp: Input, what: str) -> list[Failure]:
    lines = [ln for ln in out.split(b"\n") if ln.strip()]
    docs = [out] if len(lines) != 1 and out.lstrip().startswith(b"{\n") else lines
    for doc in docs:
        try:
            _check_doc(doc, target, inp, what)
        except _Broken as b:
            return [Failure(f"cli {b.kind}: {b.group}", what, b.detail, inp.data)]
    return []


def convert(inp: Input, target: str, preserve: bool, level: str) -> list[Failure]:
    args = ["convert", "-", "-t", target, "--unsupported", level] + (["--preserve"] if preserve else [])
    proc = _run(args, inp.data)
    found = _stderr_check("convert", proc, {0, 1, 65}, inp)
    if not found and proc.returncode in (0, 1) and proc.stdout.strip():
        found = _outputs(proc.stdout, target, inp, "cli convert")
    return found


def detect(inp: Input) -> list[Failure]:
    proc = _run(["detect", "-"], inp.data)
    found = _stderr_check("detect", proc, {0, 65}, inp)
    if not found and proc.returncode == 0:
        text = proc.stdout.decode("utf-8", "replace").replace(MARKERLESS, "")  # an annotated dialect name
        names = text.split()
        if not names or any(n not in envglot.DIALECTS for n in names):
            found = [_failure("detect", "detect printed no dialect name", f"stdout {proc.stdout[:200]!r}", inp)]
    return found


def validate(inp: Input) -> list[Failure]:
    return _stderr_check("validate", _run(["validate", "-"], inp.data), {0, 1, 65}, inp)


def migrate(inp: Input, target: str) -> list[Failure]:
    """One record in a .json (or .jsonl when it holds no newline) file; every record accounted for."""
    with tempfile.TemporaryDirectory(prefix="envglot-fuzz-") as tmp:
        src, out = Path(tmp, "in"), Path(tmp, "out")
        src.mkdir()
        jsonl = b"\n" not in inp.data and b"\r" not in inp.data
        (src / ("r.jsonl" if jsonl else "r.json")).write_bytes(inp.data)
        report = Path(tmp, "report.json")
        proc = _run(["migrate", str(src), "-o", str(out), "-t", target, "-j", "1", "--report", str(report)])
        found = _stderr_check("migrate", proc, {0, 1}, inp)
        if found:
            return found
        try:
            rep = json.loads(report.read_bytes())
        except (OSError, ValueError) as exc:
            return [_failure("migrate", "no report", f"--report unreadable: {exc}", inp)]
        if rep["records"] != rep["converted"] + rep["passed_through"] + rep["rejected"] or rep["records"] < 1:
            return [_failure("migrate", "records unaccounted for", json.dumps(rep)[:300], inp)]
        for f in out.rglob("r.json*"):
            found += _outputs(f.read_bytes(), target, inp, "cli migrate")
        return found


def cli_runs(inp: Input, k: int) -> list[Failure]:
    """The CLI sample for input number ``k``: convert, detect, validate, migrate.

    The convert target, ``--preserve`` and ``--unsupported`` vary with ``k``.
    """
    targets = writable_names()
    n = len(targets)
    levels = ("ignore", "warn", "raise")
    t = targets[k % n]
    try:
        return (
            convert(inp, t, bool(k // n % 2), levels[k // (2 * n) % 3])
            + detect(inp)
            + validate(inp)
            + migrate(inp, targets[(k + 2) % n])
        )
    except subprocess.TimeoutExpired as exc:
        return [_failure("timeout", f"timeout {_head(' '.join(map(str, exc.cmd[1:3])), 30)}", str(exc)[:200], inp)]
