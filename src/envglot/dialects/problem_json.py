"""problem-json (RFC 9457 Problem Details, ``application/problem+json``).

A document is one problem details object: ``type``, ``title``, ``status``, ``detail``,
``instance``, plus extension members (``code``, ``retryable``, ``retry_after_ms``,
``details``, ``request_id``, ``data``, ``warnings``, and ``errors`` for the further problems
of a multi-error failure). ``status`` is the outcome: 400-599 a failure, 200-399 a success.
RFC 9457 describes problems only; envglot's convention for a success is a document with a
2xx status, ``{"type": "about:blank", "title": "OK", "status": 200, "data": ...}``.
Decisions: ``docs/dialects/problem-json.md``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, NamedTuple, TypeGuard

import msgspec
from msgspec import Raw, Struct

from .. import canonical as c
from ..checker import Checker, Rule, join_path
from ..codes import Choice, FailurePlan, WireFailure, missing_problem, read_planned, write_plan
from ..context import Context
from ..diagnostics import Kind
from ..dialect import name_of, shape_of
from ..errors import ParseError
from ..excerpt import quoted
from ..fields import Build, Check, Const, Failure, Let, Reading, Texts, When, Writing, common
from ..mappings import CodePlan, DialectMap, Mappings
from ..wire import ABSENT, WireDecoder, count_for, drop_success_problems, opt, raw_or_absent

__all__ = ["NAME", "READING", "WRITING", "Entry", "Envelope"]

NAME = name_of(__name__)
SHAPE = shape_of(NAME)
ABOUT_BLANK = "about:blank"
"""RFC 9457's type for a problem with no more semantics than its HTTP status."""
_STATUS_CODE = re.compile(r"[1-5][0-9][0-9]").fullmatch
"""A code that is an HTTP status: the problem was coded by its ``status`` alone."""
SUCCESS_STATUS = 200
SUCCESS_TITLE = "OK"
"""What envglot writes for a success: status 200 with its RFC 9110 phrase as title."""
_PROBLEM_MEMBERS = ("code", "retryable", "retry_after_ms", "details", "errors")
"""Members that describe a problem: a success document cannot carry them."""


class _Wire(Struct, forbid_unknown_fields=True, omit_defaults=True):
    pass


class Entry(_Wire):
    """One problem details object (an element of ``errors``; the document adds the envelope's members)."""

    type: str | None = None
    title: str | None = None
    status: int | None = None
    detail: str | None = None
    instance: str | None = None
    code: str | None = None
    retryable: bool | None = None
    retry_after_ms: Annotated[int | None, Rule(ge=0)] = None
    details: Raw = ABSENT


class Envelope(Entry):
    """The document: the first problem, the failure's own members, the further problems."""

    request_id: str | None = None
    data: Raw = ABSENT
    warnings: list[str] | None = None
    errors: Annotated[list[Entry] | None, Rule(by_outcome=True)] = None


_DEC = WireDecoder(Envelope, NAME, SHAPE.residue)
_ENC = msgspec.json.Encoder()
_INT = msgspec.json.Decoder(int | None)


# --- what a code implies (one rule for the reader and the writer) ------------------------


def _status(code: str, plan: CodePlan | None, category: str, m: Mappings) -> int:
    """The HTTP status of a problem written with ``code``: the status itself for a status code,
    else ``plan``'s (its row's ``http`` override, else its category's), else the category's
    (``canonical.toml``). A writer's ``plan`` is the source code's when the problem has that
    code's category, else the written code's."""
    if _STATUS_CODE(code):
        return int(code)
    return plan.http if plan is not None else m.http(category)


def _type(code: str, dmap: DialectMap) -> str:
    """The type URI the code implies (the table's ``[synthesize]`` rule; ``about:blank`` for a status)."""
    if _STATUS_CODE(code):
        return ABOUT_BLANK
    return str(dmap.synthesize["problem.type"]).replace("{code}", code)


