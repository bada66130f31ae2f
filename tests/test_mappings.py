"""Invariants of the mapping tables (mappings/*.toml) and the ⚑ decisions they encode."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from envglot.crosswalk import check_overlay
from envglot.crosswalk import equivalent as crosswalk_equivalent
from envglot.dialect import dialect_names
from envglot.errors import MappingError
from envglot.mappings import default_mappings, load_mappings, type_for

M = load_mappings()
CATEGORIES = list(M.categories)
WRITABLE = [name for name, d in M.dialects.items() if d.shape.writable]
ALL_CODES = [(d, c) for d in M.dialects for c in M[d].codes]

# ---------------------------------------------------------------------------
# Vocabularies from the sources (real-world-behaviour.md, spec/*.md)
# ---------------------------------------------------------------------------

DOTBOT_CATALOGUE = {
    "DOTBOT_NOT_FOUND", "STATE_FILE_INVALID", "PROJECT_NOT_FOUND", "ALIAS_CONFLICT", "REGISTRY_PARSE_ERROR",
    "TECH_STACK_MISSING", "STANDARDS_NOT_FOUND", "BROKEN_FILE_REFERENCE", "FRONTMATTER_MISSING",
    "FRONTMATTER_INVALID", "CIRCULAR_DEPENDENCY", "INVALID_PARAMETER", "INVALID_STATE", "STATE_NOT_INITIALIZED",
    "STATE_ALREADY_EXISTS", "INVALID_PHASE", "INVALID_TASK_ID", "PHASE_ORDER_MISSING", "TASK_NOT_FOUND",
    "CONFIRMATION_REQUIRED", "HISTORY_FILE_INVALID", "IO_ERROR", "UNAUTHORIZED_OPERATION",
}  # fmt: skip
DOTBOT_EMITTED_EXT = {"INVALID_ARGUMENTS", "SCRIPT_NOT_FOUND", "EXECUTION_FAILED"}
DOTBOT_WRITER_EXT = {
    "NOT_FOUND", "ALREADY_EXISTS", "CONFLICT", "PARTIAL_FAILURE", "UNAUTHENTICATED", "AUTH_EXPIRED", "RATE_LIMITED",
    "NETWORK_ERROR", "NOT_CONFIGURED", "UPSTREAM_ERROR", "INTERNAL_ERROR", "UNAVAILABLE", "UNIMPLEMENTED",
    "CANCELLED", "FAILED_PRECONDITION", "NOT_AVAILABLE", "SPEC_NOT_FOUND", "DEADLINE_EXCEEDED",
}  # fmt: skip

ERRORCODE_SESSION_05 = [
    "x_rate_limited", "x_auth_expired", "x_forbidden", "x_account_restricted", "x_network_error",
    "x_not_configured", "x_api_error", "db_error", "validation_error", "invalid_input", "tweet_too_long",
    "llm_error", "llm_not_configured", "unsupported_media_type", "file_read_error", "media_upload_error",
    "thread_partial_failure", "policy_error", "policy_denied_blocked", "policy_denied_rate_limited",
    "policy_denied_hard_rule", "policy_denied_user_rule", "context_error", "recommendation_error", "topic_error",
    "not_found", "serialization_error",
]  # fmt: skip
ERRORCODE_LATER = ["scraper_mutation_blocked", "x_request_blocked"]
ERRORCODE_ENUM = set(ERRORCODE_SESSION_05) | set(ERRORCODE_LATER)
ERRORCODE_RETRYABLE = {
    "x_rate_limited", "x_network_error", "x_api_error", "db_error", "llm_error", "thread_partial_failure",
    "policy_error",
}  # fmt: skip

CODE_GRAPH_DOCUMENTED = {"INVALID_INPUT", "INTERNAL_ERROR", "NOT_AVAILABLE", "MISSING_PARAMS", "UNKNOWN_ACTION"}
CODE_GRAPH_EMITTED_EXT = {"INVALID_PARAMS", "FILE_NOT_FOUND", "LSP_NOT_AVAILABLE"}

V2_ENUM_FOUNDRY_WORKS = [
    "VALIDATION_ERROR", "INVALID_FORMAT", "MISSING_REQUIRED", "INVALID_PARENT", "INVALID_POSITION",
    "INVALID_REGEX_PATTERN", "PATTERN_TOO_BROAD", "NOT_FOUND", "SPEC_NOT_FOUND", "TASK_NOT_FOUND",
    "PHASE_NOT_FOUND", "DEPENDENCY_NOT_FOUND", "BACKUP_NOT_FOUND", "NO_MATCHES_FOUND", "DUPLICATE_ENTRY",
    "CONFLICT", "CIRCULAR_DEPENDENCY", "SELF_REFERENCE", "UNAUTHORIZED", "FORBIDDEN", "AUTHORIZATION",
    "RATE_LIMIT_EXCEEDED", "RATE_LIMITED", "INTERNAL_ERROR", "UNAVAILABLE", "RESOURCE_BUSY", "BACKUP_CORRUPTED",
    "ROLLBACK_FAILED", "COMPARISON_FAILED", "OPERATION_FAILED", "AI_NO_PROVIDER", "AI_PROVIDER_TIMEOUT",
    "AI_PROVIDER_ERROR", "AI_CONTEXT_TOO_LARGE", "AI_PROMPT_NOT_FOUND", "AI_CACHE_STALE",
    "AUTONOMY_WRITE_LOCK_ACTIVE", "SPEC_SESSION_EXISTS", "NO_ACTIVE_SESSION", "AMBIGUOUS_ACTIVE_SESSION",
    "LOCK_TIMEOUT", "STEP_RESULT_REQUIRED", "STEP_MISMATCH", "INVALID_GATE_EVIDENCE", "INVALID_CURSOR",
    "SESSION_UNRECOVERABLE", "MANUAL_GATE_ACK_REQUIRED", "INVALID_GATE_ACK", "INVALID_STATE_TRANSITION",
    "AUTO_MODE_SPEC_REQUIRED", "SPEC_REBASE_REQUIRED", "REBASE_COMPLETED_TASKS_REMOVED", "HEARTBEAT_STALE",
    "VERSION_CONFLICT", "REBASE_BACKUP_MISSING",
]  # fmt: skip
V2_ENUM = set(V2_ENUM_FOUNDRY_WORKS) | {"FEATURE_DISABLED"}  # + tylerburleigh's only extra member
V2_RAW_EXT = {"INVALID_URL", "BLOCKED_HOST", "EXTRACT_FAILED", "TIMEOUT", "WORKFLOW_ERROR"}
V2_TYPES = {
    # error_type: (category, retryable per the spec's "Retry?" column, http)
    "validation": ("invalid_argument", False, 400),
    "authentication": ("unauthenticated", False, 401),
    "authorization": ("permission_denied", False, 403),
    "not_found": ("not_found", False, 404),
    "conflict": ("aborted", None, 409),
    "rate_limit": ("resource_exhausted", True, 429),
    "feature_flag": ("permission_denied", False, 403),
    "internal": ("internal", True, 500),
    "unavailable": ("unavailable", True, 503),
    "ai_provider": ("unknown", None, 502),
}
V2_RAW_TYPES = {"error", "io", "forbidden"}

RESULT_MCP_GUIDE = {
    "no_project", "not_found", "invalid_name", "save_error", "file_read_error", "safeguard_prevented",
    "template_error", "file_error", "validation_error", "unexpected_error", "config_read_error", "render_error",
    "context_error", "project_error", "project_load_error", "cache_failure", "config_write_error",
    "security_error", "unknown",
}  # fmt: skip
RESULT_WRITER_WORDS = {
    "already_exists", "cancelled", "conflict", "partial_failure", "failed_precondition", "feature_disabled",
    "internal", "not_configured", "permission_denied", "rate_limited", "unauthenticated", "unavailable",
    "unimplemented", "upstream_error",
}  # fmt: skip

# Every hint combination the tables know of: those read from code rows and those a
# write row tests for, plus "no hints".
_COMBOS: set[tuple[str | None, str | None, str | None, bool]] = {(None, None, None, False)}
for _d in M.dialects.values():
    for _r in _d.codes.values():
        _COMBOS.add((_r.origin, _r.upstream, _r.aspect, _r.partial))
    for _rows in _d.write.values():
        for _w in _rows:
            _COMBOS.add((_w.origin, _w.upstream, _w.aspect, bool(_w.partial)))
HINT_COMBOS = sorted(_COMBOS, key=repr)


def hints(origin=None, upstream=None, aspect=None, partial=False) -> dict:
    return {"origin": origin, "upstream": upstream, "aspect": aspect, "partial": partial}


def equivalent(src: str, code: str, dst: str) -> str:
    return crosswalk_equivalent(src, code, dst, M)


# ---------------------------------------------------------------------------
# Loading and coverage
# ---------------------------------------------------------------------------


def test_bundled_tables_load_and_are_cached():
    assert default_mappings() is default_mappings()
    assert set(M.dialects) == set(dialect_names())  # one table per registered dialect
    assert len(M.categories) == 16
    assert M.unknown_category in M.categories


def test_dotbot_coverage():
    codes = M["dotbot"].codes
    assert len(DOTBOT_CATALOGUE) == 23
    assert set(codes) == DOTBOT_CATALOGUE | DOTBOT_EMITTED_EXT | DOTBOT_WRITER_EXT
    assert {c for c, r in codes.items() if not r.ext} == DOTBOT_CATALOGUE


def test_errorcode_is_exactly_the_29_member_enum():
    codes = M["errorcode"].codes
    assert len(ERRORCODE_SESSION_05) == 27
    assert set(codes) == ERRORCODE_ENUM
    assert {c for c, r in codes.items() if r.ext} == set(ERRORCODE_LATER)


def test_code_graph_coverage():
    codes = M["code-graph"].codes
    assert set(codes) == CODE_GRAPH_DOCUMENTED | CODE_GRAPH_EMITTED_EXT
    assert {c for c, r in codes.items() if r.ext} == CODE_GRAPH_EMITTED_EXT


def test_response_v2_coverage():
    codes = M["response-v2"].codes
    assert len(V2_ENUM_FOUNDRY_WORKS) == 55
    assert V2_ENUM | V2_RAW_EXT <= set(codes)
    assert {c for c, r in codes.items() if not r.ext} == V2_ENUM
    assert all(r.type is not None for r in codes.values())
    assert "ALREADY_EXISTS" not in codes  # see the note in response-v2.toml


def test_response_v2_types():
    types = M["response-v2"].types
    assert set(types) == set(V2_TYPES) | V2_RAW_TYPES
    for name, (category, retryable, http) in V2_TYPES.items():
        row = types[name]
        assert (row.category, row.retryable, row.http, row.ext) == (category, retryable, http, False), name
    assert all(types[t].ext for t in V2_RAW_TYPES)


def test_result_coverage():
    codes = M["result"].codes
    assert RESULT_MCP_GUIDE | RESULT_WRITER_WORDS <= set(codes)
    assert {c for c, r in codes.items() if not r.ext} == RESULT_MCP_GUIDE
    assert not M["result"].write.keys() - set(CATEGORIES)


def test_legacy_v1_has_no_codes_and_no_writer():
    assert M["legacy-v1"].codes == {}
    assert not M["legacy-v1"].shape.writable


@pytest.mark.parametrize(("dialect", "code"), ALL_CODES)
def test_every_native_code_maps_to_a_known_category(dialect, code):
    row = M[dialect].codes[code]
    assert row.category in M.categories
    if row.type is not None:
        assert dialect == "response-v2"
        assert row.type in M["response-v2"].types


@pytest.mark.parametrize("dialect", WRITABLE)
@pytest.mark.parametrize("category", CATEGORIES)
def test_every_category_has_a_writer_choice(dialect, category):
    code = M[dialect].choose(category)
    if dialect != "result":  # result's vocabulary is open, the others must name a known code
        assert code in M[dialect].codes
    assert any(w.conditions == 0 for w in M[dialect].write[category])


@pytest.mark.parametrize("dialect", WRITABLE)
def test_no_write_row_is_shadowed(dialect):
    for category, rows in M[dialect].write.items():
        keys = [(w.origin, w.upstream, w.aspect, w.partial) for w in rows]
        assert len(keys) == len(set(keys)), (dialect, category)


@pytest.mark.parametrize(("dialect", "code"), [(d, c) for d, c in ALL_CODES if M[d].shape.writable])
def test_round_trip_through_own_dialect_is_identity(dialect, code):
    row = M[dialect].codes[code]
    got = M[dialect].choose(
        row.category,
        code=code,
        domain=dialect,
        origin=row.origin,
        upstream=row.upstream,
        aspect=row.aspect,
        partial=row.partial,
    )
    assert got == code


# ---------------------------------------------------------------------------
# errorcode: closed enum, retryable derived from the code
# ---------------------------------------------------------------------------


def test_errorcode_retryable_matches_the_spec_exactly():
    codes = M["errorcode"].codes
    assert all(r.retryable is not None for r in codes.values())
    assert {c for c, r in codes.items() if r.retryable} == ERRORCODE_RETRYABLE


def test_errorcode_writer_only_emits_enum_codes():
    ec = M["errorcode"]
    for category, combo in itertools.product(CATEGORIES, HINT_COMBOS):
        assert ec.choose(category, **hints(*combo)) in ERRORCODE_ENUM, (category, combo)
    for src, code in ALL_CODES:
        if src != "errorcode":
            assert equivalent(src, code, "errorcode") in ERRORCODE_ENUM, (src, code)


def test_errorcode_writer_never_chooses_the_post_session_05_codes_for_others():
    for src, code in ALL_CODES:
        if src != "errorcode":
            assert equivalent(src, code, "errorcode") not in ERRORCODE_LATER, (src, code)


# ---------------------------------------------------------------------------
# Writers of the closed or semi-closed vocabularies
# ---------------------------------------------------------------------------


def test_code_graph_writer_only_emits_documented_codes():
    cg = M["code-graph"]
    for category, combo in itertools.product(CATEGORIES, HINT_COMBOS):
        assert cg.choose(category, **hints(*combo)) in CODE_GRAPH_DOCUMENTED
    for src, code in ALL_CODES:
        if src != "code-graph":
            assert equivalent(src, code, "code-graph") in CODE_GRAPH_DOCUMENTED, (src, code)


def test_response_v2_writer_only_emits_enum_codes():
    v2 = M["response-v2"]
    for category, combo in itertools.product(CATEGORIES, HINT_COMBOS):
        assert v2.choose(category, **hints(*combo)) in V2_ENUM
    for src, code in ALL_CODES:
        if src != "response-v2":
            assert equivalent(src, code, "response-v2") in V2_ENUM, (src, code)


def test_response_v2_code_and_error_type_agree():
    """The error_code from response-v2.toml and the error_type from error-types.toml pair up."""
    v2 = M["response-v2"]
    for code, row in v2.codes.items():
        assert (
            type_for(M, "response-v2", row.category, row.origin, row.upstream, row.aspect, row.partial) == row.type
        ), code
    for category, combo in itertools.product(CATEGORIES, HINT_COMBOS):
        code = v2.choose(category, **hints(*combo))
        assert type_for(M, "response-v2", category, *combo) == v2.codes[code].type, (category, combo, code)


def test_dotbot_writer_emits_catalogue_codes_where_one_fits():
    db = M["dotbot"]
    catalogue_categories = {"invalid_argument", "out_of_range", "permission_denied"}
    for category in catalogue_categories:
        assert db.choose(category) in DOTBOT_CATALOGUE
    assert db.choose("internal", origin="io") == "IO_ERROR"


def test_result_writer_words_read_back():
    res = M["result"]
    for category, combo in itertools.product(CATEGORIES, HINT_COMBOS):
        word = res.choose(category, **hints(*combo))
        assert word in res.codes, (category, combo, word)


# ---------------------------------------------------------------------------
# Cross-dialect expectations: every ⚑ decision of error-taxonomy.md, readable
# (source dialect, source code) → the code each other dialect's writer emits; "=" is the source.
# ---------------------------------------------------------------------------

COLUMNS = ("dotbot", "result", "errorcode", "code-graph", "response-v2")
CROSSWALK: dict[str, str] = {
    "dotbot": """
