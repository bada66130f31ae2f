"""Every wire path in a dialect's [fields] table exists in that dialect's wire Structs."""

from __future__ import annotations

import pytest

from envglot.dialects import DIALECTS
from envglot.mappings import default_mappings
from envglot.residue import parse_path
from envglot.wire import known_tree

CHECKED = [name for name, d in DIALECTS.items() if d.wire is not None]


def _resolves(tree: object, segs: list[str | int]) -> bool:
    for seg in segs:
        if tree is None:  # a Raw member: free-form below this point
            return True
        if isinstance(seg, int):
            if not (isinstance(tree, tuple) and tree[0] == "[]"):
                return False
            tree = tree[1]
        elif isinstance(tree, dict) and seg in tree:
            tree = tree[seg]
        else:
            return False
    return True


@pytest.mark.parametrize("dialect", CHECKED)
def test_field_paths_exist_in_the_wire_structs(dialect: str) -> None:
    tree = known_tree(DIALECTS[dialect].wire)
    fields = default_mappings()[dialect].fields
    bad = [f"{k} = {p}" for k, p in fields.items() if not _resolves(tree, parse_path(p.replace("[]", "[0]")))]
    assert not bad, f"mappings/{dialect}.toml [fields] names paths its wire Structs do not have: {bad}"


def test_only_a_free_form_dialect_lacks_wire_structs() -> None:
    # a dialect with no wire Struct reads free-form dicts (it falls back on any object)
    assert all(DIALECTS[name].fallback for name in set(DIALECTS) - set(CHECKED))
