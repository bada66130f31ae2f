"""Bounded echoes (issue 25): a multi-megabyte value in any field of any dialect never reaches a
message whole. Every line ``validate``, ``convert``, ``detect`` and ``migrate`` print about such
documents (stdout of the reporting commands, stderr of all, ``migrate``'s ``--log`` and its
rejects' messages) stays within a few hundred bytes, and so does every line of the proxy's log
when an upstream answers with such documents."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from envelopes import sample_files
from envglot.dialect import dialect_names, writable_names

BIG = "E" * 2_000_000 + "\u00e9"
LINE_LIMIT = 700
"""Bytes a message line may take: the cut message (500 characters) plus its file and path prefix."""
PER_DIALECT = 6
"""String fields per dialect that get the huge value (the first ones in document order, and
every field named like a code, status or schema marker)."""
_MARKERS = ("code", "status", "schema_id", "error_code", "error_type", "type", "version", "title")


def _strings(v: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(v, dict):
        return [p for k, x in v.items() for p in _strings(x, (*at, k))]
    if isinstance(v, list):
        return [p for i, x in enumerate(v) for p in _strings(x, (*at, i))]
    return [at] if isinstance(v, str) else []


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    doc = msgspec.json.decode(msgspec.json.encode(doc))
    node = doc
    for seg in path[:-1]:
        node = node[seg]
    node[path[-1]] = value
    return doc


def _variants(dialect: str) -> list[bytes]:
    """A golden document of ``dialect`` once per chosen string field, that field made huge."""
    files = sample_files(dialect)
    assert files, f"{dialect} has no golden document"
    doc = msgspec.json.decode(files[0].read_bytes())
    paths = _strings(doc)
    marked = [p for p in paths if p and p[-1] in _MARKERS]
    chosen = list(dict.fromkeys([*marked, *paths]))[:PER_DIALECT]
    out = [msgspec.json.encode(_set(doc, p, BIG)) for p in chosen]
    out.append(msgspec.json.encode({**doc, BIG[:1_000_000]: 1}) if isinstance(doc, dict) else out[0])  # a huge key
    return out


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    exe = Path(sys.executable).with_name("envglot")
    env = {k: v for k, v in os.environ.items() if k != "ENVGLOT_MAPPINGS_DIR"}
    return subprocess.run([str(exe), *args], capture_output=True, cwd=cwd, env=env, timeout=300)


def _long(out: bytes) -> list[str]:
    return [f"{len(line)} bytes: {line[:160]!r}…" for line in out.splitlines() if len(line) > LINE_LIMIT]


@pytest.mark.parametrize("dialect", dialect_names())
def test_huge_values_are_never_echoed_whole(dialect: str, tmp_path: Path) -> None:
    docs = tmp_path / "in"
    docs.mkdir()
    (docs / "docs.jsonl").write_bytes(b"\n".join(_variants(dialect)) + b"\n")
    target = next(t for t in writable_names() if t != dialect)
    runs = {
        "validate": _run("validate", "--jsonl", "docs.jsonl", cwd=docs),
        "detect": _run("detect", "docs.jsonl", cwd=docs),
        "convert": _run("convert", "--jsonl", "-t", target, "-o", str(tmp_path / "out.jsonl"), "docs.jsonl", cwd=docs),
        "migrate": _run("migrate", "--check", "-j", "1", "-t", target, str(docs), cwd=tmp_path),
        "migrate --log": _run(
            "migrate",
            *("-j", "1", "-t", target, "--unsupported", "raise", "-o", str(tmp_path / "out")),
            *("--log", str(tmp_path / "log.jsonl"), "--rejects", str(tmp_path / "rejects.jsonl"), str(docs)),
            cwd=tmp_path,
        ),
    }
    long = {name: _long(p.stderr) + _long(p.stdout) for name, p in runs.items()}
    long["--log"] = _long(b"\n".join(_record_fields(tmp_path / "log.jsonl")))
    rejects = tmp_path / "rejects.jsonl"  # created when a record is refused (lossy, --unsupported raise)
    long["rejects"] = _long(b"\n".join(_record_fields(rejects))) if rejects.is_file() else []
    assert not any(long.values()), long
    assert runs["validate"].stdout and runs["detect"].stdout  # they did report on the documents
    assert (tmp_path / "log.jsonl").stat().st_size


def _record_fields(path: Path) -> list[bytes]:
    """Every member of every JSON line of a ``--log`` or rejects file (a diagnostics list member
    by member), one JSON value each, without a reject's own record (``original``, ``original_b64``),
    which the rejects file keeps whole by design: each is a message or what it names."""
    out: list[bytes] = []
    for line in path.read_bytes().splitlines():
        rec = msgspec.json.decode(line)
        for k, v in rec.items():
            if k in ("original", "original_b64"):
                continue
            out += [msgspec.json.encode(d) for d in v] if k == "diagnostics" else [msgspec.json.encode(v)]
    return out
