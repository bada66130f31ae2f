"""Every shell command and Python block of README.md and docs/**/*.md runs as written.

Pages and blocks are discovered, never listed by hand: a new page or block is tested
without an edit here. Each page runs in its own sandbox, a fresh copy of the repository's
``examples/``, ``docs/`` and ``mappings/`` (so ``--in-place`` and ``-o`` never touch the
repository), its blocks in page order, as a reader following the page would:

- a **transcript** (a fence whose first line starts with ``$ ``: ```` ```console ````,
  ```` ```text ```` or plain): each ``$ command`` runs in bash; the lines shown after it
  must be its stdout and stderr lines, each stream in its own order (``…`` stands for
  any characters, a line of just ``…`` for any further stdout lines); a following
  ``$ echo $?`` and number is its exit code;
- a ```` ```sh ```` block runs as one bash script; none of its commands may end in a usage
  error (2), a missing input (66), a command not found (126, 127) or a traceback;
- a ```` ```python ```` block is executed in one namespace per page (``__name__`` is
  ``"__main__"``), in the sandbox as the working directory.

A block that cannot run in CI (a live MCP client, a cluster, object storage, your shell's
start-up files) is preceded by a visible line ``*Not run in CI: REASON*``; each such block
is a skipped test with its reason, so the summary counts them.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from test_cli_transcripts import envglot_exe, interleaves

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md") if "examples" not in p.parts)]
COPIED = ("examples", "docs", "mappings")
"""What a sandbox holds: the files the pages' commands read."""
_FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.M | re.S)
NOT_RUN = re.compile(r"^\*Not run in CI: (.+)\*$")
SHELL_LANGS = ("sh", "console", "shell", "bash")
SETUP = (
    "the README's set-up commands: the second is CI's own command (.ci/run runs it); the test suite runs "
    "the first line's `envglot migrate` (tests/test_docs_pages.py)"
)
"""Why the README's first ``sh`` block (which must stay exactly its two set-up commands) is not run here."""
_REFUSED = (2, 66, 126, 127)
"""Exit codes a command of a ```sh block must not end with: it did not run as written."""


@dataclass(frozen=True)
class Block:
    """One runnable block of a page."""

    page: str
    line: int
    kind: str
    """``transcript``, ``sh`` or ``python``."""
    body: str
    not_run: str | None
    """The reason given in the page when the block cannot run in CI."""

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def page_blocks(page: Path, name: str | None = None) -> list[Block]:
    """The runnable blocks of ``page``, in order (data blocks, JSON, TOML and usage lines, are not)."""
    text = page.read_text()
    name = name or str(page.relative_to(ROOT))
    found = []
    for m in _FENCE.finditer(text):
        lang, body = m.group(1).strip(), m.group(2)
        if lang == "python":
            kind = "python"
        elif body.startswith("$ ") and lang in ("", "text", *SHELL_LANGS):
            kind = "transcript"
        elif lang in SHELL_LANGS:
            kind = "sh"
        else:
            continue
        before = text[: m.start()].rstrip().splitlines()
        reason = NOT_RUN.match(before[-1]) if before else None
        line = text.count("\n", 0, m.start()) + 2
        why = reason.group(1) if reason else None
        if name == "README.md" and kind == "sh" and not found:  # the README opens with its two set-up commands
            why = SETUP
        found.append(Block(name, line, kind, body, why))
    return found


ALL = [b for page in PAGES for b in page_blocks(page)]
RUN_PAGES = sorted({b.page for b in ALL if b.not_run is None})
NOT_RUN_BLOCKS = [b for b in ALL if b.not_run is not None]


@dataclass(frozen=True)
class Command:
    """One ``$ command`` of a transcript, the lines shown after it and the exit code an ``echo $?`` shows."""

    line: int
    command: str
    output: list[str]
    exit_code: int | None


def transcript_commands(block: Block) -> list[Command]:
    lines = block.body.splitlines()
    found: list[Command] = []
    i = 0
    while i < len(lines):
        start = i
        assert lines[i].startswith("$ "), f"{block.page}:{block.line + i}: a transcript line must start with '$ '"
        cmd = lines[i][2:]
        while cmd.endswith("\\"):  # a continued command line
            i += 1
            cmd = cmd[:-1] + " " + lines[i].strip()
        i += 1
        out: list[str] = []
        while i < len(lines) and not lines[i].startswith("$ "):
            out.append(lines[i])
            i += 1
        code = None
        if i < len(lines) and lines[i] == "$ echo $?":
            code = int(lines[i + 1])
            i += 2
        found.append(Command(block.line + start, cmd, out, code))
    return found


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ENVGLOT_MAPPINGS_DIR"} | {"COLUMNS": "100"}
    env["PATH"] = str(Path(envglot_exe()).parent) + os.pathsep + env.get("PATH", "")
    return env


