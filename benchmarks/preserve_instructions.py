#!/usr/bin/env python
"""Instructions per document of ``preserve=True`` against ``"ignore"``, by part, on source trees (callgrind).

    python benchmarks/preserve_instructions.py SRC [MORE_SRC ...] [--pairs dotbot:response-v2,...]
        [--size tiny|medium|large] [--count 100] [--parts | --outcomes]

Timed ratios at tiny move with a shared machine's load by more than a change does; instruction
counts do not. For each tree and ordered pair, in one child process under ``valgrind
--tool=callgrind`` (``tiny_instructions.py``'s runner: ``PYTHONPATH=<src>``, ``PYTHONHASHSEED=0``,
the same records), the reused ``Converter(to, from_=src, unsupported="ignore")`` and the same with
``preserve=True`` each convert the records once, then five more times; the five passes' count
over ``5 * count`` documents is the figure. ``--parts`` (the last tree only, which must have this
tree's :mod:`envglot.residue` API) adds the version 3-5 residue's parts, each called alone on the
same records: the digest the residue records, the residue (``residue.whole``, the digest
included), its placement in the output (opened, set at the target's slot, encoded) and the
target's ``seal`` of the placed output. ``--outcomes``: successes and failures apart (a record
is a failure when the target's ``failed`` says so of its ``ignore`` output), each group counted as
above. Prints a Markdown table, thousands of instructions per document.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from tiny_instructions import PASSES, counted  # noqa: E402

PARTS = ("digest", "residue", "placement", "seal")


def _passes(fn: Callable[[bytes], object], items: list[bytes]) -> None:
    """One warm-up pass, then PASSES counted passes between two dumps."""
    for b in items:
        fn(b)
    gc.collect()
    os.getppid()  # dump: everything before
    for _ in range(PASSES):
        for b in items:
            fn(b)
    os.getppid()  # dump: the PASSES passes


def part_functions(src: str, dst: str, items: list[bytes]) -> list[Callable[[bytes], object]]:
    """The residue's parts (:data:`PARTS`) as one-argument functions over ``items``."""
    import envglot
    from envglot import residue
    from envglot.dialect import get_dialect
    from envglot.limits import members_of

    ignore = envglot.Converter(to=dst, from_=src, unsupported="ignore")
    m = ignore.pipeline.mappings
    there = m[dst]
    slot = list(residue.slot_path(there.shape.residue))
    takes = residue.take_paths(m[src].fields, there.fields, there.shape.residue)
    outs = {x: ignore.convert_bytes(x) for x in items}
    tops = {x: members_of(x) for x in items}
    outs_top = {x: residue.open_document(outs[x]) for x in items}
    made = {x: residue.whole(src, x, tops[x], outs_top[x], takes) for x in items}
    kept = {x: residue.decode_residue(made[x], "$") for x in items}
    taken = {
        x: (
            bytes(kept[x].set[0][1]),
            *(bytes(residue.value_at(outs_top[x], residue.parse_path(t)) or b"") for _, t in kept[x].take),
        )
        for x in items
    }
    target = get_dialect(dst)

    def signed(x: bytes) -> str:
        if kept[x].v >= 5:
            return residue.digest_bytes(src, taken[x][0], taken[x][1:])
        if kept[x].v >= 4:
            return residue.digest_parts(src, taken[x][0], taken[x][1:])
        return residue.digest(src, x)

    def placed(x: bytes) -> bytes:
        doc = residue.open_document(outs[x])
        residue.set_path(doc, slot, made[x])
        return residue.encode(doc)

    done = {x: placed(x) for x in items}
    return [
        signed,
        lambda x: residue.whole(src, x, tops[x], outs_top[x], takes),
        placed,
        lambda x: target.seal(done[x]),
    ]


OUTCOMES = ("success", "failure")


