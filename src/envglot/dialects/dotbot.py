"""dotbot-mcp-response@1: ``schema_id``/``status``/``summary``/``data``/``errors[]``/``warnings[]``/``audit``."""

from __future__ import annotations

import re
from typing import Any, Literal

import msgspec
from msgspec import Raw, Struct

from .. import canonical as c
from ..checker import Checker, type_name
from ..context import Context, missing_problem, problem_message, read_problem, report_losses, whole_ms, write_code
from ..diagnostics import Kind
from ..dialect import Dialect, Probe, Shape
from ..errors import ParseError
from ..excerpt import quoted
from ..mappings import DialectMap, Mappings
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

__all__ = ["NAME", "SCHEMA_ID", "Action", "Audit", "Dotbot", "Envelope", "Intent", "Issue", "read", "write"]

NAME = "dotbot"
SHAPE = Shape(payload="object", max_problems=0)
"""``data`` is a hashtable (others are wrapped as ``{"value": ...}``); ``errors`` is an array."""
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


_DEC = WireDecoder(Envelope, NAME, SHAPE.residue)
_ENC = msgspec.json.Encoder()
_NON_SLUG = re.compile(r"[^a-z0-9]+")
_SEMVER = re.compile(r"\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]*)?")


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
        problems = (missing_problem(env.summary, ctx, dmap),)
    elif env.ok and problems:
        ctx.report.add(
            Kind.STATUS_MISMATCH, ctx.path("ok"), "a success carrying errors becomes status 'error' in dotbot", NAME
        )
    errors = [
        Issue(
            code=write_code(p, dmap, ctx, i),
            message=problem_message(p, env.summary, ctx, dmap, i),
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


# --- contract ------------------------------------------------------------------------


def _dotbot_issue(c: Checker, issue: dict[str, Any], path: str) -> None:
    c.field(issue, "code", path, "string")
    c.field(issue, "message", path, "string")
    c.optional(issue, "path", path, "string")
    c.optional(issue, "details", path, "object")


def contract(d: dict[str, Any], c: Checker, m: Mappings) -> None:
    """Every way ``d`` breaks the contract, reported to ``c``."""
    c.const(d, "schema_id", "$", SCHEMA_ID)
    c.field(d, "tool", "$", "string")
    version = c.field(d, "version", "$", "string")
    if isinstance(version, str) and not _SEMVER.fullmatch(version):
        c.add("$.version", f"expected a semantic version (major.minor.patch), got {version!r}")
    status = c.enum(d, "status", "$", ("ok", "warning", "error"))
    c.field(d, "summary", "$", "string")
    c.field(d, "data", "$", "object")
    warnings = c.field(d, "warnings", "$", "array")
    if isinstance(warnings, list):
        for i, w in enumerate(warnings):
            if isinstance(w, dict):
                _dotbot_issue(c, w, f"$.warnings[{i}]")
            elif not isinstance(w, str):
                c.add(f"$.warnings[{i}]", f"expected a string or an object, got {type_name(w)}")
    errors = c.objects(d, "errors", "$", required=True)
    for p, e in errors:
        _dotbot_issue(c, e, p)
    if isinstance(status, str) and isinstance(warnings, list) and isinstance(d.get("errors"), list):
        computed = "error" if d["errors"] else "warning" if warnings else "ok"
        if computed != status:
            c.add("$.status", f"status {status!r} disagrees with errors/warnings (computed {computed!r})")
    audit = c.field(d, "audit", "$", "object")
    if isinstance(audit, dict):
        c.timestamp(audit, "timestamp", "$.audit", utc=True)
        c.non_negative(audit, "duration_ms", "$.audit", "integer")
        c.field(audit, "source", "$.audit", "string")
        for key in ("host", "correlation_id", "write_to"):
            c.optional(audit, key, "$.audit", "string")
    intent = c.optional(d, "intent", "$", "object")
    if isinstance(intent, dict):
        c.optional(intent, "recommended_next", "$.intent", "string")
        c.optional(intent, "reason", "$.intent", "string")
        c.optional(intent, "parameters", "$.intent", "object")
    for p, a in c.objects(d, "actions", "$", required=False):
        for key in ("id", "type", "label"):  # the standard defines an action by them
            c.field(a, key, p, "string")
        for key in ("reason", "tool"):
            c.optional(a, key, p, "string")
        c.optional(a, "parameters", p, "object")


class Dotbot(Dialect):
    """dotbot-mcp-response@1."""

    name = NAME
    description = "dotbot-mcp-response@1: schema_id/status/summary/data/errors[]/warnings[]/audit, intent and actions"
    shape = SHAPE
    native_indent = -1  # ConvertTo-Json -Compress
    wire = Envelope
    probes = (
        Probe(
            10,
            lambda f: "schema_id" if f.has("schema_id") else None,
            "a `schema_id` key (a wrong value is a broken dotbot envelope)",
        ),
    )
    """Only dotbot has the key: a wrong value is a broken dotbot envelope."""
    outcome_key = "status"
    failure_value = b'"error"'
    read = staticmethod(read)
    write = staticmethod(write)
    contract = staticmethod(contract)
