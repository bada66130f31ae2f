"""Preserve mode: the residue a target carries so a round trip restores the original.

Over 500 lines: one residue format in five versions (its paths, patches, digests and the
members taken from the carrier) that every face reads and writes through here.

A residue is ``{"from": DIALECT, "set": [[PATH, VALUE], ...], "del": [PATH, ...], "v": 5,
"take": [[PATH, CARRIER_PATH], ...], "digest": HEX}``: the JSON patches that turn what the
``from`` dialect's writer produces back into the original document, and a digest of that
original (``v``: the residue's version, 1 when absent; see :func:`digest`). No dialect needs
code of its own:

- versions 3 to 5 (:func:`whole`, a document without an input residue into another dialect),
  computed without converting back: the original whole at ``$`` (hooks read the wire Struct
  whole, so no member is proven to come back unchanged), less the members the target carries
  byte for byte (:data:`TAKEN`: a success's payload, a failure's details): ``null`` in their
  places and ``take`` to set the carrier's back. Version 5 (written today, members taken or not)
  hashes the bytes as they travel; version 4 was version 3 with members taken and a digest of
  their bytes instead of their canonical form; version 3 hashed the canonical form;
- version 2 (:func:`diff`: write, read back, write the source dialect again, diff): what a
  document carrying a residue of its own (a chain's later hop) or converted into its own
  dialect gets; version 1 is version 2's patches with an older digest.

The residue belongs to the caller, not to the input: it is applied only when the caller
asks for ``preserve``, only when the document it restores has the recorded digest, and
only when the result is a valid document of the same outcome (checked by the caller).
Everything here works on :class:`msgspec.Raw` values, so numbers and strings travel byte
for byte (``1e400`` or a 10,000-digit integer is restored exactly).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cache, lru_cache
from typing import Any, Protocol, cast

import msgspec
from msgspec import Raw, Struct

from .errors import ParseError
from .excerpt import excerpt, key_segment
from .limits import MAX_DEPTH, TOKENS

__all__ = [
    "SPLICE_MIN",
    "TAKEN",
    "Residue",
    "apply",
    "decode_residue",
    "delete",
    "diff",
    "digest",
    "digest_bytes",
    "digest_parts",
    "format_path",
    "handed_key",
    "matches",
    "none_in",
    "parse_path",
    "payload_paths",
    "placed_whole",
    "placer",
    "restore",
    "set_path",
    "slot_path",
    "take_paths",
    "value_at",
    "whole",
    "without",
]

_SEG = re.compile(r'\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d{1,9})\]|\[("(?:[^"\\]|\\.)*")\]')
_STR = msgspec.json.Decoder(str)
_RAW_DICT = msgspec.json.Decoder(dict[str, Raw])
_RAW_LIST = msgspec.json.Decoder(list[Raw])
_ENC = msgspec.json.Encoder()
_DIGEST_TAG = b"envglot-residue/1\0"
_DIGEST_TAG_2 = b"envglot-residue/2\0"
_DIGEST_TAG_3 = b"envglot-residue/3\0"
_DIGEST_TAG_4 = b"envglot-residue/4\0"
_DIGEST_TAG_5 = b"envglot-residue/5\0"
VERSION = 5
"""The newest residue version (``v``), the one :func:`whole` writes (members taken from the carrier
or none); :func:`digest` computes every known one's digest."""
CANONICAL = 3
"""The digest version of a whole document's canonical form (:func:`digest`'s default)."""
DIGEST_VERSION = 2
"""The version of the residues :func:`diff` builds (``v``: patches against the document written back)."""
_SORTED = msgspec.json.Encoder(order="sorted")
_PLAIN = msgspec.json.Decoder()
_SPELLED = msgspec.json.Decoder(float_hook=Raw)
"""Any JSON value as Python objects, every non-integer number kept as its own text (``Raw``)."""

Tree = dict[str, Any] | list[Any] | Raw
"""A document being patched: objects and arrays opened on demand, everything else ``Raw``."""


class Residue(Struct, forbid_unknown_fields=True):
    """The wire form of a residue (see the module docstring)."""

    from_: str = msgspec.field(name="from")
    digest: str
    set: list[tuple[str, Raw]] = msgspec.field(default_factory=list)
    del_: list[str] = msgspec.field(default_factory=list, name="del")
    v: int = 1
    """The residue's version (absent in residues made before version 2): its digest's, and from
    3 on, a set at ``$`` replaces the whole document."""
    take: list[tuple[str, str]] = msgspec.field(default_factory=list)
    """From version 3 on: ``[PATH, CARRIER_PATH]``, after the sets: the value at ``CARRIER_PATH``
    of the document carrying the residue is set at ``PATH`` (a member that travels unchanged)."""


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
    if not 1 <= res.v <= VERSION:
        raise ParseError(f"preserve residue of unknown version {res.v}", path=where)
    if res.take and res.v < 3:
        raise ParseError(f"corrupt preserve residue: take in a residue of version {res.v}", path=where)
    for path in (*(p for p, _ in res.set), *res.del_, *(p for pair in res.take for p in pair)):
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


@cache
def slot_path(slot: str) -> tuple[str | int, ...]:
    """A dialect's residue slot as segments (parsed once per slot)."""
    return tuple(parse_path(slot))


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


def diff(
    original: bytes,
    produced: bytes,
    skip: tuple[str | int, ...] = (),
    members: dict[str, Raw] | None = None,
) -> tuple[list[list[Any]], list[str]]:
    """Patches turning ``produced`` into ``original`` (both minified objects): ``(sets, dels)``.

    Values are compared byte for byte, so a set restores the original spelling exactly.
    ``skip`` is a path (as segments) left out on both sides: the source's own residue slot.
    ``members`` is ``original``'s top level when the caller has decoded it (not decoded again).
    """
    sets: list[list[Any]] = []
    dels: list[str] = []
    depth = len(skip)

    def walk(o: dict[str, Raw], p: dict[str, Raw], level: int, here: str, on_skip: bool) -> None:
        # ``on_skip``: the path walked so far is a proper prefix of ``skip``
        if level and not on_skip and not _same_order(o, p):
            # patches append new keys at the end: an object they cannot rebuild in its
            # original key order is restored whole, so the round trip is exact
            sets.append([here, Raw(_ENC.encode(o))])
            return
        left_out = skip[-1] if on_skip and depth == level + 1 else None
        get = p.get
        for k, v in o.items():
            pv = get(k)
            if v == pv or k == left_out:  # Raw compares its bytes
                continue
            if pv is not None and memoryview(v)[0] == _OPEN and memoryview(pv)[0] == _OPEN:
                deeper = on_skip and depth > level + 1 and skip[level] == k
                walk(_RAW_DICT.decode(v), _RAW_DICT.decode(pv), level + 1, here + _key_segment(k), deeper)
            else:
                sets.append([here + _key_segment(k), v])
        for k in p:
            if k not in o and k != left_out:
                dels.append(here + _key_segment(k))

    top = _RAW_DICT.decode(original) if members is None else members
    walk(top, _RAW_DICT.decode(produced), 0, "$", depth > 0)
    return sets, dels


