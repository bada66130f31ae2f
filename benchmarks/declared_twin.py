"""The benchmark's "declared" section: a TOML-declared dialect against its Python twin.

``examples/declared/acme.toml`` declares the acme envelope in TOML; :class:`AcmePy` declares the
same envelope in Python, as a bundled dialect's module would (wire Structs, field steps, hooks
and a detection probe written for this envelope), under the name ``acme-py`` with acme's own
tables; each is timed in a registry of the bundled dialects and itself. Both are compiled
by ``envglot.fields``; the section times a reused ``Converter`` per pair for each, from acme
documents to bundled dialects and back, checks that they write the same bytes, and reports the
rate of the TOML dialect as a share of the Python one's (issue 24: at least 0.9).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec
from msgspec import Raw, Struct

import envglot
from envglot import canonical as c
from envglot.codes import missing_problem, problem_message, read_problem, write_code
from envglot.context import Context
from envglot.dialect import Dialect, Facts, Probe, Shape
from envglot.fields import Build, Const, Let, Move, Reading, Writing
from envglot.mappings import DialectMap, DialectTable, load_mappings
from envglot.registry import bundled
from envglot.wire import ABSENT, RAW_NULL, WireDecoder

ACME = Path(__file__).resolve().parents[1] / "examples" / "declared" / "acme.toml"
NAME = "acme-py"
TARGETS = ("dotbot", "response-v2", "errorcode")
SOURCE = "response-v2"
"""Corpus documents are converted to acme once; the reverse rows convert these to acme."""


class AcmeError(Struct, forbid_unknown_fields=True, omit_defaults=True):
    error_code: str
    message: str
    retryable: bool | None = None


class AcmeWire(Struct, forbid_unknown_fields=True, omit_defaults=True, kw_only=True):
    tier: str
    tool_id: str
    data: Raw
    request_id: str | None = None
    error: AcmeError | None = None


class AcmeOut(Struct, omit_defaults=True):
    """acme as written: tier, tool_id, request_id, error, data."""

    tier: str
    tool_id: str
    request_id: str | None = None
    error: AcmeError | None = None
    data: Raw = ABSENT


def _probe(f: Facts) -> str | None:
    return "tier" if f.has("tool_id") and f.equals("tier", b'"v1"') else None


def _tier(w: AcmeWire, extras: tuple[c.Extra, ...]) -> tuple[c.Extra, ...]:
    if w.tier == "v1":
        return extras
    return (*extras, c.Extra(dialect=NAME, path="$.tier", value=Raw(msgspec.json.encode(w.tier))))


def _problems(w: AcmeWire, ctx: Context, dmap: DialectMap) -> tuple[c.Problem, ...]:
    e = w.error
    if e is None:
        return ()
    return (read_problem(dmap, e.error_code, ctx, "$.error.error_code", retryable=e.retryable, message=e.message),)


def _ok(problems: tuple[c.Problem, ...]) -> bool:
    return not problems


def _payload(w: AcmeWire, ok: bool) -> Raw | None:
    return None if not ok and w.data == RAW_NULL else w.data


def _tool(tool: str | None, ctx: Context, dmap: DialectMap) -> str:
    return tool if tool is not None else str(ctx.synth_value(dmap, "tool", "$.tool_id"))


def _error(
    ok: bool, problems: tuple[c.Problem, ...], summary: str | None, ctx: Context, dmap: DialectMap
) -> AcmeError | None:
    if ok:
        return None
    p = problems[0] if problems else missing_problem(summary, ctx, dmap)
    return AcmeError(
        error_code=write_code(p, dmap, ctx), message=problem_message(p, summary, ctx, dmap), retryable=p.retryable
    )


def _data(payload: Raw | None) -> Raw:
    return RAW_NULL if payload is None else payload


class AcmePy(Dialect):
    """acme declared in Python (the benchmark's twin of ``examples/declared/acme.toml``)."""

    name = NAME
    description = "acme, declared in Python (benchmark twin)"
    shape = Shape(payload="any")
    wire = AcmeWire
    probes = (Probe(80, _probe, '`tier` `"v1"` and `tool_id`'),)  # acme.toml's [declare.detect]
    plugin = NAME  # a team's own Python dialect is a plugin: its probe runs after the bundled ones, as acme's does
    outcome_key = "error"
    reading = Reading(
        WireDecoder(AcmeWire, NAME, "$._envglot"),
        Let("extras", _tier, pure=True),
        Move("tool", "w.tool_id"),
        Move("request_id", "w.request_id"),
        Let("problems", _problems),
        Let("ok", _ok, pure=True),
        Let("payload", _payload, pure=True),
    )
    writing = Writing(
        Let("error", _error),
        Let("tool_id", _tool),
        Let("data", _data, pure=True),
        Build.of(
            "out", AcmeOut, tier=Const("v1"), tool_id="tool_id", request_id="request_id", error="error", data="data"
        ),
    )

    def own_table(self) -> tuple[DialectTable, str]:
        return _table(), str(ACME)


def _table() -> DialectTable:
    """acme's tables under the twin's name (``[declare]`` left out)."""
    import tomllib

    doc: dict[str, Any] = tomllib.loads(ACME.read_text())
    doc.pop("declare")
    doc["dialect"] = NAME
    return msgspec.convert(doc, DialectTable, str_keys=True)


def _reps(fn: Callable[[bytes], bytes], items: Sequence[bytes], pass_s: float, clock: Callable[[], float]) -> int:
    """How many times ``items`` go into one timed pass so that it lasts about ``pass_s``."""
    t0 = clock()
    for b in items:
        fn(b)
    took = clock() - t0
    return max(1, round(pass_s / took)) if took > 0 else 1


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted values (linear between neighbours)."""
    at = q * (len(sorted_values) - 1)
    lo = int(at)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (at - lo)


def paired_ratio(toml_times: Sequence[float], py_times: Sequence[float]) -> dict[str, float]:
    """TOML rate / Python rate per round (the Python pass's time over the TOML pass's, the two
    passes of a round run back to back), as its median, quartiles and extremes."""
    per_round = sorted(p / t for t, p in zip(toml_times, py_times, strict=True) if t > 0)
    return {
        "median": round(statistics.median(per_round), 3),
        "q1": round(_quantile(per_round, 0.25), 3),
        "q3": round(_quantile(per_round, 0.75), 3),
        "min": round(per_round[0], 3),
        "max": round(per_round[-1], 3),
    }


def run_declared(
    corp: Any,
    sizes: Sequence[str],
    rounds: int,
    pass_s: float,
    measure: Callable[..., None],
    timing: Callable[..., Any],
    clock: Callable[[], float],
    log: Callable[[str], None],
) -> dict[str, Any]:
    """Rows per size and pair for ``acme`` (TOML) and ``acme-py`` (Python), their agreement,
    and the TOML / Python rate ratio per pair: the median over ``rounds`` rounds of the
    ratio within each round, with its spread; the worst pair is the one with the lowest median.

    A round times one pass of each, back to back, in alternating order (``measure``), so load
    that changes during the run hits both sides of a ratio alike; a pass repeats the pair's
    documents until it lasts about ``pass_s`` of ``clock`` time."""
    # Each side has its own registry (the bundled dialects and itself): in one registry, each
    # one's documents would be detected as the other's, and the forced-source check would read
    # every one of them a second time with the other's reader.
    # The twin is defined outside envglot.dialects, so it joins only the registry built with it.
    m = {"toml": load_mappings([str(ACME)]), "python": load_mappings(registry=bundled().adding(AcmePy()))}
    rows: list[dict[str, Any]] = []
    ratios: list[dict[str, Any]] = []
    disagree: list[str] = []

    def conv(side: str, src: str, dst: str) -> Callable[[bytes], bytes]:
        return envglot.Converter(to=dst, from_=src, unsupported="ignore", mappings=m[side]).convert_bytes

    for size in sizes:
        plain = corp.payloads(SOURCE, size)
        acme_docs = [envglot.convert(b, to="acme", mappings=m["toml"], unsupported="ignore") for b in plain]
        cases = [(f"acme -> {t}", ("acme", t), (NAME, t), acme_docs) for t in TARGETS]
        cases.append((f"{SOURCE} -> acme", (SOURCE, "acme"), (SOURCE, NAME), plain))
        for label, (s_toml, d_toml), (s_py, d_py), docs in cases:
            toml, py = conv("toml", s_toml, d_toml), conv("python", s_py, d_py)
            if any(toml(b) != py(b) for b in docs):  # the same envelope: the same bytes
                disagree.append(f"{label} ({size})")
            items = list(docs) * _reps(py, docs, pass_s, clock)
            nbytes = sum(map(len, items))
            timings = {
                "toml": timing("declared (TOML)", s_toml, d_toml, size, len(items), nbytes),
                "python": timing("declared (Python)", s_py, d_py, size, len(items), nbytes),
            }
            t0 = time.perf_counter()
            measure({"toml": toml, "python": py}, items, rounds, timings, clock)
            rows += [timings["toml"].row(), timings["python"].row()]
            if timings["toml"].times and timings["python"].times:
                r = paired_ratio(timings["toml"].times, timings["python"].times)
                ratios.append({"pair": label, "size": size, "rounds": rounds, "passes_of": len(items), **r})
                log(
                    f"  {size:6} {label:24} TOML/Python median {r['median']:.3f} "
                    f"(quartiles {r['q1']:.3f}-{r['q3']:.3f}) ({time.perf_counter() - t0:4.1f}s)"
                )
    worst = min(ratios, key=lambda r: r["median"], default=None)
    return {
        "status": "ok",
        "rows": rows,
        "ratios": ratios,
        "disagree": disagree,
        "toml_vs_python": worst["median"] if worst else None,
        "worst": f"{worst['pair']} ({worst['size']})" if worst else None,
    }
