#!/usr/bin/env python
"""envglot benchmark harness: one command, every measurement side by side in one process.

    python benchmarks/run.py            # full run (a few minutes, writes a 200 MB JSONL file to a temp dir)
    python benchmarks/run.py --quick    # smaller corpus, fewer rounds, 32 MB migration file
    python benchmarks/run.py --smoke    # seconds; checks that the harness works

What is measured (``docs/performance.md`` explains every column):

1. the limit: msgspec decodes each envelope into its dialect's wire ``Envelope`` Struct
   (payload as ``msgspec.Raw``) and encodes it back, decoder and encoder built once;
2. envglot: a reused ``Converter`` per ordered pair (bytes -> bytes), and the one-shot
   ``envglot.convert()`` (dialect auto-detected, as a user would call it);
3. what users write instead: hand-written dict conversions with orjson and with pydantic v2;
4. batch: ``envglot migrate`` end to end on a generated JSONL file, ``-j 1`` and ``-j 2``;
5. the loss policy: the library default (``unsupported="warn"``, logging not configured)
   against ``"ignore"``, and ``"warn"`` with a handler listening;
6. a TOML-declared dialect (``examples/declared/acme.toml``) against the same envelope declared
   in Python (``declared_twin.py``), both compiled by ``envglot.fields``: per pair, the median
   over many rounds of the ratio of two back-to-back passes (``--sections declared --clock cpu``
   on a shared machine);
7. ``preserve=True`` against ``"ignore"`` (``preserve_cost.py``): dotbot -> response-v2 and the
   worst ordered pair, every size, CPU clock;

plus the import time of envglot with its tables loaded. A ratio of two in-memory methods is the
median over the rounds of their ratio in each round (``rate_ratio``). Results print as Markdown tables
and go to ``benchmarks/results/<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import corpus as corpus_mod
import declared_twin
import floors
import handwritten
import msgspec
import orjson
import preserve_cost
import proxy_bench

import envglot
from envglot.dialects import DIALECTS as DIALECT_MODULES
from envglot.dialects import WRITABLE

try:
    import pydantic
    import pydantic_models
except ImportError:  # the optional `bench` extra is not installed
    pydantic = None  # type: ignore[assignment]
    pydantic_models = None  # type: ignore[assignment]

HERE = Path(__file__).resolve().parent
SCHEMA = "envglot-bench/1"
MB = 1_000_000
DASK_ROUNDS = 2
"""Rounds of ``-j 1`` and Dask on the running cluster, one after the other (:func:`run_small_files`)."""
Conv = Callable[[bytes], bytes]


@dataclass(frozen=True)
class Mode:
    """Corpus size and repetition for one kind of run."""

    counts: dict[str, int]
    rounds: int
    migrate_mb: float
    migrate_rounds: int
    """Alternated rounds of the migrate section's ``-j 1``, ``-j 2`` and in-memory baseline."""
    import_runs: int
    jsonl_per_dialect: int
    small_files: int
    """Files of ~1 KB in the local engine's small-files row (issue 13: 20,000)."""
    declared_rounds: int
    """Rounds per pair of the declared section: its ratio is the median of the per-round ratios."""
    declared_pass_s: float
    """CPU or wall seconds one timed pass of the declared section lasts (its documents repeated)."""


MODES: dict[str, Mode] = {
    "full": Mode(
        {"tiny": 2000, "medium": 1000, "large": 200},
        rounds=15,
        migrate_mb=200,
        migrate_rounds=3,
        import_runs=9,
        jsonl_per_dialect=2000,
        small_files=20_000,
        declared_rounds=101,
        declared_pass_s=0.04,
    ),
    "quick": Mode(
        {"tiny": 500, "medium": 250, "large": 50},
        rounds=5,
        migrate_mb=32,
        migrate_rounds=2,
        import_runs=5,
        jsonl_per_dialect=500,
        small_files=5_000,
        declared_rounds=61,
        declared_pass_s=0.02,
    ),
    "smoke": Mode(
        {"tiny": 10, "medium": 5, "large": 3},
        rounds=2,
        migrate_mb=0.5,
        migrate_rounds=1,
        import_runs=2,
        jsonl_per_dialect=20,
        small_files=100,
        declared_rounds=3,
        declared_pass_s=0.0,
    ),
}
PROXY_CALLS = {"full": 1000, "quick": 300, "smoke": 20}
"""Tool calls per side in the proxy section."""

TARGETS = {
    "converter_vs_limit": {"tiny": 0.7, "medium": 0.85, "large": 0.85},
    "converter_vs_floor": {"tiny": 0.85, "medium": 0.9, "large": 0.9},
    "convert_vs_converter": 0.8,
    "preserve_vs_ignore": 2.0,
    "vs_orjson": {"tiny": 1.5, "medium": 2.5, "large": 3.0},
    "vs_pydantic": {"tiny": 5.0, "medium": 5.0, "large": 5.0},
    "migrate_j1_vs_inmemory": 0.8,
    "migrate_j2_vs_j1": 1.7,
    "peak_rss_mb": 100.0,
    "migrate_dask2_vs_j1": 1.6,
    "dask_small_files_ratio": 3.0,
    "local_small_files_ratio": 2.0,
    "dask_worker_rss_mb": 150.0,
    "import_ms": 60.0,
    "proxy_overhead_ms": 1.0,
    "default_vs_ignore": 0.9,
    "declared_toml_vs_python": 0.9,
}


# ---------------------------------------------------------------------------
# the machine


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 1
    # The commit of the envglot tree measured, which is not this script's when PYTHONPATH names
    # another one (an A/B run against a tree extracted with ``git archive`` has none: ``None``).
    tree = Path(envglot.__file__).resolve().parent
    commit = _git("rev-parse", "--short", "HEAD", cwd=tree)
    dirty = _git("status", "--porcelain", "--untracked-files=no", cwd=tree)
    return {
        "nproc": usable,
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "msgspec": msgspec.__version__,
        "orjson": orjson.__version__,
        "pydantic": pydantic.VERSION if pydantic is not None else None,
        "envglot": envglot.__version__,
        "git_commit": commit,
        "git_dirty": bool(dirty) if commit else None,
        "envglot_path": str(tree),
        "loadavg_at_start": _loadavg(),
    }