_OPEN = ord("{")
"""The first byte of an object's JSON text (a decoded value's text is never empty)."""
_BRACKET = ord("[")
"""The first byte of an array's JSON text."""


_key_segment = lru_cache(maxsize=4096)(key_segment)
"""A key's path segment (the same keys recur in every document of a dialect)."""


def _same_order(o: dict[str, Raw], p: dict[str, Raw]) -> bool:
    """True if patching ``p`` (deletes, then appends) yields ``o``'s key order."""
    kept = [k for k in p if k in o]
    return list(o)[: len(kept)] == kept


def apply(doc: dict[str, Any], res: Residue) -> bool:
    """Apply a residue's patches to ``doc`` in place; False if a patch cannot be applied.

    From version 3 on, a set at ``$`` (an object) replaces the document, keys in its order."""
    for path in res.del_:
        segs = parse_path(path)
        if not segs:
            return False
        delete(doc, segs)
    for path, value in res.set:
        segs = parse_path(path)
        if segs:
            if not set_path(doc, segs, value):
                return False
        elif res.v < 3 or bytes(memoryview(value)[:1]) != b"{":
            return False
        else:
            doc.clear()
            doc.update(_RAW_DICT.decode(value))
    return True


def restore(doc: dict[str, Any], res: Residue, carrier: bytes | None) -> bytes | None:
    """The document ``res``'s patches make of ``doc`` (patched in place; ``carrier``: the document
    the residue travels in, for ``take``), ``None`` if a patch cannot be applied; a residue that
    only sets ``$`` (version 3) gives its value's own bytes."""
    if not res.take and res.v >= 3 and not res.del_ and len(res.set) == 1 and res.set[0][0] == "$":
        value = res.set[0][1]
        return bytes(value) if bytes(memoryview(value)[:1]) == b"{" else None
    if not apply(doc, res):
        return None
    for path, there in res.take:
        taken = None if carrier is None else value_at(carrier, parse_path(there))
        if taken is None or not set_path(doc, parse_path(path), taken, create=False):
            return None
    return encode(doc)


def value_at(document: bytes | dict[str, Raw], segs: Sequence[str | int]) -> Raw | None:
    """The value at ``segs`` (object keys) of ``document`` (its text, or its top level decoded);
    ``None`` if there is none."""
    node: Any = document if isinstance(document, dict) else _open(Raw(document))
    for i, seg in enumerate(segs):
        if i and isinstance(node, Raw):
            # _open's answer where it matters (an object, or nothing to walk into), without its
            # first-byte test: a value of a decoded document is JSON, so only its type can fail
            try:
                node = _RAW_DICT.decode(node)
            except msgspec.ValidationError:
                return None
        if not isinstance(node, dict) or not isinstance(seg, str) or seg not in node:
            return None
        node = node[seg]
    return node if segs and isinstance(node, Raw) else None


def digest(dialect: str, document: bytes, version: int = CANONICAL, take: Sequence[Sequence[str | int]] = ()) -> str:
    """The digest a residue records of the document it restores (key order does not matter).

    A 128-bit hash (SHA-256's first half from version 3 on, BLAKE2b-128 before) over a version
    tag, the dialect name and the document's canonical form. Version 3: msgspec's encoding with
    every object's keys sorted, of the document decoded plainly (numbers as ``int`` and
    ``float``): whitespace, key order, string escapes and the spellings of one number (``2e2``,
    ``200.0``; ``-0`` and ``0``) do not count. A document holding a number msgspec will not
    decode (``1e400``, an integer over 4,300 digits) has the form of version 1 instead, after a
    ``\\x01`` (no sorted encoding starts with it).
    Version 5 (``take`` as for version 4, or none): the document's bytes as they travel, with
    ``null`` at the taken members' paths (its top level and the objects on the way to them
    encoded by msgspec), then each taken member's bytes (:func:`digest_bytes`): no canonical form,
    so any other spelling (key order, escapes, a number's) has another digest.
    Version 4 (``take``: the paths, as segments, of the members a residue takes from its
    carrier): version 3's form of the document with ``null`` at those paths, then each taken
    member's bytes as they are (:func:`digest_parts`): a taken member spelled otherwise (its
    keys in another order, other escapes) has another digest.
    Version 2: the same as version 3, but each non-integer number kept as its own text, so
    ``2e2``, ``200.0`` and ``1E2`` stay apart (as in version 1), and only an integer over 4,300
    digits takes the fallback. Version 1 (a Python walk: keys sorted, every scalar as written,
    strings with escapes re-encoded) is still computed for residues that record it.
    """
    if version >= 5 and not take:
        return digest_bytes(dialect, document, ())
    if version >= 4:
        tree = _RAW_DICT.decode(document)
        taken = [_swap(tree, tuple(segs)) if segs else None for segs in take]
        parts = [b"" if t is None else bytes(t) for t in taken]
        return (digest_bytes if version >= 5 else digest_parts)(dialect, _ENC.encode(tree), parts)
    head = _head(dialect)
    if version == 1:
        return _hashlib().blake2b(_DIGEST_TAG + head + _walk(document), digest_size=16).hexdigest()
    if version >= 3:
        return _hashlib().sha256(_DIGEST_TAG_3 + head + _form(document)).hexdigest()[:32]
    try:
        form = _SORTED.encode(_SPELLED.decode(document))
    except msgspec.ValidationError:  # a number too long for int(): the walk keeps its text
        form = b"\x01" + _walk(document)
    return _hashlib().blake2b(_DIGEST_TAG_2 + head + form, digest_size=16).hexdigest()


def digest_parts(dialect: str, rest: bytes, taken: Sequence[bytes]) -> str:
    """Version 4's digest of a document given as ``rest`` (the document with ``null`` at each
    taken member's path) and ``taken`` (those members' bytes, ``b""`` for one that is absent).

    Only the small ``rest`` is decoded for its canonical form; each taken member is hashed as
    it is, after its length (so no two splits of the same bytes hash alike)."""
    return _sha(_head_4(dialect), _form(rest), taken)


def digest_bytes(dialect: str, rest: Any, taken: Sequence[Any]) -> str:
    """Version 5's digest of a document given as ``rest`` (its bytes with ``null`` at each taken
    member's path, as the residue carries them) and ``taken`` (those members' bytes as the carrier
    carries them, ``b""`` for one that is absent): :func:`digest_parts` without the canonical form."""
    return _sha(_head_5(dialect), rest, taken)


def _sha(head: bytes, form: Any, taken: Sequence[Any]) -> str:
    """:func:`_sha_hex` as text (what :func:`digest` returns)."""
    return _sha_hex(head, form, taken).decode()


