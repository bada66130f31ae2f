"""Non-blocking stdin/stdout for the SDK's ``stdio_server``, without a worker thread per line.

``mcp.server.stdio.stdio_server(stdin=, stdout=)`` (1.x and 2.x) takes any object that
iterates lines asynchronously and has async ``write``/``flush``. Its default wraps the
blocking standard streams in anyio worker threads, two thread hops per message; these
wrappers read and write the pipes from the event loop itself (asyncio). Where that is not
possible (stdin a regular file or a terminal, another event loop), :func:`open_pipes`
returns ``None`` and the SDK's default is used.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from typing import IO

__all__ = ["LineReader", "LineWriter", "open_pipes"]


class LineReader:
    """Lines of UTF-8 text from a pipe (undecodable bytes replaced, as the SDK does)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> LineReader:
        return self

    async def __anext__(self) -> str:
        try:
            line = await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            line = exc.partial
        except asyncio.LimitOverrunError:
            await self._discard_line()
            return "\n"  # not JSON: the SDK reports a parse error for it and reads on
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")

    async def _discard_line(self) -> None:
        """Skip the rest of a line longer than the limit (a message too large to take)."""
        while True:
            try:
                await self._reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as exc:
                await self._reader.readexactly(exc.consumed)
            except asyncio.IncompleteReadError:
                return


class LineWriter:
    """UTF-8 text to a pipe; ``flush`` waits until the pipe took it (backpressure)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


def _is_pipe(f: IO[bytes]) -> bool:
    try:
        mode = os.fstat(f.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


async def open_pipes(limit: int = 1 << 26) -> tuple[LineReader, LineWriter] | None:
    """Event-loop readers and writers on this process's stdin/stdout, or ``None`` if they are not pipes.

    ``limit`` bounds one line (one JSON-RPC message): 64 MiB.
    """
    if sys.platform == "win32" or not (_is_pipe(sys.stdin.buffer) and _is_pipe(sys.stdout.buffer)):
        return None
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    reader = asyncio.StreamReader(limit=limit)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, sys.stdout.buffer)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return LineReader(reader), LineWriter(writer)
