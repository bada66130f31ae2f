"""A file read in ranges put together into one temporary output, in range order: by one task
after its last range (:func:`finish_ranged`), or on the driver as the ranges come in
(:class:`Assembly`, :meth:`.driver.Driver._assemble`)."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from typing import Any

from . import fs as store
from .deferred import InputChangedError, Unchanged
from .files import copy_rest
from .inputs import reopened
from .partitions import PieceResult, RunSpec
from .walk import FileSpec


def finish_ranged(spec: RunSpec, f: FileSpec, parts: list[PieceResult], changed: bool) -> tuple[str | None, str]:
    """A task: one temporary output for a file read in ranges, or why the input could not be read.

    Changed: the ranges' outputs in order (:class:`Assembly`); unchanged: the input's own bytes
    (as the local engine copies an unchanged file). The ranges' temporaries are removed.
    """
    assert f.dst is not None
    tmp = store.temp_path(f.dst, spec.run, str(f.index))
    try:
        if not changed:
            store.copy_file(spec.src_fs, f.src, spec.dst_fs, tmp, spec.root, f.mode, run=spec.run)
        else:
            out = Assembly(spec, f)
            try:
                for p in parts:
                    out.add(p)
                out.close()
            except BaseException:
                out.abort()
                raise
    except InputChangedError as exc:
        return None, str(exc)
    finally:
        for p in parts:
            if p.tmp is not None:
                store.remove(spec.dst_fs, p.tmp)
    if spec.sync:
        store.sync_written(spec.dst_fs, [tmp])
    return tmp, ""


_SYNC_FILE_RANGE_WRITE = 2
_libc: list[Any] = []
"""``[libc]`` once :func:`write_back` has loaded it, ``[None]`` where it has no ``sync_file_range``."""


def write_back(fd: int, offset: int, length: int) -> None:
    """Start writing ``length`` bytes of ``fd`` from ``offset`` to the disk, without waiting (Linux
    ``sync_file_range(SYNC_FILE_RANGE_WRITE)``; elsewhere nothing). A hint, not a sync: the commit's
    ``syncfs`` still makes the output durable, but finds most of it written already — the ranges
    put together while the workers convert the rest no longer wait for the disk after the last one."""
    if length <= 0 or not sys.platform.startswith("linux"):
        return
    if not _libc:
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fn = libc.sync_file_range
            fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
        except (OSError, AttributeError):
            fn = None
        _libc.append(fn)
    if _libc[0] is not None:
        _libc[0](fd, offset, length, _SYNC_FILE_RANGE_WRITE)  # an error (EIO) shows again at the sync


class Assembly:
    """The output of a file read in ranges, put together range by range in order (:meth:`add`), into
    the file's temporary (:func:`.fs.temp_path` with the file's index). On a local disk the first
    range's temporary becomes the file's (renamed, not copied) and the others are appended by the
    kernel (:func:`.files.copy_rest`), each range's bytes handed to the disk as soon as they are
    in (:func:`write_back`); on object storage each is read and written. An unchanged range (no
    temporary) is copied from the input, checked to be the bytes read
    (:class:`~.deferred.Unchanged`). Each range's temporary is removed once copied."""

    def __init__(self, spec: RunSpec, f: FileSpec) -> None:
        assert f.dst is not None
        self.spec = spec
        self.file = f
        self.tmp = store.temp_path(f.dst, spec.run, str(f.index))
        self.added = 0
        """Ranges added so far (the next one to add is this part)."""
        self.out: Any = None

    def add(self, p: PieceResult) -> None:
        """Append the next range's output; on a local disk, start writing it to the disk
        (:func:`write_back`).

        Raises:
            InputChangedError: an unchanged range's input bytes are no longer those read.
            OSError: writing the output failed.
        """
        assert p.part == self.added, "ranges are added in order"
        spec = self.spec
        local = store.is_local(spec.dst_fs)
        if self.out is None and local and p.tmp is not None:
            os.replace(p.tmp, self.tmp)
            self.out = open(self.tmp, "r+b", buffering=1024 * 1024)  # closed by close() or abort()
            self.out.seek(0, os.SEEK_END)
            write_back(self.out.fileno(), 0, self.out.tell())
            self.added += 1
            return
        if self.out is None:
            self.out = store.open_output(spec.dst_fs, self.tmp, spec.root, mode=self.file.mode, size=-1, run=spec.run)
        w = self.out
        start = w.tell() if local else 0
        if p.tmp is not None:
            with store.open_read(spec.dst_fs, p.tmp) as r:
                if local:
                    w.flush()
                    copy_rest(r, w)
                else:
                    shutil.copyfileobj(r, w, 1 << 20)
            store.remove(spec.dst_fs, p.tmp)
        elif p.same:

            def reopen(begin: int = p.begin) -> list[Any]:
                return reopened(store.open_read(spec.src_fs, self.file.src), spec.limits, False, begin)

            Unchanged(p.same, p.digest).copy(reopen, w.write)
        if local:
            w.flush()
            write_back(w.fileno(), start, w.tell() - start)
        self.added += 1

    def close(self) -> None:
        """Close the output (errors propagate)."""
        w, self.out = self.out, None
        if w is None:  # no range had any output: an empty file
            w = store.open_output(
                self.spec.dst_fs, self.tmp, self.spec.root, mode=self.file.mode, size=-1, run=self.spec.run
            )
        w.close()

    def abort(self) -> None:
        """Close and remove the output (the ranges not added yet keep their temporaries)."""
        w, self.out = self.out, None
        if w is not None:
            with contextlib.suppress(Exception):
                w.close()
        store.remove(self.spec.dst_fs, self.tmp)
