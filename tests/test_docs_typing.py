"""Every documented Python example passes ``mypy --strict`` and ``pyright`` strict, and every public
name has its real type."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = {"python-api.md": None, "adapters.md": "mcp.server.mcpserver"}


def _module(page: Path) -> str:
    """The page's ```python blocks as one module, each block on its own lines of the page."""
    text = page.read_text()
    lines = [""] * (text.count("\n") + 1)
    for m in re.finditer(r"^```python\n(.*?)^```", text, re.M | re.S):
        first = text.count("\n", 0, m.start()) + 1
        for i, line in enumerate(m.group(1).splitlines()):
            lines[first + i] = line
    return "\n".join(lines) + "\n"


def _mypy(tmp_path: Path, *files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / ".mypy"),
            *map(str, files),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )


def _page_module(name: str, tmp_path: Path) -> Path:
    """The page's examples as a module in ``tmp_path`` (skips when the page needs a missing package)."""
    needs = PAGES[name]
    if needs is not None:
        try:
            found = importlib.util.find_spec(needs) is not None
        except ImportError:
            found = False
        if not found:
            pytest.skip(f"{name} needs {needs} (pip install -e '.[mcp]')")
    module = tmp_path / (name.removesuffix(".md").replace("-", "_") + ".py")
    module.write_text(_module(DOCS / name))
    return module


@pytest.mark.parametrize("name", PAGES)
def test_page_examples_pass_mypy_strict(name: str, tmp_path: Path) -> None:
    module = _page_module(name, tmp_path)
    p = _mypy(tmp_path, module)
    # mypy's line numbers are the page's line numbers
    assert p.returncode == 0, p.stdout.replace(str(module), f"docs/{name}")


@pytest.mark.parametrize("name", PAGES)
def test_page_examples_pass_pyright_strict(name: str, tmp_path: Path) -> None:
    """pyright (the ``test`` extra; it runs on node) in strict mode, against this interpreter's packages."""
    pyright = shutil.which("pyright", path=str(Path(sys.executable).parent)) or shutil.which("pyright")
    if pyright is None:
        pytest.skip("pyright is not installed (pip install -e '.[test]')")
    module = _page_module(name, tmp_path)
    (tmp_path / "pyrightconfig.json").write_text(json.dumps({"typeCheckingMode": "strict", "pythonVersion": "3.11"}))
    p = subprocess.run(
        [pyright, "--pythonpath", sys.executable, module.name],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout.replace(str(module), f"docs/{name}")


def test_lazy_public_names_have_their_real_types(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from pathlib import Path\n"
        "import envglot\n"
        "def f(p: Path) -> None:\n"
        "    r: envglot.Result[list[str]] = envglot.Result.ok(['a'])\n"
        "    m: envglot.Migrator = envglot.Migrator(to='errorcode')\n"
        "    rep: envglot.MigrationReport = envglot.migrate([str(p)], check=True)\n"
        "    v: list[envglot.Violation] = envglot.validate(b'{}', dialect='errorcode')\n"
        "    s: dict[str, object] = envglot.json_schema('errorcode')\n"
        "    pol: envglot.Policy = envglot.Policy(level='raise', select=('code_mapped',))\n"
        "    print(r, m, rep, v, s, pol)\n"
        "reveal_type(envglot.migrate)\n"
    )
    p = _mypy(tmp_path, probe)
    assert p.returncode == 0, p.stdout
    assert "def (inputs:" in p.stdout and "MigrationReport" in p.stdout, p.stdout


def test_lazy_names_still_import_lazily() -> None:
    code = "import sys, envglot; print(any(m in sys.modules for m in ('envglot.migration', 'envglot.validation')))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
    import envglot

    assert envglot.Migrator.__module__.startswith("envglot.migration")
