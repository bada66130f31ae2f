"""The checks every input document passes once, before any dialect reads it.

Over 500 lines: the depth guard and the trust checks' one top-level parse share one recursion budget.

envglot reads untrusted bytes. One pass here guarantees what the rest of the pipeline
relies on: the document is valid UTF-8 (so nothing invalid can be copied into an
output through a ``Raw`` payload) and is nested no deeper than ``max_depth`` (so no
decoder or walker can run out of stack). A UTF-8 byte order mark is accepted and
removed. Failures are :class:`~envglot.errors.ParseError` naming the byte offset and
the JSON path.

Cost: ``bytes.isascii`` for the common document; a UTF-8 decode for non-ASCII input, in
pieces of at most ``UTF8_CHUNK`` bytes (:func:`utf8_error`); for
a document longer than twice ``max_depth``, one pass of msgspec's parser skipping it
(:func:`too_deep`), whose own recursion guard stops at ``max_depth`` levels; the token scan
that names the offset and path runs only for a document that is too deep.
"""

from __future__ import annotations

import codecs
import functools
import math
import os
import re
from collections.abc import Callable
from itertools import accumulate
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from .errors import EnvglotError, ParseError
from .excerpt import excerpt, key_segment

if TYPE_CHECKING:
    import ctypes

__all__ = [
    "BOM",
    "MAX_DEPTH",
    "MAX_DEPTH_CEILING",
    "OUTPUT_DEPTH_MARGIN",
    "TOKENS",
    "UTF8_CHUNK",
    "WHOLE_BY_ENCODING",
    "bad_value",
    "check_depth",
    "check_input",
    "check_text",
    "encode_checked",
    "members_of",
    "members_within_depth",
    "path_at",
    "repeated_member",
    "spans_whole",
    "too_deep",
    "top_members",
    "utf8_error",
    "within_depth",
]

_T = TypeVar("_T")

MAX_DEPTH = 256
"""Default nesting limit (objects and arrays), as jq's; ``max_depth=`` changes it."""
MAX_DEPTH_CEILING = 900
"""The highest ``max_depth`` allowed: deeper documents would exhaust the parser's stack
(msgspec and Python's own recursion limit of 1,000)."""
OUTPUT_DEPTH_MARGIN = 8
"""Levels a writer may add above an input's values (a payload wrapped as ``{"value": ...}``,
a residue's ``set`` entries): ``validate`` accepts documents nested this much deeper."""
BOM = b"\xef\xbb\xbf"
UTF8_CHUNK = 4096
"""Bytes :func:`utf8_error` decodes at a time: a piece holding a character above U+00FF is decoded
into a two-bytes-a-character string from that character to the piece's end, so smaller pieces
keep more of a document one byte a character; each piece costs a call and a string (timed:
docs/performance.md, "The UTF-8 check in 4 KiB pieces")."""

_STRING = rb'"[^"\\]*(?:\\.[^"\\]*)*"'
TOKENS = re.compile(_STRING + rb'|"|[\[\]{}:,]', re.S)
"""A JSON string (a lone quote in broken JSON) or a structural byte: what a scan of a document's
structure walks."""
_STRUCTURE_ONLY = bytes(b for b in range(256) if b not in b'[]{}"')
_NOT_OPENING = bytes(b for b in range(256) if b not in b"[{")
_PARENS = bytes.maketrans(b"[{]}", b"(())")
_STEP = [0] * 256
_STEP[ord("(")] = 1
_STEP[ord(")")] = -1
_MAX_SEGMENTS = 12
_UTF8_DECODE = codecs.utf_8_decode


