"""Storage for the piece driver: local paths and fsspec URLs, atomic commits, leftover temps.

What the engine relies on (``docs/migration.md``, "Scale out"):

* local paths: a temporary file in the destination's directory, flushed and fsynced,
  then ``os.replace`` (atomic on POSIX) and an fsync of the directory — as the local engine;
* object stores (``s3://``, ``gs://``, ``memory://`` …): an object becomes visible only
  once fully written (a PUT or a completed multipart upload is atomic per key), so an
  output is written under a temporary key beside its destination and then moved
  (copy + delete) to its final key: a reader sees the old object or the complete new one.

Temporary names start with ``.envglot-tmp-<run>-`` (:func:`run_id`: ``dask-<random>`` or, for a
run on this machine, ``<pid>-<random>``); inputs never match them. A run into ``out`` removes
every Dask leftover in its output directories (object stores: under ``out``) and those of
dead local runs before it starts (in place: only the dead local runs'), and its own before it
ends (two runs must not write into the same ``out`` at once).
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import io
import os
import posixpath
import re
import secrets
import shutil
import sys
from collections.abc import Callable, Iterable, Sequence
from operator import methodcaller
from pathlib import Path
from typing import IO, Any

from ..excerpt import display_path as display
from .constants import OWN_NAMES, TEMP_PREFIX
from .inputs import open_fd, open_input

DASK_TEMP_PREFIX = TEMP_PREFIX + "dask-"
"""Temporary keys of the Dask engine: ``.envglot-tmp-dask-<run>-<piece>-<name>``."""


class SymlinkRefusedError(OSError):
    """An output would be written through a symbolic link planted under the output directory."""


def refuse_links(root: Path, path: Path) -> None:
    """Raise :class:`SymlinkRefusedError` if ``path`` or a directory between ``root`` and it is a symlink.

    ``root`` itself (the ``--out`` directory the user named) may be a link; nothing below it may.
    """
    try:
        rel = path.relative_to(root)
    except ValueError:
        return
    cur = root
    for part in rel.parts:
        cur = cur / part
        if cur.is_symlink():
            raise SymlinkRefusedError(
                errno.ELOOP, f"refusing to write through the symbolic link {display(cur)}", display(cur)
            )


def is_url(name: str) -> bool:
    """True for an fsspec URL (``proto://...``), false for a local path."""
    return "://" in name and not name.startswith("file://")


def resolve(name: str, storage_options: dict[str, Any] | None = None) -> tuple[Any, str]:
    """``(filesystem, path)`` for a local path or an fsspec URL."""
    import fsspec

    if not is_url(name):
        from fsspec.implementations.local import LocalFileSystem

        return LocalFileSystem(), os.path.abspath(name.removeprefix("file://"))
    fs, path = fsspec.core.url_to_fs(name, **(storage_options or {}))
    return fs, path


def is_local(fs: Any) -> bool:
    """True for ``None`` (local paths, without fsspec) and fsspec's local file system: then plain
    ``open``/``os`` calls are used (faster)."""
    if fs is None:
        return True
    from fsspec.implementations.local import LocalFileSystem

    return isinstance(fs, LocalFileSystem)


def open_read(fs: Any, path: str, size: int = -1) -> IO[bytes]:
    """Open ``path`` for reading (a local path only if it is a regular file: :func:`.inputs.open_fd`);
    a local file walked at ``size`` up to :data:`HOLD_BYTES` is read whole at once, without a
    buffered file object (:func:`read_all`)."""
    if not is_local(fs):
        return fs.open(path, "rb")  # type: ignore[no-any-return]
    if not 0 <= size <= HOLD_BYTES:
        return open_input(path)
    fd = open_fd(path)
    try:
        return io.BytesIO(read_all(fd, size))
    finally:
        os.close(fd)


def read_all(fd: int, size: int) -> bytes:
    """The rest of the file open on ``fd``, expected to be ``size`` bytes: one ``read`` when it is
    (one byte more is asked for, so a file that grew is read on to its end, as is one that reads short)."""
    first = os.read(fd, size + 1)
    if len(first) == size:
        return first
    parts = [first]
    while block := os.read(fd, 1024 * 1024):
        parts.append(block)
    return b"".join(parts)


def join(base: str, rel: str) -> str:
    """``rel`` under ``base`` (a local path or URL; the root ``/`` stays the root)."""
    return posixpath.join(base.rstrip("/") or "/", rel) if base else rel


class Patterns:
    """Glob patterns compiled once: a pattern with a ``/`` matches the relative path, others the name."""

    def __init__(self, patterns: Sequence[str]) -> None:
        on_rel = [fnmatch.translate(p) for p in patterns if "/" in p]
        on_base = [p for p in patterns if "/" not in p]
        self.rel = re.compile("|".join(on_rel)).match if on_rel else None
        # "*" and a literal ending ("*.json", ...; a "[" may be a literal one: taken as a wildcard, to be safe)
        ends = tuple(p[1:] for p in on_base if p.startswith("*") and not {"*", "?", "["}.intersection(p[1:]))
        if on_base and len(ends) == len(on_base):  # what fnmatch matches there: a name's literal ending
            self.base: Callable[[str], object] | None = methodcaller("endswith", ends)
        else:
            self.base = re.compile("|".join(map(fnmatch.translate, on_base))).match if on_base else None

    def match(self, rel: str, base: str) -> bool:
        return bool((self.base is not None and self.base(base)) or (self.rel is not None and self.rel(rel)))


def walk_store(
    fs: Any, root: str, include: Sequence[str], exclude: Sequence[str], backup: str | None = None
) -> list[tuple[str, str, int]]:
    """``(path, path relative to root, size)`` of the input files under ``root``, sorted.

    The same rules as the local walk: temporary files, the rejects file and excluded
    directories are skipped; ``include`` and ``exclude`` match the name or (with a ``/``)
    the relative path.
    """
    inc, exc = Patterns(include), Patterns(exclude)
    found = fs.find(root, detail=True, withdirs=False)
    out: list[tuple[str, str, int]] = []
    prefix = root.rstrip("/") + "/"
    for path, info in found.items():
        if info.get("type", "file") != "file" or not path.startswith(prefix):
            continue
        rel = path[len(prefix) :]
        parts = rel.split("/")
        name = parts[-1]
        if name.startswith(TEMP_PREFIX) or name in OWN_NAMES or (backup and name.endswith(backup)):
            continue
        if any(exc.match("/".join(parts[: i + 1]), parts[i]) for i in range(len(parts) - 1)):
            continue
        if not inc.match(rel, name) or exc.match(rel, name):
            continue
        out.append((path, rel, int(info.get("size") or 0)))
    out.sort(key=lambda t: t[1].split("/"))
    return out


def run_id(dask: bool) -> str:
    """A run's name in its temporaries: ``dask-<random>`` for the Dask engine (its workers may be
    elsewhere), else ``<pid>-<random>``: a local run's temporaries name its process, so a later
    run removes them once it is gone and leaves a live one's alone (:func:`.files.clean_stale_temps`;
    ``--in-place`` takes no lock)."""
    return f"dask-{secrets.token_hex(4)}" if dask else f"{os.getpid()}-{secrets.token_hex(4)}"


def temp_path(dst: str, run: str, piece: str) -> str:
    """A temporary key beside ``dst`` for this run (:func:`run_id`) and piece, its name at most 255
    bytes (a file name's limit; a local name's bytes as walked, undecodable ones included)."""
    d, sep, name = dst.rpartition("/")  # the directory as ``dst`` spells it, then the temporary's name
    head = f"{TEMP_PREFIX}{run}-{piece}-"
    room = 255 - len(head)
    if 4 * len(name) <= room:  # fits whatever its characters (at most 4 bytes each): not cut
        return d + sep + head + name
    tail = name.encode("utf-8", "surrogateescape")[:room]
    return d + sep + head + tail.decode("utf-8", "surrogateescape")


def parents(paths: Iterable[str]) -> set[str]:
    """The distinct ``os.path.dirname`` of local ``paths``, taken once per directory (the files of
    one directory share their path up to its last ``/``, and only that part names the directory)."""
    return {os.path.dirname(head) for head in {d + sep for d, sep, _ in map(_SPLIT_NAME, paths)}}


_SPLIT_NAME = methodcaller("rpartition", "/")
"""A path's ``(directory, "/", name)`` (its directory as spelled: ``directory + "/"``): ``rpartition``
parses no argument tuple, as ``rfind`` does; cheaper than it and two slices, four times a small file."""


HOLD_BYTES = 64 * 1024
"""A local output whose input is at most this large is held in memory and its temporary created,
written and closed in one go at its end (:class:`HeldTemp`) ..."""
SPILL_BYTES = 256 * 1024
"""... unless it grows past this: then its temporary is created and written as it comes."""

_PREPARED: dict[str, set[str]] = {}
"""The local output directories (each as its files' paths spell it up to their last ``/``) a run
(by :func:`run_id`) prepared in this process: only the latest run's are kept (a run's checks are
never taken for another's)."""


def prepare_dir(path: str, root: str | None, run: str | None) -> None:
    """Make the local directory of the output ``path``, never through a symbolic link below
    ``root`` (:func:`refuse_links`); once per directory and ``run`` in this process."""
    d, sep, _ = path.rpartition("/")
    head = d + sep
    done = _PREPARED.get(run) if run is not None else None
    if done is not None and head in done:
        return
    parent = os.path.dirname(head)
    if root is not None:
        refuse_links(Path(root), Path(parent))
    os.makedirs(parent, exist_ok=True)
    if run is not None:
        if done is None:
            _PREPARED.clear()
            done = _PREPARED[run] = set()
        done.add(head)


def create_new(path: str, mode: int | None) -> int:
    """A descriptor on the new local file ``path``, with ``mode`` (set always: the umask, or a
    directory's default ACL, masked the create mode). ``O_EXCL``: never through a link, never over
    a file; a file of that name is this run's own temporary left by a task run again (its names
    are unique per run and piece), removed first.

    Raises:
        OSError: nothing is left behind.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o666)
    except FileExistsError:
        os.unlink(path)
        fd = os.open(path, flags, 0o666)
    if mode is not None:
        try:
            os.fchmod(fd, mode)
        except BaseException:
            os.close(fd)
            remove(None, path)
            raise
    return fd


def write_new(path: str, data: bytes, mode: int | None, durable: bool = False) -> None:
    """Create the local file ``path`` holding ``data`` (:func:`create_new`), fsynced if ``durable``.

    Raises:
        OSError: nothing is left behind.
    """
    fd = create_new(path, mode)
    try:
        written = os.write(fd, data) if data else 0  # all of it on a local disk, but for a full disk or a signal
        if written < len(data):
            view = memoryview(data)[written:]
            while view:
                view = view[os.write(fd, view) :]
        if durable:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        remove(None, path)
        raise
    os.close(fd)


class HeldTemp:
    """A new local temporary held in memory and created, written, given its mode and closed in one
    go by :meth:`close` (four system calls; none for one never closed); past :data:`SPILL_BYTES`
    it is created and written as it comes."""

    def __init__(self, path: str, mode: int | None) -> None:
        self.path = path
        self.mode = mode
        self.held: list[bytes] | None = []
        self.size = 0
        self.fh: IO[bytes] | None = None

    def write(self, b: bytes) -> int:
        if self.held is None:
            assert self.fh is not None, "written after close"
            return self.fh.write(b)
        self.held.append(b)
        self.size += len(b)
        if self.size > SPILL_BYTES:  # larger than it looked: written as it comes from now on
            self.fh = os.fdopen(create_new(self.path, self.mode), "wb", buffering=1024 * 1024)
            held, self.held = self.held, None
            for part in held:
                self.fh.write(part)
        return len(b)

    def flush(self) -> None:
        if self.fh is not None:
            self.fh.flush()

    def close(self, durable: bool = False) -> None:
        """Create and write the file if it is still held (once); ``durable``: fsync it."""
        held, self.held = self.held, None
        if held is not None:
            write_new(self.path, b"".join(held), self.mode, durable)
        elif self.fh is not None:
            fh, self.fh = self.fh, None
            try:
                fh.flush()
                if durable:
                    os.fsync(fh.fileno())
            finally:
                fh.close()


def open_write(fs: Any, path: str, root: str | None = None, *, mode: int | None, run: str | None = None) -> IO[bytes]:
    """Open the new temporary ``path`` for writing, creating its directory; on a local disk with
    ``root`` (the ``--out`` directory) never through a symbolic link below ``root``, the directory
    prepared once per ``run`` (:func:`prepare_dir`), the file created with ``mode`` (:func:`create_new`;
    required: the commit renames an output, it does not set its mode)."""
    if is_local(fs):
        prepare_dir(path, root, run)
        return os.fdopen(create_new(path, mode), "wb", buffering=1024 * 1024)
    with contextlib.suppress(Exception):
        fs.makedirs(posixpath.dirname(path), exist_ok=True)
    return fs.open(path, "wb")  # type: ignore[no-any-return]


def open_output(
    fs: Any, path: str, root: str | None, *, mode: int | None, size: int, run: str | None
) -> IO[bytes] | HeldTemp:
    """:func:`open_write` for the output of an input of ``size`` bytes: on a local disk, held in
    memory until closed (:class:`HeldTemp`) when that is at most :data:`HOLD_BYTES`."""
    if 0 <= size <= HOLD_BYTES and is_local(fs):
        prepare_dir(path, root, run)
        return HeldTemp(path, mode)
    return open_write(fs, path, root, mode=mode, run=run)


def close_durable(fs: Any, fh: IO[bytes]) -> None:
    """Close a file from :func:`open_write`; on local disks flush and fsync it first."""
    if is_local(fs):
        fh.flush()
        os.fsync(fh.fileno())
    fh.close()


def _syncfs(path: str) -> bool:
    """Flush the whole file system holding ``path`` (Linux ``syncfs``): one call for many files."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.syncfs(fd) == 0)
    except (OSError, AttributeError):
        return False
    finally:
        os.close(fd)


def sync_local_files(paths: list[str]) -> None:
    """Make closed local files durable: one ``syncfs`` per file system, else an fsync each.

    Needs no fsspec: the local engine uses it too (one sync per commit batch).
    """
    if not paths:
        return
    roots: dict[int, str] = {}
    for d in {d or "." for d in parents(paths)}:  # a stat per directory, not per file
        with contextlib.suppress(OSError):
            roots.setdefault(os.stat(d).st_dev, d)
    if roots and all(_syncfs(d) for d in roots.values()):
        return
    for p in paths:
        with contextlib.suppress(FileNotFoundError), open(p, "rb+") as fh:
            os.fsync(fh.fileno())


def sync_written(fs: Any, paths: list[str]) -> None:
    """Make files closed with ``fh.close()`` durable: one ``syncfs`` per file system, else an fsync each.

    Object stores need nothing: an object exists only once completely written.
    """
    if paths and is_local(fs):
        sync_local_files(paths)


def fsync_dir(d: str | os.PathLike[str]) -> None:
    """fsync a directory (its entries are durable); a file system that cannot is passed over."""
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


def commit(fs: Any, tmp: str, dst: str, mode: int | None = None, sync_dir: bool = True) -> None:
    """Move a complete, durable temporary file or object to its destination (atomic per file).

    With ``sync_dir=False`` the caller fsyncs the directories once per batch (:func:`sync_dirs`).
    """
    if is_local(fs):
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, dst)
        if sync_dir:
            fsync_dir(os.path.dirname(dst))
    else:
        fs.mv(tmp, dst)


