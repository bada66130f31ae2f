#!/usr/bin/env python
"""Instructions per tiny document in each part of a forced source's straight entry (callgrind).

    python benchmarks/entry_parts.py SRC [--pairs dotbot:response-v2,errorcode:dotbot] [--count 200]

For each pair, on ``tiny_instructions.py``'s tiny records (the same corpus and seed), the reused
``Converter(to, from_=src, unsupported="ignore").convert_bytes`` and then each part of the entry
called alone as the entry calls it (``pipeline._straight``'s forced function): the input checks
(``isascii``; for a document that is not ASCII, its one decode, ``check_input`` past
``UTF8_CHUNK``), the
members' parse under the depth budget (``members_within_depth``), the repeated-member test
(``spans_whole``), the whitespace probe (``may_be_loose``), the wrapper test
(``pipeline.holds_any``), the fused function (``fields.bound_pair``; of it the source's wire
decode), the rival detection (``detect.read_rival``, as the entry generates it; none asked
where it can name no dialect). Each in one child under ``valgrind --tool=callgrind`` with
``PYTHONPATH=SRC``, five passes over the records, less an empty call's count; "rest" is the whole
less the parts (the entry's own bytecode and calls). Thousands of instructions per document.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PASSES = 5


def parts(src: str, dst: str, items: list[bytes]) -> list[tuple[str, Callable[..., Any], list[tuple[Any, ...]]]]:
    """``(name, function, arguments per record)`` for each part, as the forced entry calls it."""
    import envglot
    from envglot.context import Context
    from envglot.detect import JSONRPC_MARKER, MCP_MARKERS, read_rival
    from envglot.diagnostics import DISCARD
    from envglot.fields import bound_pair
    from envglot.limits import UTF8_CHUNK, check_input, members_within_depth, spans_whole
    from envglot.pipeline import SPLIT_MIN, holds_any
    from envglot.wire import may_be_loose

    conv = envglot.Converter(to=dst, from_=src, unsupported="ignore")
    for b in items:
        conv.convert_bytes(b)
    p = conv.pipeline  # the fused function bound as the pipeline binds it (a DISCARD context)
    assert p.src is not None
    fused = bound_pair(p.src, p.dst, Context(p.mappings, DISCARD, p.mappings[src], p.synth, True))
    assert fused is not None, "this pair takes the hub"
    wrapped = frozenset((*MCP_MARKERS, JSONRPC_MARKER))
    rival = read_rival(p.registry, p.src, wrapped)

    def asked_nothing(m: Any) -> None:  # the entry asks no rival: as cheap as the empty call
        return None

    def checked(d: bytes, md: int = p.max_depth) -> Any:
        return d if d.isascii() else d.decode() if len(d) <= UTF8_CHUNK else check_input(d, md, depth=False)

    members = [members_within_depth(b, p.max_depth)[0] for b in items]
    one = [(b,) for b in items]
    both = list(zip(items, members, strict=True))
    return [
        ("whole", conv.convert_bytes, one),
        ("input checks", checked, one),
        ("members parse (depth)", members_within_depth, [(b, p.max_depth) for b in items]),
        ("repeated-member test", spans_whole, both),
        ("whitespace probe", may_be_loose, [(b, True) for b in items]),
        ("wrapper test", holds_any(wrapped), [(m,) for m in members]),
        ("fused function", fused, [(b,) if len(b) < SPLIT_MIN else (b, m) for b, m in both]),
        (
            "of it: wire decode",
            p.src.reading.decoder.decode,
            [(b, m if len(b) >= SPLIT_MIN else None) for b, m in both],
        ),
        ("rival detection", asked_nothing if rival is None else rival, [(m,) for m in members]),
    ]


def child(corpus_file: Path, pairs: list[tuple[str, str]]) -> None:
    """Run each part PASSES times over the records (and an empty call), marking each boundary."""
    groups = json.loads(corpus_file.read_text())["groups"]
    records = {g["dialect"]: [bytes.fromhex(h) for h in g["records"]] for g in groups if g["size"] == "tiny"}

    def nop(*a: Any) -> None:
        return None

    for src, dst in pairs:
        measured = parts(src, dst, records[src])
        assert tuple(name for name, _, _ in measured) == NAMES, "NAMES is the parent's reading of these dumps"
        for _, fn, args in [("empty", nop, [(b,) for b in records[src]]), *measured]:
            for a in args:
                fn(*a)
            os.getppid()
            for _ in range(PASSES):
                for a in args:
                    fn(*a)
            os.getppid()


NAMES = (
    "whole",
    "input checks",
    "members parse (depth)",
    "repeated-member test",
    "whitespace probe",
    "wrapper test",
    "fused function",
    "of it: wire decode",
    "rival detection",
)
"""The measured parts, in the child's order; the table's last column, "rest", is what the whole
leaves over."""
PARTS = len(NAMES) + 1
"""Marker pairs the child makes per pair: each part, and one more (see :func:`child`)."""


def main(argv: list[str] | None = None) -> None:
    """Parse arguments; run as the parent, or as the child under callgrind."""
    sys.path.insert(0, str(HERE))
    from tiny_instructions import counted, parsed

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tree", type=Path, nargs="?", metavar="SRC")
    got = parsed(ap, argv, "dotbot:response-v2,errorcode:dotbot", child)
    if got is None:
        return
    args, pairs = got
    if args.tree is None:
        ap.error("a source tree is required")
    from compare_commits import write_corpus

    with tempfile.TemporaryDirectory() as tmp:
        corpus_file = Path(tmp) / "corpus.json"
        write_corpus(corpus_file, args.tree, {"tiny": args.count}, seed=20260101)
        spec = ",".join(f"{s}:{d}" for s, d in pairs)
        child_args = ["--child", str(corpus_file), "--pairs", spec]
        counts = counted(args.tree, Path(__file__).resolve(), child_args, PARTS * len(pairs), Path(tmp) / "dumps")[0]
    docs = PASSES * args.count
    names = list(NAMES)
    print("| pair | " + " | ".join(names) + " | rest |")
    print("|---|" + "---:|" * (len(names) + 1))
    per = PARTS
    for i, (s, d) in enumerate(pairs):
        row = counts[i * per : (i + 1) * per]
        empty = row[0]
        net = [(n - empty) / docs / 1000 for n in row[1:]]
        rest = net[0] - sum(net[1:]) + net[names.index("of it: wire decode")]
        print(f"| {s} → {d} | " + " | ".join(f"{x:.1f}" for x in net) + f" | {rest:.1f} |")


if __name__ == "__main__":
    main()
