"""One document through the core: input checks, transport wrappers taken off, reader ->

Over 500 lines: the :class:`Pipeline` is the core's one path for a document; the helpers here are its own.
canonical -> writer (a fused pair path or the hub), losses, preserve residues, and the outcome
reconciled with the transport's flag. :mod:`envglot.api` is the public API over it."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import msgspec

from . import residue as _residue
from .canonical import Envelope, Problem
from .context import Context
from .detect import (
    JSONRPC,
    JSONRPC_MARKER,
    MCP,
    MCP_MARKERS,
    Detection,
    classify,
    classify_members,
    forced_rival,
    read_keys,
    read_rival,
    top_level,
)
from .diagnostics import DISCARD, Counting, Diagnostic, Kind, RefusedError, Report, report_for
from .dialect import Dialect
from .errors import DetectError, EnvglotError, ParseError
from .excerpt import excerpt
from .fields import (
    COMPILED,
    Unit,
    bound_pair,
    bound_tally,
    carrying_pair,
    counted_around,
    slot_after_last,
    strict_floor,
    strict_reader,
    tallying_pair,
)
from .introspect import signature_of
from .limits import (
    MAX_DEPTH,
    UTF8_CHUNK,
    check_depth,
    check_input,
    check_text,
    encode_checked,
    members_of,
    members_within_depth,
    repeated_member,
    spans_whole,
    top_members,
    utf8_error,
    within_depth,
)
from .mappings import Mappings, default_mappings, mappings_for
from .options import UNSET, MappingsArg, Options, resolve
from .policy import Level
from .registry import Registry, bundled
from .toplevel import KEYED_TOP_MIN, TopMembers
from .transport import unwrap_bytes, unwrap_jsonrpc
from .wire import WireDecoder, may_be_loose, minified_alike

__all__ = [
    "Conversion",
    "Counted",
    "Counter",
    "Pipeline",
    "Tallied",
    "as_mappings",
    "contrary",
    "entry",
    "failure_wins",
    "forced_untransport",
    "from_bytes",
    "holds_any",
    "locate",
    "one_outcome",
    "one_shot",
    "reconcile",
    "split_min",
    "styled",
    "to_bytes",
]

_ANY = msgspec.json.Decoder()
_ENC = msgspec.json.Encoder()
_MISSING: Any = object()


class Conversion(msgspec.Struct, frozen=True):
    """The outcome of one conversion: output bytes plus everything worth knowing about it."""

    output: bytes
    source: str
    """Dialect the input was read as."""
    target: str
    diagnostics: list[Diagnostic]
    unwrapped: bool = False
    """True if the input was an MCP CallToolResult and the envelope was taken out of it."""

    @property
    def lossy(self) -> bool:
        """True if any diagnostic reports lost or changed information."""
        return any(d.lossy for d in self.diagnostics)


class Tallied(msgspec.Struct, frozen=True, gc=False):
    """One conversion as :meth:`Pipeline.tally` gives it: its diagnostics counted, not kept."""

    output: bytes
    source: str
    unwrapped: bool
    kinds: tuple[Kind, ...]
    """The kind of each diagnostic, in the order reported."""
    selected: bool
    """True if the policy selects any of the diagnostics (a lossy conversion under ``warn``)."""


Counted = tuple[bytes, str, bool, list[tuple[Kind, str]], bool]
"""One document as :meth:`Pipeline.counter`'s function gives it: ``(output, source dialect,
unwrapped, (kind, source path) of each diagnostic in the order reported, whether the policy
selects any)``; the list is the counter's report's own (valid until its next call)."""

Counter = Callable[[bytes, tuple[bytes, bool, Detection] | None, dict[str, msgspec.Raw] | None], Counted]
"""What :meth:`Pipeline.counter` gives: called ``(buf, checked, members)`` as :meth:`Pipeline.tally` is."""


def to_bytes(data: bytes | str | dict[str, Any] | memoryview) -> bytes:
    """The input as JSON bytes; a dict or str must be encodable as UTF-8 JSON."""
    if isinstance(data, bytes):
        return data
    if isinstance(data, str):
        try:
            return data.encode()
        except UnicodeEncodeError:
            check_text(data)
            raise
    if isinstance(data, memoryview | bytearray):
        return bytes(data)
    if isinstance(data, dict):
        return encode_checked(data)
    raise EnvglotError(f"expected bytes, str or dict, got {type(data).__name__}", path="$")


def from_bytes(out: bytes, like: object, target: Dialect) -> Any:
    """The output as the kind of value the caller gave (bytes, str or dict)."""
    if isinstance(like, str):
        return out.decode()
    if isinstance(like, dict):
        try:
            doc = _ANY.decode(out)
        except msgspec.DecodeError as exc:  # a number Python's int/float cannot hold, passed through exactly
            raise EnvglotError(f"the output cannot be returned as a dict ({exc}); pass bytes or str") from None
        if type(target).seal is not Dialect.seal:  # a dict holds no duplicate keys and no escapes: recount
            doc = _ANY.decode(target.seal(_ENC.encode(doc)))
        return doc
    return out


def as_mappings(m: MappingsArg) -> Mappings:
    """The tables ``m`` names: a :class:`Mappings` as is, else the bundled tables plus ``m``'s overlays."""
    return m if isinstance(m, Mappings) else mappings_for(m)


def _minify(buf: bytes) -> bytes:
    """``buf`` without insignificant whitespace (``msgspec.DecodeError`` for broken JSON)."""
    return msgspec.json.format(buf, indent=-1)


def styled(out: bytes, style: str, target: Dialect) -> bytes:
    """``out`` laid out in ``style`` (checked by :class:`Options`)."""
    if style == "compact":
        # Raw payloads keep the source's whitespace; minify only when some may be there (not
        # ``bytes in bytes``, which raises and clears a TypeError before it searches).
        if 10 in out or out.find(b": ") >= 0 or out.find(b", ") >= 0:
            return msgspec.json.format(out, indent=-1)
        return out
    if style == "pretty":
        return msgspec.json.format(out, indent=2)
    # native; a negative indent minifies (payloads may carry the source's whitespace)
    return msgspec.json.format(out, indent=target.native_indent)


def _untransport(
    buf: bytes, det: Detection, unwrap: bool, max_depth: int, registry: Registry
) -> tuple[bytes, Detection, bool | None]:
    """``(envelope bytes, its detection, MCP isError)``: a JSON-RPC response and an MCP
    CallToolResult (``det`` says which) taken off, one level each; other documents as they are."""
    is_error: bool | None = None
    if det.dialect == JSONRPC:
        if not unwrap:
            raise ParseError("this is a JSON-RPC response, not an envelope (unwrapping is off)", path="$")
        buf = unwrap_jsonrpc(buf)
        det = classify(buf, registry)
    if det.dialect == MCP:
        if not unwrap:
            raise ParseError("this is an MCP CallToolResult, not an envelope (unwrapping is off)", path="$")
        one_outcome(buf, "isError", MCP)
        buf, is_error = unwrap_bytes(buf)
        buf = check_input(buf, max_depth)[0]
        det = classify(buf, registry)
    if det.dialect in (MCP, JSONRPC):
        raise ParseError(
            f"a {'CallToolResult' if det.dialect == MCP else 'JSON-RPC response'} inside a transport wrapper: "
            "envglot unwraps one CallToolResult (in one JSON-RPC response), not nested ones",
            path="$",
        )
    return buf, det, is_error


def one_outcome(buf: bytes, key: str, dialect: str, members: dict[str, msgspec.Raw] | None = None) -> None:
    """Refuse a document whose outcome member is repeated (one occurrence could hide a failure).

    ``members``: :func:`~envglot.limits.top_members` of ``buf``, when the caller has them."""
    if repeated_member(buf, key, members):
        raise ParseError(
            f"the outcome member {key!r} appears more than once: which occurrence holds is a parser's "
            "choice, so the document is refused",
            path=f"$.{key}",
            dialect=dialect,
        )


_WRAPPER_KEYS = frozenset((*MCP_MARKERS, JSONRPC_MARKER))
"""Members one of which any transport wrapper's top level holds (detection's own markers)."""


@functools.lru_cache(maxsize=8)
def holds_any(keys: frozenset[str]) -> Callable[[dict[str, msgspec.Raw]], bool]:
    """Whether a document's top-level members hold any of ``keys``: one generated ``in`` test per
    key (a few dict lookups; ``keys.isdisjoint(members)`` walks every member)."""
    u = Unit("holds_any")
    u.emit("def holds_any(p):", 0)
    u.emit("return " + (" or ".join(f"{k!r} in p" for k in sorted(keys)) or "False"))
    return u.build("holds_any")


