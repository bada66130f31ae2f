"""code-graph (Ouroboros AI Code Graph): camelCase ``{success, data{tool, version, requestId, ...}}``.

Over 500 lines: one dialect's whole wire format, and code-graph synthesizes the most fields (ids, token counts).
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Annotated, Any

import msgspec
from msgspec import Raw, Struct

from .. import canonical as c
from ..checker import Checker, Rule, type_name
from ..codes import (
    Choice,
    FailurePlan,
    WireFailure,
    carried_meaning,
    carries_meaning,
    meaning_to_carry,
    missing_problem,
    read_problem,
    with_carried,
    write_plan,
    written_message,
)
from ..context import Context
from ..diagnostics import Kind
from ..dialect import name_of, shape_of
from ..errors import ParseError
from ..fields import Build, Const, Failure, Let, Move, Reading, When, Writing, common
from ..mappings import DialectMap, Mappings
from ..wire import (
    ABSENT,
    RAW_EMPTY_OBJECT,
    RAW_NULL,
    WireDecoder,
    count_for,
    document_key,
    error_details,
    object_or_wrapped,
    raw_is_object,
    timestamp_for,
)

__all__ = [
    "NAME",
    "READING",
    "WRITING",
    "Data",
    "Envelope",
    "Meta",
    "Page",
    "ResultError",
    "Suggestion",
    "Workspace",
    "approx_tokens",
    "counted_tokens",
    "seal",
]

NAME = name_of(__name__)
SHAPE = shape_of(NAME)
VERSION = "1.0"


class _Wire(Struct, forbid_unknown_fields=True, omit_defaults=True, rename="camel"):
    pass


class Workspace(_Wire):
    root: str
    repo_name: str
    rev: str | None = None


class Suggestion(_Wire):
    tool: str
    args: Annotated[Raw, Rule(kind="object")]
    reason: str | None = None


class Page(_Wire):
    has_more: bool
    cursor: str | None = None
    total: Annotated[int | None, Rule(ge=0)] = None


class Meta(_Wire):
    approx_tokens: Annotated[int, Rule(ge=0)]
    truncated: bool
    limits: Annotated[Raw, Rule(kind="object")]
    next_query_suggestion: list[Suggestion] | None = None
    page: Page | None = None


class Data(_Wire):
    tool: str
    version: Annotated[str, Rule(const=VERSION)]
    request_id: str
    generated_at: Annotated[str, Rule(timestamp="any")]
    workspace: Workspace
    result: Raw
    meta: Meta


class Envelope(_Wire):
    """The code-graph envelope; an error is ``data.result.error{code, message, details?}``."""

    success: bool
    data: Data


class ResultError(Struct):
    """``data.result.error`` of a failure, read member by member (the others are kept as the
    problem's ``extra``)."""

    code: str
    message: str
    details: Annotated[Raw, Rule(kind="object", nullable=False)] = ABSENT


_DEC = WireDecoder(Envelope, NAME, SHAPE.residue, typed=frozenset({"data"}))  # its payload parsed once
_ENC = msgspec.json.Encoder()
_RAW_DICT = msgspec.json.Decoder(dict[str, Raw])
_STR = msgspec.json.Decoder(str)
_TOKENS_AT = b'"meta":{"approxTokens":0'


def approx_tokens(compact: bytes) -> int:
    """``Math.ceil(JSON.stringify(envelope).length / 4)``: UTF-16 length of the compact JSON.

    Counted as ``JSON.stringify`` spells the envelope: an escape it would not write
    (``\\u00e9``, ``\\/``) counts as the one character it stands for, so a payload carried
    byte for byte from a source that escapes non-ASCII counts as the emitter's own would.
    """
    return math.ceil(_stringified_length(compact) / 4)


def _stringified_length(compact: bytes) -> int:
    """The UTF-16 length of ``compact`` as ``JSON.stringify`` spells it (:func:`approx_tokens`)."""
    # find: ``in`` raises and clears a TypeError first; one byte is a fast scan, two are not
    if compact.find(b"\\") >= 0 and (compact.find(b"\\u") >= 0 or compact.find(b"\\/") >= 0):
        compact = _STRINGIFY_ESCAPES.sub(_as_stringified, compact)
    return _utf16_length(compact)


def _utf16_length(text: bytes) -> int:
    """The UTF-16 length of ``text`` (UTF-8): its code points when none is beyond the BMP (no
    four-byte sequence, led by F0-F4: a fast scan for each lead), without building the UTF-16 text."""
    if text.isascii():
        return len(text)
    find = text.find  # ``in`` raises and clears a TypeError first; one byte is a fast scan; no generator
    if find(b"\xf0") < 0 and find(b"\xf1") < 0 and find(b"\xf2") < 0 and find(b"\xf3") < 0 and find(b"\xf4") < 0:
        return len(text.decode("utf-8"))
    return len(text.decode("utf-8").encode("utf-16-le")) // 2


_STRINGIFY_ESCAPES = re.compile(rb"\\(?:u([0-9a-fA-F]{4})|/|.)", re.S)
_SHORT = frozenset((0x08, 0x09, 0x0A, 0x0C, 0x0D))


def _as_stringified(m: re.Match[bytes]) -> bytes:
    """One escape as ``JSON.stringify`` writes it, or a stand-in of the same UTF-16 length."""
    if m.group(1) is None:
        return b"/" if m.group(0) == b"\\/" else m.group(0)
    cp = int(m.group(1), 16)
    if cp < 0x20:
        return b"\\n" if cp in _SHORT else m.group(0)
    return b"x"  # one UTF-16 unit (a surrogate half counts one, as in a pair)


def _str_field(d: dict[str, Raw], key: str, path: str, required: bool) -> str | None:
    raw = d.pop(key, None)
    if raw is None:
        if required:
            raise ParseError(f"missing required field {key!r}", path=path.rsplit(".", 1)[0], dialect=NAME)
        return None
    try:
        return _STR.decode(raw)
    except msgspec.ValidationError:
        raise ParseError("expected a string", path=path, dialect=NAME) from None


# --- reading ---------------------------------------------------------------------------


@common(When("ok", "truthy"))
def _failure(ok: bool, data: Data) -> tuple[dict[str, Raw], dict[str, Raw]] | None:
    """A failure's ``result`` split into its other members and its ``error`` object's members
    (``None`` on success); a result or error that is no object is a parse error."""
    if ok:
        return None
    if not raw_is_object(data.result):
        raise ParseError("an error result must be an object with an `error` member", path="$.data.result", dialect=NAME)
    res = _RAW_DICT.decode(data.result)
    err_raw = res.pop("error", None)
    if err_raw is None or not raw_is_object(err_raw):
        raise ParseError("missing error object", path="$.data.result.error", dialect=NAME)
    return res, _RAW_DICT.decode(err_raw)


@common(When("failure", "is", None), value=Const(()))
def _problems(
    failure: tuple[dict[str, Raw], dict[str, Raw]] | None, dmap: DialectMap, ctx: Context
) -> tuple[c.Problem, ...]:
    """The failure's one problem: ``code`` and ``message`` required, other members kept as ``extra``."""
    if failure is None:
        return ()
    err = failure[1]
    code = _str_field(err, "code", "$.data.result.error.code", True)
    message = _str_field(err, "message", "$.data.result.error.message", True)
    details = err.pop("details", None)
    p = read_problem(
        dmap,
        code,
        ctx,
        "$.data.result.error.code",
        message=message,
        details=details,
        extra=Raw(_ENC.encode(err)) if err else None,
    )
    return (carried_meaning(p, dmap, ctx),)


def _wire_failure(failure: tuple[dict[str, Raw], dict[str, Raw]] | None, dmap: DialectMap) -> WireFailure | None:
    """The fused form of :func:`_problems` (``Reading.failure``): a failure's error whose ``code``
    and ``message`` are strings and whose ``details`` carry no meaning; ``None`` otherwise."""
    if failure is None:
        return None
    err = failure[1]
    code, message, details = err.get("code"), err.get("message"), err.get("details")
    if code is None or message is None or carries_meaning(details, dmap):
        return None
    try:
        code_s, message_s = _STR.decode(code), _STR.decode(message)
    except msgspec.ValidationError:
        return None
    rest = {k: v for k, v in err.items() if k != "code" and k != "message" and k != "details"}
    return WireFailure(code_s, message=message_s, details=details, extra=Raw(_ENC.encode(rest)) if rest else None)


@common(When("failure", "is", None), value="data.result")
def _payload(data: Data, failure: tuple[dict[str, Raw], dict[str, Raw]] | None) -> Raw | None:
    """The result; a failure's is what its result holds besides ``error`` (none when nothing)."""
    if failure is None:
        return data.result
    res = failure[0]
    return Raw(_ENC.encode(res)) if res else None


def _read_workspace(data: Data) -> c.Workspace:
    ws = data.workspace
    return c.Workspace(root=ws.root, repo_name=ws.repo_name, rev=ws.rev)


def _fidelity(meta: Meta) -> c.Fidelity:
    return c.Fidelity(truncated=meta.truncated)


@common(When("meta.next_query_suggestion", "falsy"), value=Const(()))
def _next_steps(meta: Meta) -> tuple[c.NextStep, ...]:
    return tuple(
        c.NextStep(kind="query", tool=s.tool, args=s.args, reason=s.reason) for s in (meta.next_query_suggestion or ())
    )


@common(When("meta.page", "is", None))
def _read_pagination(meta: Meta) -> c.Pagination | None:
    pg = meta.page
    return None if pg is None else c.Pagination(cursor=pg.cursor, has_more=pg.has_more, total=pg.total)


def _version_extra(data: Data, extras: tuple[c.Extra, ...]) -> tuple[c.Extra, ...]:
    """A ``version`` other than the contract's is kept as an unknown field."""
    if data.version == VERSION:
        return extras
    return (*extras, c.Extra(dialect=NAME, path="$.data.version", value=Raw(_ENC.encode(data.version))))


READING = Reading(
    _DEC,
    Move("data", "w.data"),
    Move("meta", "data.meta"),
    Let("failure", _failure),
    Let("problems", _problems),
    Let("payload", _payload, pure=True),
    Let("workspace", _read_workspace, pure=True),
    Let("fidelity", _fidelity, pure=True),
    Let("next_steps", _next_steps, pure=True),
    Let("pagination", _read_pagination, pure=True),
    Let("extras", _version_extra, pure=True),
    derive=True,  # ok, tool, request_id, timestamp, token_estimate, limits: from [fields]
    failure=_wire_failure,
)


# --- writing ---------------------------------------------------------------------------


def _synth(ctx: Context, dmap: DialectMap, field: str, what: str, rule: str | None = None) -> str:
    return str(ctx.synth_value(dmap, field, what, rule))


@common(When("ok", "truthy"), When("payload", "is not", None), value="payload")
def _result(
    ok: bool,
    payload: Raw | None,
    problems: tuple[c.Problem, ...],
    summary: str | None,
    ctx: Context,
    dmap: DialectMap,
) -> Raw:
    """``data.result``: the payload (``null`` for none); a failure's is ``{...payload, error}``."""
    if ok:
        return payload if payload is not None else RAW_NULL
    p = problems[0] if problems else missing_problem(summary, ctx, dmap)
    return _failure_result(p, write_plan(p, dmap, ctx, 0), p.extra, p.message, p.details, payload, summary, ctx, dmap)


def _planned_result(
    plan: FailurePlan,
    failure: WireFailure,
    payload: Raw | None,
    summary: str | None,
    ctx: Context,
    dmap: DialectMap,
) -> tuple[tuple[str | None, str | None], Raw]:
    """``first`` and ``result`` of a failure written from its code's plan (:class:`~envglot.fields.Failure`):
    what :func:`_first` and :func:`_result` give, without a problem of its own."""
    f = failure
    result = _failure_result(
        plan.problem,
        plan.choice,
        f.extra,
        f.message,
        f.details,
        payload,
        summary,
        ctx,
        dmap,
        f.details_members,
        plan.carried,
    )
    return (f.code, f.message), result


def _failure_result(
    p: c.Problem,
    chosen: Choice,
    extra: Raw | None,
    message: str | None,
    details: Raw | None,
    payload: Raw | None,
    summary: str | None,
    ctx: Context,
    dmap: DialectMap,
    members: dict[str, Raw] | None = None,
    carried: dict[str, Raw] | None = None,
) -> Raw:
    """A failure's ``data.result``: ``p``'s code written as ``chosen`` says, its own fields given
    apart (a failure written from its plan has no problem of its own: ``p`` is then its code's row problem).
    ``members``: the top level of ``details`` where the reader decoded it
    (:attr:`~envglot.codes.WireFailure.details_members`); ``carried``: what
    :func:`~envglot.codes.carry_meaning` adds for ``p`` and ``chosen`` where a plan keeps it
    (:attr:`~envglot.codes.FailurePlan.carried`)."""
    err: dict[str, Raw] = _RAW_DICT.decode(extra) if extra is not None else {}
    code = _ENC.encode(chosen.code)
    said = _ENC.encode(written_message(message, summary, ctx, dmap, 0))
    shown = error_details(details, ctx, NAME)
    add = meaning_to_carry(p, chosen, dmap) if carried is None else carried
    details = with_carried(shown, add, members if shown is details else None)
    if not err:  # no other members: the object's bytes joined as the encoder writes them
        tail = b"}" if details is None else b',"details":' + details + b"}"
        written = b'{"code":' + code + b',"message":' + said + tail
    else:
        err["code"], err["message"] = Raw(code), Raw(said)
        if details is not None:
            err["details"] = details
        written = _ENC.encode(err)
    res: dict[str, Raw] = {}
    if payload is not None and payload != RAW_NULL and payload != RAW_EMPTY_OBJECT:
        if raw_is_object(payload):
            res = _RAW_DICT.decode(payload)
            if res.pop("error", None) is not None:
                ctx.report.add(
                    Kind.VALUE_COERCED,
                    ctx.failure_payload_path() + ".error",
                    NAME,
                    value='payload key "error"',
                    change="replaced by the error",
                )
        else:
            ctx.dropped("payload", NAME, what="a non-object payload of a failure")
    if not res:
        return Raw(b'{"error":' + written + b"}")
    res["error"] = Raw(written)
    return Raw(_ENC.encode(res))


def _truncated(fidelity: c.Fidelity | None) -> bool:
    if fidelity is None:
        return False
    return fidelity.truncated if fidelity.truncated is not None else fidelity.level not in (None, "full")


def _workspace(workspace: c.Workspace | None, ctx: Context, dmap: DialectMap) -> Workspace:
    """``workspace``: ``root`` and ``repoName`` required (synthesized, the name from the root)."""
    ws = workspace
    if ws is not None and ws.root is not None and ws.repo_name is not None:
        return Workspace(root=ws.root, repo_name=ws.repo_name, rev=ws.rev)
    root = ws.root if ws is not None and ws.root is not None else _synth(ctx, dmap, "workspace.root", "workspace.root")
    repo = (
        ws.repo_name
        if ws is not None and ws.repo_name is not None
        else _synth(
            ctx,
            dmap,
            "workspace.repo_name",
            "workspace.repoName",
            root.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1],
        )
    )
    return Workspace(root=root, repo_name=repo, rev=ws.rev if ws is not None else None)


