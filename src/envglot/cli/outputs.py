"""The CLI's outputs: atomic ``-o`` files, stdout, and what a failed write says."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import sys
import tempfile
from typing import IO, NoReturn

import click

from . import exits
from .exits import die

__all__ = [
    "AtomicWriter",
    "Output",
    "Stdout",
    "echo",
    "open_output",
    "output_failed",
    "same_file",
    "writer_for",
]


_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
_HAS_SIGMASK = hasattr(signal, "pthread_sigmask")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class _FileSink:
    """Writes to ``self._f`` until :meth:`commit` or :meth:`abort` closes it."""

    _f: IO[bytes] | None

    def write(self, data: bytes) -> None:
        assert self._f is not None
        self._f.write(data)

    def flush(self) -> None:
        if self._f is not None:
            self._f.flush()


class AtomicWriter(_FileSink):
    """Write ``path`` atomically: a temporary file in the same directory, renamed on :meth:`commit`.

    Only for regular files (use :func:`writer_for`, which picks it when it fits).

    :meth:`abort` removes the temporary file and leaves any existing ``path`` untouched.
    An existing file's permission bits are kept; a new file gets ``0o666 & ~umask``.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._f = None
        directory = os.path.dirname(os.path.abspath(path))
        tmp: str | None = None
        # Ctrl-C/SIGTERM are held back while the temp file is created, then delivered inside
        # this try: an interruption at any point removes the temp file.
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS) if _HAS_SIGMASK else None
        try:
            try:
                fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
                self._tmp = tmp
                try:
                    mode = os.stat(path).st_mode & 0o7777
                except OSError:
                    mode = 0o666 & ~_umask()
                os.fchmod(fd, mode)
                self._f = os.fdopen(fd, "wb")
            finally:
                if old is not None:
                    signal.pthread_sigmask(signal.SIG_SETMASK, old)
        except BaseException:
            if self._f is not None:
                with contextlib.suppress(OSError):
                    self._f.close()
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            raise

    def commit(self) -> None:
        """Flush, close and rename into place."""
        if self._f is None:
            return
        f, self._f = self._f, None
        try:
            f.close()
            os.replace(self._tmp, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(self._tmp)
            raise

    def abort(self) -> None:
        """Drop everything written; ``path`` stays as it was."""
        if self._f is None:
            return
        f, self._f = self._f, None
        with contextlib.suppress(OSError):
            f.close()
        with contextlib.suppress(OSError):
            os.unlink(self._tmp)


class Stdout:
    """stdout with the :class:`AtomicWriter` interface."""

    def __init__(self) -> None:
        self._f = sys.stdout.buffer

    def write(self, data: bytes) -> None:
        self._f.write(data)

    def flush(self) -> None:
        self._f.flush()

    def commit(self) -> None:
        self._f.flush()

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            self._f.flush()


class _Direct(_FileSink):
    """A device or pipe (``/dev/null``, a FIFO), written in place: it cannot be replaced atomically."""

    def __init__(self, path: str) -> None:
        self._f = open(path, "wb")

    def commit(self) -> None:
        if self._f is not None:
            f, self._f = self._f, None
            f.close()

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            self.commit()


Output = AtomicWriter | _Direct | Stdout


def writer_for(path: str) -> AtomicWriter | _Direct:
    """An atomic writer for a regular (or new) file, through symlinks; a direct one for anything else.

    Raises:
        OSError: the file cannot be created.
    """
    real = os.path.realpath(path)
    try:
        regular = stat.S_ISREG(os.stat(real).st_mode)
    except FileNotFoundError:
        regular = True
    return AtomicWriter(real) if regular else _Direct(path)


def same_file(a: str, b: str) -> bool:
    """True when two paths name one file: same real path (symlinks, ``./`` spellings) or same inode."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def open_output(path: str | None) -> Output:
    """An output for ``path`` (``None`` or ``-``: stdout); exits 74 if it cannot be created."""
    if path is None or path == "-":
        return Stdout()
    try:
        return writer_for(path)
    except OSError as exc:
        die(f"cannot write output: {exc.strerror}", exits.EX_IOERR, path)


def output_failed(path: str | None, exc: OSError) -> NoReturn:
    """Exit 74 after a write error on ``path`` (stdout when ``None``); 141 quietly on a closed pipe."""
    if isinstance(exc, BrokenPipeError):
        # the reader went away (e.g. `| head`): say nothing more on a dead pipe
        exits.silence_broken_pipe()
        sys.exit(exits.EX_PIPE)
    die(f"cannot write output: {exc.strerror}", exits.EX_IOERR, path or "<stdout>")


def echo(line: str) -> None:
    """Print one line on stdout; a closed pipe or full disk ends the run with exit 74."""
    try:
        click.echo(line)
    except OSError as exc:
        output_failed(None, exc)