def forced_untransport(
    buf: bytes,
    known: Detection | None,
    max_depth: int,
    registry: Registry,
    members: dict[str, msgspec.Raw] | None = None,
) -> tuple[bytes, bool | None]:
    """``(envelope bytes, MCP isError)`` of a document read as a forced source dialect.

    A forced ``from_`` names the envelope's dialect, not the wrapper's: a CallToolResult or
    JSON-RPC response is taken off first, so its ``isError`` still applies (a failure can never
    be read as a success). A document detection cannot read is left to the reader to report.
    ``members``: :func:`~envglot.limits.members_of` of ``buf``, when the caller has them.
    """
    if known is None:
        keys = members if members is not None else members_of(buf)
        if keys is None:  # not an object, broken or too deep: the reader says
            return buf, None
        if _WRAPPER_KEYS.isdisjoint(keys):
            return buf, None
        try:
            known = classify(buf, registry)
        except DetectError:
            return buf, None
    if known.dialect not in (MCP, JSONRPC):
        return buf, None
    inner, _, is_error = _untransport(buf, known, True, max_depth, registry)
    return inner, is_error


def locate(
    buf: bytes,
    unwrap: bool,
    strict: bool,
    report: Report,
    max_depth: int = MAX_DEPTH,
    known: Detection | None = None,
    registry: Registry | None = None,
) -> tuple[bytes, Detection, bool | None]:
    """``(envelope bytes, detection, MCP isError)``: transport wrappers taken off, one level each.

    ``known`` is ``classify(buf, registry)`` when the caller already has it (``migrate``
    detects each record once). The dialects are ``registry``'s (default: the bundled ones).
    An envelope taken out of a text block was a JSON string: it is checked again (depth, BOM).
    """
    reg = registry if registry is not None else bundled()
    det = classify(buf, reg) if known is None else known
    buf, det, is_error = _untransport(buf, det, unwrap, max_depth, reg)
    if det.evidence is None:
        if strict:
            raise DetectError(
                "no dialect's markers (strict detection): this object would be read as a legacy-v1 bare payload",
                path="$",
            )
        if report.collecting:
            report.add(
                Kind.WEAK_DETECTION,
                "$",
                det.dialect,
            )
    return buf, det, is_error


_Seal = Callable[[bytes, Any, bool], bytes]
"""A target's :meth:`Dialect.seal` called ``(doc, top, minified)``."""

_WholePlan = tuple[_residue.Takes, tuple[str | int, ...], _residue.Placer | None, _Seal | None, _residue.Placer | None]
"""What :meth:`Pipeline._whole_plan` finds once per source: takes, slot, placer, the target's seal
(``None``: it seals nothing), and the placer for the fused path's outputs (the first where the
writer states nothing of their shape)."""

_UNWRITTEN: _WholePlan = ((), (), None, None, None)
""":meth:`Pipeline._whole_plan` of a source that cannot be written (compared by identity)."""

SPLIT_MIN = 2048
"""Size from which a fused reader builds its wire Struct from the members the checks decoded
(no second pass over the payload); below it, one more decode costs less than a decoder call
per member."""

OUTCOME_PEEK = 512
"""Bytes at either end of a document from :data:`~envglot.toplevel.KEYED_TOP_MIN` on searched
for its outcome member (:func:`shows_success`): where a success is seen there, a strict source
whose rival is silent reads it strictly (a failure's details are read once on the members' line,
twice on the strict read)."""


def split_min(src: Dialect) -> int:
    """Size from which the straight line hands ``src``'s fused reader the members it parsed:
    :data:`SPLIT_MIN` for a reader with a strict decode (a :class:`~envglot.wire.WireDecoder`'s);
    from any size for one without, whose ``decode`` takes the members as they are (a copy of the
    dict, where the document would otherwise be decoded again) or ignores them."""
    reading = src.steps()[0]
    return SPLIT_MIN if reading is None or isinstance(reading.decoder, WireDecoder) else 0


def shows_success(buf: bytes, key: bytes, failure: bytes) -> bool:
    """Whether ``key`` (the outcome member's quoted key and ``:``) is found within
    :data:`OUTCOME_PEEK` bytes of ``buf``'s start (else of its end), its value not ``failure``: a
    guess at the outcome, which only picks the line (either gives the same answer)."""
    at = buf.find(key, 0, OUTCOME_PEEK)
    if at < 0:
        at = buf.rfind(key, len(buf) - OUTCOME_PEEK)
    return at >= 0 and not buf.startswith(failure, at + len(key))


_BACK_OPTIONS = Options(unsupported=Level.IGNORE)
"""The options of the target -> source writer a preserve residue is computed with."""


def _surrogate(exc: UnicodeEncodeError, dialect: str) -> ParseError:
    """The error for a string no UTF-8 can carry (a lone surrogate in a Python-built envelope)."""
    return ParseError(
        f"a string of the envelope holds a lone surrogate ({exc.object[exc.start]!r}), which UTF-8 cannot carry",
        dialect=dialect,
    )


