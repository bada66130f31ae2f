"""The floor per ordered pair: the cheapest code producing envglot's exact output.

Each floor is plain hand-tuned code for one (source, target) pair: decode the source with
msgspec into its wire Struct (the type checks envglot's reader relies on), the checks
envglot's rules require for that pair, then the target document built directly as bytes,
plus the pair's unavoidable extra work (minifying a spaced source, code-graph's
``approxTokens`` and synthesized ``requestId``). :func:`build` puts the input checks every
document must pass (valid UTF-8, ``envglot.limits.check_input``, and nesting depth, checked
by the pair code's own msgspec parse through ``envglot.limits.within_depth``: the trust-boundary
rules require them of every conversion; they are envglot's own functions because no cheaper
exact check is known; ``checked=False`` gives the bare pair code). No canonical model, no diagnostics
(the harness runs envglot with ``unsupported="ignore"``).

Error codes are looked up in a table built once per pair (:func:`code_table`; per
``(error_code, error_type)`` for a response-v2 source, ``(code, retryable)`` for errorcode,
one entry for legacy-v1, which has no codes; a problem-json source is looked up by its
``code`` member, else by its ``status``, both rows of one table): envglot itself converts one
minimal failure per code of the source's table, and the floor keeps what the target wrote
(for a problem-json target: the ``type``, ``title``, ``status``, ``code`` and implied
``retryable`` members the code gives; for a target whose codes cannot say every category or
``retryable``, the members its writer adds to the error's ``details`` to carry them).
Synthesized values (``"unknown"`` tools, time stamps) come from the target's ``[synthesize]``
table. That is a precomputation, as a compiled fast path would do; the per-record work is the
floor's own. A few pure rules are reused rather than
restated where restating them would only copy them: envglot's wire Structs (the decode),
``legacy_v1.InterimMeta`` and, for documents holding escapes, ``code_graph.approx_tokens``.

A floor covers what the benchmark corpus holds. A record outside it (an unknown key, a
``{"value": ...}``-wrapped payload, object warnings, a failure with a non-empty payload
where that needs merging, ...) raises :class:`OutsideError`: the harness then reports that
floor as not covering the corpus instead of timing it. ``benchmarks/run.py`` asserts, per
pair and before timing, that the floor's output is byte-identical to envglot's for every
record of the corpus.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import msgspec
import orjson
from msgspec import Raw

import envglot
from envglot.dialect import get_dialect
from envglot.dialects import code_graph, dotbot, errorcode, legacy_v1, problem_json, response_v2, result
from envglot.errors import EnvglotError
from envglot.limits import MAX_DEPTH, check_input, members_of, repeated_member, within_depth
from envglot.mappings import default_mappings

__all__ = ["FLOORS", "NOT_WRITTEN", "OutsideError", "build", "code_table"]

Conv = Callable[[bytes], bytes]
_T = TypeVar("_T")


class OutsideError(Exception):
    """A record this floor does not handle (not in the benchmark corpus's shape)."""


_enc = msgspec.json.Encoder().encode
_RAW_DICT = msgspec.json.Decoder(dict[str, Raw]).decode

# envglot's whitespace rule (``may_be_loose``): newlines, tabs, CRs anywhere; spaces at the first key.
_SPACED_HEAD = re.compile(rb'\s|\{\s|\{"[^"\\]*(?:\\.[^"\\]*)*"(?:\s|:\s)').match
_WRAPPED = re.compile(rb'\{[ \t\r\n]*"value"[ \t\r\n]*:').match
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})").fullmatch
_REQUEST_ID = re.compile(r"[a-zA-Z0-9_-]+").fullmatch
_B36 = "0123456789abcdefghijklmnopqrstuvwxyz"
_OBJECT = re.compile(rb"\{").match
RAW_NULL = Raw(b"null")
RAW_EMPTY = Raw(b"{}")


def _compact(b: bytes) -> bytes:
    """The input minified when envglot's probe says it may hold insignificant whitespace."""
    if b"\n" in b or b"\r" in b or b"\t" in b or _SPACED_HEAD(b, 0, 4096) is not None:
        return msgspec.json.format(b, indent=-1)
    return b


def _object(raw: Raw) -> Raw:
    """An object-or-null field (error details): other values are wrapped as envglot wraps them."""
    if raw == RAW_NULL or _OBJECT(raw) is not None:
        return raw
    return Raw(b'{"value":' + raw + b"}")


_LONG = 2048
"""Size above which a document's repeated-outcome test searches around the payload's span (below
it one whole count costs less) and its fallback is given the top level's members (below it the
byte scans cost less): measured on the benchmark corpus (docs/performance.md, h-floor16)."""


def _outcome_quoted(src: str) -> bytes:
    """``src``'s outcome member's key in quotes, as :func:`_outcome_once` searches it (the
    dialect's ``outcome_key``)."""
    return b'"%s"' % get_dialect(src).outcome_key.encode()


def _outcome_once(buf: bytes, quoted: bytes, value: Raw | None, spelt: bytes) -> None:
    """Refuse ``buf`` where its top level may hold the outcome member (``quoted``: its key in
    quotes, plain letters) more than once, as envglot's strict read decides it
    (``envglot.fields.counted_around``): without a backslash (no escaped key), the key's
    occurrences counted outside the decoded ``Raw`` ``value`` (the member spelt ``spelt`` and
    ``:``; its span searched around in a long document where it is more than half of it, else
    its copy counted where the whole count shows the key twice): at most one there is no repeat
    (a top-level key lies outside every value, and no occurrence runs across a value's edge).
    Otherwise ``repeated_member`` decides (exact)."""
    if b"\\" not in buf:
        if value and len(buf) > _LONG and len(value) << 1 > len(buf):
            at = buf.find(spelt) + len(spelt)
            if at >= len(spelt) and buf.startswith(value, at):
                if buf.count(quoted, 0, at) + buf.count(quoted, at + len(value)) < 2:
                    return
        elif (seen := buf.count(quoted)) < 2 or (value and seen - bytes(value).count(quoted) < 2):
            return
    if repeated_member(buf, quoted[1:-1].decode(), members_of(buf) if len(buf) > _LONG else None):
        raise OutsideError(f"the outcome member {quoted.decode()} repeated (envglot refuses the document)")


def _timestamp(value: str) -> bool:
    if _ISO(value) is None:
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def _request_id(tool: str, ok: bool, payload: bytes | None, code: str | None, message: str | None) -> str:
    """code-graph's reproducible requestId (the same hash envglot's writer synthesizes)."""
    h = hashlib.blake2b(digest_size=8)
    h.update(tool.encode())
    h.update(b"1" if ok else b"0")
    if payload is not None:
        h.update(payload)
    if code is not None or message is not None:
        h.update((code or "").encode() + (message or "").encode())
    n = int.from_bytes(h.digest(), "big")
    out = ""
    for _ in range(8):
        n, r = divmod(n, 36)
        out += _B36[r]
    return out


def _with_tokens(head: bytes, tail: bytes) -> bytes:
    """``head + approxTokens + tail``: ``ceil(UTF-16 length / 4)`` of the document with ``0`` there."""
    if b"\\u" in head or b"\\/" in head or b"\\u" in tail or b"\\/" in tail:
        # escapes count as JSON.stringify would spell them: envglot's own counting rule
        return head + str(code_graph.approx_tokens(head + b"0" + tail)).encode() + tail
    n = len(head) + len(tail) + 1
    if not (head.isascii() and tail.isascii()):
        n = (len((head + tail).decode().encode("utf-16-le")) >> 1) + 1
    return head + str(math.ceil(n / 4)).encode() + tail


# --------------------------------------------------------------------------- code tables


_FAILURE_DOC: dict[str, Callable[[str], bytes]] = {
    "dotbot": lambda code: orjson.dumps(
        {
            "schema_id": dotbot.SCHEMA_ID,
            "tool": "t",
            "version": "1.0.0",
            "status": "error",
            "summary": "s",
            "data": {},
            "warnings": [],
            "errors": [{"code": code, "message": "m"}],
            "audit": {"timestamp": "2026-01-01T00:00:00Z", "duration_ms": 1, "source": "s"},
        }
    ),
    "errorcode": lambda code: orjson.dumps(
        {"success": False, "data": None, "error": {"code": code, "message": "m", "retryable": False}}
    ),
    "result": lambda code: orjson.dumps({"success": False, "error": "m", "error_type": code}),
    "code-graph": lambda code: orjson.dumps(
        {
            "success": False,
            "data": {
                "tool": "t",
                "version": "1.0",
                "requestId": "r",
                "generatedAt": "2026-01-01T00:00:00.000Z",
                "workspace": {"root": "/r", "repoName": "r"},
                "result": {"error": {"code": code, "message": "m"}},
                "meta": {"approxTokens": 0, "truncated": False, "limits": {}},
            },
        }
    ),
    # a status row ("404") reads as a status without a code: the same problem either way
    "problem-json": lambda code: orjson.dumps({"code": code, "detail": "m"}),
}


def _members(details: dict[str, Any] | None) -> bytes:
    """The members of a minimal failure's ``details``: what the target's writer added to carry
    a category and ``retryable`` its code cannot say (``b""`` when it added none)."""
    return _enc(details)[1:-1] if details else b""


def _carry(details: bytes | None, carried: bytes) -> bytes | None:
    """``details`` with the ``carried`` members (:func:`code_table`) added, as envglot's writer
    adds them (``context.carry_meaning``): into an object (its top level written again from
    its decoded members, as envglot writes it), as the object when unset; other values are
    left as they are."""
    if not carried or (details is not None and details != RAW_NULL and _OBJECT(details) is None):
        return details
    if details is None or details == RAW_NULL or details == RAW_EMPTY:
        return b"{" + carried + b"}"
    members = _RAW_DICT(details)
    if "category" in members or "retryable" in members:
        raise OutsideError("details holding a member envglot's writer may replace")
    # envglot writes the details' top level again (escaped keys unescaped, a repeated key once)
    return _enc(members)[:-1] + b"," + carried + b"}" if members else b"{" + carried + b"}"


