"""The walk: which input files a run takes, in which order, and where each output goes — local
paths (with their special-file and link rules) and fsspec URLs — and the checks on the
destinations made before anything is written."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec

from ..excerpt import display_path as display
from . import fs as store
from .constants import DEFAULT_INCLUDE, OWN_NAMES, REJECTS_NAME, TEMP_PREFIX, Mode
from .files import MigrationError, read_error
from .fs import Patterns, SymlinkRefusedError, refuse_links
from .inputs import entry_source
from .report import FileFailure


class Job(msgspec.Struct):
    src: str | None
    """None for stdin."""
    name: str
    """How the input is named in reports and rejects (the path as walked, or ``<stdin>``)."""
    dst: str | None
    """Output path (``--out`` and in-place); None for stdout or a dry run."""
    doc: bool
    gz: bool
    size: int
    perm: int = -1
    """The input's permission bits as walked (its output gets them); -1 when unknown."""
    regular: bool = False
    """The input was a regular file when walked (only such a file is read whole at once)."""


class FileSpec(msgspec.Struct, frozen=True):
    """One input file: where it is read, how it is named, where its output goes."""

    index: int
    name: str
    """As in reports and rejects (the path or URL as walked)."""
    src: str
    dst: str | None
    """Output path in the destination store; None for a dry run."""
    doc: bool
    gz: bool
    size: int
    mode: int | None = None
    """Permission bits given to the output (local inputs)."""
    shown: str | None = None
    """The output as named in the report (the ``out`` given, joined with the relative path)."""


def known_bytes(files: Iterable[FileSpec]) -> int:
    """The sizes of ``files`` summed, an unknown one (-1) as 0 (in C: no Python call per file)."""
    return sum(filter(_POSITIVE, map(_SIZE, files)))


_SIZE = attrgetter("size")
_POSITIVE = (0).__lt__


def kind_of(name: str) -> tuple[bool, bool]:
    """``(is a .json document, is gzip)`` of the file ``name``, at once."""
    gz = name.endswith(".gz")
    return (name[:-3] if gz else name).endswith(".json"), gz


_NAME = attrgetter("name")


def _scan(
    top: str, onerror: Callable[[OSError], None], keep_dir: Callable[[str, str, str], bool]
) -> Iterator[tuple[str, str, list[os.DirEntry[str]]]]:
    """``os.walk`` for the engine: ``(directory, its path relative to top, its files' entries)``,
    top-down, names sorted; ``keep_dir(path, rel, name)`` prunes. A linked directory is not
    entered (as ``os.walk`` without ``followlinks``); entries keep their type, so no file
    needs a ``stat`` to be classified."""
    todo = [(top, "")]
    while todo:
        here, rel = todo.pop()
        try:
            with os.scandir(here) as it:
                entries = sorted(it, key=_NAME)
        except OSError as exc:
            onerror(exc)
            continue
        files, subdirs = [], []
        for e in entries:
            try:
                is_dir = e.is_dir()
            except OSError:
                is_dir = False
            if not is_dir:
                files.append(e)
            elif not e.is_symlink():
                sub = f"{rel}/{e.name}" if rel else e.name
                if keep_dir(e.path, sub, e.name):
                    subdirs.append((e.path, sub))
        yield here, rel, files
        todo.extend(reversed(subdirs))


