"""Generate mixed corpora for the migration tests: every source dialect, malformed records,
nested directories, .json/.jsonl/.ndjson and their .gz forms, CRLF and blank lines.

Every record's expected source dialect is known by construction (the bundled example it
came from, or the legacy-v1 variant generator), never by running envglot's detection.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from envglot.dialect import dialect_names

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DIALECTS = dialect_names()
"""Every registered dialect; those with bundled examples (``examples/<name>/``) contribute records."""


def _compact(raw: bytes) -> bytes:
    return json.dumps(json.loads(raw), separators=(",", ":"), ensure_ascii=False).encode()


def examples() -> list[tuple[str, str, bytes]]:
    """``(dialect, file name, original bytes)`` of every bundled example, in a stable order."""
    out = []
    for d in DIALECTS:
        for p in sorted((EXAMPLES / d).glob("*.json")):
            out.append((d, p.name, p.read_bytes()))
    return out


def legacy_variant(i: int, pad: int = 0) -> bytes:
    """The i-th generated legacy-v1 record (shape A flavours and shape B), one line.

    ``pad`` adds a payload field of that many characters (to make records bigger).
    """
    k = i % 7
    if k == 0:
        doc: dict[str, object] = {"specs": [{"spec_id": f"spec-{i}", "status": "active"}], "count": 1}
    elif k == 1:
        doc = {"error": f"Task not found: task-{i}"}
    elif k == 2:
        doc = {"found": i % 2 == 0, "spec_id": f"spec-{i}", "task_id": f"task-{i}", "title": "Add login ü"}
    elif k == 3:
        doc = {
            "success": True,
            "schema_version": "1.0.0",
            "query_type": "search",
            "count": 1,
            "results": [i],
            "error": None,
        }
    elif k == 4:
        doc = {"specs": [], "count": 0, "error": f"Specs directory not found: /repo/{i}"}
    elif k == 5:
        doc = {
            "success": True,
            "data": {
                "tasks": [{"id": f"task-{i}"}],
                "_meta": {
                    "version": "1.0",
                    "pagination": {"offset": i, "limit": 50, "total": i + 1, "has_more": False},
                },
                "_warnings": ["spec has no phases"],
            },
            "error": None,
        }
    else:
        doc = {"success": False, "data": {}, "error": f"Spec spec-{i} is locked"}
    if pad:
        payload = doc["data"] if k in (5, 6) else doc
        assert isinstance(payload, dict)
        payload["notes"] = "n" * pad
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()


MALFORMED: tuple[tuple[bytes, str | None], ...] = (
    (b"not json at all", None),
    (b"[1, 2, 3]", None),
    (b'{"truncated": ', None),
    (b'\xff\xfe{"bad utf-8": 1}', None),
    (b'{"success": "yes"}', "legacy-v1"),
    (b'{"success":true,"data":{},"error":"set on success","meta":{"version":"response-v2"}}', "response-v2"),
)
"""Records that cannot be migrated, with the dialect a reject names (None: undetected)."""


def mcp_wrapped(envelope: bytes) -> bytes:
    """A stored MCP CallToolResult carrying ``envelope`` as structuredContent and text."""
    text = envelope.decode()
    return json.dumps(
        {"content": [{"type": "text", "text": text}], "structuredContent": json.loads(envelope), "isError": False},
        separators=(",", ":"),
    ).encode()


def mixed_records(n: int, *, start: int = 0, pad: int = 0) -> Iterator[tuple[str, bytes]]:
    """``n`` one-line records cycling through every example and legacy-v1 variants."""
    ex = [(d, _compact(b)) for d, _, b in examples()]
    for i in range(start, start + n):
        if i % 3 == 0:
            yield "legacy-v1", legacy_variant(i, pad)
        else:
            d, b = ex[i % len(ex)]
            yield d, b


@dataclass
class Corpus:
    """What a generated corpus holds, known by construction."""

    root: Path
    records: int = 0
    by_dialect: Counter[str] = field(default_factory=Counter)
    malformed: list[tuple[str, int | None, bytes, str | None]] = field(default_factory=list)
    """(file relative to root, line or None, original bytes, expected reject dialect)."""
    files: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    """Files in the tree that the default --include must skip."""
    unwrapped: int = 0

    @property
    def valid(self) -> int:
        return self.records - len(self.malformed)


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.endswith(".gz"):
        with gzip.GzipFile(path, "wb", mtime=0) as fh:
            fh.write(data)
    else:
        path.write_bytes(data)


def make_corpus(root: Path, lines_per_file: int = 60) -> Corpus:
    """Write a mixed corpus under ``root`` and describe it."""
    c = Corpus(root=root)

    def add(rel: str, data: bytes) -> None:
        _write(root / rel, data)
        c.files.append(rel)

    # every example as its own .json document (pretty-printed originals kept as they are)
    for d, name, raw in examples():
        add(f"docs/{d}/{name}", raw)
        c.records += 1
        c.by_dialect[d] += 1
    # a gzipped document and a malformed document
    ex_d, _, ex_raw = examples()[0]
    add("docs/packed/first.json.gz", ex_raw)
    c.records += 1
    c.by_dialect[ex_d] += 1
    add("docs/broken.json", b'{"success": true, "data": ')
    c.records += 1
    c.malformed.append(("docs/broken.json", None, b'{"success": true, "data": ', None))

    # JSON Lines in nested directories, plain and gzipped, with malformed lines sprinkled in
    def lines_file(rel: str, start: int, crlf: bool = False, blank: bool = False, last_newline: bool = True) -> None:
        out: list[bytes] = []
        line = 0
        for j, (d, rec) in enumerate(mixed_records(lines_per_file, start=start)):
            if blank and j % 10 == 5:
                out.append(b"   ")
                line += 1
            if j % 13 == 7:
                bad, bad_d = MALFORMED[(start + j) % len(MALFORMED)]
                out.append(bad)
                line += 1
                c.records += 1
                c.malformed.append((rel, line, bad, bad_d))
            out.append(rec)
            line += 1
            c.records += 1
            c.by_dialect[d] += 1
        if start == 0:
            wrapped = mcp_wrapped(legacy_variant(2))
            out.append(wrapped)
            c.records += 1
            c.by_dialect["legacy-v1"] += 1
            c.unwrapped += 1
        sep = b"\r\n" if crlf else b"\n"
        data = sep.join(out) + (sep if last_newline else b"")
        add(rel, data)

    lines_file("logs/2025/11/day1.jsonl", 0)
    lines_file("logs/2025/11/day2.jsonl.gz", 100)
    lines_file("logs/2025/12/win.ndjson", 200, crlf=True, blank=True)
    lines_file("logs/2025/12/tail.ndjson.gz", 300, last_newline=False)
    lines_file("logs/deep/a/b/c/all-legacy.jsonl", 400)
    # files the default include patterns skip
    for rel in ("logs/README.txt", "logs/2025/notes.md"):
        _write(root / rel, b"{}\n")
        c.ignored.append(rel)
    return c


def write_large_jsonl(path: Path, n: int, pad: int = 0) -> int:
    """Stream ``n`` mixed records (every dialect; legacy ones padded by ``pad``) to ``path``; returns its size."""
    with open(path, "wb") as fh:
        buf: list[bytes] = []
        for _, rec in mixed_records(n, pad=pad):
            buf.append(rec)
            if len(buf) >= 4096:
                fh.write(b"\n".join(buf) + b"\n")
                buf.clear()
        if buf:
            fh.write(b"\n".join(buf) + b"\n")
    return path.stat().st_size
