"""A bundled dialect's plain moves, derived from its one declaration (``[fields]`` of ``mappings/<name>.toml``).

A dialect whose :class:`~envglot.fields.Reading` (or :class:`~envglot.fields.Writing`) says
``derive=True`` states in Python only what is not a plain move (its hooks, named per field);
the compiler adds the rest from ``[fields]`` (see ``docs/adding-a-dialect.md``):

- **reading**: a :class:`~envglot.fields.Move` for every canonical field whose wire path is a
  plain member path (``$.audit.correlation_id``) and that no step of the reading defines (a
  step named for a field overrides it). The path is resolved over the wire Struct (its
  members' JSON names), from the decoded document ``w``, or from a :class:`~envglot.fields.Let`
  that says which wire object it returns (``wire="$.data._meta"``: the Struct of its return
  annotation). A derived move comes first (or right after that ``Let``), in ``[fields]`` order.
- **writing**: a member of a :class:`~envglot.fields.Build` that the Build does not give and
  whose wire path ``[fields]`` names for a canonical field is that field, copied as it is. A
  Build's place is found from the final one (``result``, at ``$``) through the members that
  name other Builds.

A plain path that does not resolve is an error when the dialect is compiled (the declaration
and the Python would disagree). :func:`moved_paths` gives, for any dialect, the wire path
each plain move of its reading reads, :func:`copied_paths` where its writing copies a field
as it is (what ``tests/test_derive.py`` compares with ``[fields]`` for every bundled dialect).
"""

from __future__ import annotations

import os
import re
import types
import typing
from typing import TYPE_CHECKING, Any

import msgspec

from .fields import CANONICAL, Build, Let, Move, Reading, Step, Writing
from .introspect import struct_fields
from .tables import DialectTable, decode_table, mappings_root

if TYPE_CHECKING:
    from .dialect import Dialect

__all__ = ["copied_paths", "declared_fields", "derived", "member_keys", "moved_paths"]

_MEMBER_PATH = re.compile(r"\$(\.[A-Za-z_][A-Za-z0-9_-]*)+")


def declared_fields(name: str) -> dict[str, str]:
    """``[fields]`` of the bundled table ``mappings/<name>.toml`` (canonical field -> wire path)."""
    t = decode_table(os.path.join(mappings_root(), f"{name}.toml"), DialectTable)  # (a str: no pathlib to import)
    assert isinstance(t, DialectTable)
    return dict(t.fields)


def member_keys(path: str) -> list[str] | None:
    """The keys of a plain member path (``$.audit.timestamp`` -> ``["audit", "timestamp"]``),
    ``None`` for any other path (the root, an array element)."""
    if not _MEMBER_PATH.fullmatch(path):
        return None
    return path.split(".")[1:]


def _struct(tp: Any) -> type[msgspec.Struct] | None:
    """The Struct a member's type holds (``S``, ``S | None``, ``Annotated[S, ...]``), or ``None``."""
    if typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return tp
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        found = [s for s in map(_struct, typing.get_args(tp)) if s is not None]
        return found[0] if len(found) == 1 else None
    return None


def _leaf_raw(tp: Any) -> bool:
    if typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return tp is msgspec.Raw


def _walk(tp: Any, names: list[str], json: bool = True) -> tuple[list[str], Any, bool] | None:
    """Over Struct ``tp``: the attribute names of JSON member names ``names`` (``json=False``:
    the JSON names of attribute names), the leaf's type and whether the leaf member may be
    left out (it has a default); ``None`` when one is no member."""
    out: list[str] = []
    optional = False
    for n in names:
        st = _struct(tp)
        if st is None:
            return None
        hit = next((f for f in struct_fields(st) if (f.encode_name if json else f.name) == n), None)
        if hit is None:
            return None
        out.append(hit.name if json else hit.encode_name)
        tp, optional = hit.type, not hit.required
    return out, tp, optional


def _roots(d: Dialect, steps: tuple[Step, ...]) -> dict[str, tuple[list[str], Any, int]]:
    """Locals that hold a wire object: ``w`` (the decoded wire Struct, when the decoder gives
    one), every ``Let`` with ``wire=``, and every ``Move`` of a non-canonical local from one
    of them to a Struct member (code-graph's ``data``). Each: (its keys, its Struct, the index
    after which a move from it may come, -1 for before every step)."""
    out: dict[str, tuple[list[str], Any, int]] = {}
    if d.wire is not None:
        out["w"] = ([], d.wire, -1)
    for i, st in enumerate(steps):
        if isinstance(st, Let) and st.wire is not None:
            keys = member_keys(st.wire)
            ret = typing.get_type_hints(st.hook).get("return")
            if keys is None or _struct(ret) is None:
                raise TypeError(f"{d.name}: Let({st.name!r}, wire={st.wire!r}) needs a member path and a Struct return")
            out[st.name] = (keys, ret, i)
        elif isinstance(st, Move) and st.name not in CANONICAL:
            head, *attrs = st.path.split(".")
            walked = _walk(out[head][1], attrs, json=False) if head in out else None
            if walked is not None and _struct(walked[1]) is not None:
                out[st.name] = ([*out[head][0], *walked[0]], _struct(walked[1]), i)
    return out


