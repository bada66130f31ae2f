"""Round-trip coverage (issue 25): S -> T -> S changes nothing that no diagnostic names.

:func:`uncovered` converts a document of dialect ``S`` to ``T`` and back (no preserve) and
returns every leaf of the source that came back changed or missing while neither conversion
reported anything at its path (or an ancestor's). A diagnostic of the first conversion names a
path of the source; one of the way back names a path of ``T``'s document, which the two
dialects' field tables (``mappings/<dialect>.toml`` ``[fields]``) translate back through the
canonical field they share (so do the first conversion's ``synthesized`` diagnostics, which
name the target's path).

A constant of the source's contract (errorcode's ``meta.tool_version``) is no exception: when
its object cannot come back, the conversion reports the constant at its own path.

A leaf that carries nothing (``null``, ``{}``, ``[]``) is no information: it is not counted
(an explicit ``null`` cursor, which does say something, has tests of its own).

:func:`inverted` is the second half of the property: the outcome, and a failure's category and
stated ``retryable``, read the same after the round trip unless a diagnostic says they changed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import msgspec

import envglot
from envelopes import unit_table
from envglot import Kind
from envglot.diagnostics import Diagnostic
from envglot.excerpt import key_segment
from envglot.mappings import default_mappings

__all__ = ["UPSTREAM", "inverted", "leaves", "round_trip", "uncovered", "upstream_files", "within"]

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = next(
    (p for p in (ROOT.parent / "shared" / "upstream", ROOT.parents[1] / "shared" / "upstream") if p.is_dir()),
    ROOT.parent / "shared" / "upstream",
)
"""The real upstream envelopes (read in place, never copied): next to the repository, or next
to the folder of worktrees."""

_EMPTY = (None, {}, [])


def upstream_files(dialect: str) -> list[Path]:
    return sorted((UPSTREAM / dialect).glob("*.json")) if UPSTREAM.is_dir() else []


def leaves(v: Any, path: str = "$") -> Iterator[tuple[str, Any]]:
    """Every scalar (and empty container) of a decoded JSON value with its JSON path."""
    if isinstance(v, dict) and v:
        for k, x in v.items():
            yield from leaves(x, path + key_segment(k))
    elif isinstance(v, list) and v:
        for i, x in enumerate(v):
            yield from leaves(x, f"{path}[{i}]")
    else:
        yield path, v


def within(path: str, parent: str) -> bool:
    """True if JSON path ``path`` is ``parent`` or lies inside it."""
    return path == parent or path.startswith((parent + ".", parent + "["))


@cache
def _patterns(target: str, source: str) -> tuple[tuple[re.Pattern[str], str], ...]:
    """For each canonical field both tables carry: a pattern of its path in ``target``, and the field."""
    m = default_mappings()
    t, s = m[target], m[source]
    out = []
    for field, tp in t.fields.items():
        if field in s.fields:
            rx = re.escape(tp).replace(r"\[\]", r"\[(\d+)\]") + r"(?=$|[.\[])"
            out.append((re.compile(rx), field))
    return tuple(out)


def back_path(path: str, target: str, source: str) -> str | None:
    """The source path of a diagnostic the way back (``target`` -> ``source``) reported at ``path``
    of the target's document: the most specific canonical field whose ``target`` path holds it."""
    if target == source:
        return path
    best: tuple[int, str, str | None] | None = None
    for rx, field in _patterns(target, source):
        hit = rx.match(path)
        if hit is not None and (best is None or hit.end() > best[0]):
            best = (hit.end(), field, hit.group(1) if rx.groups else None)
    if best is None:
        return None
    # a target path without an index (code-graph's one error) holds the first element: the writer
    # of a single-error dialect writes the first problem
    return default_mappings()[source].path(best[1], 0 if best[2] is None else int(best[2]))


def round_trip(data: bytes, src: str, dst: str) -> tuple[bytes, list[Diagnostic], list[Diagnostic]]:
    """``S -> T -> S`` without preserve: the result and both conversions' diagnostics."""
    there = envglot.conversion(data, from_=src, to=dst, unsupported="ignore")
    back = envglot.conversion(there.output, from_=dst, to=src, unsupported="ignore")
    return back.output, there.diagnostics, back.diagnostics


def _covering(src: str, dst: str, first: list[Diagnostic], second: list[Diagnostic]) -> list[str]:
    """Source paths the two conversions' diagnostics name, and the source's derived members
    (its unit's ``DERIVED``) whose base one of them names."""
    paths = [d.path for d in first]
    for d in first:  # a value synthesized for the target is named at the target's path
        if d.kind is Kind.SYNTHESIZED:
            p = back_path(d.path, dst, src)
            if p is not None:
                paths.append(p)
    for d in second:
        p = d.path if d.kind is Kind.SYNTHESIZED else back_path(d.path, dst, src)
        if p is not None:
            paths.append(p)
    derived = unit_table(src, "DERIVED")
    paths += [k for k, bases in derived.items() if any(within(b, c) or within(c, b) for b in bases for c in paths)]
    return paths


def uncovered(data: bytes, src: str, dst: str) -> list[str]:
    """Source leaves changed or lost by ``src -> dst -> src`` that no diagnostic covers,
    as ``path: before -> after`` lines."""
    out, first, second = round_trip(data, src, dst)
    before = dict(leaves(msgspec.json.decode(data)))
    after = dict(leaves(msgspec.json.decode(out)))
    covering = _covering(src, dst, first, second)
    missing = object()
    found = []
    for path, value in before.items():
        if value in _EMPTY and not isinstance(value, bool):  # 0 == False, but {} / [] / None carry nothing
            continue
        got = after.get(path, missing)
        if got is not missing and got == value and type(got) is type(value):
            continue
        if any(within(path, c) for c in covering):
            continue
        shown = "<missing>" if got is missing else repr(got)
        found.append(f"{path}: {value!r} -> {shown}"[:300])
    return found


_SAYS_RETRYABLE = frozenset({Kind.RETRYABLE_CHANGED, Kind.FIELD_DROPPED})


def inverted(data: bytes, src: str, dst: str) -> list[str]:
    """Meanings the round trip changed without a diagnostic saying so: the outcome (never
    allowed), a failure's category, and its stated ``retryable``."""
    out, first, second = round_trip(data, src, dst)
    a = envglot.read(data, from_=src)
    b = envglot.read(out, from_=src)
    found = []
    if a.ok != b.ok:
        found.append(f"outcome {a.ok} -> {b.ok}")
    if a.problems and b.problems:
        pa, pb = a.problems[0], b.problems[0]
        said = [d for d in (*first, *second) if d.kind in _SAYS_RETRYABLE and "retryable" in d.message]
        told = f"not {pa.category!r}"  # code_mapped names a category its chosen code does not say
        category_said = any(
            d.kind is Kind.CODE_UNKNOWN or (d.kind in (Kind.CODE_MAPPED, Kind.SYNTHESIZED) and told in d.message)
            for d in (*first, *second)
        )
        if pa.category != pb.category and not category_said:
            found.append(f"category {pa.category} -> {pb.category}")
        if pa.retryable is not None and pb.retryable != pa.retryable and not said:
            found.append(f"retryable {pa.retryable} -> {pb.retryable}")
    return found
