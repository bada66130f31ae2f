"""Wire helpers shared by the dialect modules and the declaration compiler (no dialect-specific knowledge here).

Over 500 lines: :class:`WireDecoder`'s strict decode, its slow path and the members reader it
generates per wire Struct share its fields' decoders; the helpers beside it are what every
dialect module imports from here.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import msgspec
from msgspec import Raw

from .canonical import Extra, Problem
from .context import Context
from .diagnostics import Kind
from .errors import ParseError
from .excerpt import key_segment, quoted
from .fields import ABSENT, Unit
from .introspect import struct_fields
from .keyed import KeyedItems
from .tables import DialectMap
from .toplevel import TopMembers, top_parser

__all__ = [
    "ABSENT",
    "ISO_TIMESTAMP",
    "OBJECT_AT",
    "RAW_EMPTY_OBJECT",
    "RAW_NULL",
    "WRAPPED_AT",
    "WireDecoder",
    "document_id",
    "document_key",
    "drop_success_problems",
    "error_details",
    "is_timestamp",
    "object_payload",
    "opt",
    "raw_is_object",
    "raw_or_absent",
    "slug",
    "unwrap_payload",
    "wrap_payload",
]

RAW_EMPTY_OBJECT = Raw(b"{}")
RAW_NULL = Raw(b"null")
_TRUE, _FALSE = Raw(b"true"), Raw(b"false")
_RAW_DICT = msgspec.json.Decoder(dict[str, Raw])
_RAW_LIST = msgspec.json.Decoder(list[Raw])
_ENC = msgspec.json.Encoder()
_Tree = dict[str, Any]  # key -> subtree (dict), ("[]", subtree) for lists of objects, or None


OBJECT_AT = re.compile(rb"\{").match
"""Matches at a JSON object's first byte (a hook's common case tests it inline: :func:`~envglot.fields.common`)."""
WRAPPED_AT = re.compile(rb'\{[ \t\r\n]*"value"[ \t\r\n]*:').match
"""Matches at a ``{"value": ...}`` object's head (what :func:`unwrap_payload` looks into)."""


_SPACED_HEAD = re.compile(rb'\s|\{\s|\{"[^"\\]*(?:\\.[^"\\]*)*"(?:\s|:\s)').match
"""Unrolled string pattern: linear in a key's length, no backtracking frame per character."""
_HEAD = 4096
"""Bytes the space probe looks at: a first key longer than this counts as minified."""


def may_be_loose(buf: bytes, tight_top: bool = False) -> bool:
    """False if ``buf`` (a JSON object) is minified as far as a cheap look can tell.

    Exact for newlines, tabs and carriage returns (JSON strings cannot hold them raw, so any
    is insignificant whitespace: pretty-printed documents); for spaces it looks at the first
    key only (``json.dumps`` default separators, ``{"k": v, ...}``). A document spaced only
    further in (or after a first key of more than 4 KiB) is taken as minified: it converts
    the same, its output is just not minimal. ``tight_top``: the caller knows the top level
    holds no whitespace (:func:`~envglot.limits.spans_whole`), so the first key is not spaced.
    """
    # the head first (a spaced document is answered without scanning it); \n, \r, \t tested
    # by byte value: ``b"\n" in buf`` raises and clears a TypeError first
    if not tight_top and _SPACED_HEAD(buf, 0, _HEAD) is not None:
        return True
    return 10 in buf or 13 in buf or 9 in buf


_LOOSE_HEAD = re.compile(rb'(?!\{"[^"\\]*":\S)').match
"""Matches (an empty match) unless the head is one ``may_be_loose``'s pattern cannot match: ``{"``, a
first key without a backslash, ``:`` and a byte that is no space (``\\s``: the bytes its pattern
takes as spaces). Negated, so the common, tight head answers ``None``: no match object is made."""


def minified(buf: bytes) -> bool:
    """``not may_be_loose(buf)``, without its pattern where the head shows it cannot match (one
    match of :data:`_LOOSE_HEAD`, which costs less than that pattern's alternatives or byte tests)."""
    if _LOOSE_HEAD(buf, 0, _HEAD) is None:
        return not (10 in buf or 13 in buf or 9 in buf)
    return not may_be_loose(buf)


_HEADS_KEPT = 4
"""The most heads :func:`minified_alike` keeps (a success's and a failure's first member, say)."""
_HEAD_KEPT = 64
"""The longest head (``{"key":`` and a byte) :func:`minified_alike` keeps."""


