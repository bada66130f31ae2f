"""google-rpc (Google's JSON error model, AIP-193: ``google.rpc.Status`` over HTTP/JSON).

Over 500 lines: one dialect's whole wire format, and each of AIP-193's typed details has a rule.

A failure is ``{"error": {"code": 404, "message": "...", "status": "NOT_FOUND", "details":
[...]}}``: ``status`` is a ``google.rpc.Code`` name (the canonical category, by table),
``code`` its HTTP status, ``details`` typed messages (``"@type"``). A success is the resource
itself: any JSON object that is not a failure. A failure is a document whose only member
(besides the preserve slot) is an ``error`` object; an ``error`` member beside others is part
of a resource (a long-running Operation's ``error``). Detection recognizes failures only (a
success has no marker); read a success with ``from_="google-rpc"``.

``details``: a first ``ErrorInfo`` whose ``reason`` is not the status name gives the native
code (its ``domain``, ``metadata`` are kept for google-rpc, reported elsewhere); a
``RetryInfo`` right after it (or first) gives the retry delay when it is whole milliseconds;
every other entry is the problem's ``details`` (a lone ``google.protobuf.Value`` entry is the
value it wraps: how another dialect's details are written). Decisions:
``docs/dialects/google-rpc.md``.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Annotated, Any

import msgspec
from msgspec import Raw, Struct

from .. import canonical as c
from ..checker import Checker, Rule
from ..codes import Choice, FailurePlan, WireFailure, missing_problem, read_planned, write_plan
from ..context import Context
from ..detect import JSONRPC, MCP, classify
from ..diagnostics import Kind
from ..dialect import Dialect, get_dialect, name_of, shape_of
from ..errors import EnvglotError, ParseError
from ..excerpt import quoted
from ..fields import Failure, Let, Move, Reading, Writing
from ..limits import repeated_member
from ..mappings import CodePlan, DialectMap, Mappings
from ..residue import parse_path
from ..wire import (
    RAW_EMPTY_OBJECT,
    RAW_NULL,
    WireDecoder,
    count_for,
    drop_success_problems,
    object_payload,
    unwrap_payload,
    wrap_payload,
)

__all__ = ["ERROR_INFO", "NAME", "READING", "RETRY_INFO", "WRITING", "FailureDoc", "Status"]

NAME = name_of(__name__)
SHAPE = shape_of(NAME)
TYPE_PREFIX = "type.googleapis.com/"
ERROR_INFO = TYPE_PREFIX + "google.rpc.ErrorInfo"
RETRY_INFO = TYPE_PREFIX + "google.rpc.RetryInfo"
RETRYABLE_KEY = "retryable"
"""The ErrorInfo ``metadata`` key that carries a ``retryable`` the status does not imply."""
VALUE = TYPE_PREFIX + "google.protobuf.Value"
"""The ``details`` entry that carries another dialect's details (any JSON value)."""
_DURATION = re.compile(r"(0|[1-9][0-9]{0,11})(?:\.([0-9]{1,9}))?s").fullmatch
"""A ``google.protobuf.Duration`` in JSON: seconds with up to 9 fractional digits, then ``s``."""
MAX_SECONDS = 315_576_000_000
"""A ``google.protobuf.Duration``'s largest number of seconds (10,000 years)."""


class Status(Struct, forbid_unknown_fields=True, omit_defaults=True):
    """``google.rpc.Status`` as AIP-193's JSON: the ``error`` member of a failure."""

    code: Annotated[int, Rule(ge=100)]
    message: str | None = None
    status: str | None = None
    details: list[dict[str, Any]] | None = None


class FailureDoc(Struct, forbid_unknown_fields=True):
    """A failure: the ``error`` member alone."""

    error: Status


class Document(Struct):
    """What ``envglot schema`` prints: any object; an ``error`` member is a failure's Status."""

    error: Status | None = None