code                    result               errorcode                code-graph      response-v2
DOTBOT_NOT_FOUND        no_project           not_found                NOT_AVAILABLE   NOT_FOUND
STATE_FILE_INVALID      file_error           serialization_error      INTERNAL_ERROR  INTERNAL_ERROR
REGISTRY_PARSE_ERROR    file_error           serialization_error      INTERNAL_ERROR  INTERNAL_ERROR
HISTORY_FILE_INVALID    file_error           serialization_error      INTERNAL_ERROR  INTERNAL_ERROR
PROJECT_NOT_FOUND       not_found            not_found                INVALID_INPUT   NOT_FOUND
ALIAS_CONFLICT          already_exists       validation_error         INVALID_INPUT   DUPLICATE_ENTRY
TECH_STACK_MISSING      not_found            not_found                NOT_AVAILABLE   NOT_FOUND
BROKEN_FILE_REFERENCE   validation_error     validation_error         INVALID_INPUT   VALIDATION_ERROR
FRONTMATTER_MISSING     validation_error     validation_error         INVALID_INPUT   MISSING_REQUIRED
FRONTMATTER_INVALID     validation_error     validation_error         INVALID_INPUT   INVALID_FORMAT
CIRCULAR_DEPENDENCY     failed_precondition  validation_error         INVALID_INPUT   CIRCULAR_DEPENDENCY
INVALID_PARAMETER       validation_error     validation_error         INVALID_INPUT   VALIDATION_ERROR
CONFIRMATION_REQUIRED   validation_error     validation_error         MISSING_PARAMS  MISSING_REQUIRED
IO_ERROR                file_error           file_read_error          INTERNAL_ERROR  INTERNAL_ERROR
UNAUTHORIZED_OPERATION  safeguard_prevented  policy_denied_hard_rule  NOT_AVAILABLE   FORBIDDEN
NOT_CONFIGURED          not_configured       validation_error         NOT_AVAILABLE   UNAVAILABLE
FAILED_PRECONDITION     failed_precondition  validation_error         NOT_AVAILABLE   CONFLICT
CONFLICT                conflict             validation_error         INTERNAL_ERROR  CONFLICT
PARTIAL_FAILURE         partial_failure      thread_partial_failure   INTERNAL_ERROR  CONFLICT
UNAUTHENTICATED         unauthenticated      x_auth_expired           NOT_AVAILABLE   UNAUTHORIZED
RATE_LIMITED            rate_limited         x_rate_limited           NOT_AVAILABLE   RATE_LIMITED
UNAVAILABLE             unavailable          x_network_error          NOT_AVAILABLE   UNAVAILABLE
DEADLINE_EXCEEDED       deadline_exceeded    x_network_error          NOT_AVAILABLE   UNAVAILABLE
UPSTREAM_ERROR          upstream_error       serialization_error      INTERNAL_ERROR  INTERNAL_ERROR
UNIMPLEMENTED           unimplemented        validation_error         NOT_AVAILABLE   VALIDATION_ERROR
CANCELLED               cancelled            serialization_error      INTERNAL_ERROR  INTERNAL_ERROR
""",
    "code-graph": """