_TARGET_CODE: dict[str, Callable[[Any], tuple[Any, ...]]] = {
    "response-v2": lambda d: (d["data"]["error_code"], d["data"]["error_type"], _members(d["data"].get("details"))),
    "errorcode": lambda d: (d["error"]["code"], d["error"]["retryable"]),
    "result": lambda d: (d["error_type"], _members(d.get("error_data", {}).get("details"))),
    "code-graph": lambda d: (
        d["data"]["result"]["error"]["code"],
        _members(d["data"]["result"]["error"].get("details")),
    ),
    "dotbot": lambda d: (d["errors"][0]["code"], _members(d["errors"][0].get("details"))),
    "problem-json": lambda d: (d["type"], d["title"], d["status"], d.get("code"), d.get("retryable")),
}


def _meaning_keys(src: str) -> tuple[str, ...]:
    """The keys of an error's ``details`` where ``src``'s writer carries what its codes cannot say
    (``DialectMap.meaning_keys``, from envglot's tables: none for a dialect that carries none)."""
    return tuple(k for k in default_mappings().dialects[src].meaning_keys if k is not None)


def _no_carried_meaning(details: Raw | None, keys: tuple[str, ...]) -> None:
    """Refuse an error whose ``details`` object holds one of ``keys`` at its top level: envglot's
    reader takes the category or ``retryable`` it carries out of the details
    (``codes.carried_meaning``) and writes another code than the code's row, which the floors
    write. envglot's own test (``codes.details_object``), by the cheapest exact way measured: the
    decode of the details' top level (0.25 / 0.8 µs at tiny / medium, against 1.0 / 2.9 µs for
    byte searches of the keys that also catch an escaped key); details that are no object carry
    nothing."""
    if details is None:
        return
    try:
        members = _RAW_DICT(details)
    except msgspec.ValidationError:
        return
    for k in keys:
        if k in members:
            raise OutsideError(f"details carrying {k!r} (envglot's reader takes it out and writes another code)")


def code_table(src: str, dst: str) -> dict[Any, tuple[Any, ...]]:
    """Source code -> what envglot writes for it in ``dst`` (built once, by envglot, per pair);
    for an errorcode source, which states ``retryable`` beside its code, ``(code, retryable)``."""
    from envglot.mappings import default_mappings

    out: dict[Any, tuple[Any, ...]] = {}
    for code in default_mappings()[src].codes:
        if src == "errorcode":
            for retryable in (False, True):
                doc = _FAILURE_DOC[src](code).replace(b'"retryable":false', b'"retryable":' + _enc(retryable))
                got = envglot.convert(doc, from_=src, to=dst, unsupported="ignore")
                out[(code, retryable)] = _TARGET_CODE[dst](orjson.loads(got))
            continue
        doc = envglot.convert(_FAILURE_DOC[src](code), from_=src, to=dst, unsupported="ignore")
        out[code] = _TARGET_CODE[dst](orjson.loads(doc))
    return out


# --------------------------------------------------------------------------- problem-json targets

Members = tuple[bytes, bytes, bytes]
"""What problem-json writes for a code: ``{"type":…,"title":…,"status":…``, ``,"code":…`` and
the ``,"retryable":…`` the code implies (empty when it writes none)."""

_PROBLEM_OK = b"".join(
    (
        b'{"type":',
        _enc(problem_json.ABOUT_BLANK),
        b',"title":',
        _enc(problem_json.SUCCESS_TITLE),
        b',"status":',
        _enc(problem_json.SUCCESS_STATUS),
    )
)
"""The head of every problem-json success."""


def problem_members(written: tuple[Any, ...]) -> Members:
    """A problem-json code-table entry (``code_table(src, "problem-json")``) as bytes."""
    type_, title, status, code, retryable = written
    head = b'{"type":' + _enc(type_) + b',"title":' + _enc(title) + b',"status":' + _enc(status)
    coded = b',"code":' + _enc(code) if code is not None else b""
    return head, coded, b',"retryable":' + _enc(retryable) if retryable is not None else b""


def problem_table(src: str) -> dict[str, Members]:
    """Source code -> :data:`Members` (built once, by envglot, per pair)."""
    return {code: problem_members(v) for code, v in code_table(src, "problem-json").items()}


def _coded(codes: dict[Any, _T], key: Any) -> _T:
    """``codes[key]``; a code the tables do not know is outside the corpus."""
    found = codes.get(key)
    if found is None:
        raise OutsideError(f"code {key!r} is not in the tables")
    return found


def _problem(
    m: Members, message: str | None, details: Raw | None, retry_ms: int | None = None, retryable: bool | None = None
) -> bytes:
    """A problem-json failure up to its problem's last member (``retryable``: the source's own,
    else what the code implies; a negative delay is left out, as envglot leaves it out)."""
    head, coded, implied = m
    out = head if message is None else head + b',"detail":' + _enc(message)
    out += coded
    if retryable is None:
        out += implied
    else:
        out += b',"retryable":true' if retryable else b',"retryable":false'
    if retry_ms is not None and retry_ms >= 0:
        out += b',"retry_after_ms":' + _enc(retry_ms)
    if details is not None:
        out += b',"details":' + details
    return out


def _problem_tail(request_id: str | None, payload: Raw | None, warnings: list[str] | None) -> bytes:
    """A problem-json document's members after the problem's, and its closing brace."""
    out = b"" if request_id is None else b',"request_id":' + _enc(request_id)
    if payload is not None:
        out += b',"data":' + payload
    if warnings:
        out += b',"warnings":' + _enc(warnings)
    return out + b"}"


# --------------------------------------------------------------------------- dotbot sources

_DOTBOT = msgspec.json.Decoder(dotbot.Envelope).decode


_DOTBOT_OUTCOME = _outcome_quoted("dotbot")


def _dotbot_in(b: bytes) -> dotbot.Envelope:
    """The checks of envglot's dotbot reader (the wire types, ``schema_id``, ``data`` an object;
    errors make a failure whatever the status says)."""
    try:
        w = _DOTBOT(b)
    except msgspec.DecodeError as exc:
        raise OutsideError(str(exc)) from None
    _outcome_once(b, _DOTBOT_OUTCOME, w.data, b'"data":')
    if w.schema_id != dotbot.SCHEMA_ID or _OBJECT(w.data) is None:
        raise OutsideError("not a dotbot envelope envglot reads")
    if _WRAPPED(w.data) is not None:
        raise OutsideError('a {"value": ...} payload')
    if w.errors and w.status != "error":
        raise OutsideError("a success status with errors (a failure to envglot)")
    return w


_DOTBOT_MEANING = _meaning_keys("dotbot")


def _dotbot_problem(w: dotbot.Envelope) -> dotbot.Issue:
    if not w.errors or w.data != RAW_EMPTY:
        raise OutsideError("a failure without errors, or with a payload to merge")
    e = w.errors[0]
    _no_carried_meaning(e.details, _DOTBOT_MEANING)
    return e


def dotbot_to_response_v2() -> Conv:
    codes = code_table("dotbot", "response-v2")

    def floor(b: bytes) -> bytes:
        w = _dotbot_in(_compact(b))
        au = w.audit
        meta = [b'{"version":"response-v2"']
        cid = au.correlation_id
        if cid is not None and _REQUEST_ID(cid) is not None:
            meta.append(b',"request_id":' + _enc(cid))
        if w.warnings:
            if not all(type(x) is str for x in w.warnings):
                raise OutsideError("object warnings")
            meta.append(b',"warnings":' + _enc(w.warnings))
        dur = au.duration_ms if au.duration_ms >= 0 else 0
        meta.append(b',"telemetry":{"duration_ms":' + _enc(dur) + b"}}}")
        if w.status != "error":
            return b"".join((b'{"success":true,"data":', w.data, b',"error":null,"meta":', *meta))
        e = _dotbot_problem(w)
        code, etype, carried = codes[e.code]
        data = b'{"error_code":' + _enc(code) + b',"error_type":' + _enc(etype)
        details = _carry(_object(e.details) if e.details else None, carried)
        if details is not None and details != RAW_NULL:
            data += b',"details":' + details
        message = e.message or w.summary
        if not message:
            raise OutsideError("a failure without any message")
        return b"".join((b'{"success":false,"data":', data, b'},"error":', _enc(message), b',"meta":', *meta))

    return floor


def dotbot_to_errorcode() -> Conv:
    codes = code_table("dotbot", "errorcode")

    def floor(b: bytes) -> bytes:
        w = _dotbot_in(_compact(b))
        au = w.audit
        ms = au.duration_ms if au.duration_ms >= 0 else 0
        meta = b',"meta":{"tool_version":"1.0","elapsed_ms":' + _enc(ms if type(ms) is int else round(ms))
        if au.correlation_id is not None:
            meta += b',"correlation_id":' + _enc(au.correlation_id)
        if w.status != "error":
            return b"".join((b'{"success":true,"data":', w.data, meta, b"}}"))
        e = _dotbot_problem(w)
        code, retryable = codes[e.code]
        message = e.message or w.summary
        error = b'{"code":' + _enc(code) + b',"message":' + _enc(message) + b',"retryable":' + _enc(retryable)
        return b"".join((b'{"success":false,"data":null,"error":', error, b"}", meta, b"}}"))

    return floor


def dotbot_to_result() -> Conv:
    codes = code_table("dotbot", "result")

    def floor(b: bytes) -> bytes:
        w = _dotbot_in(_compact(b))
        summary = _enc(w.summary)
        if w.status != "error":
            return b"".join((b'{"success":true,"value":', w.data, b',"message":', summary, b"}"))
        e = _dotbot_problem(w)
        code, carried = codes[e.code]
        head = b'{"success":false,"error":' + _enc(e.message) + b',"error_type":' + _enc(code)
        details = _carry(e.details or None, carried)
        if details is not None:
            head += b',"error_data":{"details":' + details + b"}"
        return head + b',"message":' + summary + b"}"

    return floor