class Parsed(Struct):
    """What the decoder read: a failure's Status, or a success's resource (the preserve slot set aside)."""

    ok: bool
    error: Status | None = None
    payload: Raw | None = None


_RAW_DICT = msgspec.json.Decoder(dict[str, Raw])
_ENC = msgspec.json.Encoder()
_RESIDUE_KEY = str(parse_path(SHAPE.residue)[0])


def _is_failure(top: dict[str, Raw]) -> bool:
    """An ``error`` object and nothing else (besides the preserve slot)."""
    err = top.get("error")
    return err is not None and memoryview(err)[:1] == b"{" and top.keys() <= {"error", _RESIDUE_KEY}


def _wrapped(value: Raw) -> bool:
    """A payload the writer wraps as ``{"value": ...}`` (the reader unwraps it): not an object, or
    an object that would not read back as this resource: one that reads as a failure here,
    holds the preserve slot, repeats ``error`` (an outcome member a parser could read either
    way) or has an ``error`` that is no Status (the schema's ``error``), or one detection takes
    for a transport wrapper or for another dialect's failure (a forced source's success yields
    to those: the failure wins)."""
    if memoryview(value)[:1] != b"{":
        return True
    top = _RAW_DICT.decode(value)
    if _is_failure(top) or _RESIDUE_KEY in top:
        return True
    if "error" in top and (repeated_member(bytes(value), "error") or not _is_status(top["error"])):
        return True
    try:
        det = classify(value)
        return det.dialect in (MCP, JSONRPC) or (
            det.evidence is not None and det.dialect != NAME and get_dialect(det.dialect).failed(bytes(value))
        )
    except EnvglotError:  # another dialect's reading of it is refused: wrapped, it reads as it is
        return True


@cache
def _status_decoder() -> msgspec.json.Decoder[Status | None]:
    """The decoder of a ``Status`` (or ``null``), built on first use (not at import)."""
    return msgspec.json.Decoder(Status | None)


def _is_status(value: Raw) -> bool:
    """``value`` is what the schema allows as ``error``: a Status (or ``null``)."""
    try:
        _status_decoder().decode(value)
    except msgspec.MsgspecError:
        return False
    return True


class _Decoder:
    """``decode(buf) -> (Parsed, extras, residue)``: a failure through its wire Struct (unknown
    members of ``error`` kept as extras), a success as the resource."""

    __slots__ = ("_failure",)

    def __init__(self) -> None:
        self._failure = WireDecoder(FailureDoc, NAME, SHAPE.residue)

    def decode(self, buf: bytes | memoryview | str) -> tuple[Parsed, tuple[c.Extra, ...], Raw | None]:
        try:
            top = _RAW_DICT.decode(buf)
        except msgspec.ValidationError:
            raise ParseError(f"a {NAME} document must be a JSON object", path="$", dialect=NAME) from None
        except msgspec.DecodeError as exc:
            raise ParseError(f"invalid JSON: {exc}", path="$", dialect=NAME) from None
        if _is_failure(top):
            w, extras, residue = self._failure.decode(buf)
            return Parsed(ok=False, error=w.error), extras, residue
        residue = top.pop(_RESIDUE_KEY, None)
        if top.keys() == {"value"} and _wrapped(top["value"]):
            return Parsed(ok=True, payload=top["value"]), (), residue
        if residue is not None:
            return Parsed(ok=True, payload=Raw(_ENC.encode(top))), (), residue
        return Parsed(ok=True, payload=Raw(buf.encode() if isinstance(buf, str) else bytes(buf))), (), None


_DEC = _Decoder()


# --- durations and details (one rule for the reader and the writer) ----------------------------


def duration_ms(text: str) -> int | None:
    """A Duration string as whole milliseconds (``"1.5s"`` -> 1500); ``None`` when it is not one
    or has a finer part (it then stays a detail, not a retry delay)."""
    m = _DURATION(text)
    if m is None:
        return None
    frac = (m.group(2) or "").ljust(9, "0")
    if frac[3:].strip("0") or int(m.group(1)) > MAX_SECONDS:
        return None
    return int(m.group(1)) * 1000 + int(frac[:3])


