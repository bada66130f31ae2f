"""dotbot-mcp-response@1: ``schema_id``/``status``/``summary``/``data``/``errors[]``/``warnings[]``/``audit``.

Over 500 lines: one dialect's whole wire format (reading, writing, their fused failure forms, contract).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Annotated, Any, Literal, NamedTuple, cast, get_args

import msgspec
from msgspec import Raw, Struct

from .. import canonical as c
from ..checker import Checker, Rule
from ..codes import (
    Choice,
    FailurePlan,
    WireFailure,
    carried_meaning,
    carries_meaning,
    details_object,
    meaning_to_carry,
    missing_problem,
    read_problem,
    with_carried,
    write_plan,
    written_message,
)
from ..context import Context, whole_ms
from ..diagnostics import Kind
from ..dialect import Dialect, name_of, shape_of
from ..errors import ParseError
from ..excerpt import quoted
from ..fields import Build, Case, Check, Const, Failure, Let, Reading, Rounded, Texts, When, Writing, common
from ..keyed import details_members
from ..mappings import DialectMap, Mappings
from ..wire import (
    ABSENT,
    OBJECT_AT,
    WRAPPED_AT,
    WireDecoder,
    error_details,
    object_or_wrapped,
    object_payload,
    opt,
    raw_is_object,
    raw_or_absent,
    slug,
    timestamp_for,
    unwrap_payload,
)

__all__ = [
    "NAME",
    "READING",
    "SCHEMA_ID",
    "WRITING",
    "Action",
    "Audit",
    "Envelope",
    "Intent",
    "Issue",
]

NAME = name_of(__name__)
SHAPE = shape_of(NAME)
SCHEMA_ID = "dotbot-mcp-response@1"
_SEMVER = r"\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]*)?"
_Status = Literal["ok", "warning", "error"]


class _Wire(Struct, forbid_unknown_fields=True, omit_defaults=True):
    pass


class Issue(_Wire):
    """An entry of ``errors`` (or an object entry of ``warnings``)."""

    code: str
    message: str
    path: str | None = None
    details: Annotated[Raw, Rule(kind="object", nullable=False)] = ABSENT


class Audit(_Wire):
    timestamp: Annotated[str, Rule(timestamp="utc")]
    duration_ms: Annotated[int | float, Rule(kind="integer", ge=0)]
    source: str
    host: str | None = None
    correlation_id: str | None = None
    write_to: str | None = None


class Intent(_Wire):
    recommended_next: str | None = None
    reason: str | None = None
    parameters: Annotated[Raw, Rule(kind="object")] = ABSENT


class Action(_Wire):
    """A suggested action; the standard defines one by ``id``, ``type`` and ``label`` (read
    even without them)."""

    id: Annotated[str | None, Rule(required=True)] = None
    type: Annotated[str | None, Rule(required=True)] = None
    label: Annotated[str | None, Rule(required=True)] = None
    reason: str | None = None
    tool: str | None = None
    parameters: Annotated[Raw, Rule(kind="object")] = ABSENT


class Envelope(_Wire):
    """The dotbot envelope. Real tools put plain strings in ``warnings``; both forms are accepted."""

    schema_id: Annotated[str, Rule(const=SCHEMA_ID)]
    tool: str
    version: Annotated[str, Rule(pattern=_SEMVER, says="a semantic version (major.minor.patch)")]
    status: _Status
    summary: str
    data: Annotated[Raw, Rule(kind="object")]
    warnings: list[str | Issue]
    errors: list[Issue]
    audit: Audit
    intent: Intent | None = None
    actions: list[Action] | None = None


_DEC = WireDecoder(Envelope, NAME, SHAPE.residue, keyed={"errors": "details"})
"""From the members, ``errors`` is read with each error's ``details`` as members in one pass:
the carried-meaning test then looks them up (:func:`~envglot.keyed.details_members`)."""
_ENC = msgspec.json.Encoder()


class _Errors(msgspec.Struct):
    errors: list[Raw] | None = None


@cache
def _errors_decoder() -> msgspec.json.Decoder[_Errors]:
    """The decoder of a failure's error list, built on first use (not at import)."""
    return msgspec.json.Decoder(_Errors)


# --- reading ---------------------------------------------------------------------------


@common(When("w.schema_id", "==", SCHEMA_ID))
def _schema_id(w: Envelope) -> None:
    raise ParseError(f"schema_id must be {SCHEMA_ID!r}, got {quoted(w.schema_id)}", path="$.schema_id", dialect=NAME)


