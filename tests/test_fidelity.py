"""Issue 25, case by case: meaning that a target's codes cannot say travels in its extension
place; an absent optional member is never written as ``null``."""

from __future__ import annotations

import msgspec
import pytest

import envglot

FORBIDDEN = (
    b'{"success":false,"data":null,"error":{"code":"x_forbidden","message":"no","retryable":false},'
    b'"meta":{"tool_version":"1.0","elapsed_ms":3}}'
)


def test_code_graph_carries_a_category_its_codes_cannot_say_and_reads_it_back() -> None:
    there = envglot.convert(FORBIDDEN, from_="errorcode", to="code-graph")
    err = msgspec.json.decode(there)["data"]["result"]["error"]
    assert err["code"] == "NOT_AVAILABLE"
    assert err["details"] == {"category": "permission_denied", "retryable": False}
    assert envglot.validate(there, "code-graph") == []
    p = envglot.read(there, from_="code-graph").problems[0]
    assert (p.category, p.retryable, p.details) == ("permission_denied", False, None)
    back = msgspec.json.decode(envglot.convert(there, from_="code-graph", to="errorcode", unsupported="ignore"))
    m = envglot.mappings.default_mappings()
    assert m["errorcode"].codes[back["error"]["code"]].category == "permission_denied"
    assert back["error"]["retryable"] is False  # an agent must not retry a forbidden call


def test_carried_meaning_joins_the_details_the_error_already_has() -> None:
    src = (
        b'{"success":false,"data":{"error_code":"FORBIDDEN","error_type":"authorization",'
        b'"details":{"host":"x"}},"error":"no","meta":{"version":"response-v2"}}'
    )
    there = envglot.convert(src, from_="response-v2", to="code-graph", unsupported="ignore")
    assert msgspec.json.decode(there)["data"]["result"]["error"]["details"] == {
        "host": "x",
        "category": "permission_denied",
        "retryable": False,
    }
    back = envglot.convert(there, from_="code-graph", to="response-v2", unsupported="ignore")
    data = msgspec.json.decode(back)["data"]
    assert (data["error_code"], data["details"]) == ("FORBIDDEN", {"host": "x"})


@pytest.mark.parametrize(
    ("details", "read_as"),
    [
        (b'{"host":"x"}', ("not_found", {"host": "x"})),
        (b'{"c\\u0061tegory":"internal","host":"x"}', ("internal", {"host": "x"})),  # a key with an escape
        (b'{"host":{"category":"internal"}}', ("not_found", {"host": {"category": "internal"}})),  # not a member
        (b'{"category":"books"}', ("not_found", {"category": "books"})),  # no category
        (b'{"retryable":true}', ("not_found", None)),
        (b'["category"]', ("not_found", ["category"])),  # no object: carries nothing
        (b'"category"', ("not_found", "category")),
    ],
)
def test_a_readers_details_carry_a_category_only_as_their_own_members(
    details: bytes, read_as: tuple[str, object]
) -> None:
    """What :func:`envglot.codes.carried_meaning` takes out of ``details``: a member named by the
    table (its key read as its text), never a nested one or a string that looks like it."""
    doc = (
        b'{"schema_id":"dotbot-mcp-response@1","tool":"t","version":"1","status":"error","summary":"s",'
        b'"data":{},"warnings":[],"errors":[{"code":"NOT_FOUND","message":"m","details":' + details + b"}],"
        b'"audit":{"timestamp":"2026-01-01T00:00:00Z","duration_ms":1,"source":"s"}}'
    )
    p = envglot.read(doc, from_="dotbot").problems[0]
    got = None if p.details is None else msgspec.json.decode(p.details)
    assert (p.category, got) == read_as


def test_a_code_that_says_its_category_adds_nothing() -> None:
    src = b'{"success":false,"error":"bad","error_type":"validation_error"}'
    there = msgspec.json.decode(envglot.convert(src, from_="result", to="code-graph", unsupported="ignore"))
    assert "details" not in there["data"]["result"]["error"]


