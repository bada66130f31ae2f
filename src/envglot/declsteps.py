"""A declaration's field steps: what ``envglot.fields`` compiles for a TOML-declared dialect.

A declared dialect is compiled by the same compiler as a bundled one: :func:`steps` turns its
:class:`~envglot.declaration.Declaration` into a :class:`~envglot.fields.Reading` (a strict
decoder of the generated wire Structs, then :class:`~envglot.fields.Move`\\ s for the plain
members and :class:`~envglot.fields.Let`\\ s of :mod:`envglot.declhooks` for the rules) and a
:class:`~envglot.fields.Writing` (the rules, then a :class:`~envglot.fields.Build` of every
object of the declared tree, in declaration order). So a declared dialect gets the generated hub
reader and writer, every fused pair path and ``ENVGLOT_DUMP_COMPILED``, like the others.
"""

from __future__ import annotations

from typing import Any

import msgspec

from . import canonical as c
from .declaration import COUNTS, Declaration, Leaf, Node, attr, camel
from .declhooks import (
    ItemField,
    check_constants,
    getter,
    outcome_by_presence,
    outcome_flag,
    outcome_words,
    read_payload,
    read_problems,
    read_scaled,
    read_warnings,
    some_members,
    write_outcome,
    write_payload,
    write_problems,
    write_templated,
    write_value,
    write_warnings,
)
from .dialect import Shape
from .fields import Build, Const, Let, Move, Reading, Step, Writing
from .wire import WireDecoder

__all__ = ["steps"]


def _local(field: str) -> str:
    """The step name of a canonical field (``pagination.total`` -> ``pagination_total``)."""
    return field.replace(".", "_")


def _items(d: Declaration, group: str) -> list[ItemField]:
    node = d.group_node(group)
    return [
        ItemField(
            attr=f.split(".", 1)[1],
            get=getter(d.attrs(keys, node)),
            attrs=tuple(d.attrs(keys, node)),
            keys=keys,
            path=d.fields[f],
            required=d.fields[f] in d.required,
            count=f == "problem.retry_after_ms",
            scale=d.scale.get(f, 1),
        )
        for f, keys in d.sub[group]
    ]


def _reading(d: Declaration, shape: Shape) -> Reading:
    name = d.name
    out: list[Step] = []
    if d.constants:
        checks = [(getter(d.attrs(keys)), v, "$." + ".".join(keys)) for keys, v in d.constants]
        out.append(Let("extras", check_constants(checks, name), pure=True))
    read_as = {"ok": "ok_flag", "payload": "payload_wire", **{f: f + "_wire" for f in d.scale if "." not in f}}
    for f, keys in d.top:
        leaf = d.leaf(keys)
        out.append(Move(read_as.get(f, _local(f)), "w." + ".".join(d.attrs(keys)), absent=leaf.type is msgspec.Raw))
    gkeys, array = d.group_paths["problems"]
    out.append(Move("problems_wire", "w." + ".".join(d.attrs(gkeys))))
    code_path = d.fields["problem.code"]
    out.append(
        Let(
            "problems",
            read_problems(_items(d, "problems"), array, code_path, name),
            args=(("wire", "problems_wire"),),
        )
    )
    for f, scale in d.scale.items():
        if "." not in f:
            scaled = read_scaled(scale, d.fields[f], name, whole=False)
            out.append(Let(f, scaled, pure=True, args=(("value", f + "_wire"),)))
    if d.outcome is not None:
        o = d.outcome
        words = outcome_words(
            o.words("success"), o.words("failure"), o.words("warning"), d.fields["ok"], d.fields["problems"], name
        )
        out.append(Let("ok", words, args=(("flag", "ok_flag"),)))
    elif d.ok_keys is not None:
        out.append(Let("ok", outcome_flag(d.fields["ok"], d.fields["problems"], name), args=(("flag", "ok_flag"),)))
    else:
        out.append(Let("ok", outcome_by_presence, pure=True))
    obj = shape.payload == "object"
    hook = read_payload(obj, d.fields["payload"], name)
    out.append(Let("payload", hook, pure=not obj, args=(("wire", "payload_wire"),)))
    for g, tp in c.GROUPS.items():
        subs = {f.split(".", 1)[1]: _local(f) for f, _ in d.top if f.startswith(g + ".")}
        if subs:
            out.append(Build(f"{g}_read", tp, dict(subs)))
            out.append(Let(g, some_members, pure=True, args=(("value", f"{g}_read"),)))
    if "warnings" in d.group_paths:
        wkeys, _ = d.group_paths["warnings"]
        out.append(Move("warnings_wire", "w." + ".".join(d.attrs(wkeys))))
        out.append(Let("warnings", read_warnings(_items(d, "warnings")), pure=True, args=(("wire", "warnings_wire"),)))
    return Reading(WireDecoder(d.wire, name, shape.residue), *out)


