"""The benchmark's "preserve" section: what ``preserve=True`` costs over ``unsupported="ignore"``.

Two reused ``Converter`` objects per pair (both ``unsupported="ignore"``, one with
``preserve=True``) are timed interleaved on the same documents with this thread's CPU clock
(the machine is shared: waiting for a core is not the conversion's cost). A screening pass at
tiny over every ordered pair of writable dialects (a writable source is the only kind that gets
a residue) finds the worst pair; dotbot -> response-v2 and that pair are then timed at every
size. The cost is the median over the rounds of each round's preserve time over its ignore
time (``rate_ratio`` of ``run.py``; issue 28: at most 2).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import envglot
from envglot.dialects import WRITABLE

PAIR = ("dotbot", "response-v2")
"""The pair the issue measured (lossy by nature: about five dropped fields per document)."""


def run_preserve(
    corp: Any,
    sizes: Sequence[str],
    rounds: int,
    measure: Callable[..., None],
    timing: Callable[..., Any],
    rate_ratio: Callable[[dict[str, Any], dict[str, Any]], float | None],
    log: Callable[[str], None],
) -> dict[str, Any]:
    """Rows per pair and size (ignore and preserve), the screening costs and the worst cost."""
    clock = time.thread_time

    def cost(src: str, dst: str, size: str, n_rounds: int, rows: list[dict[str, Any]] | None) -> float | None:
        items = corp.payloads(src, size)
        if not items:
            return None
        nbytes = sum(map(len, items))
        methods = {
            "ignore": envglot.Converter(to=dst, from_=src, unsupported="ignore").convert_bytes,
            "preserve": envglot.Converter(to=dst, from_=src, unsupported="ignore", preserve=True).convert_bytes,
        }
        timings = {k: timing(f"Converter {k}", src, dst, size, len(items), nbytes) for k in methods}
        measure(methods, items, n_rounds, timings, clock)
        got = {k: t.row() for k, t in timings.items()}
        if rows is not None:
            rows += got.values()
        return rate_ratio(got["ignore"], got["preserve"])

    screen: dict[str, float] = {}
    for src in WRITABLE:
        for dst in WRITABLE:
            if src != dst and (c := cost(src, dst, "tiny", max(1, rounds // 3), None)) is not None:
                screen[f"{src} -> {dst}"] = c
    if not screen:
        return {"status": "skipped", "reason": "no documents of a writable dialect in the corpus"}
    worst = max(screen, key=lambda k: screen[k])
    log(f"  screening at tiny: worst pair {worst} ({screen[worst]} x)")
    rows: list[dict[str, Any]] = []
    costs: list[dict[str, Any]] = []
    pairs = [PAIR] + ([tuple(worst.split(" -> "))] if worst != " -> ".join(PAIR) else [])
    for src, dst in pairs:
        for size in sizes:
            c = cost(src, dst, size, rounds, rows)
            if c is not None:
                costs.append({"pair": f"{src} -> {dst}", "size": size, "cost": c})
                log(f"  {src} -> {dst} {size}: preserve {c} x ignore")
    top = max(costs, key=lambda r: r["cost"]) if costs else None
    return {
        "status": "ok",
        "clock": "cpu",
        "rows": rows,
        "screen": screen,
        "worst_pair": worst,
        "costs": costs,
        "max_cost": top["cost"] if top else None,
        "max_at": f"{top['pair']} ({top['size']})" if top else None,
    }
