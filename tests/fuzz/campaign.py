"""A fuzz campaign: inputs by seed, failures grouped, each group's reproducer shrunk.

Used by ``scripts/fuzz.py`` (multiprocessing) and by the test suite (a small budget).
"""

from __future__ import annotations

import json
import re
import signal
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cli import cli_runs
from .mutator import Mutator, without_residues
from .oracle import PROBES, SDK_PROBES, Failure, Input, Probe, by_name, calls
from .tree import Obj, dump, parse

__all__ = ["Group", "Tally", "code_literal", "reproducer", "run_seeds", "shrink", "write_findings"]

SLOW_SECONDS = 10.0
"""An input whose probes take more CPU time than this, plus :data:`SLOW_SECONDS_PER_MB` per
megabyte of input, is a finding of its own (time must not blow up).

CPU time of this process, not wall time: a campaign paused (SIGSTOP) or starved by other work
must not report its inputs as slow."""
SLOW_SECONDS_PER_MB = 10.0
"""An input goes through about 140 entry-point calls. Measured linear costs: a 6 MB document
on error paths, 2 s/MB; a 2 MB string of escapes written to code-graph from Python values
(``approx_tokens`` counts each escape in a regex callback, ~0.6 µs each, in ~20 of the calls),
5–9 s/MB. A time that grows faster than the input (the bug this check looks for) passes
this allowance at once."""
INPUT_TIMEOUT = 120
"""CPU seconds after which an input is abandoned as a timeout (``ITIMER_PROF``)."""


@dataclass
class Group:
    """One failure group: how often, which entry points, the smallest input seen."""

    count: int = 0
    probes: Counter[str] = field(default_factory=Counter)
    data: bytes = b""
    probe: str = ""
    detail: str = ""
    seed: int | None = None

    def add(self, f: Failure, seed: int | None) -> None:
        self.count += 1
        self.probes[f.probe] += 1
        if not self.data or len(f.data) < len(self.data):
            self.data, self.probe, self.detail, self.seed = f.data, f.probe, f.detail, seed

    def merge(self, other: Group) -> None:
        self.count += other.count
        self.probes.update(other.probes)
        if other.data and (not self.data or len(other.data) < len(self.data)):
            self.data, self.probe, self.detail, self.seed = other.data, other.probe, other.detail, other.seed


@dataclass
class Tally:
    """What a batch of inputs gave."""

    inputs: int = 0
    calls: int = 0
    cli_runs: int = 0
    failing_inputs: int = 0
    groups: dict[str, Group] = field(default_factory=dict)
    seconds: float = 0.0

    def add(self, fs: list[Failure], seed: int | None) -> None:
        if fs:
            self.failing_inputs += 1
        for f in fs:
            self.groups.setdefault(f.group, Group()).add(f, seed)

    def merge(self, other: Tally) -> None:
        self.inputs += other.inputs
        self.calls += other.calls
        self.cli_runs += other.cli_runs
        self.failing_inputs += other.failing_inputs
        self.seconds += other.seconds
        for k, g in other.groups.items():
            self.groups.setdefault(k, Group()).merge(g)


class _Timeout(BaseException):
    """An input ran past :data:`INPUT_TIMEOUT` CPU seconds (BaseException: probes must not catch it)."""


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout


