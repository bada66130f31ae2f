"""response-v2 (foundry-mcp): ``{success, data, error, meta{version: "response-v2", ...}}``.

Over 500 lines: one dialect's whole wire format, and response-v2's is the richest (telemetry, pagination, limits).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from .. import canonical as c
from ..checker import Checker, Rule, join_path, type_name
from ..codes import (
    Choice,
    FailurePlan,
    WireFailure,
    carried_meaning,
    carries_meaning,
    meaning_to_carry,
    missing_problem,
    problem_of,
    read_planned,
    stated_word,
    with_carried,
    worded_problem,
    write_plan,
    written_message,
)
from ..context import Context, non_negative_ms
from ..diagnostics import Kind
from ..dialect import name_of, shape_of
from ..errors import ParseError
from ..excerpt import quoted
from ..fields import Build, Case, Check, Const, Failure, Formatted, Let, Move, Reading, Texts, When, Writing, common
from ..keyed import CONTROL_CHAR, encoded_length
from ..mappings import DialectMap, Mappings
from ..wire import (
    ABSENT,
    OBJECT_AT,
    RAW_EMPTY_OBJECT,
    RAW_NULL,
    WRAPPED_AT,
    WireDecoder,
    count_for,
    error_details,
    object_or_wrapped,
    object_payload,
    opt,
    raw_is_object,
    raw_or_absent,
    unwrap_payload,
)

__all__ = ["NAME", "READING", "WRITING", "Envelope", "Meta", "Pagination", "WarningDetail"]

NAME = name_of(__name__)
SHAPE = shape_of(NAME)
VERSION = "response-v2"
REQUEST_ID = re.compile(r"[a-zA-Z0-9_-]+")
"""What the response-v2 contract allows in ``meta.request_id`` (writer and validator share it)."""
_SEVERITY = ("info", "warning", "error")
_FIDELITY = ("full", "partial", "summary", "reference_only")


class _Wire(Struct, forbid_unknown_fields=True, omit_defaults=True):
    pass


class WarningDetail(_Wire, kw_only=True):
    """An entry of ``meta.warning_details``, in foundry's key order."""

    code: str | None = None
    severity: Annotated[str | None, Rule(one_of=_SEVERITY)] = None
    message: str
    context: Annotated[Raw, Rule(kind="object")] = ABSENT


class Pagination(_Wire):
    cursor: str | UnsetType | None = UNSET
    """``null`` (no next page) is kept apart from absent."""
    has_more: bool | None = None
    page_size: Annotated[int | None, Rule(ge=0)] = None
    total_count: Annotated[int | None, Rule(ge=0)] = None
    offset: Annotated[int | None, Rule(ge=0)] = None
    limit: Annotated[int | None, Rule(ge=0)] = None


class _Telemetry(Struct):
    """What the contract requires of ``meta.telemetry`` (its other members are free)."""

    duration_ms: Annotated[int | float | None, Rule(ge=0)] = None


class Meta(_Wire):
    version: Annotated[str, Rule(const=VERSION)]
    request_id: Annotated[str | None, Rule(pattern=REQUEST_ID.pattern, says="letters, digits, '_' or '-' only")] = None
    warnings: list[str] | None = None
    warning_details: list[WarningDetail] | None = None
    pagination: Pagination | None = None
    rate_limit: Annotated[Raw, Rule(kind="object")] = ABSENT
    telemetry: Annotated[Raw, Rule(of=_Telemetry)] = ABSENT
    content_fidelity: Annotated[str | None, Rule(one_of=_FIDELITY)] = None
    content_fidelity_schema_version: str | None = None
    dropped_content_ids: Annotated[Raw, Rule(of=list[str])] = ABSENT
    content_archive_hashes: Annotated[Raw, Rule(kind="object")] = ABSENT


class Envelope(_Wire):
    """The response-v2 envelope. ``error`` is null iff ``success``; ``data`` is always an object."""

    success: bool
    data: Annotated[Raw, Rule(kind="object")]
    error: Annotated[str | None, Rule(by_outcome=True)]
    meta: Meta


class _ErrorFields(Struct):
    """The error's fields in a failure's ``data``, in the order the writer reports a payload key
    it replaces (``meta`` may hold the first three where ``data`` lacks them)."""

    error_code: str | None = None
    error_type: str | None = None
    remediation: str | None = None
    details: Annotated[dict[str, Any] | None, Rule(nullable=False)] = None
    retry_after_seconds: Annotated[int | float | None, Rule(ge=0)] = None


_DEC = WireDecoder(Envelope, NAME, SHAPE.residue)
_ENC = msgspec.json.Encoder()
_RAW_DICT = msgspec.json.Decoder(dict[str, Raw])
_STR = msgspec.json.Decoder(str)
_NUM = msgspec.json.Decoder(int | float)
_ERROR_KEYS = _ErrorFields.__struct_encode_fields__
_ERROR_KEY_SET = frozenset(_ERROR_KEYS)


