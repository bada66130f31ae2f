"""A JSON tree that can hold hostile values, and its byte serializer.

Values are ``None``, ``bool``, ``int``, ``float``, ``str``, ``list``, :class:`Obj` (an
object as a list of key/value pairs, so keys can repeat) and :class:`Num` (a number
token written as it is: ``1e400``, ten thousand digits).

Strings (keys too) carry two kinds of hostile characters:

- ``\\udc80``-``\\udcff`` stand for raw bytes 0x80-0xFF written as they are, i.e. invalid
  UTF-8 in the document (Python's ``surrogateescape`` convention);
- any other lone surrogate is written as a ``\\uXXXX`` escape (valid JSON syntax that no
  UTF-8 string can hold).

:func:`parse` reads any document back into such a tree (invalid UTF-8 included), so a
failing input can be shrunk structurally.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

__all__ = ["Num", "Obj", "clone", "dump", "parse", "to_python"]


class Num:
    """A number token written verbatim."""

    __slots__ = ("token",)

    def __init__(self, token: str) -> None:
        self.token = token

    def __repr__(self) -> str:
        t = self.token
        return f"Num({t[:20] + '...' if len(t) > 24 else t!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Num) and other.token == self.token

    def __hash__(self) -> int:
        return hash(self.token)


class Obj(list):  # type: ignore[type-arg]
    """A JSON object as a list of ``(key, value)`` pairs (order kept, duplicates allowed)."""

    def get(self, key: str, default: Any = None) -> Any:
        """The value of ``key``; with duplicates the last one, as msgspec, ``JSON.parse`` and
        Python's ``json`` read it."""
        for k, v in reversed(self):
            if k == key:
                return v
        return default

    def has(self, key: str) -> bool:
        return any(k == key for k, _ in self)


_ESCAPE = re.compile("[\ud800-\udc7f\udd00-\udfff]")


def _string(s: str) -> bytes:
    text = json.dumps(s, ensure_ascii=False)
    text = _ESCAPE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text.encode("utf-8", "surrogateescape")


def _tokens(value: Any) -> Iterator[bytes]:
    """The document's byte pieces, iteratively (trees may be thousands of levels deep)."""
    stack: list[Any] = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, bytes):
            yield v
        elif v is None:
            yield b"null"
        elif v is True:
            yield b"true"
        elif v is False:
            yield b"false"
        elif isinstance(v, Num):
            yield v.token.encode()
        elif isinstance(v, int):
            yield str(v).encode() if abs(v) < 10**4000 else _bigint(v)
        elif isinstance(v, float):
            yield json.dumps(v).encode()  # inf/nan give Infinity/NaN: hostile on purpose
        elif isinstance(v, str):
            yield _string(v)
        elif isinstance(v, Obj):
            parts: list[Any] = [b"{"]
            for i, (k, item) in enumerate(v):
                if i:
                    parts.append(b",")
                parts += [_string(k), b":", item]
            parts.append(b"}")
            stack.extend(reversed(parts))
        elif isinstance(v, list | tuple):
            parts = [b"["]
            for i, item in enumerate(v):
                if i:
                    parts.append(b",")
                parts.append(item)
            parts.append(b"]")
            stack.extend(reversed(parts))
        elif isinstance(v, dict):
            stack.append(Obj(v.items()))
        else:
            raise TypeError(f"not a tree value: {type(v).__name__}")


def _bigint(v: int) -> bytes:
    """Digits of an int beyond Python's default str() limit."""
    sign = "-" if v < 0 else ""
    v = abs(v)
    chunks: list[str] = []
    while v:
        v, r = divmod(v, 10**1000)
        chunks.append(f"{r:01000d}")
    return (sign + "".join(reversed(chunks)).lstrip("0")).encode() or b"0"


def dump(value: Any) -> bytes:
    """The document's bytes."""
    return b"".join(_tokens(value))


def _num(token: str) -> Any:
    if len(token) > 30 or token.lower() in {"nan", "infinity", "-infinity"}:
        return Num(token)
    try:
        v = float(token) if any(c in token for c in ".eE") else int(token)
    except ValueError:
        return Num(token)
    if isinstance(v, float) and (v in (float("inf"), float("-inf")) or json.dumps(v) != token):
        return Num(token)
    return v


_DECODER = json.JSONDecoder(object_pairs_hook=Obj, parse_float=_num, parse_int=_num, parse_constant=Num)


def parse(data: bytes) -> Any:
    """A document read back into a tree (``ValueError`` if it is not one JSON value)."""
    text = data.decode("utf-8", "surrogateescape")
    return _DECODER.decode(text)


def to_python(value: Any) -> Any:
    """The tree as plain Python (dicts keep the last duplicate; ``Num`` becomes int/float).

    Strings keep their surrogates: that is how a dict input carries lone surrogates.
    """
    if isinstance(value, Obj):
        return {k: to_python(v) for k, v in value}
    if isinstance(value, list):
        return [to_python(v) for v in value]
    if isinstance(value, Num):
        t = value.token
        try:
            return float(t) if any(c in t for c in ".eEnN") else _int(t)
        except ValueError:
            return t
    return value


def _int(token: str) -> int:
    neg = token.startswith("-")
    digits = token.lstrip("-")
    v = 0
    for i in range(0, len(digits), 1000):
        chunk = digits[i : i + 1000]
        v = v * 10 ** len(chunk) + int(chunk)
    return -v if neg else v


def clone(value: Any) -> Any:
    """A deep copy, iteratively (``copy.deepcopy`` recurses and trees may be very deep)."""
    if not isinstance(value, list):
        return value
    root = Obj() if isinstance(value, Obj) else []
    todo: list[tuple[Any, Any]] = [(value, root)]
    while todo:
        src, dst = todo.pop()
        for item in src:
            k, v = item if isinstance(src, Obj) else (None, item)
            if isinstance(v, list):
                new: Any = Obj() if isinstance(v, Obj) else []
                todo.append((v, new))
                v = new
            dst.append((k, v) if isinstance(src, Obj) else v)
    return root
