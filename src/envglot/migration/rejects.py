"""The rejects file and its commit protocol, one for every executor (``docs/migration.md``,
"Atomicity and interruption"), on a local path or an fsspec URL.

The reject lines of the file in progress are collected (:meth:`RejectsFile.add`) and made
durable by :meth:`RejectsFile.commit` before that file's output is committed;
:meth:`RejectsFile.discard` drops them. A commit appends (on a local disk truncating back on
any error, so a full disk never leaves half a line; an object is rewritten whole through a
temporary key) unless the rejects file already holds lines of the same source and
``replace`` is asked: then the file is rewritten through a temporary and moved into place
without them — the other sources' lines kept, the new lines where the first old one was —
so a re-run replaces a file's rejects instead of duplicating them, and gives the same file
byte for byte. The sources present are learnt by one scan when the run first touches the
file, which also cuts a torn last line left by a killed run.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

import msgspec

from .files import clean_stale_temps, temp_name
from .fs import close_durable, commit, fsync_dir, open_write, remove, temp_path


class _Source(msgspec.Struct):
    source: str = ""


_SOURCE = msgspec.json.Decoder(_Source)
SPOOL_BYTES = 1024 * 1024
"""A file's reject lines are kept in memory up to this size, then in an unnamed temp file."""


def _source_of(line: bytes) -> str | None:
    """The ``source`` of a rejects record; None for a line that is not one (kept as it is)."""
    try:
        return _SOURCE.decode(line).source
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def _scan(lines: Iterable[bytes]) -> tuple[dict[str, int], int, bool]:
    """Lines per source of an existing rejects file, the length of its complete lines, and
    whether its last line is a complete record without its newline (edited by hand: kept,
    its newline added) rather than torn by a killed run (cut off at that length)."""
    sources: dict[str, int] = {}
    good = 0
    for line in lines:
        if not line.endswith(b"\n"):
            try:
                _SOURCE.decode(line)
            except msgspec.DecodeError:
                return sources, good, False
            line += b"\n"
            good += len(line)
            if (src := _source_of(line)) is not None:
                sources[src] = sources.get(src, 0) + 1
            return sources, good, True
        good += len(line)
        if (src := _source_of(line)) is not None:
            sources[src] = sources.get(src, 0) + 1
    return sources, good, False


