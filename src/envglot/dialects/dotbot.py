"""dotbot-mcp-response@1: ``schema_id``/``status``/``summary``/``data``/``errors[]``/``warnings[]``/``audit``."""

from __future__ import annotations

import re
from typing import Literal

import msgspec
from msgspec import Raw, Struct

from .. import canonical as c
from ..context import Context, missing_problem, problem_message, read_problem, report_losses, whole_ms, write_code
from ..diagnostics import Kind
from ..errors import ParseError
from ..excerpt import quoted
from ..mappings import DialectMap
from ._common import (
    ABSENT,
    WireDecoder,
    object_or_wrapped,
    object_payload,
    opt,
    raw_is_object,
    raw_or_absent,
    timestamp_for,
    unwrap_payload,
)

__all__ = ["DESCRIPTION", "NAME", "SCHEMA_ID", "Action", "Audit", "Envelope", "Intent", "Issue", "read", "write"]

NAME = "dotbot"
DESCRIPTION = "dotbot-mcp-response@1: status/summary/data/errors[]/warnings[]/audit/intent/actions"
NATIVE_INDENT = -1
"""``style="native"``: how the real emitter prints (ConvertTo-Json -Compress); negative = minified."""
SCHEMA_ID = "dotbot-mcp-response@1"


class _Wire(Struct, forbid_unknown_fields=True, omit_defaults=True):
    pass


class Issue(_Wire):
    """An entry of ``errors`` (or an object entry of ``warnings``)."""

    code: str
    message: str
    path: str | None = None
    details: Raw = ABSENT


class Audit(_Wire):
    timestamp: str
    duration_ms: int | float
    source: str
    host: str | None = None
    correlation_id: str | None = None
    write_to: str | None = None


class Intent(_Wire):
    recommended_next: str | None = None
    reason: str | None = None
    parameters: Raw = ABSENT


class Action(_Wire):
    id: str | None = None
    type: str | None = None
    label: str | None = None
    reason: str | None = None
    tool: str | None = None
    parameters: Raw = ABSENT


class Envelope(_Wire):
    """The dotbot envelope. Real tools put plain strings in ``warnings``; both forms are accepted."""

    schema_id: str
    tool: str
    version: str
    status: Literal["ok", "warning", "error"]
    summary: str
    data: Raw
    warnings: list[str | Issue]
    errors: list[Issue]
    audit: Audit
    intent: Intent | None = None
    actions: list[Action] | None = None


_DEC = WireDecoder(Envelope, NAME, "$._envglot")
_ENC = msgspec.json.Encoder()
_NON_SLUG = re.compile(r"[^a-z0-9]+")


def read(buf: bytes | memoryview | str, ctx: Context) -> c.Envelope:
    """Read a dotbot envelope into the canonical model."""
    w, extras, residue = _DEC.decode(buf)
    if w.schema_id != SCHEMA_ID:
        raise ParseError(
            f"schema_id must be {SCHEMA_ID!r}, got {quoted(w.schema_id)}", path="$.schema_id", dialect=NAME
        )
    if not raw_is_object(w.data):
        raise ParseError("data must be an object", path="$.data", dialect=NAME)
    dmap = ctx.mappings[NAME]
    computed = "error" if w.errors else "warning" if w.warnings else "ok"
    if computed != w.status:
        ctx.report.add(
            Kind.STATUS_MISMATCH,
            "$.status",
            f"status {quoted(w.status)} disagrees with errors/warnings (computed {computed!r}); status wins",
            NAME,
        )
    payload: Raw = w.data
    inner = unwrap_payload(payload)
    if inner is not None:
        payload = inner
        ctx.report.add(Kind.PAYLOAD_UNWRAPPED, "$.data", 'read {"value": ...} as the wrapped payload', NAME)
    problems = (
        tuple(
            read_problem(
                dmap, e.code, ctx, f"$.errors[{i}].code", message=e.message, path=e.path, details=opt(e.details)
            )
            for i, e in enumerate(w.errors)
        )
        if w.errors
        else ()
    )
    warnings = (
        tuple(
            c.Notice(message=x)
            if isinstance(x, str)
            else c.Notice(message=x.message, code=x.code, path=x.path, context=opt(x.details))
            for x in w.warnings
        )
        if w.warnings
        else ()
    )
    steps: list[c.NextStep] = []
    if w.intent is not None:
        it = w.intent
        steps.append(c.NextStep(kind="intent", tool=it.recommended_next, reason=it.reason, args=opt(it.parameters)))
    for a in w.actions or ():
        steps.append(
            c.NextStep(
                kind="action", tool=a.tool, args=opt(a.parameters), reason=a.reason, id=a.id, type=a.type, label=a.label
            )
        )
    au = w.audit
    return c.Envelope(
        ok=w.status != "error",
        payload=payload,
        summary=w.summary,
        problems=problems,
        warnings=warnings,
        tool=w.tool,
        tool_version=w.version,
        request_id=au.correlation_id,
        timestamp=au.timestamp,
        duration_ms=au.duration_ms,
        source=au.source,
        host=au.host,
        write_to=au.write_to,
        next_steps=tuple(steps),
        extras=extras,
        residue=residue,
    )


