"""Command transcripts (in the manner of pandoc's ``test/command/*.md``) run through the installed ``envglot``.

Format of ``tests/cli/*.md``: prose, plus fenced code blocks. A block whose first line
starts with ``% envglot`` is one test::

    % envglot convert -t response-v2          <- the command line (shlex-split, no shell)
    {"success": true, "data": {}}             <- stdin lines ...
    ^D                                        <- ... up to ^D (leave both out for empty stdin)
    {"success":true,"data":{},...}            <- expected stdout, line by line
    2> warning: $.x: ...                      <- an expected stderr line ("2> " + the line)
    => 65                                     <- expected exit code (no such line: 0)

Expected stdout lines and ``2>`` lines may interleave; each stream is compared as the
exact list of its lines, in order. A ``%json-subset`` line (just after ``^D``, or after the
command when there is no stdin) turns the expected stdout into one JSON value that the
actual stdout, parsed as JSON, must contain: objects may have more keys, arrays and
scalars must match exactly. Use it for long outputs such as schemas. A ``%contains`` line
in the same place makes the expected stdout lines a subsequence of the actual ones (in
order, other lines in between allowed). In an expected stdout or stderr line, ``…`` stands
for any characters: outputs that list every registered dialect (``envglot dialects``,
``known: …``) are written so, and a new dialect needs no edit here.

Commands run from the repository root (so ``examples/...`` and ``tests/cli/...`` paths
resolve), with ``ENVGLOT_MAPPINGS_DIR`` unset, so the bundled tables are used. Blocks that
do not start with ``% envglot`` are plain documentation and are ignored.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import pytest


def envglot_exe() -> str:
    """The ``envglot`` script of this interpreter's environment (else the one on PATH)."""
    beside = Path(sys.executable).with_name("envglot")
    if beside.exists():
        return str(beside)
    found = shutil.which("envglot")
    assert found, "envglot is not installed (pip install -e .)"
    return found


ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPTS = ROOT / "tests" / "cli"
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)


@dataclass(frozen=True)
class Block:
    """One transcript test."""

    file: str
    line: int
    argv: list[str]
    stdin: bytes
    stdout: list[str]
    stderr: list[str]
    exit_code: int
    json_subset: bool
    contains: bool = False

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}"


def parse(path: Path) -> list[Block]:
    """The test blocks of one transcript file."""
    text = path.read_text()
    blocks: list[Block] = []
    for m in _FENCE.finditer(text):
        lines = m.group(1).splitlines()
        if not lines or not lines[0].startswith("% envglot"):
            continue
        start = text.count("\n", 0, m.start()) + 2
        argv = shlex.split(lines[0][2:])
        rest = lines[1:]
        stdin = b""
        if "^D" in rest:
            end = rest.index("^D")
            stdin = "".join(line + "\n" for line in rest[:end]).encode()
            rest = rest[end + 1 :]
        subset = bool(rest) and rest[0] == "%json-subset"
        contains = bool(rest) and rest[0] == "%contains"
        if subset or contains:
            rest = rest[1:]
        code = 0
        if rest and rest[-1].startswith("=> "):
            code = int(rest[-1][3:])
            rest = rest[:-1]
        out = [line for line in rest if not line.startswith("2> ") and line != "2>"]
        err = [line[3:] for line in rest if line.startswith("2> ") or line == "2>"]
        blocks.append(Block(path.name, start, argv, stdin, out, err, code, subset, contains))
    return blocks


def _contains(actual: Any, expected: Any) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and _contains(actual[k], v) for k, v in expected.items())
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(_contains(a, e) for a, e in zip(actual, expected, strict=True))
        )
    return type(actual) is type(expected) and actual == expected


def line_matches(expected: str, actual: str) -> bool:
    """Equal lines, where ``…`` in ``expected`` stands for any characters."""
    if "…" not in expected:
        return expected == actual
    return re.fullmatch(".*".join(map(re.escape, expected.split("…"))), actual) is not None