def check_input(buf: bytes, max_depth: int = MAX_DEPTH, *, depth: bool = True) -> tuple[bytes, bool]:
    """``(document without BOM, had a BOM)``; raises :class:`ParseError` on bad encoding or depth.

    An ASCII document is valid UTF-8 and holds no BOM: it comes back as it is (``bytes.isascii``
    is its whole encoding check). Any other is decoded once (in pieces past :data:`UTF8_CHUNK`).
    ``depth=False`` leaves the depth to the caller, who then parses the document first
    through :func:`within_depth` (or calls :func:`check_depth`) before anything else reads it.
    """
    if not 0 < max_depth <= MAX_DEPTH_CEILING:
        raise EnvglotError(f"max_depth must be between 1 and {MAX_DEPTH_CEILING}, not {max_depth}")
    if buf.isascii():  # valid UTF-8 without a BOM (its bytes are not ASCII): returned as it is
        if depth:
            check_depth(buf, max_depth)
        return buf, False
    bom = buf[:3] == BOM
    if bom:
        buf = buf[3:]
    bad = None
    if len(buf) > UTF8_CHUNK:
        bad = utf8_error(buf)
    else:  # one decode, as utf8_error's for a short document; it says where only if it fails
        try:
            buf.decode("utf-8")
        except UnicodeDecodeError:
            bad = utf8_error(buf)
    if bad is not None:
        off, reason = bad
        raise ParseError(
            f"invalid UTF-8 at byte {off + 3 * bom} ({reason}: {excerpt(buf[off : off + 4])})",
            path=path_at(buf, off),
        )
    if depth:
        check_depth(buf, max_depth, bom)
    return buf, bom


def utf8_error(buf: bytes, chunk: int = UTF8_CHUNK) -> tuple[int, str] | None:
    """``(byte offset, reason)`` of the first invalid UTF-8 in ``buf`` as ``bytes.decode`` reports it, or ``None``.

    Decoded ``chunk`` bytes at a time (at least 4: a whole character or an error always fits)
    by the incremental decoder, ``final=False`` until the last piece: a sequence cut by a
    piece's end is left for the next piece, so the answer, offset and reason are those of one
    ``bytes.decode`` of the whole, while no string built is longer than ``chunk`` characters:
    the whole document's string would take up to four bytes a character, which past 128 KB
    is fresh memory from the system on every check (docs/performance.md, "UTF-8 check").
    """
    end = len(buf)
    pos = 0
    try:
        if end <= chunk:
            buf.decode("utf-8")
            return None
        if chunk < 4:
            raise ValueError(f"chunk must be at least 4 bytes, not {chunk}")
        view = memoryview(buf)
        while end - pos > chunk:
            pos += _UTF8_DECODE(view[pos : pos + chunk], "strict", False)[1]
        _UTF8_DECODE(view[pos:], "strict", True)
    except UnicodeDecodeError as exc:
        return pos + exc.start, exc.reason
    return None


def check_depth(buf: bytes, max_depth: int, bom: bool = False) -> None:
    """Raise :class:`ParseError` naming the byte offset and path if ``buf`` nests deeper than ``max_depth``.

    ``bom``: a byte order mark was removed from the front (the offset counts it).
    """
    if len(buf) > 2 * max_depth and too_deep(buf, max_depth):
        off = _too_deep_at(buf, max_depth)
        raise ParseError(
            f"nesting deeper than {max_depth} levels at byte {off + 3 * bom} (the limit is max_depth={max_depth})",
            path=path_at(buf, off),
        )