class Pipeline:
    """Reader -> canonical -> writer for one :class:`Options` value; shared by the API and Converter.

    The options were checked when they were built; their fields are copied into slots
    once here, so nothing is looked up per document.
    """

    __slots__ = (
        "_fused",
        "_ignore",
        "_preserving",
        "_takes",
        "_tallying",
        "convert_bytes",
        "dst",
        "mappings",
        "max_depth",
        "options",
        "policy",
        "preserve",
        "registry",
        "src",
        "strict",
        "style",
        "synth",
        "unwrap",
    )

    def __init__(
        self, src: str | None, dst: str, options: Options, unwrap: bool = True, mappings: Mappings | None = None
    ) -> None:
        self.mappings = mappings if mappings is not None else as_mappings(options.mappings)
        self.registry: Registry = self.mappings.registry
        """The dialects this pipeline reads, detects and writes (its tables'): fixed once built."""
        self.src: Dialect | None = self.registry.get(src) if src is not None else None
        self.dst: Dialect = self.registry.get(dst)
        if not self.dst.shape.writable:
            writable = ", ".join(self.registry.writable_names())
            raise EnvglotError(f"{self.dst.name} is a read-only source dialect; write one of {writable}")
        self.options = options
        self.preserve = options.preserve
        self.policy = options.policy
        self.style = options.style
        self.synth = options.context
        self.unwrap = unwrap
        self.strict = options.strict
        self.max_depth = options.max_depth
        self._fused: dict[str, Callable[..., bytes | None] | None] = {}
        """Source dialect -> its fused path to ``dst`` (``envglot.fields``), bound to the context
        it runs with when nothing is collected (immutable then: built once); ``None``: the hub."""
        self._tallying: dict[str, Callable[..., bytes | None] | None] = {}
        """Source dialect -> its fused path to ``dst`` that also reports (``tallying_pair``)."""
        self._ignore = self.policy.level is Level.IGNORE
        self._preserving: dict[str, Callable[..., bytes | None] | None] = {}
        """Source dialect -> the fused path from ``dst`` back to it, for :meth:`_add_fused_residue`
        (``None``: the general route)."""
        self._takes: dict[str, _WholePlan] = {}
        """Source dialect -> :meth:`_whole_plan`'s facts (found once per source)."""
        self.convert_bytes: Callable[[bytes], bytes] = self._first_bytes
        """The output of one document under :meth:`report` (what :meth:`convert` gives): the
        entry :func:`entry` chose for this pipeline, on its first call."""

    def _first_bytes(self, buf: bytes) -> bytes:
        """:attr:`convert_bytes` until the fused paths are on: chooses the entry then (once)."""
        if not COMPILED[0]:  # the entry takes the fused paths it finds now: choose it later
            return self.convert(buf, self.report())[0]
        self.convert_bytes = entry(self)
        return self.convert_bytes(buf)

    def run(
        self,
        buf: bytes,
        report: Report,
        checked: tuple[bytes, bool, Detection] | None = None,
        members: dict[str, msgspec.Raw] | None = None,
    ) -> Conversion:
        """The :class:`Conversion` of one document; ``checked`` and ``members`` as for :meth:`convert`."""
        out, src, unwrapped = self.convert(buf, report, checked, members)
        return Conversion(
            output=out, source=src, target=self.dst.name, diagnostics=report.diagnostics, unwrapped=unwrapped
        )

    def tally(
        self,
        buf: bytes,
        checked: tuple[bytes, bool, Detection] | None = None,
        members: dict[str, msgspec.Raw] | None = None,
    ) -> Tallied:
        """The :class:`Tallied` conversion of one document, for a caller that counts diagnostic kinds
        (``migrate``): the fused path where it applies, the hub otherwise; the outcome is
        :meth:`convert`'s (under ``raise``, the same :class:`~envglot.UnsupportedError`, with its
        diagnostics). ``checked`` and ``members`` as for :meth:`convert`."""
        out, src, unwrapped, seen, selected = self.counted(buf, checked, members)
        return Tallied(out, src, unwrapped, tuple([k for k, _ in seen]), selected)

    def counted(
        self,
        buf: bytes,
        checked: tuple[bytes, bool, Detection] | None = None,
        members: dict[str, msgspec.Raw] | None = None,
        counting: Counting | None = None,
    ) -> Counted:
        """:meth:`tally` as :data:`Counted` (a :data:`Counter` for one document): counted in
        ``counting`` (empty; default a fresh report) through :meth:`convert`; under ``raise``, a
        refused document converted again with a full report, which raises saying why."""
        if counting is None:
            counting = Counting(self.policy)
        try:
            out, src, unwrapped = self.convert(buf, counting, checked, members)
        except RefusedError:
            self.convert(buf, Report(self.policy), checked, members)
            raise AssertionError("a refused conversion converted with a full report") from None
        seen = counting.seen
        return out, src, unwrapped, seen, bool(seen) and counting.selected()

    def counter(self) -> Counter:
        """:meth:`tally` for a run of documents (``migrate``'s chunk), as one function called
        ``(buf, checked, members)`` per document: :data:`Counted`, the same outcome. One
        :class:`Counting` report serves every call (cleared per document: its ``seen`` list
        comes back and holds until the next call) and one context per source, the source's
        counting function bound to it (:func:`~envglot.fields.bound_tally`). A detected
        document (``checked`` given) that needs nothing but the counting fused path (no BOM, no
        transport wrapper, minified, its top level laid end to end; a pipeline that detects,
        compact, without ``preserve``) takes it straight; any other goes through :meth:`convert`."""
        counting = Counting(self.policy)
        seen, carried, policy, counted = counting.seen, counting.carried, self.policy, self.counted

        def slow(buf: bytes, checked: tuple[bytes, bool, Detection] | None, members: Any) -> Counted:
            seen.clear()
            carried.clear()
            return counted(buf, checked, members, counting)

        if self.src is not None or self.preserve or self.style != "compact":
            return slow
        registry, m, synth, dst, strict = self.registry, self.mappings, self.synth, self.dst, self.strict
        raising = policy.level is Level.RAISE
        selects_any = policy.selects_any  # Counting.selected without a carried diagnostic (no preserve here)
        paths: dict[str, tuple[str, Callable[..., bytes | None], int] | None] = {MCP: None, JSONRPC: None}

        def bind(dialect: str) -> tuple[str, Callable[..., bytes | None], int] | None:
            src = registry.get(dialect)
            fn = self._tallying_from(src)
            if fn is None:
                paths[dialect] = None
                return None
            tally = bound_tally(fn, Context(m, counting, m[src.name], synth, True))
            bound = paths[dialect] = (src.name, tally, split_min(src))
            return bound

        def count(buf: bytes, checked: tuple[bytes, bool, Detection] | None, members: Any) -> Counted:
            if checked is None or members is None or not COMPILED[0]:
                return slow(buf, checked, members)
            clean, bom, det = checked
            path = paths.get(det.dialect, _MISSING)
            if path is _MISSING:
                path = bind(det.dialect)
            if (
                path is None
                or bom
                or (det.evidence is None and strict)
                or not spans_whole(clean, members)
                or may_be_loose(clean, True)
            ):
                return slow(buf, checked, members)
            seen.clear()
            if det.evidence is None:  # locate's report
                seen.append((Kind.WEAK_DETECTION, "$"))
            name, fused, split = path
            out = _run_fused(fused, clean, members, dst.name, split)
            if out is None:  # the hub
                return slow(buf, checked, members)
            selected = bool(seen) and selects_any(seen)
            if selected and raising:  # refused: the general path says why
                return slow(buf, checked, members)
            return out, name, False, seen, selected

        return count

    def _tallying_from(self, src: Dialect) -> Callable[..., bytes | None] | None:
        """The counting fused path from ``src`` to the target (``tallying_pair``), looked up once per
        source; ``None``: the pair goes through the hub."""
        tallying = self._tallying.get(src.name, _MISSING)
        if tallying is _MISSING:
            tallying = self._tallying[src.name] = tallying_pair(src, self.dst, self.mappings)
        return tallying

    def report(self) -> Report:
        """A fresh report for one call: the shared :data:`DISCARD` when nobody would see it."""
        return DISCARD if self._ignore else report_for(self.policy)

    def convert(
        self,
        buf: bytes,
        report: Report,
        checked: tuple[bytes, bool, Detection] | None = None,
        given: dict[str, msgspec.Raw] | None = None,
    ) -> tuple[bytes, str, bool]:
        """``(output, source dialect, unwrapped)`` for one document; applies the policy to ``report``.

        ``checked`` is ``(*check_input(buf, self.max_depth), classify(of that, self.registry))`` when the
        caller has already done both (``migrate``): neither is done again; ``given`` is then the
        top-level members of its bytes when the caller has them (its detection's
        :func:`~envglot.detect.top_level`).
        """
        start = len(report)
        # The first parse of the document (the detection's, or the known source's reader) checks
        # its depth: limits.within_depth
        deferred = checked is None
        if checked is None:
            buf, bom = check_input(buf, self.max_depth, depth=not deferred)
            known: Detection | None = None
        else:
            buf, bom, known = checked
        if bom and report.collecting:
            report.add(Kind.BOM_REMOVED, "$")
        unwrapped = False
        is_error: bool | None = None
        detection: Detection | None = None
        # The top level's members, decoded once for every check that looks at them (a wrapper's
        # markers, a repeated outcome member, another dialect's failure markers); ``None`` when
        # not decoded (or not decodable: each check then decides as it would alone).
        members: dict[str, msgspec.Raw] | None = None if checked is None else given
        src = self.src
        if src is None:
            if deferred:
                members = within_depth(top_level, buf, self.max_depth, bom)
                known = classify_members(members, self.registry)
                deferred = False
            inner, detection, is_error = locate(
                buf, self.unwrap, self.strict, report, self.max_depth, known, self.registry
            )
            unwrapped = inner is not buf
            buf = inner
            src = self.registry.get(detection.dialect)
        else:
            if deferred:  # one parse of the top level, which checks the depth when it can
                members, checked_depth = members_within_depth(buf, self.max_depth)
                deferred = not checked_depth
            elif members is None:
                members = members_of(buf)
            if self.unwrap:  # a forced source names the envelope: its wrapper's isError still applies
                inner, is_error = forced_untransport(buf, known, self.max_depth, self.registry, members)
                unwrapped = inner is not buf
                buf = inner
        if unwrapped:
            members = None
        forced = known if self.src is not None and not unwrapped else None
        m = self.mappings
        compact = self.style == "compact"
        # Members laid end to end make up the whole document: no top-level key repeats and the
        # top level holds no whitespace (limits.spans_whole).
        whole = members is not None and spans_whole(buf, members)
        loose = compact and may_be_loose(buf, whole)
        if loose and members is not None and not deferred:
            # Parsed whole within the depth: minified first (the same members, the same keys
            # spelled the same way), so the repeated-member check reads the minified members,
            # whose lengths rule a repeat out without scanning.
            buf = _minify(buf)
            members = members_of(buf)
            whole = members is not None and spans_whole(buf, members)
            loose = False
        if not whole:
            one_outcome(buf, src.outcome_key, src.name, members)
        if loose:
            # Minify the input once: Raw payloads then carry no insignificant whitespace, so
            # no writer has to minify its output; broken JSON is left for the reader to report.
            try:
                buf = within_depth(_minify, buf, self.max_depth, bom) if deferred else _minify(buf)
            except msgspec.DecodeError:
                pass
            else:  # the minified document's own members (one pass, instead of the reader's and the detection's)
                members = members_of(buf)
            deferred = False  # parsed whole under the guard, or measured exactly
        plain = not self.preserve or _residue.none_in(buf, m[src.name].shape.residue, members)
        counting = type(report) is Counting and not self.preserve
        if (report is DISCARD or counting) and is_error is None and plain and COMPILED[0]:
            # Nobody sees diagnostics (or they are only counted) and there is no input residue or
            # MCP outcome to apply: the fused path gives the hub's bytes (and, counting, the hub's
            # kinds and paths) without building the canonical envelope.
            fused: Callable[..., bytes | None] | None
            if counting:
                tallying = self._tallying_from(src)
                ctx = Context(m, report, m[src.name], self.synth, compact)
                fused = None if tallying is None else functools.partial(tallying, ctx)
            else:
                fused = self._fused.get(src.name) or self._fused_from(src, compact)
            if fused is not None:
                seen = len(report) if counting else 0
                try:
                    if deferred:
                        fast = within_depth(fused, buf, self.max_depth, bom)
                    elif members is None or len(buf) < SPLIT_MIN:
                        fast = fused(buf)
                    else:  # the members' parse went through the whole document: the reader builds on it
                        fast = fused(buf, members)
                except UnicodeEncodeError as exc:
                    raise _surrogate(exc, self.dst.name) from None
                if fast is not None and (
                    self.src is None
                    or (other := _other_dialect(buf, src, forced, m.registry, members)) is None
                    or self.dst.failed(fast)
                    or _failure_of(buf, other, m) is None
                ):
                    if self.preserve:
                        fast = (
                            self._add_fused_residue(buf, fast, src, members)
                            if compact
                            else self._add_residue(buf, fast, src, None, members)
                        )
                    if counting:
                        report.finish(self.policy, start=start)
                    return (fast if compact else styled(fast, self.style, self.dst)), src.name, unwrapped
                if counting:  # the hub reports them again
                    del report.seen[seen:]  # type: ignore[attr-defined]
        if deferred:
            check_depth(buf, self.max_depth, bom)
        ctx = Context(m, report, m[src.name], self.synth, compact)
        env: Envelope = src.read(buf, ctx)
        if self.src is not None and env.ok:
            env = failure_wins(env, src, contrary(buf, src, forced, m, members), report)
        if is_error is not None:
            env = reconcile(env, is_error, detection, m, report)
        out, restored = self.write_envelope(env, src, ctx, buf)
        if self.preserve and not restored:  # a residue that restored its document is consumed
            out = self._add_residue(buf, out, src, env, members)
        if self.preserve and (restored or src.shape.writable) and report.collecting:
            report.carry(start)  # converting back restores what the residue carries
        if report.collecting:
            tool = env.tool if env.tool is not None else (self.synth or {}).get("tool")
            name = tool if isinstance(tool, str) else None
            report.finish(self.policy, start=start, source=src.name, target=self.dst.name, tool=name)
        if not compact:
            out = styled(out, self.style, self.dst)
        return out, src.name, unwrapped

    def write_envelope(
        self, env: Envelope, src: Dialect, ctx: Context, carrier: bytes | None = None
    ) -> tuple[bytes, bool]:
        """The target document, and whether a preserve residue restored it.

        Unknown fields of the target's own dialect are put back. The input's residue is
        applied only under ``preserve`` and only when :meth:`_restore` accepts it; without
        ``preserve`` it is left out of every output (reported as dropped).
        """
        dst = self.dst
        try:
            out: bytes = dst.write(env, ctx)
        except UnicodeEncodeError as exc:  # only Python-built envelopes can hold one: JSON input cannot
            raise _surrogate(exc, dst.name) from None
        if not env.extras and env.residue is None:
            return out, False
        own = [ex for ex in env.extras if ex.dialect == dst.name]
        res: _residue.Residue | None = None
        if env.residue is not None:
            where = ctx.mappings[src.name].shape.residue
            if not self.preserve:  # not asked for: never applied, never carried into an output
                if ctx.report.collecting:
                    ctx.report.add(
                        Kind.FIELD_DROPPED,
                        where,
                        dst.name,
                        field="an envglot residue in the input",
                        because="residues are applied only with preserve",
                    )
            else:
                res = _residue.decode_residue(env.residue, where)
                if res.from_ != dst.name:
                    nested = self._unnest(res.from_, env, src, carrier)
                    if nested is not None:  # the document it restores carried one for dst
                        return nested, True
                    if not (src.shape.writable and self._nests(env, src)):
                        ctx.report.add(
                            Kind.RESIDUE_DROPPED,
                            where,
                            dst.name,
                            source=excerpt(repr(res.from_), 40),
                        )
                    # else: the new residue carries it intact, nested (_add_residue)
                    res = None
        if not own and res is None:
            return out, False
        doc = _residue.open_document(out)
        for ex in own:  # an unknown field goes back only into an object the writer wrote
            if not _residue.set_path(doc, _residue.parse_path(ex.path), ex.value, create=False):
                ctx.report.add(
                    Kind.FIELD_DROPPED,
                    ex.path,
                    dst.name,
                    field=f"{dst.name} field",
                    because=f"it lies outside anything {dst.name} wrote",
                )
        if own and not self._same_outcome(_residue.encode(doc), env):
            # a member put back must not change the outcome the writer wrote (e.g. a stated
            # status of a success, read as a failure through MCP isError): the writer's wins
            outcome = "$." + dst.outcome_key
            doc = _residue.open_document(out)
            for ex in own:
                if ex.path == outcome:
                    ctx.report.add(
                        Kind.FIELD_DROPPED,
                        ex.path,
                        dst.name,
                        field=f"the source's {dst.outcome_key}",
                        because="it would change the outcome",
                    )
                else:
                    _residue.set_path(doc, _residue.parse_path(ex.path), ex.value, create=False)
        plain = self._seal(_residue.encode(doc)) if own else out
        if res is None:
            return plain, False
        restored = self._restore(doc, res, env, src, ctx, carrier)
        return (plain, False) if restored is None else (restored, True)

    def _unnest(self, via: str, env: Envelope, src: Dialect, carrier: bytes | None) -> bytes | None:
        """The target document a chain of residues restores, or ``None``.

        A residue for another dialect ``via`` restores the ``via`` document this one was made
        from (with every check of :meth:`_restore`); when that document carries a residue for
        the target (nested), converting it on restores the target's document (the same
        checks again). When it carries no residue at all (the hop into ``via`` needed none:
        ``via`` converts back to its source exactly), the target is converted from it, with
        ``preserve``: the document ``via`` was made from, or one whose own residue records
        ``via``'s document.
        """
        dst = self.dst
        mid_src = self.registry.find(via)
        if carrier is None or via in (src.name, dst.name) or mid_src is None or not mid_src.shape.writable:
            return None
        m = self.mappings
        options = _BACK_OPTIONS.replace(preserve=True, context=self.synth)
        first = Pipeline(src.name, via, options, mappings=m)
        ctx = Context(m, DISCARD, m[src.name], self.synth)
        mid, restored = first.write_envelope(env, src, ctx, carrier)
        if not restored:
            return None
        ctx = Context(m, DISCARD, m[via], self.synth)
        mid_env = mid_src.read(mid, ctx)
        on = Pipeline(via, dst.name, options, mappings=m)
        out, restored = on.write_envelope(mid_env, mid_src, ctx, mid)
        if restored:
            return out
        if mid_env.residue is not None:  # one for a fourth dialect that restores nothing here: nested on
            return None
        return on._add_residue(mid, out, mid_src, mid_env)

    def _nests(self, env: Envelope, src: Dialect) -> bool:
        """True if ``env``'s residue is for a writable third dialect: it is carried on, nested."""
        if env.residue is None:
            return False
        try:
            via = _residue.decode_residue(env.residue, self.mappings[src.name].shape.residue).from_
        except EnvglotError:
            return False
        return (
            via not in (src.name, self.dst.name)
            and via in self.mappings.dialects
            and self.registry.get(via).shape.writable
        )

    def _same_outcome(self, doc: bytes, env: Envelope) -> bool:
        """Whether ``doc`` says the outcome ``env`` has (by the target's own outcome flag)."""
        try:
            return self.dst.failed(doc) == (not env.ok)
        except EnvglotError:
            return False

    def _restore(
        self,
        doc: dict[str, Any],
        res: _residue.Residue,
        env: Envelope,
        src: Dialect,
        ctx: Context,
        carrier: bytes | None,
    ) -> bytes | None:
        """The document ``res`` restores, or ``None`` (reported) when it may not be applied.

        It must patch cleanly, restore exactly the document its digest records, be readable
        as the target with the same outcome, and be what the carrier was made from: converted
        to the carrier's dialect it gives the carrier (without its residue). So a residue can
        add what the carrier cannot express, never change what it says.
        """
        dst = self.dst
        m = ctx.mappings
        why = None
        restored = _residue.restore(doc, res, carrier)
        if restored is None:
            why = "a patch does not fit the document"
        elif not _residue.matches(res, restored):  # res.from_ is dst.name (write_envelope)
            why = "it does not restore the document its digest records (not made by envglot for this document)"
        else:
            try:
                back = dst.read(restored, Context(m, DISCARD, m[dst.name]))
            except EnvglotError as exc:
                why = f"the restored document is not a readable {dst.name} document ({excerpt(str(exc))})"
            else:
                if back.ok != env.ok:
                    why = "the restored document would change the outcome"
                elif carrier is not None and not self._carried_by(back, src, carrier, ctx):
                    why = "the restored document contradicts the document it travels in"
        if why is None:  # a version 3 residue restores the key order itself
            return restored if res.v >= 3 else dst.arrange(restored)  # type: ignore[arg-type]
        ctx.report.add(Kind.RESIDUE_REJECTED, m[src.name].shape.residue, dst.name, because=why)
        return None

    def _carried_by(self, back: Envelope, src: Dialect, carrier: bytes, ctx: Context) -> bool:
        """True if ``back`` written as ``src`` is ``carrier`` without its residue (JSON-equal)."""
        m = ctx.mappings
        doc = _residue.open_document(carrier)
        _residue.delete(doc, _residue.parse_path(m[src.name].shape.residue))
        bare = _residue.encode(doc)
        bare = src.seal(bare)
        again = src.write(back, Context(m, DISCARD, m[src.name], self.synth))
        return _residue.digest(src.name, bare) == _residue.digest(src.name, again)

    def _fused_from(self, src: Dialect, compact: bool) -> Callable[..., bytes | None] | None:
        """The fused path from ``src`` to the target, bound to a :data:`DISCARD` context (built
        once per source: a pipeline's style is fixed); ``None``: the pair goes through the hub."""
        fused = self._fused.get(src.name, _MISSING)
        if fused is _MISSING:
            ctx = Context(self.mappings, DISCARD, self.mappings[src.name], self.synth, compact)
            fused = self._fused[src.name] = bound_pair(src, self.dst, ctx)
        return fused

    def _carrying_from(self, src: Dialect) -> Callable[..., tuple[bytes, Any] | None] | None:
        """The compact fused path from ``src`` returning ``(doc, value)``, ``value`` what it wrote
        at the carrier's member whose payload the written placer can be handed
        (:func:`~envglot.residue.handed_key`; :meth:`_add_fused_residue` passes it on), for a
        ``preserve=True`` pipeline; ``None`` where the plain fused path serves (the caller's
        choice: built anew at each call, compiled once by :func:`~envglot.fields.carrying_pair`)."""
        if src.name == self.dst.name or not self.preserve:
            return None
        takes, _, place, _, written = self._takes.get(src.name) or self._whole_plan(src)
        key = _residue.handed_key(takes) if written is not place else None
        if key is None or not COMPILED[0]:
            return None
        ctx = Context(self.mappings, DISCARD, self.mappings[src.name], self.synth, True)
        return carrying_pair(src, self.dst, ctx, key)

    def _add_residue(
        self,
        buf: bytes,
        out: bytes,
        src: Dialect,
        env: Envelope | None,
        members: dict[str, msgspec.Raw] | None = None,
    ) -> bytes:
        """``out`` with the residue restoring ``buf`` (a ``src`` document); ``env`` is what the hub
        read from ``buf`` (``None`` on the fused path, which is taken only without an input residue),
        ``members`` its top level when the caller decoded it (:func:`~envglot.limits.members_of`)."""
        if not src.shape.writable:
            return out
        if env is not None and env.residue is not None and not self._nests(env, src):
            # the input's residue was dropped or rejected (reported by write_envelope): the new
            # residue restores the document without it, as if it had never held one (the same
            # residue, and so the same output, as that document gets)
            stripped = _residue.without(buf, self.mappings[src.name].shape.residue)
            return self._add_residue(stripped, out, src, None)
        if src.name != self.dst.name and (env is None or env.residue is None):
            if may_be_loose(buf):
                return self._whole(msgspec.json.format(buf, indent=-1), out, src, None)
            return self._whole(buf, out, src, members)
        m = self.mappings
        back_pipe = self._back(src)
        fused = back_pipe._fused_from(self.dst, True) if COMPILED[0] else None
        # ``out``'s top level, decoded once for the reader back and the residue's placement
        top = _residue.open_document(out) if fused is not None and len(out) >= SPLIT_MIN else None
        back = None  # ``out`` is minified: the compact binding fits
        if fused is not None:
            back = fused(out) if top is None else fused(out, top)
        if back is None:
            back_ctx = Context(m, DISCARD, m[self.dst.name], self.synth)
            back, _ = back_pipe.write_envelope(self.dst.read(out, back_ctx), self.dst, back_ctx)
        if may_be_loose(buf):
            original, members = msgspec.json.format(buf, indent=-1), None
        else:
            original = buf
        # an input residue for a third dialect travels on inside the new one (nested); any other
        # was taken out above
        nests = env is not None and env.residue is not None
        skip = () if nests else _residue.slot_path(m[src.name].shape.residue)
        return self._placed(out, src, original, back, skip, members, top)

    def _add_fused_residue(
        self, buf: bytes, out: bytes, src: Dialect, members: dict[str, msgspec.Raw] | None, carried: Any = None
    ) -> bytes:
        """:meth:`_add_residue` on the fused path in the compact style, the same bytes with less
        looked up: ``buf`` is minified there (:meth:`convert` minified it or proved it minified),
        holds no input residue, and the reverse pair is found once per source (into its own
        dialect only: into another, the version 3 residue needs no conversion back). ``carried``:
        what :meth:`_carrying_from`'s function wrote at the carrier's member, when it wrote ``out``."""
        if src.name != self.dst.name:
            return self._whole(buf, out, src, members, True, carried)
        back_pair = self._preserving.get(src.name, _MISSING)
        if back_pair is _MISSING:
            back_pair = self._preserving[src.name] = (
                self._back(src)._fused_from(self.dst, True) if src.shape.writable else None
            )
        if back_pair is None:
            return self._add_residue(buf, out, src, None, members)
        top = _residue.open_document(out) if len(out) >= SPLIT_MIN else None
        back = back_pair(out) if top is None else back_pair(out, top)
        if back is None:  # the reverse pair takes the hub for this document
            return self._add_residue(buf, out, src, None, members)
        skip = _residue.slot_path(self.mappings[src.name].shape.residue)
        return self._placed(out, src, buf, back, skip, members, top)

    def _fused_residue(
        self, src: Dialect
    ) -> Callable[[bytes, bytes, dict[str, msgspec.Raw] | None, Any], bytes] | None:
        """:meth:`_add_fused_residue` for ``src`` as one function ``(buf, out, members, carried)``,
        built once by an entry, where it places with less: an output below
        :data:`~envglot.residue.SPLICE_MIN` bytes of a target that seals nothing goes to the pair's
        written placer without :meth:`_whole`'s lookups (the bytes :meth:`_whole` gives it: no
        splice below that size, the placer's own); ``None`` elsewhere (:meth:`_add_fused_residue`)."""
        if src.name == self.dst.name:
            return None
        _, _, place, seal, written = self._takes.get(src.name) or self._whole_plan(src)
        if seal is not None or written is None or written is place:
            return None
        whole, small = self._whole, _residue.SPLICE_MIN

        def placed(buf: bytes, out: bytes, members: dict[str, msgspec.Raw] | None, carried: Any) -> bytes:
            if len(out) < small and (done := written(buf, members, out, carried)) is not None:
                return done[0]
            return whole(buf, out, src, members, True, carried)

        return placed

    def _placed(
        self,
        out: bytes,
        src: Dialect,
        original: bytes,
        back: bytes,
        skip: tuple[str | int, ...],
        members: dict[str, msgspec.Raw] | None,
        top: dict[str, Any] | None,
    ) -> bytes:
        """``out`` with the residue turning ``back`` (``out`` written back as ``src``) into
        ``original`` at the target's slot, ``skip`` left out of the diff (the source's own slot);
        ``members``: ``original``'s top level, ``top``: ``out``'s, when decoded."""
        sets, dels = _residue.diff(original, back, skip, members)
        if not sets and not dels and src.name == self.dst.name:
            return out
        return self._place(out, top, _residue.encode_residue(src.name, original, sets, dels))

    def _whole(
        self,
        original: bytes,
        out: bytes,
        src: Dialect,
        members: dict[str, msgspec.Raw] | None,
        fused: bool = False,
        carried: Any = None,
    ) -> bytes:
        """``out`` with the version 5 residue of ``original`` (minified, ``members`` its top level
        when decoded): the members ``out`` carries unchanged left out (taken); ``out`` itself for a
        source that cannot be written (no residue restores into it). ``fused``: ``out`` is the fused
        path's compact output of ``original`` (so minified, as the residue made of ``original`` is:
        the target's seal formats nothing); ``carried``: what it wrote at the carrier's member
        (:meth:`_carrying_from`), handed to the placer."""
        plan = self._takes.get(src.name) or self._whole_plan(src)
        if plan is _UNWRITTEN:  # no residue restores into a source that cannot be written
            return out
        takes, slot, place, seal, written = plan
        if fused:
            place = written
        # the seal's ``minified``: in the compact style the input was minified or is taken as
        # minified (wire.may_be_loose), and what the output and the residue carry of it byte for
        # byte counts as written, as the writer counts it (the Known limit of
        # docs/dialects/code-graph.md) -- on the fused path and the hub's alike, however placed
        tight = self.style == "compact"
        if takes and len(out) >= _residue.SPLICE_MIN:
            # placed without decoding the payload again where the output's text proves it
            placed = _residue.placed_whole(src.name, original, members, out, takes, slot)
            if placed is not None:
                return seal(placed, None, tight) if seal is not None else placed
        if place is not None and (done := place(original, members, out, carried)) is not None:
            return seal(*done, tight) if seal is not None else done[0]
        top = _residue.open_document(out)
        return self._place(out, top, _residue.whole(src.name, original, members, top, takes), seal, tight)

    def _whole_plan(self, src: Dialect) -> _WholePlan:
        """:meth:`_whole`'s facts for ``src`` into this target, found once: the members its residues
        may take (:func:`~envglot.residue.take_paths`), the target's slot, the pair's
        :func:`~envglot.residue.placer` and the target's seal where it has one (:meth:`Dialect.seal`
        overridden; a hooks module's ``seal(doc, top)`` written before its ``minified`` parameter
        is called without it); :data:`_UNWRITTEN` for a source that cannot be written."""
        if not src.shape.writable:
            plan = _UNWRITTEN
        else:
            m = self.mappings
            dst = m[self.dst.name]
            takes = _residue.take_paths(m[src.name].fields, dst.fields, dst.shape.residue)
            slot = _residue.slot_path(dst.shape.residue)
            own: Callable[..., bytes] | None = self.dst.seal if type(self.dst).seal is not Dialect.seal else None
            seal: _Seal | None = own
            if own is not None and "minified" not in signature_of(own).parameters:
                seal = lambda doc, top, minified: own(doc, top)  # noqa: E731 - (an older hooks module)
            place = _residue.placer(src.name, takes, slot)
            # the fused path's outputs are the writer's encoding of its result (fields.bound_pair)
            written = (
                _residue.written_placer(src.name, takes, slot)
                if place is not None and self.dst.writing is not None and slot_after_last(self.dst.steps()[1], slot)
                else None
            )
            plan = (takes, slot, place, seal, written or place)
        self._takes[src.name] = plan
        return plan

    def _place(
        self, out: bytes, top: dict[str, Any] | None, res: msgspec.Raw, seal: _Seal | None = None, tight: bool = False
    ) -> bytes:
        """``out`` (``top``: its top level, when decoded) with the residue ``res`` at the target's
        slot, sealed (by ``seal``, the target's from :meth:`_whole_plan`, with ``tight`` as its
        ``minified`` when given: see :meth:`_whole`)."""
        doc = top if top is not None else _residue.open_document(out)
        _residue.set_path(doc, list(_residue.slot_path(self.mappings[self.dst.name].shape.residue)), res)
        placed = _residue.encode(doc)
        return self._seal(placed, doc) if seal is None else seal(placed, doc, tight)

    def _back(self, src: Dialect) -> Pipeline:
        """The pipeline writing this one's target back as ``src`` (built once per source dialect)."""
        if self.synth is not None:  # a caller's context: not cached (see _pipeline)
            return Pipeline(self.dst.name, src.name, _BACK_OPTIONS.replace(context=self.synth), mappings=self.mappings)
        key = (self.dst.name, src.name, id(self.mappings))
        p = _BACK_PIPELINES.get(key)
        if p is None or p.mappings is not self.mappings:
            p = Pipeline(self.dst.name, src.name, _BACK_OPTIONS, mappings=self.mappings)
            if len(_BACK_PIPELINES) >= _PIPELINES_MAX:
                _BACK_PIPELINES.clear()
            _BACK_PIPELINES[key] = p
        return p

    def _seal(self, doc: bytes, top: dict[str, Any] | None = None) -> bytes:
        """Let the target recompute what counts the whole document (code-graph ``approxTokens``;
        ``top``: ``doc``'s top level, when decoded)."""
        return self.dst.seal(doc, top)


