"""The benchmark's "declared" section: a TOML-declared dialect against its Python twin.

``examples/declared/acme.toml`` declares the acme envelope in TOML; :class:`AcmePy` declares the
same envelope in Python, as a bundled dialect's module would (wire Structs, field steps, hooks
written for this envelope), under the name ``acme-py`` with acme's own tables. Both are compiled
by ``envglot.fields``; the section times a reused ``Converter`` per pair for each, from acme
documents to bundled dialects and back, checks that they write the same bytes, and reports the
rate of the TOML dialect as a share of the Python one's (issue 24: at least 0.9).
"""

from __future__ import annotations

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
from envglot.dialect import Dialect, Shape
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
    keys = frozenset()  # no probe, no detection keys: acme's documents stay acme's (read with from_)
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


def run_declared(
    corp: Any,
    sizes: Sequence[str],
    rounds: int,
    measure: Callable[..., None],
    timing: Callable[..., Any],
    log: Callable[[str], None],
) -> dict[str, Any]:
    """Rows per size and pair for ``acme`` (TOML) and ``acme-py`` (Python), their agreement,
    and the worst rate ratio TOML / Python."""
    # the twin is defined outside envglot.dialects, so it joins only the registry built with it
    m = load_mappings([str(ACME)], registry=bundled().adding(AcmePy()))
    rows: list[dict[str, Any]] = []
    worst: tuple[float, str] | None = None
    disagree: list[str] = []

    def conv(src: str, dst: str) -> Callable[[bytes], bytes]:
        return envglot.Converter(to=dst, from_=src, unsupported="ignore", mappings=m).convert_bytes

    for size in sizes:
        plain = corp.payloads(SOURCE, size)
        acme_docs = [envglot.convert(b, to="acme", mappings=m, unsupported="ignore") for b in plain]
        cases = [(f"acme -> {t}", ("acme", t), (NAME, t), acme_docs) for t in TARGETS]
        cases.append((f"{SOURCE} -> acme", (SOURCE, "acme"), (SOURCE, NAME), plain))
        for label, (s_toml, d_toml), (s_py, d_py), items in cases:
            toml, py = conv(s_toml, d_toml), conv(s_py, d_py)
            if any(toml(b) != py(b) for b in items):  # the same envelope: the same bytes
                disagree.append(f"{label} ({size})")
            nbytes = sum(map(len, items))
            timings = {
                "toml": timing("declared (TOML)", s_toml, d_toml, size, len(items), nbytes),
                "python": timing("declared (Python)", s_py, d_py, size, len(items), nbytes),
            }
            t0 = time.perf_counter()
            measure({"toml": toml, "python": py}, items, rounds, timings)
            r_toml, r_py = timings["toml"].row(), timings["python"].row()
            rows += [r_toml, r_py]
            if r_toml.get("envelopes_per_s") and r_py.get("envelopes_per_s"):
                ratio = round(r_toml["envelopes_per_s"] / r_py["envelopes_per_s"], 3)
                if worst is None or ratio < worst[0]:
                    worst = (ratio, f"{label} ({size})")
                log(f"  {size:6} {label:24} TOML/Python {ratio:.3f} ({time.perf_counter() - t0:4.1f}s)")
    return {
        "status": "ok",
        "rows": rows,
        "disagree": disagree,
        "toml_vs_python": worst[0] if worst else None,
        "worst": worst[1] if worst else None,
    }