def within_depth(fn: Callable[[bytes], _T], buf: bytes, max_depth: int, bom: bool = False) -> _T:
    """``fn(buf)`` for a document whose depth is not checked yet, with the parse ``fn`` does as the check.

    ``fn`` must parse all of ``buf`` with msgspec before it returns (a dialect's decoder, or
    ``msgspec.json.format``). It runs with this thread's recursion budget lowered as in
    :func:`too_deep`, so msgspec's own guard stops a document nested ``max_depth`` levels or
    more; if ``fn`` raises anything, the exact check decides: the depth :class:`ParseError`
    first, as :func:`check_input` would have raised it, else ``fn``'s own exception (a
    ``RecursionError`` runs ``fn`` again at the full budget). Where the budget cannot be
    lowered, the exact check runs first.
    """
    if len(buf) <= 2 * max_depth:  # too short to nest max_depth levels
        return fn(buf)
    budget = _BUDGET or _budget()
    cell = budget.cells.cell
    cap = max_depth + budget.slack - 1
    if cell is None or cap < 1 or (saved := cell.value) <= cap:
        check_depth(buf, max_depth, bom)
        return fn(buf)
    cell.value = cap
    try:
        return fn(buf)
    except Exception as exc:
        failed = exc
    finally:
        cell.value = saved
    check_depth(buf, max_depth, bom)
    if isinstance(failed, RecursionError):
        return fn(buf)
    raise failed


def members_within_depth(
    buf: bytes, max_depth: int, parse: Callable[[bytes], dict[str, msgspec.Raw]] | None = None
) -> tuple[dict[str, msgspec.Raw] | None, bool]:
    """``(top-level members, depth checked)`` of a document whose depth is not checked yet.

    The members are :func:`top_members` (``None`` when it raises: not an object, broken, or
    deeper than the interpreter allows), parsed as :func:`within_depth` parses: when that parse
    went through all of ``buf`` under the lowered budget, ``buf`` nests no deeper than
    ``max_depth`` and the second member is ``True``. Otherwise nothing is raised and nothing
    is proved (``False``): the caller's first full parse still goes through :func:`within_depth`.
    ``parse``: another msgspec parse of all of ``buf`` giving its members
    (:meth:`~envglot.wire.WireDecoder.top_parser`; ``None`` also when it refuses them).
    """
    read = top_members if parse is None else parse
    if len(buf) <= 2 * max_depth:  # too short to nest max_depth levels
        try:
            return read(buf), True
        except msgspec.DecodeError:
            return None, True
    budget = _BUDGET or _budget()
    cell = budget.cells.cell
    cap = max_depth + budget.slack - 1
    if cell is None or cap < 1 or (saved := cell.value) <= cap:
        return members_of(buf, read), False
    cell.value = cap
    try:
        return read(buf), True
    except msgspec.DecodeError:
        return None, False
    except RecursionError:
        pass
    finally:
        cell.value = saved
    return members_of(buf, read), False


def members_of(
    buf: bytes, parse: Callable[[bytes], dict[str, msgspec.Raw]] | None = None
) -> dict[str, msgspec.Raw] | None:
    """:func:`top_members` (or ``parse``), or ``None`` when the document is not an object, is
    broken or is too deep for the interpreter (each check then decides as it would alone; the
    reader says why)."""
    try:
        return top_members(buf) if parse is None else parse(buf)
    except (msgspec.DecodeError, RecursionError):
        return None