def _run_fused(
    fused: Callable[..., bytes | None], buf: bytes, members: dict[str, msgspec.Raw], target: str, split: int
) -> bytes | None:
    """``fused``'s output for ``buf`` (checked, minified, ``members`` its top level laid end to
    end; handed over from ``split`` bytes on, :func:`split_min`), ``None``: take the general path
    (the hub). A lone surrogate the target cannot encode is the :class:`ParseError`
    :func:`_surrogate` names."""
    try:
        return fused(buf) if len(buf) < split else fused(buf, members)
    except UnicodeEncodeError as exc:
        raise _surrogate(exc, target) from None


def entry(p: Pipeline) -> Callable[[bytes], bytes]:
    """``p``'s :attr:`~Pipeline.convert_bytes`, chosen once from what its options fix.

    When the report is :data:`DISCARD` (``ignore``; ``warn`` while nobody listens, decided per
    call) in the compact style, a document that needs nothing but the
    checks and the fused path (no BOM, minified — forced: or minified first, as :meth:`Pipeline.convert`
    minifies it —, its top level parsed within the depth, no transport wrapper; forced: no other
    dialect's failure in it; with ``preserve``: no input residue, and its own residue added as
    :meth:`Pipeline.convert` adds it) takes one straight line of the
    calls :meth:`Pipeline.convert` makes for it, with what depends only on the pipeline and the
    source looked up once. Any other document, and any other pipeline, goes through
    :meth:`Pipeline.convert` from the start: the same output, error or nothing.
    """
    general = p.convert
    if p.policy.level is Level.RAISE or p.style != "compact":
        return lambda buf: general(buf, p.report())[0]
    straight = _straight(p)
    if p._ignore:
        return straight

    def warned(buf: bytes) -> bytes:
        report = p.report()
        return straight(buf) if report is DISCARD else general(buf, report)[0]

    return warned


