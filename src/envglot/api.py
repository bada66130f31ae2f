"""The public conversion API: ``convert``, ``conversion``, ``detect``, ``read``, ``write``, ``Converter``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from .canonical import Envelope, Problem
from .context import Context
from .detect import Detection
from .diagnostics import DISCARD, Kind, Report
from .errors import EnvglotError, NoEnvelopeError, ParseError
from .excerpt import excerpt
from .limits import check_input
from .options import UNSET, MappingsArg, Options, Style, Unsupported, resolve
from .pipeline import (
    Conversion,
    Pipeline,
    as_mappings,
    contrary,
    failure_wins,
    forced_untransport,
    from_bytes,
    locate,
    one_outcome,
    one_shot,
    reconcile,
    styled,
    to_bytes,
)
from .policy import Level, Policy
from .registry import Registry, bundled

__all__ = [
    "Conversion",
    "Converter",
    "MappingsArg",
    "Options",
    "Style",
    "Unsupported",
    "answer",
    "conversion",
    "convert",
    "detect",
    "detection",
    "read",
    "refusal",
    "unwrap",
    "write",
]

Data = TypeVar("Data", bytes, str, dict[str, Any])


def _registry(m: MappingsArg) -> Registry:
    """The dialects of a ``mappings=`` value: the bundled ones, plus those it declares."""
    return bundled() if m is None else as_mappings(m).registry


def detect(
    data: bytes | str | dict[str, Any],
    *,
    options: Options | None = None,
    mappings: MappingsArg = UNSET,
    strict: bool = UNSET,
    max_depth: int = UNSET,
) -> str:
    """Name the dialect of a document; an MCP CallToolResult or JSON-RPC response is unwrapped first.

    Of the :class:`~envglot.Options` (``options=`` or keywords) only ``mappings``, ``strict``
    and ``max_depth`` apply: the dialects are the bundled ones plus those declared in
    ``mappings``. ``strict=True`` refuses a document that carries no dialect's markers
    (legacy-v1's marker-less bare payload) instead of naming it ``legacy-v1``.

    Raises:
        DetectError: the input is not JSON or not an object, or (``strict``) has no markers.
        ParseError: bad encoding, nesting deeper than ``max_depth``, an unusable wrapper.
    """
    return detection(data, options=options, mappings=mappings, strict=strict, max_depth=max_depth).dialect


def detection(
    data: bytes | str | dict[str, Any],
    *,
    options: Options | None = None,
    mappings: MappingsArg = UNSET,
    strict: bool = UNSET,
    max_depth: int = UNSET,
) -> Detection:
    """Like :func:`detect`, with the evidence the dialect was recognized by (``None``: no markers)."""
    _, det, _ = unwrap(data, options=options, mappings=mappings, strict=strict, max_depth=max_depth)
    return det


def unwrap(
    data: bytes | str | dict[str, Any],
    *,
    options: Options | None = None,
    mappings: MappingsArg = UNSET,
    strict: bool = UNSET,
    max_depth: int = UNSET,
) -> tuple[bytes, Detection, bool | None]:
    """``(envelope, detection, isError)``: the envelope inside an MCP CallToolResult or JSON-RPC
    response (or ``data`` itself), checked as :func:`detection` checks it; ``isError`` is the
    CallToolResult's flag (``None`` when there was none)."""
    o = resolve(options, mappings=mappings, strict=strict, max_depth=max_depth)
    reg = _registry(o.mappings)
    buf, _ = check_input(to_bytes(data), o.max_depth)
    inner, det, is_error = locate(buf, True, o.strict, DISCARD, o.max_depth, registry=reg)
    return inner, (msgspec.structs.replace(det, unwrapped=True) if inner is not buf else det), is_error


def conversion(
    data: bytes | str | dict[str, Any],
    *,
    to: str,
    from_: str | None = None,
    options: Options | None = None,
    preserve: bool = UNSET,
    unsupported: Unsupported = UNSET,
    mappings: MappingsArg = UNSET,
    style: Style = UNSET,
    context: dict[str, Any] | None = UNSET,
    strict: bool = UNSET,
    max_depth: int = UNSET,
) -> Conversion:
    """Convert one document and return a :class:`Conversion` with its diagnostics.

    Same arguments as :func:`convert`; the output is always bytes.
    """
    p = one_shot(to, from_, options, preserve, unsupported, mappings, style, context, strict, max_depth)
    return p.run(to_bytes(data), Report(p.policy))


def convert(
    data: Data,
    *,
    to: str,
    from_: str | None = None,
    options: Options | None = None,
    preserve: bool = UNSET,
    unsupported: Unsupported = UNSET,
    mappings: MappingsArg = UNSET,
    style: Style = UNSET,
    context: dict[str, Any] | None = UNSET,
    report: Report | None = None,
    strict: bool = UNSET,
    max_depth: int = UNSET,
) -> Data:
    """Convert one envelope to dialect ``to``; returns the same kind it was given.

    Args:
        data: the document (bytes, str or an already-parsed dict). An MCP
            CallToolResult is unwrapped when the dialect is auto-detected.
        to: target dialect name (``envglot dialects`` lists them).
        from_: source dialect; auto-detected when ``None``.
        options: an :class:`~envglot.Options` value (default: ``Options()``). Each option is
            also a keyword of its own (``preserve``, ``unsupported``, ``mappings``, ``style``,
            ``context``, ``strict``, ``max_depth``; meanings and defaults in
            :class:`~envglot.Options`); a keyword given with ``options`` overrides that field.
        report: a :class:`~envglot.diagnostics.Report` to collect diagnostics into (its own
            level is never changed; ``unsupported`` decides what this conversion does).

    Raises:
        ParseError: the input is not valid UTF-8 JSON, is nested deeper than ``max_depth``,
            or breaks its dialect's contract (a :class:`DetectError` when no dialect matches).
        UnsupportedError: ``unsupported="raise"`` and the conversion is lossy.
        UnknownDialectError: ``to`` or ``from_`` is not a dialect name.
        EnvglotError: an option has a bad value.
    """
    p = one_shot(to, from_, options, preserve, unsupported, mappings, style, context, strict, max_depth)
    out = p.convert_bytes(to_bytes(data)) if report is None else p.convert(to_bytes(data), report)[0]
    return from_bytes(out, data, p.dst)


REFUSED = "refused"
"""The ``source`` of a :func:`refusal`: no dialect was read."""


def refusal(
    error: EnvglotError,
    *,
    to: str,
    options: Options | None = None,
    context: dict[str, Any] | None = UNSET,
) -> Conversion:
    """The answer to a document the core refused (``error``): a failure, never a success.

    Every face that must answer whatever it was given (``envglot proxy``, ``@emits``) answers
    a refused document with this: a failure of the ``[refusal]`` category of
    ``mappings/canonical.toml``, the refusal (with its JSON path) as its message, written as
    ``to`` with ``options`` (``context`` overrides its field); a ``synthesized`` diagnostic at
    the refusal's path says so; ``source`` is :data:`REFUSED`. The loss policy reports but never
    refuses this answer (``raise`` acts as ``warn``), so the failure always reaches the caller.
    """
    o = resolve(options, context=context)
    if o.policy.level is Level.RAISE:
        o = o.replace(unsupported=msgspec.structs.replace(o.policy, level=Level.WARN))
    rule = as_mappings(o.mappings).refusal
    text = str(error)
    problem = Problem(category=rule.category, message=text, origin=rule.origin, aspect=rule.aspect)
    rep = Report(o.policy)
    rep.add(
        Kind.SYNTHESIZED,
        error.path or "$",
        need=f"the document is refused ({excerpt(text, 200)})",
        value=f"a failure of category {rule.category!r}",
    )
    out = write(Envelope(ok=False, problems=(problem,)), to, options=o, report=rep)
    target = as_mappings(o.mappings).registry.get(to).name
    return Conversion(output=out, source=REFUSED, target=target, diagnostics=rep.diagnostics)


def answer(
    data: bytes | str | dict[str, Any],
    *,
    to: str,
    from_: str | None = None,
    options: Options | None = None,
) -> Conversion:
    """The conversion a face answers with: :func:`conversion`, or the :func:`refusal` of a refused document.

    The one outcome decision of every face that must answer (the proxy, ``@emits``): a
    document the core reads is converted (an MCP ``isError`` or any failure marker can only
    make a failure); a document it refuses (any :class:`ParseError`: not UTF-8 JSON, a lone
    surrogate escape, ``NaN``, too deep, trailing bytes, a repeated outcome key, a broken
    contract; a dict holding a value JSON cannot carry) is answered as a failure.

    Raises:
        NoEnvelopeError: an MCP CallToolResult that carries no envelope at all (plain text):
            not a refusal; the face synthesizes an envelope (``isError`` decides).
        UnsupportedError: ``unsupported="raise"`` and the conversion is lossy.
    """
    try:
        return conversion(data, to=to, from_=from_, options=options)
    except NoEnvelopeError:
        raise
    except ParseError as exc:
        return refusal(exc, to=to, options=options)


def read(
    data: bytes | str | dict[str, Any],
    from_: str | None = None,
    *,
    options: Options | None = None,
    mappings: MappingsArg = UNSET,
    report: Report | None = None,
    strict: bool = UNSET,
    max_depth: int = UNSET,
) -> Envelope:
    """Read a document into the canonical :class:`~envglot.canonical.Envelope`.

    Transport wrappers are taken off as :func:`convert` does (an MCP ``isError`` can only
    turn the outcome into a failure). Of the :class:`~envglot.Options` (``options=`` or
    keywords, as for :func:`convert`) ``mappings``, ``strict`` and ``max_depth`` apply.
    """
    o = resolve(options, mappings=mappings, strict=strict, max_depth=max_depth)
    m = as_mappings(o.mappings)
    rep = report if report is not None else Report(Level.IGNORE)
    buf, bom = check_input(to_bytes(data), o.max_depth)
    if bom:
        rep.add(Kind.BOM_REMOVED, "$")
    det: Detection | None = None
    is_error: bool | None = None
    if from_ is None:
        buf, det, is_error = locate(buf, True, o.strict, rep, o.max_depth, registry=m.registry)
        from_ = det.dialect
    else:  # a forced source names the envelope: its wrapper's isError still applies
        buf, is_error = forced_untransport(buf, None, o.max_depth, m.registry)
    mod = m.registry.get(from_)
    one_outcome(buf, mod.outcome_key, mod.name)
    env: Envelope = mod.read(buf, Context(m, rep, m[mod.name]))
    if det is None and env.ok:  # a forced source: another dialect's failure markers still win
        env = failure_wins(env, mod, contrary(buf, mod, None, m), rep)
    return env if is_error is None else reconcile(env, is_error, det, m, rep)


def write(
    envelope: Envelope,
    to: str,
    *,
    options: Options | None = None,
    mappings: MappingsArg = UNSET,
    unsupported: Unsupported = UNSET,
    style: Style = UNSET,
    context: dict[str, Any] | None = UNSET,
    report: Report | None = None,
    source: str | None = None,
) -> bytes:
    """Write a canonical envelope as dialect ``to`` (JSON bytes).

    Of the :class:`~envglot.Options` (``options=`` or keywords, as for :func:`convert`)
    ``mappings``, ``unsupported``, ``style`` and ``context`` apply (an envelope carries no
    residue of its own: ``preserve`` has nothing to write). ``source`` names the dialect the
    envelope came from, so that diagnostics carry that dialect's JSON paths
    (``$.audit.host``) instead of canonical field names (``$.host``).
    """
    o = resolve(options, mappings=mappings, unsupported=unsupported, style=style, context=context)
    p = Pipeline(source, to, o if not o.preserve else o.replace(preserve=False))
    rep = p.report() if report is None else report
    start = len(rep.diagnostics)
    m = p.mappings
    src = p.src if p.src is not None else p.dst
    ctx = Context(m, rep, m[p.src.name] if p.src is not None else None, p.synth)
    out, _ = p.write_envelope(envelope, src, ctx)
    tool = envelope.tool if envelope.tool is not None else (p.synth or {}).get("tool")
    rep.finish(p.policy, start=start, source=source, target=p.dst.name, tool=tool if isinstance(tool, str) else None)
    return styled(out, p.style, p.dst)


class Converter:
    """A reusable converter for hot loops: decoders, encoders and tables are built once.

    ``Converter(from_="errorcode", to="response-v2")(data)`` converts one document and
    returns the same kind it was given; :meth:`convert_bytes` is the bytes -> bytes
    fast path. Thread-safe: no state changes after construction. The diagnostics of
    the last call are not kept; use :meth:`conversion` to get them.
    """

    __slots__ = ("_p", "convert_bytes", "from_", "to")

    convert_bytes: Callable[[bytes], bytes]
    """Convert one document (bytes -> bytes): the pipeline's :attr:`~Pipeline.convert_bytes`
    itself once its first call has chosen it (no call of this object's own in between)."""

    def __init__(
        self,
        to: str,
        from_: str | None = None,
        *,
        options: Options | None = None,
        preserve: bool = UNSET,
        unsupported: Unsupported = UNSET,
        mappings: MappingsArg = UNSET,
        style: Style = UNSET,
        context: dict[str, Any] | None = UNSET,
        strict: bool = UNSET,
        max_depth: int = UNSET,
    ) -> None:
        self._p = one_shot(to, from_, options, preserve, unsupported, mappings, style, context, strict, max_depth)
        self.from_ = self._p.src.name if self._p.src is not None else None
        self.to = self._p.dst.name
        self.convert_bytes = self._first_bytes

    def _first_bytes(self, data: bytes) -> bytes:
        """:attr:`convert_bytes` until the pipeline has chosen its entry (on this call)."""
        p = self._p
        out = p.convert_bytes(data)
        self.convert_bytes = p.convert_bytes
        return out

    @property
    def options(self) -> Options:
        """The :class:`~envglot.Options` this converter applies (``options=`` with the keywords given)."""
        return self._p.options

    @property
    def pipeline(self) -> Pipeline:
        """The :class:`Pipeline` this converter runs (the batch engine hands it records it has
        already checked and detected)."""
        return self._p

    @property
    def policy(self) -> Policy:
        """The loss policy (``unsupported=``) this converter applies."""
        return self._p.policy

    def conversion(self, data: bytes | str | dict[str, Any]) -> Conversion:
        """Convert one document and return the :class:`Conversion` with diagnostics."""
        return self._p.run(to_bytes(data), Report(self._p.policy))

    def __call__(self, data: Data) -> Data:
        p = self._p
        return from_bytes(p.convert_bytes(to_bytes(data)), data, p.dst)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"Converter(from_={self.from_!r}, to={self.to!r})"