# --- reading ---------------------------------------------------------------------------
#
# The reader works in stages: the wire Struct keeps ``data`` (and ``meta``'s free-form
# members) as Raw; a failure's ``data`` (the error's fields live in it) and a ``telemetry``
# object (for its ``duration_ms``) are decoded further, once each, as ``{key: Raw}``.


@common(When("w.meta.version", "==", VERSION), holds=True)
def _version(w: Envelope) -> None:
    """The version marker, which the decode reads as any string (a document read holds it:
    :func:`~envglot.detect.read_facts` tells the rival test so)."""
    if w.meta.version != VERSION:
        raise ParseError(
            f"meta.version must be {VERSION!r}, got {quoted(w.meta.version)}", path="$.meta.version", dialect=NAME
        )


@common(
    When("w.data", "matches", OBJECT_AT),
    When("w.success", "truthy"),
    When("w.error", "is", None),
    also=[Case((When("w.data", "matches", OBJECT_AT), When("w.success", "falsy"), When("w.error", "truthy")))],
)
def _valid(w: Envelope) -> None:
    """What the decode cannot check besides the version: an object ``data``, ``error`` as ``success`` says."""
    if not raw_is_object(w.data):
        raise ParseError("data must be an object", path="$.data", dialect=NAME)
    if w.success:
        if w.error is not None:
            raise ParseError("error must be null when success is true", path="$.error", dialect=NAME)
    elif not w.error:
        raise ParseError("error must be a non-empty string when success is false", path="$.error", dialect=NAME)


_META_ERROR_KEYS = ("error_code", "error_type", "remediation")


def _codes_from_meta(members: dict[str, Raw], extras: tuple[c.Extra, ...], ctx: Context) -> tuple[c.Extra, ...]:
    """Take ``error_code``/``error_type``/``remediation`` from ``meta`` where ``data`` lacks them.

    Five of foundry's golden fixtures put them in ``meta`` (merged in through
    ``error_response(meta=...)``); reading them there keeps the error's category. Each one
    taken is added to ``members`` and reported as ``field_relocated`` (the writer puts it
    back in ``data``); the unknown fields left are returned.
    """
    keep: list[c.Extra] = []
    for ex in extras:
        key = ex.path[len("$.meta.") :] if ex.path.startswith("$.meta.") else None
        if key in _META_ERROR_KEYS and key not in members:
            members[key] = ex.value
            ctx.report.add(
                Kind.FIELD_RELOCATED,
                ex.path,
                NAME,
                field=key,
                found="meta",
                place="data",
            )
        else:
            keep.append(ex)
    return tuple(keep)


def _opt_str(members: dict[str, Raw], key: str, path: str) -> str | None:
    raw = members.get(key)
    if raw is None or raw == RAW_NULL:
        return None
    try:
        return _STR.decode(raw)
    except msgspec.ValidationError:
        raise ParseError(f"expected a string at {path}", path=path, dialect=NAME) from None


class _Failure(Struct, frozen=True):
    """A failure's ``data``, decoded once: its members and the error's fields read from them."""

    members: dict[str, Raw]
    extras: tuple[c.Extra, ...]
    """The unknown fields left once ``meta``'s error keys are taken."""
    code: str | None
    type: str | None
    remediation: str | None
    details: Raw | None
    retry_after_ms: int | None
    payload: Raw
    """``data`` without the error's fields (:func:`_payload`'s value for a failure), made here once."""
    details_members: dict[str, Raw] | None = None
    """The top level of ``details`` where :func:`_data_members` read it with ``data``."""


_ErrorMembers = msgspec.defstruct(
    "_ErrorMembers",
    [(k, (dict[str, Raw] if k == "details" else Raw) | UnsetType, UNSET) for k in _ERROR_KEYS],
    forbid_unknown_fields=True,
)
_ERROR_MEMBERS = msgspec.json.Decoder(_ErrorMembers)
_KEY_BYTES = {k: len(_ENC.encode(k)) + 2 for k in _ERROR_KEYS}  # '"key":' and the comma before the next
DATA_MEMBERS_MIN = 4096
"""Size of a failure's ``data`` from which :func:`_data_members` reads its ``details``' members
in the same parse (below it the members dict alone, and the carried-meaning test's decode of the
details, cost less than the proof)."""


