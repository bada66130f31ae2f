"""Docs pages stay in step with the code: every dialect has a page listing its field table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envglot.dialects import NAMES
from envglot.mappings import default_mappings

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.mark.parametrize("dialect", NAMES)
def test_dialect_page_lists_every_field_path(dialect: str) -> None:
    page = (DOCS / "dialects" / f"{dialect}.md").read_text()
    missing = [
        f"{field} = {path}" for field, path in default_mappings()[dialect].fields.items() if f"`{path}`" not in page
    ]
    assert not missing, f"docs/dialects/{dialect}.md does not mention: {missing}"


def test_relative_links_resolve() -> None:
    broken = []
    for page in DOCS.rglob("*.md"):
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(DOCS)} -> {target}")
    assert not broken, broken


README = DOCS.parent / "README.md"


def test_readme_starts_with_two_setup_commands() -> None:
    text = README.read_text()
    block = re.search(r"```sh\n(.*?)```", text, re.S)
    assert block is not None and text.index("```sh") < text.index("\n## "), "the sh block must open the README"
    lines = block.group(1).strip().splitlines()
    assert len(lines) == 2
    assert "envglot " in lines[0] and "examples" in lines[0]
    assert "pytest" in lines[1]


def test_readme_main_job_converts_every_bundled_example(tmp_path: Path) -> None:
    """The README's first command, after its install: the installed ``envglot`` migrates every
    bundled example with exit status 0 (nothing rejected)."""
    import shlex
    import shutil
    import subprocess
    import sys

    first = re.search(r"```sh\n(.*?)```", README.read_text(), re.S).group(1).strip().splitlines()[0]  # type: ignore[union-attr]
    job = shlex.split(first.rsplit("&& ", 1)[1])
    assert job[:3] == ["envglot", "migrate", "examples"]
    exe = shutil.which("envglot", path=str(Path(sys.executable).parent)) or "envglot"
    job[job.index("--out") + 1] = str(tmp_path / "converted")
    done = subprocess.run([exe, *job[1:], "-q"], cwd=DOCS.parent, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "converted" / ".envglot-rejects.jsonl").exists()


def test_ci_runs_the_readme_test_command() -> None:
    import subprocess

    ci = (DOCS.parent / ".ci" / "run").read_text()
    awk = re.search(r"test_cmd=\$\(awk '(.*?)' README.md\)", ci)
    assert awk is not None
    out = subprocess.run(["awk", awk.group(1), str(README)], capture_output=True, text=True, check=True).stdout
    second = re.search(r"```sh\n(.*?)```", README.read_text(), re.S).group(1).strip().splitlines()[1]  # type: ignore[union-attr]
    assert out.strip() == second


def test_python_api_states_the_transport_priorities_detection_uses() -> None:
    """The dialects' probes are listed on their own pages (generated); the two wrappers' priorities
    are written in python-api.md's prose, so they are checked against the code here."""
    from envglot.detect import JSONRPC, MCP, probe_table

    text = (DOCS / "python-api.md").read_text()
    where = {name: priority for priority, name, _ in probe_table() if name in (JSONRPC, MCP)}
    assert f"({where[JSONRPC]}: `jsonrpc`" in text and f"({where[MCP]}: `content`" in text