@common(When("w.data", "matches", OBJECT_AT), holds=True)
def _data_is_object(w: Envelope) -> None:
    if not raw_is_object(w.data):
        raise ParseError("data must be an object", path="$.data", dialect=NAME)


@common(
    When("w.status", "==", "ok"),
    When("w.errors", "falsy"),
    When("w.warnings", "falsy"),
    also=[Case((When("w.status", "==", "error"), When("w.errors", "truthy")))],  # a failure's
)
def _status_agrees(w: Envelope, ctx: Context) -> None:
    """A ``status`` that disagrees with what ``errors``/``warnings`` compute is reported; where
    the two disagree on the outcome, the failure wins (see :func:`_ok`), elsewhere ``status``.
    Non-empty ``errors`` compute ``"error"`` whatever the warnings: a failure's common case."""
    computed = "error" if w.errors else "warning" if w.warnings else "ok"
    if computed != w.status:
        wins = "the failure wins" if "error" in (computed, w.status) else "status wins"
        ctx.report.add(
            Kind.STATUS_MISMATCH,
            "$.status",
            NAME,
            conflict=f"status {quoted(w.status)} disagrees with errors/warnings (computed {computed!r})",
            resolved=wins,
        )


@common(
    When("w.status", "==", "ok"),
    When("w.errors", "falsy"),
    value=Const(True),
    also=[Case((When("w.status", "==", "error"),), Const(False))],
)
def _ok(w: Envelope) -> bool:
    """A success only when ``status`` says so and ``errors`` is empty: any failure marker makes a failure."""
    return w.status != "error" and not w.errors


@common(When("w.data", "no match", WRAPPED_AT), value="w.data")
def _payload(w: Envelope, ctx: Context) -> Raw:
    """``data``, or the value a writer wrapped as ``{"value": ...}`` (reported)."""
    inner = unwrap_payload(w.data)
    if inner is None:
        return w.data
    ctx.report.add(Kind.PAYLOAD_UNWRAPPED, "$.data", NAME)
    return inner


@common(When("w.errors", "falsy"), value=Const(()))
def _problems(w: Envelope, dmap: DialectMap, ctx: Context) -> tuple[c.Problem, ...]:
    return tuple(
        [
            carried_meaning(
                read_problem(
                    dmap, e.code, ctx, f"$.errors[{i}].code", message=e.message, path=e.path, details=opt(e.details)
                ),
                dmap,
                ctx,
                details_members(w.errors, i),
            )
            for i, e in enumerate(w.errors)
        ]
    )


def _wire_failure(w: Envelope, dmap: DialectMap) -> WireFailure | None:
    """The fused form of :func:`_problems` (``Reading.failure``): the one error of a failure
    whose ``details`` carry no meaning; ``None`` otherwise. The details' members are read once
    (by the reader's parse, else :func:`~envglot.codes.details_object`): the test looks them
    up, and a writer that adds to the details takes them."""
    if len(w.errors) != 1:
        return None
    e = w.errors[0]
    details = None if e.details is ABSENT else e.details
    members = details_members(w.errors, 0)
    if members is None:
        read = details_object(details, dmap)  # (the carried-meaning test made with its decode)
        if read is None:  # absent, no object, or no meaning carried: nothing to test
            return WireFailure(e.code, None, e.message, e.path, details)
        if read is False:
            return None
        members = read
    elif carries_meaning(details, dmap, members):
        return None
    return WireFailure(e.code, None, e.message, e.path, details, details_members=members)


@common(When("w.warnings", "falsy"), value=Const(()))
def _warnings(w: Envelope) -> tuple[c.Notice, ...]:
    """Plain strings and ``Issue`` objects alike."""
    return tuple(
        [
            c.Notice(message=x)
            if isinstance(x, str)
            else c.Notice(message=x.message, code=x.code, path=x.path, context=opt(x.details))
            for x in w.warnings
        ]
    )


def _texts(w: Envelope) -> list[str] | None:
    """The fused form of :func:`_warnings` (``Reading.texts``): warnings that are all plain strings."""
    ws = w.warnings
    return cast("list[str]", ws) if ws and all(type(x) is str for x in ws) else None


def _next_steps(w: Envelope) -> tuple[c.NextStep, ...]:
    """``intent`` first, then every action."""
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
    return tuple(steps)


