#!/usr/bin/env python
"""Instructions per large document, by stage, for one pair on one or more source trees (callgrind).

    python benchmarks/large_instructions.py SRC [SRC ...] [--pair dotbot:response-v2] [--count 40]
        [--only success|failure] [--size large|medium|tiny] [--keep DIR]

Timings of a 50 KB conversion swing by tens of percent on a shared machine; instruction counts
do not. Each tree runs in one child under callgrind as ``tiny_instructions.py`` runs it
(:func:`tiny_instructions.counted`), on the benchmark corpus's ``--count`` large records of the
source (``breakdown.documents``; ``--only``: those the Converter answers as a success, or as a
failure; ``--size``: that size's records instead of the large ones). Each stage
runs over the records once, then five times between two marker calls, so
start-up, construction and the first pass cancel out. The stages are ``breakdown.py``'s, as
``Pipeline.convert`` runs them for a known source: the whole ``Converter.convert_bytes``; the
UTF-8 check (``check_input(depth=False)``); the top level's members parsed under the lowered
recursion budget (``members_within_depth``: the depth check; from ``KEYED_TOP_MIN`` bytes on, by
the source's ``WireDecoder.top_parser`` where it has one, as the straight line parses it); the
repeated-member arithmetic and the whitespace probe; the fused function (on the members from
``SPLIT_MIN``) and, inside it, the source's wire Struct (``WireDecoder.decode``); beside them
the pair's floor, its bare pair code (no UTF-8 or depth check; its reader
still makes the repeated-outcome test, since h-floor16) and the limit (the source's msgspec
pass-through), its decode and encode apart. Prints a Markdown table of thousands of instructions per
document: ``rest`` is the Converter less its stages (the pipeline's own code), ``fused: Python
and output`` the fused function less its wire Struct (the hooks and the output's bytes, which
the writer joins).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tiny_instructions import PASSES, counted

STAGES = ("Converter", "UTF-8 check", "members parse", "spans + probe", "fused function", "wire Struct")
STAGES += ("floor", "floor, bare", "limit", "limit decode", "limit encode")
PARTS = ("UTF-8 check", "members parse", "spans + probe", "fused function")
"""The stages that make up the Converter (its ``rest`` is the pipeline's own code)."""


def child(src: str, dst: str, count: int, only: str, size: str = "large") -> None:
    """Run every stage once, then PASSES times between two markers (``only``: the successes or
    the failures among the records, as the Converter's output says; ``""``: all)."""
    import gc

    import breakdown
    import floors
    import msgspec

    import envglot
    from envglot.context import Context
    from envglot.diagnostics import DISCARD
    from envglot.dialect import get_dialect
    from envglot.fields import bound_pair
    from envglot.limits import MAX_DEPTH, check_input, members_within_depth, spans_whole
    from envglot.pipeline import SPLIT_MIN
    from envglot.wire import may_be_loose

    dialect = get_dialect(src)
    items = breakdown.documents(src, size, count * 20)
    conv = envglot.Converter(to=dst, from_=src, unsupported="ignore")
    if only:
        target = get_dialect(dst)  # a success as the target's own outcome flag says (dotbot's is ``status``)
        items = [b for b in items if target.failed(conv.convert_bytes(b)) == (only == "failure")]
    conv.convert_bytes(items[0])
    pipe = conv.pipeline
    ctx = Context(pipe.mappings, DISCARD, pipe.mappings[src], pipe.synth, pipe.style == "compact")
    fused = bound_pair(dialect, pipe.dst, ctx)
    assert fused is not None and dialect.reading is not None
    reader = dialect.reading.decoder
    # the top level's parse as the straight line makes it: by the source's top parser where it has
    # one (a tree from before it: never), from KEYED_TOP_MIN bytes on, else the members parse
    top = getattr(reader, "top_parser", lambda: None)()
    least = getattr(importlib.import_module("envglot.toplevel"), "KEYED_TOP_MIN", 0) if top is not None else 0

    def parsed(b: bytes) -> Any:
        if top is None or len(b) < least:
            return members_within_depth(b, MAX_DEPTH)
        got = members_within_depth(b, MAX_DEPTH, top)
        return got if got[0] is not None and got[1] else members_within_depth(b, MAX_DEPTH)

    members = {b: parsed(b)[0] for b in items}
    split = {b: members[b] if len(b) >= SPLIT_MIN else None for b in items}
    wire = dialect.wire if dialect.wire is not None else dict[str, msgspec.Raw]
    decode = msgspec.json.Decoder(wire).decode
    encode = msgspec.json.Encoder().encode
    decoded = {b: decode(b) for b in items}
    floor, bare = floors.build(src, dst), floors.build(src, dst, checked=False)
    assert floor is not None and bare is not None
    stages = {
        "Converter": conv.convert_bytes,
        "UTF-8 check": lambda b: check_input(b, depth=False),
        "members parse": parsed,
        "spans + probe": lambda b: may_be_loose(b, members[b] is not None and spans_whole(b, members[b])),
        "fused function": lambda b: fused(b, split[b]),
        "wire Struct": lambda b: reader.decode(b, split[b]),
        "floor": floor,
        "floor, bare": bare,
        "limit": lambda b: encode(decode(b)),
        "limit decode": decode,
        "limit encode": lambda b: encode(decoded[b]),
    }
    print(len(items))  # the parent reads the count from the last line
    for name in STAGES:
        fn = stages[name]
        for b in items:
            fn(b)
        gc.collect()
        os.getppid()
        for _ in range(PASSES):
            for b in items:
                fn(b)
        os.getppid()


def measure(tree: Path, pair: str, count: int, only: str, out: Path, size: str = "large") -> tuple[list[int], int]:
    """The instruction count of each stage's PASSES passes on ``tree``, and the records counted."""
    args = ["--child", pair, "--count", str(count), "--only", only, "--size", size]
    totals, stdout = counted(tree, Path(__file__).resolve(), args, len(STAGES), out)
    return totals, int(stdout.split()[-1])


def main(argv: list[str] | None = None) -> None:
    """Parse arguments; run as the parent, or as the child under callgrind."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trees", type=Path, nargs="*", metavar="SRC")
    ap.add_argument("--pair", default="dotbot:response-v2", help="SOURCE:TARGET")
    ap.add_argument("--count", type=int, default=40, help="large records")
    ap.add_argument("--only", choices=("", "success", "failure"), default="", help="only the successes or failures")
    ap.add_argument("--size", choices=("large", "medium", "tiny"), default="large", help="the records' size class")
    ap.add_argument("--keep", type=Path, help="keep the callgrind dumps under this folder")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(*args.child.split(":", 1), args.count, args.only, args.size)
        return
    if not args.trees:
        ap.error("one or more source trees are required")
    src, dst = args.pair.split(":", 1)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        runs = [
            measure(t, args.pair, args.count, args.only, work / str(i), args.size) for i, t in enumerate(args.trees)
        ]
    per = [dict(zip(STAGES, (n / (PASSES * docs) / 1000 for n in c), strict=True)) for c, docs in runs]
    for p in per:
        p["rest"] = p["Converter"] - sum(p[k] for k in PARTS)
        p["fused: Python and output"] = p["fused function"] - p["wire Struct"]
        p["floor / Converter"] = p["floor"] / p["Converter"]
        p["limit / Converter"] = p["limit"] / p["Converter"]
    print(f"{src} → {dst}, {args.size} ({args.only or 'all'}: {runs[0][1]} records), K instructions per document")
    print("| stage | " + " | ".join(map(str, args.trees)) + " |")
    print("|---|" + "---:|" * len(args.trees))
    for name in per[0]:
        fmt = "{:.3f}" if "/" in name else "{:.1f}"
        print(f"| {name} | " + " | ".join(fmt.format(p[name]) for p in per) + " |")
    print(json.dumps(per))


if __name__ == "__main__":
    main()
