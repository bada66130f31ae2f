"""A source's top level parsed into its wire Struct's members, in one msgspec parse (issue 28).

The straight line of a forced source (:func:`envglot.pipeline.entry`) parses the top level
once, under the lowered recursion budget that is its depth check, for the trust checks and the
reader. Parsed into a Struct of the wire Struct's members rather than a ``dict[str, Raw]``, a
member the reader always decodes (dotbot's ``errors``: :class:`~envglot.keyed.KeyedItems`) is
decoded in that same parse, so a failure's ``details`` are skipped once, not twice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from msgspec import Raw

from .introspect import struct_fields
from .keyed import KeyedItems

__all__ = ["KEYED_TOP_MIN", "TopMembers", "top_parser"]

_ENC = msgspec.json.Encoder()

KEYED_TOP_MIN = 16384
"""Bytes from which the straight line parses a source's top level by :func:`top_parser`: its
members dict is built in Python (about 8 K instructions a document), which costs more than a
second skip of a smaller failure's ``details`` (docs/performance.md, "the top level's parse")."""


class TopMembers(dict[str, Raw]):
    """A document's top-level members as :func:`top_parser` read them: ``decoded`` holds the
    values of the members that parse decoded itself (wire name -> value), which
    :meth:`~envglot.wire.WireDecoder.from_members` takes instead of decoding their spans again."""

    __slots__ = ("decoded",)

    decoded: dict[str, Any]


def top_parser(tp: type[msgspec.Struct], keyed: dict[str, KeyedItems]) -> Callable[[bytes], TopMembers]:
    """The parse of a document's top level into its members (``dict[str, Raw]``, as
    :func:`~envglot.limits.top_members` gives them) that refuses any member ``tp`` does not name
    (``msgspec.ValidationError``: the caller then parses them as ``top_members`` does). The
    members ``keyed`` names (at least one) are decoded by its :class:`~envglot.keyed.KeyedItems`
    in the same parse (:attr:`TopMembers.decoded`); their span is msgspec's encoding of what was
    decoded.

    Exact, wherever :func:`~envglot.limits.spans_whole` then proves the members laid end to end:
    they come from a Struct of ``tp``'s fields (names as on the wire), each ``Raw`` (or the keyed
    items' members form) or absent (``UNSET``), and msgspec keeps the last of a repeated key as
    ``top_members`` does. A keyed member's encoding is never longer than any spelling of the
    same value (its items hold only strings, booleans and their place, :class:`KeyedItems`; no
    string's encoding is longer than any of its spellings; a dropped repeated key, an omitted
    default or whitespace only make the input longer), so equal lengths still prove no
    top-level key repeated, no whitespace, and the keyed member spelled as encoded but for a
    control character's ``\\u00XX`` case: its items' places are taken from that encoding by
    :meth:`KeyedItems.from_twins`, which refuses such keys. A refused proof raises
    ``msgspec.ValidationError`` (``tests/test_top_parse.py``).
    """
    fields = struct_fields(tp)
    specs = [
        (f.name, (keyed[f.encode_name].twins if f.encode_name in keyed else Raw) | msgspec.UnsetType, msgspec.UNSET)
        for f in fields
    ]
    top = msgspec.defstruct(
        f"{tp.__name__}Top", specs, rename={f.name: f.encode_name for f in fields}, forbid_unknown_fields=True
    )
    decode = msgspec.json.Decoder(top).decode
    names = tuple(f.encode_name for f in fields)
    values, unset = msgspec.structs.astuple, msgspec.UNSET
    if not keyed:
        raise TypeError(f"{tp.__name__}: no member to decode in the top level's parse")

    def read(buf: bytes) -> TopMembers:
        out = TopMembers()
        out.decoded = {}
        for k, v in zip(names, values(decode(buf)), strict=True):
            if v is unset:
                continue
            items = keyed.get(k)
            if items is None:
                out[k] = v
                continue
            span = Raw(_ENC.encode(v))
            found = items.from_twins(v, span, False)
            if found is None:
                raise msgspec.ValidationError(f"{k}: its spans are not proven")
            out[k], out.decoded[k] = span, found
        return out

    return read
