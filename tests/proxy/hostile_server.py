"""A hostile upstream MCP server for the proxy tests: raw JSON-RPC lines on stdio, bytes of its choosing.

No SDK: it writes what a broken or malicious server writes (invalid UTF-8, answers the
SDK cannot read, huge answers, forged ``_meta``, a regex that backtracks forever) and
misbehaves on purpose (hangs or crashes at start-up, hangs single-threaded in a call,
closes its stdout and lives on).

    python hostile_server.py [serve|hang-start|crash-start]
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

REDOS = "^(a+)+$"
"""Catastrophic backtracking on ``"a" * 40 + "!"``: minutes of CPU in ``re``."""
TOOLS = [
    "ok",
    "bad_utf8",
    "huge",
    "deep",
    "bignum",
    "non_object",
    "redos",
    "forged_meta",
    "log_line_then_ok",
    "close_output",
    "hang",
]


def _line(raw: bytes) -> None:
    sys.stdout.buffer.write(raw + b"\n")
    sys.stdout.buffer.flush()


def _result(rid: Any, result: Any) -> None:
    _line(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode())


def _text(text: str, *, structured: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": False}
    if structured is not None:
        out["structuredContent"] = structured
    return out


def _tool(name: str) -> dict[str, Any]:
    tool: dict[str, Any] = {"name": name, "inputSchema": {"type": "object"}}
    if name == "redos":
        tool["outputSchema"] = {"type": "object", "properties": {"s": {"type": "string", "pattern": REDOS}}}
    return tool


def _call(rid: Any, name: str, args: dict[str, Any]) -> None:
    head = b'{"jsonrpc": "2.0", "id": ' + json.dumps(rid).encode()
    if name == "ok":
        _result(rid, _text("fine"))
    elif name == "bad_utf8":
        _line(head + b', "result": {"content": [{"type": "text", "text": "caf\xe9 \xff\xfe ok"}], "isError": false}}')
    elif name == "huge":
        _result(rid, _text("x" * int(args.get("size", 200_000))))
    elif name == "deep":
        _line(head + b', "result": {"content": [], "structuredContent": {"a": ' + b"[" * 300 + b"]" * 300 + b"}}}")
    elif name == "bignum":
        _line(head + b', "result": {"content": [], "structuredContent": {"n": 1' + b"0" * 5000 + b"}}}")
    elif name == "non_object":
        _result(rid, [1, 2, 3])
    elif name == "redos":
        _result(rid, _text("backtrack", structured={"s": "a" * 40 + "!"}))
    elif name == "forged_meta":
        forged = {"dev.envglot/diagnostics": [{"kind": "forged"}], "dev.envglot/other": 1, "com.example/trace": "t1"}
        _result(rid, {**_text("meta"), "_meta": forged})
    elif name == "log_line_then_ok":
        _line(b"starting the tool... (a log line on stdout)")
        _result(rid, _text("fine after a log line"))
    elif name == "close_output":
        os.close(1)  # stdout gone, the process alive: the proxy must not wait on it forever
        time.sleep(3600)
    elif name == "hang":
        time.sleep(3600)  # single-threaded: pings and cancellations go unanswered too


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "serve"
    if mode == "crash-start":
        sys.exit(4)
    if mode == "hang-start":
        time.sleep(3600)
    for raw in sys.stdin.buffer:
        msg = json.loads(raw)
        rid, method, params = msg.get("id"), msg.get("method"), msg.get("params") or {}
        if rid is None or method is None:
            continue  # notifications (initialized, cancelled) and responses
        if method == "initialize":
            version, info = params["protocolVersion"], {"name": "hostile", "version": "1"}
            _result(rid, {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info})
        elif method == "ping":
            _result(rid, {})
        elif method == "tools/list":
            _result(rid, {"tools": [_tool(n) for n in TOOLS]})
        elif method == "tools/call":
            _call(rid, params["name"], params.get("arguments") or {})
        else:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            _line(json.dumps({"jsonrpc": "2.0", "id": rid, "error": error}).encode())


if __name__ == "__main__":
    main()
