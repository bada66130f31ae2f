"""The one bounded reader of TOML files: configuration, mapping overlays, declarations, proxy configs.

Every TOML file envglot reads is data someone else may have written, so each goes through
here once, before anything else looks at it:

- **a regular file** (a FIFO, a socket, a device such as ``/dev/zero`` or a directory is
  refused, never opened for a blocking or endless read), **at most** :data:`MAX_TOML_BYTES`
  (read with a cap, so a file that grows while it is read is still bounded);
- **UTF-8 TOML**, nested at most :data:`MAX_TOML_DEPTH` levels: tables, arrays and inline
  tables, and the segments of one dotted key (``a.b.c``), are counted by a scan of the text
  *before* it is parsed (``tomllib`` recurses per level and joins dotted keys in quadratic
  time);
- **values envglot can hold**: integers in TOML's own 64-bit range (the spec asks a parser to
  refuse others; ``tomllib`` does not), floats finite (no setting of envglot is ``inf`` or
  ``nan``).

A refusal is an :class:`~envglot.errors.EnvglotError` (of the caller's class) naming the file,
the line where it can be found, and the key's JSON path; never a traceback.
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Callable
from typing import Any

from .errors import EnvglotError
from .excerpt import excerpt, key_segment

__all__ = [
    "INT_MAX",
    "INT_MIN",
    "MAX_TOML_BYTES",
    "MAX_TOML_DEPTH",
    "key_line",
    "load_toml",
    "open_regular",
    "parse_toml",
    "read_regular",
    "untrusted",
    "validation_line",
]

MAX_TOML_BYTES = 512 * 1024
"""The largest TOML file envglot reads (512 KiB; the largest bundled table is 16 kB)."""
MAX_TOML_DEPTH = 16
"""The deepest nesting of tables, arrays and dotted-key segments in a TOML file."""
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
"""TOML's integer range (64-bit signed)."""

_KIND = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFDIR: "a directory",
}


def open_regular(path: str | os.PathLike[str], what: str, error: type[EnvglotError] = EnvglotError) -> int:
    """A file descriptor of ``path`` opened for reading, refused unless it is a regular file.

    Opened non-blocking (a FIFO with no writer does not block the open), then checked with
    ``fstat`` on the descriptor itself (no race with a file swapped in between).
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise error(f"cannot read {what}: {exc.strerror or exc}", source=str(path)) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = _KIND.get(stat.S_IFMT(mode), "a special file")
        raise error(f"cannot read {what}: it is {kind}, not a regular file", source=str(path))
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return fd


def read_upto(fd: int, size: int, first: int = 1 << 16) -> bytes:
    """At most ``size`` bytes of the file open at ``fd``, from its position to its end: a first
    read of ``first`` bytes (a regular file's size and one, where known), then reads of 64 KiB (a
    read of ``size`` at once would allocate that much however small the file)."""
    chunks: list[bytes] = []
    got, ask = 0, max(first, 1 << 16)
    while got < size:
        chunk = os.read(fd, min(size - got, ask))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
        ask = 1 << 16
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_regular(
    path: str | os.PathLike[str],
    what: str,
    *,
    limit: int = MAX_TOML_BYTES,
    error: type[EnvglotError] = EnvglotError,
    check: Callable[[os.stat_result], None] | None = None,
) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them (more is an ``error``).

    ``check`` sees the opened file's ``fstat`` before anything is read (and may raise). Read
    until the end of the file or ``limit + 1`` bytes, in reads sized by ``fstat`` (a read of
    ``limit + 1`` bytes at once would allocate that much for a file of a few kilobytes).
    """
    fd = open_regular(path, what, error)
    try:
        st = os.fstat(fd)
        if check is not None:
            check(st)
        buf = read_upto(fd, limit + 1, st.st_size + 1)
    except OSError as exc:
        raise error(f"cannot read {what}: {exc.strerror or exc}", source=str(path)) from None
    finally:
        os.close(fd)
    if len(buf) > limit:
        raise error(f"{what} is larger than {limit:,} bytes (the limit for a TOML file)", source=str(path))
    return buf


def untrusted(st: os.stat_result) -> str | None:
    """Why a file with this status is not the user's own, or None (git's ``safe.directory`` rule).

    It must belong to the current user or root and be writable by neither its group nor
    others. Platforms without user ids (Windows) have no such rule.
    """
    if not hasattr(os, "geteuid"):
        return None
    me = os.geteuid()
    if st.st_uid not in (me, 0):
        return f"owned by uid {st.st_uid}, not by you (uid {me}) or root"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"writable by others than its owner (mode {stat.filemode(st.st_mode)})"
    return None


def load_toml(
    path: str | os.PathLike[str], what: str, *, error: type[EnvglotError] = EnvglotError
) -> tuple[bytes, dict[str, Any]]:
    """``(bytes, document)`` of the TOML file ``path``, read and parsed within every limit above."""
    buf = read_regular(path, what, error=error)
    return buf, parse_toml(buf, str(path), error=error)


_SCAN = (
    r'"""(?:[^\\]|\\.)*?"""(?!")|\'\'\'.*?\'\'\'(?!\')'  # multi-line strings
    r'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*'  # strings and comments
    r"|[\[{]|[\]}]|\.|[,=\n]"
)
"""The tokens the depth scan looks at (compiled on first use: importing envglot stays cheap)."""