def _sha_hex(head: bytes, form: Any, taken: Sequence[Any]) -> bytes:
    """SHA-256's first 128 bits (hex, ASCII bytes: what a residue's frame joins) of ``head``,
    ``form`` and each of ``taken``, each of the last after its length (so no two splits of the same
    bytes hash alike; bytes-like values are fed as they are: a large payload is not copied into one
    buffer first). The hex of the digest's first half: ``hexdigest()[:32]``'s characters, without
    the second half's text."""
    sha = _SHA256 or _sha256()
    if len(taken) == 1 and len(taken[0]) <= FED_WHOLE:  # one buffer: no update calls
        value = taken[0]
        h = sha(b"".join((head, len(form).to_bytes(8, "big"), form, len(value).to_bytes(8, "big"), value)))
    else:
        h = sha(b"".join((head, len(form).to_bytes(8, "big"), form)))
        for value in taken:
            h.update(len(value).to_bytes(8, "big"))
            h.update(value)
    return _HEXLIFY(h.digest()[:16])  # type: ignore[no-any-return]  # set with _SHA256


FED_WHOLE = 4096
"""Size up to which :func:`_sha_hex` joins a single taken member into the buffer it hashes (a copy
costs less than two ``update`` calls there; a larger one is fed as it is)."""


_SHA256: Any = None
"""``hashlib.sha256`` once :func:`_sha256` has imported it (``preserve=True`` only)."""
_HEXLIFY: Any = None
"""``binascii.hexlify``, imported by :func:`_sha256` with :data:`_SHA256` (not with envglot)."""


def _sha256() -> Any:
    """``hashlib.sha256``, imported on first use and kept in :data:`_SHA256` (and
    ``binascii.hexlify`` in :data:`_HEXLIFY`)."""
    global _SHA256, _HEXLIFY
    import binascii

    _HEXLIFY = binascii.hexlify
    _SHA256 = _hashlib().sha256
    return _SHA256


def matches(res: Residue, document: bytes) -> bool:
    """True if ``document`` (what ``res`` restored) has the digest ``res`` records, by its version."""
    take = [parse_path(path) for path, _ in res.take] if res.v >= 4 else ()
    return digest(res.from_, document, res.v, take) == res.digest


def _form(document: bytes) -> bytes:
    """Version 3's canonical form of ``document``: its plain decoding encoded with sorted keys,
    or after ``\\x01`` version 1's walk when msgspec refuses a number in it."""
    try:
        return _SORTED.encode(_PLAIN.decode(document))
    except msgspec.ValidationError:  # a number out of range (or too long for int()): the walk keeps its text
        return b"\x01" + _walk(document)


@cache
def _head(dialect: str) -> bytes:
    """The dialect's part of every digest: its name and a NUL."""
    return dialect.encode() + b"\0"


@cache
def _head_4(dialect: str) -> bytes:
    """What a version 4 digest hashes first: its tag and :func:`_head`."""
    return _DIGEST_TAG_4 + _head(dialect)


@cache
def _head_5(dialect: str) -> bytes:
    """What a version 5 digest hashes first: its tag and :func:`_head`."""
    return _DIGEST_TAG_5 + _head(dialect)


@cache
def _hashlib() -> Any:
    """:mod:`hashlib`, imported on first use (``preserve=True`` only: not imported with envglot)."""
    import hashlib

    return hashlib


def _walk(document: bytes) -> bytes:
    """Version 1's canonical form of ``document``."""
    parts: list[bytes] = []
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
    return b"".join(parts)


def encode_residue(
    dialect: str, original: bytes, sets: list[list[Any]], dels: list[str], version: int = DIGEST_VERSION
) -> Raw:
    """The wire residue restoring ``original`` (a ``from`` dialect document) from its patches."""
    return Raw(
        _ENC.encode(
            {"from": dialect, "set": sets, "del": dels, "v": version, "digest": digest(dialect, original, version)}
        )
    )


_NULL = Raw(b"null")

Paths = tuple[tuple[str | int, ...], tuple[str | int, ...]]
"""A member's path in a source document and in the target's (as segments)."""

Takes = tuple[Paths, ...]
"""The members a residue may take from its carrier (:func:`take_paths`), in order."""


def _swap(tree: dict[str, Any], segs: tuple[str | int, ...]) -> Raw | None:
    """The value at ``segs`` (object keys) of ``tree``, replaced there by ``null`` (the objects on
    the way opened in place); ``None``, and nothing replaced, if there is none."""
    node: Any = tree
    for seg in segs[:-1]:
        child = _open(node[seg]) if isinstance(seg, str) and seg in node else None
        if not isinstance(child, dict):
            return None
        node[seg] = child
        node = child
    last = segs[-1]
    if not isinstance(last, str) or last not in node:
        return None
    value: Raw = node[last]
    node[last] = _NULL
    return value


@lru_cache(maxsize=256)
def _frame(dialect: str, takes: Takes) -> tuple[bytes, bytes]:
    """A :func:`whole` residue's bytes around its root (before it, and after it up to the digest's
    text): those of ``_ENC.encode`` of ``{"from", "set", "del", "v", "take", "digest"}``, version 5,
    with ``take`` when the members at ``takes`` (their paths in the original and the carrier) are
    taken (built once per dialect and set of members taken)."""
    head = b'{"from":' + _ENC.encode(dialect) + b',"set":[["$",'
    if not takes:
        return head, b']],"del":[],"v":5,"digest":"'
    pairs = [[format_path(list(here)), format_path(list(there))] for here, there in takes]
    return head, b']],"del":[],"v":5,"take":' + _ENC.encode(pairs) + b',"digest":"'


def payload_paths(here: Any, there: Any, slot: str) -> Paths | None:
    """A member's path in a source document (``here``) and in the target's (``there``), as
    segments, when a residue may take it from the carrier: each is one object member's path
    (not the whole document, not absent, no array), and the target's residue ``slot`` lies
    outside it."""
    if not isinstance(here, str) or not isinstance(there, str) or "[" in here or "[" in there:
        return None
    here_segs, there_segs = slot_path(here), slot_path(there)
    if not here_segs or not there_segs or slot_path(slot)[: len(there_segs)] == there_segs:
        return None
    return here_segs, there_segs


TAKEN = ("payload", "problem.details")
"""The canonical fields whose members a residue may take from its carrier, in this order: the
large ones a conversion may carry byte for byte (a success's payload, a failure's details). A
member is taken only when the carrier's bytes are the original's (:func:`whole`). A failure's
code and message stay in the residue: short strings, each a longer ``take`` entry than its bytes
and a lookup in the carrier for what its digest saves."""


def take_paths(here: dict[str, Any], there: dict[str, Any], slot: str) -> Takes:
    """The members of :data:`TAKEN` a residue may take (:func:`payload_paths` of each), given the
    ``[fields]`` of the source (``here``) and of the target (``there``) and the target's slot."""
    found = (payload_paths(here.get(field), there.get(field), slot) for field in TAKEN)
    return tuple(paths for paths in found if paths is not None)


