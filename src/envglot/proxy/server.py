"""The proxy itself: an MCP server whose tools are the upstreams' tools, results rewritten.

``tools/list`` gathers every upstream's tools under their prefixes (the ``outputSchema``
becomes the target envelope's); ``tools/call`` forwards to the owning upstream and
rewrites the result (:mod:`envglot.proxy.rewrite`); protocol failures are answered as
``mappings/mcp-protocol.toml`` says. One log line per call on the ``envglot.proxy``
logger.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import time
from collections.abc import AsyncIterator
from typing import IO, Any

import anyio
import anyio.abc

from .. import __version__
from ..errors import EnvglotError
from .config import ProxyConfig
from .protocol import ProtocolRule
from .rewrite import Rewriter, Rewritten
from .sdk import V2, ProtocolError, error_code, make_error, types
from .upstream import Upstream, UpstreamGoneError

__all__ = ["INVALID_PARAMS", "Proxy", "build_server", "parse_listen", "serve_http", "serve_stdio"]

_log = logging.getLogger("envglot.proxy")
INVALID_PARAMS = -32602


class Proxy:
    """The routing and rewriting core, independent of the downstream transport."""

    def __init__(self, config: ProxyConfig, rewriter: Rewriter, *, errlog: IO[str] | None = None) -> None:
        self.config = config
        self.rewriter = rewriter
        self.errlog = errlog
        self.upstreams: list[Upstream] = []
        self.routes: dict[str, tuple[Upstream, str]] = {}
        """Published tool name -> (upstream, its own name for the tool)."""

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Proxy]:
        """Open the upstreams (connected in the background) for the life of the block."""
        async with anyio.create_task_group() as tg:
            self.upstreams = [Upstream(spec, tg, errlog=self.errlog) for spec in self.config.upstream]
            for up in self.upstreams:
                tg.start_soon(self._warm, up)
            try:
                yield self
            finally:
                with anyio.CancelScope(shield=True):
                    for up in self.upstreams:
                        await up.close()
                tg.cancel_scope.cancel()

    async def _warm(self, up: Upstream) -> None:
        try:
            await up.session()
        except UpstreamGoneError as exc:
            _log.warning("%s", exc)

    def _timeout(self, up: Upstream) -> float:
        return up.timeout if up.timeout is not None else self.config.timeout

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every upstream's tools under their published names; an unreachable upstream lists none."""
        results: list[list[dict[str, Any]] | None] = [None] * len(self.upstreams)

        async def one(i: int, up: Upstream) -> None:
            try:
                await up.session()  # connecting is bounded on its own
                with anyio.fail_after(self._timeout(up)):
                    results[i] = await up.list_tools()
            except (UpstreamGoneError, ProtocolError, TimeoutError) as exc:
                _log.warning("upstream %s: tools/list failed, its tools are left out: %s", up.spec.label, exc)

        async with anyio.create_task_group() as tg:
            for i, up in enumerate(self.upstreams):
                tg.start_soon(one, i, up)
        routes: dict[str, tuple[Upstream, str]] = {}
        tools: list[dict[str, Any]] = []
        for up, listed in zip(self.upstreams, results, strict=True):
            for tool in listed or ():
                public = up.spec.public_name(tool["name"])
                if public in routes:
                    other = routes[public][0].spec.label
                    _log.warning(
                        "upstream %s: tool %r is published as %r by upstream %s already; left out",
                        up.spec.label,
                        tool["name"],
                        public,
                        other,
                    )
                    continue
                routes[public] = (up, tool["name"])
                tools.append(self.rewriter.tool(tool, public))
        self.routes.update(routes)
        return tools

    async def _route(self, name: str) -> tuple[Upstream, str]:
        hit = self.routes.get(name)
        if hit is None:  # a client that calls without listing first: list once
            await self.list_tools()
            hit = self.routes.get(name)
        if hit is None:
            raise make_error(INVALID_PARAMS, f"Unknown tool: {name}")
        return hit

    async def call_tool(self, name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
        """Forward one call and rewrite its result (a CallToolResult wire dict).

        Raises:
            ProtocolError: an unknown tool, or an upstream JSON-RPC error the table keeps
                as a protocol error (same code and message).
        """
        up, tool = await self._route(name)
        started, clock = time.time(), time.perf_counter()
        rule: ProtocolRule | None = None
        code: int | None = None
        try:
            await up.session()  # connecting is bounded on its own
            with anyio.fail_after(self._timeout(up)):
                wire = await up.call(tool, arguments)
        except TimeoutError:
            rule, why = self.rewriter.table.events["timeout"], f"no answer within {self._timeout(up):g} s"
        except UpstreamGoneError as exc:
            rule, why = self.rewriter.table.events["upstream_exited" if exc.exited else "connect_failed"], str(exc)
        except ProtocolError as exc:
            code = error_code(exc)
            rule, why = self.rewriter.table.for_code(code), str(exc) or f"JSON-RPC error {code}"
            if rule.answer == "protocol":
                self._log(name, up, "protocol", f"JSON-RPC error {code} forwarded", clock)
                raise
        except RuntimeError as exc:  # the SDK refused the upstream's answer (e.g. against its outputSchema)
            rule, why = self.rewriter.table.events["invalid_result"], str(exc)
        elapsed = time.perf_counter() - clock
        if rule is not None:
            out = self.rewriter.failure(rule, why, tool, code=code, started=started, elapsed=elapsed)
        else:
            try:
                out = self.rewriter.result(wire, tool, started, elapsed)
            except EnvglotError as exc:
                out = self.rewriter.failure(self.rewriter.table.events["invalid_result"], str(exc), tool)
        self._log_result(name, up, out, clock)
        return out.result

    def _log(self, name: str, up: Upstream, outcome: str, detail: str, clock: float) -> None:
        ms = (time.perf_counter() - clock) * 1000
        _log.info("call %s upstream=%s %s %.1fms %s", name, up.spec.label, outcome, ms, detail)

    def _log_result(self, name: str, up: Upstream, out: Rewritten, clock: float) -> None:
        if not _log.isEnabledFor(logging.INFO):
            return
        diags = "; ".join(f"{d.kind.value} {d.path}: {d.message}" for d in out.diagnostics)
        outcome = f"source={out.source} target={self.rewriter.target} isError={str(out.is_error).lower()}"
        self._log(name, up, outcome, f"diagnostics={len(out.diagnostics)}" + (f" [{diags}]" if diags else ""), clock)


# ---- the SDK server ----------------------------------------------------------------------


def build_server(proxy: Proxy, name: str = "envglot-proxy") -> Any:
    """An SDK low-level ``Server`` publishing ``proxy`` (``mcp`` 2.x or 1.x)."""
    from mcp.server.lowlevel.server import Server

    @contextlib.asynccontextmanager
    async def lifespan(_server: Any) -> AsyncIterator[dict[str, Any]]:
        async with proxy.running():
            yield {}

    async def list_tools() -> Any:
        return types.ListToolsResult(tools=[types.Tool.model_validate(t) for t in await proxy.list_tools()])

    async def call_tool(tool: str, arguments: dict[str, Any] | None) -> Any:
        return types.CallToolResult.model_validate(await proxy.call_tool(tool, arguments))

    if V2:

        async def on_list_tools(ctx: Any, params: Any) -> Any:
            return await list_tools()

        async def on_call_tool(ctx: Any, params: Any) -> Any:
            return await call_tool(params.name, params.arguments)

        return Server(
            name, version=__version__, lifespan=lifespan, on_list_tools=on_list_tools, on_call_tool=on_call_tool
        )

    server: Any = Server(name, version=__version__, lifespan=lifespan)  # mcp 1.x: handlers by request type
    v1: Any = types

    async def v1_list_tools(req: Any) -> Any:
        return v1.ServerResult(await list_tools())

    async def v1_call_tool(req: Any) -> Any:
        return v1.ServerResult(await call_tool(req.params.name, req.params.arguments))

    server.request_handlers[v1.ListToolsRequest] = v1_list_tools
    server.request_handlers[v1.CallToolRequest] = v1_call_tool
    return server


async def serve_stdio(proxy: Proxy) -> None:
    """Serve the proxy on this process's stdin/stdout until the client closes them."""
    from mcp.server.stdio import stdio_server

    server = build_server(proxy)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def parse_listen(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (a loopback address) for ``--listen``.

    Raises:
        EnvglotError: not HOST:PORT, a port outside 0-65535, or a host that is not loopback
            (the proxy has no authentication: it serves this machine only).
    """
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise EnvglotError(f"--listen must be HOST:PORT (e.g. 127.0.0.1:8931), not {value!r}")
    if host != "localhost":
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise EnvglotError(
                f"--listen {value}: the proxy has no authentication and listens on loopback only "
                "(127.0.0.1, ::1 or localhost)"
            )
    return host, int(port)


def http_app(proxy: Proxy, host: str) -> Any:
    """The Starlette app serving the proxy over Streamable HTTP at ``/mcp``."""
    server = build_server(proxy)
    if V2:
        return server.streamable_http_app(host=host)
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager  # mcp 1.x
    from starlette.applications import Starlette
    from starlette.routing import Mount

    manager = StreamableHTTPSessionManager(app=server)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return Starlette(routes=[Mount("/mcp", app=manager.handle_request)], lifespan=lifespan)


async def serve_http(proxy: Proxy, host: str, port: int) -> None:
    """Serve the proxy over Streamable HTTP on ``http://HOST:PORT/mcp``."""
    import uvicorn

    config = uvicorn.Config(http_app(proxy, host), host=host, port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    await server.serve()
