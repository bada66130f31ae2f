"""A list of wire error objects decoded with each one's ``details`` read as members in the
same pass (issue 28): a reader's test of the details' keys (the carried-meaning test,
:func:`~envglot.codes.carries_meaning`) then parses them no second time. Exact: the members
are claimed only where their encoding is proven to be the input's own span."""

from __future__ import annotations

import re
import typing
from typing import Any

import msgspec
from msgspec import Raw

from .introspect import struct_fields

__all__ = ["CONTROL_CHAR", "KeyedItems", "KeyedList", "details_members", "encoded_length"]

_ENC = msgspec.json.Encoder()


class KeyedList(list[Any]):
    """A list of wire objects :class:`KeyedItems` decoded: ``members[i]`` is the top level of
    item ``i``'s details (``None`` where it has none), read in the same pass as the item."""

    __slots__ = ("members",)

    members: list[dict[str, Raw] | None]


def details_members(items: list[Any], i: int) -> dict[str, Raw] | None:
    """The top level of ``items[i]``'s details when :class:`KeyedItems` read it with the item,
    else ``None`` (a test of its keys must then decode the details)."""
    return items.members[i] if type(items) is KeyedList else None


_PLAIN_TEXT = (str, str | None, bool, bool | None)
"""The types of an item's other fields :class:`KeyedItems` allows: no spelling of their values
is shorter than msgspec's encoding of them (a number's could be: ``1E2`` is ``100.0``)."""
CONTROL_CHAR = re.compile("[\x00-\x1f]").search
"""A control character in a key: its ``\\u00XX`` escape is the one shortest spelling that is not
unique (either case of its hex digits), so a length proof cannot tell its spelling."""


def encoded_length(members: dict[str, Raw]) -> int:
    """The length of msgspec's encoding of ``members`` (``{"k":v,...}``), counted without encoding
    their values: the keys' list (brackets for braces, its commas the members'), a colon per key,
    each value's span. Raises ``UnicodeEncodeError`` for a lone surrogate in a key."""
    return len(_ENC.encode(list(members))) + len(members) + sum(map(len, members.values()))


class KeyedItems:
    """The decoder of a member holding a list of ``item`` Structs that also reads each item's
    ``place`` (a ``Raw`` field) as ``{key: Raw}`` in the same pass, so that a test of its keys
    (:func:`~envglot.codes.carries_meaning`) parses it no second time.

    Exact: the members are what decoding ``place`` alone gives; its span is found only where the
    input spells the list as msgspec writes it back. Every part of msgspec's encoding is at most
    as long as any spelling of the same value (no whitespace, a repeated key once, each string
    in its shortest escapes; ``Raw`` values are the input's spans), so equal lengths of the
    encoded list and of the member prove every part spelled at its shortest. That length is
    counted without copying: the items encoded without ``place``, plus each one's ``,"place":``
    and its members' shortest length (``item`` has a required field besides ``place``, so each
    item has another member before it). One item whose ``place`` comes last (its key found just
    before that many last bytes) then has the input's own last bytes as its span, taken without
    a copy; otherwise each span is the members encoded again, equal to the input's because the
    one shortest spelling that is not unique, a control character's ``\\u00XX`` in either case,
    is ruled out by looking at the keys. Anything else (a value the members' form refuses, a
    length that differs) is decoded as ``list[item]`` is, the result identical either way."""

    __slots__ = ("_item", "_key", "_place", "_plain", "_twin")

    def __init__(self, item: type[msgspec.Struct], place: str) -> None:
        hints = typing.get_type_hints(item)
        specs: list[tuple[str, Any] | tuple[str, Any, Any]] = []
        rename: dict[str, str] = {}
        for f in struct_fields(item):
            rename[f.name] = f.encode_name
            if f.name == place:
                if hints[f.name] is not Raw:
                    raise TypeError(f"{item.__name__}.{place} is not a Raw field")
                specs.append((f.name, dict[str, Raw] | msgspec.UnsetType, msgspec.UNSET))
                continue
            if hints[f.name] not in _PLAIN_TEXT:
                raise TypeError(f"{item.__name__}.{f.name}: only strings and booleans beside {place}")
            specs.append((f.name, f.type) if f.required else (f.name, f.type, f.default))
        if not any(f.required and f.name != place for f in struct_fields(item)):
            raise TypeError(f"{item.__name__} has no required field besides {place}")
        cfg = item.__struct_config__
        twin = msgspec.defstruct(
            f"{item.__name__}Members",
            specs,
            rename=rename,
            forbid_unknown_fields=cfg.forbid_unknown_fields,
            omit_defaults=cfg.omit_defaults,
        )
        self._item, self._place = item, place
        self._key = b"," + _ENC.encode(rename[place]) + b":"
        self._twin = msgspec.json.Decoder(list[twin])  # type: ignore[valid-type]
        self._plain = msgspec.json.Decoder(list[item])  # type: ignore[valid-type]

    @property
    def twins(self) -> Any:
        """The type of the member's items in their members' form (``list[twin]``): a top-level
        parse that decodes the member itself (:meth:`~envglot.wire.WireDecoder.top_parser`)
        hands them to :meth:`from_twins`."""
        return self._twin.type

    def decode(self, raw: Raw) -> list[Any]:
        """``raw`` decoded as ``list[item]`` (a :class:`KeyedList` where its members are proven)."""
        try:
            twins = self._twin.decode(raw)
        except msgspec.MsgspecError:  # what the members' form refuses: list[item] decides
            return self._plain.decode(raw)
        out = self.from_twins(twins, raw)
        return self._plain.decode(raw) if out is None else out

    def from_twins(self, twins: list[Any], raw: Raw, spans: bool = True) -> list[Any] | None:
        """The items ``twins`` (the members' form of ``raw``) stand for, ``None`` when their
        spans cannot be proven (the caller decodes ``raw`` as ``list[item]``). ``spans``: ``raw``
        is the input's own span; otherwise it is msgspec's encoding of ``twins`` (a top-level
        parse's, whose length the caller proves against the input) and every place's keys are
        checked for the one spelling that is not unique."""
        if not twins:  # a success's ``[]``: nothing to prove
            return twins
        place, sep = self._place, len(self._key)
        found = [getattr(t, place) for t in twins]
        size = 0
        for t, d in zip(twins, found, strict=True):
            if d is not msgspec.UNSET:  # ``{"k":v,...}`` spelled as msgspec would, counted without copying
                if not spans and any(CONTROL_CHAR(k) for k in d):
                    return None
                size += sep + encoded_length(d)
                setattr(t, place, msgspec.UNSET)  # measured apart
        if len(_ENC.encode(twins)) + size != len(raw):
            return None
        span, end = memoryview(raw), len(raw) - 2
        # one error whose details come last: they are the input's own last bytes, taken as they are
        last = len(twins) == 1 and found[0] is not msgspec.UNSET and span[end - size : end - size + sep] == self._key
        out = KeyedList()
        for t, d in zip(twins, found, strict=True):
            kw = msgspec.structs.asdict(t)
            del kw[place]
            if last:
                kw[place] = Raw(span[end - size + sep : end])
            elif d is not msgspec.UNSET:
                if spans and any(CONTROL_CHAR(k) for k in d):
                    return None
                kw[place] = Raw(_ENC.encode(d))
            out.append(self._item(**kw))
        out.members = [None if d is msgspec.UNSET else d for d in found]
        return out