def sync_local_dirs(paths: list[str]) -> None:
    """fsync each distinct parent directory of local ``paths`` once (their renames or links become durable)."""
    for d in sorted({d or "." for d in parents(paths)}):
        fsync_dir(d)


def sync_dirs(fs: Any, paths: list[str]) -> None:
    """fsync each distinct parent directory of ``paths`` once (the renames become durable)."""
    if is_local(fs):
        sync_local_dirs(paths)


def remove(fs: Any, path: str) -> None:
    """Delete a file or object if it exists."""
    with contextlib.suppress(FileNotFoundError, OSError):
        if is_local(fs):
            os.unlink(path)
        else:
            fs.rm(path)


def leftovers(fs: Any, root: str, run: str | None = None, dirs: set[str] | None = None) -> list[str]:
    """Temporary files of the piece driver under ``root``: of one ``run`` (:func:`run_id`), or of any
    Dask run.

    On a local disk only ``dirs`` (the output directories) are listed when given; an
    object store is listed once under ``root``.
    """
    prefix = f"{TEMP_PREFIX}{run}-" if run else DASK_TEMP_PREFIX
    if dirs is not None and is_local(fs):
        out: list[str] = []
        for d in sorted(dirs):
            try:
                with os.scandir(d) as it:
                    out.extend(e.path for e in it if e.name.startswith(prefix) and e.is_file(follow_symlinks=False))
            except OSError:
                continue
        return sorted(out)
    try:
        found = fs.find(root, withdirs=False)
    except (FileNotFoundError, OSError):
        return []
    return sorted(p for p in found if posixpath.basename(p).startswith(prefix))


def copy_file(
    src_fs: Any,
    src: str,
    dst_fs: Any,
    tmp: str,
    root: str | None = None,
    mode: int | None = None,
    size: int = -1,
    run: str | None = None,
) -> None:
    """Copy ``src`` (walked at ``size``) byte for byte to the new temporary ``tmp``, with ``mode``
    (for an unchanged file; ``root``, ``run``: :func:`open_output`)."""
    with open_read(src_fs, src, size) as r:
        w = open_output(dst_fs, tmp, root, mode=mode, size=size, run=run)
        try:
            shutil.copyfileobj(r, w, 1 << 20)
            w.close()
        except BaseException:
            with contextlib.suppress(Exception):
                w.close()
            remove(dst_fs, tmp)
            raise
