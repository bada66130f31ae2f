"""The proxy itself: an MCP server whose tools are the upstreams' tools, results rewritten.

Over 500 lines: the Proxy and the two ways it is served (stdio, HTTP) share its state and its shutdown.

``tools/list`` gathers every upstream's tools under their prefixes (the ``outputSchema``
becomes the target envelope's); ``tools/call`` forwards to the owning upstream and
rewrites the result (:mod:`envglot.proxy.rewrite`); protocol failures are answered as
``mappings/mcp-protocol.toml`` says. One log line per call on the ``envglot.proxy``
logger.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import IO, Any

import anyio
import anyio.abc
import msgspec

from .. import __version__
from ..diagnostics import Diagnostic, Kind, diagnostic
from ..errors import EnvglotError
from .config import ProxyConfig
from .listen import BearerAuth, Listen
from .protocol import ProtocolRule
from .rewrite import Rewriter, Rewritten
from .sdk import V2, ProtocolError, error_code, make_error, security_settings, types
from .upstream import Called, Relay, Upstream, UpstreamAnswerError, UpstreamGoneError

__all__ = [
    "INVALID_PARAMS",
    "Proxy",
    "bind_listener",
    "build_server",
    "http_app",
    "listen_url",
    "serve_http",
    "serve_stdio",
]

_log = logging.getLogger("envglot.proxy")
INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603


class Proxy:
    """The routing and rewriting core, independent of the downstream transport."""

    def __init__(self, config: ProxyConfig, rewriter: Rewriter, *, errlog: IO[str] | None = None) -> None:
        self.config = config
        self.rewriter = rewriter
        self.errlog = errlog
        self.upstreams: list[Upstream] = []
        self.routes: dict[str, tuple[Upstream, str]] = {}
        """Published tool name -> (upstream, its own name for the tool)."""
        self.prompt_routes: dict[str, tuple[Upstream, str]] = {}
        self.resource_routes: dict[str, Upstream] = {}
        """Resource URI -> the upstream that listed it."""

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Proxy]:
        """Open the upstreams (connected in the background) for the life of the block."""
        async with anyio.create_task_group() as tg:
            self.upstreams = [
                Upstream(
                    spec,
                    tg,
                    timeout=spec.timeout if spec.timeout is not None else self.config.timeout,
                    max_result_bytes=self.config.max_result_bytes,
                    errlog=self.errlog,
                )
                for spec in self.config.upstream
            ]
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

    async def _gather(self, method: str) -> list[tuple[Upstream, list[dict[str, Any]]]]:
        """``Upstream.<method>()`` of every upstream at once; a failing upstream contributes nothing.

        An upstream without the capability (JSON-RPC "method not found") lists nothing quietly;
        any other failure is logged as a warning and, for tools, kept as the upstream's
        ``listing_failure`` (a call to one of its tools is then answered with it).
        """
        results: list[list[dict[str, Any]]] = [[] for _ in self.upstreams]

        async def one(i: int, up: Upstream) -> None:
            failure: tuple[str, str] | None = None
            await up.settled()
            try:
                with anyio.fail_after(up.timeout):  # connecting included
                    await up.session()
                    results[i] = await getattr(up, method)()
            except ProtocolError as exc:
                if error_code(exc) != METHOD_NOT_FOUND:
                    _log.warning("upstream %s: %s failed, its items are left out: %s", up.spec.label, method, exc)
            except UpstreamAnswerError as exc:
                failure = (exc.event, f"upstream {up.spec.label}: {exc}")
            except UpstreamGoneError as exc:
                failure = ("upstream_exited" if exc.exited else "connect_failed", str(exc))
            except TimeoutError:
                failure = ("timeout", f"upstream {up.spec.label}: no answer within {up.timeout:g} s")
            if failure is not None:
                _log.warning("upstream %s: %s failed, its items are left out: %s", up.spec.label, method, failure[1])
            if method == "list_tools":
                up.listing_failure = failure

        async with anyio.create_task_group() as tg:
            for i, up in enumerate(self.upstreams):
                tg.start_soon(one, i, up)
        return list(zip(self.upstreams, results, strict=True))

    def _publish(
        self, listed: list[tuple[Upstream, list[dict[str, Any]]]], what: str
    ) -> tuple[dict[str, tuple[Upstream, str]], list[tuple[str, dict[str, Any]]]]:
        """Prefixed names -> owners, and ``(public name, item)`` pairs; a name taken twice keeps the first."""
        routes: dict[str, tuple[Upstream, str]] = {}
        items: list[tuple[str, dict[str, Any]]] = []
        for up, listed_items in listed:
            for item in listed_items:
                public = up.spec.public_name(item["name"])
                if public in routes:
                    other = routes[public][0].spec.label
                    _log.warning(
                        "upstream %s: %s %r is published as %r by upstream %s already; left out",
                        up.spec.label,
                        what,
                        item["name"],
                        public,
                        other,
                    )
                    continue
                routes[public] = (up, item["name"])
                items.append((public, item))
        return routes, items

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every upstream's tools under their published names; an unreachable upstream lists none."""
        routes, items = self._publish(await self._gather("list_tools"), "tool")
        self.routes.update(routes)
        return [self.rewriter.tool(tool, public) for public, tool in items]

    async def list_prompts(self) -> list[dict[str, Any]]:
        """Every upstream's prompts under their published names (forwarded unchanged otherwise)."""
        routes, items = self._publish(await self._gather("list_prompts"), "prompt")
        self.prompt_routes.update(routes)
        return [{**prompt, "name": public} for public, prompt in items]

    async def get_prompt(self, name: str, arguments: dict[str, str] | None) -> dict[str, Any]:
        hit = self.prompt_routes.get(name)
        if hit is None:
            await self.list_prompts()
            hit = self.prompt_routes.get(name)
        if hit is None:
            raise make_error(INVALID_PARAMS, f"Unknown prompt: {name}")
        up, own = hit
        result: dict[str, Any] = await self._forward(up, "get_prompt", own, arguments)
        return result

    async def list_resources(self) -> list[dict[str, Any]]:
        """Every upstream's resources, URIs unchanged; a URI two upstreams list is read from the first."""
        out: list[dict[str, Any]] = []
        for up, items in await self._gather("list_resources"):
            for res in items:
                if self.resource_routes.setdefault(res["uri"], up) is not up:
                    _log.warning(
                        "upstream %s: resource %s is served by another upstream already", up.spec.label, res["uri"]
                    )
                    continue
                out.append(res)
        return out

    async def list_resource_templates(self) -> list[dict[str, Any]]:
        return [t for _, items in await self._gather("list_resource_templates") for t in items]

    async def read_resource(self, uri: str) -> dict[str, Any]:
        up = self.resource_routes.get(uri)
        if up is None:
            await self.list_resources()
            up = self.resource_routes.get(uri)
        if up is None and len(self.upstreams) == 1:
            up = self.upstreams[0]  # a templated URI: the only upstream decides
        if up is None:
            raise make_error(INVALID_PARAMS, f"Unknown resource: {uri}")
        result: dict[str, Any] = await self._forward(up, "read_resource", uri)
        return result

    async def _forward(self, up: Upstream, method: str, *args: Any) -> Any:
        """A request other than tools/call, answered as the upstream answers it.

        There is no envelope to carry a failure in: an upstream JSON-RPC error is passed on
        as it is, and a timeout or a dead upstream is a JSON-RPC internal error naming it.
        """
        await up.settled()
        try:
            with anyio.fail_after(up.timeout):  # connecting included
                await up.session()
                return await getattr(up, method)(*args)
        except TimeoutError:
            why = f"upstream {up.spec.label}: no answer within {up.timeout:g} s"
            up.timed_out()
        except (UpstreamGoneError, UpstreamAnswerError) as exc:
            why = str(exc)
        raise make_error(INTERNAL_ERROR, why)

    async def _route(self, name: str) -> tuple[Upstream, str]:
        """The owner of a published tool name and its own name for it.

        Raises:
            ProtocolError: -32602 ``Unknown tool``, unless the upstream the name's prefix
                points to could not list its tools (then :class:`_UnlistedError`).
        """
        hit = self.routes.get(name)
        if hit is None:  # a client that calls without listing first: list once
            await self.list_tools()
            hit = self.routes.get(name)
        if hit is None:
            for up in self.upstreams:
                own = name.removeprefix(up.spec.public_name(""))
                if up.listing_failure is not None and (not up.spec.prefix or own != name):
                    raise _UnlistedError(up, own, *up.listing_failure)
            raise make_error(INVALID_PARAMS, f"Unknown tool: {name}")
        return hit

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None, relay: Relay | None = None
    ) -> dict[str, Any]:
        """Forward one call and rewrite its result (a CallToolResult wire dict); the upstream's
        progress and log notifications during it go to ``relay``.

        Raises:
            ProtocolError: an unknown tool, or an upstream JSON-RPC error the table keeps
                as a protocol error (same code and message).
        """
        started, clock = time.time(), time.perf_counter()
        try:
            up, tool = await self._route(name)
        except _UnlistedError as exc:
            why = f"{exc.why}; its tools could not be listed"
            out = self.rewriter.failure(self.rewriter.table.events[exc.event], why, exc.tool, started=started)
            self._log_result(name, exc.upstream, out, clock)
            return out.result
        rule: ProtocolRule | None = None
        code: int | None = None
        await up.settled()
        try:
            with anyio.fail_after(up.timeout):  # connecting included
                await up.session()
                called = await up.call(tool, arguments, relay)
        except TimeoutError:
            rule, why = self.rewriter.table.events["timeout"], f"no answer within {up.timeout:g} s"
            up.timed_out()
        except UpstreamAnswerError as exc:
            rule, why = self.rewriter.table.events[exc.event], str(exc)
        except UpstreamGoneError as exc:
            rule, why = self.rewriter.table.events["upstream_exited" if exc.exited else "connect_failed"], str(exc)
        except ProtocolError as exc:
            code = error_code(exc)
            rule, why = self.rewriter.table.for_code(code), str(exc) or f"JSON-RPC error {code}"
            if rule.answer == "protocol":
                self._log_call(name, up, "protocol", f"JSON-RPC error {code} forwarded", clock)
                raise
        except RuntimeError as exc:  # the SDK refused the upstream's answer
            rule, why = self.rewriter.table.events["unreadable_result"], str(exc)
        elapsed = time.perf_counter() - clock
        if rule is not None:
            out = self.rewriter.failure(rule, why, tool, code=code, started=started, elapsed=elapsed)
        else:
            try:
                out = self.rewriter.result(called.wire, tool, started, elapsed, notes=_notes(called))
            except EnvglotError as exc:
                out = self.rewriter.failure(self.rewriter.table.events["invalid_result"], str(exc), tool)
        self._log_result(name, up, out, clock)
        return out.result

    def _log_call(self, name: str, up: Upstream, outcome: str, detail: str, clock: float) -> None:
        ms = (time.perf_counter() - clock) * 1000
        _log.info("call %s upstream=%s %s %.1fms %s", name, up.spec.label, outcome, ms, detail)

    def _log_result(self, name: str, up: Upstream, out: Rewritten, clock: float) -> None:
        if not _log.isEnabledFor(logging.INFO):
            return
        ms = (time.perf_counter() - clock) * 1000
        _log.info("call %s upstream=%s %s", name, up.spec.label, out.describe(self.rewriter.target, ms))


