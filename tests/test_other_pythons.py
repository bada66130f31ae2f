"""The input checks on the other supported CPythons (issue 28: 3.11-3.13, tested on at least two).

The depth check finds CPython's per-thread recursion counter by measurement, and CPython keeps
and counts it differently in 3.11, 3.12 and 3.13 (``envglot.limits._Budget``); the UTF-8 check
decodes in pieces whose strings CPython builds per version. This module builds envglot's wheel
from this checkout, installs it with its runtime dependencies and the test tools into a fresh
virtual environment of each other CPython it finds, and runs the trust-boundary, entry and
top-level parse suites there (the last: the depth answers of a top level parsed into Structs,
typed levels included), after checking that the depth budget was found (an interpreter where the search failed
would pass those suites on the slower exact count, so that is checked on its own).

Interpreters: ``ENVGLOT_OTHER_PYTHONS`` (paths, separated by ``os.pathsep``), else ``python3.12``
and ``python3.13`` on ``PATH``, else pyenv's ``3.12.*`` and ``3.13.*``. None found: the test is
skipped, naming what was searched. Packages come from pip's configured index (offline here).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VERSIONS = ("3.12", "3.13")
SUITES = ("tests/test_trust_boundary.py", "tests/test_entry.py", "tests/test_top_parse.py")
TOOLS = ("pytest>=8", "pytest-xdist>=3.5", "hypothesis>=6.100")
"""What the suites need beyond envglot's own dependencies (they import nothing else)."""

_PROBE = """
import sys
from envglot import limits
limits.check_input(b'[' * 256 + b']' * 256)
assert limits._budget().offset is not None, "the depth budget was not found on " + sys.version
print(sys.version_info[:2])
"""


def _found(version: str) -> str | None:
    """An interpreter for ``version``: the environment's list, ``PATH``, then pyenv."""
    listed = [p for p in os.environ.get("ENVGLOT_OTHER_PYTHONS", "").split(os.pathsep) if p]
    if listed:
        return next((p for p in listed if _version_of(p) == version), None)
    on_path = shutil.which(f"python{version}")
    if on_path and _version_of(on_path) == version:
        return on_path
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for candidate in sorted(root.glob(f"{version}.*/bin/python"), reverse=True):
        if _version_of(str(candidate)) == version:
            return str(candidate)
    return None


def _version_of(python: str) -> str | None:
    try:
        done = subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: int) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(args[:4])} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dist = tmp_path_factory.mktemp("wheel")
    _run(
        [sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "--no-build-isolation", "-q", "-w", str(dist)],
        cwd=dist,
        env=dict(os.environ),
        timeout=300,
    )
    (built,) = dist.glob("envglot-*.whl")
    return built


@pytest.mark.parametrize("version", VERSIONS)
def test_the_input_checks_hold_on_another_cpython(version: str, wheel: Path, tmp_path: Path) -> None:
    python = _found(version)
    if python is None:
        pytest.skip(f"no CPython {version}: searched ENVGLOT_OTHER_PYTHONS, python{version} on PATH, pyenv")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "ENVGLOT_DEPTH_BUDGET")}
    venv = tmp_path / "venv"
    _run([python, "-m", "venv", str(venv)], cwd=tmp_path, env=env, timeout=300)
    bin_dir = venv / "bin"
    pip = [str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel), *TOOLS]
    _run(pip, cwd=tmp_path, env=env, timeout=900)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"  # the suites run the installed `envglot` command

    # installed from the wheel, outside the checkout: the venv's envglot, not src/
    assert _run([str(bin_dir / "python"), "-I", "-c", _PROBE], cwd=tmp_path, env=env, timeout=60).strip() == str(
        tuple(int(p) for p in version.split("."))
    )
    out = _run(
        [str(bin_dir / "python"), "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *SUITES],
        cwd=REPO,
        env=env,
        timeout=1800,
    )
    assert " passed" in out and " failed" not in out
