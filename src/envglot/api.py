"""The public conversion API: ``convert``, ``conversion``, ``detect``, ``read``, ``write``, ``Converter``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from types import ModuleType
from typing import Any, Literal, TypeVar

import msgspec

from . import residue as _residue
from .canonical import Envelope
from .context import Context
from .detect import MCP, detect_bytes
from .diagnostics import DISCARD, Diagnostic, Kind, Report
from .dialects import WRITABLE, get_dialect
from .dialects._common import may_be_loose
from .errors import EnvglotError, ParseError
from .mappings import Mappings, mappings_for
from .transport import unwrap_bytes

__all__ = ["Conversion", "Converter", "Style", "conversion", "convert", "detect", "read", "write"]

Style = Literal["compact", "pretty", "native"]
Data = TypeVar("Data", bytes, str, dict[str, Any])
MappingsArg = Sequence[str | os.PathLike[str]] | Mappings | None

_ANY = msgspec.json.Decoder()
_ENC = msgspec.json.Encoder()


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


def _to_bytes(data: bytes | str | dict[str, Any] | memoryview) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode()
    if isinstance(data, memoryview | bytearray):
        return bytes(data)
    if isinstance(data, dict):
        return _ENC.encode(data)
    raise EnvglotError(f"expected bytes, str or dict, got {type(data).__name__}", path="$")


def _from_bytes(out: bytes, like: object) -> Any:
    if isinstance(like, str):
        return out.decode()
    if isinstance(like, dict):
        return _ANY.decode(out)
    return out


def _mappings(m: MappingsArg) -> Mappings:
    return m if isinstance(m, Mappings) else mappings_for(m)


def _style(out: bytes, style: str, target: str) -> bytes:
    if style == "compact":
        # Raw payloads keep the source's whitespace; minify only when some may be there.
        if b"\n" in out or b": " in out or b", " in out:
            return msgspec.json.format(out, indent=-1)
        return out
    if style == "pretty":
        return msgspec.json.format(out, indent=2)
    if style == "native":  # a negative indent minifies (payloads may carry the source's whitespace)
        return msgspec.json.format(out, indent=get_dialect(target).NATIVE_INDENT)
    raise EnvglotError(f"style must be compact, pretty or native, not {style!r}")


def detect(data: bytes | str | dict[str, Any]) -> str:
    """Name the dialect of a document; an MCP CallToolResult is unwrapped first.

    Raises:
        DetectError: the input is not JSON or not an object.
    """
    buf = _to_bytes(data)
    name = detect_bytes(buf)
    if name == MCP:
        inner, _ = unwrap_bytes(buf)
        name = detect_bytes(inner)
    return name


class _Pipeline:
    """Reader -> canonical -> writer for fixed options; shared by the API and Converter."""

    __slots__ = ("dst", "mappings", "preserve", "src", "style", "synth", "unsupported", "unwrap")

    def __init__(
        self,
        src: str | None,
        dst: str,
        mappings: Mappings,
        preserve: bool,
        unsupported: str,
        style: str,
        synth: dict[str, Any] | None,
        unwrap: bool = True,
    ) -> None:
        self.src: ModuleType | None = get_dialect(src) if src is not None else None
        self.dst: ModuleType = get_dialect(dst)
        if self.dst.NAME not in WRITABLE:
            raise EnvglotError(f"{self.dst.NAME} is a read-only source dialect; write one of {', '.join(WRITABLE)}")
        self.mappings = mappings
        self.preserve = preserve
        Report(unsupported)  # validates the level
        self.unsupported = unsupported
        _style(b"{}", style, "response-v2")
        self.style = style
        self.synth = synth
        self.unwrap = unwrap

    def run(self, buf: bytes, report: Report) -> Conversion:
        out, src, unwrapped = self.convert(buf, report)
        return Conversion(
            output=out, source=src, target=self.dst.NAME, diagnostics=report.diagnostics, unwrapped=unwrapped
        )

    def convert(self, buf: bytes, report: Report) -> tuple[bytes, str, bool]:
        """``(output, source dialect, unwrapped)`` for one document."""
        unwrapped = False
        is_error: bool | None = None
        src = self.src
        if src is None:
            name = detect_bytes(buf)
            if name == MCP and self.unwrap:
                buf, is_error = unwrap_bytes(buf)
                unwrapped = True
                name = detect_bytes(buf)
            src = get_dialect(name)
        m = self.mappings
        compact = self.style == "compact"
        if compact and may_be_loose(buf):
            # Minify the input once: Raw payloads then carry no insignificant whitespace, so
            # no writer has to minify its output; broken JSON is left for the reader to report.
            try:
                buf = msgspec.json.format(buf, indent=-1)
            except msgspec.DecodeError:
                pass
        ctx = Context(m, report, m[src.NAME], self.synth, compact)
        env: Envelope = src.read(buf, ctx)
        if is_error is not None and is_error == env.ok:
            report.add(
                Kind.STATUS_MISMATCH,
                "$.isError",
                f"MCP isError={str(is_error).lower()} but the envelope says "
                f"{'success' if env.ok else 'failure'}; the envelope wins",
            )
        out, restored = self._write(env, src, ctx)
        if self.preserve and not restored:  # a residue that restored its document is consumed
            out = self._add_residue(buf, out, src, env)
        report.finish()
        if not compact:
            out = _style(out, self.style, self.dst.NAME)
        return out, src.NAME, unwrapped

    def _write(self, env: Envelope, src: ModuleType, ctx: Context) -> tuple[bytes, bool]:
        """The target document, and whether a preserve residue restored it."""
        dst = self.dst
        out: bytes = dst.write(env, ctx)
        if not env.extras and env.residue is None:
            return out, False
        own = [ex for ex in env.extras if ex.dialect == dst.NAME]
        res = None
        if env.residue is not None:
            try:
                res = msgspec.json.decode(env.residue, type=dict[str, Any])
            except msgspec.MsgspecError:
                raise ParseError("the envglot residue is not an object", path=ctx.path("residue")) from None
            if res.get("from") != dst.NAME:
                ctx.report.add(
                    Kind.RESIDUE_DROPPED,
                    m_path(ctx, src),
                    f"preserve residue for {res.get('from')!r} has no use in {dst.NAME}",
                    dst.NAME,
                )
                res = None
        if not own and res is None:
            return out, False
        doc = _ANY.decode(out)
        for ex in own:
            _residue.set_path(doc, _residue.parse_path(ex.path), _ANY.decode(ex.value))
        if res is not None:
            doc = _residue.apply(doc, res.get("set", []), res.get("del", []))
        return _ENC.encode(doc), res is not None

    def _add_residue(self, buf: bytes, out: bytes, src: ModuleType, env: Envelope) -> bytes:
        if src.NAME not in WRITABLE:
            return out
        m = self.mappings
        quiet = Report("ignore")
        back_ctx = Context(m, quiet, m[self.dst.NAME], self.synth)
        back_env = self.dst.read(out, back_ctx)
        back, _ = _Pipeline(self.dst.NAME, src.NAME, m, False, "ignore", "compact", self.synth)._write(
            back_env, self.dst, back_ctx
        )
        original = _ANY.decode(buf)
        produced = _ANY.decode(back)
        src_slot = _residue.parse_path(m[src.NAME].shape.residue)
        skip = frozenset({str(src_slot[0])}) if len(src_slot) == 1 else frozenset()
        sets, dels = _residue.diff(original, produced, skip)
        if not sets and not dels:
            return out
        doc = _ANY.decode(out)
        _residue.set_path(
            doc,
            _residue.parse_path(m[self.dst.NAME].shape.residue),
            {"from": src.NAME, "set": sets, "del": dels},
        )
        return _ENC.encode(doc)


def m_path(ctx: Context, src: ModuleType) -> str:
    return ctx.mappings[src.NAME].shape.residue


def _pipeline(
    to: str,
    from_: str | None,
    preserve: bool,
    unsupported: str,
    mappings: MappingsArg,
    style: str,
    context: dict[str, Any] | None,
) -> _Pipeline:
    return _Pipeline(from_, to, _mappings(mappings), preserve, unsupported, style, context)


def conversion(
    data: bytes | str | dict[str, Any],
    *,
    to: str,
    from_: str | None = None,
    preserve: bool = False,
    unsupported: str = "warn",
    mappings: MappingsArg = None,
    style: Style = "compact",
    context: dict[str, Any] | None = None,
) -> Conversion:
    """Convert one document and return a :class:`Conversion` with its diagnostics.

    Same arguments as :func:`convert`; the output is always bytes.
    """
    p = _pipeline(to, from_, preserve, unsupported, mappings, style, context)
    return p.run(_to_bytes(data), Report(unsupported))


def convert(
    data: Data,
    *,
    to: str,
    from_: str | None = None,
    preserve: bool = False,
    unsupported: str = "warn",
    mappings: MappingsArg = None,
    style: Style = "compact",
    context: dict[str, Any] | None = None,
    report: Report | None = None,
) -> Data:
    """Convert one envelope to dialect ``to``; returns the same kind it was given.

    Args:
        data: the document (bytes, str or an already-parsed dict). An MCP
            CallToolResult is unwrapped when the dialect is auto-detected.
        to: target dialect name (``envglot dialects`` lists them).
        from_: source dialect; auto-detected when ``None``.
        preserve: carry what the target cannot say as a residue, so converting back
            restores the original document.
        unsupported: ``ignore``, ``warn`` (log on the ``envglot`` logger) or ``raise``
            (:class:`UnsupportedError` if anything would be lost).
        mappings: overlay TOML files (or a prebuilt :class:`Mappings`).
        style: ``compact`` (default), ``pretty`` (2-space indent) or ``native`` (as the
            dialect's real emitter prints).
        context: values for fields the target requires but the source lacks
            (``tool``, ``tool_version``, ``request_id``, ``timestamp``, ``source``, ...).
        report: a :class:`~envglot.diagnostics.Report` to collect diagnostics into.

    Raises:
        ParseError: the input is not valid JSON or breaks its dialect's contract.
        UnsupportedError: ``unsupported="raise"`` and the conversion is lossy.
        UnknownDialectError: ``to`` or ``from_`` is not a dialect name.
    """
    p = _pipeline(to, from_, preserve, unsupported, mappings, style, context)
    if report is None:
        rep = DISCARD if unsupported == "ignore" else Report(unsupported)
    else:
        rep = report
        rep.level = unsupported
    return _from_bytes(p.convert(_to_bytes(data), rep)[0], data)


def read(
    data: bytes | str | dict[str, Any],
    from_: str | None = None,
    *,
    mappings: MappingsArg = None,
    report: Report | None = None,
) -> Envelope:
    """Read a document into the canonical :class:`~envglot.canonical.Envelope`."""
    buf = _to_bytes(data)
    if from_ is None:
        name = detect_bytes(buf)
        if name == MCP:
            buf, _ = unwrap_bytes(buf)
            name = detect_bytes(buf)
        from_ = name
    mod = get_dialect(from_)
    m = _mappings(mappings)
    rep = report if report is not None else Report("ignore")
    return mod.read(buf, Context(m, rep, m[mod.NAME]))


def write(
    envelope: Envelope,
    to: str,
    *,
    mappings: MappingsArg = None,
    unsupported: str = "warn",
    style: Style = "compact",
    context: dict[str, Any] | None = None,
    report: Report | None = None,
    source: str | None = None,
) -> bytes:
    """Write a canonical envelope as dialect ``to`` (JSON bytes).

    ``source`` names the dialect the envelope came from, so that diagnostics carry that
    dialect's JSON paths (``$.audit.host``) instead of canonical field names (``$.host``).
    """
    p = _Pipeline(source, to, _mappings(mappings), False, unsupported, style, context)
    rep = report if report is not None else Report(unsupported)
    m = p.mappings
    src = p.src if p.src is not None else p.dst
    ctx = Context(m, rep, m[p.src.NAME] if p.src is not None else None, context)
    out, _ = p._write(envelope, src, ctx)
    rep.finish()
    return _style(out, style, p.dst.NAME)


class Converter:
    """A reusable converter for hot loops: decoders, encoders and tables are built once.

    ``Converter(from_="errorcode", to="response-v2")(data)`` converts one document and
    returns the same kind it was given; :meth:`convert_bytes` is the bytes -> bytes
    fast path. Thread-safe: no state changes after construction. The diagnostics of
    the last call are not kept; use :meth:`conversion` to get them.
    """

    __slots__ = ("_p", "from_", "to")

    def __init__(
        self,
        to: str,
        from_: str | None = None,
        *,
        preserve: bool = False,
        unsupported: str = "warn",
        mappings: MappingsArg = None,
        style: Style = "compact",
        context: dict[str, Any] | None = None,
    ) -> None:
        self._p = _pipeline(to, from_, preserve, unsupported, mappings, style, context)
        self.from_ = self._p.src.NAME if self._p.src is not None else None
        self.to = self._p.dst.NAME

    def convert_bytes(self, data: bytes) -> bytes:
        """Convert one document (bytes -> bytes)."""
        level = self._p.unsupported
        return self._p.convert(data, DISCARD if level == "ignore" else Report(level))[0]

    def conversion(self, data: bytes | str | dict[str, Any]) -> Conversion:
        """Convert one document and return the :class:`Conversion` with diagnostics."""
        return self._p.run(_to_bytes(data), Report(self._p.unsupported))

    def __call__(self, data: Data) -> Data:
        p = self._p
        rep = DISCARD if p.unsupported == "ignore" else Report(p.unsupported)
        return _from_bytes(p.convert(_to_bytes(data), rep)[0], data)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"Converter(from_={self.from_!r}, to={self.to!r})"
