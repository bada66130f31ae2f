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
from .fs import fsync_dir as _fsync_dir
from .fs import refuse_links
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
    it, removes stale temp files."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root
        self.seen: set[str] = set()

    def visit(self, directory: str) -> None:
        if directory not in self.seen:
            if self.root is not None:
                refuse_links(self.root, Path(directory))
            os.makedirs(directory, exist_ok=True)
            self.seen.add(directory)
            clean_stale_temps(directory)


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
    """The compressor of a .gz output to ``dst``, writing to ``raw``; alike for every executor (byte for
    byte): the name inside is ``dst``'s without ``.gz``, level 6, no timestamp."""
    inner = os.path.basename(os.fspath(dst))[:-3]
    return gzip.GzipFile(filename=inner, mode="wb", fileobj=raw, compresslevel=6, mtime=0)


class AtomicOutput:
    """A file written to ``<dir>/.envglot-tmp-<pid>-<rand><n>-<name>``, then fsynced and renamed
    over ``dst`` (:meth:`commit`): the report, a backup's copy."""

    def __init__(self, dst: Path, cleaned: Cleaner) -> None:
        self.dst = dst
        parent, name = os.path.split(os.fspath(dst))
        parent = parent or "."
        cleaned.visit(parent)
        self.tmp = os.path.join(parent, temp_name(name))
        self.closed = False
        fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        self.raw: BinaryIO = os.fdopen(fd, "wb", buffering=1024 * 1024)

    def write(self, b: bytes) -> None:
        self.raw.write(b)

    def close(self) -> None:
        """Finish the temporary file: flushed and fsynced."""
        if self.closed:
            return
        self.closed = True
        self.raw.flush()
        os.fsync(self.raw.fileno())
        self.raw.close()

    def rename(self, mode: int | None) -> None:
        """Move the closed temporary file over the destination (atomic; the directory is not fsynced)."""
        if mode is not None:
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
            with contextlib.suppress(OSError):
                self.raw.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.tmp)


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


def _copy_atomic(src: Path, dst: Path, cleaned: Cleaner) -> None:
    """Copy ``src`` to ``dst`` byte-for-byte through a temporary file, durably, at once."""
    out = AtomicOutput(dst, cleaned)
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
    out = AtomicOutput(path, Cleaner(root))
    try:
        out.write(rep.to_json())
        out.commit(None)
    except BaseException:
        out.abort()
        raise