def walk_inputs(
    inputs: Sequence[str],
    out: Path | None,
    include: Sequence[str],
    exclude: Sequence[str],
    skip: set[Path],
    backup: str | None,
    follow_symlinks: bool = False,
) -> tuple[list[Job], list[FileFailure]]:
    """The input files in order, and the inputs not read (exit 66): unreadable directories, and
    walked entries that are no regular file or a link not followed (:func:`.inputs.entry_source`).

    Paths are spelled as :mod:`pathlib` spells them (``./x`` is ``x``), built as strings: a
    ``Path`` per argument, none per walked file."""
    jobs: list[Job] = []
    unreadable: list[FileFailure] = []
    in_place = backup is not None
    out_res = out.resolve() if out is not None else None
    out_s = os.fspath(out) if out is not None else None
    skip_names = {p.name for p in skip}  # only a file with such a name is resolved (a syscall per component)
    inc, exc = Patterns(include), Patterns(exclude)
    excluded = exc.match if exclude else None
    head = _head(out_s) if out_s is not None else None  # a walked file's output is head + its rel

    def onerror(exc: OSError) -> None:
        unreadable.append(FileFailure(file=display(str(exc.filename)), error=read_error(exc), exit_code=66))

    def keep_dir(path: str, rel: str, name: str) -> bool:
        return not (out_res is not None and Path(path).resolve() == out_res) and not exc.match(rel, name)

    for arg in inputs:
        if arg == "-":
            dst = joined(out_s, "stdin.jsonl") if out_s is not None else None
            jobs.append(Job(src=None, name="<stdin>", dst=dst, doc=False, gz=False, size=-1))
            continue
        p = Path(arg)
        if p.is_dir():
            top = str(p)
            root = os.path.realpath(top)
            for _here, relroot, entries in _scan(top, onerror, keep_dir):
                for e in entries:
                    f = e.name
                    if f.startswith(TEMP_PREFIX) or f in OWN_NAMES or (backup and f.endswith(backup)):
                        continue
                    rel = f"{relroot}/{f}" if relroot else f
                    if not inc.match(rel, f) or (excluded is not None and excluded(rel, f)):
                        continue
                    fp = rel if top == "." else e.path  # as pathlib spells it: "./x" is "x"
                    if f in skip_names and Path(fp).resolve() in skip:
                        continue
                    found = entry_source(e, root, follow_symlinks)
                    if isinstance(found, str):
                        unreadable.append(FileFailure(file=display(fp), error=found, exit_code=66))
                        continue
                    src, st = found
                    if in_place:
                        dst = os.path.realpath(fp)
                    else:
                        dst = head + rel if head is not None else None  # joined(out_s, rel)
                    jobs.append(_job(fp, f, dst, st, src if src != e.path else fp))
        elif p.is_file():
            if in_place:
                dst = str(p.resolve())
            else:
                dst = joined(out_s, p.name) if out_s is not None else None
            try:  # named by the user: a link is followed wherever it points
                jobs.append(_job(str(p), p.name, dst, os.stat(p), str(p.resolve()) if p.is_symlink() else str(p)))
            except OSError as err:
                unreadable.append(FileFailure(file=display(p), error=read_error(err), exit_code=66))
        elif p.exists():
            raise MigrationError(f"{display(arg)}: not a regular file or directory", 66)
        elif p.is_symlink():
            why = "symbolic link loop" if _loops(p) else "dangling symbolic link"
            raise MigrationError(f"{display(arg)}: {why}", 66)
        else:
            raise MigrationError(f"{display(arg)}: no such file or directory", 66)
    return jobs, unreadable


def joined(base: str, rel: str) -> str:
    """``base / rel`` as :mod:`pathlib` spells it, for a ``base`` spelled so (``. / x`` is ``x``)."""
    return _head(base) + rel


def _head(base: str) -> str:
    """What :func:`joined` puts before ``rel`` for ``base``."""
    if base == ".":
        return ""
    return base if base.endswith("/") else base + "/"


def _loops(p: Path) -> bool:
    try:
        os.stat(p)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def _job(path: str, base: str, dst: str | None, st: os.stat_result, src: str) -> Job:
    """The job of the walked ``path`` (its last component ``base``), read from ``src`` (``path``,
    or a followed link's target)."""
    mode = st.st_mode
    doc, gz = kind_of(base)
    name = path if path.isascii() else display(path)  # an ASCII name is shown as it is
    return Job(src, name, dst, doc, gz, st.st_size, stat.S_IMODE(mode), stat.S_ISREG(mode))


