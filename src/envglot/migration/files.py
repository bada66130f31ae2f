"""Files: atomic outputs, backups, stale temp files (local paths)."""

from __future__ import annotations

import contextlib
import errno
import filecmp
import gzip
import itertools
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import IO, BinaryIO

from ..errors import EnvglotError
from .constants import TEMP_PREFIX
from .fs import HOLD_BYTES, SPILL_BYTES, refuse_links, write_new
from .fs import fsync_dir as _fsync_dir
from .inputs import open_input
from .report import MigrationReport

# --------------------------------------------------------------------------- files


class MigrationError(EnvglotError):
    """The migration cannot start (bad options, missing input); ``exit_code`` says which class."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def pid_alive(pid: int) -> bool:
    """True while a process ``pid`` exists (ours or another user's)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stale_temp(name: str) -> bool:
    """True for a temporary file of an envglot run that is no longer alive."""
    if not name.startswith(TEMP_PREFIX):
        return False
    pid_s = name[len(TEMP_PREFIX) :].split("-", 1)[0]
    if not pid_s.isdigit():
        return False
    pid = int(pid_s)
    return pid != os.getpid() and not pid_alive(pid)


def clean_stale_temps(directory: str | os.PathLike[str], owner: int | None = None) -> list[Path]:
    """Remove temporary files left in ``directory`` by envglot runs that died (with ``owner``: the
    temporaries of the run of that pid, its own and its workers'); returns them."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    mine = f"{TEMP_PREFIX}{owner}-"
    for e in entries:
        if e.is_file(follow_symlinks=False) and (e.name.startswith(mine) if owner is not None else _stale_temp(e.name)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(e.path)
                removed.append(Path(e.path))
    return removed


class Cleaner:
    """Prepares each output directory once per run: refuses symlinks under ``root``, creates
    it, removes stale temp files (and counts them)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root
        self.seen: set[str] = set()
        self.removed = 0

    def sweep(self) -> None:
        """Remove this run's temporaries left in the directories it prepared (a stopped run whose
        worker died, or was interrupted, after writing one it did not report)."""
        for directory in sorted(self.seen):
            clean_stale_temps(directory, os.getpid())

    def visit(self, directory: str) -> None:
        if directory not in self.seen:
            if self.root is not None:
                refuse_links(self.root, Path(directory))
            os.makedirs(directory, exist_ok=True)
            self.seen.add(directory)
            self.removed += len(clean_stale_temps(directory))


_TEMP_SERIAL: list[tuple[int, str, Iterator[int]]] = []
"""This process's temp-name stem: (pid, random token, counter); made again after a fork."""


def temp_name(name: str, owner: int | None = None) -> str:
    """``.envglot-tmp-<owner>-<random><n>-<name>``, at most 255 bytes (a file name's limit).

    ``owner`` is the pid of the run (default: this process; a worker names the run's parent,
    whose death makes the file stale however long the worker takes to die). The random token
    is drawn once per process and ``n`` counts up, so a name costs no system call;
    ``O_EXCL`` still refuses any clash.
    """
    pid = os.getpid()
    if not _TEMP_SERIAL or _TEMP_SERIAL[0][0] != pid:
        _TEMP_SERIAL[:] = [(pid, secrets.token_hex(4), itertools.count())]
    _, token, counter = _TEMP_SERIAL[0]
    head = f"{TEMP_PREFIX}{pid if owner is None else owner}-{token}{next(counter):x}-"
    tail = os.fsencode(name)[: 255 - len(head)]
    return head + tail.decode("utf-8", "surrogateescape")


def gzip_output(raw: IO[bytes], dst: str | os.PathLike[str]) -> gzip.GzipFile:
    """The compressor of a .gz output to ``dst``, writing to ``raw``; alike in both drivers (byte for
    byte): the name inside is ``dst``'s without ``.gz``, level 6, no timestamp."""
    inner = os.path.basename(os.fspath(dst))[:-3]
    return gzip.GzipFile(filename=inner, mode="wb", fileobj=raw, compresslevel=6, mtime=0)


class AtomicOutput:
    """An output written to ``<dir>/.envglot-tmp-<pid>-<rand><n>-<name>``, then fsynced and renamed.

    The output of a small input (``size_hint`` up to :data:`HOLD_BYTES`, not gzip) is held in
    memory and its temporary created, written, given its mode and closed in one go by
    :meth:`close` (four system calls; none at all for an output that is aborted); one that
    grows past :data:`SPILL_BYTES` is written as it comes instead.
    """

    raw: BinaryIO
    fh: IO[bytes] | gzip.GzipFile

    def __init__(self, dst: Path, gz: bool, cleaned: Cleaner, size_hint: int = -1) -> None:
        self.dst = dst
        parent, name = os.path.split(os.fspath(dst))
        parent = parent or "."
        cleaned.visit(parent)
        self.tmp = os.path.join(parent, temp_name(name))
        self.closed = False
        self.held: list[bytes] | None = [] if not gz and 0 <= size_hint <= HOLD_BYTES else None
        self.held_bytes = 0
        self.perm: int | None = None
        """Permission bits already set (``fchmod``) on the output as it was written."""
        self.adopted = False
        """The temporary was written by a worker (:func:`write_temp`) and is not open here (yet)."""
        if self.held is None:
            self._open(gz, size_hint)

    @classmethod
    def adopt(cls, tmp: str, dst: Path, perm: int | None) -> AtomicOutput:
        """The output whose temporary ``tmp`` a worker wrote beside ``dst`` (:func:`write_temp`,
        with ``perm`` set); later parts are appended to it (:meth:`append_file`)."""
        self = cls.__new__(cls)
        self.dst, self.tmp, self.closed, self.held, self.held_bytes = dst, tmp, False, None, 0
        self.perm, self.adopted = perm, True
        return self

    def _reopen(self) -> None:
        """Open an adopted temporary at its end, to write on."""
        fd = os.open(self.tmp, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.lseek(fd, 0, os.SEEK_END)
        except BaseException:
            os.close(fd)
            raise
        self.raw = os.fdopen(fd, "wb", buffering=1024 * 1024)
        self.fh = self.raw
        self.adopted = False

    def append_file(self, path: str) -> None:
        """Append the temporary ``path`` (a worker's output of the next part, :func:`write_temp`)
        and remove it; the bytes are copied by the kernel where it can (``copy_file_range``)."""
        try:
            if self.held is not None:
                with open(path, "rb") as part:
                    self.write(part.read())
                return
            if self.adopted:
                self._reopen()
            assert self.fh is self.raw, "a worker writes the parts of plain outputs only"
            self.raw.flush()
            with open(path, "rb") as part:
                copy_rest(part, self.raw)
        finally:
            discard_temp(path)

    def _open(self, gz: bool, size_hint: int) -> None:
        fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        # a small file gets a small buffer (a 1 MiB one per file costs an mmap and page faults)
        buffering = 1024 * 1024 if size_hint < 0 else min(1024 * 1024, max(8192, 2 * size_hint))
        self.raw = os.fdopen(fd, "wb", buffering=buffering)
        self.fh = self.raw
        if gz:
            self.fh = gzip_output(self.raw, self.dst)

    def write(self, b: bytes) -> None:
        held = self.held
        if held is None:
            if self.adopted:
                self._reopen()
            self.fh.write(b)
            return
        held.append(b)
        self.held_bytes += len(b)
        if self.held_bytes > SPILL_BYTES:  # larger than it looked: write it here, as any other
            self._open(False, -1)  # first: if it fails, the output is still held (abort creates nothing)
            self.held = None
            for part in held:
                self.raw.write(part)

    def close(self, durable: bool = True, perm: int | None = None) -> None:
        """Finish the temporary file; ``durable=False`` leaves the fsync to a batch (:class:`CommitBatch`).

        A held output is written now, with ``perm`` (else ``perm`` is applied at :meth:`rename`).
        """
        if self.closed:
            return
        self.closed = True
        if self.held is not None:
            self._write_held(durable, perm)
            return
        if self.adopted:  # written and closed by a worker: nothing buffered here
            if durable:
                self._reopen()
            else:
                return
        if self.fh is not self.raw:
            self.fh.close()
        self.raw.flush()
        if durable:
            os.fsync(self.raw.fileno())
        self.raw.close()

    def _write_held(self, durable: bool, perm: int | None) -> None:
        """Create the temporary and write the held bytes (on an error, nothing is left behind)."""
        assert self.held is not None
        data = b"".join(self.held)
        self.held = None
        write_new(self.tmp, data, perm, durable)
        self.perm = perm

    def rename(self, mode: int | None) -> None:
        """Move the closed temporary file over the destination (atomic; the directory is not fsynced)."""
        if mode is not None and mode != self.perm:
            os.chmod(self.tmp, mode)
        os.replace(self.tmp, self.dst)

    def commit(self, mode: int | None) -> None:
        """Flush, fsync and atomically rename over the destination, then fsync the directory."""
        self.close()
        self.rename(mode)
        _fsync_dir(self.dst.parent)

    def abort(self) -> None:
        """Close and delete the temporary file (the destination is untouched)."""
        if not self.closed:
            self.closed = True
            if self.held is not None:
                self.held = None
                return  # never created
            if self.adopted:
                discard_temp(self.tmp)
                return
            with contextlib.suppress(OSError):
                if self.fh is not self.raw:
                    self.fh.close()
            with contextlib.suppress(OSError):
                self.raw.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.tmp)


def write_temp(dst: Path, data: bytes, perm: int | None, owner: int) -> str:
    """Write ``data`` to a new temporary of the run ``owner`` (its pid) beside ``dst`` (its directory
    prepared by the parent's :class:`Cleaner`), with ``perm``; returns its path. Not fsynced: the
    commit batch syncs it.

    Raises:
        OSError: nothing is left behind.
    """
    parent, name = os.path.split(os.fspath(dst))
    tmp = os.path.join(parent or ".", temp_name(name, owner))
    write_new(tmp, data, perm)
    return tmp


def discard_temp(path: str) -> None:
    """Remove a temporary file if it is there (best effort: an error of its own is not raised)."""
    with contextlib.suppress(OSError):
        os.unlink(path)


def copy_rest(src: IO[bytes], dst: IO[bytes]) -> None:
    """Copy ``src`` from its position to its end onto ``dst`` at its position (both unbuffered
    here: ``dst`` flushed), by ``copy_file_range`` where the file systems allow, else read/write."""
    out, left = dst.fileno(), os.fstat(src.fileno()).st_size - src.tell()
    try:
        while left > 0 and (n := os.copy_file_range(src.fileno(), out, left)):
            left -= n
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
            raise
    # the rest (all of it where the kernel cannot copy, or stopped early), from where it stopped
    shutil.copyfileobj(src, dst, 1024 * 1024)
    dst.seek(0, os.SEEK_END)


def copy_to_temp(src: Path, dst: Path, cleaned: Cleaner) -> AtomicOutput:
    """Copy ``src`` byte for byte to a closed (not yet fsynced) temporary beside ``dst``."""
    out = AtomicOutput(dst, False, cleaned)
    try:
        with open_input(src) as fh:
            shutil.copyfileobj(fh, out.raw, 1024 * 1024)
        out.close(durable=False)
    except BaseException:
        out.abort()
        raise
    return out


def _copy_atomic(src: Path, dst: Path, cleaned: Cleaner) -> None:
    """Copy ``src`` to ``dst`` byte-for-byte through a temporary file, durably, at once."""
    out = AtomicOutput(dst, False, cleaned)
    try:
        with open_input(src) as fh:
            shutil.copyfileobj(fh, out.raw, 1024 * 1024)
        out.commit(src.stat().st_mode & 0o7777)
    except BaseException:
        out.abort()
        raise


class BackupExistsError(OSError):
    """The backup file of an in-place output already exists (it is never overwritten)."""


def _same_content(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b) or filecmp.cmp(a, b, shallow=False)
    except OSError:
        return False


def make_backup(src: Path, suffix: str, cleaned: Cleaner, sync: bool = True) -> Path:
    """Keep the original as ``src + suffix`` (hard link, else an fsynced copy); never clobbers.

    With ``sync=False`` the caller makes the link durable (one directory fsync per batch)
    before it renames anything over ``src``.

    An existing backup identical to ``src`` (left by a run interrupted between backup and
    rename) is reused; any other existing backup is an error.
    """
    bak = src.with_name(src.name + suffix)
    exists = BackupExistsError(f"backup {bak} already exists; remove it or choose another --backup suffix")
    if os.path.lexists(bak):
        if _same_content(src, bak):
            return bak
        raise exists
    try:
        os.link(src, bak)
    except FileExistsError:
        raise exists from None
    except OSError:
        _copy_atomic(src, bak, cleaned)
    if sync:
        _fsync_dir(bak.parent)
    return bak


def read_error(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"cannot read: {exc.strerror}"
    return f"cannot read: {type(exc).__name__}: {exc}"


def write_report(path: Path, rep: MigrationReport, root: Path | None) -> None:
    """Write the report as JSON, atomically; never through a symlinked directory under ``root`` (``--out``)."""
    out = AtomicOutput(path, False, Cleaner(root))
    try:
        out.write(rep.to_json())
        out.commit(None)
    except BaseException:
        out.abort()
        raise