def _without_bom(data: bytes, max_depth: int) -> bytes | None:
    """``data`` as :func:`~envglot.limits.check_input` checks it, without the depth; ``None`` when
    it had a BOM (the general path removes it and reports it). An ASCII document passes as it
    is, so :func:`_straight`'s detecting line tests ``isascii`` first and calls this only for the
    others (a forced source's line decodes inline, or in pieces past
    :data:`~envglot.limits.UTF8_CHUNK`, and leaves a BOM to the members' parse, which refuses it)."""
    buf, bom = check_input(data, max_depth, depth=False)
    return None if bom else buf


def _top_parser(src: Dialect) -> Callable[[bytes], TopMembers] | None:
    """The parse of ``src``'s top level with the members its reader decodes as keyed items
    decoded in it (:meth:`~envglot.wire.WireDecoder.top_parser`), used from
    :data:`~envglot.toplevel.KEYED_TOP_MIN` bytes on; ``None`` for a source without them."""
    reading = src.steps()[0]
    dec = None if reading is None else reading.decoder
    return dec.top_parser() if isinstance(dec, WireDecoder) else None


def _minified(buf: bytes, max_depth: int) -> tuple[bytes, dict[str, msgspec.Raw]] | None:
    """``(buf minified, its top-level members)`` for a checked, spaced document
    (:func:`~envglot.wire.may_be_loose`), when it parses within the depth and its minified members
    are laid end to end (no repeated member); ``None`` otherwise (nothing raised: the general path
    says why). The minify is the depth check's parse (:func:`~envglot.limits.within_depth`): a
    spaced document is parsed twice, once whole and once for its members."""
    try:
        tight = within_depth(_minify, buf, max_depth)
    except (msgspec.DecodeError, EnvglotError):
        return None
    members = members_of(tight)
    if members is None or not spans_whole(tight, members):
        return None
    return tight, members