def duration(ms: int) -> str:
    """Whole milliseconds as a Duration string, as proto3 JSON prints it (0 or 3 fractional digits)."""
    s, frac = divmod(ms, 1000)
    return f"{s}s" if frac == 0 else f"{s}.{frac:03d}s"


class Split(Struct, frozen=True):
    """A failure's ``details`` taken apart: what the canonical problem carries, and the rest."""

    reason: str | None = None
    info_at: int | None = None
    """Index of the ErrorInfo that gave ``reason``."""
    retryable: bool | None = None
    """A ``retryable`` the ErrorInfo's ``metadata`` states against what its status implies."""
    retry_ms: int | None = None
    retry_at: int | None = None
    rest: Raw | None = None
    """The other entries (a lone ``Value`` entry: the value it wraps), for ``problem.details``."""


_NO_SPLIT = Split()


def _split(w: Parsed, status: CodePlan | None, ctx: Context) -> Split:
    """The mapped entries are positional, so the writer puts them back where they were: an
    ErrorInfo first whose ``reason`` (a string) is not the status name or whose ``metadata``
    states a ``retryable`` the status does not imply, then a RetryInfo whose ``retryDelay`` is
    whole milliseconds; anything else stays in ``details`` as it was."""
    err = w.error
    if err is None or not err.details:
        return _NO_SPLIT
    details = err.details
    i, reason, info_at, retryable = 0, None, None, None
    first = details[0]
    if first.get("@type") == ERROR_INFO and isinstance(first.get("reason"), str):
        stated = _stated_retryable(first)
        if stated is not None and stated == _implied_retryable(status, err.code, ctx.mappings):
            stated = None  # the status says it already: the metadata stays as it is
        if first["reason"] != err.status or stated is not None:
            reason, info_at, retryable, i = first["reason"], 0, stated, 1
    retry_ms, retry_at = None, None
    if i < len(details) and details[i].get("@type") == RETRY_INFO and details[i].keys() == {"@type", "retryDelay"}:
        delay = details[i]["retryDelay"]
        retry_ms = duration_ms(delay) if isinstance(delay, str) else None
        if retry_ms is not None:
            retry_at, i = i, i + 1
    rest = details[i:]
    if len(rest) == 1 and rest[0].keys() == {"@type", "value"} and rest[0]["@type"] == VALUE:
        rest_raw: Raw | None = Raw(_ENC.encode(rest[0]["value"]))
    else:
        rest_raw = Raw(_ENC.encode(rest)) if rest else None
    return Split(reason, info_at, retryable, retry_ms, retry_at, rest_raw)


def _stated_retryable(info: dict[str, Any]) -> bool | None:
    """An ErrorInfo's ``metadata.retryable`` (``"true"``/``"false"``: metadata values are strings)."""
    meta = info.get("metadata")
    flag = meta.get(RETRYABLE_KEY) if isinstance(meta, dict) else None
    return {"true": True, "false": False}.get(flag) if isinstance(flag, str) else None


def _implied_retryable(status: CodePlan | None, code: int, m: Mappings) -> bool:
    """What a status (its plan; without a known one, the HTTP code's category) says of retrying:
    its row's ``retryable``, else its category's default (``canonical.toml``)."""
    return status.retryable if status is not None else m.default_retryable(_category_of_http(code, m))


def _category_of_http(code: int, m: Mappings) -> str:
    """A failure without ``status``: the first category (canonical order) whose HTTP status is ``code``."""
    return next((name for name, cat in m.categories.items() if cat.http == code), m.unknown_category)


