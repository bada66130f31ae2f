"""envglot.crosswalk: code descriptions, dialect-to-dialect tables and overlay templates."""

from __future__ import annotations

import msgspec
import pytest

from envglot.crosswalk import check_overlay, crosswalk, describe_code, equivalent, hints_of, overlay_template, writable
from envglot.dialect import registered
from envglot.errors import UnknownDialectError, UnsupportedError
from envglot.mappings import load_mappings

M = load_mappings()
WRITABLE = [d.name for d in registered() if d.shape.writable]


def test_writable_dialects():
    assert writable(M) == WRITABLE


def test_describe_errorcode_code():
    (entry,) = describe_code("x_rate_limited", M)
    assert entry["dialect"] == "errorcode"
    assert entry["category"] == "resource_exhausted"
    assert (entry["http"], entry["grpc"]) == (429, 8)
    assert (entry["retryable"], entry["retryable_source"]) == (True, "code")
    assert entry["hints"] == {"origin": "upstream", "upstream": "x"}
    assert set(entry["equivalents"]) == set(WRITABLE) - {"errorcode"}  # every other writer
    assert (
        entry["equivalents"].items()
        >= {
            "dotbot": "RATE_LIMITED",
            "result": "rate_limited",
            "code-graph": "NOT_AVAILABLE",
            "response-v2": "RATE_LIMIT_EXCEEDED",
        }.items()
    )


def test_describe_uses_category_defaults_and_http_overrides():
    (entry,) = describe_code("PROJECT_NOT_FOUND", M)
    assert (entry["retryable"], entry["retryable_source"]) == (False, "category")
    assert entry["http"] == 404
    (upstream,) = describe_code("x_api_error", M)
    assert upstream["http"] == 502  # the row's override, not unknown's 500
    assert upstream["grpc"] == 2


def test_describe_code_found_in_several_dialects():
    entries = describe_code("INTERNAL_ERROR", M)
    assert [e["dialect"] for e in entries] == ["code-graph", "dotbot", "response-v2"]
    assert all(e["category"] == "internal" for e in entries)
    v2 = entries[-1]  # dialects in registry (name) order
    assert v2["type"] == "internal"
    assert set(v2["equivalents"]) == set(WRITABLE) - {"response-v2"}  # every other writer


def test_describe_code_filters_by_dialect():
    having = [d.name for d in registered() if "NOT_FOUND" in M[d.name].codes]  # registry order
    assert [e["dialect"] for e in describe_code("NOT_FOUND", M)] == having
    assert {"dotbot", "response-v2"} <= set(having)
    assert [e["dialect"] for e in describe_code("NOT_FOUND", M, dialect="response-v2")] == ["response-v2"]
    assert describe_code("NOT_FOUND", M, dialect="errorcode") == []


def test_describe_unknown_code_and_dialect():
    assert describe_code("NO_SUCH_CODE", M) == []
    with pytest.raises(UnknownDialectError, match="did you mean 'dotbot'"):
        describe_code("NOT_FOUND", M, dialect="dotbott")


def test_describe_ext_and_note():
    (entry,) = describe_code("scraper_mutation_blocked", M)
    assert entry["ext"] is True
    assert entry["hints"]["aspect"] == "feature_disabled"
    assert entry["equivalents"]["response-v2"] == "FEATURE_DISABLED"


def test_crosswalk_errorcode_to_response_v2():
    rows = crosswalk("errorcode", "response-v2", M)
    assert [r["code"] for r in rows] == list(M["errorcode"].codes)
    by_code = {r["code"]: r for r in rows}
    assert by_code["llm_not_configured"]["target"] == "AI_NO_PROVIDER"
    assert by_code["llm_not_configured"]["same_category"] is True
    assert by_code["x_not_configured"]["target"] == "UNAVAILABLE"
    assert by_code["x_not_configured"]["target_category"] == "unavailable"
    assert by_code["x_not_configured"]["same_category"] is False
    assert by_code["thread_partial_failure"]["target"] == "CONFLICT"
    assert all(r["target"] in M["response-v2"].codes for r in rows)


@pytest.mark.parametrize("src", WRITABLE)
@pytest.mark.parametrize("dst", WRITABLE)
def test_crosswalk_every_pair(src, dst):
    rows = crosswalk(src, dst, M)
    assert len(rows) == len(M[src].codes)
    for r in rows:
        assert r["target"] == equivalent(src, r["code"], dst, M)
        assert r["target_category"] is not None  # every emitted code reads back
        if src == dst:
            assert r["target"] == r["code"]


def test_crosswalk_from_legacy_v1_is_empty_and_into_it_is_refused():
    assert crosswalk("legacy-v1", "response-v2", M) == []
    with pytest.raises(UnsupportedError, match="read-only"):
        crosswalk("dotbot", "legacy-v1", M)
    with pytest.raises(UnknownDialectError):
        crosswalk("dotbot", "nope", M)


def test_hints_of():
    assert hints_of(M["errorcode"].codes["thread_partial_failure"]) == {
        "origin": "upstream",
        "upstream": "x",
        "partial": True,
    }
    assert hints_of(M["errorcode"].codes["not_found"]) == {}


@pytest.mark.parametrize("dialect", list(M.dialects))
def test_overlay_template_loads_and_changes_no_existing_choice(tmp_path, dialect):
    text = overlay_template(dialect, M)
    assert text == overlay_template(dialect, M)  # deterministic
    assert text.startswith("# envglot mapping overlay")
    for key in ("category", "retryable", "origin", "upstream", "aspect", "partial", "http", "ext", "note"):
        assert f"#   {key}" in text
    doc = msgspec.toml.decode(text.encode())
    assert doc["dialect"] == dialect
    assert len(doc["codes"]) == 1
    p = tmp_path / f"{dialect}.toml"
    p.write_text(text, encoding="utf-8")
    m = check_overlay(p)
    assert set(m[dialect].codes) >= set(M[dialect].codes)
    if M[dialect].shape.writable:
        assert len(doc["write"]) == 1
        for category in M.categories:
            assert m[dialect].choose(category) == M[dialect].choose(category)
        (w,) = doc["write"]
        assert m[dialect].choose(w["category"], aspect="example_aspect") == w["code"]
    else:
        assert "write" not in doc


def test_overlay_template_for_the_closed_errorcode_enum_adds_no_code(tmp_path):
    text = overlay_template("errorcode", M)
    assert "closed vocabulary" in text
    p = tmp_path / "errorcode.toml"
    p.write_text(text, encoding="utf-8")
    m = check_overlay(p)
    assert set(m["errorcode"].codes) == set(M["errorcode"].codes)
    for code, row in M["errorcode"].codes.items():
        before = msgspec.to_builtins(row)
        after = msgspec.to_builtins(m["errorcode"].codes[code])
        before.pop("note", None)
        after.pop("note", None)
        assert before == after, code


def test_overlay_template_unknown_dialect():
    with pytest.raises(UnknownDialectError):
        overlay_template("dot-bot", M)