class _UnlistedError(Exception):
    """A tool name whose upstream could not list its tools: answered with that failure, not "Unknown tool"."""

    def __init__(self, upstream: Upstream, tool: str, event: str, why: str) -> None:
        super().__init__(why)
        self.upstream, self.tool, self.event, self.why = upstream, tool, event, why


def _notes(called: Called) -> list[Diagnostic]:
    """What the transport changed in a result, as diagnostics reported with its conversion's."""
    if not called.replaced_bytes:
        return []
    return [
        diagnostic(
            Kind.VALUE_COERCED,
            "$",
            value=f"{called.replaced_bytes} invalid UTF-8 sequence(s) in the upstream's answer",
            change="replaced with U+FFFD",
        )
    ]


# ---- the SDK server ----------------------------------------------------------------------


class _ClientRelay:
    """Passes an upstream's progress and log notifications to the client of one call (mcp 2.x context)."""

    def __init__(self, ctx: Any, params: Any) -> None:
        self._session = ctx.session
        self._request_id = getattr(ctx, "request_id", None)
        meta = getattr(params, "meta", None) or {}
        token = meta.get("progress_token", meta.get("progressToken")) if isinstance(meta, dict) else None
        self._token = token if token is not None else getattr(meta, "progress_token", None)

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        if self._token is not None:  # the client asked for progress on this call
            await self._session.send_progress_notification(
                self._token, progress, total, message, related_request_id=self._request_id
            )

    async def log(self, message: dict[str, Any]) -> None:
        await self._session.send_log_message(
            message.get("level", "info"),
            message.get("data"),
            message.get("logger"),
            related_request_id=self._request_id,
        )