def _data_members(data: Raw) -> tuple[dict[str, Raw], dict[str, Raw] | None]:
    """A failure's ``data`` as ``{key: Raw}`` (``_RAW_DICT``'s decode), and the top level of its
    ``details`` where they were read in the same parse (``None``: not read).

    From :data:`DATA_MEMBERS_MIN` bytes, ``data`` holding only the error's fields and an object
    ``details`` is decoded once with ``details`` as ``{key: Raw}`` (the carried-meaning test then
    skips them no second time) and the details' span is msgspec's encoding of those members. Exact
    where the lengths prove it: every part of msgspec's encoding is at most as long as any spelling
    of the same value (no whitespace, a repeated key once, each key in its shortest escapes;
    ``Raw`` values are the input's spans), so the encoding's length (counted without copying)
    equal to ``data``'s proves ``data`` spelled as encoded, but for a control character's
    ``\\u00XX`` in either case, ruled out by looking at the details' keys (as
    :class:`~envglot.keyed.KeyedItems` proves an error list). Anything else: ``_RAW_DICT``'s decode.
    The members come in field order, not the document's: the reader looks them up by key and
    keeps none but the error's fields, which such a ``data`` alone holds.
    """
    if len(data) < DATA_MEMBERS_MIN:
        return _RAW_DICT.decode(data), None
    try:
        s = _ERROR_MEMBERS.decode(data)
    except msgspec.MsgspecError:
        return _RAW_DICT.decode(data), None
    members: dict[str, Raw] = {}
    size = 1  # the closing brace (the opening one stands for the first member's comma)
    found = None
    for k in _ERROR_KEYS:
        v = getattr(s, k)
        if v is UNSET:
            continue
        if k == "details":
            if any(CONTROL_CHAR(x) for x in v):
                return _RAW_DICT.decode(data), None
            found = v
            try:
                size += _KEY_BYTES[k] + encoded_length(v)
            except UnicodeEncodeError:  # a lone surrogate in a key: the members dict decides
                return _RAW_DICT.decode(data), None
            continue
        members[k] = v
        size += _KEY_BYTES[k] + len(v)
    if size + (not members and found is None) != len(data):  # '{}': two bytes, no member
        return _RAW_DICT.decode(data), None
    if found is not None:
        members["details"] = Raw(_ENC.encode(found))
    return members, found


@common(When("w.success", "truthy"))
def _failure(w: Envelope, extras: tuple[c.Extra, ...], ctx: Context) -> _Failure | None:
    """A failure's ``data`` as ``{key: Raw}``, ``meta``'s error keys taken in, the error's fields
    read (and checked) in this order, a ``null`` one as absent; ``None`` on success."""
    if w.success:
        return None
    members, inner = _data_members(w.data)
    if extras:
        extras = _codes_from_meta(members, extras, ctx)
    details = members.get("details")
    ras = members.get("retry_after_seconds")
    return _Failure(
        members,
        extras,
        _opt_str(members, "error_code", "$.data.error_code"),
        _opt_str(members, "error_type", "$.data.error_type"),
        _opt_str(members, "remediation", "$.data.remediation"),
        None if details == RAW_NULL else details,
        None if ras is None or ras == RAW_NULL else _retry_ms(ras),
        RAW_EMPTY_OBJECT if members.keys() <= _ERROR_KEY_SET else _rest(members),
        inner,
    )


def _rest(members: dict[str, Raw]) -> Raw:
    """A failure's ``data`` members other than the error's fields, encoded (``{}`` when none)."""
    rest = {k: v for k, v in members.items() if k not in _ERROR_KEY_SET}
    return Raw(_ENC.encode(rest)) if rest else RAW_EMPTY_OBJECT


def _extras(failure: _Failure | None, extras: tuple[c.Extra, ...]) -> tuple[c.Extra, ...]:
    return extras if failure is None else failure.extras


@common(
    When("failure", "is", None),
    When("w.data", "no match", WRAPPED_AT),
    value="w.data",
    also=[Case((When("failure", "is not", None),), "failure.payload")],  # a failure's, made by _failure
)
def _payload(w: Envelope, failure: _Failure | None, ctx: Context) -> Raw:
    """``data``, or the payload a ``{"value": ...}`` wraps (reported); a failure's without the error's fields."""
    if failure is not None:
        return failure.payload
    inner = unwrap_payload(w.data)
    if inner is None:
        return w.data
    ctx.report.add(Kind.PAYLOAD_UNWRAPPED, "$.data", NAME)
    return inner