class RejectsFile:
    """The rejects file of a run: ``path`` on the local disk, or on ``fs`` (an fsspec file system)."""

    def __init__(self, path: str | os.PathLike[str] | None, fs: Any = None, run: str | None = None) -> None:
        self.path = None if path is None else os.fspath(path)
        self.fs = fs
        """None: ``path`` is local (plain ``os`` calls: O_APPEND, fsync, truncate back)."""
        self.run = run or secrets.token_hex(4)
        """Names the temporary key of a rewrite on ``fs`` (the Dask run's, removed with its leftovers)."""
        self.spool: tempfile.SpooledTemporaryFile[bytes] | None = None
        self.pending = 0
        self.count = 0
        self.sources: dict[str, int] | None = None
        """Lines per source in the rejects file (read once, when first needed)."""
        self.removed = 0
        """Stale temp files of dead runs removed from the rejects file's directory."""

    def add(self, lines: list[bytes]) -> None:
        """Collect reject lines of the file in progress."""
        if self.path is None or not lines:
            return
        if self.spool is None:
            self.spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)
        self.spool.write(b"".join(lines))
        self.pending += len(lines)

    def discard(self) -> None:
        """Drop the collected lines (the file in progress is not committed)."""
        if self.spool is not None:
            with contextlib.suppress(OSError):
                self.spool.close()
        self.spool = None
        self.pending = 0

    def commit(self, source: str, replace: bool) -> None:
        """Make ``source``'s collected lines durable; with ``replace``, instead of its earlier lines.

        Raises:
            OSError: the rejects file cannot be written (it is left as it was).
        """
        if self.path is None:
            return
        if self.pending == 0 and not (replace and (earlier := self._sources()) and earlier.get(source)):
            return  # nothing collected, and no earlier line of ``source`` to replace (none at all: not looked up)
        try:
            sources = self._sources()
            if replace and sources.get(source) and self._regular():
                self._rewrite(source)
                sources.pop(source, None)
            elif self.pending:
                self._append()
            if self.pending:
                sources[source] = sources.get(source, 0) + self.pending
                self.count += self.pending
        finally:
            self.discard()

    def close(self) -> None:
        self.discard()

    # ----------------------------------------------------------------- the stored file

    def _regular(self) -> bool:
        """Only a regular file is ever replaced (``--rejects /dev/null`` is appended to)."""
        assert self.path is not None
        if self.fs is not None:
            return bool(self.fs.isfile(self.path))
        try:
            return stat.S_ISREG(os.lstat(self.path).st_mode)
        except OSError:
            return False

    def _spooled(self) -> Iterator[bytes]:
        if self.spool is None:
            return
        self.spool.seek(0)
        while block := self.spool.read(1024 * 1024):
            yield block

    def _sources(self) -> dict[str, int]:
        """Scan the existing file once: lines per source; a torn last line is cut off."""
        if self.sources is not None:
            return self.sources
        assert self.path is not None
        self.sources = {}
        if self.fs is not None:
            if self.fs.exists(self.path):
                data = self.fs.cat_file(self.path)
                self.sources, good, whole = _scan(data.splitlines(keepends=True))
                if whole:
                    self._replace_with(data + b"\n")
                elif good != len(data):
                    self._replace_with(data[:good])
            return self.sources
        parent = os.path.dirname(self.path) or "."
        if os.path.isdir(parent):  # a rewrite's temp file left by a killed run
            self.removed += len(clean_stale_temps(parent))
        if not self._regular():  # missing, or a device/FIFO: nothing to read back
            return self.sources
        try:
            fh = open(self.path, "r+b")
        except FileNotFoundError:
            return self.sources
        with fh:
            self.sources, good, whole = _scan(fh)
            if whole:
                fh.seek(0, os.SEEK_END)
                fh.write(b"\n")
            elif good != fh.seek(0, os.SEEK_END):
                fh.truncate(good)
                os.fsync(fh.fileno())
        return self.sources

    def _append(self) -> None:
        assert self.path is not None
        if self.fs is not None:
            old = self.fs.cat_file(self.path) if self.fs.exists(self.path) else b""
            self._replace_with(old + b"".join(self._spooled()))
            return
        new = not os.path.lexists(self.path)
        parent = os.path.dirname(self.path) or "."
        if new:
            os.makedirs(parent, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        try:
            size = os.fstat(fd).st_size
            try:
                for block in self._spooled():
                    view = memoryview(block)
                    while view:
                        view = view[os.write(fd, view) :]
                os.fsync(fd)
            except BaseException:
                with contextlib.suppress(OSError):  # never leave part of a line behind
                    os.ftruncate(fd, size)
                    os.fsync(fd)
                raise
        finally:
            os.close(fd)
        if new:
            fsync_dir(parent)

    def _merge(self, old: Iterable[bytes], source: str, out: IO[bytes]) -> None:
        """The old lines without ``source``'s, the collected ones where the first of those was."""
        placed = False
        for line in old:
            if _source_of(line) != source:
                out.write(line)
            elif not placed:
                out.writelines(self._spooled())
                placed = True
        if not placed:
            out.writelines(self._spooled())

    def _rewrite(self, source: str) -> None:
        """Replace ``source``'s lines by the collected ones (temporary, then moved into place)."""
        assert self.path is not None
        if self.fs is not None:
            with self.fs.open(self.path, "rb") as old:
                self._through_temp(lambda out: self._merge(old, source, out))
            return
        parent, name = os.path.split(self.path)
        tmp = os.path.join(parent, temp_name(name))
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        try:
            with os.fdopen(fd, "wb", buffering=1024 * 1024) as out, open(self.path, "rb") as old:
                os.fchmod(out.fileno(), os.fstat(old.fileno()).st_mode & 0o7777)
                self._merge(old, source, out)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        fsync_dir(parent or ".")

    def _replace_with(self, data: bytes) -> None:
        """The object on ``fs`` becomes ``data`` (written whole under a temporary key, then moved)."""
        self._through_temp(lambda out: out.write(data))

    def _through_temp(self, write: Callable[[IO[bytes]], object]) -> None:
        assert self.path is not None
        tmp = temp_path(self.path, self.run, "rejects")
        w = open_write(self.fs, tmp, mode=None)
        try:
            write(w)
            close_durable(self.fs, w)
        except BaseException:
            with contextlib.suppress(Exception):
                w.close()
            remove(self.fs, tmp)
            raise
        commit(self.fs, tmp, self.path)
