"""Property tests (hypothesis).

(a) With ``preserve=True`` a round trip through any other envelope dialect restores the
    original document: ``convert(convert(x, to=B, preserve=True), to=A, preserve=True)``
    is JSON-equal to ``x`` for every valid envelope ``x`` of dialect ``A``.
(b) Any input either converts or raises :class:`envglot.EnvglotError` (never another
    exception): arbitrary JSON values, mutated valid envelopes, raw bytes.
"""

from __future__ import annotations

import itertools
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import envglot
from envglot.dialects import NAMES, WRITABLE
from envglot.mappings import default_mappings
from golden import json_key

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
M = default_mappings()

# ---------------------------------------------------------------------------
# JSON building blocks
# ---------------------------------------------------------------------------

text = st.text(max_size=8)  # any unicode (no lone surrogates): quotes, backslashes, controls, emoji
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
)
"""Payloads: any JSON value."""
_KEYS = st.sampled_from(["a", "id", "value", "error", "x y", 'q"uote', "\\", "é", "😀", ""])
objects = st.dictionaries(_KEYS | text, scalars | st.lists(scalars, max_size=2), max_size=3)
"""Small objects for details, parameters, limits, contexts."""
some_objects = objects.filter(bool)
counts = st.integers(min_value=0, max_value=2**53)


def code_of(dialect: str) -> st.SearchStrategy[str]:
    """A code the dialect's table knows, or an unknown one."""
    return st.sampled_from(sorted(M[dialect].codes)) | st.text(alphabet="ABCDEFGHIJ_xyz", min_size=1, max_size=10)


def record(
    required: dict[str, Any],
    optional: dict[str, Any] | None = None,
    extra: bool = True,
    known: frozenset[str] = frozenset(),
) -> st.SearchStrategy:
    """An object with ``required`` keys, any of ``optional``, and (``extra``) unknown keys of a newer emitter.

    Unknown keys avoid ``known`` (the dialect's other field names) and the preserve slot.
    """
    base = st.fixed_dictionaries(
        {k: v if isinstance(v, st.SearchStrategy) else st.just(v) for k, v in required.items()},
        optional=optional or {},
    )
    if not extra:
        return base
    taken = set(required) | set(optional or {}) | set(known) | {"_envglot"}
    unknown = st.dictionaries(text.filter(lambda k: k not in taken), json_values, max_size=1)
    return st.builds(lambda d, e: {**d, **e}, base, unknown)


# ---------------------------------------------------------------------------
# Valid envelopes, one strategy per writable dialect
# ---------------------------------------------------------------------------

_dotbot_issue = record({"code": code_of("dotbot"), "message": text}, {"path": text, "details": objects}, extra=False)
_dotbot_step = record(
    {}, {"id": text, "type": text, "label": text, "reason": text, "tool": text, "parameters": objects}, extra=False
)


def _dotbot(errors: list[Any], warnings: list[Any], rest: dict[str, Any]) -> dict[str, Any]:
    status = "error" if errors else "warning" if warnings else "ok"
    return {"schema_id": "dotbot-mcp-response@1", "status": status, "errors": errors, "warnings": warnings, **rest}


dotbot = st.builds(
    _dotbot,
    st.lists(_dotbot_issue, max_size=3),
    st.lists(text | _dotbot_issue, max_size=2),
    record(
        {
            "tool": text,
            "version": text,
            "summary": text,
            "data": objects | st.builds(lambda v: {"value": v}, json_values),
            "audit": record(
                {"timestamp": text, "duration_ms": st.integers(0, 2**31), "source": text},
                {"host": text, "correlation_id": text, "write_to": text},
                extra=False,
            ),
        },
        {
            "intent": record({}, {"recommended_next": text, "reason": text, "parameters": objects}, extra=False),
            "actions": st.lists(_dotbot_step, min_size=1, max_size=2),
        },
    ),
)