code            dotbot             result            errorcode            response-v2
INVALID_INPUT   INVALID_PARAMETER  validation_error  validation_error     VALIDATION_ERROR
MISSING_PARAMS  INVALID_PARAMETER  validation_error  validation_error     MISSING_REQUIRED
UNKNOWN_ACTION  INVALID_PARAMETER  validation_error  invalid_input        VALIDATION_ERROR
NOT_AVAILABLE   NOT_AVAILABLE      unavailable       x_network_error      UNAVAILABLE
INTERNAL_ERROR  INTERNAL_ERROR     internal          serialization_error  INTERNAL_ERROR
FILE_NOT_FOUND  NOT_FOUND          not_found         not_found            NOT_FOUND
""",
    "errorcode": """
code                        dotbot                  result               code-graph      response-v2
x_rate_limited              RATE_LIMITED            rate_limited         NOT_AVAILABLE   RATE_LIMIT_EXCEEDED
x_auth_expired              AUTH_EXPIRED            unauthenticated      NOT_AVAILABLE   UNAUTHORIZED
x_account_restricted        UNAUTHORIZED_OPERATION  permission_denied    NOT_AVAILABLE   FORBIDDEN
x_network_error             NETWORK_ERROR           unavailable          NOT_AVAILABLE   UNAVAILABLE
x_not_configured            NOT_CONFIGURED          not_configured       NOT_AVAILABLE   UNAVAILABLE
x_api_error                 UPSTREAM_ERROR          upstream_error       INTERNAL_ERROR  INTERNAL_ERROR
db_error                    INTERNAL_ERROR          internal             INTERNAL_ERROR  INTERNAL_ERROR
validation_error            INVALID_PARAMETER       validation_error     INVALID_INPUT   VALIDATION_ERROR
invalid_input               INVALID_PARAMETER       validation_error     INVALID_INPUT   VALIDATION_ERROR
tweet_too_long              INVALID_PARAMETER       validation_error     INVALID_INPUT   VALIDATION_ERROR
llm_error                   UPSTREAM_ERROR          upstream_error       INTERNAL_ERROR  AI_PROVIDER_ERROR
llm_not_configured          NOT_CONFIGURED          not_configured       NOT_AVAILABLE   AI_NO_PROVIDER
file_read_error             IO_ERROR                file_read_error      INTERNAL_ERROR  INTERNAL_ERROR
media_upload_error          UPSTREAM_ERROR          upstream_error       INTERNAL_ERROR  INTERNAL_ERROR
thread_partial_failure      PARTIAL_FAILURE         partial_failure      INTERNAL_ERROR  CONFLICT
policy_error                INTERNAL_ERROR          internal             INTERNAL_ERROR  INTERNAL_ERROR
policy_denied_blocked       UNAUTHORIZED_OPERATION  safeguard_prevented  NOT_AVAILABLE   FORBIDDEN
policy_denied_rate_limited  RATE_LIMITED            rate_limited         NOT_AVAILABLE   RATE_LIMIT_EXCEEDED
context_error               INTERNAL_ERROR          context_error        INTERNAL_ERROR  INTERNAL_ERROR
not_found                   NOT_FOUND               not_found            INVALID_INPUT   NOT_FOUND
serialization_error         INTERNAL_ERROR          internal             INTERNAL_ERROR  INTERNAL_ERROR
scraper_mutation_blocked    UNAUTHORIZED_OPERATION  feature_disabled     NOT_AVAILABLE   FEATURE_DISABLED
x_request_blocked           UNAUTHORIZED_OPERATION  safeguard_prevented  NOT_AVAILABLE   FORBIDDEN
""",
    "response-v2": """
