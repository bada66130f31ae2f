"""The input tree's rules, one home for both engines (``docs/migration.md``, "Special files, links and limits").

* **Which walked entries are read** (:func:`entry_source`): regular files; a symbolic link
  only when its target is a regular file inside the input tree (anywhere with
  ``follow_symlinks``). FIFOs, sockets, devices, dangling links, link loops and links out of
  the tree are skipped with a reason (never opened).
* **How an input is opened** (:func:`open_input`): without following a last-component link
  and without blocking, then checked to be a regular file (a FIFO swapped in after the walk
  is refused, not waited on).
* **How it is cut into records** (:class:`RecordReader`): whole-line chunks, a document, or —
  for a record longer than ``max_record_bytes`` — a reject that holds its size, not its bytes
  (the line is streamed and counted, never held whole); a line is joined once, in linear time.
* **Decompression is bounded** (:func:`open_gzip`): a gzip stream that expands more than
  ``max_gzip_ratio`` times the compressed bytes read (past :data:`GZIP_RATIO_FLOOR`) is refused.
"""

from __future__ import annotations

import errno
import gzip
import os
import stat
from collections.abc import Iterator
from typing import Any, BinaryIO, Literal

import msgspec

DEFAULT_MAX_RECORD_BYTES = 64 * 1024 * 1024
"""A record (JSON Lines line or ``.json`` document) longer than this is rejected unread."""
DEFAULT_MAX_GZIP_RATIO = 200
"""A gzip input may expand at most this many times the compressed bytes read ..."""
GZIP_RATIO_FLOOR = 16 * 1024 * 1024
"""... once it has expanded past this many bytes (small files with high ratios are harmless)."""


class InputLimits(msgspec.Struct, frozen=True):
    """The bounds every input is read within (picklable: the Dask tasks carry it)."""

    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    max_gzip_ratio: int = DEFAULT_MAX_GZIP_RATIO
    follow_symlinks: bool = False

    def problem(self) -> str | None:
        """Why these limits are unusable (for a usage error), or None."""
        if self.max_record_bytes < 1:
            return "max_record_bytes must be positive"
        if self.max_gzip_ratio < 1:
            return "max_gzip_ratio must be positive"
        return None


class InputRefusedError(OSError):
    """An input (or the rest of it) is not read: not a regular file, or a gzip bomb."""

    def __init__(self, reason: str) -> None:
        super().__init__(errno.EINVAL, reason)


