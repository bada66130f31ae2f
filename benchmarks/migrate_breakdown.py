"""Where a record of ``migrate -j 1`` spends its time, against the in-memory Converter.

    python benchmarks/migrate_breakdown.py [--per-dialect N] [--rounds R] [--repeat K] [--to TARGET]

On one cycle of the benchmark's migration mix (``corpus.jsonl_mix`` over the quick corpus, the
sources ``run.py``'s migrate section uses), in the measuring thread's CPU time, best of
``--rounds`` passes, µs per record:

    convert_bytes   Converter(to=TARGET, unsupported="ignore").convert_bytes (auto-detecting)
    record          Migrator(TARGET).record: one record migrated alone, its Outcome built
    count           Migrator(TARGET).count into a Tally: what the chunk loop calls per record
    chunks          the chunk loop (workers.migrate_chunk) over the cycle cut into 1 MiB chunks:
                    splitting, counting, rejects, the joined output
    detection       check_input + the top level's members (depth-guarded) + classify_members
    tally           Pipeline.tally given that detection (counting fused path, Counting report)
    counter         Pipeline.counter's function given that detection (what the chunk loop calls:
                    one report and context per source for the pass)
    discard         Pipeline.convert with DISCARD given that detection (the fused path nobody counts)
    counting fn     the counting pair functions alone (fields.tallying_pair, a Context and Counting each)
    bound fn        the bound pair functions alone (fields.bound_pair, what discard calls)
    migrate         envglot.migrate(jobs=1) over the cycle repeated K times (process CPU time,
                    its fsync's included), per record; engine = migrate - chunks (reading,
                    writing, the commit, the run's fixed costs)
"""

from __future__ import annotations

import argparse
import io
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus
import msgspec
import run

import envglot
from envglot.context import Context
from envglot.detect import Detection, classify_members, top_level
from envglot.diagnostics import DISCARD, Counting
from envglot.fields import bound_pair, tallying_pair
from envglot.limits import check_input, within_depth
from envglot.migration.inputs import RecordReader
from envglot.migration.records import Migrator
from envglot.migration.tally import Tally
from envglot.migration.workers import migrate_chunk
from envglot.pipeline import Pipeline

Checked = tuple[bytes, tuple[bytes, bool, Detection], dict[str, msgspec.Raw]]


def best(fn: Callable[[], object], n: int, rounds: int) -> float:
    """µs per record of ``fn()`` (a pass over ``n`` records): the best of ``rounds`` passes."""
    out = float("inf")
    for _ in range(rounds):
        t = time.thread_time_ns()
        fn()
        out = min(out, time.thread_time_ns() - t)
    return out / n / 1000


def detect(pipe: Pipeline, rec: bytes) -> Checked:
    """What ``Migrator.record`` hands ``Pipeline.tally``: the checked input, its detection, its members."""
    clean, bom = check_input(rec, pipe.max_depth, depth=False)
    top = within_depth(top_level, clean, pipe.max_depth, bom)
    return rec, (clean, bom, classify_members(top, pipe.registry)), top


def functions(pipe: Pipeline, checked: Sequence[Checked]) -> tuple[Callable[[], object], Callable[[], object]]:
    """A pass of the counting pair functions and one of the bound ones over the records."""
    m, compact = pipe.mappings, pipe.style == "compact"
    calls = []
    for rec, (_, _, det), top in checked:
        src = m.registry.get(det.dialect)
        tally, bound = tallying_pair(src, pipe.dst, m), bound_pair(src, pipe.dst, Context(m, DISCARD, m[src.name]))
        assert tally is not None and bound is not None, f"{src.name} -> {pipe.dst.name} takes the hub"
        calls.append((tally, bound, m[src.name], rec, top if len(rec) >= 2048 else None))

    def counting() -> None:
        for fn, _, table, rec, top in calls:
            fn(Context(m, Counting(pipe.policy), table, pipe.synth, compact), rec, top)

    def plain() -> None:
        for _, fn, _, rec, top in calls:
            fn(rec, top)

    return counting, plain


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-dialect", type=int, default=run.MODES["quick"].jsonl_per_dialect)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--repeat", type=int, default=2, help="cycles in the migrated file")
    ap.add_argument("--to", default="response-v2")
    a = ap.parse_args(argv)
    corp = corpus.generate(run.MODES["quick"].counts)
    sources = tuple(d for d in corpus.DIALECTS if d != a.to and run.DIALECT_MODULES[d].shape.marked_success)
    recs = corpus.jsonl_mix(corp, sources, corp.seed, a.per_dialect)
    n = len(recs)
    conv = envglot.Converter(to=a.to, unsupported="ignore")
    pipe = conv.pipeline
    mig = Migrator(a.to)
    checked = [detect(pipe, r) for r in recs]
    cycle = b"".join(r + b"\n" for r in recs)
    chunks = list(
        RecordReader(io.BytesIO(cycle), source="mix", style="compact", doc=False, read_size=1 << 20, max_record=1 << 26)
    )
    counting, plain = functions(pipe, checked)
    passes: dict[str, Callable[[], object]] = {
        "convert_bytes": lambda: [conv.convert_bytes(r) for r in recs],
        "record": lambda: [mig.record(r) for r in recs],
        "count": lambda: (lambda t: [mig.count(r, t) for r in recs])(Tally()),
        "chunks": lambda: [migrate_chunk(mig, task) for task in chunks],
        "detection": lambda: [detect(pipe, r) for r in recs],
        "tally": lambda: [pipe.tally(r, c, t) for r, c, t in checked],
        "counter": lambda: (lambda count: [count(r, c, t) for r, c, t in checked])(pipe.counter()),
        "discard": lambda: [pipe.convert(r, DISCARD, c, t) for r, c, t in checked],
        "counting fn": counting,
        "bound fn": plain,
    }
    for fn in passes.values():  # warm: every pair function compiled, every table built
        fn()
    us = {name: best(fn, n, a.rounds) for name, fn in passes.items()}
    work = Path(tempfile.mkdtemp(prefix="envglot-migrate-breakdown-"))
    try:
        src = work / "mix.jsonl"
        src.write_bytes(cycle * a.repeat)
        spent = float("inf")
        for i in range(max(2, a.rounds // 3)):
            t = time.process_time()
            envglot.migrate([src], out=work / f"out{i}", to=a.to, jobs=1)
            spent = min(spent, time.process_time() - t)
            shutil.rmtree(work / f"out{i}")
    finally:
        shutil.rmtree(work)
    us["migrate"] = spent / (n * a.repeat) * 1e6
    us["engine"] = us["migrate"] - us["chunks"]
    print(f"{n} records ({', '.join(sources)} -> {a.to}), {sum(map(len, recs)) / 1e6:.1f} MB a cycle")
    print("| stage | µs per record | convert_bytes / it |")
    print("|---|---:|---:|")
    for name, v in us.items():
        print(f"| {name} | {v:.2f} | {us['convert_bytes'] / v:.2f} |")


if __name__ == "__main__":
    main()