def child(corpus_file: Path, pairs: list[tuple[str, str]], parts: bool, outcomes: bool = False) -> None:
    """Each pair's ``ignore`` and ``preserve`` passes (and its parts); ``outcomes``: for its
    successes, then its failures, printing each group's size (one JSON list a pair)."""
    import envglot

    groups = json.loads(corpus_file.read_text())["groups"]
    records = {g["dialect"]: [bytes.fromhex(h) for h in g["records"]] for g in groups}
    for src, dst in pairs:
        ignore = envglot.Converter(to=dst, from_=src, unsupported="ignore")
        preserve = envglot.Converter(to=dst, from_=src, unsupported="ignore", preserve=True)
        items = records[src]
        if outcomes:
            failed = ignore.pipeline.dst.failed
            failures = [x for x in items if failed(ignore.convert_bytes(x))]
            split = ([x for x in items if x not in failures], failures)
            print(json.dumps([len(g) for g in split]), flush=True)
            for group in split:
                _passes(ignore.convert_bytes, group)
                _passes(preserve.convert_bytes, group)
            continue
        _passes(ignore.convert_bytes, items)
        _passes(preserve.convert_bytes, items)
        if parts:
            for fn in part_functions(src, dst, items):
                _passes(fn, items)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trees", type=Path, nargs="*", metavar="SRC")
    ap.add_argument("--pairs", default="dotbot:response-v2", help="SOURCE:TARGET,...")
    ap.add_argument("--count", type=int, default=100, help="records per source")
    ap.add_argument("--size", choices=("tiny", "medium", "large"), default="tiny")
    apart = ap.add_mutually_exclusive_group()
    apart.add_argument("--parts", action="store_true", help="the residue's parts too (the last tree)")
    apart.add_argument("--outcomes", action="store_true", help="successes and failures apart")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    pairs = [tuple(p.split(":", 1)) for p in args.pairs.split(",") if p]
    if args.child:
        child(args.child, pairs, args.parts, args.outcomes)  # type: ignore[arg-type]
        return
    if not args.trees:
        ap.error("one or more source trees are required")
    from compare_commits import write_corpus

    if args.outcomes:
        _by_outcome(args.trees, pairs, args.size, args.count)
        return

    per_pair = 2 + (len(PARTS) if args.parts else 0)
    with tempfile.TemporaryDirectory() as tmp:
        corpus_file = Path(tmp) / "corpus.json"
        write_corpus(corpus_file, args.trees[0], {args.size: args.count}, seed=20260101)
        spec = ",".join(f"{s}:{d}" for s, d in pairs)
        counts = []
        for i, tree in enumerate(args.trees):
            with_parts = args.parts and i == len(args.trees) - 1
            extra = ["--parts"] if with_parts else []
            n = len(pairs) * (per_pair if with_parts else 2)
            got, _ = counted(
                tree,
                Path(__file__).resolve(),
                ["--child", str(corpus_file), "--pairs", spec, *extra],
                n,
                Path(tmp) / str(i),
            )
            counts.append((got, with_parts))
    docs = PASSES * args.count
    head = ["pair", "tree", "ignore", "preserve", "preserve / ignore", *(PARTS if args.parts else ())]
    print("| " + " | ".join(head) + " |")
    print("|---|---|" + "---:|" * (len(head) - 2))
    for p, (s, d) in enumerate(pairs):
        for tree, (got, with_parts) in zip(args.trees, counts, strict=True):
            per = per_pair if with_parts else 2
            row = [n / docs / 1000 for n in got[p * per : (p + 1) * per]]
            cells = [f"{row[0]:.1f}", f"{row[1]:.1f}", f"{row[1] / row[0]:.2f}", *(f"{v:.1f}" for v in row[2:])]
            if args.parts and not with_parts:
                cells += [""] * len(PARTS)
            print(f"| {s} → {d} | {tree} | " + " | ".join(cells) + " |")


def _by_outcome(trees: list[Path], pairs: list[tuple[str, str]], size: str, count: int) -> None:
    """``--outcomes``: each tree's counts, successes and failures apart, as a Markdown table."""
    from compare_commits import write_corpus

    spec = ",".join(f"{s}:{d}" for s, d in pairs)
    rows: list[tuple[list[int], list[list[int]]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        corpus_file = Path(tmp) / "corpus.json"
        write_corpus(corpus_file, trees[0], {size: count}, seed=20260101)
        for i, tree in enumerate(trees):
            args = ["--child", str(corpus_file), "--pairs", spec, "--outcomes"]
            got, out = counted(tree, Path(__file__).resolve(), args, 4 * len(pairs), Path(tmp) / str(i))
            rows.append((got, [json.loads(line) for line in out.splitlines() if line.startswith("[")]))
    print("| pair | tree | outcome | records | ignore | preserve | preserve / ignore |")
    print("|---|---|---|---:|---:|---:|---:|")
    for p, (s, d) in enumerate(pairs):
        for tree, (got, sizes) in zip(trees, rows, strict=True):
            for g, outcome in enumerate(OUTCOMES):
                docs = PASSES * sizes[p][g]
                if not docs:
                    print(f"| {s} → {d} | {tree} | {outcome} | 0 | – | – | – |")
                    continue
                ignore, preserve = (n / docs / 1000 for n in got[4 * p + 2 * g : 4 * p + 2 * g + 2])
                print(
                    f"| {s} → {d} | {tree} | {outcome} | {sizes[p][g]} | {ignore:.1f} | {preserve:.1f} | "
                    f"{preserve / ignore:.2f} |"
                )


if __name__ == "__main__":
    main()
