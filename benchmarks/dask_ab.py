"""``migrate`` on Dask (a running 2-worker ``LocalCluster``) against ``-j 1`` and ``-j 2``, alternated (issue 27).

For each size, a mixed JSON Lines file from the benchmark's corpus (as ``run.py --sections
migrate`` writes it) is migrated to response-v2 in rounds of ``-j 1``, ``-j 2`` (the process
pool) and Dask, through ``envglot.migrate`` (no CLI start-up in any of them). The cluster is
started once; its first run (the workers import envglot and build their Migrator) is timed
apart and not in the rounds. Ratios are taken within a round, then their median: a shared
machine's load moves all three alike. CPU seconds: this process (with the cluster's scheduler
thread) + the children (pool workers, Dask nannies and workers)::

    python benchmarks/dask_ab.py --sizes 1,16,64,200 --rounds 5
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MB = 2**20
TO = "response-v2"


def children_cpu(me: Any) -> float:
    """CPU seconds of the live children (Dask) and of the children waited for (the pool)."""
    import psutil

    t = 0.0
    for p in me.children(recursive=True):
        try:
            c = p.cpu_times()
        except psutil.Error:
            continue
        t += c.user + c.system
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return t + r.ru_utime + r.ru_stime


def timed(src: Path, out: Path, me: Any, **kw: Any) -> tuple[float, float]:
    """One ``envglot.migrate`` of ``src``: wall seconds and CPU seconds of every process."""
    import envglot

    k0, c0, t0 = children_cpu(me), time.process_time(), time.perf_counter()
    rep = envglot.migrate([src], out=out, to=TO, **kw)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0 + children_cpu(me) - k0
    if rep.exit_code not in (0, 65):
        raise SystemExit(f"migrate {kw} exited {rep.exit_code}")
    shutil.rmtree(out)
    return wall, cpu


def mix() -> list[bytes]:
    """The benchmark's mixed records (the dialects whose successes carry a marker), as ``run.py`` mixes them."""
    import corpus
    import run

    corp = corpus.generate(run.MODES["quick"].counts)
    sources = tuple(d for d in corpus.DIALECTS if d != TO and run.DIALECT_MODULES[d].shape.marked_success)
    return corpus.jsonl_mix(corp, sources, corp.seed, run.MODES["full"].jsonl_per_dialect)


@contextlib.contextmanager
def running_cluster(prefix: str, config: dict[str, Any] | None = None) -> Iterator[tuple[Any, Path]]:
    """A client of a new 2-worker ``LocalCluster`` (one thread each, loopback, quiet) and a work
    directory named ``prefix...``: closed and removed at the end. ``config``: Dask settings of
    the cluster (its scheduler, nannies and workers); ``"cli"``: the cluster ``--engine dask``
    starts (:func:`envglot.migration.executors.start_local_cluster`, where the tree has it)."""
    import dask
    from distributed import Client, LocalCluster

    work = Path(tempfile.mkdtemp(prefix=prefix))
    start = cli_cluster() if config == "cli" else None
    if start is not None:
        cluster = start(2)
    else:
        with dask.config.set({} if config in (None, "cli") else config):
            cluster = LocalCluster(
                n_workers=2,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                silence_logs=50,
            )
    client = Client(cluster)
    try:
        yield client, work
    finally:
        client.close()
        cluster.close()
        shutil.rmtree(work, ignore_errors=True)


def cli_cluster() -> Any:
    """The tree's ``start_local_cluster`` (the cluster ``--engine dask`` starts), or None (an older
    tree: its CLI starts a plain ``LocalCluster``)."""
    try:
        from envglot.migration.executors import start_local_cluster
    except ImportError:
        return None
    return start_local_cluster


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1,16,64", help="file sizes in MB, comma-separated")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    import psutil
    import run

    cycle = mix()
    me = psutil.Process()
    with running_cluster("envglot-dask-ab-") as (client, work):
        first = True
        for size in (float(s) for s in a.sizes.split(",")):
            src = work / "corpus.jsonl"
            records, nbytes = run.write_jsonl(src, cycle, int(size * MB))
            if first:  # the workers' imports and Migrator: once per cluster
                wall, cpu = timed(src, work / "out", me, engine="dask", client=client)
                print(f"first run on the new cluster ({nbytes / MB:.1f} MB): {wall:.2f} s, {cpu:.2f} s CPU")
                first = False
            rows: list[dict[str, tuple[float, float]]] = []
            for r in range(a.rounds):
                load = os.getloadavg()[0]
                row = {
                    "j1": timed(src, work / "out", me, jobs=1),
                    "j2": timed(src, work / "out", me, jobs=2),
                    "dask": timed(src, work / "out", me, engine="dask", client=client),
                }
                rows.append(row)
                shown = ", ".join(f"{k} {w:.2f} s ({c:.2f} s CPU)" for k, (w, c) in row.items())
                print(f"  {nbytes / MB:.1f} MB round {r} load {load:.1f}: {shown}", flush=True)

            def med(k: str, i: int, rows: list[dict[str, tuple[float, float]]] = rows) -> float:
                return statistics.median(x["j1"][i] / x[k][i] if i == 0 else x[k][i] for x in rows)

            print(
                f"{nbytes / MB:.1f} MB, {records} records: median ratio to -j 1 (wall): -j 2 {med('j2', 0):.2f}, "
                f"dask {med('dask', 0):.2f}; median CPU s: -j 1 {med('j1', 1):.2f}, -j 2 {med('j2', 1):.2f}, "
                f"dask {med('dask', 1):.2f}; load {os.getloadavg()[0]:.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