code                 dotbot                  result               errorcode                code-graph
VALIDATION_ERROR     INVALID_PARAMETER       validation_error     validation_error         INVALID_INPUT
INVALID_FORMAT       INVALID_PARAMETER       validation_error     invalid_input            INVALID_INPUT
MISSING_REQUIRED     INVALID_PARAMETER       validation_error     validation_error         MISSING_PARAMS
NOT_FOUND            NOT_FOUND               not_found            not_found                INVALID_INPUT
SPEC_NOT_FOUND       SPEC_NOT_FOUND          not_found            not_found                INVALID_INPUT
TASK_NOT_FOUND       TASK_NOT_FOUND          not_found            not_found                INVALID_INPUT
DUPLICATE_ENTRY      ALREADY_EXISTS          already_exists       validation_error         INVALID_INPUT
CONFLICT             CONFLICT                conflict             validation_error         INTERNAL_ERROR
CIRCULAR_DEPENDENCY  CIRCULAR_DEPENDENCY     failed_precondition  validation_error         INVALID_INPUT
UNAUTHORIZED         UNAUTHENTICATED         unauthenticated      x_auth_expired           NOT_AVAILABLE
FORBIDDEN            UNAUTHORIZED_OPERATION  permission_denied    policy_denied_hard_rule  NOT_AVAILABLE
FEATURE_DISABLED     UNAUTHORIZED_OPERATION  feature_disabled     policy_denied_blocked    NOT_AVAILABLE
RATE_LIMIT_EXCEEDED  RATE_LIMITED            rate_limited         x_rate_limited           NOT_AVAILABLE
INTERNAL_ERROR       INTERNAL_ERROR          internal             serialization_error      INTERNAL_ERROR
UNAVAILABLE          UNAVAILABLE             unavailable          x_network_error          NOT_AVAILABLE
AI_NO_PROVIDER       NOT_CONFIGURED          not_configured       llm_not_configured       NOT_AVAILABLE
AI_PROVIDER_TIMEOUT  DEADLINE_EXCEEDED       deadline_exceeded    llm_error                NOT_AVAILABLE
AI_PROVIDER_ERROR    UPSTREAM_ERROR          upstream_error       llm_error                INTERNAL_ERROR
INVALID_POSITION     INVALID_PARAMETER       validation_error     invalid_input            INVALID_INPUT
BACKUP_CORRUPTED     INTERNAL_ERROR          data_loss            serialization_error      INTERNAL_ERROR
WORKSPACE_NOT_FOUND  DOTBOT_NOT_FOUND        no_project           not_found                NOT_AVAILABLE
INVALID_ACTION       INVALID_PARAMETER       validation_error     invalid_input            UNKNOWN_ACTION
TIMEOUT              DEADLINE_EXCEEDED       deadline_exceeded    x_network_error          NOT_AVAILABLE
""",
    "result": """