def test_a_details_category_that_is_no_category_stays_in_details() -> None:
    doc = (
        b'{"success":false,"data":{"tool":"t","version":"1.0","requestId":"r","generatedAt":"2024-01-01T00:00:00Z",'
        b'"workspace":{"root":"","repoName":""},"result":{"error":{"code":"INTERNAL_ERROR","message":"m",'
        b'"details":{"category":"books"}}},"meta":{"approxTokens":0,"truncated":false,"limits":{}}}}'
    )
    p = envglot.read(doc, from_="code-graph").problems[0]
    assert p.category == "internal"
    assert msgspec.json.decode(p.details) == {"category": "books"}


NULL_DETAILS = b'{"success":false,"error":"gone","error_type":"not_found","error_data":null}'
DETAILS_PLACE = {"response-v2": ("data", "details"), "dotbot": ("errors", 0, "details"), "code-graph": ()}


@pytest.mark.parametrize("target", ["response-v2", "dotbot", "code-graph"])
def test_null_details_are_never_written_as_null(target: str) -> None:
    out = envglot.convert(NULL_DETAILS, from_="result", to=target, unsupported="ignore")
    assert b'"details":null' not in out
    assert envglot.validate(out, target) == []


@pytest.mark.parametrize(
    ("target", "doc", "path"),
    [
        (
            "response-v2",
            {
                "success": False,
                "data": {"error_code": "NOT_FOUND", "error_type": "not_found", "details": None},
                "error": "x",
                "meta": {"version": "response-v2"},
            },
            "$.data.details",
        ),
        (
            "dotbot",
            {
                "schema_id": "dotbot-mcp-response@1",
                "tool": "t",
                "version": "1.0.0",
                "status": "error",
                "summary": "s",
                "data": {},
                "warnings": [],
                "errors": [{"code": "NOT_FOUND", "message": "m", "details": None}],
                "audit": {"timestamp": "2024-01-01T00:00:00Z", "duration_ms": 0, "source": "x"},
            },
            "$.errors[0].details",
        ),
    ],
)
def test_validate_rejects_null_details(target: str, doc: dict, path: str) -> None:
    assert path in [v.path for v in envglot.validate(msgspec.json.encode(doc), target)]


NULL_CURSOR = (
    b'{"success":true,"data":{"a":1},"error":null,"meta":{"version":"response-v2",'
    b'"pagination":{"cursor":null,"has_more":false,"page_size":100}}}'
)


def test_an_explicit_null_cursor_survives_response_v2() -> None:
    env = envglot.read(NULL_CURSOR, from_="response-v2")
    assert env.pagination is not None and env.pagination.null_cursor and env.pagination.cursor is None
    assert envglot.convert(NULL_CURSOR, from_="response-v2", to="response-v2") == NULL_CURSOR
    absent = NULL_CURSOR.replace(b'"cursor":null,', b"")
    assert envglot.convert(absent, from_="response-v2", to="response-v2") == absent


def test_a_stated_error_type_wins_over_an_extension_codes_guess() -> None:
    """response-v2 ``TIMEOUT`` is an extension code (its row is a reading of its spelling); an
    envelope that states ``error_type: unavailable`` is unavailable, not deadline_exceeded."""
    stated = (
        b'{"success":false,"data":{"error_code":"TIMEOUT","error_type":"unavailable"},"error":"slow",'
        b'"meta":{"version":"response-v2"}}'
    )
    assert envglot.read(stated, from_="response-v2").problems[0].category == "unavailable"
    dotbot = msgspec.json.decode(envglot.convert(stated, from_="response-v2", to="dotbot", unsupported="ignore"))
    assert dotbot["errors"][0]["code"] != "DEADLINE_EXCEEDED"
    silent = stated.replace(b',"error_type":"unavailable"', b"")
    assert envglot.read(silent, from_="response-v2").problems[0].category == "deadline_exceeded"