@common(When("failure", "is", None), value=Const(()))
def _problems(w: Envelope, failure: _Failure | None, dmap: DialectMap, ctx: Context) -> tuple[c.Problem, ...]:
    """A failure's one problem: by its code where the tables know it, else by its ``error_type``.

    A stated ``error_type`` wins over an extension code's row (``ext``: a code outside the
    documented catalogue, read by what its spelling suggests) that names another category:
    ``TIMEOUT`` stated ``unavailable`` is unavailable, not ``deadline_exceeded``.
    """
    if failure is None:
        return ()
    code, etype = failure.code, failure.type
    trow = dmap.types.get(etype) if etype is not None else None
    if etype is not None and trow is None:
        ctx.report.add(
            Kind.CODE_UNKNOWN,
            "$.data.error_type",
            NAME,
            member="error_type",
            value=quoted(etype),
        )
    fields: dict[str, Any] = dict(
        message=w.error,
        type=etype,
        remediation=failure.remediation,
        details=failure.details,
        retry_after_ms=failure.retry_after_ms,
    )
    plan = dmap.plan(code) if code is not None else None
    row = plan.row if plan is not None else None
    if row is not None and not stated_word(row, trow):
        p = worded_problem(row, trow, code, NAME, **fields)
        if row.ext and etype is None and ctx.report.collecting:
            ctx.report.add(
                Kind.CATEGORY_INFERRED,
                "$.data.error_code",
                NAME,
                code=quoted(code),
                member="error_type",
                category=repr(row.category),
            )
    elif trow is not None:  # no known code, or an extension code whose row is a guess the stated word overrules
        if code is not None and row is None:
            ctx.report.add(
                Kind.CODE_UNKNOWN,
                "$.data.error_code",
                NAME,
                member="code",
                value=quoted(code),
                category=quoted(trow.category),
                by=f"its error_type {quoted(etype)}",
            )
        p = problem_of(trow, code, NAME, **fields)
    else:
        p = read_planned(dmap, code, plan, ctx, "$.data.error_code", **fields)
    inner = failure.details_members if p.details is failure.details else None
    return (carried_meaning(p, dmap, ctx, inner),)


def _wire_failure(w: Envelope, failure: _Failure | None, dmap: DialectMap) -> WireFailure | None:
    """The fused form of :func:`_problems` (``Reading.failure``): a failure with a code whose
    details carry no meaning, its ``error_type`` beside it (its plan's key: an unknown code or
    word has none, and the hook reads it, reporting); ``None`` otherwise."""
    if failure is None or failure.code is None or carries_meaning(failure.details, dmap, failure.details_members):
        return None
    return WireFailure(
        failure.code,
        message=w.error,
        remediation=failure.remediation,
        details=failure.details,
        retry_after_ms=failure.retry_after_ms,
        type=failure.type,
        details_members=failure.details_members,
    )


@common(When("w.meta.warning_details", "falsy"), When("w.meta.warnings", "falsy"), value=Const(()))
def _warnings(w: Envelope, ctx: Context) -> tuple[c.Notice, ...]:
    """``warning_details``, then the ``warnings`` they do not detail.

    Real emitters fill the two lists apart (``"CODE: message"`` strings beside a detail's plain
    message, a detail with no string): when they disagree, the one list of warnings read here
    is written back as every message in ``warnings``, detailed first (reported)."""
    m = w.meta
    if m.warning_details:
        detailed = {wd.message for wd in m.warning_details}
        if (
            ctx.report.collecting
            and [wd.message for wd in m.warning_details] != list(m.warnings or ())[: len(m.warning_details)]
        ):
            ctx.report.add(
                Kind.VALUE_COERCED,
                "$.meta.warnings",
                NAME,
                value="meta.warnings",
                change="read as one list of warnings, detailed ones first (written back, warnings holds every "
                "message in that order)",
                because="it does not list the warning_details' messages first and in order",
            )
        for i, wd in enumerate(m.warning_details):
            if ctx.report.collecting and wd.code is None and wd.severity is None and opt(wd.context) is None:
                ctx.report.add(
                    Kind.VALUE_COERCED,
                    f"$.meta.warning_details[{i}]",
                    NAME,
                    value="a warning detail with nothing but its message",
                    change="read as a plain warning (written back there)",
                )
        return tuple(
            c.Notice(message=wd.message, code=wd.code, severity=wd.severity, context=opt(wd.context))
            for wd in m.warning_details
        ) + tuple(c.Notice(message=s) for s in (m.warnings or ()) if s not in detailed)
    if m.warnings:
        return tuple(c.Notice(message=s) for s in m.warnings)
    return ()


def _texts(w: Envelope) -> list[str] | None:
    """The fused form of :func:`_warnings` (``Reading.texts``): ``warnings`` without ``warning_details``."""
    m = w.meta
    return m.warnings if m.warnings and not m.warning_details else None


class _Timing(Struct, frozen=True):
    """``meta.telemetry`` split: its ``duration_ms``, and its members when that had to be taken out."""

    duration_ms: int | float | None = None
    members: dict[str, Raw] | None = None


_NO_TIMING = _Timing()