def _slug(tool: str | None) -> str:
    """``tool`` in lower kebab case (``solution.structure`` -> ``solution-structure``)."""
    return _NON_SLUG.sub("-", (tool or "").lower()).strip("-") or "action"


def _action(st: c.NextStep, i: int, before: list[Action], dmap: DialectMap, ctx: Context) -> Action:
    """The dotbot action of a next step; ``id``/``type``/``label`` it lacks are synthesized.

    The standard defines an action by all six fields. Rules (``[synthesize]`` in
    ``mappings/dotbot.toml``): ``type`` the constant (``"suggestion"``), ``label`` the
    template with ``{tool}``, ``id`` the template with ``{slug}`` (the tool in lower kebab
    case), suffixed ``-2``, ``-3``, ... when an earlier action already has that id.
    """
    tool = st.tool or ""
    aid, atype, label = st.id, st.type, st.label
    if aid is None:
        rule = str(dmap.synthesize["next_step.id"]).format(slug=_slug(st.tool), tool=tool)
        taken = {a.id for a in before}
        n = 1
        base = rule
        while rule in taken:
            n += 1
            rule = f"{base}-{n}"
        aid = str(ctx.synth_value(dmap, "next_step.id", "an action id", rule, i))
    if atype is None:
        atype = str(ctx.synth_value(dmap, "next_step.type", "an action type", None, i))
    if label is None:
        rule = str(dmap.synthesize["next_step.label"]).format(slug=_slug(st.tool), tool=tool)
        label = str(ctx.synth_value(dmap, "next_step.label", "an action label", rule, i))
    args = object_or_wrapped(st.args, ctx, "next_step.args", NAME, i)
    return Action(id=aid, type=atype, label=label, reason=st.reason, tool=st.tool, parameters=raw_or_absent(args))


def write(env: c.Envelope, ctx: Context) -> bytes:
    """Write the canonical envelope as dotbot (status computed, compact)."""
    dmap = ctx.mappings[NAME]
    report_losses(env, dmap, ctx)
    payload = object_payload(env.payload, env.ok, ctx, NAME)
    problems = env.problems
    if not env.ok and not problems:
        problems = (missing_problem(env, ctx, dmap),)
    elif env.ok and problems:
        ctx.report.add(
            Kind.STATUS_MISMATCH, ctx.path("ok"), "a success carrying errors becomes status 'error' in dotbot", NAME
        )
    errors = [
        Issue(
            code=write_code(p, dmap, ctx, i),
            message=problem_message(p, env, ctx, dmap, i),
            path=p.path,
            details=raw_or_absent(object_or_wrapped(p.details, ctx, "problem.details", NAME, i)),
        )
        for i, p in enumerate(problems)
    ]
    warnings: list[str | Issue] = [
        w.message
        if w.code is None and w.path is None and w.context is None
        else Issue(
            code=w.code or "WARNING",
            message=w.message,
            path=w.path,
            details=raw_or_absent(object_or_wrapped(w.context, ctx, "warning.context", NAME, j)),
        )
        for j, w in enumerate(env.warnings)
    ]
    intent = None
    actions: list[Action] = []
    for st in env.next_steps:
        if st.kind == "intent" and intent is None:
            args = object_or_wrapped(st.args, ctx, "next_step.args", NAME)
            intent = Intent(recommended_next=st.tool, reason=st.reason, parameters=raw_or_absent(args))
        else:
            actions.append(_action(st, len(actions), actions, dmap, ctx))
    summary = env.summary
    if summary is None:
        summary = (problems[0].message or "Failed.") if problems else "Completed."
        ctx.synthesized(dmap, "summary", f"dotbot requires a summary; wrote {quoted(summary)}")
    stamp = timestamp_for(env.timestamp, ctx, dmap, "audit.timestamp", utc=True)
    audit = Audit(
        timestamp=stamp if stamp is not None else ctx.synth_value(dmap, "timestamp", "audit.timestamp"),  # type: ignore[arg-type]
        duration_ms=whole_ms(env.duration_ms, dmap, ctx, "audit.duration_ms"),
        source=env.source if env.source is not None else ctx.synth_value(dmap, "source", "audit.source"),  # type: ignore[arg-type]
        host=env.host,
        correlation_id=env.request_id,
        write_to=env.write_to,
    )
    out = Envelope(
        schema_id=SCHEMA_ID,
        tool=env.tool if env.tool is not None else ctx.synth_value(dmap, "tool", "a tool name"),  # type: ignore[arg-type]
        version=env.tool_version
        if env.tool_version is not None
        else ctx.synth_value(dmap, "tool_version", "a tool version"),  # type: ignore[arg-type]
        status="error" if errors else "warning" if warnings else "ok",
        summary=summary,
        data=payload,
        warnings=warnings,
        errors=errors,
        audit=audit,
        intent=intent,
        actions=actions or None,
    )
    return _ENC.encode(out)
