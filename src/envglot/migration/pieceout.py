"""A streamed piece's temporary output (:func:`.partitions.run_task`): started at the piece's first
change, on the destination's file system, given the input's mode, gzip-compressed for a .gz file."""

from __future__ import annotations

import contextlib
import gzip
from typing import IO, TYPE_CHECKING, Any

from . import fs as store
from .deferred import Deferred
from .files import gzip_output
from .inputs import reopened
from .walk import FileSpec

if TYPE_CHECKING:
    from .partitions import RunSpec


class PieceOutput:
    """A piece's temporary output, started at its first change (:class:`~.deferred.Deferred`)."""

    def __init__(self, spec: RunSpec, f: FileSpec, tmp: str, begin: int, gz: bool) -> None:
        self.spec = spec
        self.file = f
        self.tmp = tmp
        self.begin = begin
        self.gz = gz
        self.output: Deferred[TempWriter] = Deferred(self._open, self._reopen)
        self.touched = False
        """The temporary may exist (it is removed if the piece fails or leaves no output)."""

    def write(self, b: bytes, changed: bool) -> None:
        self.output.write(b, changed)

    def _open(self) -> TempWriter:
        self.touched = True
        return TempWriter(self.spec, self.file, self.tmp, self.gz, whole=self.begin == 0)

    def _reopen(self) -> list[Any]:
        return reopened(store.open_read(self.spec.src_fs, self.file.src), self.spec.limits, self.gz, self.begin)

    def close(self) -> None:
        """Close the output (if it was started); errors propagate."""
        if self.output.out is not None:
            self.output.out.close()


class TempWriter:
    """A temporary on the destination's file system, given the input's mode (a local one is held
    in memory while the input is small: :func:`.fs.open_output`); with ``gz``, a .gz output."""

    def __init__(self, spec: RunSpec, f: FileSpec, tmp: str, gz: bool, whole: bool) -> None:
        self.raw: IO[bytes] | store.HeldTemp | None = None
        self.fh: IO[bytes] | store.HeldTemp | gzip.GzipFile | None = None
        try:
            if gz:
                self.raw = store.open_write(spec.dst_fs, tmp, spec.root, mode=f.mode, run=spec.run)
                self.fh = gzip_output(self.raw, f.dst or tmp)
            else:
                size = f.size if whole and not f.gz else -1
                self.raw = self.fh = store.open_output(
                    spec.dst_fs, tmp, spec.root, mode=f.mode, size=size, run=spec.run
                )
        except OSError as exc:
            raise WriteError(exc.strerror or str(exc)) from exc

    def write(self, b: bytes) -> None:
        assert self.fh is not None
        try:
            self.fh.write(b)
        except OSError as exc:
            raise WriteError(exc.strerror or str(exc)) from exc

    def close(self) -> None:
        """Close it (once); errors propagate."""
        fh, raw = self.fh, self.raw
        self.fh = self.raw = None
        try:
            if fh is not None and fh is not raw:
                fh.close()
        finally:
            if raw is not None:
                raw.close()

    def abort(self) -> None:
        """Close it, ignoring errors (the piece fails; its temporary is removed by :func:`.partitions.run_task`);
        one still held in memory is dropped, never created."""
        if isinstance(self.raw, store.HeldTemp):
            self.raw.held = None
        with contextlib.suppress(Exception):
            self.close()


class WriteError(OSError):
    """An output write failed (as opposed to reading the input)."""
