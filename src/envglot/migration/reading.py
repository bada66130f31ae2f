"""Reading the inputs in walk order: each file's start, its chunks of whole lines (or its
document), its end — or why it could not be read. A stream (stdin) is read through them
(:mod:`.stream`); :func:`input_records` gives the records themselves (``mappings derive``, ``learn``)."""

from __future__ import annotations

import contextlib
import os
import sys
import zlib
from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO

import msgspec

from .constants import DEFAULT_CHUNK_BYTES, DEFAULT_INCLUDE
from .files import MigrationError, read_error
from .inputs import InputLimits, RecordReader, Task, open_fd, open_gzip, open_input
from .walk import Job, walk_inputs


class ReadFailure(msgspec.Struct):
    job: Job
    error: str


class End(msgspec.Struct):
    job: Job


class Chunk(msgspec.Struct):
    job: Job
    task: Task


Event = Chunk | End | ReadFailure


SMALL_READ = 256 * 1024
"""A plain file at most this large (as walked) is read whole, with a handful of system calls."""


class _SmallFile:
    """A small input read at once (:func:`.inputs.open_fd`, one ``read``, ``close``): the stream interface
    ``produce`` uses, without a buffered file object's extra calls (``fstat``, ``ioctl``, ``lseek``)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    @classmethod
    def read_whole(cls, job: Job) -> _SmallFile | None:
        """The file as it is now, if it is no larger than walked (one ``read`` when its size is
        unchanged; a short read, or a file that shrank, is read on to its end); None if it grew
        (then it is read as a stream)."""
        assert job.src is not None
        size = job.size
        fd = open_fd(job.src)
        try:
            data = os.read(fd, size + 1)
            if len(data) > size:
                return None
            if len(data) < size:  # shrank, or a file system that reads short (FUSE, network)
                parts = [data]
                while block := os.read(fd, 1024 * 1024):
                    parts.append(block)
                data = b"".join(parts)
        finally:
            os.close(fd)
        return cls(data)

    def read(self, size: int = -1) -> bytes:
        start = self.pos
        self.pos = len(self.data) if size < 0 else min(len(self.data), start + size)
        return self.data[start : self.pos]

    def close(self) -> None:
        self.data = b""


def produce(
    jobs: list[Job], chunk_bytes: int, style: str, stdin: BinaryIO | None, limits: InputLimits
) -> Iterator[Event]:
    """Yield, in order, each file's chunks, then its end (or a read failure)."""
    for job in jobs:
        close: list[Any] = []
        try:
            if job.src is None:
                assert stdin is not None
                fh: Any = stdin
            elif job.regular and not job.gz and job.size <= SMALL_READ and (small := _SmallFile.read_whole(job)):
                fh = small
            else:
                raw = open_input(job.src)
                close.append(raw)
                fh = raw
                if job.gz:
                    fh = open_gzip(raw, limits)
                    close.insert(0, fh)
            # a small file is read in one call without a chunk-sized buffer (an mmap per file)
            size = chunk_bytes if job.gz or job.size < 0 else max(1, min(chunk_bytes, job.size + 1))
            reader = RecordReader(
                fh, source=job.name, style=style, doc=job.doc, read_size=size, max_record=limits.max_record_bytes
            )
            for task in reader:
                yield Chunk(job=job, task=task)
        except (OSError, EOFError, zlib.error) as exc:
            yield ReadFailure(job=job, error=read_error(exc))
            continue
        finally:
            for f in close:
                with contextlib.suppress(OSError):
                    f.close()
        yield End(job=job)


def input_records(
    inputs: Sequence[str],
    include: Sequence[str] = DEFAULT_INCLUDE,
    stdin: BinaryIO | None = None,
    limits: InputLimits | None = None,
) -> Iterator[tuple[str, bytes]]:
    """Every record of ``inputs`` as :func:`migrate` walks and reads them (files, folders, JSON
    Lines, ``.gz``, ``-`` for ``stdin``, else standard input): ``(name, record)``, named ``FILE``
    or ``FILE:LINE``.

    Raises:
        MigrationError: an input is missing or cannot be read (``exit_code`` 66), or a record
            is longer than ``limits`` allow (65).
    """
    limits = limits if limits is not None else InputLimits()
    if stdin is None and "-" in inputs:
        stdin = sys.stdin.buffer
    jobs, unreadable = walk_inputs(inputs, None, include, (), set(), None)
    if unreadable:
        raise MigrationError(f"{unreadable[0].file}: {unreadable[0].error}", 66)
    for ev in produce(jobs, DEFAULT_CHUNK_BYTES, "compact", stdin, limits):
        if isinstance(ev, ReadFailure):
            raise MigrationError(f"{ev.job.name}: {ev.error}", 66)
        if not isinstance(ev, Chunk):
            continue
        task = ev.task
        if task.kind == "oversize":
            raise MigrationError(f"{task.source}: {task.data.decode()}", 65)
        if task.kind == "doc":
            if task.data.strip():
                yield task.source, task.data
            continue
        for n, line in enumerate(task.data.split(b"\n"), task.first_line):
            if line.strip():
                yield f"{task.source}:{n}", line.removesuffix(b"\r")