def run_seeds(seeds: range, cli_every: int = 0, sdk_every: int = 20, repeat_every: int = 4) -> Tally:
    """Mutated inputs for ``seeds``, every API probe on each; the CLI on every ``cli_every``-th.

    Every ``repeat_every``-th input has each call made twice (determinism); the SDK
    output of ``emits`` (pydantic, slow) runs on every ``sdk_every``-th input.
    """
    tally = Tally()
    t0 = time.perf_counter()
    old = signal.signal(signal.SIGPROF, _alarm)
    try:
        for seed in seeds:
            inp = Input.of(Mutator(seed).case())
            probes = PROBES + SDK_PROBES if sdk_every and seed % sdk_every == 0 else PROBES
            c0, s0 = calls(), time.process_time()
            signal.setitimer(signal.ITIMER_PROF, INPUT_TIMEOUT)
            try:
                fs: list[Failure] = []
                repeat = seed % repeat_every == 0
                for p in probes:
                    fs += p.run(inp, repeat)
            except _Timeout:
                fs = [Failure("timeout: an input ran past the time limit", "api", "timeout", inp.data)]
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
            took = time.process_time() - s0
            mb = len(inp.data) / 1e6
            if took > SLOW_SECONDS + SLOW_SECONDS_PER_MB * mb:
                fs.append(
                    Failure(
                        f"slow: an input took over {SLOW_SECONDS:.0f} CPU s + {SLOW_SECONDS_PER_MB:.0f} s/MB",
                        "api",
                        f"{took:.1f} CPU s for {mb:.2f} MB",
                        inp.data,
                    )
                )
            if cli_every and seed % cli_every == 0:
                fs += cli_runs(inp, seed // cli_every)
                tally.cli_runs += 4
            tally.calls += calls() - c0
            tally.inputs += 1
            tally.add(fs, seed)
    finally:
        signal.signal(signal.SIGPROF, old)
    tally.seconds = time.perf_counter() - t0
    return tally


# ---- shrinking ------------------------------------------------------------------------------


def _input(data: bytes) -> Input:
    inp = Input.from_bytes(data)
    if b"_envglot" in data and inp.tree is not None:
        try:
            inp.twin = dump(without_residues(inp.tree))
        except RecursionError:
            pass
    return inp


def _still(probe: Probe, group: str, data: bytes) -> bool:
    try:
        return any(f.group == group for f in probe.run(_input(data)))
    except RecursionError:
        return False


def _candidates(tree: Any) -> Iterator[Any]:
    """Smaller variants of a tree: one value dropped, emptied, shortened or hoisted."""
    slots: list[tuple[Any, int]] = []
    todo = [tree]
    while todo and len(slots) < 400:
        node = todo.pop(0)
        if isinstance(node, list):
            for i in range(len(node)):
                slots.append((node, i))
                todo.append(node[i][1] if isinstance(node, Obj) else node[i])
    for cont, i in slots:
        old = cont[i]
        val = old[1] if isinstance(cont, Obj) else old

        def put(v: Any, cont: Any = cont, i: int = i, old: Any = old) -> Any:
            cont[i] = (old[0], v) if isinstance(cont, Obj) else v
            return tree

        del cont[i]
        yield tree
        cont.insert(i, old)
        if isinstance(val, list) and val:
            yield put(val[0][1] if isinstance(val, Obj) else val[0])  # hoist the first child
            yield put(Obj() if isinstance(val, Obj) else [])
        if isinstance(val, str) and len(val) > 4:
            yield put(val[: len(val) // 2])
        if isinstance(cont, Obj) and len(old[0]) > 4:
            cont[i] = (old[0][: len(old[0]) // 2], val)
            yield tree
        cont[i] = old


def shrink(probe: Probe, group: str, data: bytes, budget: int = 400) -> bytes:
    """A smaller input that still fails ``probe`` in ``group`` (greedy, structural then bytes)."""
    try:
        tree = parse(data)
    except (ValueError, RecursionError):
        tree = None
    if tree is not None and dump(tree) == data:
        progress = True
        while progress and budget > 0:
            progress = False
            for cand in _candidates(tree):
                budget -= 1
                if budget <= 0:
                    break
                try:
                    b = dump(cand)
                except RecursionError:
                    continue
                if len(b) < len(data) and _still(probe, group, b):
                    data, tree, progress = b, parse(b), True
                    break
    chunk = max(len(data) // 2, 1)
    while chunk >= 1 and budget > 0:  # byte-level: drop chunks
        i, shrunk = 0, False
        while i < len(data) and budget > 0:
            budget -= 1
            cand = data[:i] + data[i + chunk :]
            if cand and _still(probe, group, cand):
                data, shrunk = cand, True
            else:
                i += chunk
        if not shrunk:
            chunk //= 2
    return data


# ---- reproducers ---------------------------------------------------------------------------

_RUN = re.compile(rb"(.{1,8}?)\1{9,}", re.S)


def code_literal(data: bytes) -> str:
    """A short Python expression for ``data``: long repetitions become ``b'x' * n``."""
    parts: list[str] = []
    pos = 0
    for m in _RUN.finditer(data):
        unit = m.group(1)
        n = len(m.group(0)) // len(unit)
        if len(unit) * n < 30:
            continue
        if m.start() > pos:
            parts.append(repr(data[pos : m.start()]))
        parts.append(f"{unit!r}*{n}")
        pos = m.start() + len(unit) * n
    if pos < len(data) or not parts:
        parts.append(repr(data[pos:]))
    return " + ".join(parts)


def reproducer(probe_name: str, data: bytes) -> str:
    """A Python one-liner that reproduces a failure of ``probe_name`` on ``data``."""
    code = by_name()[probe_name].code if probe_name in by_name() else f"<{probe_name}>"
    imports = "envglot, envglot.mcp, envglot.inspect, envglot.proxy.rewrite"
    return f'python -c "import {imports}; D = {code_literal(data)}; print({code})"'


def write_findings(tally: Tally, out: Path, shrink_budget: int = 400) -> list[dict[str, Any]]:
    """Shrink each group's smallest input and write ``NN-slug.bin`` + a summary per group."""
    out.mkdir(parents=True, exist_ok=True)
    probes = by_name()
    rows = []
    for n, (name, g) in enumerate(sorted(tally.groups.items(), key=lambda kv: -kv[1].count), 1):
        data = g.data
        p = probes.get(g.probe)
        if p is not None and shrink_budget:
            data = shrink(p, name, data, shrink_budget)
        slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")[:60]
        (out / f"{n:03d}-{slug}.bin").write_bytes(data)
        rows.append(
            {
                "group": name,
                "count": g.count,
                "entry_points": dict(g.probes.most_common()),
                "probe": g.probe,
                "detail": g.detail,
                "seed": g.seed,
                "file": f"{n:03d}-{slug}.bin",
                "reproducer": reproducer(g.probe, data) if len(data) < 2000 else f"(see {n:03d}-{slug}.bin)",
            }
        )
    (out / "findings.json").write_text(json.dumps(rows, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return rows
