#!/usr/bin/env python
"""Every bundled ordered pair on two source trees: new/old CPU time per document, alternating child processes.

    python benchmarks/compare_commits.py OLD_SRC NEW_SRC              # e.g. a worktree of 8f9e8d7's src/ and src/
    python benchmarks/compare_commits.py OLD_SRC NEW_SRC --alternations 9 --json out.json

Two source trees cannot share one process, so each measurement runs in a child process with
``PYTHONPATH=<src>``; the children alternate (old, new, old, new, ... ``--alternations`` of
each, the first of each pair of runs switching sides every round) so drift on a shared machine
hits both sides alike. The corpus is generated once, in this process, by ``benchmarks/corpus.py``
with the envglot this script imports, for the dialects both trees register; both sides convert
the same bytes. Each child times every ordered pair (source != target, target writable on
both sides) and size with the CPU time of its thread (``time.thread_time``): a warm-up pass,
then ``--passes`` passes, keeping the fastest per pair (a pass the scheduler or a collection
interrupted only gets slower). Two paths per pair:

- ``fast``: ``Converter(to, from_, unsupported="ignore").convert_bytes`` (the fused pair
  path where the pair has one, nothing collected);
- ``diag``: ``Converter(...).conversion(b)`` with every diagnostic's message read (the hub,
  diagnostics collected and rendered).

Per key the report is the median over the alternations of each side, the ratio new/old of
the medians, and the spread: the lowest and highest of the per-alternation ratios (the n-th
old run against the n-th new run). The children also print a digest of their outputs (bytes
and diagnostics' kind, path and message): a pair whose digests differ is listed, since its
timings compare different work.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MODES = ("fast", "diag")
SIZES = ("tiny", "medium", "large")


# ---------------------------------------------------------------------------
# the child: runs with PYTHONPATH=<one src tree>, imports only envglot from it


def child(corpus_file: Path, passes: int, modes: list[str]) -> None:
    """Time every pair of the corpus file on the envglot found first on the path; print JSON."""
    import envglot
    from envglot.dialects import WRITABLE

    data = json.loads(corpus_file.read_text())
    groups: dict[tuple[str, str], list[bytes]] = {
        (g["dialect"], g["size"]): [bytes.fromhex(h) for h in g["records"]] for g in data["groups"]
    }
    targets = [t for t in data["targets"] if t in WRITABLE]
    out: dict[str, Any] = {"envglot": envglot.__file__, "times": {}, "digests": {}}
    clock = time.thread_time
    for (src, size), items in groups.items():
        for dst in targets:
            if dst == src:
                continue
            conv = envglot.Converter(to=dst, from_=src, unsupported="ignore")
            for mode in modes:
                key = f"{mode}|{src}|{dst}|{size}"
                digest = hashlib.sha256()
                if mode == "fast":
                    fn = conv.convert_bytes
                    for b in items:  # warm-up, and what the pass produces
                        digest.update(fn(b))

                    def one_pass(fn: Any = fn, items: list[bytes] = items) -> float:
                        t0 = clock()
                        for b in items:
                            fn(b)
                        return clock() - t0
                else:
                    run = conv.conversion
                    for b in items:
                        c = run(b)
                        digest.update(c.output)
                        for d in c.diagnostics:
                            digest.update(f"{d.kind.value} {d.path} {d.message}".encode())

                    def one_pass(run: Any = run, items: list[bytes] = items) -> float:
                        t0 = clock()
                        for b in items:
                            for d in run(b).diagnostics:
                                d.message  # noqa: B018 - rendering the message is part of the path
                        return clock() - t0

                best = float("inf")
                for _ in range(passes):
                    gc.collect()
                    best = min(best, one_pass())
                out["times"][key] = best / len(items)
                out["digests"][key] = digest.hexdigest()[:16]
    print(json.dumps(out))


# ---------------------------------------------------------------------------
# the parent


def write_corpus(path: Path, old_src: Path, counts: dict[str, int], seed: int) -> dict[str, Any]:
    """Generate the corpus for the dialects both trees register; write it as JSON (hex records)."""
    sys.path.insert(0, str(HERE))
    import corpus as corpus_mod

    from envglot.dialects import WRITABLE

    probe = "import json; from envglot.dialect import dialect_names; from envglot.dialects import WRITABLE; "
    probe += "print(json.dumps([list(dialect_names()), sorted(WRITABLE)]))"
    old_names, old_writable = json.loads(_run_child(old_src, ["-c", probe]))
    dialects = tuple(d for d in corpus_mod.DIALECTS if d in old_names)
    targets = [d for d in dialects if d in WRITABLE and d in old_writable]
    corp = corpus_mod.generate(counts, seed=seed, dialects=dialects)
    groups = [
        {"dialect": d, "size": s, "records": [r.hex() for r in corp.payloads(d, s)]}
        for d in dialects
        for s in SIZES
        if (d, s) in corp.groups
    ]
    path.write_text(json.dumps({"seed": seed, "counts": counts, "targets": targets, "groups": groups}))
    return {"dialects": list(dialects), "targets": targets}


def _run_child(src: Path, args: list[str]) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENVGLOT_")}
    env["PYTHONPATH"] = str(src)
    env["PYTHONHASHSEED"] = "0"
    proc = subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, check=False, cwd=tempfile.gettempdir()
    )
    if proc.returncode != 0:
        raise SystemExit(f"child on {src} failed:\n{proc.stderr}")
    return proc.stdout.strip().splitlines()[-1]


def summarize(runs: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per key: each side's median, new/old of the medians, and the range of per-alternation ratios."""
    rows = []
    for key in runs["old"][0]["times"]:
        if key not in runs["new"][0]["times"]:
            continue
        old = [r["times"][key] for r in runs["old"]]
        new = [r["times"][key] for r in runs["new"]]
        per = sorted(n / o for n, o in zip(new, old, strict=True))
        mode, src, dst, size = key.split("|")
        rows.append(
            {
                "mode": mode,
                "source": src,
                "target": dst,
                "size": size,
                "old_us": statistics.median(old) * 1e6,
                "new_us": statistics.median(new) * 1e6,
                "ratio": statistics.median(new) / statistics.median(old),
                "ratio_min": per[0],
                "ratio_max": per[-1],
                "same_output": runs["old"][0]["digests"][key] == runs["new"][0]["digests"][key],
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old_src", nargs="?", type=Path)
    ap.add_argument("new_src", nargs="?", type=Path)
    ap.add_argument("--alternations", type=int, default=7, help="child runs per side (default 7)")
    ap.add_argument("--passes", type=int, default=3, help="timed passes per pair in a child, fastest kept")
    ap.add_argument("--counts", default="tiny=60,medium=30,large=6", help="records per source dialect and size")
    ap.add_argument("--modes", default=",".join(MODES), help="fast,diag")
    ap.add_argument("--seed", type=int, default=20260101)
    ap.add_argument("--json", type=Path, help="write every run and the summary here")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    modes = [m for m in a.modes.split(",") if m]
    if a.child is not None:
        child(a.child, a.passes, modes)
        return
    if a.old_src is None or a.new_src is None:
        ap.error("OLD_SRC and NEW_SRC are required")
    counts = {k: int(v) for k, v in (kv.split("=") for kv in a.counts.split(","))}
    old_src, new_src = a.old_src.resolve(), a.new_src.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        corpus_file = Path(tmp) / "corpus.json"
        info = write_corpus(corpus_file, old_src, counts, a.seed)
        print(f"dialects {info['dialects']}, targets {info['targets']}, counts {counts}", file=sys.stderr)
        runs: dict[str, list[dict[str, Any]]] = {"old": [], "new": []}
        args = [str(Path(__file__).resolve()), "--child", str(corpus_file), "--passes", str(a.passes)]
        args += ["--modes", ",".join(modes)]
        loads = []
        for i in range(a.alternations):
            order = [("old", old_src), ("new", new_src)] if i % 2 == 0 else [("new", new_src), ("old", old_src)]
            for side, src in order:
                t0 = time.perf_counter()
                runs[side].append(json.loads(_run_child(src, args)))
                loads.append(os.getloadavg()[0])
                print(f"  {i + 1}/{a.alternations} {side}: {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    for side, src in (("old", old_src), ("new", new_src)):
        got = runs[side][0]["envglot"]
        if not got.startswith(str(src)):
            raise SystemExit(f"the {side} child imported {got}, not {src}")
    rows = summarize(runs)
    print("| path | source | target | size | old µs | new µs | new/old | per-round range | same output |")
    print("|---|---|---|---|---:|---:|---:|---|---|")
    for r in rows:
        print(
            f"| {r['mode']} | {r['source']} | {r['target']} | {r['size']} | {r['old_us']:.1f} | {r['new_us']:.1f} "
            f"| {r['ratio']:.3f} | {r['ratio_min']:.3f}–{r['ratio_max']:.3f} | {'yes' if r['same_output'] else 'NO'} |"
        )
    for mode in modes:
        for size in SIZES:
            sel = [r["ratio"] for r in rows if r["mode"] == mode and r["size"] == size]
            if sel:
                worst = max((r for r in rows if r["mode"] == mode and r["size"] == size), key=lambda r: r["ratio"])
                print(
                    f"{mode} {size}: median new/old {statistics.median(sel):.3f}, worst {worst['ratio']:.3f} "
                    f"({worst['source']} -> {worst['target']}), {sum(x > 1.05 for x in sel)} of {len(sel)} over 1.05"
                )
    print(f"load average (1 min) during the runs: {min(loads):.1f}–{max(loads):.1f}")
    if a.json:
        a.json.write_text(json.dumps({"counts": counts, "loads": loads, "runs": runs, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
