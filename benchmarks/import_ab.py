"""``import envglot`` with its tables loaded, two or more installs compared in alternation (issue 28).

For each round and each interpreter given (each a venv's ``bin/python`` with envglot installed
as the README says), a bare interpreter (``-c pass``) and one running the snippet start in turn;
the figure is the snippet's CPU time (the child's rusage: user + system) above the bare one's of
the same round. Alternating the installs round by round spreads a shared machine's load over
both alike. ``PYTHONDONTWRITEBYTECODE`` is removed from the children's environment (the
interpreters read the bytecode pip wrote and write what is missing). Run it from an empty
folder (building the base registry lists the current one)::

    python benchmarks/import_ab.py --rounds 61 --runs 5 /tmp/main/bin/python /tmp/branch/bin/python
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess

SNIPPET = "import envglot; envglot.mappings.default_mappings()"


def cpu_seconds(python: str, code: str, env: dict[str, str]) -> float:
    """CPU time (user + system) of a fresh ``python -c code``."""
    p = subprocess.Popen([python, "-c", code], env=env)
    _, status, usage = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{python} -c {code!r} failed")
    return usage.ru_utime + usage.ru_stime


def one_run(pythons: list[str], rounds: int, code: str) -> dict[str, list[float]]:
    """Milliseconds above a bare interpreter, per interpreter, ``rounds`` alternations."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for py in pythons:  # the first run may write bytecode and the tables' cache
        cpu_seconds(py, code, env)
    above: dict[str, list[float]] = {py: [] for py in pythons}
    for _ in range(rounds):
        for py in pythons:
            bare = cpu_seconds(py, "pass", env)
            above[py].append(1000 * (cpu_seconds(py, code, env) - bare))
    return above


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pythons", nargs="+", help="interpreters of the installs to compare")
    ap.add_argument("--rounds", type=int, default=61)
    ap.add_argument("--runs", type=int, default=5, help="runs, each of --rounds alternations")
    ap.add_argument("--code", default=SNIPPET, help="what each interpreter runs (default: %(default)s)")
    args = ap.parse_args()
    medians: dict[str, list[float]] = {py: [] for py in args.pythons}
    for run in range(args.runs):
        load = os.getloadavg()[0]
        above = one_run(args.pythons, args.rounds, args.code)
        for py, ms in above.items():
            q = statistics.quantiles(ms, n=4)
            medians[py].append(statistics.median(ms))
            print(
                f"run {run + 1} (load {load:.1f}) {py}: min {min(ms):.1f} / "
                f"lower quartile {q[0]:.1f} / median {statistics.median(ms):.1f} ms"
            )
    for py, ms in medians.items():
        shown = " / ".join(f"{m:.1f}" for m in ms)
        print(f"{py}: medians {shown} ms, median of medians {statistics.median(ms):.1f} ms")


if __name__ == "__main__":
    main()
