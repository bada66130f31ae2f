"""Files: walking inputs, atomic outputs, backups, the rejects file, stale temp files."""

from __future__ import annotations

import contextlib
import filecmp
import fnmatch
import gzip
import io
import os
import secrets
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import IO, BinaryIO

import msgspec

from ..errors import EnvglotError
from .constants import REJECTS_NAME, TEMP_PREFIX
from .report import FileFailure

# --------------------------------------------------------------------------- files


class MigrationError(EnvglotError):
    """The migration cannot start (bad options, missing input); ``exit_code`` says which class."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class _Job(msgspec.Struct):
    src: Path | None
    """None for stdin."""
    name: str
    """How the input is named in reports and rejects (the path as walked, or ``<stdin>``)."""
    dst: Path | None
    """Output path (``--out`` and in-place); None for stdout or a dry run."""
    doc: bool
    gz: bool
    size: int


def _is_gz(name: str) -> bool:
    return name.endswith(".gz")


def _is_doc(name: str) -> bool:
    base = name[:-3] if _is_gz(name) else name
    return base.endswith(".json")


def _matches(patterns: Sequence[str], rel: str, base: str) -> bool:
    for p in patterns:
        if fnmatch.fnmatchcase(rel if "/" in p else base, p):
            return True
    return False


def _pid_alive(pid: int) -> bool:
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
    return pid != os.getpid() and not _pid_alive(pid)


def clean_stale_temps(directory: str | os.PathLike[str]) -> list[Path]:
    """Remove temporary files left in ``directory`` by envglot runs that died; returns them."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for e in entries:
        if e.is_file(follow_symlinks=False) and _stale_temp(e.name):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(e.path)
                removed.append(Path(e.path))
    return removed


def _walk(
    inputs: Sequence[str],
    out: Path | None,
    include: Sequence[str],
    exclude: Sequence[str],
    skip: set[Path],
    backup: str | None,
) -> tuple[list[_Job], list[FileFailure]]:
    """The input files in order, and the directories that could not be read (exit 66)."""
    jobs: list[_Job] = []
    unreadable: list[FileFailure] = []
    in_place = backup is not None
    out_res = out.resolve() if out is not None else None

    def onerror(exc: OSError) -> None:
        unreadable.append(FileFailure(file=str(exc.filename), error=_read_error(exc), exit_code=66))

    for arg in inputs:
        if arg == "-":
            dst = out / "stdin.jsonl" if out is not None else None
            jobs.append(_Job(src=None, name="<stdin>", dst=dst, doc=False, gz=False, size=-1))
            continue
        p = Path(arg)
        if p.is_dir():
            for root, dirs, files in os.walk(p, onerror=onerror):
                rootp = Path(root)
                relroot = rootp.relative_to(p)
                dirs.sort()
                kept = []
                for d in dirs:
                    rel = (relroot / d).as_posix()
                    dp = (rootp / d).resolve()
                    if out_res is not None and dp == out_res:
                        continue
                    if _matches(exclude, rel, d):
                        continue
                    kept.append(d)
                dirs[:] = kept
                for f in sorted(files):
                    if f.startswith(TEMP_PREFIX) or f == REJECTS_NAME or (backup and f.endswith(backup)):
                        continue
                    rel = (relroot / f).as_posix()
                    if not _matches(include, rel, f) or _matches(exclude, rel, f):
                        continue
                    fp = rootp / f
                    if fp.resolve() in skip or (fp.is_symlink() and not fp.is_file()):
                        continue
                    dst = fp.resolve() if in_place else (out / rel if out is not None else None)
                    jobs.append(_job(fp, dst))
        elif p.is_file():
            dst = p.resolve() if in_place else (out / p.name if out is not None else None)
            jobs.append(_job(p, dst))
        elif p.exists():
            raise MigrationError(f"{arg}: not a regular file or directory", 66)
        else:
            raise MigrationError(f"{arg}: no such file or directory", 66)
    return jobs, unreadable