@common(When("w.meta.telemetry", "is", ABSENT), value=Const(_NO_TIMING))
def _timing(w: Envelope) -> _Timing:
    """``duration_ms`` from ``meta.telemetry`` (an object holding it is decoded, once, for that)."""
    t = w.meta.telemetry
    if t is ABSENT or not raw_is_object(t):
        return _NO_TIMING
    d = _RAW_DICT.decode(t)
    dur = d.get("duration_ms")
    if dur is None:
        return _NO_TIMING
    try:
        return _Timing(_NUM.decode(dur), d)
    except msgspec.ValidationError:
        raise ParseError("expected a number", path="$.meta.telemetry.duration_ms", dialect=NAME) from None


def _telemetry(w: Envelope, timing: _Timing) -> Raw | None:
    """``meta.telemetry`` without ``duration_ms`` (``None`` when nothing else is in it)."""
    if timing.members is None:
        return opt(w.meta.telemetry)
    rest = {k: v for k, v in timing.members.items() if k != "duration_ms"}
    return Raw(_ENC.encode(rest)) if rest else None


@common(When("w.meta.pagination", "is", None))
def _pagination(w: Envelope) -> c.Pagination | None:
    pg = w.meta.pagination
    if pg is None:
        return None
    return c.Pagination(
        cursor=pg.cursor if isinstance(pg.cursor, str) else None,
        null_cursor=pg.cursor is None,
        has_more=pg.has_more,
        total=pg.total_count,
        page_size=pg.page_size,
        offset=pg.offset,
        limit=pg.limit,
    )


def _fidelity(w: Envelope) -> c.Fidelity | None:
    m = w.meta
    if (
        m.content_fidelity is None
        and m.content_fidelity_schema_version is None
        and m.dropped_content_ids is ABSENT
        and m.content_archive_hashes is ABSENT
    ):
        return None
    return c.Fidelity(
        level=m.content_fidelity,
        schema_version=m.content_fidelity_schema_version,
        dropped_ids=opt(m.dropped_content_ids),
        archive_hashes=opt(m.content_archive_hashes),
    )


READING = Reading(
    _DEC,
    Check(_version),
    Check(_valid),
    Let("failure", _failure),
    Let("extras", _extras, pure=True),
    Let("payload", _payload),
    Let("problems", _problems),
    Let("warnings", _warnings),
    Let("timing", _timing),
    Move("duration_ms", "timing.duration_ms"),  # from the telemetry object _timing decodes (a Raw on the wire)
    Let("telemetry", _telemetry, pure=True),
    Let("pagination", _pagination, pure=True),
    Let("fidelity", _fidelity, pure=True),
    derive=True,  # ok, request_id, rate_limit: from [fields]
    failure=_wire_failure,
    texts=_texts,
)


# --- writing ---------------------------------------------------------------------------


@common(When("payload", "is not", None), When("payload", "matches", OBJECT_AT), value="payload")
def _body(payload: Raw | None, ok: bool, ctx: Context) -> Raw:
    """``data`` is an object: ``{}`` for none, any other value wrapped (reported)."""
    return object_payload(payload, ok, ctx, NAME)


class _WireError(Struct, frozen=True):
    """The failure's problem, the writer's :class:`~envglot.codes.Choice` for it (derived once,
    read by every hook that writes the error) and the ``error_type`` written beside its code."""

    problem: c.Problem
    choice: Choice
    type: str


@common(When("ok", "truthy"))
def _wire_error(
    ok: bool, problems: tuple[c.Problem, ...], summary: str | None, ctx: Context, dmap: DialectMap
) -> _WireError | None:
    """The failure's one problem (synthesized, reported, when it names none), its code and
    error_type (a change reported); ``None`` on success."""
    p = problems[0] if problems else missing_problem(summary, ctx, dmap)
    ch = write_plan(p, dmap, ctx, 0)
    return _WireError(p, ch, _error_type_for(p, ch, ctx))


def _error_type_for(p: c.Problem, ch: Choice, ctx: Context) -> str:
    """``data.error_type``: the word the writer's :class:`~envglot.codes.Choice` writes beside its
    code (the problem's own word for its own code, else the code's, else the category's).

    A source error type it replaces is reported as dropped, a ``retryable`` it contradicts as changed.
    """
    etype = ch.word
    assert etype is not None  # response-v2 has category words
    if p.type is not None and p.type != etype and not ch.type_implied:
        what = f"the {p.domain or 'source'} error type {quoted(p.type)} (error_type is {quoted(etype)})"
        ctx.dropped("problem.type", NAME, 0 if ctx.source and ctx.source.shape.max_problems != 1 else None, what)
    implied = ch.word_retryable
    if p.retryable is not None and implied is not None and implied != p.retryable:
        ctx.report.add(
            Kind.RETRYABLE_CHANGED,
            ctx.path("problem.retryable", 0),
            NAME,
            basis=f"error_type {quoted(etype)}",
            value=str(implied).lower(),
            stated=f"the source said {str(p.retryable).lower()}",
        )
    elif p.retryable is not None and implied is None and ch.there != p.retryable:
        said = f"the {p.domain or 'source'} error's stated retryable={str(p.retryable).lower()}"
        ctx.dropped("problem.retryable", NAME, None, said)
    return etype


