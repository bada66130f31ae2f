"""The built wheel works on its own: it carries its mapping tables and converts an example.

Builds the wheel with ``pip wheel --no-build-isolation`` (hatchling from this environment,
no network), unpacks it into a fresh ``venv --without-pip`` whose only other path entry
is this environment's site-packages (for msgspec, click, orjson, tomli-w), and runs the
installed package from outside the repository.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

import envglot

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "errorcode" / "rate-limited.json"

_PROBE = """
import json, sys
import envglot
from envglot.mappings import default_mappings, mappings_dir
data = open(sys.argv[1], "rb").read()
print(json.dumps({
    "module": envglot.__file__,
    "mappings": str(mappings_dir()),
    "tables": sorted(p.name for p in mappings_dir().iterdir()),
    "codes": len(default_mappings()["errorcode"].codes),
    "output": envglot.convert(data, to="response-v2", unsupported="ignore").decode(),
}))
"""


def _run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{args[:3]} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.packaging
def test_the_installed_wheel_finds_its_tables_and_converts(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    _run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        REPO,
        "--no-deps",
        "--no-build-isolation",
        "--no-index",
        "-q",
        "-w",
        dist,
        cwd=tmp_path,
    )
    (wheel,) = dist.glob("envglot-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "envglot/py.typed" in names
    assert {"envglot/mappings/canonical.toml", "envglot/mappings/error-types.toml"} <= set(names)

    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp_path).strip())
    zipfile.ZipFile(wheel).extractall(site)
    (site / "_deps_from_test_env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ENVGLOT_MAPPINGS_DIR", "VIRTUAL_ENV")}
    got = json.loads(_run(python, "-I", "-c", _PROBE, EXAMPLE, cwd=tmp_path, env=env))

    assert Path(got["module"]).is_relative_to(site)
    assert Path(got["mappings"]) == site / "envglot" / "mappings"
    assert not Path(got["mappings"]).is_relative_to(REPO)
    expected_tables = sorted(p.name for p in (REPO / "mappings").glob("*.toml"))
    assert [t for t in got["tables"] if t.endswith(".toml")] == expected_tables
    assert got["codes"] == 29
    assert got["output"] == envglot.convert(EXAMPLE.read_bytes(), to="response-v2", unsupported="ignore").decode()
