"""Code tables are round-trip stable (issue 25): every code of every writable dialect, written to
every writable target and converted back, comes back as itself or as a code of the same category
and retryability (as the readers take them: a category a target's codes cannot say travels in
its details). ``envglot mappings check`` runs the same check on an overlay."""

from __future__ import annotations

from pathlib import Path

import pytest

from envglot.crosswalk import check_overlay, unstable_codes
from envglot.errors import MappingError
from envglot.mappings import default_mappings


def _key(u: dict[str, object]) -> str:
    return f"{u['dialect']} {u['code']} -> {u['target']}"


def test_every_code_reads_back_as_itself_or_its_category_or_says_so() -> None:
    """A code that does not come back (as itself, or as its category and retryability) is a
    change one of the two conversions reports: a ``code_mapped`` naming the category the code
    reads back as (or, same category, the retryable change). That is left only where a dialect
    can neither spell the category nor carry it: errorcode's closed enum, as the target, or as
    the source whose hint-bound codes (x_not_configured: the upstream X) no other dialect keeps."""
    unstable = unstable_codes(default_mappings())
    silent = [_key(u) for u in unstable if not u["reported"]]
    assert not silent, silent[:10]
    m = default_mappings()
    carried_both = [
        _key(u)
        for u in unstable
        if "problem.category" in m[str(u["target"])].carried and "problem.category" in m[str(u["dialect"])].carried
    ]
    assert not carried_both, carried_both[:10]  # two dialects with a place for the category never lose it


def test_a_default_retryable_that_a_code_would_flip_travels_in_details() -> None:
    """result ``save_error`` (internal, retryable unstated: the category's false) written as
    response-v2 ``INTERNAL_ERROR`` (whose row says retryable) carries ``retryable: false`` in
    ``data.details`` and comes back internal and not retryable (as result's ``internal``)."""
    import envglot

    doc = b'{"success": false, "error": "disk full", "error_type": "save_error"}'
    there = envglot.convert(doc, from_="result", to="response-v2")
    assert b'"details":{"retryable":false}' in there
    back = envglot.read(envglot.convert(there, from_="response-v2", to="result"), from_="result")
    assert (back.problems[0].category, bool(back.problems[0].retryable)) == ("internal", False)
    assert envglot.read(there, from_="response-v2").problems[0].retryable is False


def test_errorcode_reports_a_retryable_it_derives_against_the_category_default() -> None:
    """response-v2 ``PROVIDER_ERROR`` (unknown, retryable unstated) becomes errorcode
    ``llm_error``, whose code derives retryable=true: reported, not silent."""
    import envglot

    doc = (
        b'{"success": false, "data": {"error_code": "PROVIDER_ERROR", "error_type": "ai_provider"}, '
        b'"error": "m", "meta": {"version": "response-v2"}}'
    )
    c = envglot.conversion(doc, from_="response-v2", to="errorcode", unsupported="ignore")
    assert b'"code":"llm_error"' in c.output and b'"retryable":true' in c.output
    said = [d.message for d in c.diagnostics if d.kind is envglot.Kind.RETRYABLE_CHANGED]
    assert said == [
        "errorcode code 'llm_error' implies retryable=true; "
        "the source stated none (its code's or unknown's default: false)"
    ]


def test_the_known_bug_is_fixed() -> None:
    """errorcode x_api_error -> result upstream_error -> errorcode came back serialization_error,
    retryable false."""
    back = [u for u in unstable_codes(default_mappings(), ["errorcode"]) if u["code"] == "x_api_error"]
    assert back == []


def test_mappings_check_refuses_an_overlay_whose_codes_do_not_come_back(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'dialect = "errorcode"\n\n[[write]]\ncategory = "permission_denied"\ncode = "validation_error"\n'
        'note = "every refusal becomes a validation error: it no longer reads back as permission_denied"\n'
    )
    with pytest.raises(MappingError, match="does not read back") as exc:
        check_overlay(bad)
    assert str(bad) in str(exc.value)
    good = tmp_path / "good.toml"
    good.write_text('dialect = "dotbot"\n\n[codes.SPEC_MISSING]\ncategory = "not_found"\next = true\n')
    check_overlay(good)


def test_says_change_decides_on_facts_not_on_message_text() -> None:
    """A ``code_mapped`` says a category change by the facts it was rendered from (``reads_as``,
    ``was``), a dropped ``retryable`` by its path; a message that merely reads alike says nothing."""
    from envglot.crosswalk import Said, says_change
    from envglot.diagnostics import Diagnostic, Kind, diagnostic

    said = Said()
    said.add(Kind.CODE_MAPPED, "$.code", "result", source="dotbot", code="'X'", result="wrote 'y'")
    said.append(diagnostic(Kind.FIELD_DROPPED, "$.error.why", "result", field="problem.retryable"))
    said.append(Diagnostic(kind=Kind.CODE_MAPPED, path="$.c", message="reads as 'internal', not 'not_found'"))
    assert not says_change(said, ("not_found", False), ("internal", False), {"$.error.retryable"})
    assert not says_change(said, ("internal", False), ("internal", True), {"$.error.retryable"})
    assert says_change(said, ("internal", False), ("internal", True), {"$.error.why"})
    said.add(
        Kind.CODE_MAPPED, "$.code", "result", source="dotbot", code="'X'", result="wrote 'y'",
        reads_as="internal", was="not_found", kept="",
    )  # fmt: skip
    assert said.diagnostics[-1].message == (
        "dotbot code 'X' has no exact result equivalent; wrote 'y', which reads as 'internal', not 'not_found'"
    )
    assert says_change(said, ("not_found", False), ("internal", False), set())
