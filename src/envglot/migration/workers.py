"""The worker side: a chunk of JSON Lines (or a document) converted (:func:`migrate_chunk`), and
the process pool's workers (one Migrator each)."""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from typing import TYPE_CHECKING, Any

import msgspec

from ..diagnostics import Diagnostic
from ..pipeline import styled
from .inputs import Task
from .records import Migrator, Outcome, RecordError, rebuild_migrator, reject_line
from .tally import Tally

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

# --------------------------------------------------------------------------- chunks (worker side)


class ChunkResult(msgspec.Struct, gc=False):
    """A chunk's output, counts, rejects and details (not tracked by the garbage collector: nothing
    it holds refers back to it)."""

    out: bytes
    rejects: list[tuple[int | None, bytes]]
    tally: Tally
    same: bool = False
    """The output is the task's own bytes (nothing changed), not sent back: the driver has them
    (a piece of a stream, :func:`.stream.run_stream_piece`)."""
    omitted: int = 0
    """Rejects whose bytes are not in the rejects file (longer than ``max_record_bytes``)."""
    details: list[tuple[int | None, Diagnostic | RecordError]] = msgspec.field(default_factory=list)
    """Per record (line, or None for a document), in order: its diagnostics, and why it was rejected.
    Only from a ``Migrator(details=True)`` (``migrate(on_diagnostic=...)``)."""
    lines: int = 0
    """The line terminators of a chunk of lines (its reader need not count them: :meth:`.inputs.RecordReader.took`)."""


_MIGRATOR: list[tuple[bytes, Migrator]] = []
"""This process's Migrator and the options it was built from (one: a run's)."""


def migrator_for(options: dict[str, Any], built: Migrator | None = None) -> Migrator:
    """This process's Migrator for these options (built once, then reused; ``built``: the one the
    run made already, kept)."""
    key = msgspec.json.encode(options)
    if built is None and _MIGRATOR and _MIGRATOR[0][0] == key:
        return _MIGRATOR[0][1]
    mig = built or rebuild_migrator(options["to"], {k: v for k, v in options.items() if k != "to"})
    _MIGRATOR[:] = [(key, mig)]
    return mig


_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def worker_init(options: dict[str, Any]) -> None:
    """Process-pool initializer: ignore Ctrl-C (the parent handles it), build one Migrator."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a handler inherited from the parent must not run here
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)  # blocked by start_workers
    libc = _libc()
    if libc is not None:
        _die_with_parent(libc)
        keep_freed_buffers(libc)
    migrator_for(options)


def _noop() -> None:
    """A task that only makes the pool start its workers."""


def start_workers(pool: ProcessPoolExecutor) -> None:
    """Start the workers now, with Ctrl-C and SIGTERM held back while they fork.

    A signal arriving during ``fork()`` would be raised inside an at-fork hook, where
    Python ignores exceptions: the interruption would be lost. Held back, it is delivered
    right after, to the main thread. The pool forks its workers inside ``submit`` (all of them
    with ``fork``): this returns once they are forked, without waiting for them to start (a
    worker that fails to start breaks the pool, which the first task reports).
    """
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - not POSIX
        pool.submit(_noop)
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        pool.submit(_noop)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


MMAP_THRESHOLD = 32 * 1024 * 1024
"""A worker's glibc ``M_MMAP_THRESHOLD``: the largest value glibc's own sliding rule reaches."""
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD
"""A worker's glibc ``M_TRIM_THRESHOLD``: twice the mmap threshold, as that rule sets it."""


