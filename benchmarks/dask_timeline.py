"""A timeline of ``migrate`` runs on a 2-worker Dask ``LocalCluster`` started as ``run.py`` starts
its "cluster running" row (issue 27): wall and CPU seconds per part.

The client's parts (imports, starting the cluster, connecting, the walk and plan, submitting,
waiting for results, putting ranges together, the commit, closing) are timed in this process by
wrapping the engine's functions; each task's start and end per worker come from
``distributed``'s task stream; CPU seconds per process (this one: the driver, the scheduler and
the nannies; each worker) from ``psutil``. Runs 1..N go one after the other on the same cluster:
run 1 is the cluster's first (a worker's first task pays its imports and its Migrator unless the
cluster was warmed). Then, on a second new cluster, what that warm-up costs in a worker, step by
step (``client.run``)::

    python benchmarks/dask_timeline.py --size 200 --work-dir /dev/shm/dask4 --runs 3
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

MB = 2**20
TO = "response-v2"
EVENTS: list[tuple[str, float, float, float]] = []
"""``(part, start, end, this thread's CPU seconds)`` of the client's timed parts (wall: ``time.time``)."""


def timed(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` recording its wall span and this thread's CPU under ``label``."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kw: Any) -> Any:
        t, c = time.time(), time.thread_time()
        try:
            return fn(*args, **kw)
        finally:
            EVENTS.append((label, t, time.time(), time.thread_time() - c))

    return wrapper


def instrument() -> None:
    """Wrap the client's parts of a Dask run (their public functions, in the modules that call them)."""
    from envglot.migration import assembly, commit, dask_engine, driver, executors, rejects

    dask_engine.walk_specs = timed("walk", dask_engine.walk_specs)
    dask_engine.check_specs = timed("check outputs", dask_engine.check_specs)
    dask_engine.rebuild_migrator = timed("client's Migrator", dask_engine.rebuild_migrator)
    driver.plan = timed("plan", driver.plan)
    parts = {
        executors.DaskCluster: ("__init__", "submit", "next", "close"),
        assembly.Assembly: ("add", "close"),  # ranges put together as they come in
        commit.CommitBatch: ("flush",),  # renames, syncs
        rejects.RejectsFile: ("commit",),
    }
    for cls, names in parts.items():
        for name in names:
            setattr(cls, name, timed(f"{cls.__name__}.{name}", getattr(cls, name)))


def table(rows: list[tuple[str, float, float, str]]) -> str:
    """A Markdown table of ``(part, wall s, CPU s, note)``."""
    lines = ["| part | wall s | CPU s | |", "|---|---:|---:|---|"]
    lines += [f"| {p} | {w:.3f} | {'' if c != c else f'{c:.3f}'} | {n} |" for p, w, c, n in rows]
    return "\n".join(lines)


def one_run(src: Path, out: Path, client: Any, pids: dict[str, int], k: int) -> None:
    """One Dask run on the running cluster, printed as a timeline."""
    from dask_profile import dask_run

    EVENTS.clear()
    r = dask_run(src, out, client, pids)
    tasks, t0 = r["stream"], r["start"]
    t1 = t0 + r["wall"]
    workers = sorted({w for _, _, w, _ in tasks})
    first = tasks[0][0]
    last = max(b for _, b, _, _ in tasks)
    print(f"\n### run {k} ({src.stat().st_size / MB:.0f} MB, load {os.getloadavg()[0]:.1f})\n")
    print(
        f"wall {r['wall']:.3f} s; driver thread CPU {r['driver_cpu']:.3f} s; processes' CPU: "
        + ", ".join(f"{n} {c:.2f}" for n, c in r["cpu"].items())
    )
    print("\ntasks (start and end from the call, s; per worker, in order):\n")
    print("| worker | task | start | end | wall s | idle before s |")
    print("|---|---:|---:|---:|---:|---:|")
    for wi, w in enumerate(workers):
        prev = t0
        mine = [(a, b) for a, b, ww, _ in tasks if ww == w]
        for i, (a, b) in enumerate(mine):
            print(f"| {wi} | {i} | {a - t0:.3f} | {b - t0:.3f} | {b - a:.3f} | {a - prev:.3f} |")
            prev = b
        busy = sum(b - a for a, b in mine)
        print(f"| {wi} | busy {busy:.3f} s; idle before the last task's end {last - mine[-1][1]:.3f} s | | | | |")
    agg: dict[str, list[float]] = {}
    for label, a, b, c in EVENTS:
        agg.setdefault(label, [0.0, 0.0, 0])  # type: ignore[list-item]
        agg[label][0] += b - a
        agg[label][1] += c
        agg[label][2] += 1
    print("\nclient's parts (driver thread; summed over calls):\n")
    rows = [(p, w, c, f"{int(n)} calls") for p, (w, c, n) in agg.items()]
    rows.append(("call → first task's start", first - t0, float("nan"), ""))
    rows.append(("first task's start → last task's end", last - first, float("nan"), f"{len(tasks)} tasks"))
    rows.append(("last task's end → return", t1 - last, float("nan"), ""))
    print(table(rows))


def warmup_steps(client: Any, sample: list[bytes]) -> None:
    """On a new cluster: what a worker's first task pays before converting, step by step (and the
    first pass over ``sample``'s records against the second: first-use costs)."""

    def step(sample: list[bytes]) -> dict[str, tuple[float, float]]:
        out: dict[str, float] = {}
        t, c = time.perf_counter(), time.thread_time()
        import envglot.migration.partitions  # noqa: F401

        out["import envglot.migration.partitions"] = (time.perf_counter() - t, time.thread_time() - c)
        from envglot.migration.workers import migrator_for

        t, c = time.perf_counter(), time.thread_time()
        mig = migrator_for({"to": TO})
        out["migrator_for (Migrator built)"] = (time.perf_counter() - t, time.thread_time() - c)
        from envglot.migration.tally import Tally

        for k in ("first", "second"):
            t, c = time.perf_counter(), time.thread_time()
            count, done = mig.counter(Tally())
            for r in sample:
                count(r)
            done()
            out[f"{k} pass over {len(sample)} records"] = (time.perf_counter() - t, time.thread_time() - c)
        return out

    res = client.run(step, sample)
    for w, parts in sorted(res.items()):
        print(f"\nworker {w}:\n")
        print(table([(p, wc[0], wc[1], "") for p, wc in parts.items()]))


def peak_rss_mb() -> float:
    """This process's peak resident set (``VmHWM``), MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    t_start = time.time()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=float, default=200.0, help="MB")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work-dir", type=Path, default=None)
    ap.add_argument("--cluster", default="plain", help="'plain' (as run.py starts it) or 'cli' (start_local_cluster)")
    a = ap.parse_args()
    c = time.thread_time()
    t = time.time()
    import distributed  # noqa: F401

    import envglot  # noqa: F401

    imports = (time.time() - t, time.thread_time() - c)
    import run
    from dask_ab import mix, running_cluster
    from dask_profile import processes

    instrument()
    if a.work_dir is not None:  # the cluster's work directory (dask_ab.running_cluster) under it
        a.work_dir.mkdir(parents=True, exist_ok=True)
        tempfile.tempdir = str(a.work_dir)
    t, c = time.time(), time.thread_time()
    with running_cluster("timeline-", "cli" if a.cluster == "cli" else None) as (client, work):
        started = (time.time() - t, time.thread_time() - c)
        src = work / "corpus.jsonl"
        records, nbytes = run.write_jsonl(src, mix(), int(a.size * MB))
        print(f"{nbytes / MB:.0f} MB, {records} records; load {os.getloadavg()}", flush=True)
        pids = processes(client)
        print("\n### this process, before the runs\n")
        since = t_start - __import__("psutil").Process().create_time()
        print(
            table(
                [
                    ("interpreter start → main()", since, float("nan"), ""),
                    ("import distributed, envglot", *imports, ""),
                    (f"start the LocalCluster ({a.cluster}), connect", *started, "workers' processes started"),
                ]
            )
        )
        for k in range(1, a.runs + 1):
            one_run(src, work / "out", client, pids, k)
        peaks = client.run(peak_rss_mb)
        print("\nworkers' peak RSS (VmHWM), MB: " + ", ".join(f"{v:.1f}" for _, v in sorted(peaks.items())))
        t, c = time.time(), time.thread_time()
    print("\n" + table([("close client and cluster", time.time() - t, time.thread_time() - c, "")]))
    print("\n### a worker's first-task warm-up, step by step (a second new cluster)")
    with running_cluster("timeline-warm-up-") as (c2, _):
        warmup_steps(c2, mix()[:3000])


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    main()