_RESULT_TAIL = {
    "message": text,
    "arguments": objects,
    "instruction": text,
    "disposition": text,
    "additional_agent_instructions": text,
}
_RESULT_FIELDS = frozenset({"value", "error", "error_type", "error_data", "exception_type", "exception_message"})
result = record(
    {"success": True}, {"value": json_values.filter(lambda v: v is not None), **_RESULT_TAIL}, known=_RESULT_FIELDS
) | record(
    {"success": False, "error": st.none() | text, "error_type": st.none() | code_of("result")},
    {"error_data": some_objects, "exception_type": text, "exception_message": text, **_RESULT_TAIL},
    known=_RESULT_FIELDS,
)


def _tool_error(code: str, retryable: bool, rest: dict[str, Any]) -> dict[str, Any]:
    row = M["errorcode"].codes.get(code)
    return {"code": code, "retryable": retryable if row is None else bool(row.retryable), **rest}


_errorcode_meta = record(
    {"tool_version": "1.0", "elapsed_ms": counts},
    {
        "mode": text,
        "approval_mode": st.booleans(),
        "pagination": record({}, {"next_token": text, "result_count": counts, "has_more": st.booleans()}, extra=False),
        "correlation_id": text,
    },
)
errorcode = record(
    {"success": True, "data": json_values}, {"meta": _errorcode_meta}, known=frozenset({"error"})
) | record(
    {
        "success": False,
        "data": st.none() | objects,
        "error": st.builds(
            _tool_error,
            code_of("errorcode"),
            st.booleans(),
            record({"message": text}, {"rate_limit_reset": text, "retry_after_ms": counts, "policy_decision": text}),
        ),
    },
    {"meta": _errorcode_meta},
)


def _code_graph(ok: bool, result: Any, data: dict[str, Any]) -> dict[str, Any]:
    return {"success": ok, "data": {**data, "result": result}}


_cg_data = record(
    {
        "tool": text,
        "version": "1.0",
        "requestId": text,
        "generatedAt": text,
        "workspace": record({"root": text, "repoName": text}, {"rev": text}, extra=False),
        "meta": record(
            {"approxTokens": counts, "truncated": st.booleans(), "limits": objects},
            {
                "nextQuerySuggestion": st.lists(
                    record({"tool": text, "args": objects}, {"reason": text}, extra=False), min_size=1, max_size=2
                ),
                "page": record({"hasMore": st.booleans()}, {"cursor": text, "total": counts}, extra=False),
            },
            extra=False,
        ),
    },
    extra=False,
)
code_graph = st.builds(_code_graph, st.just(True), json_values, _cg_data) | st.builds(
    _code_graph,
    st.just(False),
    st.builds(
        lambda e: {"error": e},
        record({"code": code_of("code-graph"), "message": text}, {"details": objects}, extra=False),
    ),
    _cg_data,
)


def _v2_failure(payload: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if k not in fields} | fields


_v2_meta = record(
    {"version": "response-v2"},
    {
        "request_id": text,
        "warnings": st.lists(text, min_size=1, max_size=2),
        "warning_details": st.lists(
            record({"message": text}, {"code": text, "severity": text, "context": objects}, extra=False),
            min_size=1,
            max_size=2,
        ),
        "pagination": record(
            {}, {"cursor": text, "has_more": st.booleans(), "page_size": counts, "total_count": counts}, extra=False
        ),
        "rate_limit": objects,
        "telemetry": st.builds(lambda d, t: {"duration_ms": d, **t}, st.floats(0, 10**6), objects),
        "content_fidelity": st.sampled_from(["full", "partial", "summary", "reference_only"]),
        "dropped_content_ids": st.lists(text, max_size=2),
    },
)
response_v2 = record({"success": True, "data": objects, "error": None, "meta": _v2_meta}, extra=False) | record(
    {
        "success": False,
        "data": st.builds(
            _v2_failure,
            objects,
            record(
                {},
                {
                    "error_code": code_of("response-v2"),
                    "error_type": st.sampled_from(sorted(M["response-v2"].types)) | text,
                    "remediation": text,
                    "details": some_objects,
                    "retry_after_seconds": st.integers(0, 3600),
                },
                extra=False,
            ),
        ),
        "error": text.filter(bool),
        "meta": _v2_meta,
    },
    extra=False,
)