def input_files(
    folder: str, include: Sequence[str] = DEFAULT_INCLUDE, exclude: Sequence[str] = ()
) -> tuple[list[str], list[FileFailure]]:
    """The files ``migrate`` takes from ``folder`` (the same walk and filters), in its order,
    and the directories that could not be read (for ``detect`` and ``validate``)."""
    jobs, unreadable = walk_inputs([folder], None, tuple(include), tuple(exclude), set(), None)
    return [j.src for j in jobs if j.src is not None], unreadable


def default_rejects(mode: Mode, names: list[str], out_dir: Path | None) -> Path | None:
    """None for a check; ``.envglot-rejects.jsonl`` in ``out``, else in the first input's directory."""
    if mode == "check":
        return None
    if out_dir is not None:
        return out_dir / REJECTS_NAME
    first = next((Path(n) for n in names if n != "-"), None)
    base = Path(".") if first is None else (first if first.is_dir() else first.parent)
    return base / REJECTS_NAME


def check_rejects_path(path: Path, out_dir: Path | None) -> None:
    """Refuse (before anything is written) a rejects file that is a symlink or under a linked directory of ``out``."""
    if path.is_symlink():
        raise MigrationError(f"refusing to write the rejects file through the symbolic link {display(path)}", 74)
    if out_dir is not None:
        try:
            refuse_links(out_dir, path)
        except SymlinkRefusedError as exc:
            raise MigrationError(f"cannot write the rejects file {display(path)}: {exc.strerror}", 74) from None


def check_destinations(jobs: list[Job]) -> None:
    """No two inputs may share an output path, and no input may be its own output.

    Directories are resolved and listed once each (not a syscall per file and path
    component); only an output name already there is compared with its input.
    """
    seen: dict[str, str] = {}
    parents: dict[str, tuple[str, frozenset[str]]] = {}
    for j in jobs:
        if j.dst is None:
            continue
        d, sep, name = j.dst.rpartition("/")
        head = d + sep  # the directory as the path spells it (with its "/"), and the name
        found = parents.get(head)
        if found is None:  # once per directory: where it really is (with a "/"), and what it holds already
            real = os.path.realpath(head or ".")
            try:
                names = frozenset(os.listdir(real))
            except OSError:  # not there yet: nothing in it can be an input
                names = frozenset()
            found = parents[head] = (real if real.endswith("/") else real + "/", names)
        real, names = found
        key = real + name  # os.path.join(real, name)
        if key in seen:
            raise MigrationError(f"{j.name} and {seen[key]} would both be written to {j.dst}", 2)
        if j.src is not None and name in names and _same_file(j.src, key):
            raise MigrationError(f"{j.name} would be written over itself; use in_place=True", 2)
        seen[key] = j.name


def _same_file(src: str, dst: str) -> bool:
    try:
        return os.path.samefile(src, dst)
    except OSError:  # no output yet: it cannot be the input
        return False