def whole(
    dialect: str,
    original: bytes,
    members: dict[str, Raw] | None = None,
    out: dict[str, Raw] | None = None,
    takes: Takes = (),
) -> Raw:
    """The version 5 residue of ``original`` (a minified ``from`` dialect document with no
    residue of its own, ``members`` its top level when decoded): the document set whole at ``$``,
    whatever its writer writes back.

    ``takes`` are members' paths in ``original`` and in the target document ``out`` (its top
    level), in order (:func:`take_paths`): each member whose two values are the same bytes is
    left out (``null`` in its place, so key order holds) and taken back from the carrier
    (``take``), provided the document without them re-encodes to the original's own spelling
    (checked by length: msgspec's spelling of a key is the shortest). Its digest covers the rest's
    bytes and the taken members' bytes as they travel, no canonical form (:func:`digest`).
    Versions 3 and 4 (written before) differ only in their digests."""
    return _whole_of(dialect, original, members, takes, out)


def _whole_of(
    dialect: str,
    original: bytes,
    members: dict[str, Raw] | None,
    takes: Takes,
    out: dict[str, Raw] | None,
    first: Raw | bytes | None = None,
    spliced: Paths | None = None,
) -> Raw:
    """:func:`whole`; ``first``: the carrier's value at a take's path when the caller found it
    (``out`` is not looked into for it): at ``spliced``, one of ``takes``, or their first when
    ``spliced`` is not given."""
    if not takes:
        return Raw(_untaken(dialect, original))
    kept: list[Paths] = []
    taken: list[Any] = []  # Raw or bytes: hashed through the buffer protocol, not copied
    # keyed by any segment: a take's segments are keys (payload_paths), an int one finds nothing
    tree: dict[Any, Any] = dict(members) if members is not None else _RAW_DICT.decode(original)
    carrier: dict[Any, Any] | None = out
    for paths in takes:
        here, there = paths
        key = here[0]
        if len(here) == 1:  # a top-level member: _swap's answer without its walk
            mine = tree.get(key)
            if mine is None:
                continue
            tree[key] = _NULL
        elif tree.get(key, _NULL) == _NULL:  # _swap's answer when the first member on the way is absent or null
            continue
        else:
            mine = _swap(tree, here)
            if mine is None:  # not in the original (or inside a member taken before it)
                continue
        if first is not None and paths is (spliced or takes[0]):
            theirs = first
        elif carrier is None:
            theirs = None
        elif len(there) == 1:
            theirs = carrier.get(there[0])
        else:  # value_at's answer, without its walk when the first member on the way is absent or null
            theirs = None if carrier.get(there[0], _NULL) == _NULL else value_at(carrier, there)
        if theirs is not None and mine == theirs:  # Raw compares its bytes
            kept.append(paths)
            taken.append(theirs)
        elif len(here) == 1:  # not carried unchanged: put back
            tree[key] = mine
        else:
            set_path(tree, list(here), mine, create=False)
    if kept:
        rest = _ENC.encode(tree)
        if len(rest) - len(_NULL) * len(kept) + sum(map(len, taken)) == len(original):
            if len(kept) == len(takes):  # a pair's takes, held by its plan: looked up by identity
                found = _FRAMES.get(id(takes))
                head, mid = (
                    found[2]
                    if found is not None and found[0] is takes and found[1] == dialect
                    else _held_frame(dialect, takes)
                )
            else:
                head, mid = _frame(dialect, tuple(kept))
            hashed = (_UNTAKEN.get(dialect) or _untaken_frame(dialect))[2]  # digest_bytes' head
            return Raw(b"".join((head, rest, mid, _sha_hex(hashed, rest, taken), b'"}')))
    return Raw(_untaken(dialect, original))


_FRAMES: dict[int, tuple[Takes, str, tuple[bytes, bytes]]] = {}
"""``id(takes)`` -> ``(takes, dialect, _frame(dialect, takes))``: :func:`_frame` without hashing
``takes`` (nested tuples hash anew at every call); the entry holds ``takes``, so its id is not reused."""


def _held_frame(dialect: str, takes: Takes) -> tuple[bytes, bytes]:
    """:func:`_frame`, kept in :data:`_FRAMES` (at most 256 entries)."""
    if len(_FRAMES) >= 256:
        _FRAMES.clear()
    frame = _frame(dialect, takes)
    _FRAMES[id(takes)] = (takes, dialect, frame)
    return frame


def _untaken(dialect: str, original: bytes) -> bytes:
    """The version 5 residue of ``original`` that takes nothing: the original whole (its digest
    :func:`digest_bytes`'s, its head looked up with the frame)."""
    head, mid, hashed = _UNTAKEN.get(dialect) or _untaken_frame(dialect)
    return b"".join((head, original, mid, _sha_hex(hashed, original, ()), b'"}'))


_UNTAKEN: dict[str, tuple[bytes, bytes, bytes]] = {}
"""Dialect -> :func:`_frame` of a residue taking nothing and what its digest hashes first
(:func:`_head_5`), looked up without a call (:func:`_untaken_frame` fills it)."""


def _untaken_frame(dialect: str) -> tuple[bytes, bytes, bytes]:
    """:data:`_UNTAKEN`'s entry for ``dialect``, made and kept (at most 256 dialects)."""
    if len(_UNTAKEN) >= 256:
        _UNTAKEN.clear()
    found = _UNTAKEN[dialect] = (*_frame(dialect, ()), _head_5(dialect))
    return found


class Placer(Protocol):
    """A pair's :func:`placer`: ``(original, its top level or None, output[, carried])`` -> ``(the
    output with the residue at its slot, that output's top level, or None when not decoded)``, or
    ``None``. ``carried``: what the fused function wrote at the carrier's member
    (:func:`handed_key`), which :func:`written_placer`'s function takes for the carrier's payload."""

    def __call__(
        self, original: bytes, members: dict[str, Raw] | None, out: bytes, carried: Any = None, /
    ) -> tuple[bytes, dict[str, Any] | None] | None: ...


def placer(dialect: str, takes: Takes, slot: tuple[str | int, ...]) -> Placer | None:
    """:func:`whole`'s residue of a ``dialect`` document set at ``slot`` of a target document, as
    one function for a pair whose facts allow it (``None`` otherwise): ``slot`` one or two object
    keys.

    The function gives the bytes of the general way (``out``'s top level decoded, the residue made
    by :func:`whole` and set there by :func:`set_path`, encoded): the residue by the same rule
    (:func:`_whole_of`, given the decoded top level), set at the slot found once. It returns
    ``None`` when the slot's parent is present but no object (the general way decides then)."""
    if not 1 <= len(slot) <= 2:
        return None
    outer, inner, nested = slot[0], slot[-1], len(slot) == 2
    if not isinstance(outer, str) or not isinstance(inner, str):
        return None
    decode, encode_ = _RAW_DICT.decode, _ENC.encode
    residue_of = _whole_by(dialect, takes)

    def place(
        original: bytes, members: dict[str, Raw] | None, out: bytes, carried: Any = None
    ) -> tuple[bytes, dict[str, Any]] | None:
        top: dict[str, Any] = decode(out)
        value = residue_of(original, members, top)
        if not nested:
            top[inner] = value
        else:
            parent = top.get(outer)
            if parent is None:
                top[outer] = {inner: value}
            else:
                try:  # a member of a decoded document is JSON: only its type can fail
                    opened = decode(parent)
                except msgspec.ValidationError:  # present but no object
                    return None
                opened[inner] = value
                top[outer] = opened
        return encode_(top), top

    return place