def _reading(d: Dialect, reading: Reading, fields: dict[str, str]) -> Reading:
    steps = reading.steps
    named = {getattr(st, "name", None) for st in steps}
    roots = _roots(d, steps)
    after: dict[int, list[Move]] = {}
    for f, path in fields.items():
        keys = member_keys(path)
        if f not in CANONICAL or f in named or keys is None:
            continue
        found = None
        for local, (prefix, tp, at) in roots.items():
            if keys[: len(prefix)] == prefix and (found is None or len(prefix) > len(found[1])):
                found = (local, prefix, tp, at)
        walked = None if found is None else _walk(found[2], keys[len(found[1]) :])
        if found is None or walked is None:
            raise TypeError(f"{d.name}: [fields] {f} = {path!r} is no wire member, and no step reads {f}")
        attrs, leaf, optional = walked
        move = Move(f, ".".join((found[0], *attrs)), absent=optional and _leaf_raw(leaf))
        after.setdefault(found[3], []).append(move)
    out: list[Step] = list(after.get(-1, ()))
    for i, st in enumerate(steps):
        out.append(st)
        out.extend(after.get(i, ()))
    return reading.derived(out)


def _places(writing: Writing) -> dict[str, str]:
    """Build name -> the wire path of the object it builds: the final Build (``result``) at
    ``$``, and every Build a located one names as a member, at that member's path."""
    builds = {st.name: st for st in writing.steps if isinstance(st, Build)}
    place: dict[str, str] = {}
    todo = [(writing.result, "$")]
    while todo:
        name, path = todo.pop()
        b = builds.get(name)
        if b is None or name in place:
            continue
        place[name] = path
        keys = {f.name: f.encode_name for f in struct_fields(b.struct)}
        todo += [(v, f"{path}.{keys[k]}") for k, v in b.members.items() if isinstance(v, str) and k in keys]
    return place


def _writing(d: Dialect, writing: Writing, fields: dict[str, str]) -> Writing:
    by_path: dict[str, str] = {}
    for f, path in fields.items():
        if f in CANONICAL and member_keys(path) is not None:
            if path in by_path:
                raise TypeError(f"{d.name}: [fields] {by_path[path]} and {f} both name {path!r}")
            by_path[path] = f
    place = _places(writing)
    out: list[Step] = []
    for st in writing.steps:
        if isinstance(st, Build) and st.name in place:
            members = dict(st.members)
            for m in struct_fields(st.struct):
                copy = by_path.get(f"{place[st.name]}.{m.encode_name}")
                if m.name not in members and copy is not None:
                    members[m.name] = copy
            st = Build(st.name, st.struct, members)
        out.append(st)
    return Writing(
        *out,
        result=writing.result,
        finish=writing.finish,
        losses=writing.losses,
        failure=writing.failure,
        texts=writing.texts,
    )


def derived(d: Dialect) -> tuple[Reading | None, Writing | None]:
    """``d``'s reading and writing as the compiler compiles them: with the plain moves of its
    ``[fields]`` added where a side says ``derive=True`` (the class's steps as they are otherwise)."""
    reading, writing = d.reading, d.writing
    if not ((reading is not None and reading.derive) or (writing is not None and writing.derive)):
        return reading, writing
    fields = declared_fields(d.name)
    if reading is not None and reading.derive:
        reading = _reading(d, reading, fields)
    if writing is not None and writing.derive:
        writing = _writing(d, writing, fields)
    return reading, writing


def moved_paths(d: Dialect) -> dict[str, str]:
    """Canonical field -> the wire path its plain move reads, for every :class:`~envglot.fields.Move`
    of ``d``'s compiled reading that reads a wire member (through other moves' locals, and
    ``Let``\\ s with ``wire=``). A move from a hook's value is left out (it is not a plain move)."""
    reading, _ = derived(d)
    if reading is None:
        return {}
    roots = {k: (keys, tp) for k, (keys, tp, _) in _roots(d, reading.steps).items()}
    moves = {st.name: st.path for st in reading.steps if isinstance(st, Move)}
    out: dict[str, str] = {}
    for name, path in moves.items():
        head, *attrs = path.split(".")
        while head in moves and head not in roots:  # a move from another move's local
            head, *more = moves[head].split(".")
            attrs = [*more, *attrs]
        if name not in CANONICAL or head not in roots:
            continue
        prefix, tp = roots[head]
        walked = _walk(tp, attrs, json=False)
        if walked is not None:
            out[name] = ".".join(("$", *prefix, *walked[0]))
    return out


def copied_paths(d: Dialect) -> dict[str, list[str]]:
    """Canonical field -> the wire paths its value is copied to as it is (a member of a
    :class:`~envglot.fields.Build` of ``d``'s compiled writing, placed from ``result``, that
    names the field itself)."""
    _, writing = derived(d)
    if writing is None:
        return {}
    place = _places(writing)
    out: dict[str, list[str]] = {}
    for st in writing.steps:
        if isinstance(st, Build) and st.name in place:
            keys = {f.name: f.encode_name for f in struct_fields(st.struct)}
            for k, v in st.members.items():
                if isinstance(v, str) and v in CANONICAL and k in keys:
                    out.setdefault(v, []).append(f"{place[st.name]}.{keys[k]}")
    return out
