"""Where a fused conversion's time goes, against its floor: CPU time per document, by stage.

    python benchmarks/breakdown.py SOURCE TARGET [--sizes tiny,medium,large] [--count N]

For the reused ``Converter(to=TARGET, from_=SOURCE, unsupported="ignore")`` on the benchmark
corpus's SOURCE records: the whole ``convert_bytes``, the input checks a known source needs
before its first parse (``check_input(depth=False)``: the depth is checked by that parse), the
whitespace probe, the fused function bound to the pipeline (``envglot.fields``), the source's
decoder inside it, and the rest (the pipeline's own code, and minifying a spaced source);
beside them the pair's floor (``floors.py``, with the same checks) and the limit (the source's
msgspec pass-through). Each figure is the best of ``--rounds`` passes over the same records,
in the measuring thread's CPU time.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus
import floors
import msgspec

import envglot
from envglot.context import Context
from envglot.diagnostics import DISCARD
from envglot.dialect import get_dialect
from envglot.fields import bound_pair
from envglot.limits import check_input
from envglot.wire import may_be_loose


def best(fn: Callable[[bytes], object], items: Sequence[bytes], rounds: int) -> float:
    """µs per document: the best pass of ``rounds``."""
    out = float("inf")
    for _ in range(rounds):
        t = time.thread_time_ns()
        for b in items:
            fn(b)
        out = min(out, time.thread_time_ns() - t)
    return out / len(items) / 1000


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("source")
    ap.add_argument("target")
    ap.add_argument("--sizes", default="tiny,medium,large")
    ap.add_argument("--count", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=15)
    a = ap.parse_args(argv)
    src = get_dialect(a.source)
    print(
        "| size | Converter µs | input checks | probe | fused function | of it: decode | rest "
        "| floor µs | limit µs | Converter / floor |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in a.sizes.split(","):
        n = a.count if size == "tiny" else max(20, a.count // (4 if size == "medium" else 20))
        items = corpus.generate({size: n}, dialects=(src.name,)).payloads(src.name, size)
        conv = envglot.Converter(to=a.target, from_=src.name, unsupported="ignore")
        run = conv.convert_bytes
        run(items[0])
        pipe = conv.pipeline  # the fast path bound as the pipeline binds it (a DISCARD context)
        ctx = Context(pipe.mappings, DISCARD, pipe.mappings[src.name], pipe.synth, pipe.style == "compact")
        fused = bound_pair(src, pipe.dst, ctx)
        assert fused is not None, "this pair takes the hub"
        wire = src.wire
        limit_dec = msgspec.json.Decoder(wire if wire is not None else dict[str, msgspec.Raw])
        enc = msgspec.json.Encoder()
        decode = src.reading.decoder.decode if src.reading is not None else None
        floor = floors.build(src.name, a.target)
        t_conv = best(run, items, a.rounds)
        t_checks = best(lambda b: check_input(b, depth=False), items, a.rounds)
        t_probe = best(may_be_loose, items, a.rounds)
        t_fused = best(fused, items, a.rounds)
        t_dec = best(decode, items, a.rounds) if decode is not None else float("nan")
        t_floor = best(floor, items, a.rounds) if floor is not None else float("nan")
        t_limit = best(lambda b, e=enc.encode, d=limit_dec.decode: e(d(b)), items, a.rounds)
        pipe = t_conv - t_checks - t_probe - t_fused
        print(
            f"| {size} | {t_conv:.2f} | {t_checks:.2f} | {t_probe:.2f} | {t_fused:.2f} | {t_dec:.2f} | "
            f"{pipe:.2f} | {t_floor:.2f} | {t_limit:.2f} | {t_floor / t_conv:.2f} |"
        )


if __name__ == "__main__":
    main()
