"""Where a fused conversion's time goes, against its floor: CPU time per document, by stage.

    python benchmarks/breakdown.py SOURCE TARGET [--sizes tiny,medium,large] [--count N]

For the reused ``Converter(to=TARGET, from_=SOURCE, unsupported="ignore")`` on the benchmark
corpus's SOURCE records, each stage as ``Pipeline.convert`` runs it for a known source: the
whole ``convert_bytes``; the UTF-8 check (``check_input(depth=False)``); the top level's
members parsed under the lowered recursion budget (``members_within_depth``: the depth check);
the repeated-member arithmetic and the whitespace probe (``spans_whole``, ``may_be_loose``);
the fused function bound to the pipeline (``envglot.fields``), called as the pipeline calls it
(on the members from 2 KiB; on the input as given, which for a spaced source the pipeline
minifies first), and the source's wire Struct inside it (``WireDecoder.decode``); and the rest
(the pipeline's own code, the detection that lets another dialect's failure win, and
minifying a spaced source). Beside them the pair's floor (``floors.py``, with the same
checks) and the limit (the source's msgspec pass-through, decode and encode). Each figure is
the best of ``--rounds`` passes over the same records, in the measuring thread's CPU time.
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
from envglot.limits import MAX_DEPTH, check_input, members_within_depth, spans_whole
from envglot.pipeline import SPLIT_MIN
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


def arguments(doc: str, count: int, argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line of a script timing one pair by size: ``SOURCE TARGET [--sizes] [--count] [--rounds]``."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("source")
    ap.add_argument("target")
    ap.add_argument("--sizes", default="tiny,medium,large")
    ap.add_argument("--count", type=int, default=count)
    ap.add_argument("--rounds", type=int, default=15)
    return ap.parse_args(argv)


def documents(source: str, size: str, count: int) -> list[bytes]:
    """``count`` corpus records of ``source`` at tiny, a quarter at medium, a twentieth at large (20 at least)."""
    n = count if size == "tiny" else max(20, count // (4 if size == "medium" else 20))
    return corpus.generate({size: n}, dialects=(source,)).payloads(source, size)


def main(argv: Sequence[str] | None = None) -> None:
    a = arguments(__doc__, 400, argv)
    src = get_dialect(a.source)
    print(
        "| size | Converter µs | UTF-8 check | members parse (depth) | spans + probe | fused function "
        "| of it: wire Struct | rest | floor µs | limit µs (decode + encode) | Converter / floor | Converter / limit |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in a.sizes.split(","):
        items = documents(src.name, size, a.count)
        conv = envglot.Converter(to=a.target, from_=src.name, unsupported="ignore")
        run = conv.convert_bytes
        run(items[0])
        pipe = conv.pipeline  # the fast path bound as the pipeline binds it (a DISCARD context)
        ctx = Context(pipe.mappings, DISCARD, pipe.mappings[src.name], pipe.synth, pipe.style == "compact")
        fused = bound_pair(src, pipe.dst, ctx)
        assert fused is not None, "this pair takes the hub"
        wire = src.wire
        limit_dec = msgspec.json.Decoder(wire if wire is not None else dict[str, msgspec.Raw]).decode
        encode = msgspec.json.Encoder().encode
        reader = src.reading.decoder if src.reading is not None else None
        members = {b: members_within_depth(b, MAX_DEPTH)[0] for b in items}
        split = {b: members[b] if len(b) >= SPLIT_MIN else None for b in items}  # as the pipeline passes them
        floor = floors.build(src.name, a.target)
        t_conv = best(run, items, a.rounds)
        t_utf8 = best(lambda b: check_input(b, depth=False), items, a.rounds)
        t_members = best(lambda b: members_within_depth(b, MAX_DEPTH), items, a.rounds)
        t_probe = best(lambda b, m=members: may_be_loose(b, m[b] is not None and spans_whole(b, m[b])), items, a.rounds)
        t_fused = best(lambda b, f=fused, m=split: f(b, m[b]), items, a.rounds)
        t_wire = float("nan")
        if reader is not None:
            t_wire = best(lambda b, r=reader, m=split: r.decode(b, m[b]), items, a.rounds)
        t_floor = best(floor, items, a.rounds) if floor is not None else float("nan")
        t_limit = best(lambda b, e=encode, d=limit_dec: e(d(b)), items, a.rounds)
        rest = t_conv - t_utf8 - t_members - t_probe - t_fused
        print(
            f"| {size} | {t_conv:.2f} | {t_utf8:.2f} | {t_members:.2f} | {t_probe:.2f} | {t_fused:.2f} | "
            f"{t_wire:.2f} | {rest:.2f} | {t_floor:.2f} | {t_limit:.2f} | {t_floor / t_conv:.2f} | "
            f"{t_limit / t_conv:.2f} |"
        )


if __name__ == "__main__":
    main()