def written_placer(dialect: str, takes: Takes, slot: tuple[str | int, ...]) -> Placer | None:
    """The pair's placer for an output whose writer states its shape
    (:func:`envglot.fields.slot_after_last`: msgspec's encoding of an object never holding ``slot``,
    one or two object keys, the first of two its last member, an object); ``None`` for another slot.

    The residue is written before the output's last closing brace (or two), with a comma unless that
    object is empty: the bytes of the pair's :func:`placer`, which decodes the output, sets the
    residue at ``slot`` (a new last member) and encodes it again (a Struct's encoding decoded as members and encoded
    again is itself). The residue is :func:`_whole_by`'s; for a payload one object key deep in the
    carrier (:func:`_found_by`) it is given the output's text instead of its top level, decoded only
    where the carrier's payload is not found in the text (:func:`_carries`) or the residue needs more
    of the output than its payload. Where it is one key deep in the original too (:func:`handed_key`),
    a ``Raw`` given as ``carried`` (what the fused function wrote at the carrier's member, so those
    bytes; empty where it wrote none, ``fields.ABSENT``: never a payload's bytes, so nothing is taken,
    as for no member) is taken for the carrier's payload, at every size, without the search."""
    if not 1 <= len(slot) <= 2 or not all(isinstance(seg, str) for seg in slot):
        return None
    member = _key_text(str(slot[-1]))
    closing = len(slot)  # the object's brace, and its last member's for a nested slot
    closed = b"}" * closing
    whole_of, decode = _whole_by(dialect, takes), _RAW_DICT.decode
    found_of = _found_by(dialect, takes)
    if found_of is not None:
        # the payload the only take: the text settles every document it finds the carrier in (a
        # failure's residue takes nothing); with later takes, a failure's output is decoded after
        # the search, which only pays from WRITTEN_MIN
        small = 0 if len(takes) == 1 else WRITTEN_MIN
        handed = cast(HandedWholeOf, found_of) if handed_key(takes) is not None else None  # _top_whole's

        def found(
            original: bytes, members: dict[str, Raw] | None, out: bytes, carried: Any = None
        ) -> tuple[bytes, None]:
            if handed is not None and type(carried) is Raw:  # those bytes at the carrier's member
                res = handed(original, members, None, out, carried)
            elif len(out) < small:
                res = whole_of(original, members, decode(out))
            else:
                res = found_of(original, members, None, out)
            lead = b"" if out[-closing - 1] == _OPEN else b","  # an empty object: no comma
            return b"".join((out[:-closing], lead, member, res, closed)), None

        return found

    def place(original: bytes, members: dict[str, Raw] | None, out: bytes, carried: Any = None) -> tuple[bytes, None]:
        res = whole_of(original, members, decode(out))
        lead = b"" if out[-closing - 1] == _OPEN else b","  # an empty object: no comma
        return b"".join((out[:-closing], lead, member, res, closed)), None

    return place


def _carries(out: bytes, text: bytes, mine: Raw) -> bool | None:
    """Whether the member of a stating writer's output (minified, an object of unique keys) whose
    key and colon are ``text`` holds ``mine``'s bytes: ``False`` when ``text`` is nowhere in ``out``
    (no such member); ``None`` when its first ``text`` is not proven a member of ``out``'s own
    object, which it is when preceded by ``{`` or ``,`` with no ``{`` or ``[`` before it (an
    unescaped quote after either opens a string, and a string followed by ``:`` is a key). The
    value there is ``mine`` when ``mine``'s bytes start there and a member's end follows (a JSON
    value's text ends where its own bytes say, but for a number's)."""
    at = out.find(text)
    if at < 0:
        return False
    # (ints: ``in`` with a bytes operand raises and clears a TypeError first)
    if at == 0 or out[at - 1] not in _BEFORE_KEY or _OPEN in (head := out[1:at]) or _BRACKET in head:
        return None
    start = at + len(text)
    end = start + len(mine)
    return out.startswith(mine, start) and out[end : end + 1] in _AFTER


WRITTEN_MIN = 1024
"""Output size from which :func:`written_placer` looks for the carrier's payload in the output's
text for a pair taking more than the payload: below it, a failure's search (its output decoded
after it for the later takes) costs more than a success's saves (the decode of a small output
costs about as much as the search)."""


_AFTER = (b",", b"}")
"""What follows a member's value in a minified object."""


WholeOf = Callable[[bytes, dict[str, Raw] | None, dict[str, Any]], Raw]
"""A pair's :func:`_whole_of` given its takes: ``(original, its top level or None, the output's top
level)`` -> the residue."""

FoundWholeOf = Callable[[bytes, dict[str, Raw] | None, dict[str, Any] | None, bytes | None], Raw]
""":func:`_found_by`'s function: a :data:`WholeOf` given the output's top level, or given ``None``
and a stating writer's output (:func:`written_placer`), decoded only where needed."""


class HandedWholeOf(Protocol):
    """:func:`_top_whole`'s function: a :data:`FoundWholeOf` that may also be handed ``carried``,
    the carrier's payload as the fused function wrote it (a ``Raw``: its bytes are the member's),
    for which the output is not searched."""

    def __call__(
        self,
        original: bytes,
        members: dict[str, Raw] | None,
        out: dict[str, Any] | None,
        written: bytes | None = None,
        carried: Raw | None = None,
        /,
    ) -> Raw: ...


def handed_key(takes: Takes) -> str | None:
    """The carrier's top-level key whose value :func:`written_placer`'s function can be handed
    (``carried``) for a pair's ``takes``: the payload one object key deep in the source and in the
    carrier (:func:`_top_whole`); ``None`` for other takes."""
    return str(takes[0][1][0]) if _one_key_deep(takes) else None


def _whole_by(dialect: str, takes: Takes) -> WholeOf:
    """:func:`_whole_of` for ``dialect``'s documents and ``takes``, as one function giving its bytes.

    - A payload two object keys deep in the source and one in the carrier, every other take inside
      it (code-graph's ``$.data.result``, its details under it): the payload's parent is opened once;
      carried unchanged, it is taken without the loop over the takes (the later ones lie inside a
      member taken, so :func:`_whole_of` finds nothing there); otherwise :func:`_whole_of` goes on
      with the later takes from that opened parent (the state its first take leaves, the payload
      put back).
    - A single take deeper than the source's top level: nothing is taken when the carrier has no
      value there (no walk into the original: a code-graph success's payload is on the way to a
      failure's details); otherwise :func:`_whole_of`, given that value.
    - A payload one object key deep in the source, at object keys of the carrier (one: also given a
      stating writer's output, :func:`_found_by`; more: a payload into code-graph's
      ``$.data.result``) (:func:`_top_whole`): carried unchanged and no later take present, taken
      without the loop over the takes.
    - Anything else: :func:`_whole_of` itself."""
    found = _found_by(dialect, takes)
    if found is None and _one_key_deep(takes, deeper=True):
        found = _top_whole(dialect, takes)
    if found is not None:
        return cast(WholeOf, found)  # given the output's top level
    here, there = takes[0] if takes else ((), ())
    keys = all(isinstance(seg, str) for seg in (*here, *there))
    if keys and len(takes) == 1 and len(here) > 1 and there:

        def single(original: bytes, members: dict[str, Raw] | None, out: dict[str, Any]) -> Raw:
            theirs = value_at(out, there)
            if theirs is None:  # never taken: _whole_of's answer without its walk
                return Raw(_untaken(dialect, original))
            return _whole_of(dialect, original, members, takes, out, theirs)

        return single
    return lambda original, members, out: _whole_of(dialect, original, members, takes, out)


