"""Where a ``migrate`` run on a running 2-worker Dask ``LocalCluster`` spends its time (issue 27).

For each size, a mixed JSON Lines file from the benchmark's corpus is migrated to response-v2
with ``-j 1`` and on the cluster (``envglot.migrate(..., engine="dask", client=...)``), in
rounds. A Dask run is split with the client's timestamps and ``distributed``'s task stream:
from the call to the first task's start (walk, plan, submit, scheduling), the tasks (per worker:
busy seconds, idle seconds before its last task ended, tasks run), the follow-up task putting a
ranged file together, and from the last task's end to the call's return (the client's commit).
CPU seconds per process (the workers; this process: the driver, the scheduler, the nannies): the
machine may be shared, so CPU, not wall time, shows the cost. The cluster's first run (imports,
the workers' Migrator) is timed apart::

    python benchmarks/dask_profile.py --sizes 50,200,500 --rounds 2
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

MB = 2**20
TO = "response-v2"


def cpu_of(pids: dict[str, int]) -> dict[str, float]:
    """CPU seconds (user + system) of each named process."""
    import psutil

    out = {}
    for name, pid in pids.items():
        c = psutil.Process(pid).cpu_times()
        out[name] = c.user + c.system
    return out


def processes(client: Any) -> dict[str, int]:
    """This process (the driver, the scheduler and the ``LocalCluster``'s nannies) and each worker, by name."""
    pids = {"client": os.getpid()}
    for i, (_, pid) in enumerate(sorted(client.run(os.getpid).items())):
        pids[f"worker {i}"] = pid
    return pids


def j1_run(src: Path, out: Path) -> tuple[float, float]:
    """``-j 1``: wall and CPU seconds."""
    import envglot

    c0, t0 = time.thread_time(), time.perf_counter()  # this thread's: not the scheduler's threads
    rep = envglot.migrate([src], out=out, to=TO, jobs=1)
    wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
    assert rep.exit_code in (0, 65), rep.exit_code
    shutil.rmtree(out)
    return wall, cpu


def dask_run(src: Path, out: Path, client: Any, pids: dict[str, int]) -> dict[str, Any]:
    """One Dask run, split by the task stream and the client's timestamps."""
    from distributed import get_task_stream

    import envglot

    c0 = cpu_of(pids)
    with get_task_stream(client) as ts:
        t0, d0 = time.time(), time.thread_time()
        rep = envglot.migrate([src], out=out, to=TO, engine="dask", client=client)
        t1, d1 = time.time(), time.thread_time()
    c1 = cpu_of(pids)
    assert rep.exit_code in (0, 65), rep.exit_code
    shutil.rmtree(out)
    tasks = []
    for t in ts.data:
        for s in t["startstops"]:
            if s["action"] == "compute":
                tasks.append((s["start"], s["stop"], t["worker"], t["key"]))
    tasks.sort()
    first, last = tasks[0][0], max(t[1] for t in tasks)
    per_worker: dict[str, list[tuple[float, float]]] = {}
    for a, b, w, _ in tasks:
        per_worker.setdefault(w, []).append((a, b))
    busy = {w: sum(b - a for a, b in v) for w, v in per_worker.items()}
    idle = {w: (last - first) - busy[w] for w in per_worker}
    final = [b - a for a, b, _, k in tasks if str(k).startswith("finish_ranged")]
    return {
        "wall": t1 - t0,
        "to_first_task": first - t0,
        "tasks_span": last - first,
        "after_last_task": t1 - last,
        "tasks": len(tasks),
        "busy": sorted(busy.values()),
        "idle": sorted(idle.values()),
        "finish_ranged": sum(final),
        "cpu": {k: c1[k] - c0[k] for k in c0},
        "driver_cpu": d1 - d0,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="50,200", help="file sizes in MB, comma-separated")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    import corpus
    import run
    from distributed import Client, LocalCluster

    corp = corpus.generate(run.MODES["quick"].counts)
    sources = tuple(d for d in corpus.DIALECTS if d != TO and run.DIALECT_MODULES[d].shape.marked_success)
    cycle = corpus.jsonl_mix(corp, sources, corp.seed, run.MODES["full"].jsonl_per_dialect)
    work = Path(tempfile.mkdtemp(prefix="envglot-dask-profile-"))
    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None, silence_logs=50
    )
    client = Client(cluster)
    try:
        pids = processes(client)
        src = work / "corpus.jsonl"
        first = True
        for size in (float(s) for s in a.sizes.split(",")):
            records, nbytes = run.write_jsonl(src, cycle, int(size * MB))
            if first:  # the workers' imports and Migrator: once per cluster
                r = dask_run(src, work / "out", client, pids)
                cpu = ", ".join(f"{k} {v:.2f}" for k, v in r["cpu"].items())
                print(f"first run on the new cluster ({nbytes / MB:.0f} MB): {r['wall']:.2f} s; CPU s: {cpu}")
                first = False
            ratios = []
            for i in range(a.rounds):
                load = os.getloadavg()[0]
                jw, jc = j1_run(src, work / "out")
                r = dask_run(src, work / "out", client, pids)
                ratios.append(jw / r["wall"])
                cpu = ", ".join(f"{k} {v:.2f}" for k, v in r["cpu"].items())
                print(
                    f"{nbytes / MB:.0f} MB round {i} load {load:.1f}: -j 1 {jw:.2f} s ({jc:.2f} s CPU); "
                    f"dask {r['wall']:.2f} s = {jw / r['wall']:.2f} x: to first task {r['to_first_task']:.3f}, "
                    f"tasks {r['tasks']} over {r['tasks_span']:.2f} (busy {', '.join(f'{b:.2f}' for b in r['busy'])}; "
                    f"idle {', '.join(f'{b:.2f}' for b in r['idle'])}; finish_ranged {r['finish_ranged']:.3f}), "
                    f"after last task {r['after_last_task']:.3f}; CPU s: {cpu} (driver {r['driver_cpu']:.2f}) "
                    f"(all {sum(r['cpu'].values()):.2f})",
                    flush=True,
                )
            print(f"{nbytes / MB:.0f} MB, {records} records: median -j 1 / dask {statistics.median(ratios):.2f}")
    finally:
        client.close()
        cluster.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