def lines_match(expected: list[str], actual: list[str], subsequence: bool = False) -> bool:
    """Line by line (``…`` wildcards), or (``subsequence``) every expected line found in order."""
    if not subsequence:
        return len(expected) == len(actual) and all(map(line_matches, expected, actual))
    it = iter(actual)
    return all(any(line_matches(e, a) for a in it) for e in expected)


ALL = [b for path in sorted(TRANSCRIPTS.glob("*.md")) for b in parse(path)]


def test_transcripts_exist() -> None:
    files = {b.file for b in ALL}
    assert len(files) >= 8, files
    assert {b.argv[1] for b in ALL} >= {"convert", "detect", "validate", "codes", "dialects", "schema", "mappings"}


@pytest.mark.parametrize("block", ALL, ids=[b.id for b in ALL])
def test_transcript(block: Block) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ENVGLOT_MAPPINGS_DIR"} | {"COLUMNS": "100"}
    assert block.argv[0] == "envglot"
    p = subprocess.run(
        [envglot_exe(), *block.argv[1:]], input=block.stdin, capture_output=True, cwd=ROOT, env=env, timeout=60
    )
    stdout = p.stdout.decode()
    if block.json_subset:
        expected = msgspec.json.decode("\n".join(block.stdout))
        assert _contains(msgspec.json.decode(stdout), expected), stdout
    else:
        assert lines_match(block.stdout, stdout.splitlines(), block.contains), stdout
    assert lines_match(block.stderr, p.stderr.decode().splitlines()), p.stderr.decode()
    assert p.returncode == block.exit_code, p.stderr.decode()


def test_parser_reads_every_part(tmp_path: Path) -> None:
    sample = tmp_path / "t.md"
    sample.write_text(
        "Intro.\n\n```\n% envglot detect 'a b.json'\n{}\n^D\ndotbot\n2> note: x\n=> 65\n```\n\n"
        '```json\n{"not": "a test"}\n```\n\n```\n% envglot schema dotbot\n%json-subset\n{}\n```\n'
    )
    first, second = parse(sample)
    assert first == Block("t.md", 4, ["envglot", "detect", "a b.json"], b"{}\n", ["dotbot"], ["note: x"], 65, False)
    assert (second.stdin, second.stdout, second.exit_code, second.json_subset) == (b"", ["{}"], 0, True)
    assert _contains({"a": [1, {"b": 2, "c": 3}], "d": 4}, {"a": [1, {"b": 2}]})
    assert not _contains({"a": [1, 2]}, {"a": [1]})
    assert not _contains({"a": 1}, {"a": True})
    assert line_matches("known: …)", "known: a, b)") and not line_matches("known: …)", "known: a, b")
    assert line_matches("a.b", "a.b") and not line_matches("a.b", "axb")
    assert lines_match(["x", "z…"], ["x", "y", "z1"], subsequence=True)
    assert not lines_match(["z", "x"], ["x", "y", "z"], subsequence=True)
    assert not lines_match(["x"], ["x", "y"])
    assert interleaves(["a", "…", "z"], ["a", "b", "c", "z"], []) and interleaves(["a", "…"], ["a"], ["e"]) is False
    assert interleaves(["a", "…", "e"], ["a", "b"], ["e"])


def interleaves(expected: list[str], stdout: list[str], stderr: list[str]) -> bool:
    """True if ``expected`` is stdout's and stderr's lines, each in its own order, merged.

    ``…`` in a line stands for any characters; a line that is just ``…`` for any number of stdout lines.
    """

    def go(e: int, o: int, r: int) -> bool:
        if e == len(expected):
            return o == len(stdout) and r == len(stderr)
        if expected[e] == "…":  # a line of its own: any further stdout lines (a list that grows with the registry)
            return any(go(e + 1, k, r) for k in range(o, len(stdout) + 1))
        if o < len(stdout) and line_matches(expected[e], stdout[o]) and go(e + 1, o + 1, r):
            return True
        return r < len(stderr) and line_matches(expected[e], stderr[r]) and go(e + 1, o, r + 1)

    return go(0, 0, 0)