def _loadavg() -> list[float] | None:
    """1, 5 and 15 minute load averages: a busy machine makes absolute numbers meaningless."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _git(*args: str, cwd: Path = HERE.parent) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


# ---------------------------------------------------------------------------
# timing


@dataclass
class Timing:
    """Per-round wall times of one method over one group of records."""

    method: str
    source: str
    target: str
    size: str
    records: int
    bytes: int
    times: list[float] = field(default_factory=list)
    error: str | None = None

    def row(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "method": self.method,
            "source": self.source,
            "target": self.target,
            "size": self.size,
            "records": self.records,
            "bytes": self.bytes,
        }
        if self.error is not None or not self.times:
            out["error"] = self.error or "not measured"
            return out
        med = statistics.median(self.times)
        out.update(
            rounds=len(self.times),
            median_s=med,
            min_s=min(self.times),
            max_s=max(self.times),
            spread_pct=round(100 * (max(self.times) - min(self.times)) / med, 1),
            envelopes_per_s=round(self.records / med, 1),
            mb_per_s=round(self.bytes / med / MB, 2),
            us_per_envelope=round(med / self.records * 1e6, 3),
            times=list(self.times),
        )
        return out


def rate_ratio(num: dict[str, Any] | None, den: dict[str, Any] | None) -> float | None:
    """``num``'s rate over ``den``'s, as the median over rounds of the two rows' per-round ratios.

    ``measure`` times every method once per round, close together in the round, so round ``i`` of
    one row and round ``i`` of another saw the same load: the ratio of a round's pair is steadier
    than the ratio of the two medians, which can come from different rounds (the declared section
    and the small-files row use the same rule). ``None`` when either row was not measured or
    their rounds differ in number."""
    if not num or not den:
        return None
    a, b = num.get("times"), den.get("times")
    if not a or not b or len(a) != len(b):
        return None
    return round(statistics.median((num["records"] / x) / (den["records"] / y) for x, y in zip(a, b, strict=True)), 3)


CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.thread_time}
"""``--clock``: wall time (default), or the CPU time of the measuring thread, which leaves out
the time the process waits for a core on a machine shared with other work."""
CLOCK = CLOCKS["wall"]


def _one_pass(fn: Conv, items: Sequence[bytes], clock: Callable[[], float]) -> float:
    t0 = clock()
    for b in items:
        fn(b)
    return clock() - t0


def measure(
    methods: dict[str, Conv],
    items: Sequence[bytes],
    rounds: int,
    timings: dict[str, Timing],
    clock: Callable[[], float] | None = None,
) -> None:
    """Warm up every method once (a method that raises is recorded and skipped), then time
    ``rounds`` passes of each, interleaved and in a rotating order so drift hits all alike.
    GC stays on; a collection runs between passes so no pass pays for another's garbage.
    ``clock`` defaults to the one ``--clock`` chose."""
    clock = clock or CLOCK
    live = []
    for name, fn in methods.items():
        try:
            for b in items:
                fn(b)
        except Exception as exc:  # a failing method is a finding, not a crash of the harness
            timings[name].error = f"{type(exc).__name__}: {exc}"
            continue
        live.append(name)
    for r in range(rounds):
        k = r % len(live) if live else 0
        for name in live[k:] + live[:k]:
            gc.collect()
            timings[name].times.append(_one_pass(methods[name], items, clock))


# ---------------------------------------------------------------------------
# the methods


def limit_for(dialect: str) -> Conv:
    """msgspec typed pass-through: decode into the dialect's wire Envelope (payload Raw), encode back.

    legacy-v1 has no envelope Struct (flat per-tool dicts), and a dialect whose success is a bare
    object (``Shape.marked_success`` false: google-rpc's resource) none that decodes both
    outcomes: their limit is ``dict[str, Raw]``.
    """
    mod = DIALECT_MODULES[dialect]
    tp = mod.wire if mod.wire is not None and mod.shape.marked_success else dict[str, msgspec.Raw]
    dec = msgspec.json.Decoder(tp)
    encode = msgspec.json.Encoder().encode
    decode = dec.decode

    def limit(b: bytes) -> bytes:
        return encode(decode(b))

    return limit


def one_shot_for(target: str) -> Conv:
    """``envglot.convert(b, to=target)`` with the source auto-detected."""
    convert = envglot.convert

    def one_shot(b: bytes) -> bytes:
        return convert(b, to=target, unsupported="ignore")

    return one_shot


def one_shot_from(source: str, target: str) -> Conv:
    """``envglot.convert(b, to=target, from_=source)``: the one-shot call like for like with a Converter."""
    convert = envglot.convert

    def one_shot(b: bytes) -> bytes:
        return convert(b, to=target, from_=source, unsupported="ignore")

    return one_shot


def check_agreement(fn: Conv, conv: Conv, items: Sequence[bytes]) -> dict[str, int]:
    """Documents where a hand-written conversion differs from envglot's (JSON-equal, key order aside)."""
    differ = codes = 0
    for b in items:
        a, h = orjson.loads(conv(b)), orjson.loads(fn(b))
        if a == h:
            continue
        ad, hd = a.get("data"), h.get("data")
        if isinstance(ad, dict) and isinstance(hd, dict):
            for k in ("error_code", "error_type"):
                ad.pop(k, None)
                hd.pop(k, None)
            if a == h:
                codes += 1
                continue
        differ += 1
    return {"documents": len(items), "differ": differ, "code_differs": codes}


def check_floor(src: str, dst: str, floor: Conv, conv: Conv, items: Sequence[bytes]) -> str | None:
    """``None`` when the floor gives envglot's exact bytes for every record, else why it is not timed.

    A record the floor does not handle (:class:`floors.OutsideError`) makes it not measured on this
    corpus; a record where it gives other bytes is a bug in the floor: the harness stops.
    """
    for i, b in enumerate(items):
        try:
            got = floor(b)
        except floors.OutsideError as exc:
            return f"the floor does not cover record {i} of this corpus ({exc})"
        want = conv(b)
        if got != want:
            raise AssertionError(
                f"floor {src} -> {dst} is not byte-identical to envglot on record {i}:\n"
                f"  envglot: {want[:300]!r}\n  floor:   {got[:300]!r}"
            )
    return None


# ---------------------------------------------------------------------------
# loss policy section

POLICY_PAIR = ("dotbot", "response-v2")
"""A pair that is lossy by nature (about five dropped fields per document)."""


def run_policy(corp: corpus_mod.Corpus, rounds: int, log: Callable[[str], None]) -> dict[str, Any]:
    """``convert()`` and a ``Converter`` with the default policy against ``"ignore"`` on a lossy pair.

    "default" runs as a library user's process does without logging configured (nobody
    listens: nothing is built); "listening" adds a handler to the ``envglot`` logger, so one
    record per conversion is built and emitted (to a handler that drops it).
    """
    import logging

    src, dst = POLICY_PAIR
    items = corp.payloads(src, "tiny")
    nbytes = sum(map(len, items))
    lg = logging.getLogger("envglot")
    if lg.hasHandlers():
        return {"status": "skipped", "reason": "logging is configured in this process"}
    convert = envglot.convert
    ignore_conv = envglot.Converter(to=dst, from_=src, unsupported="ignore").convert_bytes
    default_conv = envglot.Converter(to=dst, from_=src).convert_bytes
    methods: dict[str, Conv] = {
        "convert ignore": lambda b: convert(b, to=dst, unsupported="ignore"),
        "convert default": lambda b: convert(b, to=dst),
        "Converter ignore": ignore_conv,
        "Converter default": default_conv,
        "Converter preserve": envglot.Converter(to=dst, from_=src, unsupported="ignore", preserve=True).convert_bytes,
    }
    timings = {name: Timing(name, src, dst, "tiny", len(items), nbytes) for name in methods}
    measure(methods, items, rounds, timings)
    handler = logging.NullHandler()
    lg.addHandler(handler)
    try:
        listening = {"convert default, listening": methods["convert default"]}
        timings["convert default, listening"] = Timing(
            "convert default, listening", src, dst, "tiny", len(items), nbytes
        )
        measure(listening, items, rounds, timings)
    finally:
        lg.removeHandler(handler)
    rows = [tm.row() for tm in timings.values()]
    by = {r["method"]: r for r in rows}
    rate = {r["method"]: r.get("envelopes_per_s") for r in rows}

    def ratio(a: str, b: str) -> float | None:
        if a in methods and b in methods:  # timed in the same rounds
            return rate_ratio(by[a], by[b])
        return round(rate[a] / rate[b], 3) if rate.get(a) and rate.get(b) else None

    log(f"  {src} -> {dst}: default/ignore {ratio('convert default', 'convert ignore')}")
    return {
        "status": "ok",
        "source": src,
        "target": dst,
        "rows": rows,
        "default_vs_ignore": ratio("convert default", "convert ignore"),
        "converter_default_vs_ignore": ratio("Converter default", "Converter ignore"),
        "listening_vs_ignore": ratio("convert default, listening", "convert ignore"),
        "preserve_cost_vs_ignore": ratio("Converter ignore", "Converter preserve"),
    }


# ---------------------------------------------------------------------------
# in-memory section


def run_inmemory(
    corp: corpus_mod.Corpus,
    sources: Sequence[str],
    targets: Sequence[str],
    sizes: Sequence[str],
    rounds: int,
    log: Callable[[str], None],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rows: list[dict[str, Any]] = []
    agreement: list[dict[str, Any]] = []
    converters = {
        (s, t): envglot.Converter(to=t, from_=s, unsupported="ignore") for s in sources for t in targets if s != t
    }
    one_shots = {t: one_shot_for(t) for t in targets}
    limits = {s: limit_for(s) for s in sources}
    floor_fns = {(s, t): floors.build(s, t) for s in sources for t in targets if s != t}
    for size in sizes:
        for src in sources:
            items = corp.payloads(src, size)
            nbytes = sum(map(len, items))
            methods: dict[str, Conv] = {"limit": limits[src]}
            timings = {"limit": Timing("limit", src, src, size, len(items), nbytes)}
            for t in targets:
                if t == src:
                    continue
                methods[f"converter:{t}"] = converters[(src, t)].convert_bytes
                timings[f"converter:{t}"] = Timing("converter", src, t, size, len(items), nbytes)
                methods[f"convert:{t}"] = one_shots[t]
                timings[f"convert:{t}"] = Timing("convert", src, t, size, len(items), nbytes)
                methods[f"convert_from:{t}"] = one_shot_from(src, t)
                timings[f"convert_from:{t}"] = Timing("convert_from", src, t, size, len(items), nbytes)
                timings[f"floor:{t}"] = Timing("floor", src, t, size, len(items), nbytes)
                floor = floor_fns[(src, t)]
                if floor is None:
                    timings[f"floor:{t}"].error = floors.NOT_WRITTEN
                else:
                    why = check_floor(src, t, floor, converters[(src, t)].convert_bytes, items)
                    if why is None:
                        methods[f"floor:{t}"] = floor
                    else:
                        timings[f"floor:{t}"].error = why
                for label, table in (
                    ("orjson", handwritten.CONVERSIONS),
                    ("pydantic", getattr(pydantic_models, "CONVERSIONS", {})),
                ):
                    fn = table.get((src, t))
                    if fn is None:
                        continue
                    methods[f"{label}:{t}"] = fn
                    timings[f"{label}:{t}"] = Timing(label, src, t, size, len(items), nbytes)
                    try:
                        agr = check_agreement(fn, converters[(src, t)].convert_bytes, items)
                    except Exception as exc:
                        agr = {"documents": len(items), "error": f"{type(exc).__name__}: {exc}"}
                    agreement.append({"method": label, "source": src, "target": t, "size": size, **agr})
            t0 = time.perf_counter()
            measure(methods, items, rounds, timings)
            log(f"  {size:6} {src:12} {len(methods):2} methods, {len(items)} records, {time.perf_counter() - t0:5.1f}s")
            rows.extend(tm.row() for tm in timings.values())
    return rows, agreement


def ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per ordered pair and size: Converter and convert() against the limit and the hand-written baselines.

    Each ratio is :func:`rate_ratio` (the median of the rounds' ratios); ``of_medians`` holds the
    same ratios as the quotient of the two rows' median rates, the rule of runs before 2026-11-28."""
    row = {(r["method"], r["source"], r["target"], r["size"]): r for r in rows}
    out = []
    for r in rows:
        if r["method"] != "converter":
            continue
        key = (r["source"], r["target"], r["size"])
        lim = row.get(("limit", r["source"], r["source"], r["size"]))
        one, one_from = row.get(("convert", *key)), row.get(("convert_from", *key))
        flo, orj, pyd = (row.get((m, *key)) for m in ("floor", "orjson", "pydantic"))
        pairs = {
            "converter_vs_limit": (r, lim),
            "convert_vs_limit": (one, lim),
            "converter_vs_floor": (r, flo),
            "convert_vs_converter": (one_from, r),
            "converter_vs_orjson": (r, orj),
            "converter_vs_pydantic": (r, pyd),
            "convert_vs_orjson": (one, orj),
            "convert_vs_pydantic": (one, pyd),
        }

        def of_medians(a: dict[str, Any] | None, b: dict[str, Any] | None) -> float | None:
            x, y = (a or {}).get("envelopes_per_s"), (b or {}).get("envelopes_per_s")
            return round(x / y, 3) if x and y else None

        out.append(
            {
                "source": r["source"],
                "target": r["target"],
                "size": r["size"],
                **{name: rate_ratio(a, b) for name, (a, b) in pairs.items()},
                "of_medians": {name: of_medians(a, b) for name, (a, b) in pairs.items()},
            }
        )
    return out


# ---------------------------------------------------------------------------
# migrate section


def envglot_command() -> list[str]:
    exe = Path(sys.executable).with_name("envglot")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("envglot")
    return [found] if found else [sys.executable, "-c", "from envglot.cli import main; main()"]


def migrate_available(cmd: list[str]) -> tuple[bool, str]:
    try:
        p = subprocess.run([*cmd, "migrate", "--help"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, str(exc)
    if p.returncode != 0:
        return False, (p.stderr or p.stdout).strip().splitlines()[-1] if (
            p.stderr or p.stdout
        ).strip() else f"exit {p.returncode}"
    return True, ""


def write_jsonl(path: Path, cycle: Sequence[bytes], size_bytes: int) -> tuple[int, int]:
    """Repeat ``cycle`` (one record per line) until the file holds at least ``size_bytes``."""
    block = b"".join(b + b"\n" for b in cycle)
    whole = size_bytes // len(block)
    records, nbytes = whole * len(cycle), whole * len(block)
    with path.open("wb") as f:
        for _ in range(whole):
            f.write(block)
        for b in cycle:
            if nbytes >= size_bytes:
                break
            f.write(b + b"\n")
            records += 1
            nbytes += len(b) + 1
    return records, nbytes


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(")") + 2 :].split()[1])
        kids.setdefault(ppid, []).append(int(entry.name))
    return kids


def tree_rss(pid: int) -> tuple[int, int]:
    """(sum of VmRSS, max of VmHWM) in bytes over the descendants of ``pid``, now."""
    kids = _children()
    todo, total, peak = list(kids.get(pid, ())), 0, 0
    while todo:
        p = todo.pop()
        try:
            status = Path(f"/proc/{p}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if line.startswith(("VmRSS", "VmHWM")))
        total += int(fields.get("VmRSS", "0 kB").split()[0]) * 1024
        peak = max(peak, int(fields.get("VmHWM", "0 kB").split()[0]) * 1024)
        todo.extend(kids.get(p, ()))
    return total, peak


# Runs the command and reports the largest peak RSS among it and its descendants. A wrapper
# is needed: a child forked from this (large) process inherits its RSS high-water mark
# through fork and exec, so os.wait4's ru_maxrss would report the harness, not migrate.
_RSS_WRAPPER = (
    "import resource, subprocess, sys; rc = subprocess.call(sys.argv[2:]); "
    "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); sys.exit(rc)"
)


def worker_peak(pid: int) -> int:
    """Largest VmHWM in bytes among the Dask worker processes (spawned children) below ``pid``."""
    kids = _children()
    todo, peak = list(kids.get(pid, ())), 0
    while todo:
        p = todo.pop()
        todo.extend(kids.get(p, ()))
        try:
            if b"spawn_main" not in Path(f"/proc/{p}/cmdline").read_bytes():
                continue
            status = Path(f"/proc/{p}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmHWM"):
                peak = max(peak, int(line.split(":", 1)[1].split()[0]) * 1024)
    return peak


def run_migrate_once(
    cmd: list[str],
    src: Path,
    out: Path,
    jobs: int,
    records: int,
    nbytes: int,
    dask_workers: int = 0,
    fresh: bool = False,
) -> dict[str, Any]:
    """``envglot migrate SRC --out OUT -t response-v2 -j JOBS -q`` (or ``--engine dask --workers N``):
    wall time, throughput, peak RSS. ``fresh``: ``OUT`` must not exist (nothing is deleted first)."""
    if out.exists():
        if fresh:
            raise RuntimeError(f"{out} exists: a fresh run writes to a new directory")
        shutil.rmtree(out)
    engine = ["--engine", "dask", "--workers", str(dask_workers)] if dask_workers else ["-j", str(jobs)]
    argv = [*cmd, "migrate", str(src), "--out", str(out), "-t", "response-v2", *engine, "-q"]
    err_path = out.with_suffix(".stderr")
    rss_path = out.with_suffix(".maxrss")
    sampling = Path("/proc").is_dir()
    peak_sum = peak_one = peak_worker = 0
    with err_path.open("wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", _RSS_WRAPPER, str(rss_path), *argv], stderr=err)
        while proc.poll() is None:
            if sampling:
                s, m = tree_rss(proc.pid)
                peak_sum, peak_one = max(peak_sum, s), max(peak_one, m)
                if dask_workers:
                    peak_worker = max(peak_worker, worker_peak(proc.pid))
            time.sleep(0.05)
        wall = time.perf_counter() - t0
    stderr = err_path.read_text(errors="replace")
    err_path.unlink()
    try:
        maxrss_kb = int(rss_path.read_text())
        rss_path.unlink()
    except (OSError, ValueError):
        maxrss_kb = 0
    lines_out = 0
    files_out = 0
    if out.is_dir():
        for p in out.rglob("*"):
            if p.is_file():
                files_out += 1
                if p.suffix in (".jsonl", ".json", ".ndjson") and "reject" not in p.name:
                    with p.open("rb") as f:
                        lines_out += sum(chunk.count(b"\n") for chunk in iter(lambda f=f: f.read(1 << 20), b""))
    res: dict[str, Any] = {
        "jobs": jobs,
        "engine": f"dask, {dask_workers} workers" if dask_workers else "local",
        "command": " ".join(["envglot", *argv[len(cmd) :]]),
        "exit_code": proc.returncode,
        "wall_s": round(wall, 3),
        "records": records,
        "bytes": nbytes,
        "mb_per_s": round(nbytes / wall / MB, 2),
        "records_per_s": round(records / wall, 1),
        "peak_rss_mb": round(maxrss_kb / 1024, 1),
        "peak_rss_tree_sampled_mb": round(peak_sum / 2**20, 1) if sampling else None,
        "peak_rss_process_sampled_mb": round(peak_one / 2**20, 1) if sampling else None,
        "peak_rss_worker_sampled_mb": round(peak_worker / 2**20, 1) if sampling and dask_workers else None,
        "output_files": files_out,
        "output_records": lines_out,
    }
    if proc.returncode != 0:
        res["stderr_tail"] = stderr[-2000:]
    return res


def inmemory_passes(records: int, cycle: int) -> int:
    """Passes over a cycle of ``cycle`` records that convert at least the migration file's ``records``."""
    return max(1, -(-records // cycle))


def time_inmemory(fn: Conv, items: Sequence[bytes], passes: int) -> float:
    """Wall seconds of ``passes`` passes of ``fn`` over ``items``, timed as one block (a collection
    first, none between the passes: the block pays its own garbage, as a migrate process does)."""
    gc.collect()
    t0 = time.perf_counter()
    for _ in range(passes):
        for b in items:
            fn(b)
    return time.perf_counter() - t0


def combine_runs(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One row of the same ``run_migrate_once`` command timed in several rounds: its wall time the
    median of the rounds' (the rates from it), the peaks the largest, the exit code the first
    non-zero one, the output counted in the first round (``outputs_agree``: the same in every round)."""
    walls = [r["wall_s"] for r in rounds]
    med = statistics.median(walls)
    row = dict(rounds[0])
    row.update(
        wall_s=round(med, 3),
        mb_per_s=round(row["bytes"] / med / MB, 2),
        records_per_s=round(row["records"] / med, 1),
        rounds_wall_s=walls,
        spread_pct=round(100 * (max(walls) - min(walls)) / med, 1),
        exit_code=next((r["exit_code"] for r in rounds if r["exit_code"] != 0), 0),
        outputs_agree=all(
            (r["output_files"], r["output_records"]) == (row["output_files"], row["output_records"]) for r in rounds
        ),
    )
    for key in ("peak_rss_mb", "peak_rss_tree_sampled_mb", "peak_rss_process_sampled_mb"):
        if row.get(key) is not None:
            row[key] = max(r[key] for r in rounds)
    failed = next((r for r in rounds if r["exit_code"] != 0), None)
    if failed is not None:
        row["stderr_tail"] = failed.get("stderr_tail", "")
    return row


def paired_ratio(num: Sequence[float], den: Sequence[float]) -> float:
    """The median over rounds of ``num[i] / den[i]`` (rates of the same round: see :func:`rate_ratio`)."""
    return round(statistics.median(a / b for a, b in zip(num, den, strict=True)), 3)


def time_local_runs(
    cmd: list[str],
    src: Path,
    work: Path,
    records: int,
    nbytes: int,
    rounds: int,
    baseline: Timing,
    fn: Conv,
    items: Sequence[bytes],
    passes: int,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """``-j 1``, ``-j 2`` and the in-memory baseline (``passes`` passes of ``fn`` over ``items``, its
    times appended to ``baseline``) in ``rounds`` alternated rounds, their order rotated each round
    so drift and load hit all three alike. Returns the two combined rows (:func:`combine_runs`) and
    the target's ratios: the medians over rounds of each round's ``-j 1`` rate over the baseline's
    and ``-j 1`` wall time over ``-j 2``'s."""
    done: dict[int, list[dict[str, Any]]] = {1: [], 2: []}
    order: list[int] = [0, 1, 2]  # 0: the in-memory baseline
    for r in range(rounds):
        k = r % len(order)
        for what in order[k:] + order[:k]:
            if what == 0:
                baseline.times.append(time_inmemory(fn, items, passes))
                log(f"  round {r + 1}, in-memory: {baseline.records / baseline.times[-1]:,.0f} env/s")
                continue
            res = run_migrate_once(cmd, src, work / f"out-j{what}", what, records, nbytes)
            log(
                f"  round {r + 1}, -j {what}: {res['wall_s']}s, {res['mb_per_s']} MB/s, exit {res['exit_code']}, "
                f"RSS {res['peak_rss_mb']} MB"
            )
            done[what].append(res)
    j1, j2 = (combine_runs(done[j]) for j in (1, 2))
    inm = [baseline.records / t for t in baseline.times]
    j1_rates = [records / x["wall_s"] for x in done[1]]
    vs_inm = [a / b for a, b in zip(j1_rates, inm, strict=True)]
    j2_vs = [a["wall_s"] / b["wall_s"] for a, b in zip(done[1], done[2], strict=True)]
    j1["vs_inmemory"] = round(statistics.median(vs_inm), 3)
    j2["vs_inmemory"] = paired_ratio([records / x["wall_s"] for x in done[2]], inm)
    return {
        "runs": [j1, j2],
        "j1_vs_inmemory": j1["vs_inmemory"],
        "j1_vs_inmemory_rounds": [round(x, 3) for x in vs_inm],
        "j2_vs_j1": round(statistics.median(j2_vs), 3),
        "j2_vs_j1_rounds": [round(x, 3) for x in j2_vs],
    }


def migrate_mix(corp: corpus_mod.Corpus, mode: Mode) -> tuple[tuple[str, ...], list[bytes]]:
    """The migrate section's sources and one cycle of its records (migrate detects every record: a
    dialect whose successes carry no marker cannot be in the mix)."""
    sources = tuple(d for d in corpus_mod.DIALECTS if d != "response-v2" and DIALECT_MODULES[d].shape.marked_success)
    return sources, corpus_mod.jsonl_mix(corp, sources, corp.seed, mode.jsonl_per_dialect)


def _work_dir(keep: Path | None, under: Path | None) -> Path:
    """The migrate section's working directory: ``keep`` (``--keep-files``), else a new temporary one
    under ``under`` (``--work-dir``; the system's temporary directory when ``None``)."""
    work = Path(tempfile.mkdtemp(prefix="envglot-bench-", dir=under)) if keep is None else keep
    work.mkdir(parents=True, exist_ok=True)
    return work


def file_system(path: Path) -> dict[str, str] | None:
    """The file system ``path`` is on, from ``/proc/self/mounts`` (the longest mount point that holds
    it): mount point, type, device and options; ``None`` where that file does not exist."""
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return None
    real = os.path.realpath(path)
    best: list[str] | None = None
    for line in mounts:
        dev, point, kind, opts = [*line.split(), "", "", ""][:4]
        point = point.replace("\\040", " ")
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best[1])):
            best = [dev, point, kind, opts]
    if best is None:
        return None
    return {"mount_point": best[1], "type": best[2], "device": best[0], "options": best[3]}


def _small_files_row(
    cycle: Sequence[bytes], work: Path, cmd: list[str], mode: Mode, log: Callable[[str], None]
) -> tuple[dict[str, Any], bool]:
    """The local small-files row (:func:`run_local_small_files`) and whether it failed."""
    lsf = run_local_small_files(cycle, work, cmd, mode.small_files, log, rounds=1 if mode.small_files < 1000 else 3)
    return lsf, lsf["ratio"] <= 0 or any(lsf[k]["exit_code"] != 0 for k in ("one_file", "small_files"))


def run_smallfiles(
    corp: corpus_mod.Corpus,
    mode: Mode,
    keep: Path | None,
    under: Path | None,
    cmd: list[str],
    log: Callable[[str], None],
) -> dict[str, Any]:
    """The local small-files row of the migrate section alone (``--sections smallfiles``)."""
    ok, why = migrate_available(cmd)
    if not ok:
        return {"status": "unavailable", "reason": f"`envglot migrate --help` failed: {why}"}
    work = _work_dir(keep, under)
    try:
        lsf, failed = _small_files_row(migrate_mix(corp, mode)[1], work, cmd, mode, log)
        reason = "only the small-files row was run (--sections smallfiles)"
        status = "failed" if failed else "ok"
        return {"status": status, "reason": reason, "work_fs": file_system(work), "local_small_files": lsf}
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


def run_migrate(
    corp: corpus_mod.Corpus,
    mode: Mode,
    size_mb: float,
    rounds: int,
    keep: Path | None,
    under: Path | None,
    cmd: list[str],
    log: Callable[[str], None],
    m_rounds: int | None = None,
) -> dict[str, Any]:
    """The migrate section: ``-j 1``, ``-j 2`` and the in-memory baseline in alternated rounds
    (:func:`time_local_runs`; ``m_rounds``, else the mode's), then the unchanged, Dask and
    small-files rows."""
    ok, why = migrate_available(cmd)
    if not ok:
        return {"status": "unavailable", "reason": f"`envglot migrate --help` failed: {why}"}
    # migrate detects every record: a dialect whose successes carry no marker cannot be in the mix
    sources, cycle = migrate_mix(corp, mode)
    work = _work_dir(keep, under)
    try:
        src = work / "corpus.jsonl"
        records, nbytes = write_jsonl(src, cycle, int(size_mb * MB))
        log(f"  wrote {nbytes / MB:.1f} MB, {records} records to {src}")
        # the in-memory rate on the same records: one auto-detecting Converter, as migrate has to
        # detect. conversion() (diagnostics kept) is shown beside it, by `measure` over the cycle;
        # convert_bytes, the target's baseline, converts as many records as the file holds in each
        # round of -j 1 and -j 2, alternated with them: always wall time, as the migrate process's
        conv = envglot.Converter(to="response-v2", unsupported="ignore")
        nb = sum(map(len, cycle))
        passes = inmemory_passes(records, len(cycle))
        diag = Timing("conversion", "mixed", "response-v2", "mixed", len(cycle), nb)
        measure({"conversion": conv.conversion}, cycle, rounds, {"conversion": diag}, time.perf_counter)  # type: ignore[dict-item]
        inmem_diag = diag.row()
        base = Timing("converter", "mixed", "response-v2", "mixed", passes * len(cycle), passes * nb)
        for b in cycle:  # warm: the baseline is the Converter's steady state
            conv.convert_bytes(b)
        n = mode.migrate_rounds if m_rounds is None else m_rounds
        local = time_local_runs(cmd, src, work, records, nbytes, n, base, conv.convert_bytes, cycle, passes, log)
        inmem = base.row()
        runs = local.pop("runs")
        j1 = runs[0]
        # the -j 1 output again: every record already response-v2, so the file is copied, not rewritten
        migrated = work / "out-j1" / src.name
        again = run_migrate_once(cmd, migrated, work / "out-unchanged", 1, records, migrated.stat().st_size)
        log(f"  unchanged (-j 1 on its own output): {again['wall_s']}s, {again['mb_per_s']} MB/s")
        dask_ok = _dask_installed()
        if dask_ok:
            r = run_migrate_once(cmd, src, work / "out-dask", 2, records, nbytes, dask_workers=2)
            log(
                f"  dask, 2 workers: {r['wall_s']}s, {r['mb_per_s']} MB/s, exit {r['exit_code']}, "
                f"RSS per worker {r['peak_rss_worker_sampled_mb']} MB"
            )
            runs.append(r)
        res: dict[str, Any] = {
            "status": "ok" if all(r["exit_code"] == 0 for r in runs) else "failed",
            "work_fs": file_system(work),
            "file_mb": round(nbytes / MB, 1),
            "records": records,
            "sources": list(sources),
            "size_mix": corpus_mod.JSONL_MIX,
            "inmemory": inmem,
            "inmemory_passes": passes,
            "inmemory_conversion": inmem_diag,
            "rounds": len(inmem["times"]),
            "runs": runs,
            **local,
        }
        res["unchanged"] = again
        if again["exit_code"] != 0 or again["output_records"] != j1["output_records"]:
            res["status"] = "failed"
        if not all(r.get("outputs_agree", True) for r in runs):
            res["status"] = "failed"
        if dask_ok:  # the CLI's run, its cluster's start and stop included
            res["dask_cli_vs_j1"] = round(runs[2]["records_per_s"] / j1["records_per_s"], 3)
        res["local_small_files"], failed = _small_files_row(cycle, work, cmd, mode, log)
        if failed:
            res["status"] = "failed"
        if dask_ok:
            res["small_files"] = sf = run_small_files(cycle, work, log, min(10.0, size_mb), (src, records, nbytes))
            res["dask2_vs_j1"] = sf["warm"]["vs_j1"]  # the target's: a running cluster, warm
        else:
            res["dask"] = "not installed (pip install 'envglot[dask]')"
        return res
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


def _dask_installed() -> bool:
    try:
        import distributed  # noqa: F401
        import fsspec  # noqa: F401
    except ImportError:
        return False
    return True


def make_small_files(
    cycle: Sequence[bytes], work: Path, size_mb: float, n_files: int | None = None
) -> tuple[Path, Path, int, int, int]:
    """One JSON Lines file of ``size_mb`` and the same records cut into files of ~1 KB (1,000 per directory).

    With ``n_files``, the one file holds just enough records for that many small files.
    Returns ``(one file, directory of the small files, their number, records, bytes)``.
    """
    small = [b for b in cycle if len(b) < 500] or list(cycle)  # records that fit several to a 1 KB file
    one = work / "one" / "all.jsonl"
    one.parent.mkdir(parents=True, exist_ok=True)
    if n_files is not None:  # whole ~1 KB groups, n_files of them
        groups, size, take = 0, 0, []
        i = 0
        while groups < n_files:
            b = small[i % len(small)]
            take.append(b)
            size += len(b) + 1
            i += 1
            if size >= 1000:
                groups, size = groups + 1, 0
        records, nbytes = len(take), sum(len(b) + 1 for b in take)
        one.write_bytes(b"".join(b + b"\n" for b in take))
    else:
        records, nbytes = write_jsonl(one, small, int(size_mb * MB))
    many = work / "many"
    files = 0
    group: list[bytes] = []
    size = 0

    def flush() -> None:
        nonlocal files, group, size
        d = many / f"{files // 1000:02d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{files:05d}.jsonl").write_bytes(b"".join(group))
        files += 1
        group, size = [], 0

    with one.open("rb") as fh:
        for line in fh:
            group.append(line)
            size += len(line)
            if size >= 1000:
                flush()
    if group:
        flush()
    return one, many, files, records, nbytes


def small_files_floor(many: Path, out: Path) -> float:
    """Wall seconds of what ``migrate`` cannot avoid for the files under ``many``, in a bare loop: the
    walk (``scandir``, an ``lstat`` each), each input opened, ``fstat``-ed, read and closed, each
    output's temporary created beside it (``O_EXCL``), written, given its mode and closed, the
    renames, one ``syncfs`` per 1,000 files and one ``fsync`` per directory (migrate's commit
    batches). No conversion: the records cost the same in one file."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    t0 = time.perf_counter()
    files = []
    todo = [(str(many), "")]
    while todo:
        top, rel = todo.pop()
        with os.scandir(top) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                todo.append((e.path, os.path.join(rel, e.name)))
            else:
                st = e.stat(follow_symlinks=False)
                files.append((rel, e.name, e.path, st.st_size, st.st_mode & 0o7777))
    staged: list[tuple[str, str]] = []

    def commit() -> None:
        fd = os.open(out, os.O_RDONLY)
        libc.syncfs(fd)
        os.close(fd)
        for tmp, dst in staged:
            os.rename(tmp, dst)
        for d in sorted({os.path.dirname(dst) for _, dst in staged}):
            fd = os.open(d, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)
        staged.clear()

    made: set[str] = set()
    for i, (rel, name, path, size, mode) in enumerate(files):
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
        os.fstat(fd)
        data = os.read(fd, size + 1)
        os.close(fd)
        d = os.path.join(out, rel)
        if d not in made:
            os.makedirs(d, exist_ok=True)
            made.add(d)
        tmp = os.path.join(d, f".floor-tmp-{i}-{name}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        os.write(fd, data)
        os.fchmod(fd, mode)
        os.close(fd)
        staged.append((tmp, os.path.join(d, name)))
        if len(staged) >= 1000:
            commit()
    commit()
    return time.perf_counter() - t0


def run_local_small_files(
    cycle: Sequence[bytes], work: Path, cmd: list[str], n_files: int, log: Callable[[str], None], rounds: int = 3
) -> dict[str, Any]:
    """``envglot migrate -j 1``: ``n_files`` files of ~1 KB against one file holding the same records.

    Both runs are whole CLI processes (start-up included in both), alternated ``rounds``
    times; the ratio is the median of the rounds' small files / one file. Every run writes
    to a new directory created the same way for both sides, and nothing is deleted until the
    end. Creating many files costs what the file system charges at that moment, which the
    one-file side barely pays: on ext4 without a journal (this machine's) each create scans
    past the inodes freed in the last minutes (``recently_deleted``), so a run soon after a
    large deletion in the same tree — the section's own clean-up of an earlier run, or any
    other process's — costs several times more. So each round also times the floor (:func:
    `small_files_floor`: the same files' unavoidable system calls, no conversion) right
    before the many-files run, into a new directory too: ``floor_ratio`` (one file + floor) /
    one file is the best ratio the file system allowed in that round.
    """
    one, many, files, records, nbytes = make_small_files(cycle, work / "local-files", 0, n_files)
    outs = Path(tempfile.mkdtemp(prefix="out-local-", dir=work))  # new each time (a --keep-files DIR is reused)
    out: dict[str, Any] = {"records": records, "bytes": nbytes, "rounds": []}
    walls: dict[str, list[float]] = {"one_file": [], "small_files": []}
    for r in range(rounds):
        row: dict[str, Any] = {}
        for label, src, n in (("one_file", one, 1), ("small_files", many, files)):
            if label == "small_files":
                row["floor"] = round(small_files_floor(many, outs / f"floor-{r}"), 3)
                log(f"  -j 1 small files, round {r + 1}: floor ({files} files, no conversion): {row['floor']:.2f}s")
            res = run_migrate_once(cmd, src, outs / f"{label}-{r}", 1, records, nbytes, fresh=True)
            walls[label].append(res["wall_s"])
            row[label] = res["wall_s"]
            entry = out.setdefault(label, {"files": n, "exit_code": 0})
            entry["exit_code"] = max(entry["exit_code"], res["exit_code"])
            if "stderr_tail" in res:
                entry["stderr_tail"] = res["stderr_tail"]
            wall, code = res["wall_s"], res["exit_code"]
            log(f"  -j 1 small files, round {r + 1}: {label} ({n} files): {wall:.2f}s, exit {code}")
        row["ratio"] = round(row["small_files"] / row["one_file"], 2)
        row["floor_ratio"] = round((row["one_file"] + row["floor"]) / row["one_file"], 2)
        out["rounds"].append(row)
    for label, ws in walls.items():
        out[label]["wall_s"] = statistics.median(ws)
        out[label]["records_per_s"] = round(records / out[label]["wall_s"], 1)
    out["ratio"] = round(statistics.median(r["ratio"] for r in out["rounds"]), 2)
    out["floor_ratio"] = round(statistics.median(r["floor_ratio"] for r in out["rounds"]), 2)
    return out


def run_small_files(
    cycle: Sequence[bytes],
    work: Path,
    log: Callable[[str], None],
    size_mb: float = 10.0,
    big: tuple[Path, int, int] | None = None,
) -> dict[str, Any]:
    """Dask, 2 workers, on a running cluster: files of ~1 KB (10,000 for 10 MB) against one file
    holding the same records; with ``big`` (the large file, its records and bytes), that file
    against ``-j 1`` in this process.

    One cluster serves every run, started as ``--engine dask --workers 2`` starts it
    (:func:`envglot.migration.executors.start_local_cluster`: envglot's batch settings) and not
    counted; the time is that of ``envglot.migrate(..., engine="dask", client=...)``. The cluster's
    first run (each worker imports envglot, builds its Migrator and compiles the counting functions
    of the pairs it meets: paid once per cluster) is timed apart as ``first_run``; the large file's
    row is then :data:`DASK_ROUNDS` rounds of ``envglot.migrate(..., jobs=1)`` and the warm Dask run
    one after the other, the median of the rounds' ratios (a shared machine's load moves both).
    """
    from distributed import Client

    from envglot.migration.executors import start_local_cluster

    one, many, files, records, nbytes = make_small_files(cycle, work / "dask-files", size_mb)
    cluster = start_local_cluster(2)
    client = Client(cluster)

    def timed(src: Path, name: str, **kw: Any) -> tuple[float, int]:
        t0 = time.perf_counter()
        rep = envglot.migrate([src], out=work / name, **kw)
        wall = time.perf_counter() - t0
        shutil.rmtree(work / name, ignore_errors=True)
        return wall, rep.exit_code

    try:
        out: dict[str, Any] = {"records": records, "bytes": nbytes}
        first, code = timed(big[0] if big is not None else one.parent, "out-dask-first", engine="dask", client=client)
        out["first_run"] = {"wall_s": round(first, 3), "exit_code": code}
        log(f"  dask, 2 workers, the new cluster's first run: {first:.2f}s, exit {code}")
        if big is not None:  # the large file on the running (warm) cluster against -j 1, alternated
            rounds = []
            for _ in range(DASK_ROUNDS):
                j1, c1 = timed(big[0], "out-j1-inprocess", jobs=1)
                wall, code = timed(big[0], "out-dask-warm", engine="dask", client=client)
                rounds.append({"j1_wall_s": round(j1, 3), "wall_s": round(wall, 3), "exit_code": max(code, c1)})
                log(f"  dask, 2 workers, cluster running: {wall:.2f}s (-j 1 in this process {j1:.2f}s), exit {code}")
            wall = statistics.median(r["wall_s"] for r in rounds)
            out["warm"] = {
                "wall_s": wall,
                "records_per_s": round(big[1] / wall, 1),
                "mb_per_s": round(big[2] / wall / MB, 2),
                "exit_code": max(r["exit_code"] for r in rounds),
                "vs_j1": round(statistics.median(r["j1_wall_s"] / r["wall_s"] for r in rounds), 3),
                "rounds": rounds,
            }
        for label, src, n in (("one_file", one.parent, 1), ("small_files", many, files)):
            t0 = time.perf_counter()
            rep = envglot.migrate([src], out=work / f"out-{label}", engine="dask", client=client)
            wall = time.perf_counter() - t0
            out[label] = {"files": n, "wall_s": round(wall, 3), "records_per_s": round(records / wall, 1)}
            out[label]["exit_code"] = rep.exit_code
            log(f"  dask small files: {label} ({n} files): {wall:.2f}s, exit {rep.exit_code}")
        out["ratio"] = round(out["small_files"]["wall_s"] / out["one_file"]["wall_s"], 2)
        return out
    finally:
        client.close()
        cluster.close()


# ---------------------------------------------------------------------------
# import time

_IMPORT_SNIPPET = (
    "import time; t = time.{clock}(); import envglot; envglot.mappings.default_mappings(); print(time.{clock}() - t)"
)


def _child(code: str, env: dict[str, str]) -> tuple[str, float, float]:
    """``(stdout, wall seconds, CPU seconds)`` of a fresh interpreter running ``code`` (its own rusage)."""
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    assert p.stdout is not None
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise subprocess.CalledProcessError(p.returncode, code)
    return out, wall, usage.ru_utime + usage.ru_stime


def run_import_time(runs: int, cpu: bool = False) -> dict[str, Any]:
    """``import envglot`` plus the tables loaded and compiled, in fresh interpreters (median),
    interleaved with bare interpreters (``python -c pass``). ``above_bare_ms`` is the issue's
    figure: the whole process's time above a bare interpreter's. With ``cpu`` (``--clock cpu``)
    every figure is CPU time (``time.process_time`` inside, the child's rusage for the whole
    process), which leaves out the time a loaded machine makes the process wait for a core."""
    snippet = _IMPORT_SNIPPET.format(clock="process_time" if cpu else "perf_counter")
    inner, whole, base = [], [], []
    env = dict(os.environ)
    _child(snippet, env)  # the first run may write .pyc files
    for _ in range(runs):
        out, wall, used = _child(snippet, env)
        inner.append(float(out.strip()))
        whole.append(used if cpu else wall)
        _, wall, used = _child("pass", env)
        base.append(used if cpu else wall)
    top = []
    p = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import envglot; envglot.mappings.default_mappings()"],
        capture_output=True,
        text=True,
    )
    for line in p.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m:
            top.append(
                {
                    "module": m.group(4),
                    "self_us": int(m.group(1)),
                    "cumulative_us": int(m.group(2)),
                    "depth": len(m.group(3)) // 2,
                }
            )
    top.sort(key=lambda r: -r["cumulative_us"])
    return {
        "runs": runs,
        "clock": "cpu" if cpu else "wall",
        "import_ms": round(1000 * statistics.median(inner), 1),
        "import_ms_min": round(1000 * min(inner), 1),
        "process_ms": round(1000 * statistics.median(whole), 1),
        "bare_interpreter_ms": round(1000 * statistics.median(base), 1),
        "above_bare_ms": round(1000 * (statistics.median(whole) - statistics.median(base)), 1),
        "importtime_top": top[:15],
    }


# ---------------------------------------------------------------------------
# targets and report


def _target(label: str, need: float, measured: float | None, at_least: bool = True, **extra: Any) -> dict[str, Any]:
    holds = None if measured is None else measured >= need if at_least else measured < need
    return {"target": label, "need": need, "measured": measured, "holds": holds, **extra}


def evaluate(
    rat: list[dict[str, Any]],
    migrate: dict[str, Any],
    imp: dict[str, Any] | None,
    proxy: dict[str, Any] | None = None,
    policy: dict[str, Any] | None = None,
    declared: dict[str, Any] | None = None,
    preserve: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Each target of issues #7, #15 and #24 with the measured value (the worst case where it must hold for all)."""
    out: list[dict[str, Any]] = []

    def worst(key: str, size: str) -> tuple[float | None, str | None]:
        vals = [(r[key], f"{r['source']} -> {r['target']}") for r in rat if r["size"] == size and r.get(key)]
        return min(vals) if vals else (None, None)

    checks = (("converter_vs_limit", "limit, every pair"), ("vs_orjson", "orjson-dict"), ("vs_pydantic", "pydantic"))
    for key, label in checks:
        needs: dict[str, float] = TARGETS[key]  # type: ignore[assignment]
        for size, need in needs.items():
            v, where = worst(key if key.startswith("converter") else f"converter_{key}", size)
            out.append(_target(f"Converter >= {need} x {label}, {size}", need, v, worst=where))
    floor_needs: dict[str, float] = TARGETS["converter_vs_floor"]  # type: ignore[assignment]
    for size, need in floor_needs.items():
        v, where = worst("converter_vs_floor", size)
        pairs = [r for r in rat if r["size"] == size]
        have = sum(1 for r in pairs if r.get("converter_vs_floor"))
        label = f"Converter >= {need} x floor, every pair with a floor ({have} of {len(pairs)}), {size}"
        out.append(_target(label, need, v, worst=where))
    need_one = TARGETS["convert_vs_converter"]
    for size in ("tiny", "medium", "large"):
        v, where = worst("convert_vs_converter", size)
        out.append(
            _target(
                f"convert(from_=...) >= {need_one} x reused Converter, every pair, {size}", need_one, v, worst=where
            )
        )  # type: ignore[arg-type]
    j1 = f"migrate -j 1 >= {TARGETS['migrate_j1_vs_inmemory']} x in-memory Converter"
    j2 = f"migrate -j 2 >= {TARGETS['migrate_j2_vs_j1']} x -j 1 (2 cores)"
    rss = f"migrate peak RSS < {TARGETS['peak_rss_mb']} MB (per process)"
    if "j1_vs_inmemory" in migrate:
        local = [r for r in migrate["runs"] if r.get("engine", "local") == "local"]
        peak = max(max(r["peak_rss_mb"], r.get("peak_rss_process_sampled_mb") or 0) for r in local)
        out.append(_target(j1, TARGETS["migrate_j1_vs_inmemory"], migrate["j1_vs_inmemory"]))  # type: ignore[arg-type]
        out.append(_target(j2, TARGETS["migrate_j2_vs_j1"], migrate["j2_vs_j1"]))  # type: ignore[arg-type]
        out.append(_target(rss, TARGETS["peak_rss_mb"], peak, at_least=False))  # type: ignore[arg-type]
    else:
        note = migrate.get("reason") or migrate.get("status")
        out += [_target(label, 0, None, note=note) for label in (j1, j2, rss)]
    need_lsf = TARGETS["local_small_files_ratio"]
    lsf = migrate.get("local_small_files") or {}
    label = f"migrate -j 1: many files of ~1 KB <= {need_lsf} x one file"
    files = lsf.get("small_files", {}).get("files")
    out.append(_target(label, need_lsf, lsf.get("ratio"), at_least=False, files=files))  # type: ignore[arg-type]
    need_d = TARGETS["migrate_dask2_vs_j1"]
    need_sf = TARGETS["dask_small_files_ratio"]
    need_rss = TARGETS["dask_worker_rss_mb"]
    dask_labels = (
        f"migrate Dask 2 workers >= {need_d} x -j 1",
        f"Dask: 10,000 x 1 KB <= {need_sf} x one 10 MB file",
        f"Dask peak RSS per worker < {need_rss} MB",
    )
    if "dask2_vs_j1" in migrate:
        d = migrate["runs"][2]
        sf = migrate.get("small_files") or {}
        out.append(_target(dask_labels[0], need_d, migrate["dask2_vs_j1"]))  # type: ignore[arg-type]
        out.append(_target(dask_labels[1], need_sf, sf.get("ratio"), at_least=False))  # type: ignore[arg-type]
        out.append(_target(dask_labels[2], need_rss, d.get("peak_rss_worker_sampled_mb"), at_least=False))  # type: ignore[arg-type]
    else:
        note = migrate.get("dask") or migrate.get("reason") or migrate.get("status")
        out += [_target(label, 0, None, note=note) for label in dask_labels]
    need = TARGETS["import_ms"]
    ms = imp["above_bare_ms"] if imp is not None else None
    label = f"import envglot + tables < {need} ms above a bare interpreter"
    out.append(_target(label, need, ms, at_least=False))  # type: ignore[arg-type]
    need = TARGETS["proxy_overhead_ms"]  # type: ignore[assignment]
    label = f"proxy adds < {need} ms median per call"
    if proxy is not None and proxy.get("status") == "ok":
        out.append(_target(label, need, proxy["overhead_median_ms"], at_least=False))  # type: ignore[arg-type]
    else:
        out.append(_target(label, need, None, note=(proxy or {}).get("reason") or (proxy or {}).get("status")))  # type: ignore[arg-type]
    need = TARGETS["default_vs_ignore"]  # type: ignore[assignment]
    label = f"convert() default policy >= {need} x unsupported='ignore' (nobody listening)"
    if policy is not None and policy.get("status") == "ok":
        worst_ratio = min(
            v for v in (policy["default_vs_ignore"], policy["converter_default_vs_ignore"]) if v is not None
        )
        out.append(_target(label, need, worst_ratio, worst=f"{policy['source']} -> {policy['target']}"))  # type: ignore[arg-type]
    else:
        out.append(_target(label, need, None, note=(policy or {}).get("reason") or (policy or {}).get("status")))  # type: ignore[arg-type]
    need = TARGETS["preserve_vs_ignore"]  # type: ignore[assignment]
    label = f"Converter preserve=True costs <= {need} x unsupported='ignore'"
    if preserve is not None and preserve.get("status") == "ok":
        out.append(_target(label, need, preserve["max_cost"], at_least=False, worst=preserve["max_at"]))  # type: ignore[arg-type]
    else:
        out.append(_target(label, need, None, note=(preserve or {}).get("reason") or (preserve or {}).get("status")))  # type: ignore[arg-type]
    need = TARGETS["declared_toml_vs_python"]  # type: ignore[assignment]
    label = f"a TOML-declared dialect >= {need} x the same envelope declared in Python"
    if declared is not None and declared.get("status") == "ok":
        out.append(_target(label, need, declared["toml_vs_python"], worst=declared["worst"]))  # type: ignore[arg-type]
    else:
        out.append(_target(label, need, None, note=(declared or {}).get("status")))  # type: ignore[arg-type]
    return out


def _fmt(x: float | None, nd: int = 2) -> str:
    """A ratio (``nd`` decimals) or, with ``nd=0``, a rate with thousands separators."""
    if x is None:
        return "-"
    return f"{x:,.0f}" if nd == 0 else f"{x:.{nd}f}"


def _load(avg: list[float] | None) -> str:
    return "/".join(f"{x:.2f}" for x in avg) if avg else "unknown"


def _table(header: Sequence[str], align: str, rows: list[list[str]]) -> list[str]:
    """Markdown table lines; ``align`` has one letter per column: l (left) or r (right)."""
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if a == "l" else "---:" for a in align) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def _fs_words(fs: dict[str, str] | None) -> str:
    """The working directory's file system for a results paragraph (:func:`file_system`)."""
    return "unknown" if not fs else f"{fs['type']} at {fs['mount_point']} ({fs['device']})"


def _local_small_files_lines(lsf: dict[str, Any], fs: dict[str, str] | None) -> list[str]:
    """The local small-files row's paragraph (:func:`run_local_small_files`), taken on file system ``fs``."""
    rounds = lsf.get("rounds", [])
    return [
        "",
        f"Local engine, `-j 1`, the same {lsf['records']:,} records ({lsf['bytes'] / MB:.1f} MB): one file "
        f"{lsf['one_file']['wall_s']:.2f} s, {lsf['small_files']['files']:,} files of ~1 KB "
        f"{lsf['small_files']['wall_s']:.2f} s ({lsf['ratio']:.2f} x; both whole CLI runs, medians of "
        f"{len(rounds) or 1} alternated rounds into new directories: "
        f"{', '.join(format(r['ratio'], '.2f') for r in rounds)} x). The file system's floor in the same "
        f"rounds (the files' unavoidable system calls, no conversion: `small_files_floor`): "
        f"{', '.join(format(r['floor'], '.2f') for r in rounds)} s, so the best ratio it allowed: "
        f"{_fmt(lsf.get('floor_ratio'))} x. File system of the working directory: {_fs_words(fs)}.",
    ]


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _baseline_words(mig: dict[str, Any]) -> str:
    """How the migrate section's in-memory baseline was timed (empty for a results file without rounds)."""
    inm, passes = mig["inmemory"], mig.get("inmemory_passes")
    if passes is None or not inm.get("rounds"):
        return ""
    return (
        f": {passes} passes over the cycle, as many records as the file, timed as one block in each of "
        f"{_n(inm['rounds'], 'round')} beside the runs below, wall time, median; spread {inm['spread_pct']} %"
    )


def _rounds_lines(mig: dict[str, Any]) -> list[str]:
    """The sentence under the migrate table: how ``-j 1`` and ``-j 2`` were timed, the target's ratios."""
    if "j2_vs_j1_rounds" not in mig:
        return []
    j1, j2 = mig["runs"][:2]

    def each(xs: Sequence[float]) -> str:
        return ", ".join(f"{x:.2f}" for x in xs)

    return [
        "",
        f"`-j 1`, `-j 2` and the in-memory baseline ran in {_n(mig['rounds'], 'alternated round')} (their order "
        f"rotated each round); wall s is the median of the rounds' (`-j 1` {each(j1['rounds_wall_s'])} s, "
        f"spread {j1['spread_pct']} %; `-j 2` {each(j2['rounds_wall_s'])} s, spread {j2['spread_pct']} %), "
        f"peak RSS the largest. The ratios are the medians of the rounds' ratios: `-j 1` / in-memory "
        f"**{mig['j1_vs_inmemory']:.2f}** ({each(mig['j1_vs_inmemory_rounds'])}), `-j 2` / `-j 1` "
        f"**{mig['j2_vs_j1']:.2f}** ({each(mig['j2_vs_j1_rounds'])}).",
    ]


def markdown(results: dict[str, Any]) -> str:
    """The result tables as Markdown (what docs/performance.md shows)."""
    rows = results["inmemory"]
    rat = {(r["source"], r["target"], r["size"]): r for r in results["ratios"]}
    by = {(r["method"], r["source"], r["target"], r["size"]): r for r in rows}

    def rate(method: str, src: str, dst: str, size: str) -> str:
        return _fmt(by.get((method, src, dst, size), {}).get("envelopes_per_s"), 0)

    m = results["machine"]
    dirty = "+dirty" if m["git_dirty"] else ""
    source = m.get("envglot_path")
    elsewhere = f" from {source}" if source and Path(source) != HERE.parent / "src" / "envglot" else ""
    lines = [
        f"Run {results['timestamp']} ({results['mode']}), {m['nproc']} cores, {m['cpu_model']}, "
        f"Python {m['python']}, msgspec {m['msgspec']}, orjson {m['orjson']}, pydantic {m['pydantic'] or '-'}, "
        f"envglot {m['envglot']} ({m['git_commit'] or '?'}{dirty}){elsewhere}; load average "
        f"{_load(m.get('loadavg_at_start'))} at the start, {_load(m.get('loadavg_at_end'))} at the end. "
        f"In-memory clock: {results['config'].get('clock', 'wall')}"
        f"{' (CPU time of the measuring thread)' if results['config'].get('clock') == 'cpu' else ' time'}.",
        "",
        "### Converter and convert() against the limit",
        "",
        "Rates are medians over the rounds; each ratio is the median over the rounds of the two methods' "
        "ratio in that round (`rate_ratio`), so it can differ from the quotient of the two rates shown.",
        "",
    ]
    body = []
    for r in rows:
        if r["method"] != "converter":
            continue
        s, t, z = r["source"], r["target"], r["size"]
        q = rat.get((s, t, z), {})
        body.append(
            [
                z,
                f"{s} -> {t}",
                rate("limit", s, s, z),
                rate("converter", s, t, z),
                _fmt(r.get("mb_per_s"), 1),
                rate("convert", s, t, z),
                rate("floor", s, t, z),
                _fmt(q.get("converter_vs_limit")),
                _fmt(q.get("convert_vs_limit")),
                _fmt(q.get("converter_vs_floor")),
                _fmt(q.get("convert_vs_converter")),
            ]
        )
    head = ["size", "source -> target", "limit env/s", "Converter env/s", "Converter MB/s", "convert() env/s"]
    head += ["floor env/s", "Converter / limit", "convert() / limit", "Converter / floor", "convert(from_) / Converter"]
    lines += _table(head, "llrrrrrrrrr", body)
    missing = sorted(
        {(r["source"], r["target"], r["error"]) for r in rows if r["method"] == "floor" and r.get("error")}
    )
    if missing:
        lines += ["", "Pairs without a timed floor:", ""]
        lines += [f"- {s} -> {t}: {why}" for s, t, why in missing]
    lines += ["", "### envglot against hand-written conversions", ""]
    body = []
    for r in rows:
        if r["method"] != "orjson":
            continue
        s, t, z = r["source"], r["target"], r["size"]
        q = rat.get((s, t, z), {})
        body.append(
            [
                z,
                f"{s} -> {t}",
                rate("converter", s, t, z),
                rate("orjson", s, t, z),
                rate("pydantic", s, t, z),
                rate("limit", s, s, z),
                _fmt(q.get("converter_vs_orjson")),
                _fmt(q.get("converter_vs_pydantic")),
            ]
        )
    head = ["size", "source -> target", "Converter env/s", "orjson-dict env/s", "pydantic env/s", "limit env/s"]
    lines += _table([*head, "Converter / orjson-dict", "Converter / pydantic"], "llrrrrrr", body)
    mig = results["migrate"]
    lines += ["", "### envglot migrate (JSONL to response-v2)", ""]
    if "runs" in mig:
        inm = mig["inmemory"]
        mix = ", ".join(f"{k} {round(v * 100)} %" for k, v in mig["size_mix"].items())
        lines += [
            f"File: {mig['file_mb']} MB, {mig['records']:,} records ({', '.join(mig['sources'])}; sizes by count: "
            f"{mix}). In-memory auto-detecting Converter on the same records: `convert_bytes` "
            f"{_fmt(inm.get('envelopes_per_s'), 0)} env/s, {_fmt(inm.get('mb_per_s'), 1)} MB/s (the baseline of "
            f"'vs in-memory'{_baseline_words(mig)}); `conversion()` with diagnostics "
            f"{_fmt(mig.get('inmemory_conversion', {}).get('envelopes_per_s'), 0)} env/s.",
            "",
        ]
        body = []
        for r in mig["runs"]:
            vs = r.get("vs_inmemory")
            if vs is None and inm.get("envelopes_per_s"):
                vs = r["records_per_s"] / inm["envelopes_per_s"]
            per_proc = max(r["peak_rss_mb"], r.get("peak_rss_process_sampled_mb") or 0)
            if r.get("peak_rss_worker_sampled_mb") is not None:
                per_proc = r["peak_rss_worker_sampled_mb"]
            body.append(
                [
                    f"-j {r['jobs']}" if r.get("engine", "local") == "local" else str(r["engine"]),
                    str(r["exit_code"]),
                    f"{r['wall_s']:.2f}",
                    _fmt(r["mb_per_s"], 1),
                    _fmt(r["records_per_s"], 0),
                    _fmt(vs),
                    f"{per_proc:.1f}",
                    _fmt(r.get("peak_rss_tree_sampled_mb"), 1),
                ]
            )
        head = ["run", "exit", "wall s", "MB/s", "records/s", "vs in-memory", "peak RSS MB (per process)"]
        lines += _table([*head, "peak RSS MB (all processes, sampled)"], "lrrrrrrr", body)
        lines += _rounds_lines(mig)
        unch = mig.get("unchanged")
        if unch:
            lines += [
                "",
                f"Unchanged: `-j 1` on its own output (every record already response-v2, "
                f"{unch['bytes'] / MB:.1f} MB): {unch['wall_s']:.2f} s, {_fmt(unch['mb_per_s'], 1)} MB/s, "
                f"{_fmt(unch['records_per_s'], 0)} records/s (each record checked, the file copied, not rewritten).",
            ]
        if mig.get("local_small_files"):
            lines += _local_small_files_lines(mig["local_small_files"], mig.get("work_fs"))
        sf = mig.get("small_files")
        if sf:
            lines += [
                "",
                f"Dask, 2 workers, the same {sf['records']:,} records ({sf['bytes'] / MB:.1f} MB): one file "
                f"{sf['one_file']['wall_s']:.2f} s, {sf['small_files']['files']:,} files of ~1 KB "
                f"{sf['small_files']['wall_s']:.2f} s ({sf['ratio']:.2f} x; cluster start-up not counted). "
                "Per-process peak RSS of the Dask run is that of its worker processes.",
            ]
            if sf.get("warm"):
                w, first = sf["warm"], sf.get("first_run") or {}
                lines += [
                    "",
                    f"Dask, 2 workers, on a cluster already running (the run above includes starting and "
                    f"stopping it; this one, envglot's batch settings, warm: its first run took "
                    f"{_fmt(first.get('wall_s'), 2)} s): {w['wall_s']:.2f} s, {_fmt(w['mb_per_s'], 1)} MB/s, "
                    f"{_fmt(w['records_per_s'], 0)} records/s, exit {w['exit_code']}; "
                    f"{_fmt(w.get('vs_j1'), 2)} x `envglot.migrate(jobs=1)` in the same process "
                    f"(median of {len(w.get('rounds', []))} alternated rounds: the target's ratio).",
                ]
    elif mig.get("local_small_files"):  # --sections smallfiles: that row alone
        lines += _local_small_files_lines(mig["local_small_files"], mig.get("work_fs"))
    else:
        lines.append(f"Not measured: {str(mig.get('reason') or mig.get('status')).rstrip('.')}.")
    imp = results.get("import_time")
    if imp:
        lines += [
            "",
            f"Import: `import envglot` + tables loaded and compiled: {imp['above_bare_ms']} ms above a bare "
            f"interpreter ({imp.get('clock', 'wall')} time, medians of {imp['runs']} fresh interpreters: whole "
            f"process {imp['process_ms']} ms, bare interpreter {imp['bare_interpreter_ms']} ms; "
            f"{imp['import_ms']} ms inside the process).",
        ]
    px = results.get("proxy") or {}
    if px.get("status") == "ok":
        lines += ["", "### Proxy overhead", ""]
        lines.append(
            f"{px['calls']:,} tool calls per side after {px['warmup']} warm-up calls, SDK client over stdio, the "
            f"fixture upstream (tests/proxy/upstream_server.py), proxy target {px['target']}."
        )
        lines.append("")
        body = [
            [label, _fmt(px[key]["median_ms"], 3), _fmt(px[key]["p90_ms"], 3), _fmt(px[key]["mean_ms"], 3)]
            for label, key in (
                ("direct", "direct"),
                ("through envglot proxy", "proxied"),
                ("rewrite alone (in process)", "rewrite_only"),
            )
        ]
        lines += _table(["per call", "median ms", "p90 ms", "mean ms"], "lrrr", body)
        lines += ["", f"Overhead (median through the proxy - median direct): {px['overhead_median_ms']:.3f} ms."]
        if px.get("proxy_cpu_ms_per_call") is not None:
            lines.append(
                f"CPU time of the proxy process per call (user + system, load-independent): "
                f"{px['proxy_cpu_ms_per_call']:.3f} ms."
            )
    pol = results.get("policy") or {}
    if pol.get("status") == "ok":
        lines += [
            "",
            f'### Loss policy (default vs `"ignore"`) and preserve ({pol["source"]} -> {pol["target"]}, tiny)',
            "",
        ]
        body = [
            [r["method"], _fmt(r.get("envelopes_per_s"), 0), _fmt(r.get("us_per_envelope"), 2)] for r in pol["rows"]
        ]
        lines += _table(["method", "envelopes/s", "us/envelope"], "lrr", body)
        lines += [
            "",
            f"default / ignore: convert() {_fmt(pol['default_vs_ignore'])}, Converter "
            f"{_fmt(pol['converter_default_vs_ignore'])}; "
            f"with a handler listening: {_fmt(pol['listening_vs_ignore'])}; "
            f"preserve=True costs {_fmt(pol.get('preserve_cost_vs_ignore'))} x ignore.",
        ]
    pre = results.get("preserve") or {}
    if pre.get("status") == "ok":
        title = "### preserve=True vs unsupported='ignore' (Converter, CPU clock, median of the rounds' ratios)"
        lines += ["", title, ""]
        us = {(r["method"], r["source"], r["target"], r["size"]): r.get("us_per_envelope") for r in pre["rows"]}
        body = [
            [
                c["pair"],
                c["size"],
                _fmt(us.get(("Converter ignore", *c["pair"].split(" -> "), c["size"]))),
                _fmt(us.get(("Converter preserve", *c["pair"].split(" -> "), c["size"]))),
                _fmt(c["cost"]),
            ]
            for c in pre["costs"]
        ]
        lines += _table(
            ["pair", "size", "ignore us/envelope", "preserve us/envelope", "preserve / ignore"], "llrrr", body
        )
        lines += [
            "",
            f"Worst pair at tiny (screening every ordered pair of writable dialects): {pre['worst_pair']} "
            f"({_fmt(pre['screen'][pre['worst_pair']])} x).",
        ]
    dec = results.get("declared") or {}
    if dec.get("status") == "ok":
        lines += ["", "### A TOML-declared dialect vs the same envelope declared in Python (Converter)", ""]
        body = [
            [r["method"], f"{r['source']} -> {r['target']}", r["size"], _fmt(r.get("envelopes_per_s"), 0)]
            for r in dec["rows"]
        ]
        lines += _table(["declared in", "pair", "size", "envelopes/s"], "lllr", body)
        lines += ["", "TOML / Python rate, per round (the two passes of a round back to back):", ""]
        body = [
            [
                r["pair"],
                r["size"],
                _fmt(r["median"], 3),
                f"{_fmt(r['q1'], 3)}-{_fmt(r['q3'], 3)}",
                f"{_fmt(r['min'], 3)}-{_fmt(r['max'], 3)}",
            ]
            for r in dec["ratios"]
        ]
        lines += _table(["pair", "size", "median", "quartiles", "range"], "llrrr", body)
        same = "the same bytes" if not dec["disagree"] else f"**different bytes**: {', '.join(dec['disagree'])}"
        lines += [
            "",
            f"Worst median TOML / Python rate: {_fmt(dec['toml_vs_python'], 3)} ({dec['worst']}); both write {same}.",
        ]
    lines += ["", "### Targets", ""]
    body = []
    for t in results["targets"]:
        holds = {True: "yes", False: "**no**", None: "not measured"}[t["holds"]]
        body.append([t["target"], _fmt(t["measured"]), t.get("worst") or t.get("note") or "", holds])
    lines += _table(["target", "measured", "worst case", "holds"], "lrll", body)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# main


DOCS = HERE.parent / "docs" / "performance.md"
_START, _END = "<!-- results:start -->", "<!-- results:end -->"


def update_docs(page: Path, md: str) -> None:
    """Put ``md`` between the results markers of ``page`` (the rest of the page is left alone)."""
    text = page.read_text()
    i, j = text.find(_START), text.find(_END)
    if i < 0 or j < i:
        raise SystemExit(f"{page}: no {_START} ... {_END} section to update")
    page.write_text(text[: i + len(_START)] + "\n\n" + md.rstrip("\n") + "\n\n" + text[j:])


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    g = p.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="smaller corpus and migration file (about a minute)")
    g.add_argument("--smoke", action="store_true", help="tiny corpus, a few seconds: checks the harness works")
    p.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="wall",
        help="timer: wall time, or CPU time (this thread's in memory, the child's for import; steadier when shared)",
    )
    p.add_argument("--seed", type=int, default=20260101, help="corpus seed (default %(default)s)")
    p.add_argument("--rounds", type=int, help="timed rounds per method (default: 15 full, 5 quick, 2 smoke)")
    p.add_argument(
        "--migrate-mb", type=float, help="size of the migration JSONL file in MB (default: 200 full, 32 quick)"
    )
    p.add_argument(
        "--migrate-rounds",
        type=int,
        help="alternated rounds of migrate -j 1, -j 2 and the in-memory baseline (default: 3 full, 2 quick, 1 smoke)",
    )
    p.add_argument(
        "--sections",
        default="inmemory,migrate,import,proxy,policy,declared,preserve",
        help="comma-separated subset of inmemory,migrate,import,proxy,policy,declared,preserve "
        "(smallfiles: the migrate section's local small-files row alone)",
    )
    p.add_argument("--sources", help="comma-separated source dialects (default: all)")
    p.add_argument("--targets", help="comma-separated target dialects (default: all writable)")
    p.add_argument("--sizes", help="comma-separated size classes (default: tiny,medium,large)")
    p.add_argument("--out", type=Path, default=HERE / "results", help="results directory (default benchmarks/results)")
    p.add_argument("--markdown", type=Path, help="also write the tables to this Markdown file")
    p.add_argument(
        "--update-docs",
        action="store_true",
        help="replace the results section of docs/performance.md with this run's tables",
    )
    w = p.add_mutually_exclusive_group()
    w.add_argument("--keep-files", type=Path, help="keep the migration file and outputs in this directory")
    w.add_argument(
        "--work-dir",
        type=Path,
        help="make the migrate section's files in a new directory under this one, deleted at the end "
        "(default: the system's temporary directory; e.g. /dev/shm for a tmpfs)",
    )
    p.add_argument("--envglot", help="the envglot command to run migrate with (default: the one next to this Python)")
    return p.parse_args(argv)


def _split(value: str | None, default: Sequence[str], allowed: Sequence[str], what: str) -> tuple[str, ...]:
    if not value:
        return tuple(default)
    items = tuple(v.strip() for v in value.split(",") if v.strip())
    bad = [v for v in items if v not in allowed]
    if bad:
        raise SystemExit(f"unknown {what}: {', '.join(bad)} (choose from {', '.join(allowed)})")
    return items


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.work_dir is not None and not args.work_dir.is_dir():
        raise SystemExit(f"--work-dir {args.work_dir}: not a directory")
    global CLOCK
    CLOCK = CLOCKS[args.clock]
    mode_name = "smoke" if args.smoke else "quick" if args.quick else "full"
    mode = MODES[mode_name]
    rounds = args.rounds or mode.rounds
    sections = set(
        _split(
            args.sections,
            (),
            ("inmemory", "migrate", "smallfiles", "import", "proxy", "policy", "declared", "preserve"),
            "section",
        )
    )
    sources = _split(args.sources, corpus_mod.DIALECTS, corpus_mod.DIALECTS, "source dialect")
    targets = _split(args.targets, WRITABLE, WRITABLE, "target dialect")
    sizes = _split(args.sizes, corpus_mod.SIZES, corpus_mod.SIZES, "size")

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    log(f"envglot benchmark ({mode_name}): generating the corpus (seed {args.seed}) ...")
    t0 = time.perf_counter()
    corp = corpus_mod.generate(mode.counts, seed=args.seed)
    log(f"  {sum(1 for _ in corp)} records in {time.perf_counter() - t0:.1f}s")
    results: dict[str, Any] = {
        "schema": SCHEMA,
        "timestamp": stamp,
        "mode": mode_name,
        "machine": machine(),
        "config": {
            "seed": args.seed,
            "rounds": rounds,
            "counts": mode.counts,
            "payload_bytes": corpus_mod.SIZE_BYTES,
            "error_share": corpus_mod.ERROR_SHARE,
            "sources": list(sources),
            "targets": list(targets),
            "sizes": list(sizes),
            "unsupported": "ignore",
            "gc": "enabled",
            "clock": args.clock,
            "mb": MB,
        },
        "corpus": corp.stats(),
        "inmemory": [],
        "ratios": [],
        "agreement": [],
        "migrate": {"status": "skipped"},
        "import_time": None,
        "proxy": {"status": "skipped"},
        "policy": {"status": "skipped"},
        "declared": {"status": "skipped"},
        "preserve": {"status": "skipped"},
    }
    if "inmemory" in sections:
        log(f"in-memory: {rounds} rounds per method ...")
        rows, agreement = run_inmemory(corp, sources, targets, sizes, rounds, log)
        results["inmemory"] = rows
        results["agreement"] = agreement
        results["ratios"] = ratios(rows)
    if "migrate" in sections:
        size_mb = args.migrate_mb if args.migrate_mb is not None else mode.migrate_mb
        log(f"migrate: {size_mb} MB JSONL ...")
        cmd = [args.envglot] if args.envglot else envglot_command()
        results["migrate"] = run_migrate(
            corp, mode, size_mb, rounds, args.keep_files, args.work_dir, cmd, log, args.migrate_rounds
        )
    elif "smallfiles" in sections:
        log(f"migrate: the small-files row alone ({mode.small_files:,} files of ~1 KB) ...")
        cmd = [args.envglot] if args.envglot else envglot_command()
        results["migrate"] = run_smallfiles(corp, mode, args.keep_files, args.work_dir, cmd, log)
    if "import" in sections:
        log("import time ...")
        results["import_time"] = run_import_time(mode.import_runs, cpu=args.clock == "cpu")
    if "proxy" in sections:
        log("proxy: tool calls direct and through envglot proxy ...")
        results["proxy"] = proxy_bench.run_proxy(PROXY_CALLS[mode_name], log)
    if "policy" in sections:
        log("loss policy: library default vs ignore ...")
        results["policy"] = run_policy(corp, rounds, log)
    if "declared" in sections:
        log("declared: a TOML-declared dialect vs its Python twin ...")
        d_rounds = args.rounds or mode.declared_rounds
        results["config"]["declared"] = {"rounds": d_rounds, "pass_s": mode.declared_pass_s}
        results["declared"] = declared_twin.run_declared(
            corp, sizes, d_rounds, mode.declared_pass_s, measure, Timing, CLOCK, log
        )
    if "preserve" in sections:
        log("preserve: preserve=True vs ignore (CPU clock) ...")
        results["preserve"] = preserve_cost.run_preserve(corp, sizes, rounds, measure, Timing, rate_ratio, log)
    results["machine"]["loadavg_at_end"] = _loadavg()
    results["targets"] = evaluate(
        results["ratios"],
        results["migrate"],
        results["import_time"],
        results["proxy"],
        results["policy"],
        results["declared"],
        results["preserve"],
    )
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{stamp}.json"
    path.write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2))
    md = markdown(results)
    print(md)
    if args.markdown is not None:
        args.markdown.write_text(md)
    if args.update_docs:
        update_docs(DOCS, md)
        log(f"updated {DOCS}")
    log(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