def _found_by(dialect: str, takes: Takes) -> FoundWholeOf | None:
    """:func:`_whole_by`'s function for a payload one object key deep in the carrier, which can be
    given a stating writer's output instead of its top level (:func:`_lead_whole`,
    :func:`_top_whole`); ``None`` for other takes."""
    here, there = takes[0] if takes else ((), ())
    keys = all(isinstance(seg, str) for seg in (*here, *there))
    if keys and len(here) == 2 and len(there) == 1 and all(len(p[0]) > 2 and p[0][:2] == here for p in takes[1:]):
        return _lead_whole(dialect, takes)
    if _one_key_deep(takes):
        return _top_whole(dialect, takes)
    return None


def _theirs(
    out: dict[str, Any] | None, written: bytes | None, text: bytes, carried: str, mine: Raw | None
) -> tuple[Raw | None, dict[str, Any] | None]:
    """The carrier's payload where it is ``mine`` (or, given the output's top level ``out``, the
    carrier's member ``carried``), and the output's top level if known: from ``out``, else from a
    stating writer's output ``written`` (``text`` the member's key and colon) by :func:`_carries`,
    decoded only where the text does not settle it."""
    if out is not None:
        return out.get(carried), out
    if mine is None or written is None:
        return None, None
    same = _carries(written, text, mine)
    if same is None:  # not found in the text: decoded
        top = _top_of(None, written)
        return top.get(carried), top
    return (mine if same else None), None


def _top_of(out: dict[str, Any] | None, written: bytes | None) -> dict[str, Any]:
    """The output's top level: ``out``, or ``written`` decoded (one of them is given)."""
    if out is not None:
        return out
    assert written is not None
    top: dict[str, Any] = _RAW_DICT.decode(written)
    return top


def _one_key_deep(takes: Takes, deeper: bool = False) -> bool:
    """True for a pair's takes whose payload is one object key deep in the source and in the
    carrier (``deeper``: at more than one object key of the carrier), every later take's source
    path object keys (:func:`_top_whole`'s)."""
    if not takes:
        return False
    here, there = takes[0]
    return (
        len(here) == 1
        and (len(there) > 1 if deeper else len(there) == 1)
        and isinstance(here[0], str)
        and all(isinstance(seg, str) for seg in there)
        and all(isinstance(seg, str) for p in takes[1:] for seg in p[0])
    )


def _lead_whole(dialect: str, takes: Takes) -> FoundWholeOf:
    """:func:`_found_by`'s function for a payload two keys deep in the source, one in the carrier,
    every later take inside it."""
    outer, key, carried = (str(seg) for seg in (*takes[0][0], *takes[0][1]))  # keys (_whole_by)
    text = _key_text(carried)
    later = takes[1:]  # held here: _whole_of looks its frame up by identity
    lead_frame = _taken_frame(dialect, takes[:1])
    next_frame = _taken_frame(dialect, later[:1])
    decode = _RAW_DICT.decode

    def whole_of(
        original: bytes, members: dict[str, Raw] | None, out: dict[str, Any] | None, written: bytes | None = None
    ) -> Raw:
        parent = None if members is None else members.get(outer)
        if members is None or parent is None:
            return _whole_of(dialect, original, members, takes, _top_of(out, written))
        try:  # a member of a decoded document is JSON: only its type can fail
            opened = decode(parent)
        except msgspec.ValidationError:  # no object: nothing inside it to take
            return _whole_of(dialect, original, members, takes, _top_of(out, written))
        mine = opened.get(key)
        theirs, out = _theirs(out, written, text, carried, mine)
        if theirs is not None and mine == theirs:  # Raw compares its bytes
            # _whole_of's tree once the payload is taken (null in its place)
            tree: dict[str, Any] = dict(members)
            tree[outer] = opened
            opened[key] = _NULL
            return _one_taken(dialect, original, tree, theirs, lead_frame)
        if not later:
            return Raw(_untaken(dialect, original))
        out = _top_of(out, written)  # the later takes are looked up in the output's top level
        tree = dict(members)
        tree[outer] = opened
        if len(later) > 1:
            return _whole_of(dialect, original, tree, later, out)
        # the payload put back (not carried unchanged): the one take inside it (a failure's
        # details), the carrier first: nothing there, nothing taken, whatever the original holds
        here, there = later[0]
        theirs = value_at(out, there)
        if theirs is None or _swap(tree, here) != theirs:
            return Raw(_untaken(dialect, original))
        return _one_taken(dialect, original, tree, theirs, next_frame)

    return whole_of


def _top_whole(dialect: str, takes: Takes) -> HandedWholeOf:
    """:func:`_found_by`'s function for a payload one object key deep in the source and in the
    carrier (every later take's source path object keys), and :func:`_whole_by`'s for one at
    deeper object keys of the carrier (given the output's top level only): when the original's
    payload is the carrier's bytes and :func:`_whole_of` would find none of the later takes in the original (a
    top-level one absent, a deeper one under an absent or ``null`` member, or under the payload,
    ``null`` once taken), the payload alone is taken (:func:`_one_taken`); where the payload is the
    only take and is not carried unchanged (a failure), nothing is taken (:func:`_whole_of`'s
    answer); any other document takes :func:`_whole_of` (a later take present, or not the only
    take and not carried unchanged). ``handed``, when given, is the carrier's payload (neither
    the output's top level nor its text is read for it)."""
    key, carried = str(takes[0][0][0]), str(takes[0][1][0])  # keys (_whole_by)
    there = takes[0][1]
    text = _key_text(carried) if len(there) == 1 else None  # a deeper carrier: never given a text
    # later takes one key deep: absent from the original's top level (a member present, even
    # ``null``, is taken or put back by _whole_of); deeper: absent or ``null`` there, or under the payload
    tops = tuple(str(p[0][0]) for p in takes[1:] if len(p[0]) == 1)
    deep = tuple(str(p[0][0]) for p in takes[1:] if len(p[0]) > 1 and p[0][0] != key)
    if key in tops:  # (two takes of one member: not a pair's takes today) the general rule

        def general(
            original: bytes,
            members: dict[str, Raw] | None,
            out: dict[str, Any] | None,
            written: bytes | None = None,
            handed: Raw | None = None,
        ) -> Raw:
            return _whole_of(dialect, original, members, takes, _top_of(out, written))

        return general
    frame = _taken_frame(dialect, takes[:1])
    alone = len(takes) == 1  # the payload the only take: not carried unchanged, nothing is taken

    def whole_of(
        original: bytes,
        members: dict[str, Raw] | None,
        out: dict[str, Any] | None,
        written: bytes | None = None,
        handed: Raw | None = None,
    ) -> Raw:
        found = None  # a deeper carrier's payload, looked up: handed to _whole_of
        if members is not None:
            mine = members.get(key)
            if handed is not None:  # the carrier's payload, handed by the fused function
                theirs: Raw | None = handed
            elif text is not None:
                theirs, out = _theirs(out, written, text, carried, mine)
            elif mine is None:  # nothing to compare: not looked up
                theirs = None
            else:  # _whole_of's lookup of a deeper carrier path
                if out is None:
                    out = _top_of(out, written)
                theirs = found = None if out.get(carried, _NULL) == _NULL else value_at(out, there)
            if mine is None or theirs is None or mine != theirs:  # Raw compares its bytes
                if alone:
                    # _whole_of's answer without its copy of the members and its loop (a failure's payload)
                    return Raw(_untaken(dialect, original))
            elif (not tops or all(k not in members for k in tops)) and (
                not deep or all(members.get(k, _NULL) == _NULL for k in deep)
            ):
                tree: dict[str, Any] = dict(members)
                tree[key] = _NULL
                return _one_taken(dialect, original, tree, theirs, frame)
        # any other document: the general rule
        return _whole_of(dialect, original, members, takes, out if out is not None else _top_of(out, written), found)

    return whole_of