def minified_alike() -> Callable[[bytes], bool]:
    """:func:`minified` for one source's documents, which their producer lays out alike: the last
    :data:`_HEADS_KEPT` tight heads seen (``{"key":`` and the byte after it, where
    :data:`_LOOSE_HEAD` answered ``None``) are tested first, by one ``startswith`` of their tuple
    (less than the pattern's match costs).

    Exact: a kept head is ``{"``, a key without ``"`` or ``\\``, ``":`` and a byte ``\\s`` does
    not take (as the document it was taken from showed, within :data:`_HEAD` bytes); a document
    starting with it matches ``\\{"[^"\\\\]*":\\S`` at 0 within :data:`_HEAD` bytes too, so
    :data:`_LOOSE_HEAD` answers ``None`` there, and :func:`minified` makes its three byte tests.
    Anything else asks :func:`minified`'s own tests (and keeps its head where it is tight). The
    heads are one tuple, replaced whole: a thread reads the heads another wrote, or the earlier."""
    kept: tuple[bytes, ...] = (b'{"":0',)  # (a tight head: an empty key and a byte that is no space)

    def minified_alike(buf: bytes) -> bool:
        nonlocal kept
        if buf.startswith(kept):
            return not (10 in buf or 13 in buf or 9 in buf)
        if _LOOSE_HEAD(buf, 0, _HEAD) is None:
            n = buf.find(b'"', 2) + 3  # (no backslash in the key: its closing quote, ``:``, a byte)
            if n <= _HEAD_KEPT:
                kept = (buf[:n], *kept[: _HEADS_KEPT - 1])
            return not (10 in buf or 13 in buf or 9 in buf)
        return not may_be_loose(buf)

    return minified_alike


def drop_success_problems(problems: tuple[Problem, ...], ctx: Context, dialect: str, success: str) -> None:
    """Report a success's problems as dropped: ``dialect``'s success (``success`` says what it is)
    has no place for them."""
    if problems and ctx.report.collecting:
        ctx.report.add(
            Kind.FIELD_DROPPED,
            ctx.path("problems"),
            dialect,
            field=f"a success's {len(problems)} error(s)",
            because=f"a {dialect} success ({success}) carries none",
        )


def raw_is_object(raw: Raw) -> bool:
    """True if ``raw`` holds a JSON object."""
    return OBJECT_AT(raw) is not None


def wrap_payload(raw: Raw) -> Raw:
    """``{"value": raw}`` for a dialect whose payload must be an object."""
    return Raw(b'{"value":' + bytes(raw) + b"}")


def object_payload(payload: Raw | None, ok: bool, ctx: Context, dialect: str) -> Raw:
    """The payload for a dialect whose payload must be an object (dotbot ``data``, response-v2 ``data``).

    Absent or a failure's ``null`` becomes ``{}``; a success's explicit ``null`` too, reported
    as coerced; any other non-object is wrapped as ``{"value": ...}`` (reported).
    """
    if payload is None or payload == RAW_NULL:
        if payload is not None and ok:
            ctx.report.add(
                Kind.VALUE_COERCED, ctx.path("payload"), dialect, value="null payload", change="written as {}"
            )
        return RAW_EMPTY_OBJECT
    if not raw_is_object(payload):
        ctx.report.add(Kind.PAYLOAD_WRAPPED, ctx.path("payload"), dialect, value="non-object payload")
        return wrap_payload(payload)
    return payload


def unwrap_payload(raw: Raw) -> Raw | None:
    """The wrapped value if ``raw`` is exactly ``{"value": <non-object>}``, else ``None``."""
    if WRAPPED_AT(raw) is None:
        return None
    d = _RAW_DICT.decode(raw)
    if len(d) != 1 or "value" not in d:
        return None
    inner = d["value"]
    return None if raw_is_object(inner) else inner