def _suggestions(next_steps: tuple[c.NextStep, ...], ctx: Context) -> list[Suggestion] | None:
    """``meta.nextQuerySuggestion`` (``args`` an object: ``{}`` for none); ``None`` when empty.

    A suggestion is a call of a named tool: a step without a tool is left out (reported).
    """
    out: list[Suggestion] = []
    for i, s in enumerate(next_steps):
        if s.tool is None:
            if ctx.report.collecting:
                ctx.report.add(
                    Kind.FIELD_DROPPED,
                    ctx.step_path(next_steps, i),
                    NAME,
                    field=f"next step #{i + 1} ({s.kind})",
                    because="it names no tool, which a code-graph suggestion requires",
                )
            continue
        args = s.args
        out.append(
            Suggestion(
                tool=s.tool,
                args=RAW_EMPTY_OBJECT
                if args is None or args == RAW_NULL
                else object_or_wrapped(args, ctx, "next_step.args", NAME, i),
                reason=s.reason,
            )
        )
    return out or None


def _stamp(timestamp: str | None, ctx: Context, dmap: DialectMap) -> str | None:
    return timestamp_for(timestamp, ctx, dmap, "generatedAt", utc=False)


def _tool(tool: str | None, ctx: Context, dmap: DialectMap) -> str:
    return tool if tool is not None else _synth(ctx, dmap, "tool", "a tool name")