def build_server(proxy: Proxy, name: str = "envglot-proxy") -> Any:
    """An SDK low-level ``Server`` publishing ``proxy`` (``mcp`` 2.x or 1.x)."""
    from mcp.server.lowlevel.server import Server

    @contextlib.asynccontextmanager
    async def lifespan(_server: Any) -> AsyncIterator[dict[str, Any]]:
        async with proxy.running():
            yield {}

    t: Any = types

    async def list_tools(_params: Any) -> Any:
        return t.ListToolsResult.model_validate({"tools": await proxy.list_tools()})

    async def call_tool(params: Any, ctx: Any = None) -> Any:
        relay = _ClientRelay(ctx, params) if ctx is not None else None
        return t.CallToolResult.model_validate(await proxy.call_tool(params.name, params.arguments, relay))

    async def list_prompts(_params: Any) -> Any:
        return t.ListPromptsResult.model_validate({"prompts": await proxy.list_prompts()})

    async def get_prompt(params: Any) -> Any:
        return t.GetPromptResult.model_validate(await proxy.get_prompt(params.name, params.arguments))

    async def list_resources(_params: Any) -> Any:
        return t.ListResourcesResult.model_validate({"resources": await proxy.list_resources()})

    async def list_resource_templates(_params: Any) -> Any:
        return t.ListResourceTemplatesResult.model_validate(
            {"resourceTemplates": await proxy.list_resource_templates()}
        )

    async def read_resource(params: Any) -> Any:
        return t.ReadResourceResult.model_validate(await proxy.read_resource(str(params.uri)))

    handlers: dict[str, tuple[Callable[[Any], Awaitable[Any]], str]] = {
        "list_tools": (list_tools, "ListToolsRequest"),
        "call_tool": (call_tool, "CallToolRequest"),
        "list_prompts": (list_prompts, "ListPromptsRequest"),
        "get_prompt": (get_prompt, "GetPromptRequest"),
        "list_resources": (list_resources, "ListResourcesRequest"),
        "list_resource_templates": (list_resource_templates, "ListResourceTemplatesRequest"),
        "read_resource": (read_resource, "ReadResourceRequest"),
    }
    """Handler and 1.x request type per request the proxy serves (2.x: ``Server(on_<name>=...)``)."""

    if V2:

        def on(fn: Callable[..., Awaitable[Any]]) -> Callable[[Any, Any], Awaitable[Any]]:
            async def handler(ctx: Any, params: Any) -> Any:
                return await (fn(params, ctx) if fn is call_tool else fn(params))

            return handler

        kwargs: dict[str, Any] = {f"on_{key}": on(fn) for key, (fn, _) in handlers.items()}
        make: Any = Server
        return make(name, version=__version__, lifespan=lifespan, **kwargs)

    server: Any = Server(name, version=__version__, lifespan=lifespan)  # mcp 1.x: handlers by request type

    def v1(fn: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Awaitable[Any]]:
        async def handler(req: Any) -> Any:
            return t.ServerResult(await fn(req.params))

        return handler

    for fn, request_type in handlers.values():
        server.request_handlers[getattr(t, request_type)] = v1(fn)
    return server