def _struct_of(tp: Any) -> Any:
    """The Struct type inside ``tp`` (through Optional, unions, UnsetType), if any."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        for a in typing.get_args(tp):
            s = _struct_of(a)
            if s is not None:
                return s
        return None
    if origin is list or origin is tuple:
        args = typing.get_args(tp)
        s = _struct_of(args[0]) if args else None
        return ("[]", s) if s is not None else None
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return tp
    return None


def known_tree(tp: type[msgspec.Struct]) -> _Tree:
    """Wire names of ``tp`` (recursively through nested Structs) as a dict tree."""
    tree: _Tree = {}
    hints = typing.get_type_hints(tp)
    for f in struct_fields(tp):
        sub = _struct_of(hints[f.name])
        if isinstance(sub, tuple):
            tree[f.encode_name] = ("[]", known_tree(sub[1]))
        elif sub is not None:
            tree[f.encode_name] = known_tree(sub)
        else:
            tree[f.encode_name] = None
    return tree


class WireDecoder:
    """Decode a dialect's wire Struct (strict, fast) and collect unknown fields on a slow path.

    The wire Structs forbid unknown fields, so a clean document decodes in one pass;
    a document with extra keys is decoded as a tree of ``Raw`` to set them aside as
    :class:`Extra` values (and the residue key, if any) before the strict decode.
    """

    __slots__ = (
        "_dec",
        "_fields",
        "_keyed",
        "_read",
        "_read_top",
        "_residue",
        "_top",
        "_tp",
        "_tree",
        "_typed",
        "dialect",
    )

    def __init__(
        self,
        tp: type[msgspec.Struct],
        dialect: str,
        residue_path: str,
        keyed: dict[str, str] | None = None,
        typed: frozenset[str] = frozenset(),
    ) -> None:
        """``keyed``: a member (wire name) holding a list of Structs -> the ``Raw`` field of its
        items that :meth:`from_members` reads as members too (:class:`KeyedItems`). ``typed``:
        members (wire names) the top level's parse decodes by their own type (:meth:`top_parser`:
        a member holding the payload one level down, code-graph's ``data``)."""
        self.dialect = dialect
        self._tp = tp
        self._dec: msgspec.json.Decoder[Any] | None = None  # built on first use (see :meth:`decoder`)
        self._tree: _Tree | None = None
        self._fields: dict[str, tuple[str, Callable[[Raw], Any] | None]] | None = None
        self._residue = residue_path
        self._keyed = keyed or {}
        self._typed = typed
        self._top: Callable[[bytes], TopMembers] | None = None
        self._read: Callable[[dict[str, Raw]], Any] | None = None  # generated on first use (see :meth:`_reader`)
        self._read_top: Callable[[TopMembers], Any] | None = None  # the same for the top parse's members

    def decoder(self) -> msgspec.json.Decoder[Any]:
        """The strict decoder, built on first use: building one evaluates the Structs'
        annotations, a cost a command that never reads this dialect should not pay."""
        if self._dec is None:
            self._dec = msgspec.json.Decoder(self._tp)
        return self._dec

    def decode(
        self, buf: bytes | memoryview | str, members: dict[str, Raw] | None = None
    ) -> tuple[Any, tuple[Extra, ...], Raw | None]:
        """Returns ``(wire, extras, residue)``; raises :class:`ParseError` with the JSON path.

        ``members``: the top level of ``buf`` (``dict[str, Raw]``), already decoded by the
        caller, whose parse has checked ``buf`` whole: the wire Struct is then made from them
        (:meth:`from_members`) without a second pass over the payload, whenever that gives
        what decoding ``buf`` gives.
        """
        if members is not None:
            wire = self.from_members(members)
            if wire is not None:
                return wire, (), None
        dec = self._dec if self._dec is not None else self.decoder()
        try:
            return dec.decode(buf), (), None
        except msgspec.ValidationError as exc:
            msg = str(exc)
            if "unknown field" not in msg:
                # A repeated key is validated at each occurrence here, while the slow path (like
                # JSON.parse) keeps the last: read the document as the slow path does, so an
                # earlier occurrence never decides (nor a residue's presence, which takes that path).
                try:
                    return self._slow(buf)
                except ParseError:
                    raise _parse_error(msg, self.dialect) from None
        except msgspec.DecodeError as exc:
            raise ParseError(f"invalid JSON: {exc}", path="$", dialect=self.dialect) from None
        return self._slow(buf)

    def from_members(self, members: dict[str, Raw]) -> Any:
        """The wire Struct decoding the document whose top level is ``members`` gives, or ``None``
        when only a decode of the document can say (an unknown or missing member, a value its
        field's type refuses: the errors and the slow path are the decoder's).

        A ``Raw`` field takes the member's span as it is; every other field's value is decoded
        by that field's type (nested Structs forbid unknown fields as the wire Struct does).
        A repeated key is seen once here, with its last value, as the slow path sees it. Members
        :meth:`top_parser` decoded (:class:`TopMembers`) are taken as it decoded them.
        """
        if type(members) is dict:
            return (self._read or self._reader())(members)
        if type(members) is TopMembers:
            return (self._read_top or self._reader(True))(members)
        fields = self._fields if self._fields is not None else self._field_decoders()
        kw: dict[str, Any] = {}
        try:
            for key, raw in members.items():
                field = fields.get(key)
                if field is None:
                    return None
                name, dec = field
                kw[name] = raw if dec is None else dec(raw)
            return self._tp(**kw)
        except (msgspec.MsgspecError, TypeError):
            return None

    def _reader(self, top: bool = False) -> Callable[[dict[str, Raw]], Any]:
        """:meth:`from_members` for a plain members dict, generated for the wire Struct: each
        field's member looked up by its wire name and decoded by its type (a ``Raw`` field taken
        as it is, a ``bool`` one compared with ``true`` and ``false``, an absent one given its
        default), the Struct built by position, without the per-member loop and its keyword
        dict. The same answer as the loop: ``None`` for a missing required member, an unknown one
        (the members outnumber the fields found) or a value its type refuses. ``top``: for the
        members of :meth:`top_parser` (:class:`TopMembers`), a member it decoded taken from
        ``decoded`` instead of decoding its span."""
        fields = self._fields if self._fields is not None else self._field_decoders()
        tp = self._tp
        decoded = (set(self._keyed) | self._typed) if top else set()
        u = Unit(f"from_members_{self.dialect}" + ("_top" if top else ""))
        positional = len(getattr(tp, "__match_args__", ()))
        hints = typing.get_type_hints(tp)
        required: list[tuple[str, str]] = []
        optional: list[tuple[str, str]] = []
        args = []
        for i, f in enumerate(struct_fields(tp)):
            name, dec = fields[f.encode_name]
            x = f"x{i}"
            value = x if dec is None else f"{u.ref(dec, 'd_' + name)}({x})"
            if f.encode_name in decoded:  # (the top parse's members: always there for such a member)
                value = f"(done[{f.encode_name!r}] if {f.encode_name!r} in done else {value})"
            if hints[name] is bool:  # a span is the literal's one spelling: compared, not decoded
                value = (
                    f"True if {x} == {u.ref(_TRUE, 'TRUE')} else False if {x} == {u.ref(_FALSE, 'FALSE')} else {value}"
                )
            if f.default is not msgspec.NODEFAULT:
                value = f"{u.ref(f.default, 'D_' + name)} if {x} is None else {value}"
            elif f.default_factory is not msgspec.NODEFAULT:
                value = f"{u.ref(f.default_factory, 'F_' + name)}() if {x} is None else {value}"
            (required if f.required else optional).append((x, f.encode_name))
            args.append(value if i < positional else f"{name}={value}")
        u.emit("def from_members(m):", 0)
        if decoded:
            u.emit("done = m.decoded")
        if required:  # a missing one: the Struct refuses it
            u.emit("try:")
            for x, key in required:
                u.emit(f"{x} = m[{key!r}]", 2)
            u.emit("except KeyError:")
            u.emit("return None", 2)
        for x, key in optional:
            u.emit(f"{x} = m.get({key!r})")
        count = " + ".join([str(len(required)), *(f"({x} is not None)" for x, _ in optional)])
        u.emit(f"if len(m) != {count}:  # a member the Struct does not name")
        u.emit("return None", 2)
        u.emit("try:")
        u.emit(f"return {u.ref(tp, tp.__name__)}({', '.join(args)})", 2)
        u.emit(f"except {u.ref((msgspec.MsgspecError, TypeError), 'REFUSED')}:")
        u.emit("return None", 2)
        read = u.build("from_members")
        if top:
            self._read_top = read
        else:
            self._read = read
        return read

    def top_parser(self) -> Callable[[bytes], TopMembers] | None:
        """:func:`~envglot.toplevel.top_parser` of the wire Struct with the members the
        constructor's ``keyed`` and ``typed`` name (``None`` when they name none), built on first use."""
        if not self._keyed and not self._typed:
            return None
        if self._top is None:
            self._top = top_parser(self._tp, self._keyed_items(), self._typed)
        return self._top

    def _keyed_items(self) -> dict[str, KeyedItems]:
        """Wire name -> the :class:`KeyedItems` reading that member (the constructor's ``keyed``)."""
        hints = typing.get_type_hints(self._tp)
        out: dict[str, KeyedItems] = {}
        for f in struct_fields(self._tp):
            place = self._keyed.get(f.encode_name)
            if place is not None:
                sub = _struct_of(hints[f.name])
                if not isinstance(sub, tuple):
                    raise TypeError(f"{self._tp.__name__}.{f.name} is no list of Structs")
                out[f.encode_name] = KeyedItems(sub[1], place)
        return out

    def _field_decoders(self) -> dict[str, tuple[str, Callable[[Raw], Any] | None]]:
        """Wire name -> (attribute, the decode of its type; ``None`` for a ``Raw`` field)."""
        hints = typing.get_type_hints(self._tp)
        keyed = self._keyed_items()
        out: dict[str, tuple[str, Callable[[Raw], Any] | None]] = {}
        for f in struct_fields(self._tp):
            tp = hints[f.name]
            items = keyed.get(f.encode_name)
            if items is not None:
                out[f.encode_name] = (f.name, items.decode)
            else:
                out[f.encode_name] = (f.name, None if tp is Raw else msgspec.json.Decoder(f.type).decode)
        self._fields = out
        return out

    def _slow(self, buf: bytes | memoryview | str) -> tuple[Any, tuple[Extra, ...], Raw | None]:
        """Set unknown fields (and the residue) aside level by level, then decode strictly."""
        extras: list[Extra] = []
        residue: list[Raw] = []
        try:  # the strict pass stops at the first unknown key: the rest may still be broken JSON
            top = _RAW_DICT.decode(buf)
        except msgspec.DecodeError as exc:
            raise ParseError(f"invalid JSON: {exc}", path="$", dialect=self.dialect) from None
        if self._tree is None:
            self._tree = known_tree(self._tp)
        cleaned = self._strip(top, self._tree, "$", extras, residue)
        try:
            wire = self.decoder().decode(_ENC.encode(cleaned))
        except msgspec.ValidationError as exc:
            raise _parse_error(str(exc), self.dialect) from None
        return wire, tuple(extras), residue[0] if residue else None

    def _strip(
        self, obj: dict[str, Raw], tree: _Tree, path: str, extras: list[Extra], residue: list[Raw]
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, val in obj.items():
            p = path + key_segment(key)
            if key not in tree:
                if p == self._residue:
                    residue.append(val)
                else:
                    extras.append(Extra(dialect=self.dialect, path=p, value=val))
                continue
            sub = tree[key]
            if isinstance(sub, dict) and raw_is_object(val):
                out[key] = self._strip(_RAW_DICT.decode(val), sub, p, extras, residue)
            elif isinstance(sub, tuple) and memoryview(val)[:1] == b"[":
                items: list[Any] = []
                for i, item in enumerate(_RAW_LIST.decode(val)):
                    if raw_is_object(item):
                        items.append(self._strip(_RAW_DICT.decode(item), sub[1], f"{p}[{i}]", extras, residue))
                    else:
                        items.append(item)
                out[key] = items
            else:
                out[key] = val
        return out


def _parse_error(msg: str, dialect: str) -> ParseError:
    path = "$"
    i = msg.rfind(" - at `")
    if i >= 0:
        path = msg[i + 7 : -1]
        msg = msg[:i]
    return ParseError(f"not a valid {dialect} envelope: {msg}", path=path, dialect=dialect)


def opt(raw: Raw) -> Raw | None:
    """``None`` for an absent optional Raw wire field."""
    return None if raw is ABSENT else raw


def raw_or_absent(raw: Raw | None) -> Raw:
    """The wire value for an optional canonical Raw."""
    return ABSENT if raw is None else raw


@typing.overload
def object_or_wrapped(raw: Raw, ctx: Context, field: str, dialect: str, index: int | None = None) -> Raw: ...
@typing.overload
def object_or_wrapped(raw: None, ctx: Context, field: str, dialect: str, index: int | None = None) -> None: ...
@typing.overload
def object_or_wrapped(
    raw: Raw | None, ctx: Context, field: str, dialect: str, index: int | None = None
) -> Raw | None: ...
def object_or_wrapped(raw: Raw | None, ctx: Context, field: str, dialect: str, index: int | None = None) -> Raw | None:
    """``raw`` for a target field that must be an object or null (error ``details``, warning context).

    Any other JSON value is wrapped as ``{"value": ...}`` and reported, like a non-object payload.
    """
    if raw is None or raw == RAW_NULL or raw_is_object(raw):
        return raw
    if ctx.report.collecting:
        ctx.report.add(Kind.PAYLOAD_WRAPPED, ctx.path(field, index), dialect, value=f"non-object {field}")
    return wrap_payload(raw)


def error_details(raw: Raw | None, ctx: Context, dialect: str, index: int | None = None) -> Raw | None:
    """An error's ``details`` for a target whose spec makes it an optional object: ``null``
    carries nothing and is left out (never written as ``details: null``); any other non-object
    is wrapped (:func:`object_or_wrapped`)."""
    return None if raw is None or raw == RAW_NULL else object_or_wrapped(raw, ctx, "problem.details", dialect, index)


ISO_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})")
"""An ISO 8601 date-time with a zone: what dotbot's and code-graph's contracts accept (writers
and ``validate`` share it)."""