def dotbot_to_code_graph() -> Conv:
    codes = code_table("dotbot", "code-graph")

    def floor(b: bytes) -> bytes:
        w = _dotbot_in(_compact(b))
        au = w.audit
        if not _timestamp(au.timestamp):
            raise OutsideError("a time stamp envglot replaces")
        ok = w.status != "error"
        if ok:
            result = w.data
            rid = au.correlation_id or _request_id(w.tool, True, w.data, None, None)
        else:
            e = _dotbot_problem(w)
            code, carried = codes[e.code]
            message = e.message or w.summary
            err = b'{"error":{"code":' + _enc(code) + b',"message":' + _enc(message)
            details = _carry(_object(e.details) if e.details else None, carried)
            if details is not None and details != RAW_NULL:
                err += b',"details":' + details
            result = err + b"}}"
            rid = au.correlation_id or _request_id(w.tool, False, w.data, e.code, e.message)
        steps = []
        if w.intent is not None:
            it = w.intent
            steps.append((it.recommended_next, it.parameters, it.reason))
        for a in w.actions or ():
            steps.append((a.tool, a.parameters, a.reason))
        if any(tool is None for tool, _, _ in steps):
            raise OutsideError("a next step without a tool (envglot drops it)")
        tail = b',"truncated":false,"limits":{}'
        if steps:
            tail += b',"nextQuerySuggestion":['
            for i, (tool, args, reason) in enumerate(steps):
                s = b'{"tool":' + _enc(tool) + b',"args":' + (_object(args) if args and args != RAW_NULL else b"{}")
                if reason is not None:
                    s += b',"reason":' + _enc(reason)
                tail += (b"," if i else b"") + s + b"}"
            tail += b"]"
        head = b"".join(
            (
                b'{"success":',
                b"true" if ok else b"false",
                b',"data":{"tool":',
                _enc(w.tool),
                b',"version":"1.0","requestId":',
                _enc(rid),
                b',"generatedAt":',
                _enc(au.timestamp),
                b',"workspace":{"root":"","repoName":""},"result":',
                result,
                b',"meta":{"approxTokens":',
            )
        )
        return _with_tokens(head, tail + b"}}}")

    return floor


def dotbot_to_problem_json() -> Conv:
    codes = problem_table("dotbot")

    def floor(b: bytes) -> bytes:
        w = _dotbot_in(_compact(b))
        if w.warnings and not all(type(x) is str for x in w.warnings):
            raise OutsideError("object warnings")
        tail = _problem_tail(w.audit.correlation_id, w.data, w.warnings)  # type: ignore[arg-type]
        if w.status != "error":
            return _PROBLEM_OK + tail
        if len(w.errors) != 1:
            raise OutsideError("a failure without errors, or with further errors")
        e = w.errors[0]
        _no_carried_meaning(e.details, _DOTBOT_MEANING)
        return _problem(_coded(codes, e.code), e.message, e.details or None) + tail

    return floor


# --------------------------------------------------------------------------- errorcode sources

_ERRORCODE = msgspec.json.Decoder(errorcode.Envelope).decode
_RV2_ERROR_KEYS = ("error_code", "error_type", "remediation", "details", "retry_after_seconds")


_ERRORCODE_OUTCOME = _outcome_quoted("errorcode")


def _errorcode_in(b: bytes) -> errorcode.Envelope:
    """The checks of envglot's errorcode reader (the wire types; no ``error`` on a success)."""
    try:
        w = _ERRORCODE(b)
    except msgspec.DecodeError as exc:
        raise OutsideError(str(exc)) from None
    _outcome_once(b, _ERRORCODE_OUTCOME, w.data, b'"data":')
    if w.success:
        if w.error is not None:
            raise OutsideError("a success with an error")
    elif w.error is None or not w.error.message:
        raise OutsideError("a failure without an error message")
    m = w.meta
    if m is not None and (m.correlation_id is not None or m.tool_version != errorcode.TOOL_VERSION or m.elapsed_ms < 0):
        raise OutsideError("meta fields outside the corpus (a negative elapsed_ms envglot writes as 0)")
    return w


def _payload_dict(data: Raw) -> dict[str, Raw]:
    """A failure's object payload as a dict (the floor merges the error's fields into it)."""
    if _OBJECT(data) is None:
        raise OutsideError("a failure's non-object payload")
    return _RAW_DICT(data)


def _seconds(ms: int) -> bytes:
    q, r = divmod(ms, 1000)
    return str(q).encode() if r == 0 else f"{q}.{r:03d}".rstrip("0").encode()


def errorcode_to_response_v2() -> Conv:
    codes = code_table("errorcode", "response-v2")

    def floor(b: bytes) -> bytes:
        w = _errorcode_in(_compact(b))
        m = w.meta
        meta = b'{"version":"response-v2"'
        if m is not None:
            pg = m.pagination
            if pg is not None:
                page = {}
                if pg.next_token is not None:
                    page["cursor"] = pg.next_token
                if pg.has_more is not None:
                    page["has_more"] = pg.has_more
                meta += b',"pagination":' + _enc(page)
            meta += b',"telemetry":{"duration_ms":' + _enc(m.elapsed_ms) + b"}"
        meta += b"}}"
        data = w.data
        if w.success:
            if _OBJECT(data) is None:
                raise OutsideError("a non-object payload (wrapped by envglot)")
            return b"".join((b'{"success":true,"data":', data, b',"error":null,"meta":', meta))
        e = w.error
        assert e is not None
        code, etype, carried = codes[(e.code, e.retryable)]
        retry = e.retry_after_ms
        if retry is not None and retry < 0:
            raise OutsideError("a negative retry delay")
        if data == RAW_NULL or data == RAW_EMPTY:
            out = b'{"error_code":' + _enc(code) + b',"error_type":' + _enc(etype)
            if carried:
                out += b',"details":{' + carried + b"}"
            if retry is not None:
                out += b',"retry_after_seconds":' + _seconds(retry)
            out += b"}"
        else:
            d = _payload_dict(data)
            for k in _RV2_ERROR_KEYS:
                d.pop(k, None)
            d["error_code"] = Raw(_enc(code))
            d["error_type"] = Raw(_enc(etype))
            if carried:
                d["details"] = Raw(b"{" + carried + b"}")
            if retry is not None:
                d["retry_after_seconds"] = Raw(_seconds(retry))
            out = _enc(d)
        return b"".join((b'{"success":false,"data":', out, b',"error":', _enc(e.message), b',"meta":', meta))

    return floor


def errorcode_to_dotbot() -> Conv:
    from envglot.mappings import default_mappings

    codes = code_table("errorcode", "dotbot")
    syn = default_mappings()["dotbot"].synthesize
    head = b'{"schema_id":' + _enc(dotbot.SCHEMA_ID) + b',"tool":' + _enc(syn["tool"])
    head += b',"version":' + _enc(syn["tool_version"]) + b',"status":'
    stamp = _enc(syn["timestamp"])
    source = b',"source":' + _enc(syn["source"]) + b"}}"
    no_ms = _enc(syn["duration_ms"])

    def floor(b: bytes) -> bytes:
        w = _errorcode_in(_compact(b))
        m = w.meta
        ms = no_ms if m is None else _enc(m.elapsed_ms)
        audit = b',"audit":{"timestamp":' + stamp + b',"duration_ms":' + ms + source
        data = w.data
        if w.success:
            if _OBJECT(data) is None:
                raise OutsideError("a non-object payload (wrapped by envglot)")
            return b"".join((head, b'"ok","summary":"Completed.","data":', data, b',"warnings":[],"errors":[]', audit))
        e = w.error
        assert e is not None
        code, carried = codes[(e.code, e.retryable)]
        if data == RAW_NULL:
            data = RAW_EMPTY
        elif _OBJECT(data) is None:
            raise OutsideError("a non-object payload (wrapped by envglot)")
        message = _enc(e.message)
        error = b'[{"code":' + _enc(code) + b',"message":' + message
        error += (b',"details":{' + carried + b"}}]") if carried else b"}]"
        return b"".join(
            (head, b'"error","summary":', message, b',"data":', data, b',"warnings":[],"errors":', error, audit)
        )

    return floor


def errorcode_to_result() -> Conv:
    codes = code_table("errorcode", "result")

    def floor(b: bytes) -> bytes:
        w = _errorcode_in(_compact(b))
        if w.success:
            return b'{"success":true,"value":' + w.data + b"}"
        e = w.error
        assert e is not None
        code, carried = codes[(e.code, e.retryable)]
        out = b'{"success":false,"error":' + _enc(e.message) + b',"error_type":' + _enc(code)
        data = w.data
        if data != RAW_NULL and data != RAW_EMPTY:
            d = _payload_dict(data)  # envglot reads it as a dict: an object is written as is
            if carried:
                if "details" in d:
                    raise OutsideError("a payload's own details beside details to carry")
                data = Raw(bytes(data)[:-1] + b',"details":{' + carried + b"}}")  # d is not empty
            out += b',"error_data":' + data
        elif carried:
            out += b',"error_data":{"details":{' + carried + b"}}"
        return out + b"}"

    return floor


