"""Sessions with the upstream MCP servers: connect, list tools, call, reconnect after a death.

Each upstream's connection lives in its own supervisor task (so a dying process or
dropped connection never cancels the proxy), started lazily and restarted on the next
call after it ended. Connecting is bounded by the upstream's timeout; a stdio upstream
speaks through :class:`~envglot.proxy.stdio.StdioTransport` (lenient decoding, a size cap,
unreadable answers answered at once). After a call timed out, a ``ping`` tells whether the
upstream still answers; one that does not is restarted before the next call.
A connection opens at MCP 2026-07-28 when the upstream answers ``server/discover``, else by
the ``initialize`` handshake; a call's progress and log notifications go to its :class:`Relay`.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Awaitable, Callable
from typing import IO, Any, Protocol

import anyio
import anyio.abc
import msgspec

from .config import UpstreamSpec
from .outschema import OutputCheck
from .sdk import (
    V2,
    ProtocolError,
    Session,
    error_code,
    handshake,
    http_client,
    types,
    wire,
)
from .stdio import REFUSED, StdioTransport

__all__ = ["CONNECTION_CLOSED", "Called", "Relay", "Upstream", "UpstreamAnswerError", "UpstreamGoneError"]

_log = logging.getLogger("envglot.proxy")
_ENC = msgspec.json.Encoder()
CONNECTION_CLOSED = -32000
"""The SDK's JSON-RPC code for "connection closed" (both lines)."""
PING_LIMIT = 2.0
"""Longest wait for the ``ping`` after a timed-out call (the upstream's timeout if shorter)."""


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


class UpstreamAnswerError(Exception):
    """The upstream answered, but the answer is refused; ``event`` names its row in the protocol table."""

    def __init__(self, message: str, *, event: str) -> None:
        super().__init__(message)
        self.event = event


class Called(msgspec.Struct, frozen=True):
    """A tool call's result as the upstream sent it, and what the transport changed in it."""

    wire: dict[str, Any]
    """The CallToolResult wire dict."""
    replaced_bytes: int = 0
    """Invalid UTF-8 sequences replaced with U+FFFD (stdio upstreams)."""


class _Attempt:
    """One connection: connecting, then live until stopped or ended."""

    def __init__(self) -> None:
        self.ready = anyio.Event()
        """Set when connecting finished, either way."""
        self.stop = anyio.Event()
        self.done = anyio.Event()
        self.failure: BaseException | None = None
        self.session: Session | None = None
        self.transport: StdioTransport | None = None
        self.scope = anyio.CancelScope()
        """Cancelled when the attempt is dropped while still connecting."""