def _sh(script: str, cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, env=_env(), timeout=timeout)


@contextlib.contextmanager
def _inside(path: Path) -> Iterator[None]:
    old = Path.cwd()
    os.chdir(path)
    sys.path.insert(0, str(path))
    try:
        yield
    finally:
        os.chdir(old)
        sys.path.remove(str(path))


def run_block(block: Block, sandbox: Path, namespace: dict[str, object]) -> None:
    """Run one block in ``sandbox``; an assertion names the page and line that failed."""
    if block.kind == "transcript":
        for c in transcript_commands(block):
            r = _sh(c.command, sandbox, timeout=120)
            out, err = r.stdout.decode().splitlines(), r.stderr.decode().splitlines()
            where = f"{block.page}:{c.line}: $ {c.command}"
            assert interleaves(c.output, out, err), f"{where}\nstdout: {out}\nstderr: {err}"
            if c.exit_code is not None:
                assert r.returncode == c.exit_code, f"{where}: exit {r.returncode}\n{r.stderr.decode()}"
    elif block.kind == "sh":
        trap = "trap 'c=$?; case $c in " + "|".join(map(str, _REFUSED)) + ") exit $c;; esac' ERR\n"
        r = _sh("set -o pipefail\n" + trap + block.body, sandbox)
        err = r.stderr.decode()
        assert r.returncode not in _REFUSED and "Traceback" not in err, f"{block.id}: exit {r.returncode}\n{err}"
    else:
        code = compile("\n" * (block.line - 1) + block.body, str(ROOT / block.page), "exec")
        with _inside(sandbox):
            exec(code, namespace)


@pytest.mark.parametrize("page", RUN_PAGES)
def test_page_runs_as_written(page: str, tmp_path: Path) -> None:
    """Every block of ``page`` that is not marked, in order, in a fresh sandbox."""
    for name in COPIED:
        shutil.copytree(ROOT / name, tmp_path / name, symlinks=True)
    namespace: dict[str, object] = {"__name__": "__main__"}
    for block in ALL:
        if block.page == page and block.not_run is None:
            run_block(block, tmp_path, namespace)


@pytest.mark.parametrize("block", NOT_RUN_BLOCKS, ids=[b.id for b in NOT_RUN_BLOCKS])
def test_block_not_run_in_ci(block: Block) -> None:
    """A block marked ``*Not run in CI: REASON*``: counted as skipped, with its reason."""
    assert len(block.not_run or "") > 10, f"{block.id}: say why it cannot run"
    pytest.skip(f"{block.id}: {block.not_run}")


def test_discovery_finds_every_kind_of_block() -> None:
    kinds = {(b.page, b.kind) for b in ALL}
    assert {("README.md", "transcript"), ("README.md", "python"), ("docs/cli.md", "transcript")} <= kinds
    assert ("docs/migration.md", "transcript") in kinds and ("docs/migration.md", "python") in kinds
    assert ("docs/cli.md", "sh") in kinds
    assert len(RUN_PAGES) >= 6 and len(ALL) - len(NOT_RUN_BLOCKS) >= 50
    assert len(NOT_RUN_BLOCKS) <= 20, "most blocks must run: mark only what needs what CI has not"


def test_parsers(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text(
        "```console\n$ a \\\n  b\nout\n$ echo $?\n1\n$ c\n```\n\n*Not run in CI: needs a live MCP client*\n\n"
        "```sh\nx\n```\n\n```json\n{}\n```\n\n```python\nprint(1)\n```\n\n```\n$ d\n```\n"
    )
    blocks = page_blocks(page, "p.md")
    assert [(b.kind, b.line, b.not_run) for b in blocks] == [
        ("transcript", 2, None),
        ("sh", 13, "needs a live MCP client"),
        ("python", 21, None),
        ("transcript", 25, None),
    ]
    assert transcript_commands(blocks[0]) == [Command(2, "a  b", ["out"], 1), Command(7, "c", [], None)]


def test_dialect_names_paragraph_names_registered_dialects_only() -> None:
    """docs/cli.md's "Dialect names" paragraph lists no dialect (``envglot dialects`` does, from
    the registry); the names and aliases it gives as examples are registered ones."""
    from envglot.dialect import get_dialect

    text = (ROOT / "docs" / "cli.md").read_text()
    para = text.split("### Dialect names\n", 1)[1].split("An unknown name", 1)[0]
    for name in re.findall(r"`([a-z0-9_-]+)`", para):
        get_dialect(name)