def errorcode_to_code_graph() -> Conv:
    from envglot.mappings import default_mappings

    codes = code_table("errorcode", "code-graph")
    syn = default_mappings()["code-graph"].synthesize
    tool = _enc(syn["tool"])
    stamp = _enc(syn["timestamp"])
    root = str(syn["workspace.root"])
    workspace = _enc({"root": root, "repoName": root.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]})

    def floor(b: bytes) -> bytes:
        w = _errorcode_in(_compact(b))
        data = w.data
        if w.success:
            result = data
            rid = _request_id("", True, data, None, None)
        else:
            e = w.error
            assert e is not None
            code, carried = codes[(e.code, e.retryable)]
            err = b'{"code":' + _enc(code) + b',"message":' + _enc(e.message)
            err += (b',"details":{' + carried + b"}}") if carried else b"}"
            if data == RAW_NULL:
                result = b'{"error":' + err + b"}"
                rid = _request_id("", False, None, e.code, e.message)
            else:
                d = {k: v for k, v in _payload_dict(data).items() if k != "error"} if data != RAW_EMPTY else {}
                d["error"] = Raw(err)
                result = _enc(d)
                rid = _request_id("", False, data, e.code, e.message)
        tail = b',"truncated":false,"limits":{}'
        m = w.meta
        if m is not None and m.pagination is not None:
            pg = m.pagination
            if pg.has_more is None:
                raise OutsideError("pagination without has_more (envglot derives it)")
            tail += b',"page":{"hasMore":' + (b"true" if pg.has_more else b"false")
            if pg.next_token is not None:
                tail += b',"cursor":' + _enc(pg.next_token)
            tail += b"}"
        head = b"".join(
            (
                b'{"success":',
                b"true" if w.success else b"false",
                b',"data":{"tool":',
                tool,
                b',"version":"1.0","requestId":',
                _enc(rid),
                b',"generatedAt":',
                stamp,
                b',"workspace":',
                workspace,
                b',"result":',
                result,
                b',"meta":{"approxTokens":',
            )
        )
        return _with_tokens(head, tail + b"}}}")

    return floor


def errorcode_to_problem_json() -> Conv:
    codes = problem_table("errorcode")

    def floor(b: bytes) -> bytes:
        w = _errorcode_in(_compact(b))
        if w.success:
            return _PROBLEM_OK + b',"data":' + w.data + b"}"
        e = w.error
        assert e is not None
        payload = None if w.data == RAW_NULL else w.data
        out = _problem(_coded(codes, (e.code, e.retryable)), e.message, None, e.retry_after_ms, e.retryable)
        return out + _problem_tail(None, payload, None)

    return floor


# --------------------------------------------------------------------------- response-v2 sources

_RV2 = msgspec.json.Decoder(response_v2.Envelope).decode
_RV2_ERROR = msgspec.json.Decoder(dict[str, str | None]).decode
_NUMBER = msgspec.json.Decoder(int | float).decode


def rv2_code_table(dst: str) -> dict[tuple[str, str], tuple[Any, ...]]:
    """(error_code, error_type) -> what envglot writes in ``dst`` (built once, by envglot)."""
    from envglot.mappings import default_mappings

    dmap = default_mappings()["response-v2"]
    out = {}
    for code in dmap.codes:
        for etype in dmap.types:
            doc = orjson.dumps(
                {
                    "success": False,
                    "data": {"error_code": code, "error_type": etype},
                    "error": "m",
                    "meta": {"version": "response-v2"},
                }
            )
            got = envglot.convert(doc, from_="response-v2", to=dst, unsupported="ignore")
            out[(code, etype)] = _TARGET_CODE[dst](orjson.loads(got))
    return out


class _Rv2(msgspec.Struct):
    """What the floors take from a response-v2 document (after envglot's reader checks)."""

    ok: bool
    data: Raw
    message: str | None
    key: tuple[str, str] | None
    details: Raw | None
    retry_ms: int | None
    request_id: str | None
    warnings: list[str] | None
    duration: int | float | None
    pagination: response_v2.Pagination | None
    truncated: bool


_RV2_MEANING = _meaning_keys("response-v2")


_RV2_OUTCOME = _outcome_quoted("response-v2")


def _rv2_in(b: bytes) -> _Rv2:
    """The checks of envglot's response-v2 reader, and the fields the floors use."""
    try:
        w = _RV2(b)
    except msgspec.DecodeError as exc:
        raise OutsideError(str(exc)) from None
    _outcome_once(b, _RV2_OUTCOME, w.data, b'"data":')
    m = w.meta
    if m.version != "response-v2" or _OBJECT(w.data) is None:
        raise OutsideError("not a response-v2 document envglot reads")
    if m.warning_details is not None:
        raise OutsideError("warning details")
    duration = None
    if m.telemetry:
        t = _RAW_DICT(m.telemetry)
        if set(t) != {"duration_ms"}:
            raise OutsideError("telemetry beyond duration_ms")
        duration = _NUMBER(t["duration_ms"])
    truncated = m.content_fidelity not in (None, "full")
    if w.success:
        if w.error is not None:
            raise OutsideError("a success with an error")
        if _WRAPPED(w.data) is not None:
            raise OutsideError('a {"value": ...} payload')
        return _Rv2(True, w.data, None, None, None, None, m.request_id, m.warnings, duration, m.pagination, truncated)
    if not w.error:
        raise OutsideError("a failure without a message")
    d = _RAW_DICT(w.data)
    details = d.pop("details", None)
    if details is not None and bytes(details) == b"null":
        raise OutsideError('"details": null (envglot keeps it; the floors write details only when set)')
    _no_carried_meaning(details, _RV2_MEANING)
    ras = d.pop("retry_after_seconds", None)
    fields = _RV2_ERROR(_enc(d))
    code, etype = fields.pop("error_code", None), fields.pop("error_type", None)
    fields.pop("remediation", None)
    if fields or code is None or etype is None:
        raise OutsideError("a failure's payload beyond the error fields")
    retry_ms = None
    if ras is not None:
        secs = _NUMBER(ras)
        retry_ms = secs * 1000 if type(secs) is int else round(secs * 1000)
    return _Rv2(
        False,
        RAW_EMPTY,
        w.error,
        (code, etype),
        details,
        retry_ms,
        m.request_id,
        m.warnings,
        duration,
        m.pagination,
        truncated,
    )


def response_v2_to_errorcode() -> Conv:
    codes = rv2_code_table("errorcode")

    def floor(b: bytes) -> bytes:
        r = _rv2_in(_compact(b))
        meta = b""
        # response-v2 states no count: errorcode's pagination, which requires one, is never written
        if r.duration is not None or r.request_id is not None:
            dur = r.duration if r.duration is not None else 0
            dur = dur if dur >= 0 else 0
            meta = b',"meta":{"tool_version":"1.0","elapsed_ms":' + _enc(dur if type(dur) is int else round(dur))
            if r.request_id is not None:
                meta += b',"correlation_id":' + _enc(r.request_id)
            meta += b"}"
        if r.ok:
            return b"".join((b'{"success":true,"data":', r.data, meta, b"}"))
        assert r.key is not None
        code, retryable = codes[r.key]
        err = b'{"code":' + _enc(code) + b',"message":' + _enc(r.message) + b',"retryable":' + _enc(retryable)
        if r.retry_ms is not None:
            if r.retry_ms < 0:
                raise OutsideError("a negative retry delay")
            err += b',"retry_after_ms":' + _enc(r.retry_ms)
        return b"".join((b'{"success":false,"data":null,"error":', err, b"}", meta, b"}"))

    return floor


def response_v2_to_result() -> Conv:
    codes = rv2_code_table("result")

    def floor(b: bytes) -> bytes:
        r = _rv2_in(_compact(b))
        if r.ok:
            return b'{"success":true,"value":' + r.data + b"}"
        assert r.key is not None
        code, carried = codes[r.key]
        out = b'{"success":false,"error":' + _enc(r.message) + b',"error_type":' + _enc(code)
        details = _carry(r.details, carried)
        if details is not None:
            out += b',"error_data":{"details":' + details + b"}"
        return out + b"}"

    return floor


def response_v2_to_dotbot() -> Conv:
    from envglot.mappings import default_mappings

    codes = rv2_code_table("dotbot")
    syn = default_mappings()["dotbot"].synthesize
    head = b'{"schema_id":' + _enc(dotbot.SCHEMA_ID) + b',"tool":' + _enc(syn["tool"])
    head += b',"version":' + _enc(syn["tool_version"]) + b',"status":'
    stamp = b',"audit":{"timestamp":' + _enc(syn["timestamp"]) + b',"duration_ms":'
    source = b',"source":' + _enc(syn["source"])

    def floor(b: bytes) -> bytes:
        r = _rv2_in(_compact(b))
        dur = r.duration if r.duration is not None else syn["duration_ms"]
        dur = dur if dur >= 0 else 0
        audit = stamp + _enc(dur if type(dur) is int else round(dur)) + source
        if r.request_id is not None:
            audit += b',"correlation_id":' + _enc(r.request_id)
        warnings = _enc(r.warnings) if r.warnings else b"[]"
        if r.ok:
            status = b'"warning"' if r.warnings else b'"ok"'
            return b"".join(
                (
                    head,
                    status,
                    b',"summary":"Completed.","data":',
                    r.data,
                    b',"warnings":',
                    warnings,
                    b',"errors":[]',
                    audit,
                    b"}}",
                )
            )
        assert r.key is not None
        code, carried = codes[r.key]
        message = _enc(r.message)
        error = b'[{"code":' + _enc(code) + b',"message":' + message
        details = _carry(_object(r.details) if r.details is not None else None, carried)
        if details is not None and details != RAW_NULL:
            error += b',"details":' + details
        return b"".join(
            (
                head,
                b'"error","summary":',
                message,
                b',"data":{},"warnings":',
                warnings,
                b',"errors":',
                error,
                b"}]",
                audit,
                b"}}",
            )
        )

    return floor


