"""The generated detections' tree of tests (``TestCode.emit``, issue 24) against the plain chain.

``envglot.detect`` emits a registry's probes as one tree: a condition consecutive steps share or
exclude tested once, what an enclosing test implies not tested again, a step it rules out left
out, trailing steps that return as the function's end does dropped. Here random declared
alternatives (and steps that run without returning, as a Python probe does) over a small key
vocabulary are emitted both ways, the tree and one ``if`` per step in order, and run on random top
levels: the same answer, and the same steps run in the same order.
"""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from envglot import probetests
from envglot.declare import When
from envglot.detect import detector, forced_rival
from envglot.fields import Unit, source
from envglot.registry import bundled

KEYS = ("a", "b", "c", "d", "m")
KNOWN = frozenset(KEYS)
VALUES = [b"true", b"false", b"null", b'"s"', b"{}", b'{"x":1}', b'{"x":"s","y":2}', b"[]", b"200", b"7", b"2e2"]
_keys = st.lists(st.sampled_from(KEYS), min_size=1, max_size=3, unique=True)
_refs = st.sampled_from(["a", "b", "c", "m.x", "m.y"])
_when = st.builds(
    When,
    evidence=st.just("e"),
    present=st.lists(st.sampled_from(KEYS), max_size=2, unique=True),
    absent=st.lists(st.sampled_from(KEYS), max_size=2, unique=True),
    present_any=st.one_of(st.just([]), _keys),
    within=st.one_of(st.none(), _keys.map(lambda k: [*k, "zz"])),
    types=st.dictionaries(
        _refs, st.lists(st.sampled_from(["bool", "null", "string", "object", "array"]), min_size=1, max_size=2)
    ),
    equals=st.dictionaries(_refs, st.sampled_from(["s", 7, True])),
    integer=st.dictionaries(_refs, st.sampled_from([(0, 9), (100, 599)])),
    holds=st.dictionaries(st.just("m"), st.lists(st.sampled_from(["x", "y"]), min_size=1, max_size=2, unique=True)),
    holds_any=st.dictionaries(st.just("m"), st.lists(st.sampled_from(["x", "y"]), min_size=1, max_size=2)),
)
# a step: its alternative, and what it does: return a number, return None (as the end does), or
# note its number and go on (a Python probe that names no evidence)
_step = st.tuples(_when, st.sampled_from(["return", "none", "run"]))
_top = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES).map(msgspec.Raw), max_size=5)


def _build(steps: list[tuple[When, str]], tree: bool) -> Any:
    u = Unit("tree" if tree else "chain")
    code = probetests.TestCode(u, KNOWN)
    items = []
    for i, (w, does) in enumerate(steps):
        body = {"return": ((f"return {i}", 0),), "none": (("return None", 0),), "run": ((f"ran.append({i})", 0),)}
        items.append(probetests.Item(code.lits(w), body[does], does != "run"))
    u.emit("def detect(p, ran):", 0)
    at = len(u.lines)
    if tree:
        code.emit(items, 1, "return None")
    else:
        for item, (w, _) in zip(items, steps, strict=True):
            u.emit(f"if {code.test(w)}:")
            for line, indent in item.body:
                u.emit(line, 2 + indent)
    u.emit("return None")
    first = code.locals()
    if first:
        u.lines.insert(at, "    " + first)
    return u.build("detect")


@settings(max_examples=250, deadline=None)
@given(st.lists(_step, min_size=1, max_size=12), st.lists(_top, min_size=1, max_size=8))
def test_the_tree_answers_as_the_chain_of_steps(steps: list[tuple[When, str]], tops: list[dict[str, Any]]) -> None:
    tree, chain = _build(steps, True), _build(steps, False)
    for p in tops:
        ran_tree: list[int] = []
        ran_chain: list[int] = []
        assert tree(p, ran_tree) == chain(p, ran_chain), (source(tree), p)
        assert ran_tree == ran_chain, (source(tree), p)


def test_a_condition_shared_by_consecutive_probes_is_tested_once() -> None:
    """The bundled detections test ``success`` (its presence, then its type) once, not once per probe."""
    reg = bundled()
    for fn in (detector(reg), *(forced_rival(reg, name) for name in reg.names())):
        text = source(fn)
        assert text.count("p.get('success')") <= 1, text
        assert text.count("'success' not in p") + text.count("'success' in p") <= 1, text


def test_a_forced_source_stops_testing_where_only_itself_is_left() -> None:
    """problem-json's own probe decides nothing for a document read as problem-json: no later
    rival can fire when it does (google-rpc's keys exclude ``type``), so it is not run."""
    text = source(forced_rival(bundled(), "problem-json"))
    assert "200 <= int(b) <= 599" not in text, text
    assert "200 <= int(b) <= 599" in source(forced_rival(bundled(), "errorcode"))