def file_kind(mode: int) -> str:
    """``a FIFO``, ``a socket``, ``a character device``, ... for a non-regular file's mode."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def entry_source(entry: os.DirEntry[str], root: str, follow_symlinks: bool) -> tuple[str, os.stat_result] | str:
    """``(path to read, its stat)`` for a walked entry that may be read, else why it is skipped.

    ``root`` is the input tree's real path. A link is resolved once here; the path returned
    is its target, so the readers never follow a link themselves.
    """
    if entry.is_symlink():
        try:
            target = os.path.realpath(entry.path, strict=True)
            st = os.stat(target)
        except FileNotFoundError:
            return "dangling symbolic link: skipped"
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return "symbolic link loop: skipped"
            return f"cannot read: {exc.strerror or exc}"
        if not stat.S_ISREG(st.st_mode):
            return f"symbolic link to {file_kind(st.st_mode)}: skipped"
        if not follow_symlinks and not _inside(target, root):
            return "symbolic link to a file outside the input tree: skipped (--follow-symlinks follows it)"
        return target, st
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    if not stat.S_ISREG(st.st_mode):
        return f"{file_kind(st.st_mode)}, not a regular file: skipped"
    return entry.path, st


def open_fd(path: str | os.PathLike[str]) -> int:
    """A descriptor on ``path`` if it is a regular file (no link followed, never blocks on a FIFO).

    Raises:
        OSError: it cannot be opened; :class:`InputRefusedError` when it is no regular file.
    """
    # O_NONBLOCK: opening a FIFO does not wait for a writer; it has no effect on a regular
    # file's reads (open(2)), so it is left set
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise InputRefusedError(f"{file_kind(mode)}, not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_input(path: str | os.PathLike[str]) -> BinaryIO:
    """:func:`open_fd` as a buffered binary file."""
    return os.fdopen(open_fd(path), "rb")


class _BoundedGzip:
    """A gzip reader refusing a stream that expands more than ``ratio`` times (past :data:`GZIP_RATIO_FLOOR`)."""

    def __init__(self, raw: Any, ratio: int) -> None:
        self.gz = gzip.GzipFile(fileobj=raw, mode="rb")
        self.raw = raw
        self.ratio = ratio
        self.expanded = 0

    def read(self, size: int = -1) -> bytes:
        b: bytes = self.gz.read(size)
        self.expanded += len(b)
        if self.expanded > GZIP_RATIO_FLOOR and self.expanded > self.ratio * max(1, self.raw.tell()):
            raise InputRefusedError(
                f"gzip data expands more than {self.ratio} times (a decompression bomb?); "
                "not read further (--max-gzip-ratio raises the limit)"
            )
        return b

    def close(self) -> None:
        self.gz.close()


def open_gzip(raw: Any, limits: InputLimits) -> Any:
    """A decompressing reader over ``raw`` bounded by ``limits.max_gzip_ratio``."""
    return _BoundedGzip(raw, limits.max_gzip_ratio)


def reopened(raw: Any, limits: InputLimits, gz: bool, begin: int = 0) -> list[Any]:
    """An input opened again (``raw``, by either driver's opener) to copy its unchanged part
    (:meth:`.deferred.Unchanged.copy`): the stream to read — from byte ``begin``, decompressed
    for .gz — then what it wraps."""
    try:
        if begin:
            raw.seek(begin)
        return [open_gzip(raw, limits), raw] if gz else [raw]
    except BaseException:
        raw.close()
        raise


def _too_long(size: int, limit: int, whole: bool) -> str:
    more = "" if whole else "more than "
    return (
        f"record of {more}{size:,} bytes is longer than the limit of {limit:,} bytes (--max-record-bytes); "
        "not read into memory, its bytes are not copied"
    )


class Task(msgspec.Struct, frozen=True):
    """One piece of work for a worker: whole JSON Lines, a document, or a record too long to read."""

    source: str
    kind: Literal["lines", "doc", "oversize"]
    data: bytes
    """The records; for ``oversize`` the reason (UTF-8) a record too long to read is rejected."""
    first_line: int
    """Line number of the first record (``oversize``: 0 for a ``.json`` document)."""
    style: str
    size: int = 0
    """``oversize``: the record's length in bytes (it is not in ``data``)."""


class RecordReader:
    """Cuts one input stream into tasks (:class:`Task`), in bounded memory.

    JSON Lines become chunks of whole lines of about ``read_size``; an unfinished line is
    kept as a list of blocks and joined once (linear in its length). A line longer than
    ``max_record_bytes`` is not kept: it is read to its end and counted, and becomes an
    ``oversize`` task (rejected with its size). A document is read up to the limit and
    becomes a ``doc`` task, or an ``oversize`` one when it is longer. ``lines`` counts the
    line terminators read so far (a range of a file numbers the next one from it).

    A chunk's line terminators are counted only when a line number after it is needed (the next
    task's first line, ``lines``), unless its consumer says how many it found first
    (:meth:`took`: the chunk loop finds every line anyway).
    """

    def __init__(
        self, fh: Any, *, source: str, style: str, doc: bool, read_size: int, max_record: int, first_line: int = 1
    ) -> None:
        self.fh = fh
        self.source = source
        self.style = style
        self.doc = doc
        self.read_size = max(1, read_size)
        self.max_record = max_record
        self.first_line = first_line
        self.line = first_line
        """The line the next task starts at, once the last chunk's terminators are added."""
        self._uncounted: bytes | None = None
        """The last chunk of lines yielded while its terminators are not counted into :attr:`line`."""

    @property
    def lines(self) -> int:
        """Line terminators read so far."""
        return self._next_line() - self.first_line

    def took(self, task: Task, lines: int) -> None:
        """``task``, the last one yielded, held ``lines`` line terminators (its consumer counted
        them): they are not counted again. Nothing for any other task (its lines are counted)."""
        if task.data is self._uncounted:
            self.line += lines
            self._uncounted = None

    def _next_line(self) -> int:
        """The line the next task starts at (the last chunk's terminators counted if nobody did)."""
        if self._uncounted is not None:
            self.line += self._uncounted.count(b"\n")
            self._uncounted = None
        return self.line

    def __iter__(self) -> Iterator[Task]:
        return self._document() if self.doc else self._lines()

    @classmethod
    def whole(cls, data: bytes, *, source: str, style: str, doc: bool, max_record: int) -> list[Task] | None:
        """An input already in memory as one task (none for empty JSON Lines): what iterating a reader
        over ``data`` gives, in one chunk (chunks of whole lines convert to the same bytes and counts
        however they are cut; the chunk loop counts their line terminators, ``ChunkResult.lines``).
        None when ``data`` is longer than ``max_record`` (a record in it may be too long: read it with
        a reader)."""
        if len(data) > max_record:
            return None
        if doc:
            return [Task(source, "doc", data, 1, style)]
        return [Task(source, "lines", data, 1, style)] if data else []

    def _oversize(self, size: int, whole: bool, line: int | None) -> Task:
        reason = _too_long(size, self.max_record, whole)
        return Task(self.source, "oversize", reason.encode(), 0 if line is None else line, self.style, size)

    def _document(self) -> Iterator[Task]:
        parts: list[bytes] = []
        n = 0
        while block := self.fh.read(self.read_size):
            n += len(block)
            if n > self.max_record:  # not read further: a document is one record
                yield self._oversize(self.max_record, False, None)
                return
            parts.append(block)
        yield Task(self.source, "doc", b"".join(parts), 1, self.style)

    def _lines(self) -> Iterator[Task]:
        pending: list[bytes] = []  # the unfinished last line, in blocks (joined once)
        held = 0
        over = -1  # while an over-long line is read past: its bytes so far
        while block := self.fh.read(self.read_size):
            cut = block.rfind(b"\n")
            if cut < 0:
                if over >= 0:
                    over += len(block)
                else:
                    pending.append(block)
                    held += len(block)
                    if held > self.max_record:
                        over, pending, held = held, [], 0
                continue
            if over >= 0:  # the first terminator ends the over-long line
                first = block.find(b"\n")
                yield self._oversize(over + first, True, self._next_line())
                self.line += 1
                over = -1
                done = block[first + 1 : cut + 1]
            elif cut + 1 == len(block) and not pending:
                done = block
            else:  # one copy: the unfinished line's blocks and the block's whole lines joined
                done = b"".join([*pending, memoryview(block)[: cut + 1]])
            yield from self._complete(done)
            tail = block[cut + 1 :]
            pending, held = ([tail], len(tail)) if tail else ([], 0)
            if held > self.max_record:
                over, pending, held = held, [], 0
        if over >= 0:
            yield self._oversize(over, True, self._next_line())
        elif pending:
            yield from self._complete(b"".join(pending))

    def _complete(self, region: bytes) -> Iterator[Task]:
        """Tasks for whole lines (the last may lack its terminator at the end of the input)."""
        if not region:
            return
        if len(region) > self.max_record:  # only then can a line in it be too long
            seg = start = 0
            while start < len(region):
                nl = region.find(b"\n", start)
                end = len(region) if nl < 0 else nl
                if end - start > self.max_record:
                    if seg < start:
                        yield from self._complete_short(region[seg:start])
                    yield self._oversize(end - start, True, self._next_line())
                    self.line += nl >= 0
                    seg = end + 1
                start = end + 1
            if seg < len(region):
                yield from self._complete_short(region[seg:])
            return
        yield from self._complete_short(region)

    def _complete_short(self, region: bytes) -> Iterator[Task]:
        task = Task(self.source, "lines", region, self._next_line(), self.style)
        self._uncounted = region
        yield task