def response_v2_to_code_graph() -> Conv:
    from envglot.mappings import default_mappings

    codes = rv2_code_table("code-graph")
    syn = default_mappings()["code-graph"].synthesize
    tool = _enc(syn["tool"])
    stamp = _enc(syn["timestamp"])
    root = str(syn["workspace.root"])
    workspace = _enc({"root": root, "repoName": root.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]})

    def floor(b: bytes) -> bytes:
        r = _rv2_in(_compact(b))
        if r.ok:
            result = r.data
            rid = r.request_id if r.request_id is not None else _request_id("", True, r.data, None, None)
        else:
            assert r.key is not None
            code, carried = codes[r.key]
            err = b'{"error":{"code":' + _enc(code) + b',"message":' + _enc(r.message)
            details = _carry(_object(r.details) if r.details is not None else None, carried)
            if details is not None and details != RAW_NULL:
                err += b',"details":' + details
            result = err + b"}}"
            rid = r.request_id
            if rid is None:
                rid = _request_id("", False, RAW_EMPTY, r.key[0], r.message)
        tail = b',"truncated":' + (b"true" if r.truncated else b"false") + b',"limits":{}'
        pg = r.pagination
        if pg is not None:
            if pg.has_more is None:
                raise OutsideError("pagination without has_more (envglot derives it)")
            tail += b',"page":{"hasMore":' + (b"true" if pg.has_more else b"false")
            if pg.cursor is not None:
                tail += b',"cursor":' + _enc(pg.cursor)
            if pg.total_count is not None:
                if pg.total_count < 0:
                    raise OutsideError("a negative total")
                tail += b',"total":' + _enc(pg.total_count)
            tail += b"}"
        head = b"".join(
            (
                b'{"success":',
                b"true" if r.ok else b"false",
                b',"data":{"tool":',
                tool,
                b',"version":"1.0","requestId":',
                _enc(rid),
                b',"generatedAt":',
                stamp,
                b',"workspace":',
                workspace,
                b',"result":',
                result,
                b',"meta":{"approxTokens":',
            )
        )
        return _with_tokens(head, tail + b"}}}")

    return floor


def response_v2_to_problem_json() -> Conv:
    codes = {key: problem_members(v) for key, v in rv2_code_table("problem-json").items()}

    def floor(b: bytes) -> bytes:
        r = _rv2_in(_compact(b))
        tail = _problem_tail(r.request_id, r.data, r.warnings)
        if r.ok:
            return _PROBLEM_OK + tail
        return _problem(_coded(codes, r.key), r.message, r.details, r.retry_ms) + tail

    return floor


# --------------------------------------------------------------------------- result sources

_RESULT = msgspec.json.Decoder(result.Envelope).decode


class _Res(msgspec.Struct):
    """What the floors take from a Result document (after envglot's reader checks)."""

    ok: bool
    payload: Raw | None
    summary: str | None
    code: str | None
    message: str | None
    details: Raw | None


_RESULT_MEANING = _meaning_keys("result")


_RESULT_OUTCOME = _outcome_quoted("result")


def _result_in(b: bytes) -> _Res:
    """The checks of envglot's Result reader, and the fields the floors use."""
    try:
        w = _RESULT(b)
    except msgspec.DecodeError as exc:
        raise OutsideError(str(exc)) from None
    if w.value:
        _outcome_once(b, _RESULT_OUTCOME, w.value, b'"value":')
    else:
        _outcome_once(b, _RESULT_OUTCOME, w.error_data, b'"error_data":')
    if w.success:
        if w.error is not None or w.error_type is not None:
            raise OutsideError("a success with an error")
        return _Res(True, w.value if w.value else None, w.message, None, None, None)
    if w.value:
        raise OutsideError("a failure with a value")
    if not w.error or w.error_type is None or w.arguments:
        raise OutsideError("a failure without a message or a code")
    payload = details = None
    if w.error_data:
        if _OBJECT(w.error_data) is None:
            details = w.error_data
        else:
            d = _RAW_DICT(w.error_data)
            details = d.pop("details", None)
            payload = Raw(_enc(d)) if d else None
            _no_carried_meaning(details, _RESULT_MEANING)
    return _Res(False, payload, w.message, w.error_type, w.error, details)


def _object_payload(payload: Raw | None) -> Raw:
    """A payload for a target whose payload is an object: absent/null -> {}, others wrapped."""
    if payload is None or payload == RAW_NULL:
        return RAW_EMPTY
    return payload if _OBJECT(payload) is not None else Raw(b'{"value":' + payload + b"}")


def result_to_errorcode() -> Conv:
    codes = code_table("result", "errorcode")

    def floor(b: bytes) -> bytes:
        r = _result_in(_compact(b))
        if r.ok:
            return b'{"success":true,"data":' + (r.payload if r.payload is not None else b"null") + b"}"
        code, retryable = codes[r.code]  # type: ignore[index]
        data = r.payload if r.payload is not None and r.payload != RAW_EMPTY else b"null"
        err = b'{"code":' + _enc(code) + b',"message":' + _enc(r.message) + b',"retryable":' + _enc(retryable)
        return b'{"success":false,"data":' + data + b',"error":' + err + b"}}"

    return floor


def result_to_response_v2() -> Conv:
    codes = code_table("result", "response-v2")

    def floor(b: bytes) -> bytes:
        r = _result_in(_compact(b))
        if r.ok:
            return (
                b'{"success":true,"data":'
                + _object_payload(r.payload)
                + b',"error":null,"meta":{"version":"response-v2"}}'
            )
        code, etype, carried = codes[r.code]  # type: ignore[index]
        payload = _object_payload(r.payload)
        d = _RAW_DICT(payload) if payload != RAW_EMPTY else {}
        for k in _RV2_ERROR_KEYS:
            d.pop(k, None)
        d["error_code"] = Raw(_enc(code))
        d["error_type"] = Raw(_enc(etype))
        details = _carry(_object(r.details) if r.details is not None else None, carried)
        if details is not None and details != RAW_NULL:
            d["details"] = Raw(details)
        return b"".join(
            (b'{"success":false,"data":', _enc(d), b',"error":', _enc(r.message), b',"meta":{"version":"response-v2"}}')
        )

    return floor


def result_to_dotbot() -> Conv:
    from envglot.mappings import default_mappings

    codes = code_table("result", "dotbot")
    syn = default_mappings()["dotbot"].synthesize
    head = b'{"schema_id":' + _enc(dotbot.SCHEMA_ID) + b',"tool":' + _enc(syn["tool"])
    head += b',"version":' + _enc(syn["tool_version"]) + b',"status":'
    audit = b',"audit":{"timestamp":' + _enc(syn["timestamp"]) + b',"duration_ms":' + _enc(syn["duration_ms"])
    audit += b',"source":' + _enc(syn["source"]) + b"}}"

    def floor(b: bytes) -> bytes:
        r = _result_in(_compact(b))
        data = _object_payload(r.payload)
        if r.ok:
            summary = _enc(r.summary) if r.summary is not None else b'"Completed."'
            return b"".join(
                (head, b'"ok","summary":', summary, b',"data":', data, b',"warnings":[],"errors":[]', audit)
            )
        code, carried = codes[r.code]  # type: ignore[index]
        message = _enc(r.message)
        summary = _enc(r.summary) if r.summary is not None else message
        error = b'[{"code":' + _enc(code) + b',"message":' + message
        details = _carry(_object(r.details) if r.details is not None else None, carried)
        if details is not None and details != RAW_NULL:
            error += b',"details":' + details
        return b"".join(
            (head, b'"error","summary":', summary, b',"data":', data, b',"warnings":[],"errors":', error, b"}]", audit)
        )

    return floor


def result_to_code_graph() -> Conv:
    from envglot.mappings import default_mappings

    codes = code_table("result", "code-graph")
    syn = default_mappings()["code-graph"].synthesize
    tool = _enc(syn["tool"])
    stamp = _enc(syn["timestamp"])
    root = str(syn["workspace.root"])
    workspace = _enc({"root": root, "repoName": root.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]})

    def floor(b: bytes) -> bytes:
        r = _result_in(_compact(b))
        if r.ok:
            res = r.payload if r.payload is not None else RAW_NULL
            rid = _request_id("", True, r.payload, None, None)
        else:
            code, carried = codes[r.code]  # type: ignore[index]
            err = b'{"code":' + _enc(code) + b',"message":' + _enc(r.message)
            details = _carry(_object(r.details) if r.details is not None else None, carried)
            if details is not None and details != RAW_NULL:
                err += b',"details":' + details
            err += b"}"
            p = r.payload
            if p is None or p == RAW_NULL or p == RAW_EMPTY:
                res = b'{"error":' + err + b"}"
            else:
                if _OBJECT(p) is None:
                    raise OutsideError("a failure's non-object payload")
                d = {k: v for k, v in _RAW_DICT(p).items() if k != "error"}
                d["error"] = Raw(err)
                res = _enc(d)
            rid = _request_id("", False, p, r.code, r.message)
        head = b"".join(
            (
                b'{"success":',
                b"true" if r.ok else b"false",
                b',"data":{"tool":',
                tool,
                b',"version":"1.0","requestId":',
                _enc(rid),
                b',"generatedAt":',
                stamp,
                b',"workspace":',
                workspace,
                b',"result":',
                res,
                b',"meta":{"approxTokens":',
            )
        )
        return _with_tokens(head, b',"truncated":false,"limits":{}}}}')

    return floor


def result_to_problem_json() -> Conv:
    codes = problem_table("result")

    def floor(b: bytes) -> bytes:
        r = _result_in(_compact(b))
        tail = _problem_tail(None, r.payload, None)
        if r.ok:
            return _PROBLEM_OK + tail
        return _problem(_coded(codes, r.code), r.message, r.details) + tail

    return floor


# --------------------------------------------------------------------------- code-graph sources

_CG = msgspec.json.Decoder(code_graph.Envelope).decode
_CG_ERROR = msgspec.json.Decoder(dict[str, Raw]).decode
_STR = msgspec.json.Decoder(str).decode
_NON_SLUG = re.compile(r"[^a-z0-9]+")


class _Cg(msgspec.Struct):
    """What the floors take from a code-graph document (after envglot's reader checks)."""

    ok: bool
    data: code_graph.Data
    code: str | None
    message: str | None
    details: Raw | None


_CG_MEANING = _meaning_keys("code-graph")


_CG_OUTCOME = _outcome_quoted("code-graph")


