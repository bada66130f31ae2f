"""Where a ``migrate`` run on a running 2-worker Dask ``LocalCluster`` spends its time (issue 27).

For each size, a mixed JSON Lines file from the benchmark's corpus is migrated to response-v2
with ``-j 1`` and on the cluster (``envglot.migrate(..., engine="dask", client=...)``), in
rounds. A Dask run is split with the client's timestamps and ``distributed``'s task stream:
from the call to the first task's start (walk, plan, submit, scheduling), the tasks (per worker:
busy seconds, idle seconds before its last task ended, tasks run), the follow-up task putting a
ranged file together, and from the last task's end to the call's return (the client's commit).
CPU seconds per process (the workers; this process: the driver, the scheduler, the nannies) and
per thread (the client's driver and event loop, the workers' task threads and event loops): the
machine may be shared, so CPU, not wall time, shows the cost. The cluster's first run (imports,
the workers' Migrator) is timed apart::

    python benchmarks/dask_profile.py --sizes 50,200,500,1000 --rounds 2
    python benchmarks/dask_profile.py --small-files --rounds 2
    python benchmarks/dask_profile.py --split --sizes 50 --rounds 3
    python benchmarks/dask_profile.py --split --cluster distributed.worker.profile.enabled=false

``--cluster cli`` runs on the cluster ``--engine dask --workers 2`` starts (envglot's batch
settings); the default, ``plain``, on one with ``distributed``'s defaults (a user's own cluster).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
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


def thread_cpu() -> dict[str, float]:
    """CPU seconds (user + system) of this process's threads by role: ``main`` (a worker's event
    loop; in the client, the driver), ``loop`` (the client's event loop: the scheduler, the nannies,
    the client's communication), ``tasks`` (a worker's task threads), ``other``."""
    import threading

    import psutil

    names = {t.native_id: t.name for t in threading.enumerate()}
    out: dict[str, float] = {}
    for t in psutil.Process().threads():
        name = names.get(t.id, "")
        role = (
            "main"
            if name == "MainThread"
            else "loop"
            if name == "IO loop"
            else "tasks"
            if "Dask-Default-Threads" in name
            else "other"
        )
        out[role] = out.get(role, 0.0) + t.user_time + t.system_time
    return out


def threads_of(client: Any) -> dict[str, dict[str, float]]:
    """:func:`thread_cpu` of this process (``client``) and of each worker (``worker i``)."""
    out = {"client": thread_cpu()}
    for i, (_, cpu) in enumerate(sorted(client.run(thread_cpu).items())):
        out[f"worker {i}"] = cpu
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
    """One Dask run, split by the task stream and the client's timestamps (``stream``: each task's
    ``(start, stop, worker, key)`` in ``time.time()``, sorted; ``start``: the call's)."""
    from distributed import get_task_stream

    import envglot

    c0, h0 = cpu_of(pids), threads_of(client)
    with get_task_stream(client) as ts:
        t0, d0 = time.time(), time.thread_time()
        rep = envglot.migrate([src], out=out, to=TO, engine="dask", client=client)
        t1, d1 = time.time(), time.thread_time()
    c1, h1 = cpu_of(pids), threads_of(client)
    roles: dict[str, float] = {}
    for proc, cpu in h1.items():
        for role, v in cpu.items():
            key = f"{'client' if proc == 'client' else 'workers'} {role}"
            roles[key] = roles.get(key, 0.0) + v - h0[proc].get(role, 0.0)
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
        "start": t0,
        "stream": tasks,
        "wall": t1 - t0,
        "to_first_task": first - t0,
        "tasks_span": last - first,
        "after_last_task": t1 - last,
        "tasks": len(tasks),
        "busy": sorted(busy.values()),
        "idle": sorted(idle.values()),
        "finish_ranged": sum(final),
        "cpu": {k: c1[k] - c0[k] for k in c0},
        "threads": {k: v for k, v in sorted(roles.items()) if v >= 0.005},
        "driver_cpu": d1 - d0,
    }


def shown(r: dict[str, Any]) -> str:
    """A Dask run's split, as printed."""
    cpu = ", ".join(f"{k} {v:.2f}" for k, v in r["cpu"].items())
    return (
        f"{r['wall']:.2f} s: to first task {r['to_first_task']:.3f}, tasks {r['tasks']} over {r['tasks_span']:.2f} "
        f"(busy {', '.join(f'{b:.2f}' for b in r['busy'])}; idle {', '.join(f'{b:.2f}' for b in r['idle'])}; "
        f"finish_ranged {r['finish_ranged']:.3f}), "
        f"after last task {r['after_last_task']:.3f}; CPU s: {cpu} (driver {r['driver_cpu']:.2f}); by thread: "
        + ", ".join(f"{k} {v:.2f}" for k, v in r["threads"].items())
    )


def small_files(cycle: list[bytes], work: Path, client: Any, pids: dict[str, int], rounds: int) -> None:
    """The small-files row: ~1 KB files against one 10 MB file of the same records, alternated."""
    import run

    one, many, files, _, _ = run.make_small_files(cycle, work / "files", 10.0)
    dask_run(one.parent, work / "out", client, pids)  # the workers' imports and Migrator: once per cluster
    for i in range(rounds):
        load = os.getloadavg()[0]
        r1 = dask_run(one.parent, work / "out", client, pids)
        rn = dask_run(many, work / "out", client, pids)
        print(f"round {i} load {load:.1f}: {files} files / one file = {rn['wall'] / r1['wall']:.2f}", flush=True)
        print(f"  one file: {shown(r1)}\n  {files} files: {shown(rn)}", flush=True)


