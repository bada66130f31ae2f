"""code-graph (Ouroboros AI Code Graph): camelCase ``{success, data{tool, version, requestId, ...}}``."""

from __future__ import annotations

import math
import re
from typing import Any

import msgspec
from msgspec import Raw, Struct

from .. import canonical as c
from ..checker import MISSING, Checker, type_name
from ..context import Context, missing_problem, problem_message, read_problem, report_losses, write_code
from ..diagnostics import Kind
from ..dialect import Dialect, Facts, Probe, Shape
from ..errors import ParseError
from ..mappings import DialectMap, Mappings
from ._common import RAW_EMPTY_OBJECT, RAW_NULL, WireDecoder, count_for, object_or_wrapped, raw_is_object, timestamp_for

__all__ = [
    "NAME",
    "Data",
    "Envelope",
    "Meta",
    "Page",
    "Suggestion",
    "Workspace",
    "approx_tokens",
    "read",
    "write",
]

NAME = "code-graph"
SHAPE = Shape()
VERSION = "1.0"


class _Wire(Struct, forbid_unknown_fields=True, omit_defaults=True, rename="camel"):
    pass


class Workspace(_Wire):
    root: str
    repo_name: str
    rev: str | None = None


class Suggestion(_Wire):
    tool: str
    args: Raw
    reason: str | None = None


class Page(_Wire):
    has_more: bool
    cursor: str | None = None
    total: int | None = None


class Meta(_Wire):
    approx_tokens: int
    truncated: bool
    limits: Raw
    next_query_suggestion: list[Suggestion] | None = None
    page: Page | None = None


class Data(_Wire):
    tool: str
    version: str
    request_id: str
    generated_at: str
    workspace: Workspace
    result: Raw
    meta: Meta


class Envelope(_Wire):
    """The code-graph envelope; an error is ``data.result.error{code, message, details?}``."""

    success: bool
    data: Data


_DEC = WireDecoder(Envelope, NAME, SHAPE.residue)
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
    if b"\\u" in compact or b"\\/" in compact:
        compact = _STRINGIFY_ESCAPES.sub(_as_stringified, compact)
    n = len(compact) if compact.isascii() else len(compact.decode("utf-8").encode("utf-16-le")) // 2
    return math.ceil(n / 4)


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


def read(buf: bytes | memoryview | str, ctx: Context) -> c.Envelope:
    """Read a code-graph envelope into the canonical model."""
    w, extras, residue = _DEC.decode(buf)
    d = w.data
    m = d.meta
    dmap = ctx.mappings[NAME]
    payload: Raw | None = d.result
    problems: tuple[c.Problem, ...] = ()
    if not w.success:
        if not raw_is_object(d.result):
            raise ParseError(
                "an error result must be an object with an `error` member", path="$.data.result", dialect=NAME
            )
        res = _RAW_DICT.decode(d.result)
        err_raw = res.pop("error", None)
        if err_raw is None or not raw_is_object(err_raw):
            raise ParseError("missing error object", path="$.data.result.error", dialect=NAME)
        err = _RAW_DICT.decode(err_raw)
        code = _str_field(err, "code", "$.data.result.error.code", True)
        message = _str_field(err, "message", "$.data.result.error.message", True)
        details = err.pop("details", None)
        problems = (
            read_problem(
                dmap,
                code,
                ctx,
                "$.data.result.error.code",
                message=message,
                details=details,
                extra=Raw(_ENC.encode(err)) if err else None,
            ),
        )
        payload = Raw(_ENC.encode(res)) if res else None
    steps = tuple(
        c.NextStep(kind="query", tool=s.tool, args=s.args, reason=s.reason) for s in (m.next_query_suggestion or ())
    )
    pg = m.page
    ws = d.workspace
    return c.Envelope(
        ok=w.success,
        payload=payload,
        problems=problems,
        tool=d.tool,
        request_id=d.request_id,
        timestamp=d.generated_at,
        workspace=c.Workspace(root=ws.root, repo_name=ws.repo_name, rev=ws.rev),
        token_estimate=m.approx_tokens,
        fidelity=c.Fidelity(truncated=m.truncated),
        limits=m.limits,
        next_steps=steps,
        pagination=None if pg is None else c.Pagination(cursor=pg.cursor, has_more=pg.has_more, total=pg.total),
        extras=extras
        if d.version == VERSION
        else (*extras, c.Extra(dialect=NAME, path="$.data.version", value=Raw(_ENC.encode(d.version)))),
        residue=residue,
    )


