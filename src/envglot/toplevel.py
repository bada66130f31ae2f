"""A source's top level parsed into its wire Struct's members, in one msgspec parse (issue 28).

The straight line of a forced source (:func:`envglot.pipeline.entry`) parses the top level
once, under the lowered recursion budget that is its depth check, for the trust checks and the
reader. Parsed into a Struct of the wire Struct's members rather than a ``dict[str, Raw]``, a
member the reader always decodes (dotbot's ``errors``: :class:`~envglot.keyed.KeyedItems`;
code-graph's ``data``, which holds the payload one level down) is decoded in that same parse, so
a failure's ``details`` or a payload are skipped once, not twice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from msgspec import Raw

from .fields import Unit, attribute
from .introspect import struct_fields
from .keyed import KeyedItems

__all__ = ["KEYED_TOP_MIN", "TopMembers", "never_longer", "top_parser"]

_ENC = msgspec.json.Encoder()

KEYED_TOP_MIN = 16384
"""Bytes from which the straight line parses a source's top level by :func:`top_parser`: its
members dict is built in Python (about 8 K instructions a document), which costs more than a
second skip of a smaller failure's ``details`` (docs/performance.md, "the top level's parse")."""


_EMPTY_LIST = Raw(b"[]")
"""msgspec's encoding of an empty list, the span :func:`top_parser` gives an empty keyed member
(``Raw`` holds its bytes and nothing changes them: one object serves every document)."""


class TopMembers(dict[str, Raw]):
    """A document's top-level members as :func:`top_parser` read them: ``decoded`` holds the
    values of the members that parse decoded itself (wire name -> value), which
    :meth:`~envglot.wire.WireDecoder.from_members` takes instead of decoding their spans again."""

    __slots__ = ("decoded",)

    decoded: dict[str, Any]