def walk_specs(
    names: list[str],
    out: str | None,
    include: Sequence[str] | None,
    exclude: Sequence[str],
    rejects: str | None,
    storage_options: dict[str, Any] | None,
    mode: str,
    follow_symlinks: bool = False,
) -> tuple[Any, list[FileSpec], list[FileFailure]]:
    """The input files (walk order) with their destinations, and unreadable directories."""
    inc = tuple(include) if include else DEFAULT_INCLUDE
    urls = [store.is_url(n) for n in names]
    if any(urls) and not all(urls):
        raise MigrationError("give either local paths or URLs as inputs, not both", 2)
    out_path = store.resolve(out, storage_options)[1] if out is not None and mode == "out" else None
    files: list[FileSpec] = []
    if not any(urls):
        src_fs = store.resolve(".", storage_options)[0]
        skip = {Path(p).resolve() for p in (rejects,) if p is not None and not store.is_url(p)}
        out_local = Path(out) if out is not None and mode == "out" and not store.is_url(out) else None
        jobs, unreadable = walk_inputs(names, out_local, inc, tuple(exclude), skip, None, follow_symlinks)
        # a walked output is joined(out as pathlib spells it, rel): its rel is what follows that
        # prefix, and it is the output as shown (str(Path(out) / rel)); no Path per file
        cut = -1 if out_local is None else _prefix_length(os.fspath(out_local))
        head = store.join(out_path, "") if out_path is not None else ""  # store.join(out_path, rel) is head + rel
        for i, j in enumerate(jobs):
            assert j.src is not None
            dst = shown = None
            if out is not None and out_path is not None:
                if j.dst and cut >= 0:
                    rel, shown = j.dst[cut:], j.dst
                else:
                    rel = _relative(j.name, names)
                    shown = str(Path(out) / rel) if out_local else store.join(out.rstrip("/"), rel)
                dst = head + rel
            src = os.path.abspath(j.src)
            perm = j.perm if j.perm >= 0 else None  # as walked
            files.append(FileSpec(i, j.name, src, dst, j.doc, j.gz, j.size, perm, shown))
        return src_fs, files, unreadable
    src_fs = None
    for n in names:
        fs, path = store.resolve(n, storage_options)
        if src_fs is None:
            src_fs = fs
        elif type(fs) is not type(src_fs):
            raise MigrationError("all input URLs must be on one file system", 2)
        if fs.isdir(path):
            for p, rel, size in store.walk_store(fs, path, inc, tuple(exclude)):
                dst, shown = _dst(out, out_path, rel)
                files.append(_spec(len(files), store.join(n.rstrip("/"), rel), p, dst, size, shown))
        elif fs.isfile(path):
            base = path.rsplit("/", 1)[-1]
            dst, shown = _dst(out, out_path, base)
            files.append(_spec(len(files), n, path, dst, int(fs.size(path) or 0), shown))
        else:
            raise MigrationError(f"{n}: no such file or directory", 66)
    return src_fs, files, []


def _prefix_length(base: str) -> int:
    """How many characters :func:`joined` puts before ``rel`` after ``base``."""
    return len(_head(base))


def check_specs(files: list[FileSpec], src_fs: Any, dst_fs: Any, out: str, out_path: str) -> None:
    """Refuse (before anything is written) an ``out`` that is no directory, two inputs with one
    output, or an input that would be its own output (the walked files of :func:`walk_specs`,
    whose local sources are absolute paths already)."""
    if dst_fs.exists(out_path) and not dst_fs.isdir(out_path):
        raise MigrationError(f"{out} exists and is not a directory", 74)
    seen: dict[str, str] = {}
    local = store.is_local(src_fs) and store.is_local(dst_fs)
    for f in files:
        assert f.dst is not None
        if f.dst in seen:
            raise MigrationError(f"{f.name} and {seen[f.dst]} would both be written to {f.dst}", 2)
        if local and f.dst == f.src:
            raise MigrationError(f"{f.name} would be written over itself; use in_place=True", 2)
        seen[f.dst] = f.name


def _dst(out: str | None, out_path: str | None, rel: str) -> tuple[str | None, str | None]:
    if out is None or out_path is None:
        return None, None
    shown = str(Path(out) / rel) if not store.is_url(out) else store.join(out.rstrip("/"), rel)
    return store.join(out_path, rel), shown


def _spec(i: int, name: str, src: str, dst: str | None, size: int, shown: str | None) -> FileSpec:
    doc, gz = kind_of(src.rsplit("/", 1)[-1])
    return FileSpec(i, name, src, dst, doc, gz, size, None, shown)


def _relative(name: str, inputs: list[str]) -> str:
    """The output path of a walked local file relative to ``out`` (as the local engine mirrors it)."""
    p = Path(name)
    for arg in inputs:
        a = Path(arg)
        if a.is_dir():
            try:
                return p.relative_to(a).as_posix()
            except ValueError:
                continue
    return p.name
