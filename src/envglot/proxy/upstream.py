"""Sessions with the upstream MCP servers: connect, list tools, call, reconnect after a death.

Each upstream's connection lives in its own supervisor task (so a dying process or
dropped connection never cancels the proxy), started lazily and restarted on the next
call after it ended.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Awaitable, Callable
from typing import IO, Any, Protocol, TextIO, cast

import anyio
import anyio.abc

from .config import UpstreamSpec
from .sdk import (
    V2,
    ClientSession,
    ProtocolError,
    StdioServerParameters,
    error_code,
    handshake,
    http_client,
    stdio_client,
    types,
    wire,
)

__all__ = ["CONNECTION_CLOSED", "Relay", "Upstream", "UpstreamGoneError"]

_log = logging.getLogger("envglot.proxy")
CONNECTION_CLOSED = -32000
"""The SDK's JSON-RPC code for "connection closed" (both lines)."""
CONNECT_TIMEOUT = 30.0
"""Seconds to start an upstream and complete its initialize handshake (not counted in a call's timeout)."""


class Relay(Protocol):
    """Notifications of one call, passed on to the client that made it."""

    async def progress(self, progress: float, total: float | None, message: str | None) -> None: ...

    async def log(self, message: dict[str, Any]) -> None:
        """A ``notifications/message``'s params as a wire dict (``level``, ``data``, ``logger``)."""


class UpstreamGoneError(Exception):
    """The upstream could not be reached, or its process/connection ended."""

    def __init__(self, message: str, *, exited: bool) -> None:
        super().__init__(message)
        self.exited = exited
        """True when a live connection ended; False when connecting failed."""


