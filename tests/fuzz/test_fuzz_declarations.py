"""Hostile declarations (issue 23): generated TOML dialect declarations are loaded, then every
bundled document keeps its dialect and its outcome.

A declaration draws its detection keys, priority, constants and field paths from the bundled
dialects' own members (``success``, ``data``, ``error``, ``schema_id``, ``meta``, ``status``...)
and from free ones (``task_id``, ``ok``...). Loading it either raises ``MappingError`` or
gives tables whose registry holds it; read with those tables, it must not change the detection
or the outcome of any bundled golden or example, nor of those documents with the
declaration's own keys and constants added (the issue's "failure with a task_id member"),
unless that document carried no bundled dialect's markers before. ``DECLARATIONS``
(tests/fuzz/settings.py) sets the budget.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import envglot
from envelopes import sample_files
from envglot.detect import classify
from envglot.dialect import registered
from envglot.errors import MappingError
from envglot.mappings import Mappings, default_mappings, mappings_for

from .settings import DECLARATIONS, FUZZ

BUNDLED = sorted(d.name for d in registered())
_FILES = [p for d in BUNDLED for p in sample_files(d)]
DOCS: list[bytes] = [p.read_bytes() for p in _FILES]
_OBJ = msgspec.json.Decoder(dict[str, Any])
_ENC = msgspec.json.Encoder()

FREE_KEYS = ["task_id", "ok", "result", "fault", "tier", "tool_id", "payload", "problems"]
BUNDLED_KEYS = ["success", "data", "error", "schema_id", "status", "meta", "type", "errors", "value", "content"]
KEYS = st.sampled_from(FREE_KEYS + BUNDLED_KEYS)
CONSTANTS = [
    ("$.tier", '"v1"'),
    ("$.schema_id", '"dotbot-mcp-response@1"'),
    ("$.meta.version", '"response-v2"'),
    ("$.status", '"error"'),
    ("$.success", "true"),
    ("$.type", '"about:blank"'),
]
CATEGORIES = sorted(default_mappings().categories)


@st.composite
def declarations(draw: st.DrawFn) -> str:
    """A declaration's TOML text, built to load often and to overlap the bundled dialects."""
    name = draw(st.one_of(st.just("fz"), st.just("fz"), st.just("fz"), st.sampled_from(["errorcode", "Bad Name"])))
    members = draw(st.lists(KEYS, min_size=2, max_size=4, unique=True))
    payload, problems = members[0], members[1]
    ok = members[2] if len(members) > 2 and draw(st.booleans()) else None
    extra = [k for k in members[2:] if k != ok][:2]  # carried as request_id / summary
    own = [payload, problems, *([ok] if ok else []), *extra]
    consts = draw(st.lists(st.sampled_from(CONSTANTS), max_size=2, unique_by=lambda c: c[0]))
    top_consts = [k.removeprefix("$.") for k, _ in consts if "." not in k.removeprefix("$.")]
    detect = draw(st.lists(st.sampled_from(own + top_consts), min_size=1, max_size=3, unique=True))
    priority = draw(st.sampled_from([41, 42, 55, 79, 80, 100, 121, 500, 10**6, 5]))
    array = draw(st.booleans())
    lines = [
        f'dialect = "{name}"',
        "[declare]",
        'description = "a hostile declaration"',
        f'payload = "{draw(st.sampled_from(["any", "object"]))}"',
    ]
    if consts:
        lines += ["[declare.constants]", *(f'"{k}" = {v}' for k, v in consts)]
    lines += ["[declare.detect]", f"keys = {detect!r}".replace("'", '"'), f"priority = {priority}", "[fields]"]
    if ok is not None:
        lines.append(f'ok = "$.{ok}"')
    lines += [f'{field} = "$.{key}"' for field, key in zip(("request_id", "summary"), extra, strict=False)]
    items = f"$.{problems}[]" if array else f"$.{problems}"
    lines += [
        f'problems = "{items}"',
        f'"problem.code" = "{items}.code"',
        f'"problem.message" = "{items}.message"',
        f'payload = "$.{payload}"',
        "[codes.oops]",
        'category = "internal"',
    ]
    lines += [f'[[write]]\ncategory = "{c}"\ncode = "oops"' for c in CATEGORIES]
    return "\n".join(lines) + "\n"


def _state(buf: bytes, m: Mappings | None = None) -> tuple[str, str | None, bool | str]:
    """(dialect, evidence, outcome) as the core reads the document (with the tables ``m``); a
    refusal's error type instead."""
    try:
        det = classify(buf, None if m is None else m.registry)
        return det.dialect, det.evidence, envglot.read(buf, mappings=m).ok
    except envglot.EnvglotError as exc:
        return "refused", None, type(exc).__name__


def _with_keys(buf: bytes, toml: str) -> bytes | None:
    """A corpus document with the declaration's detection keys and constants added (if absent)."""
    try:
        doc = _OBJ.decode(buf)
    except msgspec.MsgspecError:
        return None
    decl = msgspec.toml.decode(toml.encode())
    for key in decl["declare"]["detect"]["keys"]:
        doc.setdefault(key, "t-1")
    for path, value in decl["declare"].get("constants", {}).items():
        key = path.removeprefix("$.")
        if "." not in key:
            doc.setdefault(key, value)
    return _ENC.encode(doc)


BEFORE = {buf: _state(buf) for buf in DOCS}


def test_the_corpus_covers_every_bundled_dialect() -> None:
    assert all(sample_files(d) for d in BUNDLED)


@pytest.mark.filterwarnings("ignore")
@settings(FUZZ, max_examples=DECLARATIONS)
@given(toml=declarations())
def test_a_loaded_declaration_steals_no_bundled_document(toml: str) -> None:
    augmented = [b for b in (_with_keys(buf, toml) for buf in DOCS) if b is not None]
    before = {b: _state(b) for b in augmented}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "declaration.toml"
        path.write_text(toml)
        try:
            m = mappings_for([str(path)])
        except MappingError:
            return  # refused: a clear error
        name = next(d.name for d in m.registry if d.declared)
        for buf in DOCS:
            assert _state(buf, m) == BEFORE[buf], (toml, buf[:300])
        for buf, (dialect, evidence, ok) in before.items():
            if evidence is None:  # no bundled marker: the declaration may claim it
                continue
            after = _state(buf, m)
            assert after[0] != name and (after[0], after[2]) == (dialect, ok), (toml, buf[:300])
