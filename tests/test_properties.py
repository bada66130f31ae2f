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
from envelopes import documents, json_values, sample_files, scalars, text
from envglot.dialect import registered
from envglot.dialects import NAMES, WRITABLE
from golden import json_key

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------------------
# JSON building blocks
# ---------------------------------------------------------------------------

# ---------------------------------------------------------------------------
# Valid envelopes, one strategy per writable dialect
# ---------------------------------------------------------------------------

ENVELOPES: dict[str, st.SearchStrategy[dict[str, Any]]] = {name: documents(name) for name in WRITABLE}
"""Valid documents of each writable dialect: its unit's ``envelopes`` strategy, else canonical
envelopes written by its writer (``tests/envelopes.py``)."""

# ---------------------------------------------------------------------------
# (a) preserve round trips
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("src", WRITABLE)
def test_preserve_round_trip_restores_the_original(src: str) -> None:
    """One test per source dialect; every example goes through each other writable dialect.

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


def _words() -> tuple[list[str], list[str]]:
    """Every object key and every short string value in the registered dialects' goldens and examples."""
    keys, values = {"_envglot", "content", "structuredContent", "isError"}, set()

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            keys.update(v)
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, str) and len(v) <= 32:
            values.add(v)

    for d in registered():
        for path in sample_files(d.name):
            walk(msgspec.json.decode(path.read_bytes()))
    return sorted(keys), sorted(values)


_KEYS, _MARKERS = _words()
_VOCABULARY = st.sampled_from(_KEYS)
envelope_like = st.recursive(
    scalars | st.sampled_from(_MARKERS),
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
