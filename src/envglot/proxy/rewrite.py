"""Rewriting what crosses the proxy: tool listings and tool results, as MCP wire dicts.

Independent of the ``mcp`` package (the server turns the dicts into SDK objects), so it
is tested on its own. Every conversion goes through envglot's public API: the upstream
result is converted with :func:`envglot.answer` (source detected per result; a refused
envelope answered as a failure); a result that carries no envelope, and every protocol
failure, becomes a canonical
:class:`~envglot.canonical.Envelope` written with :func:`envglot.write`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec
from msgspec import Raw

from ..api import answer, refusal, write
from ..canonical import Envelope
from ..diagnostics import Diagnostic, Kind, Report
from ..errors import EnvglotError, NoEnvelopeError, ParseError
from ..excerpt import MESSAGE_LIMIT, excerpt
from ..mappings import Mappings
from ..mcp import is_error, media_blocks, output_schema, synthesize
from ..options import UNSET, Options, resolve
from ..pipeline import as_mappings
from ..policy import Level
from ..transport import wrap_bytes
from .protocol import ProtocolRule, ProtocolTable, protocol_table

__all__ = ["META_KEY", "META_PREFIX", "Rewriter", "Rewritten"]

META_PREFIX = "dev.envglot/"
"""``_meta`` keys the proxy owns: an upstream's own are removed from every result."""
META_KEY = META_PREFIX + "diagnostics"
"""The ``_meta`` key ``--annotate`` puts the diagnostics under."""
_ANY = msgspec.json.Decoder()
_ENC = msgspec.json.Encoder()
_log = logging.getLogger("envglot.proxy")


class Rewritten(msgspec.Struct, frozen=True):
    """One rewritten tool result and what the log line says about it."""

    result: dict[str, Any]
    """The CallToolResult wire dict to answer with."""
    source: str
    """The upstream envelope's dialect, ``none`` (no envelope), ``refused`` (the core refused it:
    answered as a failure) or ``protocol`` (a protocol failure)."""
    is_error: bool
    diagnostics: list[Diagnostic]

    def describe(self, target: str, ms: float) -> str:
        """What the log line of its call says: source, target, isError, time taken, diagnostics
        (their list cut to a message's length: a result may carry any number of them)."""
        diags = excerpt("; ".join(f"{d.kind.value} {d.path}: {d.message}" for d in self.diagnostics), MESSAGE_LIMIT)
        return (
            f"source={self.source} target={target} isError={str(self.is_error).lower()} {ms:.1f}ms "
            f"diagnostics={len(self.diagnostics)}" + (f" [{diags}]" if diags else "")
        )