@common(When("problems", "falsy"))
def _first(problems: tuple[c.Problem, ...]) -> tuple[str | None, str | None] | None:
    """The first error's ``(code, message)`` a synthesized ``requestId`` hashes (``None``: none)."""
    return (problems[0].code, problems[0].message) if problems else None


@common(When("request_id", "is not", None), value="request_id")
def _data_request_id(
    request_id: str | None,
    tool: str | None,
    ok: bool,
    payload: Raw | None,
    first: tuple[str | None, str | None] | None,
    ctx: Context,
    dmap: DialectMap,
) -> str:
    if request_id is not None:
        return request_id
    return _synth(ctx, dmap, "request_id", "a requestId", document_key(tool, ok, payload, first))


def _generated_at(stamp: str | None, ctx: Context, dmap: DialectMap) -> str:
    return stamp if stamp is not None else _synth(ctx, dmap, "timestamp", "generatedAt")


@common(When("pagination", "is", None))
def _page(pagination: c.Pagination | None, ctx: Context, dmap: DialectMap) -> Page | None:
    """``meta.page``: ``hasMore`` is required (synthesized when the source does not say)."""
    pg = pagination
    if pg is None:
        return None
    has_more = (
        pg.has_more
        if pg.has_more is not None
        else ctx.synth_value(dmap, "pagination.has_more", "page.hasMore", _more(pg))
    )
    return Page(has_more=has_more, cursor=pg.cursor, total=count_for(pg.total, ctx, "pagination.total", NAME))  # type: ignore[arg-type]