def _synth(ctx: Context, dmap: DialectMap, field: str, what: str, rule: str | None = None) -> str:
    return str(ctx.synth_value(dmap, field, what, rule))


def _request_id(env: c.Envelope) -> str:
    """Reproducible 8-char base-36 id: a hash of the tool, outcome, payload and first error."""
    import hashlib  # only for documents without a requestId: keep it off the import path

    h = hashlib.blake2b(digest_size=8)
    h.update((env.tool or "").encode())
    h.update(b"1" if env.ok else b"0")
    if env.payload is not None:
        h.update(bytes(env.payload))
    if env.problems:
        h.update((env.problems[0].code or "").encode() + (env.problems[0].message or "").encode())
    n = int.from_bytes(h.digest(), "big")
    out = ""
    for _ in range(8):
        n, r = divmod(n, 36)
        out += "0123456789abcdefghijklmnopqrstuvwxyz"[r]
    return out


def write(env: c.Envelope, ctx: Context) -> bytes:
    """Write the canonical envelope as code-graph (``version`` "1.0", ``approxTokens`` recomputed)."""
    dmap = ctx.mappings[NAME]
    report_losses(env, dmap, ctx)
    payload = env.payload
    if env.ok:
        result = payload if payload is not None else RAW_NULL
    else:
        if env.problems:
            p = env.problems[0]
        else:
            p = missing_problem(env.summary, ctx, dmap)
        err: dict[str, Raw] = _RAW_DICT.decode(p.extra) if p.extra is not None else {}
        err["code"] = Raw(_ENC.encode(write_code(p, dmap, ctx, 0)))
        err["message"] = Raw(_ENC.encode(problem_message(p, env.summary, ctx, dmap, 0)))
        if p.details is not None:
            err["details"] = object_or_wrapped(p.details, ctx, "problem.details", NAME)
        res: dict[str, Raw] = {}
        if payload is not None and payload != RAW_NULL and payload != RAW_EMPTY_OBJECT:
            if raw_is_object(payload):
                res = {k: v for k, v in _RAW_DICT.decode(payload).items() if k != "error"}
            else:
                ctx.dropped("payload", NAME, what="a non-object payload of a failure")
        res["error"] = Raw(_ENC.encode(err))
        result = Raw(_ENC.encode(res))
    fid = env.fidelity
    truncated = False
    if fid is not None:
        truncated = fid.truncated if fid.truncated is not None else fid.level not in (None, "full")
    ws = env.workspace
    if ws is None or ws.root is None or ws.repo_name is None:
        root = (
            ws.root if ws is not None and ws.root is not None else _synth(ctx, dmap, "workspace.root", "workspace.root")
        )
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
        workspace = Workspace(root=root, repo_name=repo, rev=ws.rev if ws is not None else None)
    else:
        workspace = Workspace(root=ws.root, repo_name=ws.repo_name, rev=ws.rev)
    pg = env.pagination
    suggestions = [
        Suggestion(
            tool=s.tool or "",
            args=RAW_EMPTY_OBJECT
            if s.args is None or s.args == RAW_NULL
            else object_or_wrapped(s.args, ctx, "next_step.args", NAME, i),
            reason=s.reason,
        )
        for i, s in enumerate(env.next_steps)
    ]
    stamp = timestamp_for(env.timestamp, ctx, dmap, "generatedAt", utc=False)
    data = Data(
        tool=env.tool if env.tool is not None else _synth(ctx, dmap, "tool", "a tool name"),
        version=VERSION,
        request_id=env.request_id
        if env.request_id is not None
        else _synth(ctx, dmap, "request_id", "a requestId", _request_id(env)),
        generated_at=stamp if stamp is not None else _synth(ctx, dmap, "timestamp", "generatedAt"),
        workspace=workspace,
        result=result,
        meta=Meta(
            approx_tokens=0,
            truncated=truncated,
            limits=env.limits if env.limits is not None else RAW_EMPTY_OBJECT,
            next_query_suggestion=suggestions or None,
            page=None
            if pg is None
            else Page(
                has_more=bool(pg.has_more), cursor=pg.cursor, total=count_for(pg.total, ctx, "pagination.total", NAME)
            ),
        ),
    )
    out = _ENC.encode(Envelope(success=env.ok, data=data))
    if not ctx.compact:  # approxTokens counts the minified envelope
        out = msgspec.json.format(out, indent=-1)
    tokens = approx_tokens(out)
    if env.token_estimate is not None and env.token_estimate != tokens:
        ctx.report.add(
            Kind.VALUE_COERCED,
            ctx.path("token_estimate"),
            f"approxTokens recomputed as {tokens} (the source said {env.token_estimate})",
            NAME,
        )
    i = out.rfind(_TOKENS_AT)
    j = i + len(_TOKENS_AT) - 1
    mv = memoryview(out)
    return b"".join((mv[:j], str(tokens).encode(), mv[j + 1 :]))


