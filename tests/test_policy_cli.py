"""``--select``/``--ignore`` on ``migrate`` (convert's are in tests/cli/convert.md), and Migrator with a Policy."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import envglot
from envglot import Policy

ROOT = Path(__file__).resolve().parents[1]
ENVGLOT = shutil.which("envglot", path=str(Path(sys.executable).parent)) or shutil.which("envglot")
ERROR = (ROOT / "examples" / "dotbot" / "register-error.json").read_bytes()  # code_mapped + field_dropped
OK = (ROOT / "examples" / "dotbot" / "structure-ok.json").read_bytes()  # field_dropped only


def _tree(tmp_path: Path) -> Path:
    src = tmp_path / "in"
    src.mkdir()
    (src / "log.jsonl").write_bytes(ERROR.strip() + b"\n" + OK.strip() + b"\n")
    return src


def _migrate(*args: str) -> subprocess.CompletedProcess[str]:
    assert ENVGLOT is not None
    return subprocess.run([ENVGLOT, "migrate", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(ENVGLOT is None, reason="the envglot executable is not installed")
def test_migrate_select_refuses_only_the_selected_kind(tmp_path: Path) -> None:
    src = _tree(tmp_path)
    every = _migrate(str(src), "--check", "--unsupported", "raise", "-j", "1")
    assert "rejected: 2 records" in every.stderr, every.stderr
    only = _migrate(str(src), "--check", "--unsupported", "raise", "--select", "code_mapped", "-j", "1")
    assert "rejected: 1 records" in only.stderr, only.stderr
    bad = _migrate(str(src), "--check", "--ignore", "nope")
    assert bad.returncode == 2 and "unknown diagnostic kind 'nope'" in bad.stderr


def test_migrator_counts_only_what_the_policy_selects() -> None:
    assert envglot.Migrator()(OK.strip()).lossy
    assert not envglot.Migrator(unsupported=Policy(ignore=("field_dropped",)))(OK.strip()).lossy
    refused = envglot.Migrator(unsupported=Policy(level="raise", select=("code_mapped",)))
    assert refused(OK.strip()).status == "converted"
    out = refused(ERROR.strip())
    assert out.status == "rejected" and [d["kind"] for d in out.diagnostics] == ["code_mapped"]
    assert not envglot.Migrator(unsupported="raise", preserve=True)(ERROR.strip()).lossy