def _more(pg: c.Pagination) -> bool:
    """``hasMore`` by rule: true with a cursor (it names the next page), else ``offset + limit <
    total`` when all three are known, else false."""
    if pg.cursor is not None:
        return True
    if pg.offset is not None and pg.limit is not None and pg.total is not None:
        return pg.offset + pg.limit < pg.total
    return False


def _limits(limits: Raw | None, ctx: Context, dmap: DialectMap) -> Raw:
    """``meta.limits``, an object: ``{}`` when the source has none (synthesized) or ``null``
    (coerced); any other non-object is wrapped (reported)."""
    if limits is None:
        return Raw(_ENC.encode(ctx.synth_value(dmap, "limits", "meta.limits", {})))
    if limits == RAW_NULL:
        ctx.report.add(Kind.VALUE_COERCED, ctx.path("limits"), NAME, value="null meta.limits", change="written as {}")
        return RAW_EMPTY_OBJECT
    return object_or_wrapped(limits, ctx, "limits", NAME)


def _count_tokens(
    doc: bytes,
    ctx: Context,
    stated_tokens: int | None,
    limits_object: Raw,
    suggestions: list[Suggestion] | None,
) -> bytes:
    """``approxTokens`` recomputed over the written envelope (a change reported), spliced in.

    The writer's ``"meta":{"approxTokens":0`` is the last one in the document but those the
    members written after it carry (``limits``, a suggestion's ``args``: objects the source
    sent, which may spell the same bytes): it is found by skipping as many from the end."""
    if not ctx.compact:  # approxTokens counts the minified envelope
        doc = msgspec.json.format(doc, indent=-1)
    length = _stringified_length(doc)
    tokens = math.ceil(length / 4)
    if stated_tokens is not None and stated_tokens != tokens:
        ctx.report.add(
            Kind.VALUE_COERCED,
            ctx.path("token_estimate"),
            NAME,
            value="approxTokens",
            change=f"recomputed as {tokens} (the source said {stated_tokens})",
        )
    i = doc.rfind(_TOKENS_AT)
    if suggestions or bytes(limits_object).find(b"approxTokens") >= 0:  # else _spelled_after gives 0
        for _ in range(_spelled_after(limits_object, suggestions, ctx.compact)):
            i = doc.rfind(_TOKENS_AT, 0, i)
    j = i + len(_TOKENS_AT) - 1
    mv = memoryview(doc)
    digits = str(tokens).encode()
    out = b"".join((mv[:j], digits, mv[j + 1 :]))
    _WRITTEN[0] = (out, length, j, len(digits))
    return out


