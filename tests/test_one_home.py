"""Facts with one home (issue 24): the canonical field lists derived from the model, one
writer-choice matcher, one row-to-problem rule (an error code's lookups per side: tests/test_code_lookups.py)."""

from __future__ import annotations

import itertools

import msgspec
import pytest

from envglot import canonical as c
from envglot.codes import carry_meaning, choice, problem_of, read_problem, write_plan
from envglot.context import Context, report_losses
from envglot.crosswalk import equivalent
from envglot.diagnostics import Kind, Report
from envglot.mappings import load_mappings, type_for
from envglot.tables import WriteRow, matching, most_specific_first

M = load_mappings()
HINTS = list(
    itertools.product((None, "input", "upstream", "state"), (None, "x", "llm"), (None, "missing"), (False, True))
)


def test_metadata_fields_partition_the_envelope():
    own = {"ok", "payload", "problems", "warnings", "next_steps", "extras", "residue"}
    assert set(c.SCALARS) | set(c.GROUPS) | own == set(c.ENVELOPE_FIELDS)
    assert not set(c.SCALARS) & set(c.GROUPS) and not (set(c.SCALARS) | set(c.GROUPS)) & own
    assert c.GROUPS == {"pagination": c.Pagination, "fidelity": c.Fidelity, "workspace": c.Workspace}
    assert list(c.SCALARS) == [f for f in c.ENVELOPE_FIELDS if f in c.SCALARS]  # model order


def _optional(struct: type[msgspec.Struct]) -> set[str]:
    return {f.name for f in msgspec.structs.fields(struct) if f.default is None}


@pytest.mark.parametrize("field", c.SCALARS)
def test_every_scalar_is_checked_for_loss(field):
    target = next(d for d in M.dialects.values() if d.shape.writable and field not in d.carried)
    env = msgspec.structs.replace(c.Envelope(ok=True), **{field: _value(c.Envelope, field)})
    report = Report()
    report_losses(env, target, Context(M, report))
    assert [(d.kind, d.path) for d in report.diagnostics] == [(Kind.FIELD_DROPPED, f"$.{field}")]


@pytest.mark.parametrize("group, field", [(g, f) for g, tp in c.GROUPS.items() for f in sorted(_optional(tp))], ids=str)
def test_every_group_field_is_checked_for_loss(group, field):
    target = M["result"]  # carries no pagination, fidelity or workspace field
    assert not any(k.startswith(group + ".") for k in target.carried)
    value = msgspec.structs.replace(c.GROUPS[group](), **{field: _value(c.GROUPS[group], field)})
    report = Report()
    report_losses(msgspec.structs.replace(c.Envelope(ok=True), **{group: value}), target, Context(M, report))
    assert [(d.kind, d.path) for d in report.diagnostics] == [(Kind.FIELD_DROPPED, f"$.{group}.{field}")]


def _value(struct: type[msgspec.Struct], field: str) -> object:
    kind = {str: "s", int: 1, bool: True, float: 1.5}
    hint = str(msgspec.structs.fields(struct)[struct.__struct_fields__.index(field)].type)
    for t, v in kind.items():
        if t.__name__ in hint:
            return v
    return msgspec.Raw(b"{}")


def test_matcher_is_the_one_both_lookups_use():
    for dmap in M.dialects.values():
        if not dmap.shape.writable:
            continue
        for category, rows in dmap.write.items():
            assert rows == most_specific_first(rows)
            for origin, upstream, aspect, partial in HINTS:
                first = next(matching(rows, origin, upstream, aspect, partial), None)
                if first is not None:
                    assert dmap.choose(category, None, None, origin, upstream, aspect, partial) == first.code
    for category in M.categories:
        for origin, upstream, aspect, partial in HINTS:
            rows = [r for r in matching(M.error_types_by_specificity, origin, upstream, aspect, partial)]
            want = next(r.words["response-v2"] for r in rows if r.category == category and "response-v2" in r.words)
            assert type_for(M, "response-v2", category, origin, upstream, aspect, partial) == want


def test_matching_keeps_rows_whose_stated_hints_hold_in_the_given_order():
    rows = most_specific_first(
        [
            WriteRow(category="unavailable", code="ANY"),
            WriteRow(category="unavailable", code="STALE", aspect="stale_index"),
            WriteRow(category="unavailable", code="X_STALE", aspect="stale_index", upstream="x"),
            WriteRow(category="unavailable", code="PARTIAL", partial=True),
        ]
    )
    assert [r.code for r in rows] == ["X_STALE", "STALE", "PARTIAL", "ANY"]
    assert [r.code for r in matching(rows, None, "x", "stale_index", False)] == ["X_STALE", "STALE", "ANY"]
    assert [r.code for r in matching(rows, None, None, "stale_index", True)] == ["STALE", "PARTIAL", "ANY"]
    assert [r.code for r in matching(rows, "input", None, None, False)] == ["ANY"]


def test_one_row_to_problem_rule():
    row = M["errorcode"].codes["thread_partial_failure"]
    p = problem_of(row, "thread_partial_failure", "errorcode", message="m")
    assert (p.category, p.origin, p.upstream, p.aspect, p.partial) == (
        row.category,
        row.origin,
        row.upstream,
        row.aspect,
        row.partial,
    )
    assert p.retryable == row.retryable and p.message == "m"
    assert problem_of(row, "thread_partial_failure", "errorcode", retryable=True).retryable is True
    word = M["response-v2"].types["rate_limit"]
    q = problem_of(word, None, "response-v2")
    assert (q.category, q.retryable, q.partial) == (word.category, word.retryable, False)
    assert read_problem(M["errorcode"], "thread_partial_failure", Context(M, Report()), "$", message="m") == p
    for code in M["errorcode"].codes:  # the crosswalk reads a code by the same rule
        p = problem_of(M["errorcode"].codes[code], code, "errorcode")
        want = M["dotbot"].choose(p.category, code, "errorcode", p.origin, p.upstream, p.aspect, p.partial)
        assert equivalent("errorcode", code, "dotbot", M) == want


def test_a_contradicted_retryable_is_reported_only_where_asked():
    dmap = M["errorcode"]
    code = next(k for k, r in dmap.codes.items() if r.retryable is False)
    report = Report()
    p = read_problem(dmap, code, Context(M, report), "$.error.code", True, "$.error.retryable")
    assert p.retryable is True  # kept as stated
    assert [(d.kind, d.path) for d in report.diagnostics] == [(Kind.STATUS_MISMATCH, "$.error.retryable")]
    quiet = Report()
    read_problem(dmap, code, Context(M, quiet), "$.error.code", True)
    assert quiet.diagnostics == []


def test_a_choice_is_derived_once_and_read_by_writers():
    p = read_problem(M["errorcode"], "x_rate_limited", Context(M, Report()), "$", message="m")
    ch = write_plan(p, M["dotbot"], Context(M, Report()))
    assert ch is choice(p, M["dotbot"], M)
    assert ch.plan == M["dotbot"].plan(ch.code) and ch.code == "RATE_LIMITED"
    assert ch.respelled is False or ch.plan.category == p.category
    own = c.Problem(category="internal", code="NEVER_SEEN", domain="dotbot")
    verbatim = choice(own, M["dotbot"], M)
    assert (verbatim.code, verbatim.plan) == ("NEVER_SEEN", None)
    assert carry_meaning(own, verbatim, None, M["dotbot"]) is None