def _title(code: str, plan: CodePlan | None, category: str, m: Mappings) -> str:
    """The title ``code`` (its ``plan``) implies: for ``about:blank`` the status phrase (RFC 9457
    §4.2.1; the status row's ``note``), else the category's title (``canonical.toml``)."""
    if _STATUS_CODE(code) and plan is not None and plan.row.note is not None:
        return plan.row.note
    return m.categories[category].title


# --- reading -----------------------------------------------------------------------------


def _of_parent(e: Entry) -> bool:
    """An ``errors`` entry with none of ``type``, ``title``, ``status``, ``code`` is of the
    document's problem type (RFC 9457 §3: one type, an array of occurrences)."""
    return e.type is None and e.title is None and e.status is None and e.code is None


def _entry_problem(
    e: Entry, at: str, ctx: Context, dmap: DialectMap, parent: c.Problem | None = None
) -> tuple[c.Problem, CodePlan | None]:
    """The canonical problem of one problem details object at JSON path ``at``, and the plan of
    its code (``None``: a code the tables do not know, or an entry of the parent's type).

    The ``code`` member names the code; without one (or with one the tables do not know) the
    ``status`` is looked up in the table's status rows. ``type`` is kept only where it says
    more than the code implies (``title``, ``status`` and ``instance``: :func:`_entry_extras`).
    An ``errors`` entry of the document's problem type takes the ``parent``'s category, code
    and type.
    """
    if parent is not None and _of_parent(e):
        return msgspec.structs.replace(
            parent,
            message=e.detail,
            retryable=parent.retryable if e.retryable is None else e.retryable,
            retry_after_ms=e.retry_after_ms,
            details=opt(e.details),
        ), None
    key = str(e.status) if e.status is not None else None
    fields: dict[str, Any] = {
        "message": e.detail,
        "retry_after_ms": e.retry_after_ms,
        "details": opt(e.details),
    }
    plan = dmap.plan(e.code) if e.code is not None else None  # the read side's lookup
    if e.code is not None and (plan is not None or key is None or (by_status := dmap.plan(key)) is None):
        p = read_planned(dmap, e.code, plan, ctx, join_path(at, "code"), e.retryable, **fields)
    elif e.code is not None:  # an unknown code with a known status: the status's row decides the category
        p = read_planned(dmap, key, by_status, ctx, join_path(at, "status"), e.retryable, **fields)
        p = msgspec.structs.replace(p, code=e.code)
        if ctx.report.collecting:
            ctx.report.add(
                Kind.CODE_UNKNOWN,
                join_path(at, "code"),
                NAME,
                member="code",
                value=quoted(e.code),
                category=repr(p.category),
                by=f"its status {key}",
            )
    else:
        plan = dmap.plan(key) if key is not None else None
        p = read_planned(dmap, key, plan, ctx, join_path(at, "status"), e.retryable, **fields)
    code = p.code
    if code is None:  # no code, no status: nothing implies a type
        stated = e.type
    else:
        stated = e.type if e.type != _type(code, dmap) else None
    return (p if stated is None else msgspec.structs.replace(p, type=stated)), plan


def _entry_extras(
    e: Entry, at: str, p: c.Problem, plan: CodePlan | None, m: Mappings, extras: list[c.Extra], of_parent: bool
) -> None:
    """What one problem details object states beyond its problem ``p``, kept as extras: a
    ``status`` or ``title`` other than the code implies (an entry of the document's type has
    none of its own), the ``instance``."""
    if not of_parent:
        code = p.code
        if code is not None and e.status is not None and e.status != _status(code, plan, p.category, m):
            _keep(extras, join_path(at, "status"), e.status)
        if e.title is not None and (code is None or e.title != _title(code, plan, p.category, m)):
            _keep(extras, join_path(at, "title"), e.title)
    if e.instance is not None:
        _keep(extras, join_path(at, "instance"), e.instance)