@common(When("wire_error", "is", None), value="body")
def _data(body: Raw, wire_error: _WireError | None, ctx: Context, dmap: DialectMap) -> Raw:
    """``data``; a failure's carries the error's fields (a payload key they replace is reported)."""
    assert wire_error is not None  # a success's is the common case
    p, ch = wire_error.problem, wire_error.choice
    word = _ENC.encode(wire_error.type)
    return _failure_data(body, p, ch, _ENC.encode(ch.code), word, p.remediation, p.details, p.retry_after_ms, ctx, dmap)


def _failure_data(
    body: Raw,
    p: c.Problem,
    ch: Choice,
    code: bytes,
    word: bytes,
    remediation: str | None,
    details: Raw | None,
    retry_after_ms: int | None,
    ctx: Context,
    dmap: DialectMap,
    members: dict[str, Raw] | None = None,
    carried: dict[str, Raw] | None = None,
) -> Raw:
    """A failure's ``data``: ``body`` with the error's fields (``p``'s code written as ``ch``
    says, ``code``, beside the word ``word``, both encoded; its own fields given apart: a failure
    written from its plan has no problem of its own, ``p`` is then its code's row problem). ``members``: the top level
    of ``details`` where the reader decoded it (:attr:`~envglot.codes.WireFailure.details_members`:
    the details are then an object);
    ``carried``: what :func:`~envglot.codes.carry_meaning` adds for ``p`` and ``ch`` where a plan
    keeps it (:attr:`~envglot.codes.FailurePlan.carried`)."""
    d = _RAW_DICT.decode(body) if body != RAW_EMPTY_OBJECT else None
    if d is not None:
        for k in _ERROR_KEYS:
            if k in d:
                ctx.report.add(
                    Kind.VALUE_COERCED,
                    ctx.failure_payload_path() + "." + k,
                    NAME,
                    value=f"payload key {quoted(k)}",
                    change="replaced by the error field",
                )
                del d[k]
    said = None if remediation is None else _ENC.encode(remediation)
    # (error_details' and _retry_seconds' common cases inline: an object, no delay; details
    # whose members the reader decoded are an object)
    shown = (
        details
        if details is None or members is not None or OBJECT_AT(details) is not None
        else error_details(details, ctx, NAME)
    )
    add = meaning_to_carry(p, ch, dmap) if carried is None else carried
    # (with_carried's common case inline: nothing to add)
    details = with_carried(shown, add, members if shown is details else None) if add else shown
    retry = None if retry_after_ms is None else _retry_seconds(retry_after_ms, ctx)
    if d is None:  # an empty payload: the error's members alone, as the dict below is encoded
        return Raw(
            b"".join(
                (
                    b'{"error_code":',
                    code,
                    b',"error_type":',
                    word,
                    b"" if said is None else b',"remediation":' + said,
                    b"" if details is None else b',"details":' + details,
                    b"" if retry is None else b',"retry_after_seconds":' + retry,
                    b"}",
                )
            )
        )
    d["error_code"], d["error_type"] = Raw(code), Raw(word)
    if said is not None:
        d["remediation"] = Raw(said)
    if details is not None:
        d["details"] = details
    if retry is not None:
        d["retry_after_seconds"] = retry
    return Raw(_ENC.encode(d))


def _retry_seconds(retry_after_ms: int | None, ctx: Context) -> Raw | None:
    """A failure's ``retry_after_seconds`` from its delay in milliseconds (a negative one left
    out, a fraction too large for a float written as whole seconds: reported)."""
    retry_ms = count_for(retry_after_ms, ctx, "problem.retry_after_ms", NAME)
    if retry_ms is not None:
        if retry_ms % 1000 and retry_ms >= _MAX_FLOAT_SECONDS * 1000:  # a fraction no reader can hold
            whole = (retry_ms + 500) // 1000 * 1000
            ctx.report.add(
                Kind.VALUE_COERCED,
                ctx.path("problem.retry_after_ms", 0),
                NAME,
                value=f"retry_after_ms {retry_ms}",
                change="written as whole seconds",
                because="a fraction of seconds this large does not survive a float",
            )
            retry_ms = whole
    return None if retry_ms is None else _seconds(retry_ms)


@common(When("wire_error", "is", None))
def _error(wire_error: _WireError | None, summary: str | None, ctx: Context, dmap: DialectMap) -> str | None:
    """``error``: the failure's message (a substitute reported); null on success."""
    assert wire_error is not None  # a success's is the common case
    p, code = wire_error.problem, wire_error.choice.code
    return written_message(p.message, summary, ctx, dmap, 0, fallback=f"{code} ({p.category})")