def check_text(text: str, where: str = "$") -> None:
    """Raise :class:`ParseError` if ``text`` (from a dict or str input) holds a lone surrogate."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ParseError(
            f"lone surrogate {text[exc.start]!r} at character {exc.start}: not encodable as UTF-8", path=where
        ) from None


_ENC = msgspec.json.Encoder()


def encode_checked(obj: Any, max_depth: int = MAX_DEPTH) -> bytes:
    """JSON bytes of a Python value given as input (a dict), refusing what JSON cannot carry exactly.

    Only JSON's own types are taken (dict, list, tuple, str, int, float, bool, None): a ``set``,
    ``bytes``, ``datetime``, ``Decimal``... would be encoded as something else, silently. They,
    lone surrogates, non-finite floats and integers too long to print are a :class:`ParseError`
    at their path. Encoded by the standard library's C encoder, which calls no hook for JSON's
    own types and refuses the rest.
    """
    try:
        return _std_json()(obj).encode()
    except (UnicodeEncodeError, TypeError, ValueError, RecursionError, OverflowError) as exc:
        path, why = bad_value(obj, max_depth, True)
        raise ParseError(f"the input cannot be encoded as JSON: {why or excerpt(str(exc))}", path=path) from None


def repeated_member(buf: bytes, key: str, members: dict[str, msgspec.Raw] | None = None) -> bool:
    """Whether the top-level object of ``buf`` (checked input) holds member ``key`` more than once.

    JSON parsers keep one occurrence (msgspec and ``JSON.parse`` the last): a repeated outcome
    member would let a later ``true`` hide an earlier ``false``. ``members`` is
    :func:`top_members` of ``buf`` when the caller has it. A document
    whose top-level members, laid end to end with their keys unescaped and no whitespace,
    make up all of it repeats no key (:func:`spans_whole`). Otherwise two C scans decide for
    most documents; one that holds the key's bytes twice is split by msgspec into its
    top-level members (values skipped, in C), and the occurrences inside their values are
    not at the top. Only a document still showing the key twice at the top (or another key
    repeated, whose dropped value may hold it), or an escape of one of its letters
    (``"succ\u0065ss"``), is parsed again, by the standard library, keeping its members' pairs.
    """
    if members is not None and spans_whole(buf, members):
        return False
    quoted = b'"%s"' % key.encode()
    seen = buf.count(quoted)
    if (buf.find(b"\\u00") < 0 and buf.find(b"\\U00") < 0) or _escapes(key).search(buf) is None:
        if seen < 2:
            return False
        if members is None:
            members = members_of(buf)
        if members is not None and seen - sum(bytes(v).count(quoted) for v in members.values()) <= 1:
            return False
    import json  # only for a document that still shows the key twice

    try:
        top = json.loads(buf, object_pairs_hook=_pairs)
    except (ValueError, RecursionError):  # the reader reports what is wrong with it
        return False
    return isinstance(top, _Members) and sum(1 for k, _ in top if k == key) > 1


def spans_whole(buf: bytes, members: dict[str, msgspec.Raw]) -> bool:
    """Whether ``members`` (:func:`top_members` of ``buf``) account for every byte of ``buf``.

    Written out as ``{"key":value,...}`` (each key in its shortest JSON spelling, values as the
    raw spans msgspec found) they take at most ``len(buf)`` bytes: whitespace, a longer escape
    in a key and every occurrence of a repeated key but the last (at least ``"":0,``, five
    bytes) add to the document, never to the members. Equal lengths therefore prove that no
    top-level key is repeated and that the top level holds no whitespace. Up to
    :data:`WHOLE_BY_ENCODING` bytes the members are encoded by msgspec (which spells every key
    in its shortest form: ``tests/test_shared_parse.py``), one C call; above it the length is
    summed per member (keys unescaped: a lower bound, which proves fewer documents), which
    copies nothing.
    """
    if len(buf) <= WHOLE_BY_ENCODING:
        return len(_ENC.encode(members)) == len(buf)
    n = len(members)
    keys = len("".join(members).encode("utf-8", "surrogatepass"))
    return 1 + 4 * n + keys + sum(map(len, members.values())) + (n == 0) == len(buf)


WHOLE_BY_ENCODING = 16384
"""Size up to which :func:`spans_whole` encodes the members (cheaper than summing their lengths
in Python for a document of a few kilobytes; above it the copy costs more)."""


top_members = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
"""The top-level members of an object document, their values skipped in C (the last of a repeated
key); raises ``msgspec.DecodeError`` for anything else."""


class _Members(list[tuple[str, Any]]):
    """An object's members in document order (what ``json.loads`` builds with :func:`_pairs`)."""


def _pairs(pairs: list[tuple[str, Any]]) -> _Members:
    return _Members(pairs)


@functools.cache
def _escapes(key: str) -> re.Pattern[bytes]:
    """``\\u00XX`` of any character of ``key``: how a key can be spelled to dodge a byte search."""
    return re.compile(rb"\\u00(?:%s)" % b"|".join(b"%02x" % ord(c) for c in sorted(set(key))), re.IGNORECASE)