READING = Reading(
    _DEC,
    Check(_schema_id),
    Check(_data_is_object),
    Check(_status_agrees),
    Let("payload", _payload),
    Let("problems", _problems),
    Let("ok", _ok, pure=True),
    Let("warnings", _warnings, pure=True),
    Let("next_steps", _next_steps, pure=True),
    derive=True,  # summary, tool, tool_version and the audit members: plain moves of [fields]
    failure=_wire_failure,
    texts=_texts,
)


# --- writing ---------------------------------------------------------------------------


def _action(st: c.NextStep, i: int, taken: set[str], dmap: DialectMap, ctx: Context) -> Action:
    """The dotbot action of a next step; ``id``/``type``/``label`` it lacks are synthesized.

    The standard defines an action by all six fields. Rules (``[synthesize]`` in
    ``mappings/dotbot.toml``): ``type`` the constant (``"suggestion"``), ``label`` the
    template with ``{tool}``, ``id`` the template with ``{slug}`` (the tool in lower kebab
    case), suffixed ``-2``, ``-3``, ... while ``taken`` (the ids of the document's other
    actions) has it; the id chosen is added to ``taken``.
    """
    tool = st.tool or ""
    aid, atype, label = st.id, st.type, st.label
    if aid is None:
        rule = base = str(dmap.synthesize["next_step.id"]).format(slug=slug(st.tool, "action"), tool=tool)
        n = 1
        while rule in taken:
            n += 1
            rule = f"{base}-{n}"
        aid = str(ctx.synth_value(dmap, "next_step.id", "an action id", rule, i))
        taken.add(aid)
    if atype is None:
        atype = str(ctx.synth_value(dmap, "next_step.type", "an action type", None, i))
    if label is None:
        rule = str(dmap.synthesize["next_step.label"]).format(slug=slug(st.tool, "action"), tool=tool)
        label = str(ctx.synth_value(dmap, "next_step.label", "an action label", rule, i))
    args = object_or_wrapped(st.args, ctx, "next_step.args", NAME, i)
    return Action(id=aid, type=atype, label=label, reason=st.reason, tool=st.tool, parameters=raw_or_absent(args))


@common(When("payload", "is not", None), When("payload", "matches", OBJECT_AT), value="payload")
def _data(payload: Raw | None, ok: bool, ctx: Context) -> Raw:
    return object_payload(payload, ok, ctx, NAME)


@common(When("ok", "truthy"), When("problems", "falsy"), value="problems")
def _failures(
    ok: bool, problems: tuple[c.Problem, ...], summary: str | None, ctx: Context, dmap: DialectMap
) -> tuple[c.Problem, ...]:
    """The problems written as ``errors``: a failure without one gets one (reported); a
    success with some becomes status ``error`` (reported)."""
    if not ok and not problems:
        return (missing_problem(summary, ctx, dmap),)
    if ok and problems:
        ctx.report.add(
            Kind.STATUS_MISMATCH,
            ctx.path("ok"),
            NAME,
            conflict="a success carries errors",
            resolved="it becomes status 'error' in dotbot",
        )
    return problems


@common(When("failures", "falsy"), value=Const(()))
def _errors(failures: tuple[c.Problem, ...], summary: str | None, ctx: Context, dmap: DialectMap) -> Sequence[Issue]:
    issues: list[Issue] = []
    for i, p in enumerate(failures):
        chosen = write_plan(p, dmap, ctx, i)
        add = meaning_to_carry(p, chosen, dmap)
        issues.append(_issue(chosen, add, p.message, p.path, p.details, None, summary, i, ctx, dmap))
    return issues


def _issue(
    chosen: Choice,
    add: dict[str, Raw],
    message: str | None,
    path: str | None,
    details: Raw | None,
    members: dict[str, Raw] | None,
    summary: str | None,
    i: int,
    ctx: Context,
    dmap: DialectMap,
) -> Issue:
    """Error ``i`` of the code ``chosen`` (its own fields given apart: a failure written from its
    plan has no problem of its own), its details carrying ``add``
    (:func:`~envglot.codes.meaning_to_carry`; ``members``: the details' top level where a
    reader decoded it, as :func:`~envglot.codes.with_carried` takes them)."""
    shown = error_details(details, ctx, NAME, i)
    carried = with_carried(shown, add, members if shown is details else None) if add else shown
    return Issue(
        code=chosen.code,
        message=written_message(message, summary, ctx, dmap, i),
        path=path,
        details=raw_or_absent(carried),
    )