code                 dotbot                  errorcode                code-graph      response-v2
no_project           DOTBOT_NOT_FOUND        not_found                NOT_AVAILABLE   NOT_FOUND
not_found            NOT_FOUND               not_found                INVALID_INPUT   NOT_FOUND
validation_error     INVALID_PARAMETER       validation_error         INVALID_INPUT   VALIDATION_ERROR
safeguard_prevented  UNAUTHORIZED_OPERATION  policy_denied_hard_rule  NOT_AVAILABLE   FORBIDDEN
file_read_error      IO_ERROR                file_read_error          INTERNAL_ERROR  INTERNAL_ERROR
file_error           IO_ERROR                file_read_error          INTERNAL_ERROR  INTERNAL_ERROR
unexpected_error     INTERNAL_ERROR          serialization_error      INTERNAL_ERROR  INTERNAL_ERROR
context_error        INTERNAL_ERROR          context_error            INTERNAL_ERROR  INTERNAL_ERROR
unknown              INTERNAL_ERROR          serialization_error      INTERNAL_ERROR  INTERNAL_ERROR
feature_disabled     UNAUTHORIZED_OPERATION  policy_denied_blocked    NOT_AVAILABLE   FEATURE_DISABLED
not_configured       NOT_CONFIGURED          validation_error         NOT_AVAILABLE   UNAVAILABLE
partial_failure      PARTIAL_FAILURE         thread_partial_failure   INTERNAL_ERROR  CONFLICT
upstream_error       UPSTREAM_ERROR          serialization_error      INTERNAL_ERROR  INTERNAL_ERROR
""",
}


def _crosswalk_cases() -> list[tuple[str, str, str, str]]:
    cases = []
    for src, table in CROSSWALK.items():
        header, *lines = table.strip().splitlines()
        targets = header.split()[1:]
        for line in lines:
            code, *expected = line.split()
            assert len(expected) == len(targets), line
            cases += [(src, code, dst, want) for dst, want in zip(targets, expected, strict=True)]
    return cases


CROSSWALK_CASES = _crosswalk_cases()


@pytest.mark.parametrize(("src", "code", "dst", "expected"), CROSSWALK_CASES, ids=str)
def test_cross_dialect_expectations(src, code, dst, expected):
    assert equivalent(src, code, dst) == expected


def test_crosswalk_tables_are_well_formed():
    seen = set()
    for src, code, dst, _ in CROSSWALK_CASES:
        assert code in M[src].codes, (src, code)
        assert dst in COLUMNS and dst != src
        assert (src, code, dst) not in seen
        seen.add((src, code, dst))
    for src in CROSSWALK:
        assert {d for s, _, d, _ in CROSSWALK_CASES if s == src} == set(COLUMNS) - {src}


def test_naming_traps():
    # dotbot UNAUTHORIZED_OPERATION is 403, response-v2 UNAUTHORIZED is 401: never each other.
    assert equivalent("dotbot", "UNAUTHORIZED_OPERATION", "response-v2") != "UNAUTHORIZED"
    assert equivalent("response-v2", "UNAUTHORIZED", "dotbot") != "UNAUTHORIZED_OPERATION"
    assert M["dotbot"].codes["UNAUTHORIZED_OPERATION"].category == "permission_denied"
    assert M["response-v2"].codes["UNAUTHORIZED"].category == "unauthenticated"


def test_retry_conflicts_are_stored_explicitly():
    ec = M["errorcode"].codes
    assert ec["db_error"].category == "internal" and ec["db_error"].retryable is True
    assert ec["policy_denied_rate_limited"].category == "resource_exhausted"
    assert ec["policy_denied_rate_limited"].retryable is False
    assert M.default_retryable("internal") is False
    assert M["response-v2"].types["internal"].retryable is True
    assert M["response-v2"].types["conflict"].retryable is None


def test_upstream_failures_export_502():
    for dialect, code in [
        ("errorcode", "x_api_error"),
        ("errorcode", "llm_error"),
        ("errorcode", "media_upload_error"),
        ("response-v2", "AI_PROVIDER_ERROR"),
    ]:
        assert M[dialect].codes[code].http == 502


# ---------------------------------------------------------------------------
# error-types.toml: result error_type ↔ response-v2 error_type
# ---------------------------------------------------------------------------

# (category, hints) → (response-v2 error_type, result error_type)
ERROR_TYPES = [
    ("cancelled", {}, "internal", "cancelled"),
    ("unknown", {}, "internal", "unknown"),
    ("unknown", {"origin": "upstream", "upstream": "x"}, "internal", "upstream_error"),
    ("unknown", {"origin": "upstream", "upstream": "llm"}, "ai_provider", "upstream_error"),
    ("invalid_argument", {}, "validation", "validation_error"),
    ("invalid_argument", {"aspect": "too_large", "upstream": "llm"}, "ai_provider", "validation_error"),
    ("deadline_exceeded", {}, "unavailable", "deadline_exceeded"),
    ("deadline_exceeded", {"upstream": "llm"}, "ai_provider", "deadline_exceeded"),
    ("not_found", {}, "not_found", "not_found"),
    ("not_found", {"aspect": "workspace"}, "not_found", "no_project"),
    ("already_exists", {}, "conflict", "already_exists"),
    ("permission_denied", {}, "authorization", "permission_denied"),
    ("permission_denied", {"origin": "policy"}, "authorization", "safeguard_prevented"),
    ("permission_denied", {"aspect": "feature_disabled"}, "feature_flag", "feature_disabled"),
    ("permission_denied", {"origin": "policy", "aspect": "feature_disabled"}, "feature_flag", "feature_disabled"),
    ("resource_exhausted", {}, "rate_limit", "rate_limited"),
    ("failed_precondition", {}, "conflict", "failed_precondition"),
    ("failed_precondition", {"aspect": "not_configured"}, "unavailable", "not_configured"),
    ("failed_precondition", {"aspect": "not_configured", "upstream": "llm"}, "ai_provider", "not_configured"),
    ("failed_precondition", {"aspect": "corrupt"}, "internal", "file_error"),
    ("failed_precondition", {"aspect": "missing"}, "validation", "validation_error"),
    ("failed_precondition", {"aspect": "stale"}, "unavailable", "failed_precondition"),
    ("aborted", {}, "conflict", "conflict"),
    ("aborted", {"partial": True}, "conflict", "partial_failure"),
    ("out_of_range", {}, "validation", "validation_error"),
    ("unimplemented", {}, "validation", "unimplemented"),
    ("internal", {}, "internal", "internal"),
    ("internal", {"origin": "io"}, "internal", "file_error"),
    ("unavailable", {}, "unavailable", "unavailable"),
    ("data_loss", {}, "internal", "data_loss"),
    ("unauthenticated", {}, "authentication", "unauthenticated"),
]


@pytest.mark.parametrize(("category", "hint", "v2_type", "result_type"), ERROR_TYPES)
def test_error_type_equivalence(category, hint, v2_type, result_type):
    h = hints(**hint)
    assert type_for(M, "response-v2", category, h["origin"], h["upstream"], h["aspect"], h["partial"]) == v2_type
    assert M["result"].choose(category, **h) == result_type


def _unconditional(r) -> bool:
    return all(getattr(r, k) is None for k in ("origin", "upstream", "aspect", "partial"))


def test_error_types_every_category_has_an_unconditional_row_with_both_columns():
    for category in CATEGORIES:
        rows = [r for r in M.error_types if r.category == category and _unconditional(r)]
        assert len(rows) == 1, category
        assert rows[0].words.get("response-v2") is not None and rows[0].words.get("result") is not None


def test_error_types_conditional_rows_come_first():
    flags = [_unconditional(r) for r in M.error_types]
    assert all(flags[flags.index(True) :])


def test_error_types_values_exist():
    for r in M.error_types:
        if r.words.get("response-v2") is not None:
            assert r.words.get("response-v2") in M["response-v2"].types
            assert not M["response-v2"].types[r.words.get("response-v2")].ext  # never write a raw type
        if r.words.get("result") is not None:
            assert r.words.get("result") in M["result"].codes


def test_v2_types_round_trip_through_the_hub():
    """Reading a bare response-v2 error_type and writing it back gives the same error_type."""
    lossy = {"feature_flag": "authorization", "ai_provider": "internal"}  # a [types] row carries no hints
    for name, row in M["response-v2"].types.items():
        if row.ext:
            continue
        assert type_for(M, "response-v2", row.category, None, None, None, False) == lossy.get(name, name), name


# ---------------------------------------------------------------------------
# Overlays
# ---------------------------------------------------------------------------


def _overlay(tmp_path: Path, text: str, name: str = "overlay.toml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_overlay_adds_a_code_and_a_writer_choice(tmp_path):
    p = _overlay(
        tmp_path,
        'dialect = "dotbot"\n'
        "[codes.INDEX_STALE]\n"
        'category = "unavailable"\n'
        'aspect = "stale_index"\n'
        "ext = true\n"
        "[[write]]\n"
        'category = "unavailable"\n'
        'aspect = "stale_index"\n'
        'code = "INDEX_STALE"\n',
    )
    m = check_overlay(p)
    assert m["dotbot"].codes["INDEX_STALE"].category == "unavailable"
    assert m["dotbot"].choose("unavailable", aspect="stale_index") == "INDEX_STALE"
    assert m["dotbot"].choose("unavailable") == "UNAVAILABLE"
    assert "INDEX_STALE" not in default_mappings()["dotbot"].codes
    assert str(p) in m.sources


def test_overlay_overrides_a_mapping_and_a_writer_choice(tmp_path):
    p = _overlay(
        tmp_path,
        'dialect = "code-graph"\n'
        "[codes.NOT_AVAILABLE]\n"
        'category = "failed_precondition"\n'
        'note = "our server only says this before indexing"\n'
        "[[write]]\n"
        'category = "not_found"\n'
        'code = "FILE_NOT_FOUND"\n',
    )
    m = load_mappings([p])
    assert m["code-graph"].codes["NOT_AVAILABLE"].category == "failed_precondition"
    assert m["code-graph"].choose("not_found") == "FILE_NOT_FOUND"  # overlay rows win among equals
    assert m["code-graph"].choose("not_found", origin="state") == "NOT_AVAILABLE"  # more specific still wins
    assert default_mappings()["code-graph"].codes["NOT_AVAILABLE"].category == "unavailable"


def test_overlay_error_type_rows_come_first(tmp_path):
    p = _overlay(tmp_path, '[[row]]\ncategory = "aborted"\nresult = "clash"\nresponse-v2 = "conflict"\n')
    m = load_mappings([p])
    assert m["result"].choose("aborted") == "clash"
    assert default_mappings()["result"].choose("aborted") == "conflict"


def test_later_overlays_win(tmp_path):
    a = _overlay(tmp_path, 'dialect = "dotbot"\n[codes.X_CODE]\ncategory = "internal"\n', "a.toml")
    b = _overlay(tmp_path, 'dialect = "dotbot"\n[codes.X_CODE]\ncategory = "unknown"\n', "b.toml")
    assert load_mappings([a, b])["dotbot"].codes["X_CODE"].category == "unknown"


BROKEN = [
    pytest.param(
        'dialect = "dotbot"\n[codes.MY_CODE]\ncategory = "not_found"\ncolour = "red"\n',
        ["colour", "$.codes"],
        id="unknown-key",
    ),
    pytest.param(
        'dialect = "dotbot"\n[codes.MY_CODE]\ncategory = "misplaced"\n',
        ["[codes.MY_CODE]", "misplaced"],
        id="unknown-category",
    ),
    pytest.param(
        'dialect = "code-graph"\n[[write]]\ncategory = "not_found"\ncode = "NO_SUCH_CODE"\n',
        ["[[write]]", "NO_SUCH_CODE", "not_found"],
        id="write-row-names-missing-code",
    ),
    pytest.param('dialect = "dotbot"\n[codes.MY_CODE\ncategory = "x"\n', ["TOML"], id="bad-toml"),
    pytest.param('dialect = "dotbott"\n', ["dotbott"], id="unknown-dialect"),
    pytest.param('[codes.MY_CODE]\ncategory = "internal"\n', ["dialect"], id="codes-without-dialect"),
    pytest.param(
        'dialect = "response-v2"\n[codes.MY_CODE]\ncategory = "internal"\ntype = "kaput"\n',
        ["[codes.MY_CODE]", "kaput"],
        id="unknown-v2-type",
    ),
    pytest.param('dialect = "dotbot"\n[codes.MY_CODE]\nretryable = true\n', ["category", "$.codes"], id="no-category"),
]


@pytest.mark.parametrize(("text", "needles"), BROKEN)
def test_broken_overlay_raises_mapping_error_naming_file_and_row(tmp_path, text, needles):
    p = _overlay(tmp_path, text, "broken-overlay.toml")
    with pytest.raises(MappingError) as exc:
        check_overlay(p)
    msg = str(exc.value)
    assert "broken-overlay.toml" in msg
    for needle in needles:
        assert needle in msg


def test_broken_overlay_unknown_key_names_the_code(tmp_path):
    p = _overlay(tmp_path, 'dialect = "dotbot"\n[codes.MY_CODE]\ncategory = "not_found"\ncolour = "red"\n')
    with pytest.raises(MappingError, match="MY_CODE"):
        check_overlay(p)


def test_broken_overlay_error_type_row_names_the_overlay(tmp_path):
    p = _overlay(tmp_path, '[[row]]\ncategory = "aborted"\nresponse-v2 = "kaput"\n', "broken-overlay.toml")
    with pytest.raises(MappingError) as exc:
        check_overlay(p)
    assert "broken-overlay.toml" in str(exc.value)


def test_broken_overlay_error_type_row_is_rejected(tmp_path):
    p = _overlay(tmp_path, '[[row]]\ncategory = "aborted"\nresponse-v2 = "kaput"\n', "broken-overlay.toml")
    with pytest.raises(MappingError, match="kaput"):
        check_overlay(p)


def test_missing_overlay_file(tmp_path):
    with pytest.raises(MappingError, match="cannot read"):
        check_overlay(tmp_path / "nope.toml")


def test_overlay_cannot_add_codes_to_a_closed_enum(tmp_path):
    p = _overlay(tmp_path, 'dialect = "errorcode"\n[codes.my_new_code]\ncategory = "internal"\nretryable = false\n')
    with pytest.raises(MappingError, match=r"closed enum.*my_new_code"):
        check_overlay(p)


def test_overlay_may_remap_a_closed_enum_code(tmp_path):
    text = 'dialect = "errorcode"\n[codes.context_error]\ncategory = "unavailable"\nretryable = false\n'
    p = _overlay(tmp_path, text)
    assert check_overlay(p)["errorcode"].codes["context_error"].category == "unavailable"


def test_v2_error_type_rows_carry_hints():
    m = default_mappings()
    assert m["response-v2"].types["feature_flag"].aspect == "feature_disabled"
    assert m["response-v2"].types["ai_provider"].upstream == "llm"


def test_synthesize_rows_must_name_fields_of_the_table(tmp_path):
    import shutil

    from envglot.mappings import load_mappings, mappings_dir

    base = tmp_path / "tables"
    shutil.copytree(mappings_dir(), base)
    table = base / "dotbot.toml"
    table.write_text(table.read_text().replace("[synthesize]\n", '[synthesize]\nfavourite_colour = "red"\n', 1))
    with pytest.raises(MappingError, match=r"dotbot.toml: \[synthesize\] names 'favourite_colour'"):
        load_mappings(base=base)