def _cg_in(b: bytes) -> _Cg:
    """The checks of envglot's code-graph reader, and the fields the floors use."""
    try:
        w = _CG(b)
    except msgspec.DecodeError as exc:
        raise OutsideError(str(exc)) from None
    _outcome_once(b, _CG_OUTCOME, w.data.result, b'"result":')
    d = w.data
    if d.version != code_graph.VERSION:
        raise OutsideError("another version (kept as an unknown field)")
    if w.success:
        return _Cg(True, d, None, None, None)
    if _OBJECT(d.result) is None:
        raise OutsideError("an error result that is no object")
    res = _RAW_DICT(d.result)
    err_raw = res.pop("error", None)
    if res or err_raw is None or _OBJECT(err_raw) is None:
        raise OutsideError("an error result beyond its error object")
    err = _CG_ERROR(err_raw)
    try:
        code, message = _STR(err.pop("code")), _STR(err.pop("message"))
    except (KeyError, msgspec.ValidationError):
        raise OutsideError("an error without a string code and message") from None
    details = err.pop("details", None)
    if err or not message:
        raise OutsideError("error fields outside the corpus")
    _no_carried_meaning(details, _CG_MEANING)
    return _Cg(False, d, code, message, details)


def code_graph_to_response_v2() -> Conv:
    codes = code_table("code-graph", "response-v2")

    def floor(b: bytes) -> bytes:
        r = _cg_in(_compact(b))
        d = r.data
        meta = b',"meta":{"version":"response-v2"'
        if _REQUEST_ID(d.request_id) is not None:
            meta += b',"request_id":' + _enc(d.request_id)
        pg = d.meta.page
        if pg is not None:
            page: dict[str, Any] = {"cursor": pg.cursor} if pg.cursor is not None else {}
            page["has_more"] = pg.has_more
            if pg.total is not None:
                if pg.total < 0:
                    raise OutsideError("a negative total")
                page["total_count"] = pg.total
            meta += b',"pagination":' + _enc(page)
        meta += b"}}"
        if r.ok:
            return b'{"success":true,"data":' + _object_payload(d.result) + b',"error":null' + meta
        code, etype, carried = codes[r.code]  # type: ignore[index]
        data = b'{"error_code":' + _enc(code) + b',"error_type":' + _enc(etype)
        details = _carry(_object(r.details) if r.details is not None else None, carried)
        if details is not None and details != RAW_NULL:
            data += b',"details":' + details
        return b'{"success":false,"data":' + data + b'},"error":' + _enc(r.message) + meta

    return floor


def code_graph_to_errorcode() -> Conv:
    codes = code_table("code-graph", "errorcode")

    def floor(b: bytes) -> bytes:
        r = _cg_in(_compact(b))
        meta = b',"meta":{"tool_version":"1.0","elapsed_ms":0,"correlation_id":' + _enc(r.data.request_id) + b"}}"
        if r.ok:
            return b'{"success":true,"data":' + r.data.result + meta
        code, retryable = codes[r.code]  # type: ignore[index]
        err = b'{"code":' + _enc(code) + b',"message":' + _enc(r.message) + b',"retryable":' + _enc(retryable)
        return b'{"success":false,"data":null,"error":' + err + b"}" + meta

    return floor


def code_graph_to_result() -> Conv:
    codes = code_table("code-graph", "result")

    def floor(b: bytes) -> bytes:
        r = _cg_in(_compact(b))
        if r.ok:
            return b'{"success":true,"value":' + r.data.result + b"}"
        code, carried = codes[r.code]  # type: ignore[index]
        out = b'{"success":false,"error":' + _enc(r.message) + b',"error_type":' + _enc(code)
        details = _carry(r.details, carried)
        if details is not None:
            out += b',"error_data":{"details":' + details + b"}"
        return out + b"}"

    return floor


def code_graph_to_dotbot() -> Conv:
    from envglot.mappings import default_mappings

    codes = code_table("code-graph", "dotbot")
    syn = default_mappings()["dotbot"].synthesize
    version = b',"version":' + _enc(syn["tool_version"]) + b',"status":'
    source = b',"duration_ms":' + _enc(syn["duration_ms"]) + b',"source":' + _enc(syn["source"])
    id_rule, label_rule, atype = str(syn["next_step.id"]), str(syn["next_step.label"]), str(syn["next_step.type"])

    def floor(b: bytes) -> bytes:
        r = _cg_in(_compact(b))
        d = r.data
        stamp = d.generated_at
        if not _timestamp(stamp) or not stamp.endswith(("Z", "+00:00")):
            raise OutsideError("a time stamp envglot converts or replaces")
        tail = b',"audit":{"timestamp":' + _enc(stamp) + source + b',"correlation_id":' + _enc(d.request_id) + b"}"
        steps = d.meta.next_query_suggestion
        if steps:
            actions = []
            taken: set[str] = set()
            for st in steps:
                tool = st.tool
                slug = _NON_SLUG.sub("-", tool.lower()).strip("-") or "action"
                aid = base = id_rule.format(slug=slug, tool=tool)
                n = 1
                while aid in taken:
                    n += 1
                    aid = f"{base}-{n}"
                taken.add(aid)
                a = b'{"id":' + _enc(aid) + b',"type":' + _enc(atype)
                a += b',"label":' + _enc(label_rule.format(slug=slug, tool=tool))
                if st.reason is not None:
                    a += b',"reason":' + _enc(st.reason)
                if st.args == RAW_NULL:
                    raise OutsideError("null suggestion args")
                a += b',"tool":' + _enc(tool) + b',"parameters":' + _object(st.args)
                actions.append(a + b"}")
            tail += b',"actions":[' + b",".join(actions) + b"]"
        head = b'{"schema_id":' + _enc(dotbot.SCHEMA_ID) + b',"tool":' + _enc(d.tool) + version
        if r.ok:
            return b"".join(
                (
                    head,
                    b'"ok","summary":"Completed.","data":',
                    _object_payload(d.result),
                    b',"warnings":[],"errors":[]',
                    tail,
                    b"}",
                )
            )
        code, carried = codes[r.code]  # type: ignore[index]
        message = _enc(r.message)
        error = b'[{"code":' + _enc(code) + b',"message":' + message
        details = _carry(_object(r.details) if r.details is not None else None, carried)
        if details is not None and details != RAW_NULL:
            error += b',"details":' + details
        return b"".join(
            (head, b'"error","summary":', message, b',"data":{},"warnings":[],"errors":', error, b"}]", tail, b"}")
        )

    return floor


def code_graph_to_problem_json() -> Conv:
    codes = problem_table("code-graph")

    def floor(b: bytes) -> bytes:
        r = _cg_in(_compact(b))
        d = r.data
        if r.ok:
            return _PROBLEM_OK + _problem_tail(d.request_id, d.result, None)
        return _problem(_coded(codes, r.code), r.message, r.details) + _problem_tail(d.request_id, None, None)

    return floor


# --------------------------------------------------------------------------- legacy-v1 sources

_INTERIM_KEYS = frozenset({"success", "data", "error"})
_LEGACY_META = msgspec.json.Decoder(legacy_v1.InterimMeta).decode
_STRS = msgspec.json.Decoder(list[str]).decode
_OPT_STR = msgspec.json.Decoder(str | None).decode
_BOOL = msgspec.json.Decoder(bool).decode


class _Legacy(msgspec.Struct):
    """What the floors take from a legacy-v1 response (after envglot's reader checks)."""

    ok: bool
    payload: Raw
    message: str | None
    warnings: list[str] | None
    pagination: Any
    duration: int | float | None


_LEGACY_OUTCOME = get_dialect("legacy-v1").outcome_key


def _legacy_in(b: bytes) -> _Legacy:
    """The checks of envglot's legacy-v1 reader (shape A or the interim shape B)."""
    try:
        doc = _RAW_DICT(b)
        if repeated_member(b, _LEGACY_OUTCOME, doc):  # envglot's test, given the members parsed here
            raise OutsideError(f"the outcome member {_LEGACY_OUTCOME!r} repeated (envglot refuses the document)")
        if "_envglot" in doc:
            raise OutsideError("a residue")
        raw_error = doc.get("error")
        error = _OPT_STR(raw_error) if raw_error is not None else None
        if (
            doc.keys() == _INTERIM_KEYS
            and _OBJECT(doc["data"]) is not None
            and (doc["error"] == RAW_NULL or bytes(doc["error"])[:1] == b'"')
        ):
            ok = _BOOL(doc["success"])
            if ok and error:
                raise OutsideError("a success with an error (read as a failure)")
            data = _RAW_DICT(doc["data"])
            meta_raw = data.pop("_meta", None)
            warn_raw = data.pop("_warnings", None)
            warnings = _STRS(warn_raw) if warn_raw is not None else None
            pagination = duration = None
            if meta_raw is not None:
                meta = _LEGACY_META(meta_raw)
                pagination = meta.pagination
                if meta.timing is not None:
                    duration = meta.timing.duration_ms
            payload = Raw(_enc(data)) if data else RAW_EMPTY
            return _Legacy(ok, payload, error, warnings, pagination, duration)
        ok = _BOOL(doc["success"]) if "success" in doc else not error
    except msgspec.DecodeError as exc:
        raise OutsideError(str(exc)) from None
    if ok and error:
        raise OutsideError("a success with an error (kept as a warning)")
    rest = {k: v for k, v in doc.items() if k not in ("success", "error", "schema_version")}
    return _Legacy(ok, Raw(_enc(rest)) if rest else RAW_EMPTY, error, None, None, None)


def legacy_code(dst: str) -> tuple[Any, ...]:
    """What envglot writes in ``dst`` for a legacy-v1 failure (one category: legacy has no codes)."""
    doc = envglot.convert(b'{"success":false,"error":"m"}', from_="legacy-v1", to=dst, unsupported="ignore")
    return _TARGET_CODE[dst](orjson.loads(doc))


def _legacy_message(r: _Legacy) -> str:
    if not r.message:
        raise OutsideError("a failure without a message")
    return r.message