def is_timestamp(value: str) -> bool:
    """True for an ISO 8601 date-time with a time zone that names a real instant."""
    if ISO_TIMESTAMP.fullmatch(value) is None:
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def timestamp_for(value: str | None, ctx: Context, target: DialectMap, what: str, utc: bool) -> str | None:
    """``value`` as a target that requires an ISO 8601 time stamp (``utc``: in UTC) can carry it.

    ``None`` when there is none or it is no time stamp at all (the caller synthesizes one; the
    dropped value is reported); a time stamp in another zone is converted to the same instant
    in UTC (reported).
    """
    if value is None:
        return None
    if not is_timestamp(value):
        ctx.report.add(
            Kind.VALUE_COERCED,
            ctx.path("timestamp"),
            target.name,
            value=f"{target.name} {what} {quoted(value)}",
            change="replaced",
            because="it must be an ISO 8601 time stamp with a zone",
        )
        return None
    if utc and not value.endswith(("Z", "+00:00")):
        when = datetime.fromisoformat(value).astimezone(UTC)
        utc_value = when.isoformat().replace("+00:00", "Z")
        ctx.report.add(
            Kind.VALUE_COERCED,
            ctx.path("timestamp"),
            target.name,
            value=f"{target.name} {what} {quoted(value)}",
            change=f"written as {utc_value!r}",
            because="it is in UTC",
        )
        return utc_value
    return value