def _spelled_after(limits: Raw, suggestions: list[Suggestion] | None, compact: bool) -> int:
    """How many times :data:`_TOKENS_AT` occurs in the source's objects the writer puts after
    ``approxTokens`` (``meta.limits``, each suggestion's ``args``), spelled as the written
    document spells them (minified unless the output is compact); nothing else written after
    it can hold the bytes (a string's quotes are escaped)."""
    n = 0
    for raw in (limits, *(s.args for s in suggestions or ())):
        text = bytes(raw)
        if b"approxTokens" in text:  # the cheap test, whatever the spacing
            n += (text if compact else msgspec.json.format(text, indent=-1)).count(_TOKENS_AT)
    return n


_WRITTEN: list[tuple[bytes, int, int, int] | None] = [None]
"""The writer's last document, its exact count (the UTF-16 length as written, with
``approxTokens`` 0), where its ``approxTokens`` digits start and how many there are: :func:`seal`
adds a residue's part to the count instead of counting the whole document again. One entry,
replaced whole: a thread that finds another's document there counts in full."""


WRITING = Writing(
    Let("first", _first, pure=True),
    Let("result", _result),
    Let("truncated", _truncated, pure=True),
    Let("ws", _workspace),
    Let("suggestions", _suggestions),
    Let("stamp", _stamp),
    Let("tool_name", _tool),
    Let("rid", _data_request_id),
    Let("generated_at", _generated_at),
    Let("page", _page),
    Let("limits_object", _limits),
    Move("stated_tokens", "token_estimate"),  # for finish: the hub binds only canonical fields a step reads
    Build.of(
        "meta",
        Meta,
        approx_tokens=Const(0),
        truncated="truncated",
        limits="limits_object",
        next_query_suggestion="suggestions",
        page="page",
    ),
    Build.of(
        "data",
        Data,
        tool="tool_name",
        version=Const(VERSION),
        request_id="rid",
        generated_at="generated_at",
        workspace="ws",
        result="result",
        meta="meta",
    ),
    Build.of("out", Envelope, data="data"),  # success: a plain copy of [fields]
    finish=_count_tokens,
    derive=True,
    failure=Failure(_planned_result, replaces=("first", "result"), gives=("first", "result")),
)


