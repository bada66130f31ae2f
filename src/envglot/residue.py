"""Preserve mode: the residue a target carries so a round trip restores the original.

A residue is ``{"from": DIALECT, "set": [[PATH, VALUE], ...], "del": [PATH, ...], "digest": HEX}``:
the JSON patches that turn what the ``from`` dialect's writer produces back into the
original document, and a digest of that original. It is computed generically (write,
read back, write the source dialect again, diff), so no dialect needs code of its own.

The residue belongs to the caller, not to the input: it is applied only when the caller
asks for ``preserve``, only when the document it restores has the recorded digest, and
only when the result is a valid document of the same outcome (checked by the caller).
Everything here works on :class:`msgspec.Raw` values, so numbers and strings travel byte
for byte (``1e400`` or a 10,000-digit integer is restored exactly).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import msgspec
from msgspec import Raw, Struct

from .errors import ParseError
from .excerpt import excerpt, key_segment
from .limits import MAX_DEPTH

__all__ = [
    "Residue",
    "apply",
    "decode_residue",
    "delete",
    "diff",
    "digest",
    "format_path",
    "parse_path",
    "set_path",
]

_SEG = re.compile(r'\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d{1,9})\]|\[("(?:[^"\\]|\\.)*")\]')
_STR = msgspec.json.Decoder(str)
_RAW_DICT = msgspec.json.Decoder(dict[str, Raw])
_RAW_LIST = msgspec.json.Decoder(list[Raw])
_ENC = msgspec.json.Encoder()
_DIGEST_TAG = b"envglot-residue/1\0"

Tree = dict[str, Any] | list[Any] | Raw
"""A document being patched: objects and arrays opened on demand, everything else ``Raw``."""


class Residue(Struct, forbid_unknown_fields=True):
    """The wire form of a residue (see the module docstring)."""

    from_: str = msgspec.field(name="from")
    digest: str
    set: list[tuple[str, Raw]] = msgspec.field(default_factory=list)
    del_: list[str] = msgspec.field(default_factory=list, name="del")


@cache
def _residue_decoder() -> msgspec.json.Decoder[Residue]:
    """The residue's decoder, built on first use (not at import)."""
    return msgspec.json.Decoder(Residue)


def decode_residue(raw: Raw, where: str) -> Residue:
    """The residue at JSON path ``where``; a corrupt one is a :class:`ParseError`."""
    try:
        res = _residue_decoder().decode(raw)
    except msgspec.DecodeError as exc:
        raise ParseError(f"corrupt preserve residue: {excerpt(str(exc))}", path=where) from None
    for path in (*(p for p, _ in res.set), *res.del_):
        parse_path(path, where)
    return res


def parse_path(path: str, where: str = "$") -> list[str | int]:
    """``$.a.b[0]["x y"]`` -> ``["a", "b", 0, "x y"]`` (the inverse of :func:`format_path`).

    Raises :class:`ParseError` (at ``where``) for a malformed path or one deeper than the
    nesting limit.
    """
    if not path.startswith("$"):
        raise ParseError(f"not a JSON path: {excerpt(repr(path))}", path=where)
    out: list[str | int] = []
    pos = 1
    while pos < len(path):
        m = _SEG.match(path, pos)
        if m is None:
            raise ParseError(f"bad JSON path {excerpt(repr(path))} at character {pos}", path=where)
        name, idx, quoted = m.groups()
        if name is not None:
            out.append(name)
        elif idx is not None:
            out.append(int(idx))
        else:
            try:
                out.append(_STR.decode(quoted))
            except msgspec.DecodeError:
                raise ParseError(f"bad key in JSON path {excerpt(repr(path))}", path=where) from None
        if len(out) > MAX_DEPTH:
            raise ParseError(f"JSON path deeper than {MAX_DEPTH} levels", path=where)
        pos = m.end()
    return out


def format_path(segs: list[str | int]) -> str:
    """Inverse of :func:`parse_path`."""
    return "$" + "".join(f"[{s}]" if isinstance(s, int) else key_segment(s) for s in segs)


def _open(node: Tree) -> Tree:
    """An object or array ``Raw`` opened one level (children stay ``Raw``); other values unchanged."""
    if isinstance(node, Raw):
        head = bytes(memoryview(node)[:1])
        if head == b"{":
            return _RAW_DICT.decode(node)
        if head == b"[":
            return _RAW_LIST.decode(node)
    return node


def open_document(doc: bytes) -> dict[str, Any]:
    """A document's top level as a patchable tree."""
    return _RAW_DICT.decode(doc)


def _child(parent: dict[str, Any] | list[Any], seg: str | int, create: bool) -> Tree | None:
    """The container at ``parent[seg]``, opened in place; ``None`` when it cannot be walked into."""
    if isinstance(parent, dict) and isinstance(seg, str):
        node = _open(parent[seg]) if seg in parent else None
        if not isinstance(node, dict | list):
            if not create:
                return None
            node = {}
        parent[seg] = node
        return node
    if isinstance(parent, list) and isinstance(seg, int) and seg < len(parent):
        node = _open(parent[seg])
        if not isinstance(node, dict | list):
            return None
        parent[seg] = node
        return node
    return None