def _planned_errors(
    plan: FailurePlan, failure: WireFailure, summary: str | None, ctx: Context, dmap: DialectMap
) -> list[Issue]:
    """``errors`` of a failure written from its code's plan (:class:`~envglot.fields.Failure`):
    what :func:`_failures` and :func:`_errors` write, without a problem of its own (what the code
    carries in the details computed once, :attr:`~envglot.codes.FailurePlan.carried`)."""
    f = failure
    return [_issue(plan.choice, plan.carried, f.message, f.path, f.details, f.details_members, summary, 0, ctx, dmap)]


def _plain_notices(texts: list[str]) -> list[str | Issue]:
    """``warnings`` of messages alone (:class:`~envglot.fields.Texts`): what :func:`_notices`
    writes for them, each a plain string."""
    return list(texts)


@common(When("warnings", "falsy"), value=Const(()))
def _notices(warnings: tuple[c.Notice, ...], ctx: Context, dmap: DialectMap) -> Sequence[str | Issue]:
    """A bare message as a plain string, anything more as an ``Issue``, whose required ``code``
    is synthesized (reported) when the warning has none."""
    return [
        w.message
        if w.code is None and w.path is None and w.context is None
        else Issue(
            code=w.code
            if w.code is not None
            else str(ctx.synth_value(dmap, "warning.code", "a code for a warning with a path or details", None, j)),
            message=w.message,
            path=w.path,
            details=raw_or_absent(object_or_wrapped(w.context, ctx, "warning.context", NAME, j)),
        )
        for j, w in enumerate(warnings)
    ]


class _Next(NamedTuple):
    intent: Intent | None
    actions: list[Action] | None


_NO_NEXT = _Next(None, None)
"""``_next`` of a document without next steps."""


@common(When("next_steps", "falsy"), value=Const(_NO_NEXT))
def _next(next_steps: tuple[c.NextStep, ...], ctx: Context, dmap: DialectMap) -> _Next:
    """The first intent as ``intent``, every other step as an action (in one pass: what each
    reports stays in the order of the steps).

    dotbot carries one intent: a further one is written as an action (reported as
    ``value_coerced``). A synthesized action id differs from every id of the document's
    actions, those of later actions included.
    """
    if not next_steps:
        return _NO_NEXT
    first = next((i for i, st in enumerate(next_steps) if st.kind == "intent"), None)
    taken = {st.id for i, st in enumerate(next_steps) if i != first and st.id is not None}
    intent = None
    actions: list[Action] = []
    for i, st in enumerate(next_steps):
        if i == first:
            intent = _intent(next_steps, i, ctx)
            continue
        if st.kind == "intent" and ctx.report.collecting:
            ctx.report.add(
                Kind.VALUE_COERCED,
                ctx.step_path(next_steps, i),
                NAME,
                value=f"next step #{i + 1} (intent)",
                change="written as an action",
                because="dotbot carries one intent",
            )
        actions.append(_action(st, len(actions), taken, dmap, ctx))
    return _Next(intent, actions or None)


def _intent(next_steps: tuple[c.NextStep, ...], i: int, ctx: Context) -> Intent:
    """``intent``: the step's tool, reason and args; an ``id``, ``type`` or ``label`` has no
    place in it (reported)."""
    st = next_steps[i]
    if ctx.report.collecting:
        for attr in ("id", "type", "label"):
            if getattr(st, attr) is not None:
                ctx.report.add(
                    Kind.FIELD_DROPPED,
                    f"{ctx.step_path(next_steps, i)}.{attr}",
                    NAME,
                    field=f"the {attr} of next step #{i + 1} (intent)",
                    because=f"dotbot's intent has no {attr}",
                )
    args = object_or_wrapped(st.args, ctx, "next_step.args", NAME)
    return Intent(recommended_next=st.tool, reason=st.reason, parameters=raw_or_absent(args))


@common(
    When("summary", "is", None),
    When("errors", "falsy"),
    When("ctx.report.collecting", "falsy"),
    value=Const("Completed."),
)
def _summary(summary: str | None, errors: Sequence[Issue], ctx: Context, dmap: DialectMap) -> str:
    """``summary`` is required: synthesized from the first error, else ``Completed.`` (reported)."""
    if summary is not None:
        return summary
    summary = (errors[0].message or "Failed.") if errors else "Completed."
    if ctx.report.collecting:
        ctx.synthesized(dmap, "summary", need="dotbot requires a summary", value=quoted(summary))
    return summary


