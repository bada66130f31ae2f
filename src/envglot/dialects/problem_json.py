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
from typing import Any

import msgspec
from msgspec import Raw, Struct

from .. import canonical as c
from ..checker import Checker, join_path
from ..context import Context, missing_problem, read_problem, report_losses, write_code
from ..diagnostics import Kind
from ..dialect import Dialect, Facts, Probe, Shape
from ..errors import ParseError
from ..excerpt import quoted
from ..mappings import DialectMap, Mappings
from ._common import ABSENT, WireDecoder, count_for, opt, raw_or_absent

__all__ = ["NAME", "Entry", "Envelope", "ProblemJson", "read", "write"]

NAME = "problem-json"
SHAPE = Shape(max_problems=0, residue="$.envglot")
"""Several problems: the first is the document, the others its ``errors`` array (RFC 9457 §3).
The residue member is ``envglot``: RFC 9457 extension names should start with a letter."""
ABOUT_BLANK = "about:blank"
"""RFC 9457's type for a problem with no more semantics than its HTTP status."""
_STATUS_CODE = re.compile(r"[1-5][0-9][0-9]").fullmatch
"""A code that is an HTTP status: the problem was coded by its ``status`` alone."""
_DETECTED_STATUS = re.compile(rb"[2-5][0-9][0-9]").fullmatch
"""The statuses detection accepts: 200-599 (a success below 400, a problem from 400)."""
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
    retry_after_ms: int | None = None
    details: Raw = ABSENT


class Envelope(Entry):
    """The document: the first problem, the failure's own members, the further problems."""

    request_id: str | None = None
    data: Raw = ABSENT
    warnings: list[str] | None = None
    errors: list[Entry] | None = None


_DEC = WireDecoder(Envelope, NAME, SHAPE.residue)
_ENC = msgspec.json.Encoder()
_INT = msgspec.json.Decoder(int | None)


# --- what a code implies (one rule for the reader and the writer) ------------------------


def _status(p: c.Problem, code: str, m: Mappings) -> int:
    """The HTTP status of a problem written with ``code``: the status itself for a status code,
    else the source code's plan (its row's ``http`` override, else its category's), else the
    written code's plan, else the category's (``canonical.toml``)."""
    if _STATUS_CODE(code):
        return int(code)
    src = m.dialects.get(p.domain) if p.domain is not None else None
    plan = src.plan(p.code) if src is not None and p.code is not None else None
    if plan is None:
        plan = m[NAME].plan(code)
    return plan.http if plan is not None else m.http(p.category)


def _type(code: str, dmap: DialectMap) -> str:
    """The type URI the code implies (the table's ``[synthesize]`` rule; ``about:blank`` for a status)."""
    if _STATUS_CODE(code):
        return ABOUT_BLANK
    return str(dmap.synthesize["problem.type"]).replace("{code}", code)


def _title(code: str, category: str, m: Mappings) -> str:
    """The title the code implies: for ``about:blank`` the status phrase (RFC 9457 §4.2.1; the
    status row's ``note``), else the category's title (``canonical.toml``)."""
    if _STATUS_CODE(code):
        row = m[NAME].codes.get(code)
        if row is not None and row.note is not None:
            return row.note
    return m.categories[category].title


# --- reading -----------------------------------------------------------------------------


def _read_entry(e: Entry, at: str, ctx: Context, extras: list[c.Extra], parent: c.Problem | None = None) -> c.Problem:
    """The canonical problem of one problem details object at JSON path ``at``.

    The ``code`` member names the code; without one (or with one the tables do not know) the
    ``status`` is looked up in the table's status rows. ``type``, ``title`` and ``status`` are
    kept only where they say more than the code implies. An ``errors`` entry with none of
    ``type``, ``title``, ``status``, ``code`` is of the document's problem type (RFC 9457 §3:
    one type, an array of occurrences): it takes the ``parent``'s category, code and type.
    """
    dmap = ctx.mappings[NAME]
    if parent is not None and e.type is None and e.title is None and e.status is None and e.code is None:
        if e.instance is not None:
            extras.append(c.Extra(dialect=NAME, path=join_path(at, "instance"), value=Raw(_ENC.encode(e.instance))))
        return msgspec.structs.replace(
            parent,
            message=e.detail,
            retryable=parent.retryable if e.retryable is None else e.retryable,
            retry_after_ms=e.retry_after_ms,
            details=opt(e.details),
        )
    key = str(e.status) if e.status is not None else None
    fields: dict[str, Any] = {
        "message": e.detail,
        "retry_after_ms": e.retry_after_ms,
        "details": opt(e.details),
    }
    if e.code is not None and (e.code in dmap.codes or key is None or key not in dmap.codes):
        p = read_problem(dmap, e.code, ctx, join_path(at, "code"), e.retryable, **fields)
    elif e.code is not None:  # an unknown code with a known status: the status decides the category
        p = read_problem(dmap, key, ctx, join_path(at, "status"), e.retryable, **fields)
        p = msgspec.structs.replace(p, code=e.code)
        if ctx.report.collecting:
            ctx.report.add(
                Kind.CODE_UNKNOWN,
                join_path(at, "code"),
                f"{NAME} code {quoted(e.code)} is not in the tables; read by its status {key} "
                f"as category {p.category!r}",
                NAME,
            )
    else:
        p = read_problem(dmap, key, ctx, join_path(at, "status"), e.retryable, **fields)
    code = p.code
    if code is None:  # no code, no status: nothing implies a type or a title
        stated = e.type
    else:
        stated = e.type if e.type != _type(code, dmap) else None
        if e.status is not None and e.status != _status(p, code, ctx.mappings):
            extras.append(c.Extra(dialect=NAME, path=join_path(at, "status"), value=Raw(_ENC.encode(e.status))))
    if e.title is not None and (code is None or e.title != _title(code, p.category, ctx.mappings)):
        extras.append(c.Extra(dialect=NAME, path=join_path(at, "title"), value=Raw(_ENC.encode(e.title))))
    if e.instance is not None:
        extras.append(c.Extra(dialect=NAME, path=join_path(at, "instance"), value=Raw(_ENC.encode(e.instance))))
    return p if stated is None else msgspec.structs.replace(p, type=stated)


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


