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
import os
import posixpath
import re
import secrets
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from ..excerpt import display_path as display
from .constants import OWN_NAMES, TEMP_PREFIX
from .inputs import open_input

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


def open_read(fs: Any, path: str) -> IO[bytes]:
    """Open ``path`` for reading (a local path only if it is a regular file: :func:`.inputs.open_input`)."""
    if is_local(fs):
        return open_input(path)
    return fs.open(path, "rb")  # type: ignore[no-any-return]


def join(base: str, rel: str) -> str:
    return posixpath.join(base.rstrip("/"), rel) if base else rel


class Patterns:
    """Glob patterns compiled once: a pattern with a ``/`` matches the relative path, others the name."""

    def __init__(self, patterns: Sequence[str]) -> None:
        on_rel = [fnmatch.translate(p) for p in patterns if "/" in p]
        on_base = [fnmatch.translate(p) for p in patterns if "/" not in p]
        self.rel = re.compile("|".join(on_rel)).match if on_rel else None
        self.base = re.compile("|".join(on_base)).match if on_base else None

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
    parent, name = posixpath.split(dst)
    head = f"{TEMP_PREFIX}{run}-{piece}-"
    tail = name.encode("utf-8", "surrogateescape")[: 255 - len(head)]
    return posixpath.join(parent, head + tail.decode("utf-8", "surrogateescape"))


def open_write(fs: Any, path: str, root: str | None = None) -> IO[bytes]:
    """Open ``path`` for writing, creating its directory; on a local disk with ``root`` (the ``--out``
    directory), never through a symbolic link below ``root`` (:func:`refuse_links`)."""
    parent = posixpath.dirname(path)
    if is_local(fs):
        if root is not None:
            refuse_links(Path(root), Path(parent))
        os.makedirs(parent, exist_ok=True)
        return open(path, "wb", buffering=1024 * 1024)
    with contextlib.suppress(Exception):
        fs.makedirs(parent, exist_ok=True)
    return fs.open(path, "wb")  # type: ignore[no-any-return]


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
    for d in {os.path.dirname(p) or "." for p in paths}:  # a stat per directory, not per file
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
    for d in sorted({os.path.dirname(p) or "." for p in paths}):
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


def copy_file(src_fs: Any, src: str, dst_fs: Any, tmp: str, root: str | None = None) -> None:
    """Copy ``src`` byte for byte to the temporary ``tmp`` (for an unchanged file; ``root``: :func:`open_write`)."""
    with open_read(src_fs, src) as r:
        w = open_write(dst_fs, tmp, root)
        try:
            shutil.copyfileobj(r, w, 1 << 20)
            w.close()
        except BaseException:
            with contextlib.suppress(Exception):
                w.close()
            remove(dst_fs, tmp)
            raise


def file_mode(fs: Any, path: str) -> int | None:
    """The permission bits of a local file (``None`` on object stores)."""
    if not is_local(fs):
        return None
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return None
