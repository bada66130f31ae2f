"""The long fuzz campaign: ``python scripts/fuzz.py --inputs 1000000 [--jobs 2] [--seed N] [--out DIR]``.

Mutated envelopes (seeded: input *i* of a run with ``--seed S`` is ``Mutator(S + i)``) go
through every public API entry point and, for a sample, the CLI commands (see
docs/fuzzing.md). Prints the figures, writes each failure group's shrunk reproducer and
``findings.json`` to ``--out`` (default ``fuzz-findings/``), and exits 1 if anything failed.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fuzz.campaign import Tally, run_seeds, write_findings  # noqa: E402

CHUNK = 250


def _work(args: tuple[int, int, int]) -> Tally:
    start, stop, cli_every = args
    return run_seeds(range(start, stop), cli_every=cli_every)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inputs", type=int, default=100_000, help="number of inputs (default 100000)")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    ap.add_argument("--out", type=Path, default=ROOT / "fuzz-findings", help="folder for reproducers")
    ap.add_argument("--cli-every", type=int, default=2000, help="run the CLI sample on every Nth input (0: never)")
    ap.add_argument("--shrink-budget", type=int, default=400, help="probe runs spent shrinking each group")
    a = ap.parse_args(argv)
    tasks = [(s, min(s + CHUNK, a.seed + a.inputs), a.cli_every) for s in range(a.seed, a.seed + a.inputs, CHUNK)]
    total = Tally()
    t0 = last = time.perf_counter()
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(a.jobs, maxtasksperchild=40) as pool:
        for part in pool.imap_unordered(_work, tasks):
            total.merge(part)
            now = time.perf_counter()
            if now - last > 30:
                last = now
                rate = total.inputs / (now - t0)
                print(
                    f"[{now - t0:7.0f} s] {total.inputs:,} inputs, {rate:,.0f}/s, {len(total.groups)} groups",
                    flush=True,
                )
    wall = time.perf_counter() - t0
    print(f"seed {a.seed}, jobs {a.jobs}, wall {wall:,.0f} s")
    print(
        f"inputs {total.inputs:,}  calls {total.calls:,}  CLI runs {total.cli_runs:,}  "
        f"inputs/s {total.inputs / wall:,.0f}"
    )
    print(f"failing inputs {total.failing_inputs:,}  failure groups {len(total.groups)}")
    by_kind: dict[str, int] = {}
    for name, g in total.groups.items():
        kind = name.split(":", 1)[0]
        by_kind[kind] = by_kind.get(kind, 0) + g.count
    for kind, n in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        print(f"  {n:>10,}  {kind}")
    for name, g in sorted(total.groups.items(), key=lambda kv: -kv[1].count):
        print(f"  {g.count:>10,}  {name}")
    if total.groups:
        rows = write_findings(total, a.out, a.shrink_budget)
        print(f"reproducers: {a.out}/ ({len(rows)} groups, findings.json)")
    return 1 if total.groups else 0


if __name__ == "__main__":
    sys.exit(main())