def _read_success(w: Envelope, extras: list[c.Extra], residue: Raw | None) -> c.Envelope:
    """A success document (a 2xx/3xx status): payload, request id, warnings; the RFC 9457
    members that say more than envglot's ``about:blank``/``OK``/``200`` are kept as extras."""
    for key in _PROBLEM_MEMBERS:
        value = getattr(w, key)
        if value is not None and value is not ABSENT:
            raise ParseError(
                f"a success (status {w.status}) carries the problem member {key!r}; a problem's status is 400-599",
                path=f"$.{key}",
                dialect=NAME,
            )
    if w.type is not None and w.type != ABOUT_BLANK:  # absent: about:blank (RFC 9457 §3.1.1)
        _keep(extras, "$.type", w.type)
    if w.title is not None and w.title != SUCCESS_TITLE:
        _keep(extras, "$.title", w.title)
    if w.status != SUCCESS_STATUS:
        _keep(extras, "$.status", w.status)
    for key in ("detail", "instance"):
        if getattr(w, key) is not None:
            _keep(extras, f"$.{key}", getattr(w, key))
    return c.Envelope(
        ok=True,
        payload=opt(w.data),
        request_id=w.request_id,
        warnings=_warnings(w.warnings),
        extras=tuple(extras),
        residue=residue,
    )


def _warnings(messages: list[str] | None) -> tuple[c.Notice, ...]:
    return tuple(c.Notice(message=m) for m in messages) if messages else ()


def read(buf: bytes | memoryview | str, ctx: Context) -> c.Envelope:
    """Read a problem details document into the canonical model (``status`` is the outcome)."""
    w, found, residue = _DEC.decode(buf)
    extras = list(found)
    if w.warnings == []:
        _keep(extras, "$.warnings", [])
    if _outcome(w.status, "$"):
        return _read_success(w, extras, residue)
    problems = [_read_entry(w, "$", ctx, extras)]
    if w.errors is not None:
        if not w.errors:
            extras.append(c.Extra(dialect=NAME, path="$.errors", value=Raw(b"[]")))
        problems += [_read_entry(e, f"$.errors[{i}]", ctx, extras, problems[0]) for i, e in enumerate(w.errors)]
    return c.Envelope(
        ok=False,
        payload=opt(w.data),
        problems=tuple(problems),
        request_id=w.request_id,
        warnings=_warnings(w.warnings),
        extras=tuple(extras),
        residue=residue,
    )


# --- writing -----------------------------------------------------------------------------


def _fields(p: c.Problem, ctx: Context, dmap: DialectMap, i: int) -> dict[str, Any]:
    """The members of one problem details object for ``p`` (the ``i``-th problem)."""
    m = ctx.mappings
    code = write_code(p, dmap, ctx, i)
    own_type = p.type if p.domain == NAME and p.code == code else None
    if p.type is not None and own_type is None and ctx.report.collecting:
        src = m.dialects.get(p.domain) if p.domain is not None else None
        plan = src.plan(p.code) if src is not None and p.code is not None else None
        if plan is None or plan.word != p.type:  # a type the source's code implies is not lost
            ctx.dropped("problem.type", NAME, i, f"{p.domain or 'source'} error type {quoted(p.type)}")
    return {
        "type": own_type if own_type is not None else _type(code, dmap),
        "title": _title(code, p.category, m),
        "status": _status(p, code, m),
        "detail": p.message,
        "code": None if _STATUS_CODE(code) else code,
        "retryable": p.retryable,
        "retry_after_ms": count_for(p.retry_after_ms, ctx, "problem.retry_after_ms", NAME),
        "details": raw_or_absent(p.details),
    }