class Upstream:
    """One upstream server; thread-unsafe, used from the proxy's event loop only."""

    def __init__(
        self,
        spec: UpstreamSpec,
        tg: anyio.abc.TaskGroup,
        *,
        timeout: float,
        max_result_bytes: int,
        errlog: IO[str] | None = None,
    ) -> None:
        self.spec = spec
        self.timeout = timeout
        """Seconds per call, and to connect."""
        self.max_result_bytes = max_result_bytes
        self._tg = tg
        self._errlog = errlog if errlog is not None else sys.stderr
        self._attempt: _Attempt | None = None
        self._lock = anyio.Lock()
        self._probing: anyio.Event | None = None
        self._checks: dict[str, OutputCheck] = {}
        self.generation = 0
        """How many times a connection was opened (1 after the first)."""
        self.revision: str | None = None
        """The MCP revision the current (or last) connection negotiated."""
        self._log_sinks: list[Callable[[dict[str, Any]], Awaitable[None]]] = []
        """Where the upstream's log messages go: the downstream clients of the calls in progress."""
        self.listing_failure: tuple[str, str] | None = None
        """``(event, reason)`` when its last tools/list failed (it could not be started, or timed out)."""

    async def _supervise(self, attempt: _Attempt) -> None:
        try:
            with attempt.scope:
                await self._connection(attempt)
        except TimeoutError:
            attempt.failure = TimeoutError(f"not started within {self.timeout:g} s")
        except Exception as exc:  # the connection's end, whatever its cause, is this upstream's only
            attempt.failure = exc
            if attempt.ready.is_set():
                _log.warning("upstream %s: connection ended: %s", self.spec.label, _describe(exc))
        finally:
            attempt.session = None
            attempt.ready.set()
            attempt.done.set()

    async def _connection(self, attempt: _Attempt) -> None:
        """Connect (bounded by the timeout), then hold the connection until stopped or ended."""
        async with contextlib.AsyncExitStack() as stack:
            connecting = stack.enter_context(anyio.fail_after(self.timeout))
            if self.spec.command is not None:
                attempt.transport = StdioTransport(
                    self.spec.command,
                    list(self.spec.args),
                    env=self.spec.env,
                    cwd=self.spec.cwd,
                    errlog=self._errlog,
                    max_bytes=self.max_result_bytes,
                    label=self.spec.label,
                )
                read, write = await stack.enter_async_context(attempt.transport.open())
            else:
                assert self.spec.url is not None
                headers = self.spec.resolved_headers()
                read, write = await stack.enter_async_context(http_client(self.spec.url, headers))
            extra: dict[str, Any] = {"log_level": "debug"} if V2 else {}  # 2026-07-28: logs are opt-in
            session = await stack.enter_async_context(Session(read, write, logging_callback=self._on_log, **extra))
            self.revision = await handshake(session)
            _log.info("upstream %s: connected (MCP %s)", self.spec.label, self.revision or "unknown revision")
            connecting.deadline = float("inf")
            attempt.session = session
            attempt.ready.set()
            async with anyio.create_task_group() as watch:
                if attempt.transport is not None:
                    watch.start_soon(_set_when, attempt.transport.ended, attempt.stop)
                await attempt.stop.wait()
                watch.cancel_scope.cancel()
            if attempt.transport is not None and attempt.transport.ended.is_set():
                _log.warning("upstream %s: its process closed its output; restarted on the next call", self.spec.label)

    async def _on_log(self, params: Any) -> None:
        """An upstream ``notifications/message``: to the clients of the calls in progress, else to the log."""
        message = wire(params)
        if not self._log_sinks:
            _log.info("upstream %s: %s %s", self.spec.label, message.get("level"), message.get("data"))
        for sink in list(self._log_sinks):
            with contextlib.suppress(Exception):  # a client that went away misses a log line, nothing more
                await sink(message)

    @property
    def _session(self) -> Session | None:
        a = self._attempt
        return a.session if a is not None and not a.stop.is_set() else None

    async def session(self) -> Session:
        """The live session, connecting first when there is none (bounded by the caller's cancel scope).

        Raises:
            UpstreamGoneError: the upstream could not be started or reached.
        """
        session = self._session
        if session is not None:
            return session
        async with self._lock:
            attempt = self._attempt
            if attempt is None or attempt.stop.is_set() or (attempt.ready.is_set() and attempt.session is None):
                await self._end()
                attempt = self._attempt = _Attempt()
                self._tg.start_soon(self._supervise, attempt)
                self.generation += 1
            await attempt.ready.wait()
            if attempt.session is None:
                why = _describe(attempt.failure) if attempt.failure is not None else "it closed the connection"
                raise UpstreamGoneError(f"cannot connect to upstream {self.spec.label}: {why}", exited=False)
            return attempt.session

    async def settled(self) -> None:
        """Wait until the check after a timed-out call (if any) is over: at most ``PING_LIMIT`` plus a restart.

        Not counted in the next call's timeout, which then starts on a live or a fresh upstream.
        """
        if self._probing is not None:
            await self._probing.wait()

    async def _end(self) -> None:
        """Close the current connection (and its process), if any, and wait until it is gone."""
        attempt, self._attempt = self._attempt, None
        if attempt is not None:
            attempt.stop.set()
            if not attempt.ready.is_set():
                attempt.scope.cancel()  # still connecting: no reason to finish
            with anyio.move_on_after(5):
                await attempt.done.wait()

    async def lost(self) -> None:
        """Drop a connection that failed under a call; the next call reconnects."""
        async with self._lock:
            await self._end()

    async def close(self) -> None:
        await self.lost()

    def timed_out(self) -> None:
        """A call got no answer in time: check in the background that the upstream still answers.

        The SDK has told the upstream the call is cancelled. An upstream that does not answer a
        ``ping`` either (a single-threaded server stuck in the call) is restarted; until then,
        the next call waits for the verdict (:meth:`settled`) instead of queueing behind the stuck one.
        """
        if self._probing is None and self._session is not None:
            self._probing = anyio.Event()
            self._tg.start_soon(self._probe, self._probing)

    async def _probe(self, finished: anyio.Event) -> None:
        try:
            session = self._session
            answered = False
            if session is not None:
                with anyio.move_on_after(min(self.timeout, PING_LIMIT)):
                    await session.send_ping()
                    answered = True
            if not answered:
                _log.warning("upstream %s: no answer to a ping after a timed-out call; restarting it", self.spec.label)
                await self.lost()
        except Exception as exc:  # a dead connection: the next call reconnects
            _log.warning("upstream %s: %s", self.spec.label, _describe(exc))
            await self.lost()
        finally:
            self._probing = None
            finished.set()

    def _transport_note(self, data: Any) -> Any:
        """The stdio transport's own note in ``data`` (an ``error.data`` or ``_meta`` dict), else ``None``."""
        attempt = self._attempt
        if attempt is None or attempt.transport is None or not isinstance(data, dict):
            return None
        return data.get(attempt.transport.mark)

    async def _request(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """``session.<method>(...)``, a dropped connection turned into :class:`UpstreamGoneError`.

        Raises:
            UpstreamGoneError: not reachable, or the connection ended during the request.
            UpstreamAnswerError: the stdio transport refused the answer (too large, unreadable).
            ProtocolError: the upstream answered with a JSON-RPC error.
        """
        session = await self.session()
        try:
            return await getattr(session, method)(*args, **kwargs)
        except ProtocolError as exc:
            code = error_code(exc)
            note = self._transport_note(getattr(exc.error, "data", None)) if code == REFUSED else None  # type: ignore[attr-defined]
            if isinstance(note, dict) and isinstance(note.get("refused"), str):
                event = "result_too_large" if "max_result_bytes" in note["refused"] else "unreadable_result"
                raise UpstreamAnswerError(note["refused"], event=event) from None
            if code != CONNECTION_CLOSED:
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
            cursor = page.next_cursor if hasattr(page, "next_cursor") else getattr(page, "nextCursor", None)
            if not cursor:
                return items

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool of the upstream (all pages), as wire dicts; their output checks kept for :meth:`call`."""
        tools = await self._list("list_tools", "tools")
        for tool in tools:
            schema = tool.get("outputSchema")
            if not isinstance(schema, dict):
                self._checks.pop(tool["name"], None)
                continue
            check = self._checks[tool["name"]] = OutputCheck(schema)
            if check.schema is None:  # published as what is checked: no upstream regex reaches a client
                del tool["outputSchema"]
            else:
                tool["outputSchema"] = check.schema
            if check.skipped:
                _log.warning(
                    "upstream %s: tool %s: its outputSchema's pattern/patternProperties are not checked "
                    "(an upstream's regular expressions are never run)",
                    self.spec.label,
                    tool["name"],
                )
            if check.unchecked:
                _log.warning(
                    "upstream %s: tool %s: results are not checked: %s", self.spec.label, tool["name"], check.unchecked
                )
        return tools

    async def call(self, name: str, arguments: dict[str, Any] | None, relay: Relay | None = None) -> Called:
        """Call a tool (errors as :meth:`_request`).

        With ``relay``, the upstream's progress notifications for this call, and its log
        messages while it runs, are handed to it (for the downstream client).

        Raises:
            UpstreamAnswerError: also when the result is over ``max_result_bytes`` (an HTTP
                upstream's is measured once received) or breaks the tool's ``outputSchema``.
        """
        if relay is None:
            result = wire(await self._request("call_tool", name, arguments))
        else:
            self._log_sinks.append(relay.log)
            try:
                result = wire(await self._request("call_tool", name, arguments, progress_callback=relay.progress))
            finally:
                self._log_sinks.remove(relay.log)
        meta = result.get("_meta")
        note = self._transport_note(meta)
        replaced = note.get("replaced_bytes", 0) if isinstance(note, dict) else 0
        if note is not None:
            rest = {k: v for k, v in meta.items() if k != self._attempt.transport.mark}  # type: ignore[union-attr]
            result = {k: v for k, v in result.items() if k != "_meta"} | ({"_meta": rest} if rest else {})
        elif self.spec.url is not None and len(_ENC.encode(result)) > self.max_result_bytes:
            raise UpstreamAnswerError(
                f"the upstream's answer is over {self.max_result_bytes} bytes (max_result_bytes)",
                event="result_too_large",
            )
        check = self._checks.get(name)
        if check is not None and not result.get("isError"):
            problem = check.problem(result.get("structuredContent"))
            if problem is not None:
                raise UpstreamAnswerError(problem, event="invalid_result")
        return Called(wire=result, replaced_bytes=replaced if isinstance(replaced, int) else 0)

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


async def _set_when(source: anyio.Event, target: anyio.Event) -> None:
    await source.wait()
    target.set()


def _describe(exc: BaseException) -> str:
    """A one-line reason, looking inside exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