def legacy_v1_to_response_v2() -> Conv:
    code, etype, carried = legacy_code("response-v2")
    assert not carried, "every target's code says legacy-v1's one category"
    code_fields = {"error_code": Raw(_enc(code)), "error_type": Raw(_enc(etype))}

    def floor(b: bytes) -> bytes:
        r = _legacy_in(_compact(b))
        meta = b',"meta":{"version":"response-v2"'
        if r.warnings:
            meta += b',"warnings":' + _enc(r.warnings)
        pg = r.pagination
        if pg is not None:
            page: dict[str, Any] = {} if pg.has_more is None else {"has_more": pg.has_more}
            for key, v in (("total_count", pg.total), ("offset", pg.offset), ("limit", pg.limit)):
                if v is not None:
                    if v < 0:
                        raise OutsideError("a negative count")
                    page[key] = v
            meta += b',"pagination":' + _enc(page)
        if r.duration is not None:
            meta += b',"telemetry":{"duration_ms":' + _enc(r.duration if r.duration >= 0 else 0) + b"}"
        meta += b"}}"
        if r.ok:
            return b'{"success":true,"data":' + r.payload + b',"error":null' + meta
        message = _legacy_message(r)
        if r.payload == RAW_EMPTY:
            data = _enc(code_fields)
        else:
            d = _RAW_DICT(r.payload)
            for k in _RV2_ERROR_KEYS:
                d.pop(k, None)
            data = _enc({**d, **code_fields})
        return b'{"success":false,"data":' + data + b',"error":' + _enc(message) + meta

    return floor


def legacy_v1_to_errorcode() -> Conv:
    code, retryable = legacy_code("errorcode")
    head = b',"error":{"code":' + _enc(code) + b',"message":'
    tail = b',"retryable":' + _enc(retryable) + b"}"

    def floor(b: bytes) -> bytes:
        r = _legacy_in(_compact(b))
        meta = b""
        if r.duration is not None:
            ms = r.duration if r.duration >= 0 else 0
            meta = b',"meta":{"tool_version":"1.0","elapsed_ms":' + _enc(ms if type(ms) is int else round(ms)) + b"}"
        if r.ok:
            return b'{"success":true,"data":' + r.payload + meta + b"}"
        data = r.payload if r.payload != RAW_EMPTY else b"null"
        return b'{"success":false,"data":' + data + head + _enc(_legacy_message(r)) + tail + meta + b"}"

    return floor


def legacy_v1_to_result() -> Conv:
    code, carried = legacy_code("result")
    assert not carried, "every target's code says legacy-v1's one category"
    error_type = b',"error_type":' + _enc(code)

    def floor(b: bytes) -> bytes:
        r = _legacy_in(_compact(b))
        if r.ok:
            return b'{"success":true,"value":' + r.payload + b"}"
        out = b'{"success":false,"error":' + _enc(_legacy_message(r)) + error_type
        if r.payload != RAW_EMPTY:
            out += b',"error_data":' + r.payload
        return out + b"}"

    return floor


def legacy_v1_to_dotbot() -> Conv:
    from envglot.mappings import default_mappings

    code, carried = legacy_code("dotbot")
    assert not carried, "every target's code says legacy-v1's one category"
    syn = default_mappings()["dotbot"].synthesize
    head = b'{"schema_id":' + _enc(dotbot.SCHEMA_ID) + b',"tool":' + _enc(syn["tool"])
    head += b',"version":' + _enc(syn["tool_version"]) + b',"status":'
    stamp = b',"audit":{"timestamp":' + _enc(syn["timestamp"]) + b',"duration_ms":'
    source = b',"source":' + _enc(syn["source"]) + b"}}"
    error_code = b'[{"code":' + _enc(code) + b',"message":'

    def floor(b: bytes) -> bytes:
        r = _legacy_in(_compact(b))
        dur = r.duration if r.duration is not None else syn["duration_ms"]
        dur = dur if dur >= 0 else 0
        audit = stamp + _enc(dur if type(dur) is int else round(dur)) + source
        warnings = _enc(r.warnings) if r.warnings else b"[]"
        if r.ok:
            status = b'"warning"' if r.warnings else b'"ok"'
            return b"".join(
                (
                    head,
                    status,
                    b',"summary":"Completed.","data":',
                    r.payload,
                    b',"warnings":',
                    warnings,
                    b',"errors":[]',
                    audit,
                )
            )
        message = _enc(_legacy_message(r))
        return b"".join(
            (
                head,
                b'"error","summary":',
                message,
                b',"data":',
                r.payload,
                b',"warnings":',
                warnings,
                b',"errors":',
                error_code,
                message,
                b"}]",
                audit,
            )
        )

    return floor


def legacy_v1_to_code_graph() -> Conv:
    from envglot.mappings import default_mappings

    code, carried = legacy_code("code-graph")
    assert not carried, "every target's code says legacy-v1's one category"
    syn = default_mappings()["code-graph"].synthesize
    tool = _enc(syn["tool"])
    stamp = _enc(syn["timestamp"])
    root = str(syn["workspace.root"])
    workspace = _enc({"root": root, "repoName": root.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]})
    error_code = b'{"code":' + _enc(code) + b',"message":'

    def floor(b: bytes) -> bytes:
        r = _legacy_in(_compact(b))
        if r.ok:
            res = r.payload
            rid = _request_id("", True, r.payload, None, None)
        else:
            message = _legacy_message(r)
            err = Raw(error_code + _enc(message) + b"}")
            d = {k: v for k, v in _RAW_DICT(r.payload).items() if k != "error"} if r.payload != RAW_EMPTY else {}
            d["error"] = err
            res = _enc(d)
            rid = _request_id("", False, r.payload, "", message)
        tail = b',"truncated":false,"limits":{}'
        pg = r.pagination
        if pg is not None:
            if pg.has_more is None:
                raise OutsideError("pagination without has_more (envglot derives it)")
            tail += b',"page":{"hasMore":' + (b"true" if pg.has_more else b"false")
            total = pg.total
            if total is not None:
                if total < 0:
                    raise OutsideError("a negative total")
                tail += b',"total":' + _enc(total)
            tail += b"}"
        head = b"".join(
            (
                b'{"success":',
                b"true" if r.ok else b"false",
                b',"data":{"tool":',
                tool,
                b',"version":"1.0","requestId":',
                _enc(rid),
                b',"generatedAt":',
                stamp,
                b',"workspace":',
                workspace,
                b',"result":',
                res,
                b',"meta":{"approxTokens":',
            )
        )
        return _with_tokens(head, tail + b"}}}")

    return floor


def legacy_v1_to_problem_json() -> Conv:
    members = problem_members(legacy_code("problem-json"))

    def floor(b: bytes) -> bytes:
        r = _legacy_in(_compact(b))
        tail = _problem_tail(None, r.payload, r.warnings)
        if r.ok:
            return _PROBLEM_OK + tail
        return _problem(members, r.message or "", None) + tail

    return floor


# --------------------------------------------------------------------------- problem-json sources

_PROBLEM_JSON = msgspec.json.Decoder(problem_json.Envelope).decode


_PROBLEM_JSON_OUTCOME = _outcome_quoted("problem-json")


def _problem_json_in(b: bytes) -> tuple[problem_json.Envelope, str | None]:
    """The checks of envglot's problem-json reader (the wire types; ``status`` the outcome, a
    success without problem members) and a failure's code-table key: its ``code`` member, else
    its ``status`` (``None`` for a success)."""
    try:
        w = _PROBLEM_JSON(b)
    except msgspec.DecodeError as exc:
        raise OutsideError(str(exc)) from None
    if w.data:
        _outcome_once(b, _PROBLEM_JSON_OUTCOME, w.data, b'"data":')
    else:
        _outcome_once(b, _PROBLEM_JSON_OUTCOME, w.details, b'"details":')
    status = w.status
    if status is not None and status < 400:
        if status < 200:
            raise OutsideError("a status that is no outcome")
        if (
            w.code is not None
            or w.retryable is not None
            or w.retry_after_ms is not None
            or w.details
            or w.errors is not None
        ):
            raise OutsideError("a success with problem members")
        return w, None
    if status is not None and status > 599:
        raise OutsideError("a status that is no outcome")
    if w.errors is not None:
        raise OutsideError("further problems")
    if w.retryable is not None:
        raise OutsideError("a stated retryable (a target may carry it in details)")
    if w.code is not None:
        return w, w.code
    if status is None:
        raise OutsideError("a problem without a code or a status")
    return w, str(status)


def problem_json_to_response_v2() -> Conv:
    codes = {
        k: (Raw(_enc(code)), Raw(_enc(etype)), carried)
        for k, (code, etype, carried) in code_table("problem-json", "response-v2").items()
    }

    def floor(b: bytes) -> bytes:
        w, key = _problem_json_in(_compact(b))
        meta = b',"meta":{"version":"response-v2"'
        rid = w.request_id
        if rid is not None and _REQUEST_ID(rid) is not None:
            meta += b',"request_id":' + _enc(rid)
        if w.warnings:
            meta += b',"warnings":' + _enc(w.warnings)
        meta += b"}}"
        payload = _object_payload(w.data or None)
        if key is None:
            return b'{"success":true,"data":' + payload + b',"error":null' + meta
        code, etype, carried = _coded(codes, key)
        if not w.detail:
            raise OutsideError("a failure without a message")
        details = _carry(_object(w.details) if w.details else None, carried)
        if payload == RAW_EMPTY:
            data = b'{"error_code":' + code + b',"error_type":' + etype
            if details is not None and details != RAW_NULL:
                data += b',"details":' + details
            if w.retry_after_ms is not None and w.retry_after_ms >= 0:
                data += b',"retry_after_seconds":' + _seconds(w.retry_after_ms)
            data += b"}"
        else:
            d = _RAW_DICT(payload)
            for k in _RV2_ERROR_KEYS:
                d.pop(k, None)
            d["error_code"] = code
            d["error_type"] = etype
            if details is not None and details != RAW_NULL:
                d["details"] = Raw(details)
            if w.retry_after_ms is not None and w.retry_after_ms >= 0:
                d["retry_after_seconds"] = Raw(_seconds(w.retry_after_ms))
            data = _enc(d)
        return b'{"success":false,"data":' + data + b',"error":' + _enc(w.detail) + meta

    return floor