def _with_tokens(doc: bytes, tokens: int) -> bytes:
    """``doc`` with ``data.meta.approxTokens`` set to ``tokens`` (everything else byte for byte)."""
    return _set_tokens(_levels(doc), tokens)


Levels = tuple[dict[str, Raw], dict[str, Raw], dict[str, Raw]]
"""A document's top level, its ``data`` and its ``data.meta``, decoded (values ``Raw``)."""


def _levels(doc: bytes, top: dict[str, Raw] | None = None) -> Levels:
    """The :data:`Levels` of ``doc`` (``top``: its top level, when decoded)."""
    top = _RAW_DICT.decode(doc) if top is None else dict(top)  # the caller's is not changed
    data = _RAW_DICT.decode(top["data"])
    return top, data, _RAW_DICT.decode(data["meta"])


def _set_tokens(levels: Levels, tokens: int) -> bytes:
    """The document of ``levels`` with ``approxTokens`` set to ``tokens`` (the levels updated in
    place, so it can be set again: each key keeps its place)."""
    top, data, meta = levels
    meta["approxTokens"] = Raw(str(tokens).encode())
    data["meta"] = Raw(_ENC.encode(meta))
    top["data"] = Raw(_ENC.encode(data))
    return _ENC.encode(top)


def _count(levels: Levels) -> int:
    """:func:`counted_tokens` of the document of ``levels``."""
    return approx_tokens(msgspec.json.format(_set_tokens(levels, 0), indent=-1))