async def serve_stdio(proxy: Proxy) -> None:
    """Serve the proxy on this process's stdin/stdout until the client closes them."""
    from mcp.server.stdio import stdio_server

    from .pipes import open_pipes

    server = build_server(proxy)
    pipes = await open_pipes()
    streams: dict[str, Any] = {"stdin": pipes[0], "stdout": pipes[1]} if pipes is not None else {}
    async with stdio_server(**streams) as (read, write):
        await server.run(read, write, server.create_initialization_options())


def http_app(proxy: Proxy, listen: Listen, token: str | None = None) -> Any:
    """The ASGI app serving the proxy over Streamable HTTP at ``/mcp``.

    Host/Origin (DNS-rebinding) protection allows the bound address only, on both SDK
    lines; with ``token``, every request needs ``Authorization: Bearer TOKEN``.
    """
    server = build_server(proxy)
    security = security_settings(listen.allowed_hosts(), listen.allowed_origins())
    app: Any
    if V2:
        app = server.streamable_http_app(host=listen.host, transport_security=security)
    else:
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager  # mcp 1.x
        from starlette.applications import Starlette
        from starlette.routing import Route

        manager = StreamableHTTPSessionManager(app=server, security_settings=security)

        @contextlib.asynccontextmanager
        async def lifespan(_app: Any) -> AsyncIterator[None]:
            async with manager.run():
                yield

        class Endpoint:  # an ASGI app, so that Route serves /mcp itself (Mount redirects it to /mcp/)
            async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
                await manager.handle_request(scope, receive, send)

        app = Starlette(routes=[Route("/mcp", endpoint=Endpoint())], lifespan=lifespan)
    return BearerAuth(app, token) if token is not None else app


def bind_listener(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``HOST:PORT`` (port 0: any free one), for :func:`serve_http`.

    Raises:
        OSError: the address is in use, or not one of this machine's.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def listen_url(sock: socket.socket) -> str:
    """The proxy's URL on a bound socket: ``http://HOST:PORT/mcp``."""
    host, port = sock.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/mcp"


async def serve_http(proxy: Proxy, listen: Listen, token: str | None = None, sock: socket.socket | None = None) -> None:
    """Serve the proxy over Streamable HTTP on ``http://HOST:PORT/mcp``.

    ``sock``: a socket already bound to ``listen`` (:func:`bind_listener`), so that a busy
    address is reported before anything starts.
    """
    import uvicorn

    if sock is not None and listen.port == 0:  # Host/Origin checks name the port it was given
        listen = msgspec.structs.replace(listen, port=sock.getsockname()[1])
    app = http_app(proxy, listen, token)
    config = uvicorn.Config(app, host=listen.host, port=listen.port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    await server.serve(sockets=[sock] if sock is not None else None)