def _planned_failure(
    plan: FailurePlan, failure: WireFailure, body: Raw, summary: str | None, ctx: Context, dmap: DialectMap
) -> tuple[Raw, str]:
    """``data`` and ``error`` of a failure written from its code's plan (:class:`~envglot.fields.Failure`):
    what :func:`_wire_error`, :func:`_data` and :func:`_error` write, without a problem of its own."""
    p, ch = plan.problem, plan.choice
    data = _failure_data(
        body,
        p,
        ch,
        plan.code_json,
        # (a problem stating neither type nor retryable: _error_type_for reports nothing and
        # gives the plan's word, encoded once in its plan)
        plan.word_json
        if p.type is None and p.retryable is None and plan.word_json is not None
        else _ENC.encode(_error_type_for(p, ch, ctx)),
        failure.remediation,
        failure.details,
        failure.retry_after_ms,
        ctx,
        dmap,
        failure.details_members,
        plan.carried,
    )
    message = failure.message  # (its own message: written_message's common case)
    return data, message or written_message(message, summary, ctx, dmap, 0, fallback=f"{ch.code} ({p.category})")


@common(When("warnings", "falsy"))
def _warning_texts(warnings: tuple[c.Notice, ...]) -> list[str] | None:
    return [w.message for w in warnings]


def _plain_warnings(texts: list[str]) -> tuple[list[str], None]:
    """``warnings`` and ``warning_details`` of messages alone (:class:`~envglot.fields.Texts`):
    what :func:`_warning_texts` and :func:`_warning_details` write for them."""
    return list(texts), None


@common(When("warnings", "falsy"))
def _warning_details(warnings: tuple[c.Notice, ...], ctx: Context) -> list[WarningDetail] | None:
    """``meta.warning_details`` when any warning has more than a message."""
    for w in warnings:
        if w.code is not None or w.severity is not None or w.context is not None:
            break
    else:
        return None
    return [
        WarningDetail(
            message=w.message,
            code=w.code,
            severity=w.severity,
            context=raw_or_absent(object_or_wrapped(w.context, ctx, "warning.context", NAME, i)),
        )
        for i, w in enumerate(warnings)
    ]


_INT64_MAX = 2**63 - 1
"""The largest integer written in :func:`_meta_telemetry`'s usual case (msgspec encodes it as ``%d`` does)."""


@common(
    When("telemetry", "is", None),
    When("duration_ms", "int in", (0, _INT64_MAX)),
    value=Formatted(b'{"duration_ms":%d}', "duration_ms"),  # what the lines below write, without a call
)
def _meta_telemetry(telemetry: Raw | None, duration_ms: int | float | None, dmap: DialectMap, ctx: Context) -> Raw:
    """``meta.telemetry``, ``duration_ms`` first in it: an object (any other value but ``null``
    wrapped, reported); beside a duration, ``null`` telemetry is absent."""
    telemetry = object_or_wrapped(telemetry, ctx, "telemetry", NAME)
    if duration_ms is None:
        return raw_or_absent(telemetry)
    duration = _ENC.encode(non_negative_ms(duration_ms, dmap, ctx, "telemetry.duration_ms"))
    if telemetry is None or telemetry == RAW_NULL:  # the usual case: no dict round trip
        return Raw(b'{"duration_ms":' + duration + b"}")
    t = _RAW_DICT.decode(telemetry)
    t = {"duration_ms": Raw(duration), **{k: v for k, v in t.items() if k != "duration_ms"}}
    return Raw(_ENC.encode(t))


@common(When("request_id", "is", None))
def _request_id(request_id: str | None, ctx: Context) -> str | None:
    """``meta.request_id`` when the contract allows it (else left out, reported)."""
    assert request_id is not None  # none is the common case
    if REQUEST_ID.fullmatch(request_id) is None:
        ctx.report.add(
            Kind.FIELD_DROPPED,
            ctx.path("request_id"),
            NAME,
            field=f"request id {quoted(request_id)}",
            because="a response-v2 request_id is letters, digits, '_' and '-'",
        )
        return None
    return request_id


@common(When("pagination", "is", None))
def _meta_pagination(pagination: c.Pagination | None, ctx: Context) -> Pagination | None:
    """``meta.pagination`` (a negative count left out, reported)."""
    pg = pagination
    if pg is None:
        return None
    return Pagination(
        cursor=pg.cursor if pg.cursor is not None else None if pg.null_cursor else UNSET,
        has_more=pg.has_more,
        page_size=count_for(pg.page_size, ctx, "pagination.page_size", NAME),
        total_count=count_for(pg.total, ctx, "pagination.total", NAME),
        offset=count_for(pg.offset, ctx, "pagination.offset", NAME),
        limit=count_for(pg.limit, ctx, "pagination.limit", NAME),
    )


