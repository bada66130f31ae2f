"""A large JSON Lines migration (200k generated records) through the installed CLI:
counts are exact, order is kept, and peak memory stays bounded (streaming, bounded chunks)."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import envglot
from envglot.migration import Migrator

sys.path.insert(0, str(Path(__file__).parent))
from migrate_corpus import mixed_records, write_large_jsonl

ENVGLOT = shutil.which("envglot", path=str(Path(sys.executable).parent)) or shutil.which("envglot")
N = 200_000
PEAK_RSS_LIMIT_MB = 80
"""Python + envglot alone take ~30 MB, and the input is bigger than this limit: holding it whole cannot fit."""

# Runs the CLI as its only child and prints that subtree's peak RSS (the CLI and its workers,
# which it reaps): ru_maxrss of RUSAGE_CHILDREN, in KiB on Linux.
_WRAPPER = """
import json, resource, subprocess, sys
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
print(json.dumps({"rc": rc, "maxrss_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


@pytest.mark.skipif(ENVGLOT is None or not sys.platform.startswith("linux"), reason="needs the CLI and Linux")
def test_200k_records_bounded_memory(tmp_path: Path) -> None:
    assert ENVGLOT is not None
    src = tmp_path / "big.jsonl"
    size = write_large_jsonl(src, N, pad=1000)
    assert size / 2**20 > PEAK_RSS_LIMIT_MB
    out, report = tmp_path / "out", tmp_path / "r.json"
    cmd = [ENVGLOT, "migrate", str(src), "--out", str(out), "--report", str(report), "-j", "2"]
    proc = subprocess.run([sys.executable, "-c", _WRAPPER, *cmd], capture_output=True, timeout=300, check=True)
    res = json.loads(proc.stdout)
    assert res["rc"] == 0, proc.stderr
    rep = json.loads((tmp_path / "r.json").read_bytes())
    expected = Counter(d for d, _ in mixed_records(N, pad=1000))
    assert rep["records"] == N and rep["rejected"] == 0
    assert rep["converted"] + rep["passed_through"] == N
    assert {d: c["records"] for d, c in rep["by_source"].items()} == dict(expected)
    assert rep["by_source"]["response-v2"]["passed_through"] == expected["response-v2"]
    peak_mb = res["maxrss_kib"] / 1024
    assert peak_mb < PEAK_RSS_LIMIT_MB, f"peak RSS {peak_mb:.0f} MB"
    # order kept and every record valid: check a sample against the per-record function
    mig = Migrator()
    with open(src, "rb") as fin, open(out / "big.jsonl", "rb") as fout:
        n = 0
        for i, (a, b) in enumerate(itertools.zip_longest(fin, fout)):
            assert a is not None and b is not None, f"line counts differ at line {i + 1}"
            n += 1
            if i % 997 == 0:
                assert b.rstrip(b"\n") == mig(a.rstrip(b"\n")).output
                envglot.read(b, from_="response-v2")
        assert n == N
