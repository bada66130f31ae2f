#!/usr/bin/env python
"""Where a Converter's time goes: a stage-by-stage breakdown per ordered pair and size.

    python benchmarks/profile.py                     # every pair, every size (a few minutes)
    python benchmarks/profile.py --sources dotbot --targets response-v2 --sizes tiny
    python benchmarks/profile.py --loop dotbot response-v2 tiny 20   # hot loop for py-spy / pyinstrument
    py-spy record -r 2000 -f raw -o /tmp/s.txt -- python benchmarks/profile.py --loop dotbot response-v2 tiny 20
    python benchmarks/profile.py --collapse /tmp/s.txt      # self and total time per function

Each stage is timed on its own over the same records (fastest of the rounds, per envelope):

    total       Converter(from_=src, unsupported="ignore").convert_bytes(b) (conversion(b) with --collect)
    detect      envglot.detect.detect_bytes(b)  (paid by convert() and auto-detecting Converters only)
    decode      msgspec decode of the source wire Envelope Struct (the first half of the limit)
    read        the source reader, src.read(b, ctx): decode + reader code + canonical construction
    canonical   building the canonical Envelope (and its Problems, Notices, NextSteps) from ready values
    loss        context.report_losses(env, target_map, ctx)
                (stages get the report convert_bytes uses: envglot's shared non-collecting one
                when it has one; a collecting Report("ignore") with --collect)
    write       the target writer, dst.write(env, ctx): loss check + writer code + encode
    encode      msgspec encode of the target wire Envelope Struct (the second half of the limit)

and derived: reader code = read - decode - canonical; writer code = write - loss - encode;
pipeline = total - read - write (Report, Context, Conversion, style, extras/residue checks).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import corpus as corpus_mod
import msgspec
import orjson

import envglot
from envglot import canonical as c
from envglot.context import Context, report_losses
from envglot.detect import detect_bytes
from envglot.diagnostics import Report
from envglot.dialects import DIALECTS, WRITABLE
from envglot.mappings import default_mappings

STAGES = ("total", "detect", "decode", "read", "canonical", "loss", "write", "encode")
_NESTED = {"problems": c.Problem, "warnings": c.Notice, "next_steps": c.NextStep, "extras": c.Extra}
_SINGLE = {"pagination": c.Pagination, "fidelity": c.Fidelity, "workspace": c.Workspace}


def _best_per_item(stages: dict[str, tuple[Callable[[Any], object], Sequence[Any]]], rounds: int) -> dict[str, float]:
    """Fastest round per stage, per item, in seconds. Stages are differences of small numbers,
    so the least disturbed round is the best estimate (the ``timeit`` advice; the harness
    reports medians instead); rounds interleave the stages so a busy spell hits all alike."""
    for fn, items in stages.values():  # warm-up
        for x in items:
            fn(x)
    gc.freeze()  # the fixtures are long-lived: keep them out of the collections being timed
    best = dict.fromkeys(stages, float("inf"))
    for _ in range(rounds):
        for name, (fn, items) in stages.items():
            gc.collect()
            t0 = time.perf_counter()
            for x in items:
                fn(x)
            best[name] = min(best[name], (time.perf_counter() - t0) / len(items))
    gc.unfreeze()
    return best


def _set_fields(obj: msgspec.Struct) -> dict[str, Any]:
    """The fields of ``obj`` that differ from their defaults (what a reader passes)."""
    out = {}
    for f in msgspec.structs.fields(obj):
        v = getattr(obj, f.name)
        if f.default is msgspec.NODEFAULT or v != f.default:
            out[f.name] = v
    return out


Spec = tuple[dict[str, Any], list[tuple[str, type, list[dict[str, Any]]]], list[tuple[str, type, dict[str, Any]]]]


def _rebuild_args(env: c.Envelope) -> Spec:
    """The values a reader hands to the canonical constructors, so construction alone can be timed."""
    kw = _set_fields(env)
    nested = [(n, tp, [_set_fields(x) for x in kw.pop(n)]) for n, tp in _NESTED.items() if n in kw]
    single = [(n, tp, _set_fields(kw.pop(n))) for n, tp in _SINGLE.items() if n in kw]
    return kw, nested, single


def _build(spec: Spec) -> c.Envelope:
    kw, nested, single = spec
    kw = kw.copy()
    for name, tp, items in nested:
        kw[name] = tuple(tp(**x) for x in items)
    for name, tp, x in single:
        kw[name] = tp(**x)
    return c.Envelope(**kw)


def _quiet_report() -> Report | None:
    """The shared non-collecting report ``convert_bytes`` uses with ``ignore``, if this envglot has one."""
    from envglot import diagnostics

    quiet = getattr(diagnostics, "DISCARD", None)
    return quiet if isinstance(quiet, Report) else None


def breakdown(src: str, dst: str, items: list[bytes], rounds: int, collect: bool = False) -> dict[str, Any]:
    """Per-envelope microseconds of each stage for ``src -> dst`` over ``items``."""
    m = default_mappings()
    smod, dmod = DIALECTS[src], DIALECTS[dst]
    smap, dmap = m[src], m[dst]
    conv = envglot.Converter(to=dst, from_=src, unsupported="ignore")
    wire_in = smod.wire or dict[str, msgspec.Raw]
    dec_in = msgspec.json.Decoder(wire_in)
    dec_out = msgspec.json.Decoder(dmod.wire)
    enc = msgspec.json.Encoder()

    quiet = None if collect else _quiet_report()

    def ctx() -> Context:
        return Context(m, quiet if quiet is not None else Report("ignore"), smap, None)

    envs = [smod.read(b, ctx()) for b in items]
    args = [_rebuild_args(e) for e in envs]
    outs = [dmod.write(e, ctx()) for e in envs]
    wires = [dec_out.decode(o) for o in outs]
    diags = Counter()
    for b in items:
        for d in conv.conversion(b).diagnostics:
            diags[d.kind.value] += 1
    us = _best_per_item(
        {
            "total": (conv.conversion if collect else conv.convert_bytes, items),
            "detect": (detect_bytes, items),
            "decode": (dec_in.decode, items),
            "read": (lambda b: smod.read(b, ctx()), items),
            "canonical": (_build, args),
            "loss": (lambda e: report_losses(e, dmap, ctx()), envs),
            "write": (lambda e: dmod.write(e, ctx()), envs),
            "encode": (enc.encode, wires),
        },
        rounds,
    )
    us = {k: v * 1e6 for k, v in us.items()}
    us["reader_code"] = us["read"] - us["decode"] - us["canonical"]
    us["writer_code"] = us["write"] - us["loss"] - us["encode"]
    us["pipeline"] = us["total"] - us["read"] - us["write"]
    return {
        "source": src,
        "target": dst,
        "records": len(items),
        "mean_bytes": round(sum(map(len, items)) / len(items)),
        "diagnostics_per_envelope": round(sum(diags.values()) / len(items), 2),
        "diagnostic_kinds": dict(diags.most_common()),
        "us": {k: round(v, 2) for k, v in us.items()},
    }


_COLS = ("total", "decode", "reader_code", "canonical", "loss", "writer_code", "encode", "pipeline", "detect")


def table(rows: list[dict[str, Any]]) -> str:
    head = "| size | source -> target | diags/env | " + " | ".join(f"{c} µs" for c in _COLS) + " |"
    out = [head, "|" + "---|" * 3 + "---:|" * len(_COLS)]
    for r in rows:
        cells = " | ".join(f"{r['us'][k]:.1f}" for k in _COLS)
        out.append(f"| {r['size']} | {r['source']} -> {r['target']} | {r['diagnostics_per_envelope']} | {cells} |")
    return "\n".join(out)


def loop(src: str, dst: str, size: str, seconds: float, counts: dict[str, int]) -> None:
    """Run one Converter over its corpus group for ``seconds`` (for a sampling profiler)."""
    items = corpus_mod.generate({size: counts[size]}, dialects=(src,)).payloads(src, size)
    conv = envglot.Converter(to=dst, from_=src, unsupported="ignore").convert_bytes
    n = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for b in items:
            conv(b)
        n += len(items)
    print(f"{n} conversions", file=sys.stderr)


def _frame(f: str, lines: bool) -> str:
    """``func (path/file.py:12)`` -> ``func file.py:12`` (or ``func file.py`` without ``lines``)."""
    func, _, where = f.partition(" (")
    where = where.rstrip(")").rsplit("/", 1)[-1]
    return f"{func} {where if lines else where.split(':')[0]}"


def collapse(path: Path, top: int, lines: bool = False) -> str:
    """Self and total share per function (or per line) from a py-spy ``-f raw`` (collapsed stacks) file."""
    self_t: Counter[str] = Counter()
    total_t: Counter[str] = Counter()
    n = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        k = int(count)
        frames = [_frame(f, lines) for f in stack.split(";")]
        n += k
        self_t[frames[-1]] += k
        for f in set(frames):
            total_t[f] += k
    out = [f"{n} samples", "", "| function | self % | total % |", "|---|---:|---:|"]
    for f, k in self_t.most_common(top):
        out.append(f"| {f} | {100 * k / n:.1f} | {100 * total_t[f] / n:.1f} |")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sources", help="comma-separated source dialects (default: all)")
    p.add_argument("--targets", help="comma-separated target dialects (default: all writable)")
    p.add_argument("--sizes", help="comma-separated size classes (default: all)")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--seed", type=int, default=20260101)
    p.add_argument("--counts", default="tiny=1000,medium=500,large=100", help="records per size class")
    p.add_argument("--json", type=Path, help="write the rows as JSON to this file")
    p.add_argument(
        "--collect",
        action="store_true",
        help="time conversion() and collecting reports (what warn/raise and migrate pay), not convert_bytes",
    )
    p.add_argument("--loop", nargs=4, metavar=("SRC", "DST", "SIZE", "SECONDS"), help="hot loop for a profiler")
    p.add_argument("--collapse", type=Path, help="summarize a py-spy raw (collapsed stacks) file")
    p.add_argument("--top", type=int, default=30)
    p.add_argument("--lines", action="store_true", help="with --collapse: per line, not per function")
    args = p.parse_args(argv)
    counts = {k: int(v) for k, v in (kv.split("=") for kv in args.counts.split(","))}
    if args.collapse:
        print(collapse(args.collapse, args.top, args.lines))
        return 0
    if args.loop:
        src, dst, size, secs = args.loop
        loop(src, dst, size, float(secs), counts)
        return 0
    sources = tuple(args.sources.split(",")) if args.sources else corpus_mod.DIALECTS
    targets = tuple(args.targets.split(",")) if args.targets else WRITABLE
    sizes = tuple(args.sizes.split(",")) if args.sizes else corpus_mod.SIZES
    corp = corpus_mod.generate({s: counts[s] for s in sizes}, seed=args.seed, dialects=sources)
    rows = []
    for size in sizes:
        for src in sources:
            for dst in targets:
                if src == dst:
                    continue
                r = breakdown(src, dst, corp.payloads(src, size), args.rounds, args.collect)
                r["size"] = size
                rows.append(r)
                print(f"  {size:6} {src:12} -> {dst:12} {r['us']['total']:8.1f} µs", file=sys.stderr, flush=True)
    print(table(rows))
    if args.json:
        args.json.write_bytes(orjson.dumps(rows, option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