def test_a_category_inferred_from_a_codes_spelling_is_reported() -> None:
    """Only when nothing states the category: response-v2 ``TIMEOUT`` without ``error_type`` is
    read as deadline_exceeded with a ``category_inferred`` note at its code; stated, no note; a
    catalogue code (``NOT_FOUND``) is no inference."""
    stated = (
        b'{"success":false,"data":{"error_code":"TIMEOUT","error_type":"unavailable"},"error":"slow",'
        b'"meta":{"version":"response-v2"}}'
    )
    silent = stated.replace(b',"error_type":"unavailable"', b"")
    conv = envglot.conversion(silent, from_="response-v2", to="result", unsupported="ignore")
    inferred = [d for d in conv.diagnostics if d.kind is envglot.Kind.CATEGORY_INFERRED]
    assert [(d.path, d.lossy) for d in inferred] == [("$.data.error_code", False)]
    assert "'deadline_exceeded', inferred from its spelling" in inferred[0].message
    said = envglot.conversion(stated, from_="response-v2", to="result", unsupported="ignore")
    assert envglot.Kind.CATEGORY_INFERRED not in {d.kind for d in said.diagnostics}
    known = silent.replace(b"TIMEOUT", b"NOT_FOUND")
    plain = envglot.conversion(known, from_="response-v2", to="result", unsupported="ignore")
    assert envglot.Kind.CATEGORY_INFERRED not in {d.kind for d in plain.diagnostics}


def test_an_exact_re_spelling_is_code_respelled_not_a_loss() -> None:
    src = b'{"success":false,"error":"gone","error_type":"not_found"}'
    conv = envglot.conversion(src, from_="result", to="response-v2")
    assert [d.kind.value for d in conv.diagnostics] == ["code_respelled"]
    assert not conv.lossy
    back = msgspec.json.decode(envglot.convert(conv.output, from_="response-v2", to="result"))
    assert back["error_type"] == "not_found"


def test_a_code_of_another_category_is_still_code_mapped() -> None:
    conv = envglot.conversion(FORBIDDEN, from_="errorcode", to="code-graph", unsupported="ignore")
    mapped = [d for d in conv.diagnostics if d.kind.value == "code_mapped"]
    assert mapped and "reads as 'unavailable', not 'permission_denied'" in mapped[0].message


@pytest.mark.parametrize("target", ["result", "errorcode", "code-graph"])
def test_empty_members_that_carry_nothing_are_not_reported_dropped(target: str) -> None:
    doc = (
        b'{"success":true,"data":{"a":1},"error":null,"meta":{"version":"response-v2","warnings":[],'
        b'"warning_details":[],"pagination":null}}'
    )
    conv = envglot.conversion(doc, from_="response-v2", to=target, unsupported="ignore")
    assert not [d for d in conv.diagnostics if d.kind.value == "field_dropped"]


def test_a_carried_category_written_with_an_escape_is_read_back() -> None:
    """The byte look that skips decoding ``details`` never misses a member whose key has an escape."""
    doc = (
        b'{"success":false,"data":{"tool":"t","version":"1.0","requestId":"r","generatedAt":"2024-01-01T00:00:00Z",'
        b'"workspace":{"root":"","repoName":""},"result":{"error":{"code":"NOT_AVAILABLE","message":"m",'
        b'"details":{"c\\u0061tegory":"permission_denied","retr\\u0079able":false}}},'
        b'"meta":{"approxTokens":0,"truncated":false,"limits":{}}}}'
    )
    p = envglot.read(doc, from_="code-graph").problems[0]
    assert (p.category, p.retryable, p.details) == ("permission_denied", False, None)
    plain = doc.replace(b"c\\u0061tegory", b"category").replace(b"retr\\u0079able", b"retryable")
    assert envglot.read(plain, from_="code-graph").problems[0] == p


def test_a_shared_context_keeps_a_bounded_number_of_choices() -> None:
    """A pipeline's fused path binds one context for every document: its choices stay bounded."""
    from envglot.canonical import Problem
    from envglot.codes import planned
    from envglot.context import Context
    from envglot.diagnostics import DISCARD

    m = envglot.mappings.default_mappings()
    ctx = Context(m, DISCARD, m["dotbot"])
    problems = [Problem(category="invalid_argument", message=f"m{i}") for i in range(500)]
    chosen = [planned(p, m["response-v2"], ctx) for p in problems]
    assert ctx.choices is not None and 0 < len(ctx.choices) <= 64
    assert len({ch.code for ch in chosen}) == 1  # a choice derived again is the same