def _outcome(status: int | None, at: str) -> bool:
    """Whether ``status`` says success: 200-399 (no status: a problem); a non-HTTP status raises."""
    if status is None or 400 <= status <= 599:
        return False
    if 200 <= status <= 399:
        return True
    raise ParseError(
        f"status {status} is not an outcome: 200-399 is a success, 400-599 a problem",
        path=join_path(at, "status"),
        dialect=NAME,
    )


def _keep(extras: list[c.Extra], path: str, value: object) -> None:
    extras.append(c.Extra(dialect=NAME, path=path, value=Raw(_ENC.encode(value))))


@common(When("w.status", "==", 200), value=Const(True))
def _ok(w: Envelope) -> bool:
    """``status`` is the outcome (a non-HTTP status raises)."""
    return _outcome(w.status, "$")


def _no_problem_members(w: Envelope, ok: bool) -> None:
    """A success (a 2xx/3xx status) carries no problem member."""
    if not ok:
        return
    for key in _PROBLEM_MEMBERS:
        value = getattr(w, key)
        if value is not None and value is not ABSENT:
            raise ParseError(
                f"a success (status {w.status}) carries the problem member {key!r}; a problem's status is 400-599",
                path=f"$.{key}",
                dialect=NAME,
            )


class _Read(NamedTuple):
    """A failure's problems and the plans of their codes (for :func:`_extras`: no second lookup)."""

    problems: tuple[c.Problem, ...]
    plans: tuple[CodePlan | None, ...]


@common(When("ok", "truthy"), value=Const(_Read((), ())))
def _read(w: Envelope, ok: bool, ctx: Context, dmap: DialectMap) -> _Read:
    """A failure's problems: the document's own, then its ``errors`` (a success has none)."""
    if ok:
        return _Read((), ())
    first = _entry_problem(w, "$", ctx, dmap)
    read = [first, *(_entry_problem(e, f"$.errors[{i}]", ctx, dmap, first[0]) for i, e in enumerate(w.errors or ()))]
    return _Read(tuple(p for p, _ in read), tuple(plan for _, plan in read))


def _wire_failure(w: Envelope, ok: bool, dmap: DialectMap) -> WireFailure | None:
    """The fused form of :func:`_read` and :func:`_problems` (``Reading.failure``): a failure that
    is one problem details object (no further ``errors``) named by its ``code``, else by its
    ``status``, whose ``type`` is the one that code implies (or none); ``None`` otherwise."""
    if ok or w.errors:
        return None
    code = w.code if w.code is not None else str(w.status) if w.status is not None else None
    if code is None or (w.type is not None and w.type != _type(code, dmap)):
        return None
    return WireFailure(code, w.retryable, message=w.detail, retry_after_ms=w.retry_after_ms, details=opt(w.details))


def _problems(read: _Read) -> tuple[c.Problem, ...]:
    return read.problems


def _warnings(w: Envelope) -> tuple[c.Notice, ...]:
    return tuple(c.Notice(message=m) for m in w.warnings) if w.warnings else ()


def _texts(w: Envelope) -> list[str] | None:
    """The fused form of :func:`_warnings` (``Reading.texts``): ``warnings`` as they are."""
    return w.warnings or None


def _extras(w: Envelope, ok: bool, read: _Read, extras: tuple[c.Extra, ...], ctx: Context) -> tuple[c.Extra, ...]:
    """The decoder's unknown members, then what the document states beyond the canonical
    fields: an empty ``warnings``; for a success the RFC 9457 members that say more than
    envglot's ``about:blank``/``OK``/``200``; for a failure each problem's (and an empty ``errors``)."""
    out = list(extras)
    if w.warnings == []:
        _keep(out, "$.warnings", [])
    if ok:
        if w.type is not None and w.type != ABOUT_BLANK:  # absent: about:blank (RFC 9457 §3.1.1)
            _keep(out, "$.type", w.type)
        if w.title is not None and w.title != SUCCESS_TITLE:
            _keep(out, "$.title", w.title)
        if w.status != SUCCESS_STATUS:
            _keep(out, "$.status", w.status)
        for key in ("detail", "instance"):
            if getattr(w, key) is not None:
                _keep(out, f"$.{key}", getattr(w, key))
        return tuple(out)
    m = ctx.mappings
    _entry_extras(w, "$", read.problems[0], read.plans[0], m, out, False)
    if w.errors is not None:
        if not w.errors:
            out.append(c.Extra(dialect=NAME, path="$.errors", value=Raw(b"[]")))
        for i, (e, p, plan) in enumerate(zip(w.errors, read.problems[1:], read.plans[1:], strict=True)):
            _entry_extras(e, f"$.errors[{i}]", p, plan, m, out, _of_parent(e))
    return tuple(out)