_INHERITED = ("type", "title", "status", "code", "retryable")
"""Members an ``errors`` entry leaves out when they equal the document's (read back from it)."""


def _write_success(env: c.Envelope, ctx: Context) -> bytes:
    """A success: ``about:blank``, ``OK``, 200 and the payload as ``data`` (envglot's convention)."""
    if env.problems and ctx.report.collecting:
        ctx.report.add(
            Kind.FIELD_DROPPED,
            ctx.path("problems"),
            f"a success's {len(env.problems)} error(s) have no place in a {NAME} success (status 200)",
            NAME,
        )
    return _ENC.encode(
        Envelope(
            type=ABOUT_BLANK,
            title=SUCCESS_TITLE,
            status=SUCCESS_STATUS,
            request_id=env.request_id,
            data=raw_or_absent(env.payload),
            warnings=[w.message for w in env.warnings] or None,
        )
    )


def write(env: c.Envelope, ctx: Context) -> bytes:
    """Write a failure as a problem details document, a success as a status-200 document."""
    dmap = ctx.mappings[NAME]
    report_losses(env, dmap, ctx)
    if env.ok:
        return _write_success(env, ctx)
    problems = env.problems or (missing_problem(env.summary, ctx, dmap),)
    top = _fields(problems[0], ctx, dmap, 0)
    rest = []
    for i, p in enumerate(problems[1:], 1):
        entry = _fields(p, ctx, dmap, i)
        if all(entry[k] == top[k] for k in _INHERITED):  # of the document's type: say it once
            entry.update(dict.fromkeys(_INHERITED))
        rest.append(Entry(**entry))
    return _ENC.encode(
        Envelope(
            **top,
            request_id=env.request_id,
            data=raw_or_absent(env.payload),
            warnings=[w.message for w in env.warnings] or None,
            errors=rest or None,
        )
    )


# --- contract ----------------------------------------------------------------------------


def _entry_contract(d: dict[str, Any], at: str, c: Checker) -> None:
    for key in ("type", "title", "detail", "instance", "code"):
        c.optional(d, key, at, "string")
    status = c.optional(d, "status", at, "integer")
    if isinstance(status, int) and not (200 <= status <= 599 if at == "$" else 400 <= status <= 599):
        what = "200-399 (a success) or 400-599 (a problem)" if at == "$" else "400-599 (a problem)"
        c.add(join_path(at, "status"), f"status is an HTTP status {what}, got {status}")
    c.optional(d, "retryable", at, "boolean")
    c.non_negative(d, "retry_after_ms", at, "integer", required=False)


def contract(d: dict[str, Any], c: Checker, m: Mappings) -> None:
    """Every way ``d`` breaks RFC 9457 (as far as JSON can tell) or envglot's extension members."""
    _entry_contract(d, "$", c)
    c.optional(d, "request_id", "$", "string")
    c.strings(d, "warnings", "$")
    status = d.get("status")
    if isinstance(status, int) and not isinstance(status, bool) and 200 <= status <= 399:
        for key in _PROBLEM_MEMBERS:
            if d.get(key) is not None:
                c.add(f"$.{key}", f"a success (status {status}) carries no problem member; a problem is 400-599")
        return
    for at, entry in c.objects(d, "errors", "$", required=False):
        _entry_contract(entry, at, c)


# --- detection and the class -------------------------------------------------------------


def _probe(f: Facts) -> str | None:
    """A string ``type`` and an integer ``status`` 200-599 (after every other dialect's probe)."""
    status = f.raw("status")
    if status is None or _DETECTED_STATUS(bytes(status)) is None:
        return None
    return "type" if f.starts("type", b'"') else None


_TOP = msgspec.json.Decoder(dict[str, Raw])


class ProblemJson(Dialect):
    """RFC 9457 problem details."""

    name = NAME
    description = (
        "RFC 9457 application/problem+json: type/title/status/detail/instance + code, errors[]; "
        "a success is status 200 with data"
    )
    aliases = ("problem+json", "rfc9457")
    shape = SHAPE
    native_indent = -1  # Jackson (Spring ProblemDetail), FastAPI JSONResponse: compact
    wire = Envelope
    probes = (
        Probe(
            120,
            _probe,
            "a string `type` and an integer `status` 200-599 (a success below 400, a problem from 400)",
        ),
    )
    outcome_key = "status"
    example_code = "example_not_ready"
    read = staticmethod(read)
    write = staticmethod(write)
    contract = staticmethod(contract)

    def failed(self, doc: bytes) -> bool:
        """``status`` 400-599, or none (a problem details document): a failure (MCP ``isError``);
        200-399 a success; any other status a :class:`ParseError`."""
        try:
            status = _TOP.decode(doc).get("status")
            value = None if status is None else _INT.decode(status)
        except msgspec.MsgspecError as exc:
            raise ParseError(f"the envelope's outcome cannot be read: {exc}", path="$.status") from None
        return not _outcome(value, "$")