def _refuse(value: object) -> Any:
    raise TypeError(f"a {type(value).__name__} is not a JSON value")


@functools.cache
def _std_json() -> Callable[[Any], str]:
    """The standard library's C encoder as :func:`encode_checked` uses it (built on first use)."""
    import json

    return json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=_refuse).encode


def bad_value(obj: Any, max_depth: int, failed: bool) -> tuple[str, str | None]:
    """The path of the first value JSON cannot carry exactly, and why (iterative, depth-bounded)."""
    stack: list[tuple[Any, str, int]] = [(obj, "$", 0)]
    while stack:
        v, path, depth = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError as exc:
                return path, f"lone surrogate {v[exc.start]!r} at character {exc.start}"
        elif isinstance(v, bool) or v is None:
            continue
        elif isinstance(v, float):
            if not math.isfinite(v):
                return path, f"{v} is not a JSON number"
        elif isinstance(v, int):
            if v.bit_length() > 14000:  # about 4,300 decimal digits: Python refuses to print more
                return path, f"an integer of {v.bit_length()} bits is too long to write"
        elif isinstance(v, dict | list | tuple):
            if depth >= max_depth:
                return path, f"nesting deeper than {max_depth} levels"
            if isinstance(v, dict):
                for k, x in reversed(v.items()):
                    if isinstance(k, str):
                        try:
                            k.encode("utf-8")
                        except UnicodeEncodeError:
                            return path, f"object key {excerpt(repr(k), 40)} holds a lone surrogate"
                    stack.append((x, path + key_segment(str(k)), depth + 1))
            else:
                stack.extend((x, f"{path}[{i}]", depth + 1) for i, x in reversed(list(enumerate(v))))
        elif failed:
            return path, f"a {type(v).__name__} is not a JSON value"
    return "$", None


def _structure(buf: bytes) -> bytes:
    """The brackets of ``buf`` outside strings, as ``(`` and ``)``, found in C-speed passes.

    Escaped backslashes and escaped quotes go first (then no quote inside a string is
    escaped), every byte but brackets and quotes goes next, and what lies between a quote
    and the next is a string's content (empty strings, the common case, go in one
    ``replace``). For broken JSON the prefix before the first error is exact, which is
    all a parser ever reads.
    """
    if b"\\" in buf:
        buf = buf.replace(b"\\\\", b"").replace(b'\\"', b"")
    nest = buf.translate(_PARENS, _STRUCTURE_ONLY).replace(b'""', b"")  # (pairs of quotes only)
    if b'"' in nest:
        nest = b"".join(nest.split(b'"')[::2])
    return nest