def _implied_http(status: str | None, category: str, dmap: DialectMap, m: Mappings) -> int:
    """The HTTP ``code`` a status name implies: its row's ``http``, else its category's."""
    row = dmap.codes.get(status) if status is not None else None
    return row.http if row is not None and row.http is not None else m.http(category)


# --- reading -----------------------------------------------------------------------------


def _status(w: Parsed, dmap: DialectMap) -> CodePlan | None:
    """What a failure's ``status`` implies (the read side's one lookup); ``None``: no status, or
    no google.rpc.Code name."""
    err = w.error
    return dmap.plan(err.status) if err is not None and err.status is not None else None


def _problems(
    w: Parsed, split: Split, status: CodePlan | None, ctx: Context, dmap: DialectMap
) -> tuple[c.Problem, ...]:
    """A failure's one problem: category from ``status`` (else from the HTTP ``code``), code
    from the ErrorInfo's ``reason`` (else the status name)."""
    err = w.error
    if err is None:
        return ()
    fields: dict[str, Any] = {"message": err.message, "retry_after_ms": split.retry_ms, "details": split.rest}
    retryable = split.retryable
    if retryable is None:  # what the status implies, stated: a google.rpc.Code says whether to retry
        retryable = _implied_retryable(status, err.code, ctx.mappings)
    if status is not None:
        p = read_planned(dmap, status.code, status, ctx, "$.error.status", retryable, **fields)
        return (p if split.reason is None else msgspec.structs.replace(p, code=split.reason),)
    category = _category_of_http(err.code, ctx.mappings)
    if err.status is not None and ctx.report.collecting:  # kept as stated: an extra (:func:`_extras`)
        ctx.report.add(
            Kind.CODE_UNKNOWN,
            "$.error.status",
            NAME,
            member="status",
            value=quoted(err.status),
            category=repr(category),
            by=f"its HTTP code {err.code}",
        )
    return (c.Problem(category=category, code=split.reason, domain=NAME, retryable=retryable, **fields),)


def _wire_failure(w: Parsed, split: Split, status: CodePlan | None, ctx: Context) -> WireFailure | None:
    """The fused form of :func:`_problems` (``Reading.failure``): a failure whose ``status`` is a
    known google.rpc.Code name and whose ErrorInfo names no other code; ``None`` otherwise."""
    err = w.error
    if err is None or status is None or split.reason is not None:
        return None
    retryable = split.retryable
    if retryable is None:
        retryable = _implied_retryable(status, err.code, ctx.mappings)
    return WireFailure(status.code, retryable, message=err.message, retry_after_ms=split.retry_ms, details=split.rest)


def _keep(out: list[c.Extra], path: str, value: object) -> None:
    out.append(c.Extra(dialect=NAME, path=path, value=Raw(_ENC.encode(value))))


def _extras(
    w: Parsed,
    split: Split,
    status: CodePlan | None,
    extras: tuple[c.Extra, ...],
    ctx: Context,
) -> tuple[c.Extra, ...]:
    """The decoder's unknown members, then what a failure states beyond its problem: an HTTP
    ``code`` other than its status implies, the ErrorInfo's other members (``domain``,
    ``metadata``), a retry delay spelled otherwise than the writer spells it, an empty ``details``."""
    err = w.error
    if err is None:
        return extras
    out = list(extras)
    m = ctx.mappings
    if err.status is not None and status is None:
        _keep(out, "$.error.status", err.status)
    if err.code != (status.http if status is not None else m.http(_category_of_http(err.code, m))):
        _keep(out, "$.error.code", err.code)
    if err.details == []:
        _keep(out, "$.error.details", [])
    if split.info_at is not None and err.details is not None:
        at = f"$.error.details[{split.info_at}]"
        for key, value in err.details[split.info_at].items():
            if key in ("@type", "reason"):
                continue
            if key == "metadata" and split.retryable is not None:  # the writer writes the flag: keep the rest
                for k, v in value.items():
                    if k != RETRYABLE_KEY:
                        _keep(out, f"{at}.metadata.{k}", v)
            else:
                _keep(out, f"{at}.{key}", value)
    if split.retry_at is not None and err.details is not None and split.retry_ms is not None:
        stated = err.details[split.retry_at]["retryDelay"]
        if stated != duration(split.retry_ms):
            _keep(out, f"$.error.details[{split.retry_at}].retryDelay", stated)
    return tuple(out)