READING = Reading(
    _DEC,
    Let("ok", _ok),
    Check(_no_problem_members),
    Let("read", _read),
    Let("problems", _problems, pure=True),
    Let("warnings", _warnings, pure=True),
    Let("extras", _extras, pure=True),
    derive=True,  # payload and request_id: from [fields]
    failure=_wire_failure,
    texts=_texts,
)


# --- writing -----------------------------------------------------------------------------


def _fields(p: c.Problem, ctx: Context, dmap: DialectMap, i: int) -> dict[str, Any]:
    """The members of one problem details object for ``p`` (the ``i``-th problem)."""
    return _entry_fields(p, write_plan(p, dmap, ctx, i), p.message, p.retry_after_ms, p.details, ctx, dmap, i)


def _entry_fields(
    p: c.Problem,
    ch: Choice,
    message: str | None,
    retry_after_ms: int | None,
    details: Raw | None,
    ctx: Context,
    dmap: DialectMap,
    i: int,
) -> dict[str, Any]:
    """:func:`_fields` with ``p``'s code written as ``ch`` says and its own fields given apart (a
    failure written from its plan has no problem of its own: ``p`` is then its code's row problem)."""
    m = ctx.mappings
    code = ch.code
    own_type = p.type if p.domain == NAME and p.code == code else None
    if p.type is not None and own_type is None and not ch.type_implied and ctx.report.collecting:
        # a type the source's code implies is not lost
        ctx.dropped("problem.type", NAME, i, f"{p.domain or 'source'} error type {quoted(p.type)}")
    src = ch.source if ch.source is not None and ch.source.category == p.category else ch.plan
    return {
        "type": own_type if own_type is not None else _type(code, dmap),
        "title": _title(code, ch.plan, p.category, m),
        "status": _status(code, src, p.category, m),
        "detail": message,
        "code": None if _STATUS_CODE(code) else code,
        "retryable": p.retryable,
        "retry_after_ms": count_for(retry_after_ms, ctx, "problem.retry_after_ms", NAME),
        "details": raw_or_absent(details),
    }


_INHERITED = ("type", "title", "status", "code", "retryable")
"""Members an ``errors`` entry leaves out when they equal the document's (read back from it)."""
_SUCCESS = Entry(type=ABOUT_BLANK, title=SUCCESS_TITLE, status=SUCCESS_STATUS)
"""A success's own members (envglot's convention); never changed."""


@common(When("ok", "truthy"), When("problems", "falsy"), value=Const(()))
def _written(
    ok: bool, problems: tuple[c.Problem, ...], summary: str | None, ctx: Context, dmap: DialectMap
) -> tuple[c.Problem, ...]:
    """The problems the document states: a failure's (one synthesized when it names none);
    none for a success (its problems reported as dropped)."""
    if ok:
        drop_success_problems(problems, ctx, NAME, "status 200")
        return ()
    return problems or (missing_problem(summary, ctx, dmap),)


@common(When("written", "falsy"), value=Const(_SUCCESS))
def _top(written: tuple[c.Problem, ...], ctx: Context, dmap: DialectMap) -> Entry:
    """The document's own problem members: the first problem's, or a success's ``about:blank``/``OK``/200."""
    return Entry(**_fields(written[0], ctx, dmap, 0)) if written else _SUCCESS