def _one_taken(
    dialect: str, original: bytes, tree: dict[str, Any], theirs: Raw, frame: tuple[bytes, bytes, bytes]
) -> Raw:
    """:func:`_whole_of`'s residue once one member is taken: ``tree`` the original opened on the way
    to it, ``null`` in its place, ``theirs`` its bytes in the carrier (the original's), ``frame``
    :func:`_taken_frame` of that take."""
    rest = _ENC.encode(tree)
    if len(rest) - len(_NULL) + len(theirs) != len(original):
        return Raw(_untaken(dialect, original))
    head, mid, hashed = frame
    return Raw(b"".join((head, rest, mid, _sha_hex(hashed, rest, (theirs,)), b'"}')))


def _taken_frame(dialect: str, takes: Takes) -> tuple[bytes, bytes, bytes]:
    """:func:`_frame` of ``takes`` and what the digest hashes first (:func:`_head_5`), for
    :func:`_one_taken`."""
    return (*_frame(dialect, takes), _head_5(dialect))


SPLICE_MIN = 4096
"""Output size from which :func:`placed_whole` is tried: below it, decoding the output's top level
whole costs less than proving the payload's place in its text (about even at 2.5 KB)."""


def placed_whole(
    dialect: str,
    original: bytes,
    members: dict[str, Raw] | None,
    out: bytes,
    takes: Takes,
    slot: tuple[str | int, ...],
) -> bytes | None:
    """``out`` with :func:`whole`'s residue of ``original`` set at ``slot`` (before sealing): the
    bytes of ``encode`` of ``out``'s top level with the residue set there, without decoding or
    encoding ``out``'s payload; ``None`` when that cannot be proven from ``out``'s text (the caller
    then places the residue through the decoded top level).

    The payload (``takes``' first member, or the first present at the original's top level when
    that one is absent or null there — a failure's details —, at one object key of the target, or at two from a
    top-level member of the source) is found in ``out`` as the source's payload bytes right after
    the first ``"KEY":`` of each key in turn (the second after the first): each is a member of the
    object the key before it opens (of the document, for the first) when the text from that
    object's start to it and a ``null`` value close into an object; ``out`` less those bytes
    (``null`` there) must re-encode to itself at each level on the way (no key repeated, every key
    in msgspec's spelling), so its decoded levels are ``out``'s but for the payload; ``takes``'
    other members are looked up in them with the payload put back. A payload deeper in the source
    (code-graph's ``$.data.result``) has the objects on its way opened once, for both its lookup
    and the residue."""
    if not takes:
        return None
    paths = takes[0]
    if members is not None and len(takes) > 1 and _absent(members, paths):
        # the first member absent or null in the original (a failure has no payload): the next
        # one present is the one spliced (a failure's details)
        paths = next((p for p in takes[1:] if not _absent(members, p)), paths)
    here, there = paths
    keys = _keys(there)
    if len(keys) != len(there) or not 1 <= len(keys) <= 2 or (len(keys) == 2 and len(here) != 1):
        # two keys deep only from a top-level member (a payload into code-graph): a deeper one (a
        # failure's details into google-rpc's error.details) is seldom carried unchanged, and the
        # search costs more there than the splice saves
        return None
    start = _member_start(out, keys)  # first: the source's member is opened only for a place found
    if start is None:
        return None
    shared: dict[Any, Any] | None = members  # keyed by any segment, as _whole_of's tree
    if members is not None and len(here) > 1:
        # the objects on the way opened once, for value_at and _whole_of's _swap (fresh, so theirs to change)
        node = shared = dict(members)
        for seg in here[:-1]:
            if not isinstance(seg, str) or seg not in node:
                break
            child = _open(node[seg])
            if not isinstance(child, dict):
                break
            node[seg] = child
            node = child
    # value_at's answer (a top level's members are Raw), without its walk for a top-level member
    value = (
        shared.get(here[0])
        if shared is not None and len(here) == 1
        else value_at(original if shared is None else shared, here)
    )
    if value is None:
        return None
    end = start + len(value)
    if not out.startswith(value, start) or out[end : end + 1] not in (b",", b"}"):
        return None
    rest = out[:start] + b"null" + out[end:]
    try:
        top: dict[str, Any] = _RAW_DICT.decode(rest)
        levels: list[dict[str, Any]] = [top]
        for key in keys[:-1]:  # the object on the way, re-encoding to itself
            inner = top.get(key)
            if inner is None or memoryview(inner)[0] != _OPEN:
                return None
            opened = _RAW_DICT.decode(inner)
            if _ENC.encode(opened) != memoryview(inner):
                return None
            levels.append(opened)
    except msgspec.DecodeError:
        return None
    if _ENC.encode(top) != rest:
        return None
    parent, nested = levels[-1], len(levels) > 1
    parent[keys[-1]] = value  # for a later member under the payload (looked up only when the original has it)
    kept = top[keys[0]]
    if nested:
        top[keys[0]] = parent
    res = _whole_of(dialect, original, shared, takes, top, value, paths)
    if not nested and len(slot) == 1 and isinstance(slot[0], str) and slot[0] not in top:
        # the slot a new last member of ``out``'s object: encode's bytes, less its work (``out``
        # less the payload re-encodes to itself, so ``out`` does; the payload is ``out``'s own text)
        return b"".join((memoryview(out)[:-1], b",", _key_text(slot[0]), res, b"}"))
    if not nested or slot[:1] != keys[:1]:
        parent[keys[-1]] = _NULL
        top[keys[0]] = kept if nested else _NULL
        set_path(top, list(slot), res)
        placed = _ENC.encode(top)
        if placed[start : start + len(_NULL)] == b"null" and placed.startswith(rest[:start]):
            return b"".join((placed[:start], value, placed[start + len(_NULL) :]))
        parent[keys[-1]] = value
        top[keys[0]] = parent if nested else value
        return _ENC.encode(top)
    set_path(top, list(slot), res)  # the slot inside the payload's parent: placed there, no splice
    return _ENC.encode(top)