class Upstream:
    """One upstream server; thread-unsafe, used from the proxy's event loop only."""

    def __init__(self, spec: UpstreamSpec, tg: anyio.abc.TaskGroup, *, errlog: IO[str] | None = None) -> None:
        self.spec = spec
        self._tg = tg
        self._errlog = errlog if errlog is not None else sys.stderr
        self._session: ClientSession | None = None
        self._stop: anyio.Event | None = None
        self._done: anyio.Event | None = None
        self._lock = anyio.Lock()
        self.generation = 0
        """How many times a connection was opened (1 after the first)."""
        self.revision: str | None = None
        """The MCP revision the current (or last) connection negotiated."""
        self._log_sinks: list[Callable[[dict[str, Any]], Awaitable[None]]] = []
        """Where the upstream's log messages go: the downstream clients of the calls in progress."""

    @property
    def timeout(self) -> float | None:
        return self.spec.timeout

    async def _supervise(self, ready: anyio.Event, failure: list[BaseException]) -> None:
        stop, done = anyio.Event(), anyio.Event()
        self._stop, self._done = stop, done
        try:
            async with contextlib.AsyncExitStack() as stack:
                connecting = stack.enter_context(anyio.fail_after(CONNECT_TIMEOUT))
                if self.spec.command is not None:
                    params = StdioServerParameters(
                        command=self.spec.command, args=list(self.spec.args), env=self.spec.env, cwd=self.spec.cwd
                    )
                    read, write = await stack.enter_async_context(
                        stdio_client(params, errlog=cast(TextIO, self._errlog))
                    )
                else:
                    assert self.spec.url is not None
                    headers = self.spec.resolved_headers()
                    read, write = await stack.enter_async_context(http_client(self.spec.url, headers))
                extra: dict[str, Any] = {"log_level": "debug"} if V2 else {}  # 2026-07-28: logs are opt-in
                session = await stack.enter_async_context(
                    ClientSession(read, write, logging_callback=self._on_log, **extra)
                )
                self.revision = await handshake(session)
                _log.info("upstream %s: connected (MCP %s)", self.spec.label, self.revision or "unknown revision")
                connecting.deadline = float("inf")
                self._session = session
                ready.set()
                await stop.wait()
        except Exception as exc:  # the connection's end, whatever its cause, is this upstream's only
            failure.append(exc)
            if ready.is_set():
                _log.warning("upstream %s: connection ended: %s", self.spec.label, _describe(exc))
        finally:
            self._session = None
            ready.set()
            done.set()

    async def _on_log(self, params: Any) -> None:
        """An upstream ``notifications/message``: to the clients of the calls in progress, else to the log."""
        message = wire(params)
        if not self._log_sinks:
            _log.info("upstream %s: %s %s", self.spec.label, message.get("level"), message.get("data"))
        for sink in list(self._log_sinks):
            with contextlib.suppress(Exception):  # a client that went away misses a log line, nothing more
                await sink(message)

    async def session(self) -> ClientSession:
        """The live session, connecting first when there is none.

        Raises:
            UpstreamGoneError: the upstream could not be started or reached.
        """
        session = self._session
        if session is not None:
            return session
        async with self._lock:
            if self._session is not None:
                return self._session
            await self._end()
            ready, failure = anyio.Event(), []  # type: ignore[var-annotated]
            self._tg.start_soon(self._supervise, ready, failure)
            await ready.wait()
            if self._session is None:
                why = _describe(failure[0]) if failure else "it closed the connection"
                raise UpstreamGoneError(f"cannot connect to upstream {self.spec.label}: {why}", exited=False)
            self.generation += 1
            return self._session

    async def _end(self) -> None:
        """Close the current connection (and its process), if any, and wait until it is gone."""
        if self._stop is not None and self._done is not None:
            self._stop.set()
            with anyio.move_on_after(5):
                await self._done.wait()
        self._session = None
        self._stop = self._done = None

    async def lost(self) -> None:
        """Drop a connection that failed under a call; the next call reconnects."""
        async with self._lock:
            await self._end()

    async def close(self) -> None:
        await self.lost()

    async def _request(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """``session.<method>(...)``, a dropped connection turned into :class:`UpstreamGoneError`.

        Raises:
            UpstreamGoneError: not reachable, or the connection ended during the request.
            ProtocolError: the upstream answered with a JSON-RPC error.
        """
        session = await self.session()
        try:
            return await getattr(session, method)(*args, **kwargs)
        except ProtocolError as exc:
            if error_code(exc) != CONNECTION_CLOSED:
                raise
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            pass
        await self.lost()
        raise UpstreamGoneError(f"upstream {self.spec.label} closed the connection during the request", exited=True)

    async def _list(self, method: str, field: str) -> list[dict[str, Any]]:
        """Every item of a paginated listing (``tools/list``, ``prompts/list``...), as wire dicts."""
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            page = await self._request(method, **_cursor_args(cursor))
            items.extend(wire(x) for x in getattr(page, field))
            cursor = getattr(page, "next_cursor", None) or getattr(page, "nextCursor", None)
            if not cursor:
                return items

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool of the upstream (all pages), as wire dicts."""
        return await self._list("list_tools", "tools")

    async def call(self, name: str, arguments: dict[str, Any] | None, relay: Relay | None = None) -> dict[str, Any]:
        """Call a tool; its CallToolResult as a wire dict (errors as :meth:`_request`).

        With ``relay``, the upstream's progress notifications for this call, and its log
        messages while it runs, are handed to it (for the downstream client).
        """
        if relay is None:
            return wire(await self._request("call_tool", name, arguments))
        self._log_sinks.append(relay.log)
        try:
            return wire(await self._request("call_tool", name, arguments, progress_callback=relay.progress))
        finally:
            self._log_sinks.remove(relay.log)

    async def list_prompts(self) -> list[dict[str, Any]]:
        return await self._list("list_prompts", "prompts")

    async def get_prompt(self, name: str, arguments: dict[str, str] | None) -> dict[str, Any]:
        return wire(await self._request("get_prompt", name, arguments))

    async def list_resources(self) -> list[dict[str, Any]]:
        return await self._list("list_resources", "resources")

    async def list_resource_templates(self) -> list[dict[str, Any]]:
        templates = "resource_templates" if V2 else "resourceTemplates"
        return await self._list("list_resource_templates", templates)

    async def read_resource(self, uri: str) -> dict[str, Any]:
        return wire(await self._request("read_resource", uri))


def _cursor_args(cursor: str | None) -> dict[str, Any]:
    """Keyword arguments asking for the page at ``cursor`` (2.x: ``params=``, 1.x: ``cursor=``)."""
    if cursor is None:
        return {}
    if V2:
        return {"params": types.PaginatedRequestParams(cursor=cursor)}
    return {"cursor": cursor}


def _describe(exc: BaseException) -> str:
    """A one-line reason, looking inside exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