def timed_task(spec: Any, pieces: Any) -> float:
    """Run one task (its temporaries removed); the CPU seconds of the thread that ran it."""
    from envglot.migration.partitions import run_task

    t = time.thread_time()
    for r in run_task(spec, pieces):
        if r.tmp is not None:
            os.unlink(r.tmp)
    return time.thread_time() - t


def on_main_threads(
    client: Any, spec: Any, ranges: list[Any], pids: dict[str, int], together: bool = True
) -> tuple[float, float]:
    """The same ranges run on each worker's main thread (``client.run``: its event loop blocked while
    one runs, so nothing of ``distributed``'s runs beside it), each worker taking every other range,
    side by side (``together=False``: one worker after the other, never two conversions at once):
    the CPU of the threads that ran them and of the worker processes."""
    from concurrent.futures import ThreadPoolExecutor

    addrs = sorted(client.scheduler_info()["workers"])
    names = [k for k in pids if k.startswith("worker")]

    def one_worker(i: int) -> float:
        return sum(client.run(timed_task, spec, t, workers=[addrs[i]])[addrs[i]] for t in ranges[i :: len(addrs)])

    c0 = cpu_of(pids)
    with ThreadPoolExecutor(len(addrs) if together else 1) as pool:
        threads = sum(pool.map(one_worker, range(len(addrs))))
    c1 = cpu_of(pids)
    return threads, sum(c1[k] - c0[k] for k in names)


def split(src: Path, work: Path, client: Any, pids: dict[str, int], rounds: int) -> None:
    """The same 16 ranges of ``src`` run in this thread and as tasks: where a worker's extra CPU goes."""
    from envglot.migration.fs import run_id
    from envglot.migration.partitions import RunSpec, plan
    from envglot.migration.walk import FileSpec

    out = work / "out"
    out.mkdir()
    n = src.stat().st_size
    f = FileSpec(0, src.name, str(src), str(out / src.name), False, False, n, 0o644, str(out / src.name))
    spec = RunSpec(run=run_id(dask=True), options={"to": TO}, style="compact", chunk_bytes=2**20, check=False)
    whole, ranges = plan([f], n + 1, cut=False), plan([f], -(-n // 16))
    workers = [k for k in pids if k.startswith("worker")]
    client.gather([client.submit(timed_task, spec, ranges[k], pure=False) for k in range(2)])  # warm
    for i in range(rounds):
        one = timed_task(spec, whole[0])
        here = sum(timed_task(spec, t) for t in ranges)
        c0 = cpu_of(pids)
        threads = sum(client.gather([client.submit(timed_task, spec, t, pure=False) for t in ranges]))
        c1 = cpu_of(pids)
        procs = sum(c1[k] - c0[k] for k in workers)
        main, mprocs = on_main_threads(client, spec, ranges, pids)
        alone, _ = on_main_threads(client, spec, ranges, pids, together=False)
        print(
            f"round {i} load {os.getloadavg()[0]:.1f}: one piece here {one:.2f} s CPU, 16 ranges here {here:.2f} "
            f"({here / one:.2f} x); as tasks: their threads {threads:.2f} ({threads / here:.2f} x here), "
            f"the worker processes {procs:.2f} (+{procs / threads - 1:.0%} beyond the task threads); "
            f"on the workers' main threads (event loops blocked): {main:.2f} ({main / here:.2f} x here), "
            f"the processes {mprocs:.2f} (+{mprocs / main - 1:.0%}); there, one worker at a time: "
            f"{alone:.2f} ({alone / here:.2f} x here)",
            flush=True,
        )
    shutil.rmtree(out)


def settings(text: str) -> dict[str, Any]:
    """``KEY=VALUE,...`` as Dask settings (``true``/``false`` as booleans)."""
    out: dict[str, Any] = {}
    for item in text.split(","):
        key, _, value = item.partition("=")
        out[key.strip()] = {"true": True, "false": False}.get(value.strip().lower(), value.strip())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="50,200", help="file sizes in MB, comma-separated")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument(
        "--small-files", action="store_true", help="instead: ~1 KB files against one 10 MB file of the same records"
    )
    ap.add_argument(
        "--split", action="store_true", help="instead: the first size's 16 ranges run here and as tasks (CPU)"
    )
    ap.add_argument(
        "--cluster",
        default="plain",
        help="the running cluster's Dask settings: 'plain' (distributed's defaults), 'cli' (as "
        "--engine dask starts it: envglot's batch settings, where the tree has them), or "
        "KEY=VALUE[,KEY=VALUE...] (e.g. distributed.worker.profile.enabled=false)",
    )
    a = ap.parse_args()
    import run
    from dask_ab import cli_cluster, mix, running_cluster

    config: Any = None if a.cluster == "plain" else "cli" if a.cluster == "cli" else settings(a.cluster)
    if config == "cli" and cli_cluster() is None:
        print("this tree has no start_local_cluster: the CLI's cluster is a plain LocalCluster")
    print(f"cluster settings: {config or 'distributed defaults'}; load {os.getloadavg()}", flush=True)
    cycle = mix()
    with running_cluster("envglot-dask-profile-", config) as (client, work):
        pids = processes(client)
        if a.small_files:
            small_files(cycle, work, client, pids, a.rounds)
            return
        src = work / "corpus.jsonl"
        if a.split:
            run.write_jsonl(src, cycle, int(float(a.sizes.split(",")[0]) * MB))
            split(src, work, client, pids, a.rounds)
            return
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
                print(
                    f"{nbytes / MB:.0f} MB round {i} load {load:.1f}: -j 1 {jw:.2f} s ({jc:.2f} s CPU); "
                    f"dask = {jw / r['wall']:.2f} x: {shown(r)} (all {sum(r['cpu'].values()):.2f})",
                    flush=True,
                )
            print(f"{nbytes / MB:.0f} MB, {records} records: median -j 1 / dask {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