def _straight(p: Pipeline) -> Callable[[bytes], bytes]:
    """:func:`entry`'s straight line for ``p`` under :data:`DISCARD`."""
    general = p.convert

    def slow(buf: bytes) -> bytes:
        return general(buf, DISCARD)[0]

    max_depth, registry, m, dst = p.max_depth, p.registry, p.mappings, p.dst
    preserve = p.preserve  # a document holding no input residue gets one (Pipeline._add_fused_residue)

    def fast(
        buf: bytes, members: dict[str, msgspec.Raw], fused: Callable[..., bytes | None], source: str, split: int
    ) -> bytes | None:
        """:func:`call` for ``buf`` (checked, ``members`` its top level, ``split`` the source's
        :func:`split_min`), ``None``: take the general path (a top level not laid end to end,
        whitespace, or the hub)."""
        if not spans_whole(buf, members) or may_be_loose(buf, True):
            return None
        if not preserve:
            return _run_fused(fused, buf, members, dst.name, split)
        if not _residue.none_in(buf, m[source].shape.residue, members):
            return None
        out = _run_fused(fused, buf, members, dst.name, split)
        return None if out is None else p._add_fused_residue(buf, out, registry.get(source), members)

    if p.src is not None:
        src = p.src
        # preserve: the fused path handing the residue's placer the carrier's payload as it wrote
        # it, compiled instead of the plain one (which only a document the general path takes needs)
        carrying = p._carrying_from(src)
        fused: Callable[..., Any] | None = p._fused_from(src, True) if carrying is None else carrying
        if fused is None:
            return slow
        wrapped = _WRAPPER_KEYS if p.unwrap else frozenset()
        holds_wrapper = holds_any(wrapped)
        rival = read_rival(registry, src, wrapped)  # asked only of what the fused function read
        target = dst.name
        # A document below KEYED_TOP_MIN bytes is read first by the reader's strict decode alone,
        # without its members, where that proves what they are parsed for: no key but the wire
        # Struct's (no wrapper's), the outcome key at most once outside the top level's Raw values
        # (the generated count); the depth checked by that decode (within_depth). The rival is
        # planned knowing the strict read (read_rival's strict facts); when it is not silent, the
        # members are parsed for it alone, after the read, and only below SPLIT_MIN bytes (where
        # the members' line parses the document twice too: its fused function decodes it whole).
        # (From KEYED_TOP_MIN on the top parser reads the members below.)
        keys = None if preserve else read_keys(src)
        strict = keys is not None and wrapped.isdisjoint(keys)
        strict_rival = read_rival(registry, src, wrapped, True, plain=True) if strict else None  # (no backslash)
        strict_below = KEYED_TOP_MIN if strict_rival is None else SPLIT_MIN
        outcome = msgspec.json.encode(src.outcome_key)
        # From KEYED_TOP_MIN on, a silent rival's source whose outcome count goes around a long
        # value (counted_around: not the whole document) reads a document strictly where its ends
        # show a success (shows_success): a success's members' line builds the wire Struct from
        # the members in Python, while a failure's strict read decodes its long details twice.
        peek = strict and strict_rival is None and counted_around(src)
        failure, seen = src.failure_value, outcome + b":"
        split = split_min(src)

        # fused(buf, STRICT_READ), called (buf) without a frame between (never with preserve: not strict)
        strictly = strict_reader(fused)
        placed = p._fused_residue(src) if preserve else None
        minified = minified_alike()  # (this source's documents' first key, kept)
        # A document the strict read accepts this short nests within max_depth (strict_floor): read
        # without lowering the recursion budget. Its answer is within_depth's: accepted, the same
        # output; refused (None, or anything raised: too deep, say) out is None either way.
        shallow = 2 * max_depth + strict_floor(src)

        slot = m[src.name].shape.residue
        # (not with preserve: the residue rebuilds the original in its members' order, which a
        # Struct's parse does not keep)
        top = None if preserve else _top_parser(src)

        # Whether the last document laid out plainly enough to be read here was spaced: the next is
        # tried as spaced first (a source's documents are laid out alike; either order gives the
        # same answer, the guess only saves the parse that does not fit).
        spaced = False
        # Whether the last strict read tried was refused (a document showing its outcome member's
        # key twice outside its top level's values, say in a list of problems): a document showing
        # the key twice then takes the members' line untried, until a strict read succeeds again.
        missed = False

        def forced(data: bytes) -> bytes:
            nonlocal spaced, missed
            if data.isascii():  # check_input's answer: valid UTF-8 without a BOM
                pass
            elif len(data) <= UTF8_CHUNK:  # check_input's one decode, without its calls; a BOM is
                try:  # refused by the members' parse below (the general path removes and reports it)
                    data.decode()
                except UnicodeDecodeError:
                    return slow(data)
            elif utf8_error(data) is not None:  # check_input's pieces, without its second isascii pass
                return slow(data)
            if not COMPILED[0]:
                return slow(data)
            if (
                strict
                and not spaced
                and (len(data) < strict_below or (peek and shows_success(data, seen, failure)))
                and 92 not in data
                and not (missed and data.count(outcome) > 1)
                and minified(data)
            ):
                # (After a spaced document the next is tried as spaced first, below.) No backslash:
                # each key is spelled as it reads, so the strict read's count of the outcome
                # member's key is exact (Pipeline.convert's one_outcome refuses none it reads).
                # What the members' line below gives for such a document, or (a top level not laid
                # end to end) the general path: the same fused output, as no test made on the
                # members there can refuse it. Anything else (a refusal, an error, the depth, the
                # outcome key shown twice outside the top level's values) takes that line.
                try:
                    out = strictly(data) if len(data) <= shallow else within_depth(strictly, data, max_depth)
                except Exception:
                    out = None
                if out is not None:
                    missed = False
                    if strict_rival is not None:  # (a document read strictly is an object: parsed)
                        other = strict_rival(top_members(data))
                        if other is not None and not dst.failed(out) and _failure_of(data, other, m) is not None:
                            return slow(data)
                    return out
                missed = True
            buf = data
            if spaced and may_be_loose(buf):
                tight = _minified(buf, max_depth)
                if tight is None:
                    return slow(data)
                buf, members = tight
            else:
                found, checked = (
                    members_within_depth(buf, max_depth, top)
                    if top is not None and len(buf) >= KEYED_TOP_MIN
                    else members_within_depth(buf, max_depth)
                )
                if found is None or not checked:
                    if top is None or len(buf) < KEYED_TOP_MIN:
                        return slow(data)
                    found, checked = members_within_depth(buf, max_depth)  # (or a member it does not name)
                    if found is None or not checked:
                        return slow(data)
                members = found
                whole = spans_whole(buf, members)
                if not whole and type(members) is TopMembers and not may_be_loose(buf):
                    # a member the top parse decoded spelled longer than its encoding (an explicit
                    # default, a longer escape, a repeated key): the members parse proves the rest
                    found, checked = members_within_depth(buf, max_depth)
                    if found is None or not checked:
                        return slow(data)
                    members, whole = found, spans_whole(buf, found)
                if whole:
                    if may_be_loose(buf, True):
                        return slow(data)
                    spaced = False
                elif may_be_loose(buf):
                    # spaced (json.dumps's ", "/": "): minified first, as Pipeline.convert does for a
                    # document parsed whole within the depth; a repeated member takes the general
                    # path. The next document is tried as spaced first.
                    spaced = True
                    tight = _minified(buf, max_depth)
                    if tight is None:
                        return slow(data)
                    buf, members = tight
                else:
                    return slow(data)
            if holds_wrapper(members) or (preserve and not _residue.none_in(buf, slot, members)):
                return slow(data)
            try:  # _run_fused's call, without its frame
                got = fused(buf) if len(buf) < split else fused(buf, members)
            except UnicodeEncodeError as exc:
                raise _surrogate(exc, target) from None
            if got is None:
                return slow(data)
            if carrying is None:
                out, carried = got, None
            else:  # (preserve) the output and what it wrote at the carrier's member
                out, carried = got
            if rival is not None:
                other = rival(members)
                if other is not None and not dst.failed(out) and _failure_of(buf, other, m) is not None:
                    return slow(data)
            if placed is None:
                return p._add_fused_residue(buf, out, src, members, carried) if preserve else out
            return placed(buf, out, members, carried)

        return forced

    paths: dict[str, Callable[..., bytes | None] | None] = {MCP: None, JSONRPC: None}
    splits: dict[str, int] = {}  # each source's split_min, found with its fused function
    strict = p.strict

    def detected(data: bytes) -> bytes:
        buf = data if data.isascii() else _without_bom(data, max_depth)  # (ASCII: check_input's answer)
        if buf is None or not COMPILED[0]:
            return slow(data)
        members = within_depth(top_level, buf, max_depth)
        det = classify_members(members, registry)
        fused = paths.get(det.dialect, _MISSING)
        if fused is _MISSING:
            source = registry.get(det.dialect)
            fused = paths[det.dialect] = p._fused_from(source, True)
            splits[det.dialect] = split_min(source)
        if fused is None or (strict and det.evidence is None):
            return slow(data)
        out = fast(buf, members, fused, det.dialect, splits[det.dialect])
        return slow(data) if out is None else out

    return detected