def _with_tokens(doc: bytes, tokens: int) -> bytes:
    """``doc`` with ``data.meta.approxTokens`` set to ``tokens`` (everything else byte for byte)."""
    top = _RAW_DICT.decode(doc)
    data = _RAW_DICT.decode(top["data"])
    meta = _RAW_DICT.decode(data["meta"])
    meta["approxTokens"] = Raw(str(tokens).encode())
    data["meta"] = Raw(_ENC.encode(meta))
    top["data"] = Raw(_ENC.encode(data))
    return _ENC.encode(top)


def counted_tokens(doc: bytes) -> int:
    """The ``approxTokens`` a code-graph document should state: its compact form counted with
    ``approxTokens`` 0, whatever else it holds (a preserve residue, unknown fields). The
    writer, :func:`seal` and ``validate`` share this one rule."""
    return approx_tokens(msgspec.json.format(_with_tokens(doc, 0), indent=-1))


def seal(doc: bytes) -> bytes:
    """Recount ``approxTokens`` after keys were added to a written document (a preserve residue,
    unknown fields put back): it counts the whole compact envelope as the client receives it."""
    return _with_tokens(doc, counted_tokens(doc))


# --- contract ------------------------------------------------------------------------


def contract(d: dict[str, Any], c: Checker, m: Mappings) -> None:
    """Every way ``d`` breaks the contract, reported to ``c``."""
    success = c.field(d, "success", "$", "boolean")
    data = c.field(d, "data", "$", "object")
    if not isinstance(data, dict):
        return
    c.field(data, "tool", "$.data", "string")
    c.const(data, "version", "$.data", VERSION)
    c.field(data, "requestId", "$.data", "string")
    c.timestamp(data, "generatedAt", "$.data", utc=False)
    ws = c.field(data, "workspace", "$.data", "object")
    if isinstance(ws, dict):
        c.field(ws, "root", "$.data.workspace", "string")
        c.field(ws, "repoName", "$.data.workspace", "string")
        c.optional(ws, "rev", "$.data.workspace", "string")
    result = c.field(data, "result", "$.data", "any")
    if success is False and result is not MISSING:
        if not isinstance(result, dict):
            c.add("$.data.result", f"an error result must be an object with an error member, got {type_name(result)}")
        else:
            err = c.field(result, "error", "$.data.result", "object")
            if isinstance(err, dict):
                c.field(err, "code", "$.data.result.error", "string")
                c.field(err, "message", "$.data.result.error", "string")
                c.optional(err, "details", "$.data.result.error", "object")
    meta = c.field(data, "meta", "$.data", "object")
    if not isinstance(meta, dict):
        return
    tokens = c.non_negative(meta, "approxTokens", "$.data.meta", "integer")
    c.field(meta, "truncated", "$.data.meta", "boolean")
    c.field(meta, "limits", "$.data.meta", "object")
    for p, s in c.objects(meta, "nextQuerySuggestion", "$.data.meta", required=False):
        c.field(s, "tool", p, "string")
        c.field(s, "args", p, "object")
        c.optional(s, "reason", p, "string")
    page = c.optional(meta, "page", "$.data.meta", "object")
    if isinstance(page, dict):
        c.optional(page, "cursor", "$.data.meta.page", "string")
        c.field(page, "hasMore", "$.data.meta.page", "boolean")
        c.non_negative(page, "total", "$.data.meta.page", "integer", required=False)
    if isinstance(tokens, int):
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


def _probe(f: Facts) -> str | None:
    if not f.is_bool("success"):
        return None
    data = f.member("data")
    return "data.requestId" if data is not None and "requestId" in data and "generatedAt" in data else None


class CodeGraph(Dialect):
    """The Code Graph envelope."""

    name = NAME
    description = "Code Graph envelope: success/data{tool,version,requestId,generatedAt,workspace,result,meta}"
    shape = SHAPE
    native_indent = 2  # JSON.stringify(envelope, null, 2)
    wire = Envelope
    probes = (Probe(50, _probe, "`success` plus `data.requestId` and `data.generatedAt`"),)
    read = staticmethod(read)
    write = staticmethod(write)
    seal = staticmethod(seal)
    contract = staticmethod(contract)