def counted_tokens(doc: bytes) -> int:
    """The ``approxTokens`` a code-graph document should state: its compact form counted with
    ``approxTokens`` 0, whatever else it holds (a preserve residue, unknown fields). The
    writer, :func:`seal` and ``validate`` share this one rule."""
    return _count(_levels(doc))


def seal(doc: bytes, top: dict[str, Raw] | None = None, minified: bool = False) -> bytes:
    """Recount ``approxTokens`` after keys were added to a written document (a preserve residue,
    unknown fields put back): it counts the whole compact envelope as the client receives it.
    ``top``: ``doc``'s top level, when the caller decoded it (``doc`` is not decoded again);
    each level is decoded once for the count and the result.

    ``doc`` the writer's last document with members appended (the pipeline's residue at
    ``$._envglot``): the writer's count plus theirs (:func:`_added`), nothing decoded but them
    (nor those, when ``top`` shows the one member appended: :func:`_appended_last`).
    Otherwise the count is taken from ``doc`` itself (less the stated digits: one UTF-16 unit each, outside
    strings) when the levels, encoded, take exactly ``doc``'s length: msgspec spells each key in
    its shortest form and drops whitespace and repeated keys, so equal lengths leave only keys
    spelled otherwise at the same length (a control character's ``\\u001F`` for ``\\u001f``),
    which count alike. Otherwise the levels are encoded with ``approxTokens`` 0 and counted.
    ``minified``: the caller's word that ``doc`` holds no whitespace outside strings (the pipeline's
    residue placed into an output written from a minified document): nothing is formatted to count
    its compact form."""
    added = _added(doc, top, minified)
    if added is not None:
        return added
    levels = _levels(doc, top)
    stated = bytes(levels[2].get("approxTokens") or b"")
    if stated.isdigit():
        # counted from ``doc`` less its digits, without encoding the levels with 0 first: right
        # when encoding the levels gives ``doc`` again, which the lengths prove (below)
        compact = doc if minified else msgspec.json.format(doc, indent=-1)
        tokens = math.ceil((_stringified_length(compact) - len(stated) + 1) / 4)
        sealed = _set_tokens(levels, tokens)
        if len(sealed) - len(str(tokens)) == len(doc) - len(stated):
            return sealed
    return _set_tokens(levels, _count(levels))


_TOP_KEYS = frozenset(Envelope.__struct_encode_fields__)
"""Every top-level key the writer writes (in msgspec's spelling)."""