def _scan_depth(text: str) -> tuple[int, str] | None:
    """``(line, what)`` of the first nesting deeper than :data:`MAX_TOML_DEPTH` (strings and comments skipped)."""
    depth = dots = 0
    for m in re.compile(_SCAN, re.S).finditer(text):  # (re caches the compiled pattern)
        tok = m.group()
        c = tok[0]
        if c in "[{":
            depth += 1
            dots = 0
            if depth > MAX_TOML_DEPTH:
                return text.count("\n", 0, m.start()) + 1, f"more than {MAX_TOML_DEPTH} nested arrays or tables"
        elif c in "]}":
            depth = max(depth - 1, 0)
            dots = 0
        elif c == ".":
            dots += 1
            if dots >= MAX_TOML_DEPTH:
                return text.count("\n", 0, m.start()) + 1, f"a dotted key of more than {MAX_TOML_DEPTH} parts"
        elif c in ",=\n":
            dots = 0
    return None


def parse_toml(buf: bytes, source: str, *, error: type[EnvglotError] = EnvglotError) -> dict[str, Any]:
    """The TOML document in ``buf`` (from ``source``), refused past any limit of this module."""
    if len(buf) > MAX_TOML_BYTES:
        raise error(f"larger than {MAX_TOML_BYTES:,} bytes (the limit for a TOML file)", source=source)
    try:
        text = buf.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"not UTF-8 (invalid byte at offset {exc.start})", source=source) from None
    deep = _scan_depth(text)
    if deep is not None:
        raise error(f"nested too deeply: {deep[1]}", source=source, line=deep[0])
    import tomllib  # not imported with envglot: the bundled tables are usually read from the cache

    try:
        doc = tomllib.loads(text)
    except RecursionError:  # the scan above keeps this from happening; a last guard
        raise error(f"nested too deeply (more than {MAX_TOML_DEPTH} levels)", source=source) from None
    except ValueError as exc:  # TOMLDecodeError, and int() refusing an integer of over 4,300 digits
        why = "an integer of more than 4,300 digits" if "int_max_str_digits" in str(exc) else str(exc)
        raise error(f"not a valid TOML file: {excerpt(why, 300)}", source=source) from None
    bad = _bad_value(doc)
    if bad is not None:
        keys, why = bad
        raise error(why, source=source, line=key_line(text, keys), path=_json_path(keys))
    return doc


def _bad_value(doc: dict[str, Any]) -> tuple[tuple[str | int, ...], str] | None:
    """The key path of the first value out of range or nested too deeply, and why (iterative)."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(doc, ())]
    while stack:
        v, keys = stack.pop()
        if isinstance(v, dict | list):
            if len(keys) > MAX_TOML_DEPTH:
                return keys, f"nested more than {MAX_TOML_DEPTH} levels"
            items = v.items() if isinstance(v, dict) else enumerate(v)
            stack.extend((x, (*keys, k)) for k, x in reversed(list(items)))
        elif isinstance(v, bool):
            continue
        elif isinstance(v, int):
            if not INT_MIN <= v <= INT_MAX:
                shown = v if v.bit_length() <= 128 else f"of {v.bit_length()} bits"
                return keys, f"the integer {shown} is outside TOML's range ({INT_MIN} to {INT_MAX})"
        elif isinstance(v, float) and not math.isfinite(v):
            return keys, f"{v} is not accepted (no envglot setting is infinite or not a number)"
    return None


def _json_path(keys: tuple[str | int, ...]) -> str:
    return "$" + "".join(f"[{k}]" if isinstance(k, int) else key_segment(k) for k in keys)


_KEY_PART = r'(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|\'[^\']*\')'
_CHAIN = rf"{_KEY_PART}(?:[ \t]*\.[ \t]*{_KEY_PART})*"
_HEADER = rf"[ \t]*(\[\[?)[ \t]*({_CHAIN})[ \t]*\]"
_ASSIGN = rf"[ \t]*({_CHAIN})[ \t]*="


def _chain(s: str) -> tuple[str, ...]:
    return tuple(p[1:-1] if p[0] in "\"'" else p for p in re.findall(_KEY_PART, s))


def validation_line(text: str, message: str) -> int | None:
    """The line of ``text`` a ``msgspec.ValidationError`` message points at (``- at `$.a[0].b```), best effort."""
    at = re.search(r"- at `(\$[^`]*)`", message)
    field = re.match(r"Object contains unknown field `([^`]*)`", message)
    keys: list[str | int] = []
    for m in re.finditer(r"\.([A-Za-z0-9_-]+)|\[(\d+)\]|\[\.\.\.\]", at.group(1) if at else ""):
        if m.group() == "[...]":  # a value in a table of any keys: the table's line
            break
        keys.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
    else:
        if field is not None:
            keys.append(field.group(1))
    return key_line(text, tuple(keys)) if keys else None


def key_line(text: str, keys: tuple[str | int, ...]) -> int | None:
    """The line of ``text`` that sets ``keys`` (dict keys and array indices), best effort.

    Follows ``[table]`` and ``[[array]]`` headers and ``dotted.keys = ...``; a key inside an
    inline table or array is found at the line of its outermost key.
    """
    want = tuple(keys)
    table: tuple[str | int, ...] = ()
    arrays: dict[tuple[str | int, ...], int] = {}
    for n, line in enumerate(text.splitlines(), 1):
        h = re.match(_HEADER, line)
        if h is not None:
            name: tuple[str | int, ...] = _chain(h.group(2))
            if h.group(1) == "[[":
                index = arrays.get(name, 0)
                arrays[name] = index + 1
                name = (*name, index)
            table = name
            if want[: len(table)] == table and len(want) == len(table):
                return n
            continue
        a = re.match(_ASSIGN, line)
        if a is not None:
            full = (*table, *_chain(a.group(1)))
            if want[: len(full)] == full:
                return n
    return None
