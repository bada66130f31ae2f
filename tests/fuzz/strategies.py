"""Hypothesis strategies: hostile JSON trees, envelope skeletons, wrappers and mutated seeds."""

from __future__ import annotations

import functools
import random
from typing import Any

from hypothesis import strategies as st

from .corpus import seeds
from .hostile import DEEP_DEPTHS, FIELDS, deep
from .mutator import BOM, Case, Mutator, crafted_residue, mcp_wrap, rpc_wrap
from .tree import Num, Obj, clone, dump

__all__ = ["documents", "hostile_keys", "hostile_strings", "json_trees", "mutated_cases"]

_BAD = st.sampled_from(["\udcff", "\udcc3", "\udcc0\udcaf", "\udced\udca0\udc80", "\udc80", "\ud800", "\udfff"])
hostile_strings = st.one_of(
    st.text(max_size=6),
    st.text(alphabet=st.characters(codec=None, categories=["Cs", "Cc", "Lo"]), max_size=4),
    st.tuples(st.text(max_size=3), _BAD, st.text(max_size=3)).map("".join),
    st.sampled_from(["", "\x00", "\u2028", "\ufeff", "x" * 70_000]),
)
"""Strings: any text, lone surrogates, raw invalid UTF-8 bytes (\\udc80-\\udcff), controls, a long one."""

hostile_keys = st.one_of(st.sampled_from(FIELDS), hostile_strings)

numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([Num("1e400"), Num("-1e400"), Num("1e-400"), Num("1" * 10_000), 2**64, -(2**63) - 1]),
)

scalars = st.one_of(st.none(), st.booleans(), numbers, hostile_strings)


def _obj(pairs: list[tuple[str, Any]]) -> Obj:
    return Obj(pairs)


json_trees = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(st.tuples(hostile_keys, inner), max_size=5).map(_obj),  # keys may repeat
    ),
    max_leaves=12,
)
"""Any JSON value with hostile leaves and keys (duplicate keys included)."""


@st.composite
def envelope_skeletons(draw: st.DrawFn) -> Obj:
    """Objects built from the dialects' field names with hostile values: close to every reader's path."""
    keys = draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=6))
    pairs = []
    for k in keys:
        v = draw(st.one_of(scalars, json_trees, st.sampled_from(DEEP_DEPTHS).map(lambda d: deep(random.Random(d), d))))
        pairs.append((k, v))
    if draw(st.booleans()):
        pairs.insert(0, ("success", draw(st.sampled_from([True, False, None, "false", 0]))))
    if draw(st.integers(0, 2)) == 0:  # a dialect's marker member, as a seed envelope has it
        pairs.insert(draw(st.integers(0, len(pairs))), clone(draw(st.sampled_from(_markers()))))
    return Obj(pairs)


@functools.cache
def _markers() -> tuple[tuple[str, Any], ...]:
    """Top-level members of the seed envelopes whose value is a string or a small object
    (``schema_id``, a ``meta`` with its version...): the marks detection looks for."""
    out = {}
    for _, tree in seeds():
        if isinstance(tree, Obj):
            for k, v in tree:
                if isinstance(v, str) or (isinstance(v, Obj) and len(dump(v)) <= 200):
                    out.setdefault((k, dump(v)), (k, v))
    return tuple(out[key] for key in sorted(out))


@st.composite
def documents(draw: st.DrawFn) -> Case:
    """A hostile document: skeleton or free tree, maybe a residue, a wrapper, a BOM or a second document."""
    tree: Any = draw(st.one_of(envelope_skeletons(), envelope_skeletons(), json_trees))
    rng = draw(st.randoms(use_true_random=False))
    case = Case(tree=tree, origin="hypothesis")
    if isinstance(tree, Obj) and draw(st.integers(0, 3)) == 0:
        # the twin holds no ``_envglot`` at all: one the tree already has is overridden by the
        # residue appended after it (the last of a repeated key wins), so left in the twin it would
        # be read as the residue there
        case.twin, case.has_twin = Obj([(k, v) for k, v in clone(tree) if k != "_envglot"]), True
        tree.append(("_envglot", crafted_residue(rng)))
        case.ops.append("residue")
    wrapper = draw(st.sampled_from(["none", "none", "mcp", "rpc", "rpc-mcp"]))
    if wrapper != "none":
        state = rng.getstate()

        def wrap(t: Any) -> Any:
            rng.setstate(state)
            if wrapper == "mcp":
                return mcp_wrap(rng, t)
            if wrapper == "rpc":
                return rpc_wrap(rng, t)
            return rpc_wrap(rng, mcp_wrap(rng, t))

        case.tree = wrap(case.tree)
        if case.has_twin:
            case.twin = wrap(case.twin)
        case.ops.append(f"wrap:{wrapper}")
    frame = draw(st.sampled_from(["none"] * 6 + ["bom", "concat"]))
    if frame == "bom":
        case.prefix = BOM
    elif frame == "concat":
        case.tail, case.sep = [clone(case.tree)], draw(st.sampled_from([b"", b"\n", b" "]))
    return case


def mutated_cases() -> st.SearchStrategy[Case]:
    """The structure-aware mutator's cases, by seed (reproducible outside hypothesis too)."""
    return st.integers(min_value=0, max_value=2**32 - 1).map(lambda seed: Mutator(seed).case())