def _too_deep(buf: bytes, max_depth: int) -> bool:
    """Whether ``buf`` nests deeper than ``max_depth`` (brackets inside strings do not count).

    A short document with no more opening brackets than ``max_depth`` (counted inside
    strings too) is shallow enough. Otherwise its structure is measured exactly, block by block: a
    block can raise the depth at most by its count of openings (a C-speed ``count``), so
    only a block where that bound crosses the limit is walked bracket by bracket.
    """
    if len(buf) < 16 * max_depth and len(buf.translate(None, _NOT_OPENING)) <= max_depth:
        return False
    nest = _structure(buf)
    block = max(max_depth // 2, 8)
    depth = 0
    for i in range(0, len(nest), block):
        part = nest[i : i + block]
        opens = part.count(b"(")
        if depth + opens > max_depth and max(accumulate(map(_STEP.__getitem__, part), initial=depth)) > max_depth:
            return True
        depth += 2 * opens - len(part)
    return False


def too_deep(buf: bytes, max_depth: int) -> bool:
    """Whether the JSON document ``buf`` nests deeper than ``max_depth`` levels.

    msgspec's parser skips the document (no objects built) with this thread's recursion
    budget lowered to ``max_depth - 1`` levels (:class:`_Budget`): a document it skips
    whole is shallow enough. One its guard stops (``RecursionError``: nested ``max_depth``
    levels or more), one it refuses as broken JSON, a thread already deeper in its stack
    than the budget, or an interpreter whose recursion counter was not found at import,
    takes the exact bracket count (:func:`_too_deep`), so the answer is the same either way.
    """
    budget = _BUDGET or _budget()
    cell = budget.cells.cell
    cap = max_depth + budget.slack - 1  # one level short: a refusal is always checked exactly
    if cell is None or cap < 1:
        return _too_deep(buf, max_depth)
    saved = cell.value
    if saved <= cap:  # the caller is deep in its stack already: a refusal would prove little
        return _too_deep(buf, max_depth)
    cell.value = cap  # only ever lowered: never lets anything recurse deeper than CPython would
    try:
        _SKIP(buf)
        skipped = True
    except (RecursionError, msgspec.DecodeError):  # too deep, nearly, or broken: measured exactly
        skipped = False  # (broken JSON beyond its first error, as before)
    finally:
        cell.value = saved
    return not skipped and _too_deep(buf, max_depth)


class _Budget:
    """This thread's recursion counter (the one ``Py_EnterRecursiveCall`` decrements), found by measurement.

    CPython keeps it in the thread state, at an offset that differs between versions (3.11
    counts Python frames in it too; 3.12 and later count C recursion on its own, with a
    different limit). At import, the one ``int`` of the thread state that drops by exactly
    the number of C levels entered (a nested list comparison, measured at two depths) is
    taken, then checked: with it lowered, msgspec's parser must stop at the same level
    at two budgets. ``slack`` is how many more units than levels a skip needs at most
    (an unspecialized call into msgspec may count one more: the budget only ever errs
    towards stopping early, which the exact count then corrects). If any of this does not
    hold, :attr:`offset` stays ``None`` and the exact bracket count is used.
    """

    WORDS = 64  # ints of the thread state searched (the counter is in its first 64 bytes on 3.11-3.13, of 256 read)

    def __init__(self) -> None:
        import ctypes  # with threading, imported by the first check, not by ``import envglot``
        import threading

        class Cells(threading.local):
            """:meth:`_Budget.counter` of each thread, as ``cell``: ``__init__`` runs again on a
            thread's first read (``threading.local``), so a depth check reads one attribute."""

            def __init__(self, budget: _Budget) -> None:
                self.cell = budget.counter()

        self._ctypes = ctypes
        self.offset: int | None = None
        self.slack = 0
        # ENVGLOT_DEPTH_BUDGET=exact: the user's choice, every depth check is the exact bracket count
        if os.environ.get("ENVGLOT_DEPTH_BUDGET", "").lower() not in ("0", "off", "exact"):
            try:
                self._get = ctypes.pythonapi.PyThreadState_Get
                self._get.restype = ctypes.c_void_p
                self.offset, self.slack = self._calibrate()
            except Exception:  # pragma: no cover - an interpreter without the C API: the exact count
                self.offset = None
        self.cells = Cells(self)
        """The counter of the running thread, as ``cells.cell`` (found once per thread)."""

    def counter(self) -> ctypes.c_int | None:
        """The running thread's counter, ``None`` if not found (:attr:`cells` keeps it per thread)."""
        if self.offset is None:
            return None
        return self._ctypes.c_int.from_address(self._get() + self.offset)

    def _words(self) -> list[int]:
        return list((self._ctypes.c_int * self.WORDS).from_address(self._get()))

    def _inside(self, levels: int) -> list[int]:
        """The thread state's ints read ``levels`` C recursion levels deeper than here."""
        seen: list[list[int]] = []
        words = self._words

        class Probe:
            def __eq__(self, other: object) -> bool:
                seen.append(words())
                return True

            __hash__ = None  # type: ignore[assignment]

        a: Any = Probe()
        b: Any = 0
        for _ in range(levels):
            a, b = [a], [b]
        _ = a == b
        return seen[0]

    def _calibrate(self) -> tuple[int | None, int]:
        low, high = self._inside(10), self._inside(40)
        found = [i for i in range(self.WORDS) if low[i] - high[i] == 30 and high[i] > 100]
        if len(found) != 1:
            return None, 0
        offset = found[0] * self._ctypes.sizeof(self._ctypes.c_int)
        self.offset = offset
        cell = self.counter()
        assert cell is not None
        # the most levels any call reaches (an unspecialized call into msgspec may count one more unit)
        stops = [max(_deepest(cell, cap) for _ in range(12)) for cap in (60, 150)]
        slack = 60 - stops[0]
        if stops[1] != 150 - slack or not -4 < slack < 4:
            return None, 0
        return offset, slack


def _deepest(cell: ctypes.c_int, cap: int) -> int:
    """The deepest array nesting msgspec skips with ``cell`` at ``cap`` (set as :func:`too_deep` sets it)."""
    for depth in range(cap + 4, 0, -1):
        doc = b"[" * depth + b"]" * depth
        saved = cell.value
        cell.value = cap
        try:
            _SKIP(doc)
        except RecursionError:
            continue
        finally:
            cell.value = saved
        return depth
    return 0


_SKIP = msgspec.json.Decoder(msgspec.Raw).decode


_BUDGET: _Budget | None = None
""":func:`_budget`'s answer once it has one (a depth check reads a global instead of calling it)."""


def _budget() -> _Budget:
    """This process's :class:`_Budget`, found by the first depth check (not at import: the search
    costs ``ctypes``, ``threading`` and a calibration that a command checking nothing never needs).
    Two threads making their first check at once may both search; either finds the same offset."""
    global _BUDGET
    if _BUDGET is None:
        _BUDGET = _Budget()
    return _BUDGET


def _too_deep_at(buf: bytes, max_depth: int) -> int:
    depth = 0
    for m in TOKENS.finditer(buf):
        c = buf[m.start()]
        if c in b"[{":
            depth += 1
            if depth > max_depth:
                return m.start()
        elif c in b"]}":
            depth -= 1
    return len(buf)


def path_at(buf: bytes, offset: int) -> str:
    """The JSON path of the value or key at byte ``offset`` of ``buf`` (best effort for broken JSON).

    Long paths are shortened in the middle; keys are quoted as bounded excerpts.
    """
    # one entry per open container: [is_object, key span or index, expecting a key]
    stack: list[list[Any]] = []
    push, pop = stack.append, stack.pop
    for m in TOKENS.finditer(buf):
        start = m.start()
        if start > offset:
            break
        c = buf[start]
        if c == 123:  # {
            push([True, None, True])
        elif c == 91:  # [
            push([False, 0, False])
        elif c == 93 or c == 125:  # ] }
            if stack:
                pop()
        elif c == 44:  # ,
            if stack:
                top = stack[-1]
                if top[0]:
                    top[1] = None
                    top[2] = True
                else:
                    top[1] += 1
        elif c == 58:  # :
            if stack and stack[-1][0]:
                stack[-1][2] = False
        elif stack:
            top = stack[-1]
            if top[0] and top[2]:  # a string in key position: its span, read only if it stays
                top[1] = (start + 1, max(start + 1, m.end() - 1))
    for top in stack:
        if top[0] and top[1] is not None:
            top[1] = excerpt(buf[top[1][0] : top[1][1]], 40)
    segs = [
        key_segment(str(k)) if is_obj else f"[{k}]"
        for is_obj, k, _ in stack
        if k is not None  # an object whose key is not read yet: the path of the object
    ]
    if len(segs) > _MAX_SEGMENTS:
        segs = [*segs[:6], f"…({len(segs) - 9} levels)…", *segs[-3:]]
    return "$" + "".join(segs)