class Rewriter:
    """Rewrites tool listings and results into one target dialect; built once per proxy.

    ``options`` (or the ``mappings`` keyword, which overrides that field) are the
    :class:`~envglot.Options` every result is converted with, except that the proxy never
    refuses a result (``unsupported`` is always ``ignore``: the diagnostics go to its log
    line and, with ``annotate``, to ``_meta``) and answers are compact; the per-call
    ``tool``, ``timestamp`` and ``duration_ms`` are offered as context under the options' own.
    """

    def __init__(
        self,
        target: str,
        *,
        options: Options | None = None,
        mappings: Mappings | None = UNSET,
        annotate: bool = False,
        timing: bool = True,
        table: ProtocolTable | None = None,
    ) -> None:
        o = resolve(options, mappings=mappings)
        self.mappings: Mappings = as_mappings(o.mappings)
        unit = self.mappings.registry.get(target)
        self.target = unit.name
        if not unit.shape.writable:
            writable = ", ".join(self.mappings.registry.writable_names())
            raise EnvglotError(f"{self.target} is a read-only source dialect; write one of {writable}")
        self.options = o.replace(unsupported=Level.IGNORE, style="compact", mappings=self.mappings)
        self.annotate = annotate
        self.timing = timing
        self.table = table if table is not None else protocol_table()
        self.schema = output_schema(self.target, mappings=self.mappings)

    # ---- tools/list -------------------------------------------------------------------

    def tool(self, tool: dict[str, Any], public_name: str) -> dict[str, Any]:
        """A tool's wire dict as the proxy publishes it: renamed, ``outputSchema`` the target's
        envelope with the tool's own ``outputSchema`` at its payload member
        (:func:`envglot.mcp.output_schema`); the plain envelope schema when the tool has
        none or its schema cannot be made self-contained (logged)."""
        own = tool.get("outputSchema")
        schema = self.schema
        if isinstance(own, dict):
            try:
                schema = output_schema(self.target, own, mappings=self.mappings)
            except EnvglotError as exc:
                _log.warning("tool %s: its outputSchema is published as the plain envelope's: %s", public_name, exc)
        return {**tool, "name": public_name, "outputSchema": schema}

    # ---- tools/call -------------------------------------------------------------------

    def _context(self, tool: str, started: float, elapsed: float) -> Options:
        """The options of one call: the per-call context values under the options' own."""
        own = self.options.context or {}
        if not self.timing:
            return self.options.replace(context={"tool": tool, **own})
        stamp = datetime.fromtimestamp(started, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        timing = {"tool": tool, "timestamp": stamp, "duration_ms": round(elapsed * 1000)}
        return self.options.replace(context={**timing, **own})

    def result(
        self,
        wire: dict[str, Any],
        tool: str,
        started: float | None = None,
        elapsed: float = 0.0,
        *,
        notes: Sequence[Diagnostic] = (),
    ) -> Rewritten:
        """Rewrite an upstream CallToolResult wire dict (``tool`` is its upstream name).

        The outcome is the core's (:func:`envglot.answer`): the envelope it carries (any
        dialect, detected) is converted to the target, ``isError`` or a failure marker can only
        make a failure, and a result the core refuses is answered as a failure (source
        ``refused``); a result with no envelope at all (plain text) is wrapped as the target's
        success or failure as its ``isError`` says. ``notes`` (what the transport changed, e.g.
        replaced bytes) come first among the diagnostics.
        """
        ctx = self._context(tool, time.time() if started is None else started, elapsed)
        try:
            conv = answer(wire, to=self.target, options=ctx)
        except NoEnvelopeError as exc:
            return self._wrap_plain(_ENC.encode(wire), wire, exc, ctx, notes)
        try:
            return self._answer(
                conv.output,
                is_error(conv.output, self.target, mappings=self.mappings),
                conv.source,
                [*notes, *conv.diagnostics],
                wire,
            )
        except ParseError as exc:  # an envelope no MCP result dict can carry: refused like any other
            refused = refusal(exc, to=self.target, options=ctx)
            return self._answer(refused.output, True, refused.source, [*notes, *refused.diagnostics], wire)

    def _wrap_plain(
        self, buf: bytes, wire: dict[str, Any], why: NoEnvelopeError, ctx: Options, notes: Sequence[Diagnostic]
    ) -> Rewritten:
        """The target envelope of a result that carries none; ``isError`` decides the outcome.

        Synthesized as :func:`envglot.mcp.unwrap_envelope` documents (a success carries the
        structured content or ``{"text": ...}``; a failure, the text as its message).
        """
        rep = Report(Level.IGNORE)
        env = synthesize(buf, self.mappings.unknown_category, rep)
        rep.add(
            Kind.SYNTHESIZED, "$", need=f"no envelope to carry: {why.message}", value="one from the result's content"
        )
        doc = write(env, self.target, options=ctx, report=rep)
        return self._answer(doc, not env.ok, "none", [*notes, *rep.diagnostics], wire)

    def failure(
        self,
        rule: ProtocolRule,
        message: str,
        tool: str,
        *,
        code: int | None = None,
        started: float | None = None,
        elapsed: float = 0.0,
    ) -> Rewritten:
        """The target's failure envelope for a protocol failure (a JSON-RPC error, a timeout, a dead upstream)."""
        ctx = self._context(tool, time.time() if started is None else started, elapsed)
        details = {"jsonrpc_code": code} if code is not None else None
        problem = rule.problem(
            message, upstream="mcp", details=Raw(_ENC.encode(details)) if details is not None else None
        )
        rep = Report(Level.IGNORE)
        rep.add(Kind.SYNTHESIZED, "$", need=f"{rule.name}: the upstream gave no result", value="a failure envelope")
        env = Envelope(ok=False, problems=(problem,))
        doc = write(env, self.target, options=ctx, report=rep)
        return self._answer(doc, True, "protocol", rep.diagnostics, None)

    def _answer(
        self, doc: bytes, is_error: bool, source: str, diags: list[Diagnostic], wire: dict[str, Any] | None
    ) -> Rewritten:
        try:
            result: dict[str, Any] = _ANY.decode(wrap_bytes(doc, is_error))
        except msgspec.ValidationError as exc:  # a number Python cannot hold (1e400), passed through exactly
            raise ParseError(f"the envelope cannot be carried in an MCP result: {exc}", path="$") from None
        if wire is not None:  # image, audio, resource blocks travel on after the envelope's text block
            result["content"].extend(media_blocks(wire))
        meta = _foreign_meta(wire.get("_meta") if wire is not None else None)
        if self.annotate:
            meta = {**(meta or {}), META_KEY: [_wire_diagnostic(d) for d in diags]}
        if meta:
            result["_meta"] = meta
        return Rewritten(result=result, source=source, is_error=is_error, diagnostics=diags)


def _foreign_meta(meta: Any) -> dict[str, Any] | None:
    """An upstream's ``_meta`` without keys under ``dev.envglot/`` (only the proxy writes those)."""
    if not isinstance(meta, dict):
        return None
    return {k: v for k, v in meta.items() if not k.startswith(META_PREFIX)}


def _wire_diagnostic(d: Diagnostic) -> dict[str, Any]:
    """A diagnostic as ``_meta`` carries it: kind, path, message, dialect (the proxy never preserves)."""
    return {"kind": d.kind.value, "path": d.path, "message": d.message, "dialect": d.dialect}