def count_for(value: int | None, ctx: Context, field: str, dialect: str) -> int | None:
    """A count or delay (total, page size, offset, limit, retry delay) a target can carry: a
    negative one is left out, reported."""
    if value is None or value >= 0:
        return value
    ctx.report.add(Kind.FIELD_DROPPED, ctx.path(field), dialect, field=f"{field} {value}", because="it is negative")
    return None


# --- synthesized values (the documented rules of ``[synthesize]`` templates) --------------------

_NON_SLUG = re.compile(r"[^a-z0-9]+")


def slug(tool: str | None, empty: str = "unknown") -> str:
    """``tool`` in lower kebab case (``Search.Docs`` -> ``search-docs``; nothing left: ``empty``)."""
    return _NON_SLUG.sub("-", (tool or "").lower()).strip("-") or empty


def document_id(tool: str | None, ok: bool, payload: Raw | None, problems: tuple[Problem, ...]) -> str:
    """A reproducible 8-character base-36 id: a hash of the tool, the outcome, the payload and
    the first error's code and message (code-graph's ``requestId``, a declaration's ``{id}``)."""
    return document_key(tool, ok, payload, (problems[0].code, problems[0].message) if problems else None)


_B36 = "0123456789abcdefghijklmnopqrstuvwxyz"
_B36_PAIRS = tuple(lo + hi for hi in _B36 for lo in _B36)
"""Two base-36 digits, the lower first, of each number below ``36 ** 2`` (:func:`document_key`)."""


def document_key(tool: str | None, ok: bool, payload: Raw | None, first: tuple[str | None, str | None] | None) -> str:
    """:func:`document_id` of the first error's ``(code, message)`` (``None``: no error): the
    hash's eight lowest base-36 digits, the lowest first."""
    import hashlib  # imported by the first id, not with envglot (OpenSSL's start is costly)

    said = b"" if first is None else (first[0] or "").encode() + (first[1] or "").encode()
    head = (tool or "").encode() + (b"1" if ok else b"0")
    n = int.from_bytes(
        hashlib.blake2b(b"".join((head, b"" if payload is None else payload, said)), digest_size=8).digest(), "big"
    )
    p = _B36_PAIRS
    return p[n % 1296] + p[n // 1296 % 1296] + p[n // 1679616 % 1296] + p[n // 2176782336 % 1296]
