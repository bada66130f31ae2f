"""The ``proxy`` section of the benchmark: tool calls to a real upstream, direct and through ``envglot proxy``.

Both sides use the SDK's real client over stdio and the test suite's fixture upstream
(``tests/proxy/upstream_server.py``, answering with example envelopes of three dialects
and plain text). Each call is timed on its own; the overhead is the difference of the
medians. The in-process cost of the rewrite alone (``Rewriter.result``) is measured too,
to split the overhead into conversion and the extra MCP hop.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = ROOT / "tests" / "proxy" / "upstream_server.py"
TOOLS = ("dotbot_ok", "errorcode_error", "graph_ok", "dotbot_error", "errorcode_ok", "graph_error", "plain")
"""Called in turn, the same sequence on both sides."""
TARGET = "response-v2"
WARMUP = 50


def _envglot() -> str:
    return str(Path(sys.executable).parent / "envglot")


def _child_cpu(marker: str) -> float | None:
    """CPU seconds (user + system) used so far by this process's child whose command line holds ``marker``.

    Linux only (``/proc``); ``None`` elsewhere or when no such child is found.
    """
    try:
        tick = os.sysconf("SC_CLK_TCK")
        me = os.getpid()
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry.name}/stat").read_text()
                cmdline = Path(f"/proc/{entry.name}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2 :].split()
            if int(fields[1]) == me and marker in cmdline:
                return (int(fields[11]) + int(fields[12])) / tick
    except (OSError, ValueError, AttributeError):
        return None
    return None


async def _timed_calls(
    command: str, args: list[str], tools: list[str], calls: int, cpu: dict[str, float | None] | None = None
) -> list[float]:
    """Per-call wall times (seconds) of ``calls`` tool calls, after a warm-up.

    With ``cpu``, also the CPU seconds the spawned server process used during the timed calls
    (``cpu["seconds"]``), a figure that does not depend on the machine's load.
    """
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command, args=args)
    out: list[float] = []
    with open(Path("/dev/null"), "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            for i in range(WARMUP):
                await session.call_tool(tools[i % len(tools)], {})
            clock = time.perf_counter
            marker = " ".join(args[:2])
            before = _child_cpu(marker) if cpu is not None else None
            for i in range(calls):
                t0 = clock()
                await session.call_tool(tools[i % len(tools)], {})
                out.append(clock() - t0)
            after = _child_cpu(marker) if cpu is not None else None
            if cpu is not None:
                cpu["seconds"] = after - before if before is not None and after is not None else None
    return out


def _rewrite_cost(calls: int) -> list[float]:
    """Per-result time of the proxy's rewrite alone (in process), over the same results."""
    import json

    from envglot.proxy import Rewriter

    examples = ROOT / "examples"
    files = {
        "dotbot_ok": ("dotbot/structure-ok.json", False),
        "dotbot_error": ("dotbot/register-error.json", True),
        "errorcode_ok": ("errorcode/search-ok.json", False),
        "errorcode_error": ("errorcode/rate-limited.json", True),
        "graph_ok": ("code-graph/digest-ok.json", False),
        "graph_error": ("code-graph/issues-error.json", True),
    }
    wires: list[dict[str, Any]] = []
    for tool in TOOLS:
        if tool == "plain":
            wires.append({"content": [{"type": "text", "text": "hello"}], "isError": False})
            continue
        name, is_error = files[tool]
        doc = json.loads((examples / name).read_text())
        wires.append(
            {"content": [{"type": "text", "text": json.dumps(doc)}], "structuredContent": doc, "isError": is_error}
        )
    r = Rewriter(TARGET)
    out: list[float] = []
    clock = time.perf_counter
    for i in range(WARMUP + calls):
        w = wires[i % len(wires)]
        t0 = clock()
        r.result(w, "tool")
        if i >= WARMUP:
            out.append(clock() - t0)
    return out


def _summary(times: list[float]) -> dict[str, float]:
    q = statistics.quantiles(times, n=10)
    return {
        "median_ms": round(1000 * statistics.median(times), 3),
        "p90_ms": round(1000 * q[-1], 3),
        "mean_ms": round(1000 * statistics.fmean(times), 3),
    }


def run_proxy(calls: int, log: Callable[[str], None]) -> dict[str, Any]:
    """Median per-call time direct vs through the proxy, and the overhead."""
    if importlib.util.find_spec("mcp") is None:
        return {"status": "unavailable", "reason": "the mcp package is not installed (pip install 'envglot[mcp]')"}
    if not UPSTREAM.is_file():
        return {"status": "unavailable", "reason": f"no fixture upstream at {UPSTREAM}"}
    import anyio

    up = [str(UPSTREAM)]
    tools = list(TOOLS)
    log(f"  direct: {calls} calls ...")
    direct = anyio.run(_timed_calls, sys.executable, up, tools, calls)
    log(f"  through the proxy (-t {TARGET}): {calls} calls ...")
    proxied_args = ["proxy", "-q", "-t", TARGET, "--", sys.executable, *up]
    cpu: dict[str, float | None] = {}
    proxied = anyio.run(_timed_calls, _envglot(), proxied_args, tools, calls, cpu)
    rewrite = _rewrite_cost(calls)
    d, p, rw = _summary(direct), _summary(proxied), _summary(rewrite)
    return {
        "status": "ok",
        "calls": calls,
        "warmup": WARMUP,
        "target": TARGET,
        "tools": tools,
        "direct": d,
        "proxied": p,
        "rewrite_only": rw,
        "overhead_median_ms": round(p["median_ms"] - d["median_ms"], 3),
        "proxy_cpu_ms_per_call": None if cpu.get("seconds") is None else round(1000 * cpu["seconds"] / calls, 3),  # type: ignore[operator]
    }