@common(When("written", "falsy"))
def _errors(written: tuple[c.Problem, ...], top: Entry, ctx: Context, dmap: DialectMap) -> list[Entry] | None:
    """The further problems (``None``: there are none)."""
    rest = []
    for i, p in enumerate(written[1:], 1):
        entry = _fields(p, ctx, dmap, i)
        if all(entry[k] == getattr(top, k) for k in _INHERITED):  # of the document's type: say it once
            entry.update(dict.fromkeys(_INHERITED))
        rest.append(Entry(**entry))
    return rest or None


def _planned_top(plan: FailurePlan, failure: WireFailure, ctx: Context, dmap: DialectMap) -> tuple[Entry, None]:
    """``top`` and ``errors`` of a failure written from its code's plan (:class:`~envglot.fields.Failure`):
    what :func:`_written`, :func:`_top` and :func:`_errors` write for its one problem, without a problem of its own."""
    f = failure
    return Entry(**_entry_fields(plan.problem, plan.choice, f.message, f.retry_after_ms, f.details, ctx, dmap, 0)), None


@common(When("payload", "is not", None), value="payload")
def _data(payload: Raw | None) -> Raw:
    """``data``: the payload, absent without one."""
    return raw_or_absent(payload)


def _plain_messages(texts: list[str]) -> list[str]:
    """``warnings`` of messages alone (:class:`~envglot.fields.Texts`): what :func:`_messages` writes."""
    return list(texts)


@common(When("warnings", "falsy"))
def _messages(warnings: tuple[c.Notice, ...]) -> list[str] | None:
    return [w.message for w in warnings] or None


WRITING = Writing(
    Let("written", _written),
    Let("top", _top),
    Let("errors", _errors),
    Let("data", _data, pure=True),
    Let("messages", _messages, pure=True),
    Build.of(
        "out",
        Envelope,
        type="top.type",
        title="top.title",
        status="top.status",
        detail="top.detail",
        code="top.code",
        retryable="top.retryable",
        retry_after_ms="top.retry_after_ms",
        details="top.details",
        data="data",
        warnings="messages",
        errors="errors",
    ),  # request_id: a plain copy of [fields]
    derive=True,
    failure=Failure(_planned_top, replaces=("written", "top", "errors"), gives=("top", "errors")),
    texts=Texts(_plain_messages, replaces=("messages",), gives=("messages",)),
)


# --- contract ----------------------------------------------------------------------------


def _http_status(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def invariants(d: dict[str, Any], c: Checker, m: Mappings) -> None:
    """The contract's rules across fields: ``status`` is the outcome (200-399 a success, which
    carries no problem member, 400-599 a problem, as is each of a failure's ``errors``)."""
    status = d.get("status")
    if _http_status(status) and not 200 <= status <= 599:
        c.add("$.status", f"status is an HTTP status 200-399 (a success) or 400-599 (a problem), got {status}")
    if _http_status(status) and 200 <= status <= 399:
        for key in _PROBLEM_MEMBERS:
            if d.get(key) is not None:
                c.add(f"$.{key}", f"a success (status {status}) carries no problem member; a problem is 400-599")
        return
    c.member(d, Envelope, "errors")
    errors = d.get("errors")
    for i, e in enumerate(errors if isinstance(errors, list) else ()):
        own = e.get("status") if isinstance(e, dict) else None
        if _http_status(own) and not 400 <= own <= 599:
            c.add(f"$.errors[{i}].status", f"status is an HTTP status 400-599 (a problem), got {own}")


# --- detection and the hooks -------------------------------------------------------------


_TOP = msgspec.json.Decoder(dict[str, Raw])


def failed(doc: bytes) -> bool:
    """``status`` 400-599, or none (a problem details document): a failure (MCP ``isError``);
    200-399 a success; any other status a :class:`ParseError`."""
    try:
        status = _TOP.decode(doc).get("status")
        value = None if status is None else _INT.decode(status)
    except msgspec.MsgspecError as exc:
        raise ParseError(f"the envelope's outcome cannot be read: {exc}", path="$.status") from None
    return not _outcome(value, "$")


WIRE = Envelope