READING = Reading(
    _DEC,
    Move("ok", "w.ok"),
    Let("status", _status, pure=True),
    Let("split", _split, pure=True),
    Let("problems", _problems),
    Move("payload", "w.payload"),
    Let("extras", _extras, pure=True),
    failure=_wire_failure,
)


# --- writing -----------------------------------------------------------------------------


def _problem(
    ok: bool, problems: tuple[c.Problem, ...], summary: str | None, ctx: Context, dmap: DialectMap
) -> c.Problem | None:
    """A failure's problem (one synthesized when it names none); none for a success, whose
    problems are reported as dropped."""
    if ok:
        drop_success_problems(problems, ctx, NAME, "the resource")
        return None
    return problems[0] if problems else missing_problem(summary, ctx, dmap)


def _details(
    retryable: bool | None, retry_after_ms: int | None, details: Raw | None, code: str, status: CodePlan, ctx: Context
) -> list[dict[str, Any]] | None:
    """ErrorInfo (a code other than the status name, or a ``retryable`` the status does not imply,
    in its ``metadata``), RetryInfo, then the problem's details: an array of typed entries as it is
    (also inside the ``{"value": ...}`` other dialects wrap an array in), any other value in one
    ``Value`` entry."""
    out: list[dict[str, Any]] = []
    carry = retryable is not None and retryable != status.retryable
    if code != status.code or carry:
        info: dict[str, Any] = {"@type": ERROR_INFO, "reason": code}
        if carry:
            info["metadata"] = {RETRYABLE_KEY: "true" if retryable else "false"}
        out.append(info)
    delay = count_for(retry_after_ms, ctx, "problem.retry_after_ms", NAME)
    if delay is not None and delay // 1000 > MAX_SECONDS:
        ctx.dropped("problem.retry_after_ms", NAME, 0, f"a retry delay of {delay} ms (beyond a Duration's range)")
        delay = None
    if delay is not None:
        out.append({"@type": RETRY_INFO, "retryDelay": duration(delay)})
    if details is not None:
        try:
            value = msgspec.json.decode(unwrap_payload(details) or details)
        except msgspec.ValidationError:  # a number beyond a double (-1e400): the reader refuses such details
            ctx.dropped("problem.details", NAME, 0, "details holding a number beyond a double's range")
            return out or None
        typed = isinstance(value, list) and all(isinstance(e, dict) and isinstance(e.get("@type"), str) for e in value)
        out += value if typed else [{"@type": VALUE, "value": value}]
    return out or None


def _error(p: c.Problem | None, ctx: Context, dmap: DialectMap) -> Status | None:
    """The failure's Status: ``status`` by the category (or the code's own row), ``code`` the HTTP
    status it implies, the code in an ErrorInfo when it is not the status name."""
    if p is None:
        return None
    return _written(p.retryable, write_plan(p, dmap, ctx, 0), p.message, p.retry_after_ms, p.details, ctx)


def _planned_error(plan: FailurePlan, failure: WireFailure, ctx: Context) -> Status:
    """``error`` of a failure written from its code's plan (:class:`~envglot.fields.Failure`):
    what :func:`_problem` and :func:`_error` write, without a problem of its own."""
    f = failure
    return _written(plan.problem.retryable, plan.choice, f.message, f.retry_after_ms, f.details, ctx)