def contrary(
    buf: bytes, src: Dialect, det: Detection | None, m: Mappings, members: dict[str, msgspec.Raw] | None = None
) -> Envelope | None:
    """The failure another dialect of ``m``'s registry reads in a document forced as ``src``:
    detection names that dialect by its evidence and its reader says failure (``None``
    otherwise). ``det`` is the document's detection, ``members`` its top level's
    (:func:`~envglot.limits.members_of`), when the caller has them."""
    other = _other_dialect(buf, src, det, m.registry, members)
    return None if other is None else _failure_of(buf, other, m)


def _other_dialect(
    buf: bytes, src: Dialect, det: Detection | None, registry: Registry, members: dict[str, msgspec.Raw] | None
) -> Dialect | None:
    """The dialect of ``registry`` other than ``src`` that detection names by its evidence in
    ``buf`` (``None``: none); ``members``: its top level's, when the caller has them."""
    if det is None:
        if members is not None:
            return forced_rival(registry, src.name)(members)
        try:
            det = classify(buf, registry)
        except DetectError:
            return None
    if det.evidence is None or det.dialect in (src.name, MCP, JSONRPC):
        return None
    return registry.get(det.dialect)


def _failure_of(buf: bytes, other: Dialect, m: Mappings) -> Envelope | None:
    """The failure ``other``'s reader reads in ``buf`` (``None``: a success, or not readable as ``other``)."""
    try:
        env: Envelope = other.read(buf, Context(m, DISCARD, m[other.name]))
    except EnvglotError:
        return None
    return None if env.ok else env