def _audit_stamp(timestamp: str | None, ctx: Context, dmap: DialectMap) -> str:
    """``audit.timestamp`` (required, UTC): the source's, converted to UTC, else synthesized."""
    stamp = timestamp_for(timestamp, ctx, dmap, "audit.timestamp", utc=True)
    return stamp if stamp is not None else ctx.synth_value(dmap, "timestamp", "audit.timestamp")  # type: ignore[return-value]


@common(
    When("duration_ms", "type is", int),
    When("duration_ms", ">=", 0),
    value="duration_ms",
    also=[  # a float's, rounded where nothing is reported (whole_ms's)
        Case(
            (
                When("duration_ms", "type is", float),
                When("duration_ms", ">=", 0),
                When("ctx.report.collecting", "falsy"),
            ),
            Rounded("duration_ms"),
        )
    ],
)
def _audit_ms(duration_ms: int | float | None, ctx: Context, dmap: DialectMap) -> int:
    """``audit.duration_ms`` (required): whole milliseconds, else synthesized."""
    return whole_ms(duration_ms, dmap, ctx, "audit.duration_ms")


def _audit_source(source: str | None, ctx: Context, dmap: DialectMap) -> str:
    """``audit.source`` (required): the source's, else synthesized."""
    return source if source is not None else ctx.synth_value(dmap, "source", "audit.source")  # type: ignore[return-value]


@common(When("tool", "is not", None), value="tool")
def _tool(tool: str | None, ctx: Context, dmap: DialectMap) -> str:
    return tool if tool is not None else ctx.synth_value(dmap, "tool", "a tool name")  # type: ignore[return-value]


def _version(tool_version: str | None, ctx: Context, dmap: DialectMap) -> str:
    return tool_version if tool_version is not None else ctx.synth_value(dmap, "tool_version", "a tool version")  # type: ignore[return-value]


@common(
    When("errors", "falsy"),
    When("notices", "falsy"),
    value=Const("ok"),
    also=[Case((When("errors", "truthy"),), Const("error"))],  # a failure's
)
def _status(errors: Sequence[Any], notices: Sequence[Any]) -> str:
    """Computed from ``errors`` and ``warnings`` (the writer and the contract share this rule)."""
    return "error" if errors else "warning" if notices else "ok"


WRITING = Writing(
    Let("data", _data),
    Let("failures", _failures),
    Let("errors", _errors),
    Let("notices", _notices),
    Let("next", _next),
    Let("summary_text", _summary),
    Let("audit_stamp", _audit_stamp),  # the synthesized parts are steps of their own: constant
    Let("audit_ms", _audit_ms),  # for a source without them, a fused path runs them once
    Let("audit_source", _audit_source),
    Build.of(
        "audit",
        Audit,
        timestamp="audit_stamp",
        duration_ms="audit_ms",
        source="audit_source",
    ),  # host, correlation_id, write_to: plain copies of [fields]
    Let("tool_name", _tool),
    Let("version", _version),
    Let("status", _status, pure=True),
    Build.of(
        "out",
        Envelope,
        schema_id=Const(SCHEMA_ID),
        tool="tool_name",
        version="version",
        status="status",
        summary="summary_text",
        data="data",
        warnings="notices",
        errors="errors",
        audit="audit",
        intent="next.intent",
        actions="next.actions",
    ),
    derive=True,
    failure=Failure(_planned_errors, replaces=("failures", "errors"), gives=("errors",)),
    texts=Texts(_plain_notices, replaces=("notices",), gives=("notices",)),
)


# --- contract (the wire Structs and their Rules, then these) ------------------------------


def invariants(d: dict[str, Any], c: Checker, m: Mappings) -> None:
    """The contract's rule across fields: ``status`` is computed from ``errors`` and ``warnings``."""
    status, errors, warnings = d.get("status"), d.get("errors"), d.get("warnings")
    if status in get_args(_Status) and isinstance(errors, list) and isinstance(warnings, list):
        computed = _status(errors, warnings)
        if computed != status:
            c.add("$.status", f"status {status!r} disagrees with errors/warnings (computed {computed!r})")


def failed(self: Dialect, doc: bytes) -> bool:
    """``status: "error"``, or a non-empty ``errors[]`` beside another status (the failure wins)."""
    if Dialect.failed(self, doc):
        return True
    try:
        errors = _errors_decoder().decode(doc).errors
    except msgspec.MsgspecError:  # the outcome flag was readable: a bad errors member says nothing more
        return False
    return bool(errors)


WIRE = Envelope
