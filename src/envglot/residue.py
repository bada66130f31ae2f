"""Preserve mode: the residue a target carries so a round trip restores the original.

A residue is ``{"from": DIALECT, "set": [[PATH, VALUE], ...], "del": [PATH, ...]}``:
the JSON patches that turn what the ``from`` dialect's writer produces back into the
original document. It is computed generically (write, read back, write the source
dialect again, diff), so no dialect needs code of its own for it.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

__all__ = ["apply", "diff", "format_path", "key_segment", "parse_path", "set_path"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SEG = re.compile(r'\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')
_DEC = msgspec.json.Decoder()
_ENC = msgspec.json.Encoder()


def key_segment(key: str) -> str:
    """The path segment of an object key: ``.name`` for an ASCII identifier, else ``["JSON string"]``."""
    return "." + key if _NAME.fullmatch(key) else "[" + _ENC.encode(key).decode() + "]"


def parse_path(path: str) -> list[str | int]:
    """``$.a.b[0]["x y"]`` -> ``["a", "b", 0, "x y"]`` (the inverse of :func:`format_path`)."""
    if not path.startswith("$"):
        raise ValueError(f"not a JSON path: {path!r}")
    out: list[str | int] = []
    pos = 1
    while pos < len(path):
        m = _SEG.match(path, pos)
        if m is None:
            raise ValueError(f"bad JSON path {path!r} at {pos}")
        name, idx, quoted = m.groups()
        if name is not None:
            out.append(name)
        elif idx is not None:
            out.append(int(idx))
        else:
            out.append(_DEC.decode(quoted))
        pos = m.end()
    return out


def format_path(segs: list[str | int]) -> str:
    """Inverse of :func:`parse_path`."""
    return "$" + "".join(f"[{s}]" if isinstance(s, int) else key_segment(s) for s in segs)


def set_path(doc: Any, segs: list[str | int], value: Any) -> None:
    """Set ``value`` at ``segs`` inside ``doc``, creating objects on the way."""
    cur = doc
    for s in segs[:-1]:
        if isinstance(s, int):
            cur = cur[s]
        else:
            nxt = cur.get(s)
            if not isinstance(nxt, (dict, list)):
                nxt = cur[s] = {}
            cur = nxt
    last = segs[-1]
    cur[last] = value


def _del_path(doc: Any, segs: list[str | int]) -> None:
    cur = doc
    for s in segs[:-1]:
        cur = cur[s]
    if isinstance(cur, dict):
        cur.pop(segs[-1], None)


def diff(original: Any, produced: Any, skip: frozenset[str] = frozenset()) -> tuple[list[list[Any]], list[str]]:
    """Patches turning ``produced`` into ``original``: ``(sets, dels)``, in document order."""
    sets: list[list[Any]] = []
    dels: list[str] = []

    def walk(o: Any, p: Any, segs: list[str | int]) -> None:
        if isinstance(o, dict) and isinstance(p, dict):
            for k, v in o.items():
                if not segs and k in skip:
                    continue
                if k not in p:
                    sets.append([format_path([*segs, k]), v])
                else:
                    walk(v, p[k], [*segs, k])
            for k in p:
                if k not in o and not (not segs and k in skip):
                    dels.append(format_path([*segs, k]))
        elif type(o) is not type(p) or o != p:
            sets.append([format_path(segs), o])

    walk(original, produced, [])
    return sets, dels


def apply(doc: Any, sets: list[list[Any]], dels: list[str]) -> Any:
    """Apply :func:`diff` patches to ``doc`` (in place when possible); returns the document."""
    for path in dels:
        _del_path(doc, parse_path(path))
    for path, value in sets:
        segs = parse_path(path)
        if not segs:
            return value
        set_path(doc, segs, value)
    return doc