@lru_cache(maxsize=256)
def _keys(there: tuple[str | int, ...]) -> tuple[str, ...]:
    """The object keys among a carrier path's segments (all of them when it holds no index)."""
    return tuple(seg for seg in there if isinstance(seg, str))


def _absent(members: dict[str, Raw], paths: Paths) -> bool:
    """True if the first member on the way to a take's path is absent or null in ``members``."""
    seg = paths[0][0]
    return not isinstance(seg, str) or members.get(seg, _NULL) == _NULL


def _member_start(out: bytes, keys: tuple[str, ...]) -> int | None:
    """Where the value at ``keys`` (one or two object keys) starts in ``out``, the first ``"KEY":``
    of each key in turn, when the text proves it a member of the object the key before opens (of
    ``out``, for the first): that object's text up to it and ``null}`` decode as an object, and
    the key is preceded by ``{`` or ``,`` (a quote after either opens a string); ``None`` otherwise."""
    opened = 0
    for seg in keys:
        key = _key_text(seg)
        at = out.find(key, opened)
        if at < 1 or out[at - 1] not in _BEFORE_KEY or out[opened] != _OPEN:
            return None
        start = at + len(key)
        if not opened and out.find(b"{", 1, at) < 0 and out.find(b"[", 1, at) < 0:
            # no object or array opens before it: a key of ``out``'s own object, once the caller's
            # decode of ``out`` less the value proves the text JSON (a quote after ``{`` or ``,``
            # is no string's inside, and only a key's is followed by ``"``, then ``:``)
            opened = start
            continue
        try:
            _RAW_DICT.decode(out[opened:start] + b"null}")
        except msgspec.DecodeError:
            return None
        opened = start
    return opened


_BEFORE_KEY = b"{,"


@lru_cache(maxsize=256)
def _key_text(key: str) -> bytes:
    """A top-level member's text up to its value: the key as msgspec spells it and a colon."""
    return _ENC.encode(key) + b":"


def none_in(document: bytes, slot: str, members: dict[str, Raw] | None = None) -> bool:
    """True if ``document`` certainly holds no residue at ``slot`` (a dialect's residue path).

    ``members`` (the document's top level, decoded) settles the first key exactly and narrows
    the search to its value. The slot's last key can only be spelled as itself unless an escape
    is used: so the key's text absent and no ``\\u`` escape (conservative; a key holding a
    character with a short escape of its own is never ruled out) means no residue.
    """
    first_key, nested, key = _SLOTS.get(slot) or _slot_facts(slot)
    if members is not None:
        first = members.get(first_key) if first_key is not None else None
        if first is None:
            return True
        if not nested:
            return False
        document = bytes(first)
    # find: ``in`` raises and clears a TypeError first
    return key is not None and document.find(key) < 0 and document.find(b"\\u") < 0


_SLOTS: dict[str, tuple[str | None, bool, bytes | None]] = {}
"""Residue slot -> :func:`_slot_facts`, looked up without a call (every preserve conversion asks)."""


def _slot_facts(slot: str) -> tuple[str | None, bool, bytes | None]:
    """What :func:`none_in` needs of a residue slot, made and kept in :data:`_SLOTS` (at most 256
    slots): its first key (``None`` if an index), whether it is deeper than one key, and the text
    of its last key (``None`` if that holds a character with a short escape)."""
    segs = slot_path(slot)
    first, last = segs[0], segs[-1]
    key = None if not isinstance(last, str) or any(ch in '"\\/' or ch < " " for ch in last) else last.encode()
    if len(_SLOTS) >= 256:
        _SLOTS.clear()
    facts = _SLOTS[slot] = (first if isinstance(first, str) else None, len(segs) > 1, key)
    return facts


def encode(doc: dict[str, Any]) -> bytes:
    """A patched tree back to JSON bytes."""
    return _ENC.encode(doc)


_WS = b" \t\r\n"
_SPACES = re.compile(rb"[ \t\r\n]*").match


def _member_spans(doc: bytes, start: int) -> list[tuple[int, int, int]]:
    """``(key start, value start, value end)`` of each member of the object whose ``{`` is at
    ``start``, in the order written (a repeated key each time); the text between is whitespace
    and separators."""
    spans: list[tuple[int, int, int]] = []
    depth = 0
    key = value = -1
    for m in TOKENS.finditer(doc, start):
        at = m.start()
        b = doc[at]
        if depth == 1:
            if b == 0x22:  # '"': a key, or a string value
                if key < 0:
                    key = at
                continue
            if b == 0x3A:  # ':'
                value = _SPACES(doc, m.end()).end()  # type: ignore[union-attr]
                continue
            if b in b",}" and value >= 0:  # the member's value ends before the separator
                spans.append((key, value, value + len(doc[value:at].rstrip(_WS))))
                key = value = -1
        if b in b"{[":
            depth += 1
        elif b in b"}]":
            depth -= 1
            if depth == 0:
                break
    return spans


def without(document: bytes, slot: str) -> bytes:
    """``document`` (a JSON object) without the member at ``slot`` (a dialect's residue path),
    every other byte kept (a repeated key, the spacing): each occurrence of the slot's key in
    the object it names (the last occurrence of each parent key) is cut with one separator;
    ``document`` itself when it holds none there."""
    segs = parse_path(slot)
    at = len(document) - len(document.lstrip(_WS))
    for depth, seg in enumerate(segs):
        if not isinstance(seg, str) or document[at : at + 1] != b"{":
            return document
        spans = _member_spans(document, at)
        keyed = [i for i, (k, v, _) in enumerate(spans) if _key_at(document, k, v) == seg]
        if not keyed:
            return document
        if depth < len(segs) - 1:
            at = spans[keyed[-1]][1]
            continue
        cuts: list[tuple[int, int]] = []
        gone = set(keyed)
        for i in keyed:
            if any(j not in gone for j in range(i)):  # the separator before it goes with it
                cuts.append((spans[i - 1][2], spans[i][2]))
            elif i + 1 < len(spans):  # the first one left: the separator after it
                cuts.append((spans[i][0], spans[i + 1][0]))
            else:
                cuts.append((spans[i][0], spans[i][2]))
        out, pos = [], 0
        for a, b in cuts:
            out.append(document[pos:a])
            pos = b
        out.append(document[pos:])
        return b"".join(out)
    return document


def _key_at(doc: bytes, key: int, value: int) -> str | None:
    """The key whose string starts at ``key`` (its member's value at ``value``), decoded."""
    end = doc.rindex(b":", key, value)
    try:
        return _STR.decode(doc[key:end].rstrip(_WS))
    except msgspec.DecodeError:
        return None