def problem_json_to_errorcode() -> Conv:
    from envglot.mappings import default_mappings

    codes = {
        k: (b'{"code":' + _enc(code) + b',"message":', b',"retryable":' + _enc(retryable))
        for k, (code, retryable) in code_table("problem-json", "errorcode").items()
    }
    elapsed = default_mappings()["errorcode"].synthesize["duration_ms"]
    meta = b',"meta":{"tool_version":' + _enc(errorcode.TOOL_VERSION) + b',"elapsed_ms":' + _enc(elapsed)
    meta += b',"correlation_id":'

    def floor(b: bytes) -> bytes:
        w, key = _problem_json_in(_compact(b))
        tail = b"}" if w.request_id is None else meta + _enc(w.request_id) + b"}}"
        data = w.data
        if key is None:
            return b'{"success":true,"data":' + (data if data else b"null") + tail
        head, retryable = _coded(codes, key)
        err = head + _enc(w.detail or "") + retryable
        if w.retry_after_ms is not None and w.retry_after_ms >= 0:
            err += b',"retry_after_ms":' + _enc(w.retry_after_ms)
        if not data or data == RAW_EMPTY:
            data = RAW_NULL
        return b'{"success":false,"data":' + data + b',"error":' + err + b"}" + tail

    return floor


def problem_json_to_result() -> Conv:
    codes = {
        k: (b',"error_type":' + _enc(code), carried)
        for k, (code, carried) in code_table("problem-json", "result").items()
    }

    def floor(b: bytes) -> bytes:
        w, key = _problem_json_in(_compact(b))
        data = w.data
        if key is None:
            return b'{"success":true,"value":' + data + b"}" if data else b'{"success":true}'
        error_type, carried = _coded(codes, key)
        out = b'{"success":false,"error":' + _enc(w.detail) + error_type
        details = _carry(w.details or None, carried)
        if data and data != RAW_NULL and data != RAW_EMPTY and _OBJECT(data) is not None:
            d = _RAW_DICT(data)
            if details is not None:
                d["details"] = details
            out += b',"error_data":' + _enc(d)
        elif details is not None:
            out += b',"error_data":{"details":' + details + b"}"
        return out + b"}"

    return floor


def problem_json_to_dotbot() -> Conv:
    from envglot.mappings import default_mappings

    codes = {
        k: (b'[{"code":' + _enc(code) + b',"message":', carried)
        for k, (code, carried) in code_table("problem-json", "dotbot").items()
    }
    syn = default_mappings()["dotbot"].synthesize
    head = b'{"schema_id":' + _enc(dotbot.SCHEMA_ID) + b',"tool":' + _enc(syn["tool"])
    head += b',"version":' + _enc(syn["tool_version"]) + b',"status":'
    audit = b',"audit":{"timestamp":' + _enc(syn["timestamp"]) + b',"duration_ms":' + _enc(syn["duration_ms"])
    audit += b',"source":' + _enc(syn["source"])

    def floor(b: bytes) -> bytes:
        w, key = _problem_json_in(_compact(b))
        tail = audit + b"}}" if w.request_id is None else audit + b',"correlation_id":' + _enc(w.request_id) + b"}}"
        warnings = _enc(w.warnings) if w.warnings else b"[]"
        data = _object_payload(w.data or None)
        if key is None:
            status = b'"warning"' if w.warnings else b'"ok"'
            return b"".join(
                (
                    head,
                    status,
                    b',"summary":"Completed.","data":',
                    data,
                    b',"warnings":',
                    warnings,
                    b',"errors":[]',
                    tail,
                )
            )
        opening, carried = _coded(codes, key)
        error = opening + _enc(w.detail or "")
        details = _carry(_object(w.details) if w.details else None, carried)
        if details is not None and details != RAW_NULL:
            error += b',"details":' + details
        return b"".join(
            (
                head,
                b'"error","summary":',
                _enc(w.detail or "Failed."),
                b',"data":',
                data,
                b',"warnings":',
                warnings,
                b',"errors":',
                error,
                b"}]",
                tail,
            )
        )

    return floor


def problem_json_to_code_graph() -> Conv:
    from envglot.mappings import default_mappings

    codes = {
        k: (b'{"code":' + _enc(code) + b',"message":', carried)
        for k, (code, carried) in code_table("problem-json", "code-graph").items()
    }
    syn = default_mappings()["code-graph"].synthesize
    tool = _enc(syn["tool"])
    stamp = _enc(syn["timestamp"])
    root = str(syn["workspace.root"])
    workspace = _enc({"root": root, "repoName": root.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]})

    def floor(b: bytes) -> bytes:
        w, key = _problem_json_in(_compact(b))
        payload = w.data or None
        rid = w.request_id
        if key is None:
            result = payload if payload is not None else RAW_NULL
            if rid is None:
                rid = _request_id("", True, payload, None, None)
        else:
            opening, carried = _coded(codes, key)
            err = opening + _enc(w.detail or "")
            details = _carry(_object(w.details) if w.details else None, carried)
            if details is not None:
                err += b',"details":' + details
            err += b"}"
            if payload is None or payload == RAW_NULL or payload == RAW_EMPTY or _OBJECT(payload) is None:
                result = b'{"error":' + err + b"}"  # a failure's non-object payload has no place
            else:
                d = {k: v for k, v in _RAW_DICT(payload).items() if k != "error"}
                d["error"] = Raw(err)
                result = _enc(d)
            if rid is None:
                rid = _request_id("", False, payload, key, w.detail)
        head = b"".join(
            (
                b'{"success":',
                b"true" if key is None else b"false",
                b',"data":{"tool":',
                tool,
                b',"version":',
                _enc(code_graph.VERSION),
                b',"requestId":',
                _enc(rid),
                b',"generatedAt":',
                stamp,
                b',"workspace":',
                workspace,
                b',"result":',
                result,
                b',"meta":{"approxTokens":',
            )
        )
        return _with_tokens(head, b',"truncated":false,"limits":{}}}}')

    return floor


# --------------------------------------------------------------------------- registry

FLOORS: dict[tuple[str, str], Callable[[], Conv]] = {
    ("dotbot", "response-v2"): dotbot_to_response_v2,
    ("dotbot", "errorcode"): dotbot_to_errorcode,
    ("dotbot", "result"): dotbot_to_result,
    ("dotbot", "code-graph"): dotbot_to_code_graph,
    ("errorcode", "response-v2"): errorcode_to_response_v2,
    ("errorcode", "dotbot"): errorcode_to_dotbot,
    ("errorcode", "result"): errorcode_to_result,
    ("errorcode", "code-graph"): errorcode_to_code_graph,
    ("response-v2", "errorcode"): response_v2_to_errorcode,
    ("response-v2", "result"): response_v2_to_result,
    ("response-v2", "dotbot"): response_v2_to_dotbot,
    ("response-v2", "code-graph"): response_v2_to_code_graph,
    ("result", "errorcode"): result_to_errorcode,
    ("result", "response-v2"): result_to_response_v2,
    ("result", "dotbot"): result_to_dotbot,
    ("result", "code-graph"): result_to_code_graph,
    ("code-graph", "response-v2"): code_graph_to_response_v2,
    ("code-graph", "errorcode"): code_graph_to_errorcode,
    ("code-graph", "result"): code_graph_to_result,
    ("code-graph", "dotbot"): code_graph_to_dotbot,
    ("legacy-v1", "response-v2"): legacy_v1_to_response_v2,
    ("legacy-v1", "errorcode"): legacy_v1_to_errorcode,
    ("legacy-v1", "result"): legacy_v1_to_result,
    ("legacy-v1", "dotbot"): legacy_v1_to_dotbot,
    ("legacy-v1", "code-graph"): legacy_v1_to_code_graph,
    ("dotbot", "problem-json"): dotbot_to_problem_json,
    ("errorcode", "problem-json"): errorcode_to_problem_json,
    ("response-v2", "problem-json"): response_v2_to_problem_json,
    ("result", "problem-json"): result_to_problem_json,
    ("code-graph", "problem-json"): code_graph_to_problem_json,
    ("legacy-v1", "problem-json"): legacy_v1_to_problem_json,
    ("problem-json", "response-v2"): problem_json_to_response_v2,
    ("problem-json", "errorcode"): problem_json_to_errorcode,
    ("problem-json", "result"): problem_json_to_result,
    ("problem-json", "dotbot"): problem_json_to_dotbot,
    ("problem-json", "code-graph"): problem_json_to_code_graph,
}
"""Ordered pair -> a function building its floor (code tables are built then, not per record)."""

NOT_WRITTEN = "no floor written for this pair"
"""What the harness says for a pair without a floor."""


def build(src: str, dst: str, checked: bool = True) -> Conv | None:
    """The floor of ``src -> dst``, or ``None`` when none is written.

    ``checked``: the floor makes the input checks every document must pass (valid UTF-8 by
    ``envglot.limits.check_input``, nesting within ``MAX_DEPTH`` by running the pair code through
    ``envglot.limits.within_depth``), which envglot's trust-boundary rules require of any
    conversion, and refuses (:class:`OutsideError`) a record the pair code raises on (a code
    outside the tables, a member of another type than the floor reads); ``False`` gives the
    bare pair code. The source's outcome member not repeated is tested by each source's reader
    (:func:`_outcome_once`, around the values it decoded, as envglot's strict read), so the bare
    pair code makes that test too.
    """
    make = FLOORS.get((src, dst))
    if make is None:
        return None
    bare = make()
    if not checked:
        return bare

    def floor(b: bytes) -> bytes:
        buf, bom = check_input(b, MAX_DEPTH, depth=False)
        try:
            return within_depth(bare, buf, MAX_DEPTH, bom)
        except EnvglotError:
            raise
        except (KeyError, TypeError, ValueError, msgspec.MsgspecError) as exc:
            raise OutsideError(f"the pair code raised {type(exc).__name__}: {exc}") from None

    return floor