def _job(p: Path, dst: Path | None) -> _Job:
    try:
        size = p.stat().st_size
    except OSError:
        size = 0
    return _Job(src=p, name=str(p), dst=dst, doc=_is_doc(p.name), gz=_is_gz(p.name), size=size)


def _fsync_dir(d: Path) -> None:
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class _Cleaner:
    """Removes stale temp files from each output directory, once per run, and counts them."""

    def __init__(self) -> None:
        self.seen: set[Path] = set()
        self.removed = 0

    def visit(self, directory: Path) -> None:
        if directory not in self.seen:
            self.seen.add(directory)
            self.removed += len(clean_stale_temps(directory))


class _AtomicOutput:
    """An output written to ``<dir>/.envglot-tmp-<pid>-<rand>-<name>``, then fsynced and renamed."""

    def __init__(self, dst: Path, gz: bool, cleaned: _Cleaner) -> None:
        self.dst = dst
        parent = dst.parent
        parent.mkdir(parents=True, exist_ok=True)
        cleaned.visit(parent)
        name = f"{TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}-{dst.name}"[:255]
        self.tmp = parent / name
        fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        self.raw: BinaryIO = os.fdopen(fd, "wb", buffering=1024 * 1024)
        self.fh: IO[bytes] | gzip.GzipFile = self.raw
        if gz:
            inner = dst.name[:-3]
            self.fh = gzip.GzipFile(filename=inner, mode="wb", fileobj=self.raw, compresslevel=6, mtime=0)
        self.closed = False

    def write(self, b: bytes) -> None:
        self.fh.write(b)

    def _close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.fh is not self.raw:
            self.fh.close()
        self.raw.flush()
        os.fsync(self.raw.fileno())
        self.raw.close()

    def commit(self, mode: int | None) -> None:
        """Flush, fsync and atomically rename over the destination."""
        self._close()
        if mode is not None:
            os.chmod(self.tmp, mode)
        os.replace(self.tmp, self.dst)
        _fsync_dir(self.dst.parent)

    def abort(self) -> None:
        """Close and delete the temporary file (the destination is untouched)."""
        if not self.closed:
            self.closed = True
            with contextlib.suppress(OSError):
                if self.fh is not self.raw:
                    self.fh.close()
            with contextlib.suppress(OSError):
                self.raw.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.tmp)


def _copy_atomic(src: Path, dst: Path, cleaned: _Cleaner) -> None:
    """Copy ``src`` to ``dst`` byte-for-byte through a temporary file (used for unchanged files)."""
    out = _AtomicOutput(dst, False, cleaned)
    try:
        with open(src, "rb") as fh:
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


def _make_backup(src: Path, suffix: str, cleaned: _Cleaner) -> Path:
    """Keep the original as ``src + suffix`` (hard link, else an fsynced copy); never clobbers.

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
    _fsync_dir(bak.parent)
    return bak


class _Rejects:
    """The rejects file: opened lazily in append mode, fsynced before any output is committed."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.fh: BinaryIO | None = None
        self.dirty = False
        self.count = 0

    def append(self, lines: list[bytes]) -> None:
        if self.path is None or not lines:
            return
        if self.fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.fh = open(self.path, "ab")
            if self.fh.tell() > 0:
                with open(self.path, "rb") as r:
                    r.seek(-1, io.SEEK_END)
                    if r.read(1) != b"\n":  # a torn last line of an interrupted run
                        self.fh.write(b"\n")
        self.fh.write(b"".join(lines))
        self.count += len(lines)
        self.dirty = True

    def sync(self) -> None:
        if self.fh is not None and self.dirty:
            self.fh.flush()
            os.fsync(self.fh.fileno())
            self.dirty = False

    def close(self) -> None:
        if self.fh is not None:
            self.sync()
            self.fh.close()
            self.fh = None


def _read_error(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"cannot read: {exc.strerror}"
    return f"cannot read: {type(exc).__name__}: {exc}"
