"""The CLI's inputs: files and folders, stdin, and the JSON Lines rule (one document or one per line)."""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import BinaryIO, NamedTuple

import click
import msgspec

from ..excerpt import display_path
from . import exits

__all__ = [
    "JSONL_SUFFIXES",
    "STDIN_NAME",
    "Record",
    "expand_folders",
    "is_jsonl_name",
    "open_input",
    "read_records",
    "split_stream",
    "try_open",
]

STDIN_NAME = "<stdin>"
"""How standard input is named in messages and ``--log`` records."""
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".log")
"""Always JSON Lines (a ``.log`` too: a corrupt first line must not make it one document)."""
_RAW = msgspec.json.Decoder(msgspec.Raw)


class Record(NamedTuple):
    """One JSON document of an input: the whole file, or one line of a JSON Lines file."""

    data: bytes
    line: int | None
    """1-based line number for JSON Lines input, ``None`` for a whole-file document."""


def is_jsonl_name(name: str) -> bool:
    """True for ``*.jsonl`` / ``*.ndjson`` / ``*.log`` file names (and their ``.gz`` forms)."""
    return name.lower().removesuffix(".gz").endswith(JSONL_SUFFIXES)


def expand_folders(paths: Sequence[str]) -> tuple[list[str], int]:
    """``paths`` with each folder replaced by the files ``migrate`` takes from it (recursively,
    its filters: ``*.json``, ``*.jsonl``, ``*.ndjson`` and their ``.gz``), and how many folders
    could not be read (each reported on stderr; the caller counts them: exit 66)."""
    out: list[str] = []
    unreadable = 0
    for p in paths:
        if p == "-" or not os.path.isdir(p):
            out.append(p)
            continue
        from ..migration import input_files

        files, failures = input_files(p)
        out += files
        for f in failures:
            click.echo(f"{f.file}: error: {f.error}", err=True)
        unreadable += len(failures)
    return out, unreadable


def try_open(path: str) -> tuple[str, BinaryIO] | None:
    """``(display name, binary stream)`` for ``path`` or ``-`` (stdin); prints the error and
    returns ``None`` if the file cannot be opened (the caller counts it: exit 66)."""
    if path == "-":
        return STDIN_NAME, sys.stdin.buffer
    name = display_path(path)
    try:
        if path.endswith(".gz"):
            import gzip

            return name, gzip.open(path, "rb")  # type: ignore[return-value]
        return name, open(path, "rb")
    except OSError as exc:
        click.echo(f"{name}: error: cannot read input: {exc.strerror}", err=True)
        return None


@contextlib.contextmanager
def open_input(path: str) -> Iterator[tuple[str, BinaryIO]]:
    """``(display name, binary stream)`` for ``path`` or ``-`` (stdin); exits 66 if unreadable."""
    opened = try_open(path)
    if opened is None:
        sys.exit(exits.EX_NOINPUT)
    name, f = opened
    try:
        yield name, f
    finally:
        if f is not sys.stdin.buffer:
            f.close()


def _parses(line: bytes) -> bool:
    try:
        _RAW.decode(line)  # syntax only: a document's encoding and depth are the core's to judge
    except (msgspec.DecodeError, RecursionError):
        return False
    return True


def read_records(stream: BinaryIO, name: str, jsonl: bool | None = None) -> tuple[bool, Iterator[Record]]:
    """Split an input into documents: ``(is_jsonl, records)``.

    The input is JSON Lines when ``jsonl`` is true, when ``name`` ends in ``.jsonl`` or
    ``.ndjson``, or when its first non-blank line is a complete JSON value on its own and
    at least one more non-blank line follows (a pretty-printed document's first line,
    ``{``, never parses alone). JSON Lines are streamed line by line (blank lines are
    skipped, line numbers count every physical line); anything else is one document.
    """
    if jsonl is None and is_jsonl_name(name):
        jsonl = True
    if jsonl:
        return True, _lines(iter(stream), 0)
    head: list[bytes] = []
    it = iter(stream)
    first = None
    for raw in it:
        head.append(raw)
        if raw.strip():
            first = raw
            break
    if first is not None and jsonl is None and _parses(first):
        for raw in it:
            head.append(raw)
            if raw.strip():
                return True, _chain_lines(head, it)
    data = b"".join(head) + stream.read()
    docs = split_stream(data)
    if docs is not None:
        return True, iter(docs)
    return False, iter((Record(data, None),))


_TRAILING = re.compile(r"trailing characters \(byte (\d+)\)")
_SPACE = re.compile(rb"[ \t\r\n]*")
_BOM = b"\xef\xbb\xbf"


def split_stream(data: bytes) -> list[Record] | None:
    """The documents of a jq-style stream (JSON values one after another, pretty-printed or not).

    ``None`` when ``data`` holds one document (or is not JSON at all: the reader reports it).
    Each record's line is the line its document starts on; a document that does not parse
    ends the split and is kept whole with the rest of the input, to be reported there.
    """
    mv = memoryview(data)
    bom = 3 if data.startswith(_BOM) else 0
    pos = bom
    out: list[Record] = []
    while True:
        pos = _SPACE.match(data, pos).end()  # type: ignore[union-attr]
        if pos >= len(data):
            break
        end = len(data)
        try:
            _RAW.decode(mv[pos:])
        except msgspec.DecodeError as exc:
            m = _TRAILING.search(str(exc))
            if m is None:
                if not out:
                    return None
                out.append(Record(bytes(mv[pos:]), data.count(b"\n", 0, pos) + 1))
                break
            end = pos + int(m.group(1)) - 1  # msgspec counts the offending byte 1-based
        except RecursionError:  # too deep to split: one document, the core names the limit
            return None if not out else [*out, Record(bytes(mv[pos:]), data.count(b"\n", 0, pos) + 1)]
        start = 0 if not out else pos  # the first record keeps a byte order mark for the core to report
        out.append(Record(bytes(mv[start:end]), data.count(b"\n", 0, pos) + 1))
        if end == len(data) and not out[1:]:
            return None
        pos = end
    return out if len(out) > 1 else None


def _chain_lines(head: list[bytes], it: Iterator[bytes]) -> Iterator[Record]:
    yield from _lines(iter(head), 0)
    yield from _lines(it, len(head))


def _lines(it: Iterable[bytes], start: int) -> Iterator[Record]:
    n = start
    for raw in it:
        n += 1
        data = raw.rstrip(b"\r\n")
        if data.strip():
            yield Record(data, n)