def _libc() -> Any:
    """The C library on Linux (``None`` elsewhere, or where it cannot be loaded)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _die_with_parent(libc: Any) -> None:
    """Have the kernel end this worker if the parent process dies (e.g. SIGKILL)."""
    try:
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: workers hold no files, nothing to clean
    except AttributeError:
        return


def keep_freed_buffers(libc: Any = None) -> None:
    """In a process of envglot's own (a pool worker; the ``envglot migrate`` command's process),
    start glibc's malloc where its sliding thresholds end: buffers up to :data:`MMAP_THRESHOLD`
    come from the heap and freed ones stay there for the next chunk (:data:`TRIM_THRESHOLD`).

    By default a buffer over 128 KiB is mapped afresh until one is freed, and a free heap top of
    twice the threshold is handed back to the kernel: a worker's 1 MiB chunks and outputs then
    fault their pages in again and again (10,000-21,000 minor faults a worker on the benchmark's
    200 MB file; 4,700 with these). Nothing else changes; a worker lives for one run, the command's
    process for one command. ``libc`` is the C library if the caller has it loaded."""
    if libc is None:
        libc = _libc()
        if libc is None:
            return
    try:
        glibc = os.confstr("CS_GNU_LIBC_VERSION")  # glibc only: elsewhere mallopt's numbers mean other things
        mallopt = libc.mallopt
    except (ValueError, OSError, AttributeError):
        return
    if not glibc:
        return
    mallopt(-3, MMAP_THRESHOLD)  # M_MMAP_THRESHOLD (this disables the sliding rule)
    mallopt(-1, TRIM_THRESHOLD)  # M_TRIM_THRESHOLD


def migrate_chunk(mig: Migrator, task: Task) -> ChunkResult:
    res = _convert_chunk(mig, task)
    res.tally.bytes_out = len(res.out)
    return res


def _convert_chunk(mig: Migrator, task: Task) -> ChunkResult:
    if mig.test_delay:
        time.sleep(mig.test_delay)
    res = ChunkResult(out=b"", rejects=[], tally=Tally(bytes_in=len(task.data)))
    if task.kind == "oversize":
        res.tally.bytes_in = task.size
        too_long = Outcome(
            status="rejected", output=None, source=None, error=task.data.decode(), error_type="ParseError", path="$"
        )
        _account(mig, too_long, b"", res, task, task.first_line or None)
        res.omitted = 1
        return res
    if task.kind == "doc":
        body = task.data
        if not body.strip():
            res.out = body
            return res
        o = _record(mig, body, res, task, None)
        if o.status == "converted":
            assert o.output is not None
            doc = o.output if task.style == "compact" else styled(o.output, task.style, mig.target)
            res.out = doc + (b"\n" if body.endswith(b"\n") else b"")
        elif o.status == "passed":
            res.out = body
        return res
    data = task.data
    out: list[bytes] = []  # joined once (no copy at all for a chunk of blank lines)
    add, find, tally = out.append, data.find, res.tally
    count, counted = mig.counter(tally)  # the chunk's counting state, built once
    lineno = task.first_line  # the line of the next record (every terminator passed over is counted)
    pos, n = 0, len(data)
    while pos < n:
        start = pos
        if data[pos] in _WHITESPACE:  # blank lines are skipped at C speed and copied as they are
            start = _blank_run(data, pos)
            if start == n:
                add(data[pos:] if pos else data)
                lineno += data.count(b"\n", pos)
                pos = n
                break
            start = max(pos, data.rfind(b"\n", pos, start) + 1)  # the record's line starts after the blank ones
            if start > pos:
                add(data[pos:start])
                lineno += data.count(b"\n", pos, start)
        end = find(b"\n", start)
        if end < 0:
            end = n
            body, term = data[start:], b""
        elif data[end - 1] == 13:  # CRLF (a record's line is never empty here)
            body, term = data[start : end - 1], b"\r\n"
        else:
            body, term = data[start:end], b"\n"
        got = count(body)  # counted: the record's output, None (passed through) or its Outcome
        if got is None:
            add(data[start : end + 1])
        elif type(got) is bytes:
            add(got)
            add(term)
        else:
            assert isinstance(got, Outcome)
            _note(mig, got, body, res, task, lineno)
            if got.status == "converted":
                assert got.output is not None
                add(got.output + term)
            elif got.status == "passed":
                add(data[start : end + 1])
        lineno += 1
        pos = end + 1
    counted()
    res.lines = lineno - task.first_line - (pos > n)  # a last line without its terminator: not one
    res.out = out[0] if len(out) == 1 else b"".join(out)
    return res


_WHITESPACE = b" \t\n\r\x0b\x0c"
"""What ``bytes.strip`` removes: a line of only these is blank (not a record)."""
_BLANKS = re.compile(b"[" + re.escape(_WHITESPACE) + b"]*")
_WINDOW = 64 * 1024


def _blank_run(data: bytes, pos: int) -> int:
    """Where the run of whitespace starting at ``pos`` ends (``len(data)`` if it runs to the end).

    The regex scans a window at a time; whole blank windows are passed over with
    ``bytes.translate`` (several times faster), so gigabytes of blank lines cost seconds.
    """
    n = len(data)
    while True:
        stop = min(n, pos + _WINDOW)
        m = _BLANKS.match(data, pos, stop)
        assert m is not None  # "*" matches the empty string
        if m.end() < stop or stop == n:
            return m.end()
        pos = stop  # the whole window was blank
        while pos + _WINDOW <= n and not data[pos : pos + _WINDOW].translate(None, _WHITESPACE):
            pos += _WINDOW


def _record(mig: Migrator, body: bytes, res: ChunkResult, task: Task, line: int | None) -> Outcome:
    o = mig.record(body)
    _account(mig, o, body, res, task, line)
    return o


def _account(mig: Migrator, o: Outcome, body: bytes, res: ChunkResult, task: Task, line: int | None) -> None:
    """Count one record's outcome into ``res`` (and its reject line, its details)."""
    res.tally.count(o)
    _note(mig, o, body, res, task, line)


def _note(mig: Migrator, o: Outcome, body: bytes, res: ChunkResult, task: Task, line: int | None) -> None:
    """Put a counted record's reject line and details into ``res``."""
    if o.details:
        res.details.extend((line, d) for d in o.details)
    if o.status == "rejected":
        size = task.size if task.kind == "oversize" else None
        res.rejects.append((line, reject_line(task.source, line, body, o, omitted=size)))
        if mig.details:
            message = o.error or "rejected"
            if o.path is not None:  # the reason without its "(at PATH)": the path is a field of its own
                message = message.removesuffix(f" (at {o.path})")
            kind = o.error_type or "EnvglotError"
            res.details.append((line, RecordError(error_type=kind, path=o.path, message=message, dialect=o.source)))