def _rate_limit(rate_limit: Raw | None) -> Raw:
    """An optional Raw wire field takes ``ABSENT`` for none (omitted), not ``None``."""
    return raw_or_absent(rate_limit)


class _FidelityWire(Struct, frozen=True):
    """``meta``'s content fidelity members, as the wire Struct takes them."""

    level: str | None = None
    schema_version: str | None = None
    dropped_ids: Raw = ABSENT
    archive_hashes: Raw = ABSENT


_NO_FIDELITY = _FidelityWire()


def _meta_fidelity(fidelity: c.Fidelity | None) -> _FidelityWire:
    if fidelity is None:
        return _NO_FIDELITY
    return _FidelityWire(
        fidelity.level,
        fidelity.schema_version,
        raw_or_absent(fidelity.dropped_ids),
        raw_or_absent(fidelity.archive_hashes),
    )


WRITING = Writing(
    Let("body", _body),
    Let("wire_error", _wire_error),
    Let("data", _data),
    Let("error", _error),
    Let("warning_texts", _warning_texts),
    Let("warning_details", _warning_details),
    Let("meta_telemetry", _meta_telemetry),
    Let("rid", _request_id),
    Let("page", _meta_pagination),
    Let("rate", _rate_limit),
    Let("fid", _meta_fidelity),
    Build.of(
        "meta",
        Meta,
        version=Const(VERSION),
        request_id="rid",
        warnings="warning_texts",
        warning_details="warning_details",
        pagination="page",
        rate_limit="rate",
        telemetry="meta_telemetry",
        content_fidelity="fid.level",
        content_fidelity_schema_version="fid.schema_version",
        dropped_content_ids="fid.dropped_ids",
        content_archive_hashes="fid.archive_hashes",
    ),
    Build.of("out", Envelope, data="data", error="error", meta="meta"),  # success: a plain copy of [fields]
    derive=True,  # meta's request_id and rate_limit stay hooks: a contract check, and None is omitted (ABSENT)
    failure=Failure(_planned_failure, replaces=("wire_error", "data", "error"), gives=("data", "error")),
    texts=Texts(
        _plain_warnings, replaces=("warning_texts", "warning_details"), gives=("warning_texts", "warning_details")
    ),
)


_MAX_FLOAT_SECONDS = 1e15
"""A fractional ``retry_after_seconds`` beyond this (about 31 million years) cannot be a delay."""


def _retry_ms(raw: Raw) -> int:
    """``retry_after_seconds`` in whole milliseconds: integers exactly, fractions rounded."""
    try:
        secs = _NUM.decode(raw)
    except msgspec.ValidationError:
        raise ParseError(
            "expected a number of seconds (within range)", path="$.data.retry_after_seconds", dialect=NAME
        ) from None
    if isinstance(secs, int):
        return secs * 1000
    if not abs(secs) < _MAX_FLOAT_SECONDS:
        raise ParseError("retry_after_seconds is out of range", path="$.data.retry_after_seconds", dialect=NAME)
    return round(secs * 1000)


def _seconds(ms: int) -> Raw:
    """Whole milliseconds as exact decimal seconds (``1500`` -> ``1.5``), whatever their size."""
    sign = "-" if ms < 0 else ""
    q, r = divmod(abs(ms), 1000)
    return Raw(f"{sign}{q}".encode() if r == 0 else f"{sign}{q}.{r:03d}".rstrip("0").encode())


# --- contract (the wire Structs and their Rules, then these) ------------------------------

_TOP = Envelope.__struct_encode_fields__


def invariants(d: dict[str, Any], c: Checker, m: Mappings) -> None:
    """The contract's rules across fields: no other top-level key, ``error`` null on success and
    a message on failure, a failure's error fields in ``data`` (or ``meta``), ``version`` first in ``meta``."""
    for key in d:
        if key not in _TOP:
            c.add(join_path("$", key), f"unknown top-level key (response-v2 allows only {', '.join(_TOP)})")
    success, data, meta = d.get("success"), d.get("data"), d.get("meta")
    if "error" not in d:
        c.add("$.error", "missing required field (null on success, a message on failure)")
    elif success is True and d["error"] is not None:
        c.add("$.error", f"error must be null when success is true, got {type_name(d['error'])}")
    elif success is False and not (isinstance(d["error"], str) and d["error"]):
        c.add("$.error", "error must be a non-empty string when success is false")
    if success is False and isinstance(data, dict):
        c.wire(data, _ErrorFields, "$.data")
        if isinstance(meta, dict):  # read from meta when data lacks them
            c.wire({k: meta[k] for k in _META_ERROR_KEYS if k in meta and k not in data}, _ErrorFields, "$.meta")
    if isinstance(meta, dict) and "version" in meta and next(iter(meta)) != "version":
        c.add("$.meta.version", "meta.version must be the first key of meta")


WIRE = Envelope