def _added(doc: bytes, top: dict[str, Raw] | None = None, minified: bool = False) -> bytes | None:
    """:func:`seal` of ``doc`` when it is the writer's last document (:data:`_WRITTEN`) with
    top-level members appended (a preserve residue), ``None`` otherwise: the writer's count plus
    the members' own, without counting the whole document again (``top``: ``doc``'s top level,
    when decoded).

    The same bytes as the general way, since encoding ``doc``'s levels gives ``doc`` again: the
    writer's document does (keys in msgspec's spelling, none repeated, no whitespace at its top
    level, in ``data`` or in ``meta``), and so do the members, proven to re-encode to themselves
    with no key of the writer's among them. Whitespace inside carried values does not count
    (``counted_tokens`` counts the compact form): the writer's document is formatted to find
    how much it holds only when it holds a whitespace byte at all, and not when ``minified`` (the
    caller's word that ``doc`` holds none outside strings)."""
    written = _WRITTEN[0]
    if written is None:
        return None
    before, length, at, digits = written
    end = len(before) - 1
    # (bytes slices, not memoryviews: a memoryview costs more than copying a small document)
    if len(doc) <= end + 2 or doc[end] != _COMMA or not doc.startswith(before[:end]):
        return None
    tail = doc[end + 1 :]  # the members appended and the closing brace
    if _appended_last(tail, top):
        members_text = None
    else:
        members_text = b"{" + tail
        try:
            members = _RAW_DICT.decode(members_text)
        except msgspec.DecodeError:
            return None
        if not _TOP_KEYS.isdisjoint(members) or _ENC.encode(members) != members_text:
            return None
    if not minified:
        if _spaced(before):
            length -= len(before) - len(msgspec.json.format(before, indent=-1))
        if _spaced(tail):
            tail = msgspec.json.format(members_text or b"{" + tail, indent=-1)[1:]
    # ``length`` counts approxTokens as 0 and the closing brace; the members add a comma and
    # their text with its closing brace (the one already counted): ``tail``'s count
    length += _stringified_length(tail)
    return doc[:at] + str(math.ceil(length / 4)).encode() + doc[at + digits :]


_COMMA = ord(",")


def _appended_last(tail: bytes, top: dict[str, Raw] | None) -> bool:
    """Whether ``tail`` (the members :func:`_added` finds appended, up to the document's closing
    brace) is ``top``'s last member alone, in msgspec's spelling, under a key the writer does not
    write: :func:`_added`'s decode and encode of them give that answer then (``top`` being the
    document's top level, that member's value is JSON), so they are skipped (the pipeline's
    residue placed at ``$._envglot``). Compared in place, nothing joined."""
    if not top:
        return False
    key = next(reversed(top))
    value = top[key]
    if key in _TOP_KEYS or type(value) is not Raw:  # (a caller's opened object: the decode decides)
        return False
    text = _member_key(key)
    size = len(text)
    return (
        len(tail) == size + len(value) + 1
        and tail.startswith(text)
        and tail.startswith(value, size)
        and tail[-1] == _CLOSE
    )


_CLOSE = ord("}")


@lru_cache(maxsize=64)
def _member_key(key: str) -> bytes:
    """A top-level member's text up to its value, as msgspec spells it (key and colon)."""
    return _ENC.encode(key) + b":"


def _spaced(text: bytes) -> bool:
    """Whether ``text`` holds a JSON whitespace byte at all (in a string or not: only
    formatting tells which)."""
    return 32 in text or 10 in text or 13 in text or 9 in text


# --- contract (the wire Structs and their Rules, then these) ------------------------------


def invariants(d: dict[str, Any], c: Checker, m: Mappings) -> None:
    """The contract's rules across fields: a failure's result is an object with an ``error``,
    and ``approxTokens`` counts the whole document."""
    data = d.get("data")
    if not isinstance(data, dict):
        return
    if d.get("success") is False and "result" in data:
        result = data["result"]
        if not isinstance(result, dict):
            c.add("$.data.result", f"an error result must be an object with an error member, got {type_name(result)}")
        elif isinstance(err := c.field(result, "error", "$.data.result", "object"), dict):
            c.wire(err, ResultError, "$.data.result.error")
    meta = data.get("meta")
    tokens = meta.get("approxTokens") if isinstance(meta, dict) else None
    if not isinstance(tokens, int) or isinstance(tokens, bool):
        return
    try:
        expected = counted_tokens(c.document)
    except msgspec.DecodeError as exc:  # e.g. a lone surrogate escape, which no emitter can count
        c.add("$", f"the envelope cannot be counted for approxTokens: {exc}")
        return
    if tokens != expected:
        c.add(
            "$.data.meta.approxTokens",
            f"approxTokens is {tokens}; the emitter computes {expected} "
            "(ceil(length of the compact envelope with approxTokens 0 / 4))",
        )


WIRE = Envelope