def _written(
    retryable: bool | None,
    ch: Choice,
    message: str | None,
    retry_after_ms: int | None,
    details: Raw | None,
    ctx: Context,
) -> Status:
    """The Status of a problem written as ``ch`` says (its own fields given apart)."""
    status = ch.table_plan  # the code's own, or for a reason unknown here its category's status
    return Status(
        code=status.http,
        message=message,
        status=status.code,
        details=_details(retryable, retry_after_ms, details, ch.code, status, ctx),
    )


def _out(ok: bool, payload: Raw | None, error: Status | None, ctx: Context) -> FailureDoc | Raw:
    """A failure's ``{"error": ...}`` (a payload has no place in it: reported), or the resource:
    a non-object wrapped as ``{"value": ...}``, and so is an object that would read back as a
    failure or holds the preserve slot (reported; the reader unwraps both)."""
    if error is not None:
        if payload is not None and payload != RAW_NULL and payload != RAW_EMPTY_OBJECT:
            ctx.dropped("payload", NAME, what="a failure's payload")
        return FailureDoc(error=error)
    doc = object_payload(payload, ok, ctx, NAME)
    if doc != RAW_EMPTY_OBJECT and memoryview(doc)[:1] == b"{" and _wrapped(doc):
        ctx.report.add(
            Kind.PAYLOAD_WRAPPED,
            ctx.path("payload"),
            NAME,
            value="a resource that would not read back as itself (a failure here or in another dialect, a "
            "transport wrapper, the preserve slot, a repeated error)",
        )
        return wrap_payload(doc)
    return doc


WRITING = Writing(
    Let("p", _problem),
    Let("error", _error),
    Let("out", _out),
    failure=Failure(_planned_error, replaces=("p", "error"), gives=("error",)),
)


# --- contract ----------------------------------------------------------------------------


def invariants(d: dict[str, Any], c: Checker, m: Mappings) -> None:
    """A failure's rules across fields: ``status`` a google.rpc.Code name, ``code`` the HTTP status
    it implies, every ``details`` entry typed, ErrorInfo and RetryInfo well formed."""
    err = d.get("error")
    if not isinstance(err, dict):
        return
    dmap = m[NAME]
    status = err.get("status")
    if isinstance(status, str):
        if status not in dmap.codes:
            c.add("$.error.status", f"status is a google.rpc.Code name (NOT_FOUND, ...), got {status!r}")
        elif isinstance(err.get("code"), int) and err["code"] != _implied_http(
            status, dmap.codes[status].category, dmap, m
        ):
            c.add("$.error.code", f"code is the HTTP status {status} maps to, got {err['code']}")
    details = err.get("details")
    for i, e in enumerate(details if isinstance(details, list) else ()):
        at = f"$.error.details[{i}]"
        if not isinstance(e, dict) or not isinstance(e.get("@type"), str):
            c.add(at, "a details entry is an object with a string @type")
            continue
        if e["@type"] == ERROR_INFO and not isinstance(e.get("reason"), str):
            c.add(f"{at}.reason", "ErrorInfo.reason is a string")
        if e["@type"] == RETRY_INFO and not (isinstance(e.get("retryDelay"), str) and _DURATION(e["retryDelay"])):
            c.add(f"{at}.retryDelay", 'RetryInfo.retryDelay is a Duration string ("1.5s")')


# --- detection and the hooks -------------------------------------------------------------


def contract(d: dict[str, Any], c: Checker, m: Mappings) -> None:
    """A failure against :class:`FailureDoc` and :func:`invariants`; a success (any other
    object) has no contract."""
    if isinstance(d.get("error"), dict) and d.keys() <= {"error", _RESIDUE_KEY}:
        c.wire(d, FailureDoc)
        invariants(d, c, m)


def failed(doc: bytes) -> bool:
    """A failure document (MCP ``isError``); any other object is a success."""
    return _is_failure(Dialect.top_members(doc))


def schema_type() -> type[Struct]:
    """Any object; an ``error`` member is a failure's Status."""
    return Document


WIRE = FailureDoc
