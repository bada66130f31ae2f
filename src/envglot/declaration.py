"""A dialect declaration (``[declare]`` and ``[fields]`` of a TOML file) parsed and checked.

:class:`Declaration` is the wire tree a declaration describes: every member the declared
envelope has, the canonical field it carries (or the constant it holds), its wire type and
whether it is required, with the wire Struct envglot decodes a document into. Every path is
checked here, with errors naming the file and the section; ``envglot.declsteps`` turns the
tree into field steps (``envglot.fields``), ``envglot.declared`` registers the dialect.
"""

from __future__ import annotations

import re
import sys
import typing
from collections.abc import Sequence
from functools import cache
from typing import Any

import msgspec
from msgspec import Raw, Struct

from . import canonical as c
from .declare import Declare, Detect, Outcome
from .errors import MappingError
from .fields import ABSENT as _ABSENT
from .introspect import struct_fields
from .tables import DialectTable

__all__ = [
    "ALWAYS",
    "COUNTS",
    "KIND",
    "LIST_GROUPS",
    "TEMPLATE_FIELDS",
    "Declaration",
    "Declare",
    "Detect",
    "Leaf",
    "Node",
    "Outcome",
    "attr",
    "camel",
    "canonical_types",
    "group_of",
    "segments",
]

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""A declared member name: an ASCII identifier (so ``$.a.b`` is also the JSON path envglot prints)."""
_MAX_DEPTH = 16
"""How deep a declared member may lie (a declaration is compiled by recursion)."""


# --- what a declared field may carry ------------------------------------------------------

_PROBLEM_SKIP = {"category", "domain", "origin", "upstream", "aspect", "partial", "extra"}


def _plain(tp: Any) -> Any:
    """The wire type of a canonical ``T | None`` annotation."""
    args = tuple(a for a in typing.get_args(tp) if a is not type(None)) if typing.get_origin(tp) else (tp,)
    if args == (int, float):
        return int | float
    return args[0]


@cache
def canonical_types() -> dict[str, Any]:
    """Canonical field -> the wire type of a declared member carrying it (derived from the
    canonical Structs on first use: only compiling a declaration needs it)."""
    out: dict[str, Any] = {"ok": bool, "payload": Raw}
    hints = {f.name: f.type for f in struct_fields(c.Envelope)}  # annotations evaluated once, by msgspec
    out.update({name: _plain(hints[name]) for name in c.SCALARS})
    for g, tp in c.GROUPS.items():
        out.update({f"{g}.{f.name}": _plain(f.type) for f in struct_fields(tp) if f.name != "extra"})
    out.update({f"problem.{f.name}": _plain(f.type) for f in struct_fields(c.Problem)})
    for k in _PROBLEM_SKIP:
        out.pop(f"problem.{k}")
    out.update({f"warning.{f.name}": _plain(f.type) for f in struct_fields(c.Notice)})
    return out


KIND = {str: "string", bool: "boolean", int: "integer", int | float: "number", Raw: "any"}
LIST_GROUPS = {"problems": "problem.", "warnings": "warning."}
COUNTS = frozenset({"pagination.total", "pagination.page_size", "pagination.offset", "pagination.limit"})
"""Counts a target cannot carry negative (``count_for``: left out, reported)."""
ALWAYS = frozenset({"ok", "problem.code", "warning.message"})
"""Required whether or not ``[declare] required`` names them (the outcome, an error's code, a
warning's text: the canonical model cannot do without them)."""


class Leaf:
    """One wire member: the canonical field it carries (or a constant), its type, required or not."""

    __slots__ = ("const", "field", "required", "type")

    def __init__(self, field: str | None, tp: Any, required: bool, const: object = None) -> None:
        self.field = field
        self.type = tp
        self.required = required
        self.const = const


class Node:
    """A wire object: its members in declaration order; ``group`` for a problem/warning object."""

    __slots__ = ("array", "group", "members", "required", "strings")

    def __init__(self) -> None:
        self.members: dict[str, Leaf | Node] = {}
        self.required = False
        self.group: str | None = None
        self.array = False
        self.strings = False
        """An array whose items may also be plain strings (``[declare] string_items``)."""


def segments(path: str, where: str, group_ok: bool = False) -> tuple[list[str], bool]:
    """The keys of a wire path ``$.a.b`` (``$.a[]`` for an array group); clear errors otherwise."""
    array = group_ok and path.endswith("[]")
    body = path[:-2] if array else path
    if not body.startswith("$."):
        raise MappingError(f"{where}: wire path {path!r} must start with '$.' (a member of the envelope)")
    keys = body[2:].split(".")
    if len(keys) > _MAX_DEPTH:
        raise MappingError(f"{where}: wire path {path!r} is deeper than {_MAX_DEPTH} members")
    for k in keys:
        if _KEY.fullmatch(k) is None:
            raise MappingError(
                f"{where}: wire path {path!r}: {k!r} is not a plain key (ASCII letters, digits and _; "
                "[] only at the end of a problems/warnings path)"
            )
    return keys, array


class Declaration:
    """A declaration compiled: the wire tree, accessors and the wire Structs built from it."""

    def __init__(self, name: str, table: DialectTable, decl: Declare, file: str) -> None:
        self.name = name
        where = f"{file}: [fields]"
        fields = dict(table.fields)
        required = set(decl.required)
        types = canonical_types()
        for f in fields:
            if f not in types and f not in LIST_GROUPS:
                hint = (
                    " (next steps and .extra objects need a Python dialect)"
                    if f.startswith(("next_step", "extras")) or f.endswith(".extra")
                    else ""
                )
                raise MappingError(f"{where}: {f!r} is not a canonical field a declared dialect can carry{hint}")
        if "payload" not in fields:
            raise MappingError(f"{where}: a declared dialect needs a payload path")
        for name_, prefix in LIST_GROUPS.items():
            subs = [f for f in fields if f.startswith(prefix)]
            if subs and name_ not in fields:
                raise MappingError(f"{where}: {subs[0]!r} needs a {name_!r} path (the object or array holding it)")
        if "problems" in fields and "problem.code" not in fields:
            raise MappingError(f"{where}: problems need a 'problem.code' path")
        if "warnings" in fields and "warning.message" not in fields:
            raise MappingError(f"{where}: warnings need a 'warning.message' path")
        self.root = Node()
        self.root.required = True
        self.group_paths: dict[str, tuple[list[str], bool]] = {}
        seen: dict[str, str] = {}
        for f, path in fields.items():
            if f in LIST_GROUPS:
                self.group_paths[f] = segments(path, where, group_ok=True)
                if f == "warnings" and not self.group_paths[f][1]:
                    raise MappingError(f"{where}: warnings = {path!r} must be an array path (ending in [])")
        for a, (ka, _) in self.group_paths.items():
            for b, (kb, _) in self.group_paths.items():
                if a != b and ka[: len(kb)] == kb:
                    raise MappingError(f"{where}: {a} path {fields[a]!r} lies inside {b} path {fields[b]!r}")
        for path in decl.constants:
            keys, _ = segments(path, f"{file}: [declare.constants]")
            if any(keys[: len(gk)] == gk for gk, _ in self.group_paths.values()):
                raise MappingError(f"{file}: [declare.constants] {path!r} lies inside a problems/warnings object")
            self._place(
                keys,
                Leaf(None, type(decl.constants[path]), True, decl.constants[path]),
                path,
                file,
                seen,
                f"constant {path}",
            )
        self.top: list[tuple[str, tuple[str, ...]]] = []
        self.plan: list[tuple[str, tuple[str, ...], str]] = []
        """``(field, keys, path)`` in writing order: top-level fields and the two groups."""
        planned: set[str] = set()
        self.sub: dict[str, list[tuple[str, tuple[str, ...]]]] = {g: [] for g in LIST_GROUPS}
        for f, path in fields.items():  # one pass in [fields] order: the order envglot writes
            grp = f if f in LIST_GROUPS else group_of(f)
            if grp is not None:
                gkeys, array = self.group_paths[grp]
                gpath = fields[grp]
                if grp not in planned:  # the errors/warnings member goes where it is first named
                    planned.add(grp)
                    self.plan.append((grp, tuple(gkeys), gpath))
                gnode = self._node(gkeys, gpath, file)
                if gnode.group is None:
                    if gpath in seen:
                        raise MappingError(f"{where}: {grp} path {gpath!r} is already used by {seen[gpath]}")
                    if gpath in required or gpath + "[]" in required:
                        raise MappingError(
                            f"{file}: [declare] required names {grp} = {gpath!r}: whether it is there is the "
                            "outcome (present on a failure, absent on success), never required"
                        )
                    gnode.group, gnode.array = grp, array
                if f == grp:
                    continue
                if not path.startswith(gpath + "."):
                    raise MappingError(f"{where}: {f} = {path!r} must lie inside {grp} = {gpath!r}")
                rel, _ = segments("$." + path[len(gpath) + 1 :], where)
                must = path in required or f in ALWAYS  # an error's code, a warning's message
                self._place(rel, Leaf(f, types[f], must), path, file, seen, f, base=gnode)
                self.sub[grp].append((f, tuple(rel)))
                continue
            keys, _ = segments(path, where)
            for gk, _ in self.group_paths.values():
                if keys[: len(gk)] == gk:
                    raise MappingError(f"{where}: {f} = {path!r} lies inside a problems/warnings object")
            # the outcome flag is always required: a document that does not say is no success
            self._place(keys, Leaf(f, types[f], path in required or f in ALWAYS), path, file, seen, f)
            self.top.append((f, tuple(keys)))
            self.plan.append((f, tuple(keys), path))
        known = set(seen) | {fields[g] for g in self.group_paths}
        for r in required:
            if r not in known and r.removesuffix("[]") not in known:
                raise MappingError(f"{file}: [declare] required names {r!r}, which is no path of [fields]")
        for f, path in fields.items():
            if path in required and f in types and f not in ("ok", "payload", "problem.code", "problem.message"):
                if f not in table.synthesize and f not in ("problem.retryable", "warning.message"):
                    raise MappingError(
                        f"{file}: [synthesize] needs a rule for {f!r}: {path} is required and a source may lack it"
                    )
        segments(decl.residue, f"{file}: [declare] residue")
        if decl.residue in seen or any(p.startswith(decl.residue + ".") for p in seen):
            raise MappingError(f"{file}: [declare] residue {decl.residue!r} is a path of [fields]")
        self.fields = fields
        self.ok_keys = tuple(segments(fields["ok"], where)[0]) if "ok" in fields else None
        self.constants = [(tuple(segments(p, file)[0]), v) for p, v in decl.constants.items()]
        self.description = decl.description
        self.required = frozenset(decl.required) | {r.removesuffix("[]") for r in decl.required}
        """The required wire paths (an item member's also without ``[]``)."""
        self._vocabulary(decl, file)
        self.templates = _templates(table, file)
        """Field -> its ``[synthesize]`` template (a rule with ``{tool}``, ``{slug}`` or ``{id}``)."""
        self.wire = self._struct(self.root, camel(name), "$")

    def _vocabulary(self, decl: Declare, file: str) -> None:
        """``[declare]``'s absent forms, string items, outcome words and units, checked and applied."""
        by_path = {p: f for f, p in self.fields.items()}
        self.absent: dict[str, str] = {}
        """``problems``/``warnings``/``payload`` -> ``null`` or ``empty`` (left out when not named)."""
        for path, form in decl.absent.items():
            f = by_path.get(path)
            if f not in ("problems", "warnings", "payload"):
                raise MappingError(
                    f"{file}: [declare.absent] {path!r} is not the problems, warnings or payload path of [fields]"
                )
            if form == "empty" and (f == "payload" or not self.group_paths[f][1]):
                raise MappingError(f"{file}: [declare.absent] {path!r} = 'empty' needs an array path (ending in [])")
            if form != "omit":
                self.absent[f] = form
        for path in decl.string_items:
            if by_path.get(path) != "warnings":
                raise MappingError(
                    f"{file}: [declare] string_items names {path!r}; only the warnings array (its path in [fields]) "
                    "may hold plain strings"
                )
            self.group_node("warnings").strings = True
        self.outcome = decl.outcome
        if decl.outcome is not None:
            if "ok" not in self.fields:
                raise MappingError(f"{file}: [declare.outcome] needs an ok path in [fields] (the member holding it)")
            words = [w for which in ("success", "failure", "warning") for w in decl.outcome.words(which)]
            if not decl.outcome.words("success") or not decl.outcome.words("failure"):
                raise MappingError(f"{file}: [declare.outcome] needs at least one success and one failure value")
            if len(set(words)) != len(words):
                raise MappingError(f"{file}: [declare.outcome] names a value twice: {words}")
            self.leaf(self.ok_keys or ()).type = str
        self.scale: dict[str, int] = {}
        """Field -> wire units per canonical millisecond divisor (``s``: 1000)."""
        for path, unit in decl.units.items():
            f = by_path.get(path)
            if f not in ("duration_ms", "problem.retry_after_ms"):
                raise MappingError(
                    f"{file}: [declare.units] {path!r} is not the duration_ms or problem.retry_after_ms path "
                    "of [fields]"
                )
            if unit == "s":
                self.scale[f] = 1000
                self.field_leaf(f).type = int | float

    def attrs(self, keys: Sequence[str], base: Node | None = None) -> list[str]:
        """The attribute path of the wire Structs' member at ``keys`` (below ``base``, else the root)."""
        node: Leaf | Node = self.root if base is None else base
        out = []
        for k in keys:
            assert isinstance(node, Node)
            out.append(attr(list(node.members).index(k)))
            node = node.members[k]
        return out

    def leaf(self, keys: Sequence[str], base: Node | None = None) -> Leaf:
        """The member at ``keys`` (below ``base``, else the root)."""
        node: Leaf | Node = self.root if base is None else base
        for k in keys:
            assert isinstance(node, Node)
            node = node.members[k]
        assert isinstance(node, Leaf)
        return node

    def field_leaf(self, field: str) -> Leaf:
        """The member carrying canonical ``field``."""
        grp = group_of(field)
        if grp is None:
            return self.leaf(next(k for f, k in self.top if f == field))
        return self.leaf(next(k for f, k in self.sub[grp] if f == field), self.group_node(grp))

    def group_node(self, group: str) -> Node:
        """The object (or array item) of ``problems`` or ``warnings``."""
        node = self.root
        for k in self.group_paths[group][0]:
            nxt = node.members[k]
            assert isinstance(nxt, Node)
            node = nxt
        return node

    def _node(self, keys: list[str], path: str, file: str) -> Node:
        node = self.root
        for k in keys:
            child = node.members.get(k)
            if child is None:
                child = node.members[k] = Node()
            if isinstance(child, Leaf):
                raise MappingError(f"{file}: [fields]: {path!r} lies inside a value another field holds")
            node = child
        return node

    def _place(
        self,
        keys: list[str],
        leaf: Leaf,
        path: str,
        file: str,
        seen: dict[str, str],
        what: str,
        base: Node | None = None,
    ) -> None:
        if path in seen:
            raise MappingError(f"{file}: {what} and {seen[path]} share the wire path {path!r}")
        seen[path] = what
        node = self._node(keys[:-1], path, file) if base is None else base
        if base is not None:
            for k in keys[:-1]:
                nxt = node.members.setdefault(k, Node())
                if isinstance(nxt, Leaf):
                    raise MappingError(f"{file}: [fields]: {path!r} lies inside a value another field holds")
                node = nxt
        if keys[-1] in node.members:
            raise MappingError(f"{file}: [fields]: {path!r} is both a value and an object")
        node.members[keys[-1]] = leaf
        if leaf.required:  # every object on the way to a required member is required
            n = self.root
            for k in keys[:-1] if base is None else ():
                nn = n.members[k]
                assert isinstance(nn, Node)
                nn.required = True
                n = nn

    def _struct(self, node: Node, cname: str, path: str) -> type[Struct]:
        specs: list[tuple[str, Any, Any] | tuple[str, Any]] = []
        for i, (key, m) in enumerate(node.members.items()):
            py = attr(i)
            if isinstance(m, Leaf):
                tp = m.type
            else:
                tp = self._struct(m, cname + camel(key), f"{path}.{key}")
                if m.array:
                    tp = list[str | tp] if m.strings else list[tp]  # type: ignore[valid-type]
            if m.required:
                specs.append((py, tp, msgspec.field(name=key)))
            elif tp is Raw:
                specs.append((py, Raw, msgspec.field(default=_ABSENT, name=key)))
            else:
                specs.append((py, tp | None, msgspec.field(default=None, name=key)))
        ordered = [s for s in specs if len(s) == 3 and s[2].default is msgspec.NODEFAULT] + [
            s for s in specs if not (len(s) == 3 and s[2].default is msgspec.NODEFAULT)
        ]
        return msgspec.defstruct(
            cname,
            ordered,
            kw_only=True,
            forbid_unknown_fields=True,
            omit_defaults=True,
            namespace={"__doc__": self.description if path == "$" else f"{self.name}: the object at {path}"},
        )


TEMPLATE_FIELDS = ("tool", "slug", "id")
"""Placeholders of a ``[synthesize]`` template (filled in by ``envglot.declhooks.write_templated``)."""


def _templates(table: DialectTable, file: str) -> dict[str, str]:
    """The ``[synthesize]`` rules that are templates, checked: known placeholders only, and on
    top-level members (an error's or warning's rule is a plain value)."""
    import string  # only a declaration with templates needs it

    out: dict[str, str] = {}
    for f, rule in table.synthesize.items():
        if not isinstance(rule, str) or ("{" not in rule and "}" not in rule):
            continue
        try:
            names = [n for _, n, spec, conv in string.Formatter().parse(rule) if n is not None or spec or conv]
        except ValueError as exc:
            raise MappingError(
                f"{file}: [synthesize] {f} = {rule!r}: {exc} (a literal brace is {{{{ or }}}})"
            ) from None
        bad = [n for n in names if n not in TEMPLATE_FIELDS]
        if bad:
            raise MappingError(
                f"{file}: [synthesize] {f} = {rule!r}: unknown placeholder {{{bad[0]}}} "
                f"(a template may use {', '.join('{' + n + '}' for n in TEMPLATE_FIELDS)})"
            )
        if names and "." in f:
            raise MappingError(f"{file}: [synthesize] {f} = {rule!r}: templates are for top-level members")
        if names:
            out[f] = rule
    return out


def attr(i: int) -> str:
    """The wire Structs' attribute name of a node's ``i``-th member (its wire key is the encode name);
    interned, as the generated code's keyword names are (msgspec matches those by identity first)."""
    return sys.intern(f"f{i}")


def group_of(field: str) -> str | None:
    """``problems`` for ``problem.*``, ``warnings`` for ``warning.*``, else ``None``."""
    return next((g for g, p in LIST_GROUPS.items() if field.startswith(p)), None)


def camel(s: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[-_]", s))
