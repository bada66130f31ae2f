"""Lossless chains (issue 25): with ``preserve`` at every hop, S -> T1 -> ... -> Tn -> S restores S.

A writer that is not the residue's source carries it intact inside its own residue (nested), and
the way back unwinds the nest hop by hop, every hop with the checks of a plain restore (digest,
outcome, carrier). Every intermediate validates in its dialect.

Known gap, asserted as such: a hop that needed no residue (its target converts back to its source
exactly) records no provenance, so a later hop that goes back to S by another path cannot know
the document went through it; a chain is required to restore S whenever every intermediate
carries a residue.
"""

from __future__ import annotations

import itertools
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import envglot
from envelopes import documents, sample_files
from envglot.dialects import WRITABLE
from envglot.mappings import default_mappings
from envglot.residue import parse_path
from fuzz.settings import FUZZ
from golden import json_key

M = default_mappings()


def _has_residue(doc: bytes, dialect: str) -> bool:
    node: Any = msgspec.json.decode(doc)
    for seg in parse_path(M[dialect].shape.residue):
        if not isinstance(node, dict) or seg not in node:
            return False
        node = node[seg]
    return True


def _chain(data: bytes, src: str, hops: tuple[str, ...]) -> tuple[bytes, bool]:
    """The document back in ``src`` after ``hops``, and whether every intermediate carried a residue."""
    valid = not envglot.validate(data, src)
    doc, at, provenance = data, src, True
    for dst in (*hops, src):
        doc = envglot.convert(doc, from_=at, to=dst, preserve=True, unsupported="ignore")
        if dst != src:
            if valid:
                assert envglot.validate(doc, dst) == [], f"{src} -> {hops}: {dst} {doc!r}"
            provenance = provenance and _has_residue(doc, dst)
        at = dst
    return doc, provenance


def _check(data: bytes, src: str, hops: tuple[str, ...]) -> None:
    back, provenance = _chain(data, src, hops)
    if provenance:
        assert json_key(back) == json_key(data), f"{src} -> {' -> '.join(hops)} -> {src}"


@pytest.mark.parametrize("src", WRITABLE)
def test_golden_chains_of_two_restore_the_original(src: str) -> None:
    others = [d for d in WRITABLE if d != src]
    restored = 0
    for path in sample_files(src):
        data = path.read_bytes()
        try:
            envglot.read(data, from_=src)
        except envglot.EnvglotError:
            continue
        for hops in itertools.permutations(others, 2):
            back, provenance = _chain(data, src, hops)
            if provenance:
                assert json_key(back) == json_key(data), f"{path.name}: {src} -> {' -> '.join(hops)} -> {src}"
            restored += json_key(back) == json_key(data)
    assert restored  # the chains do come back


@pytest.mark.parametrize("src", WRITABLE)
def test_generated_chains_of_two_and_three_restore_the_original(src: str) -> None:
    others = [d for d in WRITABLE if d != src]

    @settings(FUZZ, max_examples=min(FUZZ.max_examples, 40))
    @given(doc=documents(src), hops=st.lists(st.sampled_from(others), min_size=2, max_size=3, unique=True))
    def check(doc: dict[str, Any], hops: list[str]) -> None:
        data = msgspec.json.encode(doc)
        try:
            envglot.read(data, from_=src)
        except envglot.EnvglotError:
            return
        _check(data, src, tuple(hops))

    check()