def top_parser(
    tp: type[msgspec.Struct], keyed: dict[str, KeyedItems], typed: frozenset[str] = frozenset()
) -> Callable[[bytes], TopMembers]:
    """The parse of a document's top level into its members (``dict[str, Raw]``, as
    :func:`~envglot.limits.top_members` gives them) that refuses any member ``tp`` does not name
    (``msgspec.ValidationError``: the caller then parses them as ``top_members`` does). The
    members ``keyed`` names are decoded by its :class:`~envglot.keyed.KeyedItems`, those ``typed``
    names by their field's own type (at least one member in all), in the same parse
    (:attr:`TopMembers.decoded`); their span is msgspec's encoding of what was decoded.

    Exact, wherever :func:`~envglot.limits.spans_whole` then proves the members laid end to end:
    they come from a Struct of ``tp``'s fields (names as on the wire), each ``Raw`` (or the keyed
    items' members form) or absent (``UNSET``), and msgspec keeps the last of a repeated key as
    ``top_members`` does. A keyed member's encoding is never longer than any spelling of the
    same value (its items hold only strings, booleans and their place, :class:`KeyedItems`; no
    string's encoding is longer than any of its spellings; a dropped repeated key, an omitted
    default or whitespace only make the input longer), so equal lengths still prove no
    top-level key repeated, no whitespace, and the keyed member spelled as encoded but for a
    control character's ``\\u00XX`` case: its items' places are taken from that encoding by
    :meth:`KeyedItems.from_twins`, which refuses such keys. A typed member's type is held to the
    same rule (:func:`never_longer`: no float, whose ``1e2`` encodes as the longer ``100.0``, no
    Struct that writes a default the input left out); its span's bytes may differ from the
    input's (its Structs' keys in field order, a control character's escape in upper case), so
    what the reader takes from it is the decoded value, never the span. A refused proof raises
    ``msgspec.ValidationError`` (``tests/test_top_parse.py``).
    """
    fields = struct_fields(tp)
    for f in fields:
        if f.encode_name in typed and not never_longer(f.type):
            raise TypeError(f"{tp.__name__}.{f.name}: its encoding may be longer than its input")
    specs = [(f.name, _member_type(f, keyed, typed) | msgspec.UnsetType, msgspec.UNSET) for f in fields]
    top = msgspec.defstruct(
        f"{tp.__name__}Top", specs, rename={f.name: f.encode_name for f in fields}, forbid_unknown_fields=True
    )
    if not keyed and not typed:
        raise TypeError(f"{tp.__name__}: no member to decode in the top level's parse")
    # generated: each member read by its attribute, in field order, without a per-member loop
    u = Unit(f"top_parser_{tp.__name__}")
    unset, encode, raw = u.ref(msgspec.UNSET, "UNSET"), u.ref(_ENC.encode, "encode"), u.ref(Raw, "Raw")
    u.emit("def read(buf):", 0)
    u.emit(f"s = {u.ref(msgspec.json.Decoder(top).decode, 'decode')}(buf)")
    u.emit(f"out = {u.ref(TopMembers, 'TopMembers')}()")
    u.emit("out.decoded = done = {}")
    for f in fields:
        k = f.encode_name
        u.emit(f"v = {attribute('s', f.name)}")
        u.emit(f"if v is not {unset}:")
        if k in keyed:  # (an empty list, a success's: its encoding and items as from_twins gives them)
            u.emit("if not v:", 2)
            u.emit(f"out[{k!r}] = {u.ref(_EMPTY_LIST, 'EMPTY_LIST')}", 3)
            u.emit(f"done[{k!r}] = v", 3)
            u.emit("else:", 2)
            u.emit(f"span = {raw}({encode}(v))", 3)
            u.emit(f"found = {u.ref(keyed[k].from_twins, 'from_twins')}(v, span, False)", 3)
            u.emit("if found is None:", 3)
            u.emit(f"raise {u.ref(msgspec.ValidationError, 'Refused')}({f'{k}: its spans are not proven'!r})", 4)
            u.emit(f"out[{k!r}] = span", 3)
            u.emit(f"done[{k!r}] = found", 3)
        elif k in typed:
            u.emit(f"out[{k!r}] = {raw}({encode}(v))", 2)
            u.emit(f"done[{k!r}] = v", 2)
        else:
            u.emit(f"out[{k!r}] = v", 2)
    u.emit("return out")
    read: Callable[[bytes], TopMembers] = u.build("read")
    return read


def _member_type(f: msgspec.structs.FieldInfo, keyed: dict[str, KeyedItems], typed: frozenset[str]) -> Any:
    """The type :func:`top_parser` decodes member ``f`` as: a keyed member's items, a typed
    member's own type, else ``Raw``."""
    if f.encode_name in keyed:
        return keyed[f.encode_name].twins
    return f.type if f.encode_name in typed else Raw


def never_longer(tp: Any) -> bool:
    """Whether msgspec's encoding of any value of ``tp`` is never longer than a JSON spelling that
    decodes to it: strings (no escape msgspec writes is longer than one the input may use),
    booleans, integers, ``null``, ``Raw`` (written as read), lists and unions of them, and
    Structs that omit their defaults and write no tag (a member the input left out stays out)."""
    import msgspec.inspect  # when a typed top parse is first built: ``import envglot`` leaves it out

    return _never_longer(msgspec.inspect.type_info(tp))


def _never_longer(t: Any) -> bool:
    import msgspec.inspect as mi

    if isinstance(t, (mi.StrType, mi.BoolType, mi.IntType, mi.NoneType, mi.RawType)):
        return True
    if isinstance(t, mi.Metadata):
        return _never_longer(t.type)
    if isinstance(t, (mi.ListType, mi.VarTupleType)):
        return _never_longer(t.item_type)
    if isinstance(t, mi.UnionType):
        return all(_never_longer(a) for a in t.types)
    if isinstance(t, mi.StructType):
        return (
            t.cls.__struct_config__.omit_defaults
            and not t.array_like
            and t.tag_field is None
            and all(_never_longer(f.type) for f in t.fields)
        )
    return False
