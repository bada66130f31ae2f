"""The proxy's stdio client transport: an upstream process's stdout/stdin as SDK message streams.

Used instead of the SDK's ``stdio_client``, because an upstream's output is untrusted:

- each line is decoded on its own, leniently: invalid UTF-8 is replaced with U+FFFD, and a
  response that needed it carries ``{mark: {"replaced_bytes": n}}`` in its result's ``_meta``
  (``mark`` is a key unique to this connection, so an upstream cannot forge it);
- a line longer than ``max_bytes`` is never held whole: it is skipped and the request it
  answers gets a JSON-RPC error at once;
- a line the SDK cannot read (not JSON-RPC, nested too deep, a number too long, a result
  that is not an object) is answered the same way instead of being dropped;
- both kinds of error carry ``{mark: {"refused": reason}}`` in their ``data``;
- the streams end when the process's stdout ends (``ended`` is then set).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
import signal
import sys
from collections.abc import AsyncIterator
from typing import IO, Any

import anyio
import anyio.abc
import msgspec

from .sdk import SessionMessage, get_default_environment, parse_message

__all__ = ["REFUSED", "StdioTransport"]

_log = logging.getLogger("envglot.proxy")
REFUSED = -32603
"""The JSON-RPC code of the error answered for a message the transport refused (internal error)."""
_HEAD = 4096
"""Bytes of an over-long line kept to find the request it answers."""
_ID_RE = re.compile(rb'"id"\s*:\s*(-?[0-9]{1,18}|"[^"\\]{0,200}")')
"""The ``id`` member near the start of a message that cannot be parsed whole (bounded, linear)."""
_GRACE = 1.0
"""Seconds an upstream has to exit after its stdin closed, then after SIGTERM."""
_REASON_CHARS = 300


class _Head(msgspec.Struct):
    """The members of a message that say what it answers (every other member is skipped)."""

    id: int | str | None = None
    method: str | None = None
    params: Any = None


_ABSENT: Any = object()


class _Shape(msgspec.Struct):
    result: Any = _ABSENT


class StdioTransport:
    """One upstream process and the message streams the SDK's ``ClientSession`` reads and writes."""

    def __init__(
        self,
        command: str,
        args: list[str],
        *,
        env: dict[str, str] | None,
        cwd: str | None,
        errlog: IO[str],
        max_bytes: int,
        label: str,
    ) -> None:
        self.command, self.args, self.env, self.cwd = command, args, env, cwd
        self.errlog, self.max_bytes, self.label = errlog, max_bytes, label
        self.mark = f"dev.envglot/transport#{secrets.token_hex(8)}"
        """The key of the transport's own notes in ``_meta`` and ``error.data``."""
        self.ended = anyio.Event()
        """Set when the upstream's stdout ended (the process exited or closed it)."""
        self._pending: set[int | str] = set()

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[tuple[Any, Any]]:
        """Start the process; yield ``(read, write)`` streams; stop it (stdin closed, then signals)."""
        process = await anyio.open_process(
            [self.command, *self.args],
            env=get_default_environment() | (self.env or {}),
            cwd=self.cwd,
            stderr=self.errlog,
            start_new_session=sys.platform != "win32",
        )
        to_session, read = anyio.create_memory_object_stream[Any](0)
        write, from_session = anyio.create_memory_object_stream[Any](0)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._reader, process, to_session)
                tg.start_soon(self._writer, process, from_session, to_session)
                try:
                    yield read, write
                finally:
                    with anyio.CancelScope(shield=True):
                        await write.aclose()
                        await read.aclose()
                        await _stop(process)
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process)

    async def _writer(self, process: anyio.abc.Process, source: Any, sink: Any) -> None:
        """Session -> the process's stdin, remembering the ids of the requests sent."""
        assert process.stdin is not None
        try:
            async with source:
                async for message in source:
                    text: str = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    head = msgspec.json.decode(text, type=_Head)
                    if head.method is not None and head.id is not None:
                        self._pending.add(head.id)
                    elif head.method == "notifications/cancelled" and isinstance(head.params, dict):
                        self._pending.discard(head.params.get("requestId"))  # no answer is owed any more
                    await process.stdin.send(text.encode("utf-8") + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await sink.aclose()  # the session sees the connection end instead of waiting

    async def _reader(self, process: anyio.abc.Process, sink: Any) -> None:
        """The process's stdout -> session, one line at a time, never more than ``max_bytes`` held."""
        assert process.stdout is not None
        line = bytearray()
        head = b""
        size = 0
        try:
            async with sink:
                async for chunk in process.stdout:
                    start = 0
                    while start <= len(chunk):
                        nl = chunk.find(b"\n", start)
                        piece = chunk[start : len(chunk) if nl < 0 else nl]
                        size += len(piece)
                        if size <= self.max_bytes:
                            line += piece
                        elif line or not head:
                            head = (bytes(line) + piece)[:_HEAD]
                            line.clear()
                        if nl < 0:
                            break
                        if size > self.max_bytes:
                            await self._oversized(head, size, sink)
                        elif line.strip():
                            await self._deliver(bytes(line), sink)
                        line.clear()
                        head, size, start = b"", 0, nl + 1
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            pass
        finally:
            self.ended.set()

    async def _deliver(self, line: bytes, sink: Any) -> None:
        try:
            text = line.decode("utf-8")
            replaced = 0
        except UnicodeDecodeError:
            text = line.decode("utf-8", errors="replace")
            replaced = text.count("\ufffd") - line.count("\ufffd".encode())
        try:
            message = parse_message(text)
        except (ValueError, RecursionError) as exc:
            await self._refuse(line[:_HEAD], _reason(exc, line), sink, whole=line)
            return
        head = _head(line)
        if head is not None and head.method is None and head.id is not None:
            self._pending.discard(head.id)
        if replaced:
            try:
                message = self._marked(text, replaced, message)
            except (ValueError, RecursionError) as exc:  # the SDK's parser took what json cannot
                await self._refuse(
                    line[:_HEAD], f"{replaced} invalid UTF-8 sequence(s) not reported: {exc}", sink, whole=line
                )
                return
        await sink.send(SessionMessage(message))

    def _marked(self, text: str, replaced: int, message: Any) -> Any:
        """``message`` with its result's ``_meta`` noting ``replaced`` bytes (other messages: a log line)."""
        doc = json.loads(text)
        result = doc.get("result") if isinstance(doc, dict) else None
        if not isinstance(result, dict):
            _log.warning("upstream %s: %d invalid UTF-8 sequence(s) replaced in a message", self.label, replaced)
            return message
        meta = result.get("_meta")
        result["_meta"] = {**(meta if isinstance(meta, dict) else {}), self.mark: {"replaced_bytes": replaced}}
        return parse_message(json.dumps(doc))

    async def _oversized(self, head: bytes, size: int, sink: Any) -> None:
        why = f"the upstream's answer is over {self.max_bytes} bytes (max_result_bytes); {size} bytes skipped"
        await self._refuse(head, why, sink, whole=None)

    async def _refuse(self, head: bytes, why: str, sink: Any, *, whole: bytes | None) -> None:
        """Answer the pending request a refused message answers with a JSON-RPC error (else log it)."""
        found = _head(whole) if whole is not None else None
        rid = found.id if found is not None and found.method is None else _id_near_start(head)
        if rid is None and whole is None and len(self._pending) == 1:
            rid = next(iter(self._pending))  # an over-long line with its id past the kept head
        if rid is None or rid not in self._pending:
            _log.warning("upstream %s: a message was skipped: %s", self.label, why)
            return
        self._pending.discard(rid)
        error = {"code": REFUSED, "message": why, "data": {self.mark: {"refused": why}}}
        await sink.send(SessionMessage(parse_message(json.dumps({"jsonrpc": "2.0", "id": rid, "error": error}))))


def _head(line: bytes) -> _Head | None:
    """The message's ``id`` and ``method``, or ``None`` when it is not a JSON object msgspec reads."""
    try:
        return msgspec.json.decode(line, type=_Head)
    except (msgspec.DecodeError, RecursionError):
        return None


def _id_near_start(head: bytes) -> int | str | None:
    if b'"method"' in head:
        return None
    m = _ID_RE.search(head)
    if m is None:
        return None
    raw = m.group(1)
    return raw.decode("utf-8", errors="replace").strip('"') if raw.startswith(b'"') else int(raw)


def _reason(exc: BaseException, line: bytes) -> str:
    """Why the SDK cannot read ``line``, in one bounded line."""
    errors = getattr(exc, "errors", None)
    first: Any = None
    if callable(errors):
        with contextlib.suppress(Exception):
            first = errors()[0].get("msg")
    if isinstance(first, str) and first.startswith("Invalid JSON"):
        text = first  # e.g. "recursion limit exceeded", "number out of range"
    elif isinstance(exc, RecursionError):
        text = "nested too deeply"
    else:
        try:
            shape = msgspec.json.decode(line, type=_Shape)
        except (msgspec.DecodeError, RecursionError):
            text = "not JSON the SDK accepts"
        else:
            text = (
                "its result is not an object"
                if shape.result is not _ABSENT and not isinstance(shape.result, dict)
                else "not a JSON-RPC message"
            )
    text = " ".join(text.split())
    return "the upstream's answer is not a message the MCP SDK can read: " + text[:_REASON_CHARS]


async def _stop(process: anyio.abc.Process) -> None:
    """Close stdin, give the process ``_GRACE`` to exit, then SIGTERM and SIGKILL its process group."""
    if process.returncode is not None:
        return
    if process.stdin is not None:
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None:
            _signal(process, sig)
        with anyio.move_on_after(_GRACE):
            while process.returncode is None:
                await anyio.sleep(0.01)
        if process.returncode is not None:
            break
    if process.stdout is not None:
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdout.aclose()


def _signal(process: anyio.abc.Process, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        if sys.platform == "win32":  # pragma: no cover
            process.kill()
        else:
            os.killpg(process.pid, sig)
