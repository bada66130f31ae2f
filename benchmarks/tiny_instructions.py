#!/usr/bin/env python
"""Instructions per tiny document for every bundled ordered pair, on two or more source trees (callgrind).

    python benchmarks/tiny_instructions.py OLD_SRC NEW_SRC [MORE_SRC ...] [--pairs errorcode:dotbot,...] [--count 200]
        [--size tiny|medium|large]

Wall and CPU times at tiny move with a shared machine's load by more than a change does;
instruction counts do not. Each tree runs in one child process under ``valgrind
--tool=callgrind`` with ``PYTHONPATH=<src>`` and ``PYTHONHASHSEED=0``, on the same bytes: the
tiny records of ``compare_commits.py``'s corpus (``--count`` per source, generated once here;
``--size medium`` or ``large`` takes that size's records instead).
For each ordered pair (as ``compare_commits.py`` takes them: source != target, the target
writable on both trees) the child builds ``Converter(to, from_=src, unsupported="ignore")``,
converts the records once through ``convert_bytes``, then five more times; callgrind dumps its
counters at each boundary (``--dump-before`` a marker function the child calls), and the five
passes' count over ``5 * count`` documents is the figure: the first pass, the ``Converter``'s
construction and the process's start-up are left out, as the difference of a one-pass and a
six-pass run leaves them out. Prints a Markdown table (thousands of instructions per document on
each tree, and the last tree's over the first's); ``--keep DIR`` keeps the dumps (one folder per
tree, in order) for ``callgrind_annotate``. The corpus is built for the dialects the first tree
registers.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
PASSES = 5
MARKER = "getppid"
"""The C function the child calls at each boundary; callgrind dumps before entering it."""


def child(corpus_file: Path, pairs: list[tuple[str, str]]) -> None:
    """Convert each pair's records once, then PASSES times, marking each boundary."""
    import gc

    import envglot

    groups = json.loads(corpus_file.read_text())["groups"]
    records = {g["dialect"]: [bytes.fromhex(h) for h in g["records"]] for g in groups}
    for src, dst in pairs:
        fn = envglot.Converter(to=dst, from_=src, unsupported="ignore").convert_bytes
        items = records[src]
        for b in items:
            fn(b)
        gc.collect()
        os.getppid()  # dump: everything up to here (start-up, earlier pairs, this warm-up)
        for _ in range(PASSES):
            for b in items:
                fn(b)
        os.getppid()  # dump: the PASSES passes


def counted(src: Path, script: Path, args: list[str], parts: int, out: Path) -> tuple[list[int], str]:
    """Run ``script args`` under callgrind with ``src`` on ``PYTHONPATH``; the instruction count
    between each of its ``parts`` pairs of marker calls, and its standard output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENVGLOT_")}
    env["PYTHONPATH"] = str(Path(src).resolve())  # the child runs elsewhere: a relative tree would miss
    env["PYTHONHASHSEED"] = "0"
    out.mkdir(parents=True, exist_ok=True)
    cmd = ["valgrind", "--tool=callgrind", f"--dump-before={MARKER}", f"--callgrind-out-file={out}/callgrind.out.%p"]
    cmd += [sys.executable, str(script), *args]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, cwd=tempfile.gettempdir())
    if proc.returncode != 0:
        raise SystemExit(f"callgrind child on {src} failed:\n{proc.stderr[-4000:]}")
    dumps = sorted(out.glob("callgrind.out.*.*"), key=lambda p: int(p.name.rsplit(".", 1)[1]))
    totals = [int(re.search(r"^(?:totals|summary): (\d+)", p.read_text(), re.M).group(1)) for p in dumps]  # type: ignore[union-attr]
    if len(totals) < 2 * parts:
        raise SystemExit(f"expected {2 * parts} dumps from {src}, found {len(totals)}")
    return totals[1 : 2 * parts : 2], proc.stdout


def measure(src: Path, corpus_file: Path, pairs: list[tuple[str, str]], out: Path) -> list[int]:
    """Run the child under callgrind on ``src``; the instruction count of each pair's PASSES passes."""
    spec = ",".join(f"{s}:{d}" for s, d in pairs)
    args = ["--child", str(corpus_file), "--pairs", spec]
    return counted(src, Path(__file__).resolve(), args, len(pairs), out)[0]


def parsed(
    ap: argparse.ArgumentParser, argv: list[str] | None, pairs: str, run: Callable[[Path, list[tuple[str, str]]], None]
) -> tuple[argparse.Namespace, list[tuple[str, str]]] | None:
    """``ap``'s arguments with ``--pairs`` (default ``pairs``; empty: every bundled ordered pair),
    ``--count`` and the child's ``--child`` added, and the pairs; ``None`` when this process is
    the child under callgrind (``run(corpus file, pairs)`` has run)."""
    ap.add_argument("--pairs", default=pairs, help="SOURCE:TARGET,... (default: every bundled ordered pair)")
    ap.add_argument("--count", type=int, default=200, help="records per source")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    chosen = [tuple(p.split(":", 1)) for p in args.pairs.split(",") if p]
    if args.child:
        run(args.child, chosen)  # type: ignore[arg-type]
        return None
    return args, chosen  # type: ignore[return-value]


def main(argv: list[str] | None = None) -> None:
    """Parse arguments; run as the parent, or as the child under callgrind."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trees", type=Path, nargs="*", metavar="SRC")
    ap.add_argument("--keep", type=Path, help="keep the callgrind dumps under this folder")
    ap.add_argument("--size", choices=("tiny", "medium", "large"), default="tiny", help="the records' size")
    got = parsed(ap, argv, "", child)
    if got is None:
        return
    args, pairs = got
    if len(args.trees) < 2:
        ap.error("two or more source trees are required")
    sys.path.insert(0, str(HERE))
    from compare_commits import write_corpus

    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        corpus_file = Path(tmp) / "corpus.json"
        info = write_corpus(corpus_file, args.trees[0], {args.size: args.count}, seed=20260101)
        if not pairs:
            pairs = [(s, d) for s in info["dialects"] for d in info["targets"] if s != d]
        counts = [measure(t, corpus_file, pairs, work / str(i)) for i, t in enumerate(args.trees)]  # type: ignore[arg-type]
    docs = PASSES * args.count
    print("| pair | " + " | ".join(map(str, args.trees)) + " | last / first |")
    print("|---|" + "---:|" * (len(args.trees) + 1))
    for (s, d), *row in zip(pairs, *counts, strict=True):
        cells = " | ".join(f"{n / docs / 1000:.1f}" for n in row)
        print(f"| {s} → {d} | {cells} | {row[-1] / row[0]:.2f} |")


if __name__ == "__main__":
    main()