def failure_wins(env: Envelope, src: Dialect, contrary: Envelope | None, report: Report) -> Envelope:
    """A forced source's success over a document another dialect reads as a failure: the failure wins."""
    if contrary is None:
        return env
    if report.collecting:
        report.add(
            Kind.STATUS_MISMATCH,
            "$",
            conflict=f"read as {src.name} (forced) this is a success, but it carries another dialect's failure markers",
            resolved="the failure wins",
        )
    return msgspec.structs.replace(env, ok=False, problems=contrary.problems)


def reconcile(env: Envelope, is_error: bool, det: Detection | None, m: Mappings, report: Report) -> Envelope:
    """Apply the MCP ``isError`` flag: the outcome can only ever become a failure, never a success.

    A failure flag over a marker-less object makes it a failure whose details are the object
    (message from the first evident key, ``[inference]`` in ``mappings/canonical.toml``);
    a failure flag over an envelope that says success makes it a failure.
    """
    if not is_error:
        if not env.ok and report.collecting:
            report.add(
                Kind.STATUS_MISMATCH,
                "$.isError",
                conflict="MCP isError=false but the envelope says failure",
                resolved="the failure wins",
            )
        return env
    if not env.ok:
        return env
    if det is not None and det.evidence is None:
        message, key = _evident_message(env.payload, m.message_keys)
        if report.collecting:
            report.add(
                Kind.OUTCOME_INFERRED,
                "$.isError",
                category=repr(m.unknown_category),
                message=f"message from $.{key}" if key else "no message key found",
            )
        problem = Problem(category=m.unknown_category, message=message, details=env.payload)
        return msgspec.structs.replace(env, ok=False, payload=None, problems=(problem,))
    if report.collecting:
        report.add(
            Kind.STATUS_MISMATCH,
            "$.isError",
            conflict="MCP isError=true but the envelope says success",
            resolved="the failure wins",
        )
    problems = env.problems or (
        Problem(category=m.unknown_category, message=env.summary or "the MCP result is flagged isError"),
    )
    return msgspec.structs.replace(env, ok=False, problems=problems)


_RAW_DICT = msgspec.json.Decoder(dict[str, msgspec.Raw])
_STR = msgspec.json.Decoder(str)


def _evident_message(payload: msgspec.Raw | None, keys: tuple[str, ...]) -> tuple[str | None, str | None]:
    """``(message, key)`` from the first of ``keys`` holding a non-empty string in ``payload``."""
    if payload is None or memoryview(payload)[:1] != b"{":
        return None, None
    d = _RAW_DICT.decode(payload)
    for k in keys:
        v = d.get(k)
        if v is not None and memoryview(v)[:1] == b'"':
            text = _STR.decode(v)
            if text.strip():
                return text, k
    return None, None


def _pipeline(from_: str | None, to: str, o: Options) -> Pipeline:
    """The pipeline for these options: built once per distinct options (no ``context``) and reused.

    A pipeline holds no per-call state; the key holds the :class:`Mappings` object itself
    (overlays are cached by path and modification time, so an edited overlay is a new key).
    """
    if o.context is not None:  # a caller's dict may change between calls: never cached
        return Pipeline(from_, to, o)
    m = as_mappings(o.mappings)
    key = (to, from_, o, id(m))
    try:
        p = _PIPELINES.get(key)
    except TypeError:  # an unhashable option value: built, not cached
        return Pipeline(from_, to, o, mappings=m)
    if p is None or p.mappings is not m:
        p = Pipeline(from_, to, o, mappings=m)
        if len(_PIPELINES) >= _PIPELINES_MAX:
            _PIPELINES.clear()
        _PIPELINES[key] = p
    return p


_PIPELINES: dict[tuple[Any, ...], Pipeline] = {}
"""One-shot calls' pipelines by their options (``convert()`` then costs what a reused Converter does)."""
_PIPELINES_MAX = 256
_ARGUMENTS: Any = object()
"""The first member of a ``_PIPELINES`` key made of a one-shot call's own arguments."""


def one_shot(
    to: str,
    from_: str | None,
    options: Options | None,
    preserve: Any,
    unsupported: Any,
    mappings: Any,
    style: Any,
    context: Any,
    strict: Any,
    max_depth: Any,
) -> Pipeline:
    """The pipeline of a call (``convert``, ``conversion``, ``Converter``): looked up by the call's own
    arguments when they are plain values and the tables are the bundled ones (no ``options``,
    ``mappings`` or ``context``: nothing to resolve), else by the resolved :class:`Options`
    (:func:`_pipeline`). Both kinds of key live in ``_PIPELINES``."""
    plain = options is None and mappings is UNSET and context is UNSET
    if plain:
        key = (  # True and 1 are equal keys, not equal options: the types go in too
            _ARGUMENTS, to, from_, preserve, unsupported, style, strict, max_depth,
            type(preserve), type(unsupported), type(style), type(strict), type(max_depth),
        )  # fmt: skip
        try:
            p = _PIPELINES.get(key)
        except TypeError:  # an unhashable argument: resolve() names what is wrong with it
            plain = False
        else:
            if p is not None and p.mappings is default_mappings():
                return p
    o = resolve(
        options,
        preserve=preserve,
        unsupported=unsupported,
        mappings=mappings,
        style=style,
        context=context,
        strict=strict,
        max_depth=max_depth,
    )
    p = _pipeline(from_, to, o)
    if plain and o.context is None:
        if len(_PIPELINES) >= _PIPELINES_MAX:
            _PIPELINES.clear()
        _PIPELINES[key] = p
    return p


_BACK_PIPELINES: dict[tuple[Any, ...], Pipeline] = {}
"""The write-back pipelines of ``preserve`` (see :meth:`Pipeline._back`)."""