def _writing(d: Declaration, shape: Shape) -> Writing:
    name = d.name
    out: list[Step] = []
    _, array = d.group_paths["problems"]
    out.append(Let("problems_out", write_problems(_items(d, "problems"), array, name, d.absent.get("problems"))))
    if "warnings" in d.group_paths:
        strings = d.group_node("warnings").strings
        hook = write_warnings(_items(d, "warnings"), strings, d.absent.get("warnings"))
        out.append(Let("warnings_out", hook, pure=True))
    value: dict[str, str] = {"ok": "ok", "problems": "problems_out", "warnings": "warnings_out"}
    if d.outcome is not None:
        o = d.outcome
        warning = next(iter(o.words("warning")), None)
        out.append(Let("ok_out", write_outcome(o.words("success")[0], o.words("failure")[0], warning), pure=True))
        value["ok"] = "ok_out"
    for f, _, path in d.plan:
        if f in value:
            continue
        if f == "payload":
            obj = shape.payload == "object"
            null = path in d.required or d.absent.get("payload") == "null"
            out.append(Let("payload_out", write_payload(obj, null, name), pure=not obj))
            value[f] = "payload_out"
            continue
        src = f
        if "." in f:
            src = _local(f)
            out.append(Move(src, f))
        count, required, scale = f in COUNTS, path in d.required, d.scale.get(f, 1)
        template = d.templates.get(f)
        if required and template is not None:
            out.append(Let(src + "_out", write_templated(f, path, template), args=(("value", src),)))
            src += "_out"
        elif count or required or scale != 1:
            out.append(Let(src + "_out", write_value(f, path, count, required, name, scale), args=(("value", src),)))
            src += "_out"
        value[f] = src
    _build(d, d.root, camel(name), "out", value, out)
    return Writing(*out, result="out")


def _build(d: Declaration, node: Node, cname: str, local: str, value: dict[str, str], out: list[Step]) -> str:
    """Build steps of ``node``'s object (its members' first), as ``local``; returns the step
    name holding it (``None`` for an object nothing is put in, but the root)."""
    fields: list[tuple[str, Any, Any]] = []
    members: dict[str, str | Const] = {}
    for i, (key, m) in enumerate(node.members.items()):
        a = attr(i)
        fields.append((a, Any, msgspec.field(default=None, name=key)))
        if isinstance(m, Leaf):
            members[a] = Const(m.const) if m.field is None else value[m.field]
        elif m.group is not None:
            members[a] = value[m.group]
        else:
            members[a] = _build(d, m, cname + camel(key), f"{local}_{i}", value, out)
    struct = msgspec.defstruct(f"{cname}Out", fields, kw_only=True, omit_defaults=True)
    out.append(Build(local if node is d.root else local + "_all", struct, members))
    if node is d.root:
        return local
    out.append(Let(local, some_members, pure=True, args=(("value", local + "_all"),)))
    return local


def steps(d: Declaration, shape: Shape) -> tuple[Reading, Writing]:
    """The reading and writing steps of a declaration (``shape``: the dialect's)."""
    return _reading(d, shape), _writing(d, shape)
