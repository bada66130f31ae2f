#!/usr/bin/env python
"""Instructions per record of ``migrate -j 1``'s counting path and its parts, on one or more source trees (callgrind).

    python benchmarks/count_instructions.py SRC [SRC ...] [--per-dialect N] [--to TARGET] [--passes K]

On one cycle of the benchmark's migration mix (``migrate_breakdown.py``'s records: ``corpus.jsonl_mix``
over the quick corpus), each tree runs in one child process under ``valgrind --tool=callgrind``
with ``PYTHONPATH=<src>`` and ``PYTHONHASHSEED=0`` (``tiny_instructions.counted``). Each part is
warmed by one pass, the GC collected then turned off, and ``--passes`` passes are counted between
two marker calls; thousands of instructions a record:

    convert_bytes   Converter(to=TARGET, unsupported="ignore").convert_bytes (auto-detecting)
    chunks          the chunk loop (workers.migrate_chunk over 1 MiB chunks of the cycle)
    records         Migrator.counter's per-record function over the records (the chunk loop
                    without its lines cut and its output joined), its ``done`` once at the end
    detection       check_input + the top level's members + classify_members
    counter         Pipeline.counter's function given that detection
    discard         Pipeline.convert with DISCARD given that detection
    SOURCE fail/ok  that source's failures / successes (as the plain function writes them) through
                    its bound counting pair function (``bound_tally``, what ``counter`` calls)
                    and its bound plain one (``bound_pair``, what ``convert_bytes`` calls)

Prints one Markdown table per part kind, a column per tree.
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
Items = list[tuple[bytes, object]]
"""One source's records (failures or successes): each with its top-level members."""


def child(per_dialect: int, to: str, passes: int, names_out: Path) -> None:
    """Count each part's ``passes`` passes between marker calls; the parts' names to ``names_out``."""
    sys.path.insert(0, str(HERE))
    import corpus
    import run
    from migrate_breakdown import detect

    import envglot
    from envglot.context import Context
    from envglot.diagnostics import DISCARD, Counting
    from envglot.fields import bound_pair, bound_tally, tallying_pair
    from envglot.migration.inputs import RecordReader
    from envglot.migration.records import Migrator
    from envglot.migration.tally import Tally
    from envglot.migration.workers import migrate_chunk

    corp = corpus.generate(run.MODES["quick"].counts)
    sources = tuple(d for d in corpus.DIALECTS if d != to and run.DIALECT_MODULES[d].shape.marked_success)
    recs = corpus.jsonl_mix(corp, sources, corp.seed, per_dialect)
    conv = envglot.Converter(to=to, unsupported="ignore")
    pipe, m, mig = conv.pipeline, conv.pipeline.mappings, Migrator(to)
    checked = [detect(pipe, r) for r in recs]
    cycle = b"".join(r + b"\n" for r in recs)
    chunks = list(
        RecordReader(io.BytesIO(cycle), source="mix", style="compact", doc=False, read_size=1 << 20, max_record=1 << 26)
    )
    counting = Counting(pipe.policy)
    seen = counting.seen
    by_source: dict[str, tuple[Callable[..., object], Callable[..., object], Items, Items]] = {}
    for _, (clean, _bom, det), top in checked:
        src = m.registry.get(det.dialect)
        if src.name not in by_source:
            tally = tallying_pair(src, pipe.dst, m)
            assert tally is not None, f"{src.name} -> {to} takes the hub"
            plain = bound_pair(src, pipe.dst, Context(m, DISCARD, m[src.name], pipe.synth, True))
            assert plain is not None
            counting_fn = bound_tally(tally, Context(m, counting, m[src.name], pipe.synth, True))
            by_source[src.name] = (counting_fn, plain, [], [])
        ct, pl, fails, oks = by_source[src.name]
        out = pl(clean, top)
        assert isinstance(out, bytes)
        (fails if out.startswith(b'{"success":false') else oks).append((clean, top))

    def per_record(state: tuple[Callable[[bytes], object], Callable[[], None]]) -> None:
        count, done = state
        for r in recs:
            count(r)
        done()

    def records(fn: Callable[..., object], items: Items) -> Callable[[], None]:
        def one() -> None:
            for b, top in items:
                seen.clear()
                fn(b, top)

        return one

    parts: list[tuple[str, int, Callable[[], object]]] = [
        ("convert_bytes", len(recs), lambda: [conv.convert_bytes(r) for r in recs]),
        ("chunks", len(recs), lambda: [migrate_chunk(mig, task) for task in chunks]),
        ("records", len(recs), lambda: per_record(mig.counter(Tally()))),
        ("detection", len(recs), lambda: [detect(pipe, r) for r in recs]),
        ("counter", len(recs), lambda: (lambda count: [count(r, c, t) for r, c, t in checked])(pipe.counter())),
        ("discard", len(recs), lambda: [pipe.convert(r, DISCARD, c, t) for r, c, t in checked]),
    ]
    for name, (ct, pl, fails, oks) in by_source.items():
        for kind, items in (("fail", fails), ("ok", oks)):
            parts.append((f"{name} {kind} counting", len(items), records(ct, items)))
            parts.append((f"{name} {kind} plain", len(items), records(pl, items)))
    names = []
    for name, n, fn in parts:
        fn()  # warm: every pair function compiled, every table built
        gc.collect()
        gc.disable()
        os.getppid()  # dump: everything before
        for _ in range(passes):
            fn()
        os.getppid()  # dump: the passes
        gc.enable()
        names.append(f"{name}\t{n}")
    names_out.write_text("\n".join(names))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trees", type=Path, nargs="*", metavar="SRC")
    ap.add_argument("--per-dialect", type=int, default=0, help="records per source (default: the quick mode's)")
    ap.add_argument("--to", default="response-v2")
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    sys.path.insert(0, str(HERE))
    import corpus
    import run
    from tiny_instructions import counted

    per = a.per_dialect or run.MODES["quick"].jsonl_per_dialect
    sources = [d for d in corpus.DIALECTS if d != a.to and run.DIALECT_MODULES[d].shape.marked_success]
    if a.child:
        child(per, a.to, a.passes, a.child)
        return
    if not a.trees:
        ap.error("one or more source trees are required")
    rows: dict[str, list[float]] = {}
    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, tree in enumerate(a.trees):
            names_file = Path(tmp) / f"names{i}"
            args = ["--per-dialect", str(per), "--to", a.to, "--passes", str(a.passes), "--child", str(names_file)]
            n_parts = 6 + 4 * len(sources)  # the child's parts: the stages, then 4 per source
            totals, _ = counted(tree.resolve(), Path(__file__).resolve(), args, n_parts, Path(tmp) / str(i))
            for line, total in zip(names_file.read_text().splitlines(), totals, strict=True):
                name, n = line.split("\t")
                sizes[name] = int(n)
                rows.setdefault(name, []).append(total / (a.passes * max(int(n), 1)) / 1000)
    head = " | ".join(str(t) for t in a.trees)
    print(f"| part | records | {head} |")
    print("|---|---:|" + "---:|" * len(a.trees))
    for name, vals in rows.items():
        print(f"| {name} | {sizes[name]} | " + " | ".join(f"{v:.1f}" for v in vals) + " |")


if __name__ == "__main__":
    main()