ENVELOPES: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "dotbot": dotbot,
    "result": result,
    "errorcode": errorcode,
    "code-graph": code_graph,
    "response-v2": response_v2,
}
assert set(ENVELOPES) == set(WRITABLE)

# ---------------------------------------------------------------------------
# (a) preserve round trips
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("src", WRITABLE)
def test_preserve_round_trip_restores_the_original(src: str) -> None:
    """One test per source dialect; every example goes through each of the four other dialects.

    When the example is valid in its own dialect, every intermediate must validate in its target.
    """

    @SETTINGS
    @given(doc=ENVELOPES[src])
    def check(doc: dict[str, Any]) -> None:
        data = msgspec.json.encode(doc)
        source_valid = not envglot.validate(data, src)
        for dst in WRITABLE:
            if dst == src:
                continue
            there = envglot.convert(data, from_=src, to=dst, preserve=True, unsupported="ignore")
            if source_valid:  # an intermediate is a real document of its target (issue 11, class 7)
                assert envglot.validate(there, dst) == [], f"{src} -> {dst}: {there!r}"
            back = envglot.convert(there, from_=dst, to=src, preserve=True, unsupported="ignore")
            assert json_key(back) == json_key(data), f"{src} -> {dst} -> {src}"

    check()


# ---------------------------------------------------------------------------
# (b) any input converts or raises EnvglotError
# ---------------------------------------------------------------------------

_SOURCES = (None, *NAMES)


def converts_or_raises_envglot_error(data: bytes) -> None:
    """Convert ``data`` from every source (and auto-detected) to every target."""
    for from_, to in itertools.product(_SOURCES, WRITABLE):
        for level in ("ignore", "raise"):
            try:
                out = envglot.convert(data, from_=from_, to=to, unsupported=level)
            except envglot.EnvglotError as exc:
                assert str(exc)
                assert exc.path is None or exc.path.startswith("$"), exc.path
            else:
                envglot.read(out, from_=to)  # the writer's output is a valid document of its dialect


_VOCABULARY = st.sampled_from(
    "success data error meta value schema_id status errors warnings audit version result requestId generatedAt "
    "error_type found _envglot content structuredContent isError".split()
)
envelope_like = st.recursive(
    scalars | st.sampled_from(["dotbot-mcp-response@1", "response-v2", "1.0"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_VOCABULARY | text, inner, max_size=4),
    max_leaves=10,
)
"""JSON whose keys are mostly the dialects' own words: it reaches deep into the readers."""


@SETTINGS
@given(value=json_values | envelope_like)
def test_any_json_value_converts_or_raises_envglot_error(value: Any) -> None:
    converts_or_raises_envglot_error(msgspec.json.encode(value))


@SETTINGS
@given(data=st.binary(max_size=64))
def test_any_bytes_convert_or_raise_envglot_error(data: bytes) -> None:
    converts_or_raises_envglot_error(data)


def _paths(doc: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [at] if at else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*at, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*at, i))
    return out


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    """A valid envelope of a random dialect with fields deleted or given values of other types."""
    doc = draw(st.one_of(*ENVELOPES.values()))
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = doc
        for seg in path[:-1]:
            parent = parent[seg]
        if isinstance(parent, dict) and draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(st.sampled_from([None, True, 0, -1.5, "", "x", [], {}, [None], {"": None}]))
    return doc


@SETTINGS
@given(doc=mutated())
def test_mutated_envelopes_convert_or_raise_envglot_error(doc: dict[str, Any]) -> None:
    converts_or_raises_envglot_error(msgspec.json.encode(doc))