def set_path(doc: dict[str, Any], segs: list[str | int], value: Raw, create: bool = True) -> bool:
    """Set ``value`` at ``segs`` inside ``doc``, creating objects on the way (unless ``create``
    is false); False if it cannot."""
    if not segs:
        return False
    cur: Tree | None = doc
    for s in segs[:-1]:
        cur = _child(cur, s, create=create)  # type: ignore[arg-type]
        if cur is None:
            return False
    last = segs[-1]
    if isinstance(cur, dict) and isinstance(last, str):
        cur[last] = value
        return True
    if isinstance(cur, list) and isinstance(last, int) and last < len(cur):
        cur[last] = value
        return True
    return False


def delete(doc: dict[str, Any], segs: list[str | int]) -> None:
    cur: Tree | None = doc
    for s in segs[:-1]:
        cur = _child(cur, s, create=False)  # type: ignore[arg-type]
        if cur is None:
            return
    if isinstance(cur, dict) and isinstance(segs[-1], str):
        cur.pop(segs[-1], None)


def diff(original: bytes, produced: bytes, skip: tuple[str | int, ...] = ()) -> tuple[list[list[Any]], list[str]]:
    """Patches turning ``produced`` into ``original`` (both minified objects): ``(sets, dels)``.

    Values are compared byte for byte, so a set restores the original spelling exactly.
    ``skip`` is a path (as segments) left out on both sides: the source's own residue slot.
    """
    sets: list[list[Any]] = []
    dels: list[str] = []

    def skipped(segs: list[str | int], k: str) -> bool:
        return bool(skip) and k == skip[-1] and tuple(segs) == skip[:-1]

    def walk(o: dict[str, Raw], p: dict[str, Raw], segs: list[str | int]) -> None:
        if segs and not _same_order(o, p) and not (len(skip) > len(segs) and tuple(segs) == skip[: len(segs)]):
            # patches append new keys at the end: an object they cannot rebuild in its
            # original key order is restored whole, so the round trip is exact
            sets.append([format_path(segs), Raw(_ENC.encode(o))])
            return
        for k, v in o.items():
            if skipped(segs, k):
                continue
            if k not in p:
                sets.append([format_path([*segs, k]), v])
                continue
            pv = p[k]
            if bytes(v) == bytes(pv):
                continue
            if memoryview(v)[:1] == b"{" and memoryview(pv)[:1] == b"{":
                walk(_RAW_DICT.decode(v), _RAW_DICT.decode(pv), [*segs, k])
            else:
                sets.append([format_path([*segs, k]), v])
        for k in p:
            if k not in o and not skipped(segs, k):
                dels.append(format_path([*segs, k]))

    walk(_RAW_DICT.decode(original), _RAW_DICT.decode(produced), [])
    return sets, dels


def _same_order(o: dict[str, Raw], p: dict[str, Raw]) -> bool:
    """True if patching ``p`` (deletes, then appends) yields ``o``'s key order."""
    kept = [k for k in p if k in o]
    return list(o)[: len(kept)] == kept


def apply(doc: dict[str, Any], res: Residue) -> bool:
    """Apply a residue's patches to ``doc`` in place; False if a patch cannot be applied."""
    for path in res.del_:
        segs = parse_path(path)
        if not segs:
            return False
        delete(doc, segs)
    return all(set_path(doc, parse_path(path), value) for path, value in res.set)


def digest(dialect: str, document: bytes) -> str:
    """The digest a residue records of the document it restores (key order does not matter).

    BLAKE2b-128 over the dialect name and the document's canonical form: objects with
    sorted keys, scalars as their minified JSON text.
    """
    parts: list[bytes] = [_DIGEST_TAG + dialect.encode() + b"\0"]
    add = parts.append

    def feed(raw: Raw | bytes) -> None:
        text = bytes(raw)
        head = text[:1]
        if head == b"{":
            d = _RAW_DICT.decode(raw)
            add(b"{")
            for k in sorted(d):
                add(_ENC.encode(k) + b":")
                feed(d[k])
                add(b",")
            add(b"}")
        elif head == b"[":
            add(b"[")
            for item in _RAW_LIST.decode(raw):
                feed(item)
                add(b",")
            add(b"]")
        elif head == b'"' and b"\\" in text:
            add(_ENC.encode(_STR.decode(raw)))  # one spelling per string (escapes normalized)
        else:
            # a scalar's minified text; a string without a backslash is already in the
            # encoder's spelling (valid JSON holds no raw control character)
            add(text)

    feed(document)
    import hashlib  # preserve=True only: not imported with envglot

    return hashlib.blake2b(b"".join(parts), digest_size=16).hexdigest()  # the same stream, hashed at once


def encode_residue(dialect: str, original: bytes, sets: list[list[Any]], dels: list[str]) -> Raw:
    """The wire residue restoring ``original`` (a ``from`` dialect document) from its patches."""
    return Raw(_ENC.encode({"from": dialect, "set": sets, "del": dels, "digest": digest(dialect, original)}))


def encode(doc: dict[str, Any]) -> bytes:
    """A patched tree back to JSON bytes."""
    return _ENC.encode(doc)
