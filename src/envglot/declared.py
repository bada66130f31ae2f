"""Dialects declared in a TOML file alone: one generic :class:`DeclaredDialect` driven by ``[fields]``.

Over 500 lines: the TOML declaration engine (issue 24 replaces it with the :mod:`envglot.fields` compiler).

A declaration file is a mapping table (``dialect``, ``[fields]``, ``[codes]``, ``[[write]]``,
``[synthesize]``, ``[defaults]``) plus a ``[declare]`` table with what a Python dialect states
on its class (description, payload shape, residue place, native indent, required paths,
constant members, detection). Passing it as ``mappings=[path]`` / ``--mappings path``
compiles it into a new :class:`~envglot.registry.Registry` kept by those tables
(:func:`with_declarations`); nothing is registered for the process. Its wire Structs,
reader, writer, contract check, detection probe, outcome flag and JSON Schema are all
compiled from that one declaration. See ``docs/declared-dialects.md``.
"""

from __future__ import annotations

import hashlib
import re
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar, Literal

import msgspec
from msgspec import Raw, Struct

from . import canonical as c
from .checker import Checker
from .codes import missing_problem, problem_message, read_problem, write_code
from .context import Context, report_losses
from .detect import classify
from .diagnostics import DISCARD, Kind
from .dialect import Dialect, Facts, Probe, Shape
from .errors import MappingError, ParseError
from .registry import Registry, bundled
from .tables import DialectTable, Mappings, error_path, locate_error, toml_document
from .tomlfile import read_regular

__all__ = [
    "Declare",
    "DeclaredDialect",
    "Detect",
    "build_declaration",
    "check_overlap",
    "field_types",
    "read_declaration",
    "valid_name",
    "with_declarations",
]

_ABSENT = Raw(b"")
_NULL = Raw(b"null")
_ENC = msgspec.json.Encoder()
_OBJ = msgspec.json.Decoder(dict[str, Raw])
_LIST = msgspec.json.Decoder(list[Raw])
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""A declared member name: an ASCII identifier (so ``$.a.b`` is also the JSON path envglot prints)."""
_NAME = re.compile(r"[a-z][a-z0-9-]*")
_MAX_DEPTH = 16
"""How deep a declared member may lie (a declaration is compiled by recursion)."""
_MIN_PRIORITY = 41
"""Declared probes run after the transport wrappers (JSON-RPC 30, MCP 40)."""


class Detect(Struct, forbid_unknown_fields=True, frozen=True):
    """``[declare.detect]``: top-level keys that must all be present, and the probe's priority."""

    keys: list[str]
    priority: int = 80


class Declare(Struct, forbid_unknown_fields=True, frozen=True):
    """``[declare]``: what a Python dialect declares on its class."""

    description: str
    detect: Detect
    aliases: list[str] = []
    payload: Literal["object", "any"] = "any"
    residue: str = "$._envglot"
    native_indent: int = -1
    closed: bool = False
    required: list[str] = []
    """Wire paths that must be present (inside a problem or warning: in each one)."""
    constants: dict[str, str | int | bool] = {}
    """Wire path -> the value every document carries there (written always, checked by validate)."""


# --- what a declared field may carry ------------------------------------------------------

_SKIP_TOP = {"ok", "payload", "problems", "warnings", "next_steps", "extras", "residue"}
_GROUPS: dict[str, type[Struct]] = {"pagination": c.Pagination, "fidelity": c.Fidelity, "workspace": c.Workspace}
_PROBLEM_SKIP = {"category", "domain", "origin", "upstream", "aspect", "partial", "extra"}


def _plain(tp: Any) -> Any:
    """The wire type of a canonical ``T | None`` annotation."""
    args = tuple(a for a in typing.get_args(tp) if a is not type(None)) if typing.get_origin(tp) else (tp,)
    if args == (int, float):
        return int | float
    return args[0]


def _canonical_types() -> dict[str, Any]:
    out: dict[str, Any] = {"ok": bool, "payload": Raw}
    hints = typing.get_type_hints(c.Envelope)
    for f in msgspec.structs.fields(c.Envelope):
        if f.name not in _SKIP_TOP and f.name not in _GROUPS:
            out[f.name] = _plain(hints[f.name])
    for g, tp in _GROUPS.items():
        h = typing.get_type_hints(tp)
        out.update({f"{g}.{f.name}": _plain(h[f.name]) for f in msgspec.structs.fields(tp) if f.name != "extra"})
    h = typing.get_type_hints(c.Problem)
    out.update({f"problem.{f.name}": _plain(h[f.name]) for f in msgspec.structs.fields(c.Problem)})
    for k in _PROBLEM_SKIP:
        out.pop(f"problem.{k}")
    h = typing.get_type_hints(c.Notice)
    out.update({f"warning.{f.name}": _plain(h[f.name]) for f in msgspec.structs.fields(c.Notice)})
    return out


_TYPES = _canonical_types()
_KIND = {str: "string", bool: "boolean", int: "integer", int | float: "number", Raw: "any"}
_LIST_GROUPS = {"problems": "problem.", "warnings": "warning."}
_COUNTS = frozenset({"pagination.total", "pagination.page_size", "pagination.offset", "pagination.limit"})
"""Counts a target cannot carry negative (``count_for``: left out, reported)."""
_ALWAYS = frozenset({"ok", "problem.code", "warning.message"})
"""Required whether or not ``[declare] required`` names them (the outcome, an error's code, a
warning's text: the canonical model cannot do without them)."""


class _Leaf:
    """One wire member: the canonical field it carries (or a constant), its type, required or not."""

    __slots__ = ("const", "field", "required", "type")

    def __init__(self, field: str | None, tp: Any, required: bool, const: object = None) -> None:
        self.field = field
        self.type = tp
        self.required = required
        self.const = const


class _Node:
    """A wire object: its members in declaration order; ``group`` for a problem/warning object."""

    __slots__ = ("array", "group", "members", "required")

    def __init__(self) -> None:
        self.members: dict[str, _Leaf | _Node] = {}
        self.required = False
        self.group: str | None = None
        self.array = False


def _segments(path: str, where: str, group_ok: bool = False) -> tuple[list[str], bool]:
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


class _Compiled:
    """A declaration compiled: the wire tree, accessors and the wire Structs built from it."""

    def __init__(self, name: str, table: DialectTable, decl: Declare, file: str) -> None:
        self.name = name
        where = f"{file}: [fields]"
        fields = dict(table.fields)
        required = set(decl.required)
        for f in fields:
            if f not in _TYPES and f not in _LIST_GROUPS:
                hint = (
                    " (next steps and .extra objects need a Python dialect)"
                    if f.startswith(("next_step", "extras")) or f.endswith(".extra")
                    else ""
                )
                raise MappingError(f"{where}: {f!r} is not a canonical field a declared dialect can carry{hint}")
        if "payload" not in fields:
            raise MappingError(f"{where}: a declared dialect needs a payload path")
        for name_, prefix in _LIST_GROUPS.items():
            subs = [f for f in fields if f.startswith(prefix)]
            if subs and name_ not in fields:
                raise MappingError(f"{where}: {subs[0]!r} needs a {name_!r} path (the object or array holding it)")
        if "problems" in fields and "problem.code" not in fields:
            raise MappingError(f"{where}: problems need a 'problem.code' path")
        if "warnings" in fields and "warning.message" not in fields:
            raise MappingError(f"{where}: warnings need a 'warning.message' path")
        self.root = _Node()
        self.root.required = True
        self.group_paths: dict[str, tuple[list[str], bool]] = {}
        seen: dict[str, str] = {}
        for f, path in fields.items():
            if f in _LIST_GROUPS:
                self.group_paths[f] = _segments(path, where, group_ok=True)
                if f == "warnings" and not self.group_paths[f][1]:
                    raise MappingError(f"{where}: warnings = {path!r} must be an array path (ending in [])")
        for a, (ka, _) in self.group_paths.items():
            for b, (kb, _) in self.group_paths.items():
                if a != b and ka[: len(kb)] == kb:
                    raise MappingError(f"{where}: {a} path {fields[a]!r} lies inside {b} path {fields[b]!r}")
        for path in decl.constants:
            keys, _ = _segments(path, f"{file}: [declare.constants]")
            if any(keys[: len(gk)] == gk for gk, _ in self.group_paths.values()):
                raise MappingError(f"{file}: [declare.constants] {path!r} lies inside a problems/warnings object")
            self._place(
                keys,
                _Leaf(None, type(decl.constants[path]), True, decl.constants[path]),
                path,
                file,
                seen,
                f"constant {path}",
            )
        self.top: list[tuple[str, tuple[str, ...]]] = []
        self.plan: list[tuple[str, tuple[str, ...], str]] = []
        """``(field, keys, path)`` in writing order: top-level fields and the two groups."""
        planned: set[str] = set()
        self.sub: dict[str, list[tuple[str, tuple[str, ...]]]] = {g: [] for g in _LIST_GROUPS}
        for f, path in fields.items():  # one pass in [fields] order: the order envglot writes
            grp = f if f in _LIST_GROUPS else _group_of(f)
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
                rel, _ = _segments("$." + path[len(gpath) + 1 :], where)
                must = path in required or f in _ALWAYS  # an error's code, a warning's message
                self._place(rel, _Leaf(f, _TYPES[f], must), path, file, seen, f, base=gnode)
                self.sub[grp].append((f, tuple(rel)))
                continue
            keys, _ = _segments(path, where)
            for gk, _ in self.group_paths.values():
                if keys[: len(gk)] == gk:
                    raise MappingError(f"{where}: {f} = {path!r} lies inside a problems/warnings object")
            # the outcome flag is always required: a document that does not say is no success
            self._place(keys, _Leaf(f, _TYPES[f], path in required or f in _ALWAYS), path, file, seen, f)
            self.top.append((f, tuple(keys)))
            self.plan.append((f, tuple(keys), path))
        known = set(seen) | {fields[g] for g in self.group_paths}
        for r in required:
            if r not in known and r.removesuffix("[]") not in known:
                raise MappingError(f"{file}: [declare] required names {r!r}, which is no path of [fields]")
        for f, path in fields.items():
            if path in required and f in _TYPES and f not in ("ok", "payload", "problem.code", "problem.message"):
                if f not in table.synthesize and f not in ("problem.retryable", "warning.message"):
                    raise MappingError(
                        f"{file}: [synthesize] needs a rule for {f!r}: {path} is required and a source may lack it"
                    )
        _segments(decl.residue, f"{file}: [declare] residue")
        if decl.residue in seen or any(p.startswith(decl.residue + ".") for p in seen):
            raise MappingError(f"{file}: [declare] residue {decl.residue!r} is a path of [fields]")
        self.fields = fields
        self.ok_keys = tuple(_segments(fields["ok"], where)[0]) if "ok" in fields else None
        self.constants = [(tuple(_segments(p, file)[0]), v) for p, v in decl.constants.items()]
        self.description = decl.description
        self.wire = self._struct(self.root, _camel(name), "$")

    def _node(self, keys: list[str], path: str, file: str) -> _Node:
        node = self.root
        for k in keys:
            child = node.members.get(k)
            if child is None:
                child = node.members[k] = _Node()
            if isinstance(child, _Leaf):
                raise MappingError(f"{file}: [fields]: {path!r} lies inside a value another field holds")
            node = child
        return node

    def _place(
        self,
        keys: list[str],
        leaf: _Leaf,
        path: str,
        file: str,
        seen: dict[str, str],
        what: str,
        base: _Node | None = None,
    ) -> None:
        if path in seen:
            raise MappingError(f"{file}: {what} and {seen[path]} share the wire path {path!r}")
        seen[path] = what
        node = self._node(keys[:-1], path, file) if base is None else base
        if base is not None:
            for k in keys[:-1]:
                nxt = node.members.setdefault(k, _Node())
                if isinstance(nxt, _Leaf):
                    raise MappingError(f"{file}: [fields]: {path!r} lies inside a value another field holds")
                node = nxt
        if keys[-1] in node.members:
            raise MappingError(f"{file}: [fields]: {path!r} is both a value and an object")
        node.members[keys[-1]] = leaf
        if leaf.required:  # every object on the way to a required member is required
            n = self.root
            for k in keys[:-1] if base is None else ():
                nn = n.members[k]
                assert isinstance(nn, _Node)
                nn.required = True
                n = nn

    def _struct(self, node: _Node, cname: str, path: str) -> type[Struct]:
        specs: list[tuple[str, Any, Any] | tuple[str, Any]] = []
        for i, (key, m) in enumerate(node.members.items()):
            py = f"f{i}"
            if isinstance(m, _Leaf):
                tp = m.type
            else:
                tp = self._struct(m, cname + _camel(key), f"{path}.{key}")
                if m.array:
                    tp = list[tp]  # type: ignore[valid-type]
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


def _group_of(field: str) -> str | None:
    """``problems`` for ``problem.*``, ``warnings`` for ``warning.*``, else ``None``."""
    return next((g for g, p in _LIST_GROUPS.items() if field.startswith(p)), None)


def _camel(s: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[-_]", s))


def _get(obj: Any, keys: tuple[str, ...], names: dict[int, dict[str, str]]) -> Any:
    """The wire value at ``keys`` (``None`` when absent)."""
    for k in keys:
        obj = getattr(obj, names[id(type(obj))][k], None)
        if obj is None or obj is _ABSENT:
            return None
    return obj


def _attr_names(tp: type[Struct], out: dict[int, dict[str, str]]) -> None:
    """Wire key -> attribute name for ``tp`` and every Struct inside it, by type id."""
    out[id(tp)] = {f.encode_name: f.name for f in msgspec.structs.fields(tp)}
    for f in msgspec.structs.fields(tp):
        for a in (f.type, *typing.get_args(f.type)):
            for b in (a, *typing.get_args(a)):
                if isinstance(b, type) and issubclass(b, Struct) and id(b) not in out:
                    _attr_names(b, out)


def _set(doc: dict[str, Any], keys: tuple[str, ...], value: Any) -> None:
    for k in keys[:-1]:
        doc = doc.setdefault(k, {})
    doc[keys[-1]] = value


class DeclaredDialect(Dialect):
    """A dialect compiled from a declaration file; every attribute comes from the file."""

    declaration: ClassVar[_Compiled]
    table: ClassVar[DialectTable]
    file: ClassVar[str]
    digest: ClassVar[str]
    _required: ClassVar[frozenset[str]]
    reader_kinds = frozenset({Kind.STATUS_MISMATCH})
    declared = True

    def __init__(self) -> None:
        from .wire import WireDecoder

        d = self.declaration
        self._dec = WireDecoder(d.wire, self.name, self.shape.residue)
        self._names: dict[int, dict[str, str]] = {}
        _attr_names(d.wire, self._names)

    def own_table(self) -> tuple[DialectTable, str] | None:
        return self.table, self.file

    # -- read ------------------------------------------------------------------------------

    def read(self, buf: bytes | memoryview | str, ctx: Context) -> c.Envelope:
        from .wire import unwrap_payload

        d = self.declaration
        w, extras, residue = self._dec.decode(buf)
        names = self._names
        for keys, value in d.constants:
            got = _get(w, keys, names)
            if got != value or type(got) is not type(value):
                path = "$." + ".".join(keys)
                extras += (c.Extra(dialect=self.name, path=path, value=Raw(_ENC.encode(got))),)
        vals: dict[str, Any] = {}
        for f, keys in d.top:
            v = _get(w, keys, names)
            if v is not None:
                vals[f] = v
        problems = self._read_group(w, "problems", ctx)
        ok_wire = vals.pop("ok", None)
        ok = ok_wire if d.ok_keys is not None else not problems
        if ok and problems:
            raise ParseError(
                f"{self.fields_path('problems')} must be absent when {self.fields_path('ok')} is true",
                path=self.fields_path("problems"),
                dialect=self.name,
            )
        payload = vals.pop("payload", None)
        if payload is not None and not ok and payload == _NULL:
            payload = None
        if payload is not None and self.shape.payload == "object":
            inner = unwrap_payload(payload)
            if inner is not None:
                payload = inner
                ctx.report.add(
                    Kind.PAYLOAD_UNWRAPPED,
                    self.fields_path("payload"),
                    'read {"value": ...} as the wrapped payload',
                    self.name,
                )
        groups: dict[str, dict[str, Any]] = {}
        for f in [f for f in vals if "." in f]:
            g, sub = f.split(".", 1)
            groups.setdefault(g, {})[sub] = vals.pop(f)
        for g, sub_vals in groups.items():
            vals[g] = _GROUPS[g](**sub_vals)
        notices = self._read_group(w, "warnings", ctx)
        return c.Envelope(
            ok=ok,
            payload=payload,
            problems=problems,
            warnings=notices,
            extras=extras,
            residue=residue,
            **vals,
        )

    def fields_path(self, field: str) -> str:
        return self.declaration.fields.get(field, f"$.{field}")

    def _read_group(self, w: Any, group: str, ctx: Context) -> tuple[Any, ...]:
        d = self.declaration
        where = d.group_paths.get(group)
        if where is None:
            return ()
        raw = _get(w, tuple(where[0]), self._names)
        if raw is None:
            return ()
        items = raw if where[1] else [raw]
        out: list[Any] = []
        for i, item in enumerate(items):
            v = {f.split(".", 1)[1]: x for f, keys in d.sub[group] if (x := _get(item, keys, self._names)) is not None}
            if group == "warnings":
                out.append(c.Notice(**v))
                continue
            code = v.pop("code")
            at = d.fields["problem.code"].replace("[]", f"[{i}]", 1)
            retryable = v.pop("retryable", None)
            out.append(read_problem(ctx.mappings[self.name], code, ctx, at, retryable=retryable, **v))
        return tuple(out)

    # -- write -----------------------------------------------------------------------------

    def write(self, env: c.Envelope, ctx: Context) -> bytes:
        from .wire import count_for, object_payload

        d = self.declaration
        dmap = ctx.mappings[self.name]
        report_losses(env, dmap, ctx)
        doc: dict[str, Any] = {}
        for keys, value in d.constants:
            _set(doc, keys, value)
        groups: dict[str, Any] = {}
        if not env.ok and "problems" in d.group_paths:
            groups["problems"] = self._problems(env, ctx)
        if env.warnings and "warnings" in d.group_paths:
            groups["warnings"] = [self._notice(n) for n in env.warnings]
        for f, keys, path in d.plan:
            if f in _LIST_GROUPS:
                if f in groups:
                    items = groups[f]
                    _set(doc, keys, items if d.group_paths[f][1] else items[0])
                continue
            if f == "ok":
                _set(doc, keys, env.ok)
                continue
            if f == "payload":
                p = env.payload
                if self.shape.payload == "object":
                    p = object_payload(p, env.ok, ctx, self.name)
                elif p is None and path in self.required:
                    p = _NULL
                if p is not None:
                    _set(doc, keys, p)
                continue
            if "." in f:
                g, sub = f.split(".", 1)
                grp = getattr(env, g)
                v = None if grp is None else getattr(grp, sub)
            else:
                v = getattr(env, f)
            if v is not None and f in _COUNTS:
                v = count_for(v, ctx, f, self.name)
            if v is None and path in self.required:
                v = ctx.synth_value(dmap, f, path)
            if v is not None:
                _set(doc, keys, v)
        return _ENC.encode(doc)  # built in declaration order: constants, then the plan

    def _notice(self, n: c.Notice) -> dict[str, Any]:
        item: dict[str, Any] = {}
        for f, keys in self.declaration.sub["warnings"]:
            v = getattr(n, f.split(".", 1)[1])
            if v is not None:
                _set(item, keys, v)
        return item

    def _problems(self, env: c.Envelope, ctx: Context) -> list[dict[str, Any]]:
        from .wire import count_for

        d = self.declaration
        dmap = ctx.mappings[self.name]
        m = ctx.mappings
        probs = env.problems or (missing_problem(env.summary, ctx, dmap),)
        array = d.group_paths["problems"][1]
        out = []
        for i, p in enumerate(probs if array else probs[:1]):
            at = i if array else None
            item: dict[str, Any] = {}
            code = write_code(p, dmap, ctx, at)
            for f, keys in d.sub["problems"]:
                attr = f.split(".", 1)[1]
                path = d.fields[f]
                v: Any
                if attr == "code":
                    v = code
                elif attr == "message":
                    v = problem_message(p, env.summary, ctx, dmap, at) if path in self.required else p.message
                elif attr == "retryable":
                    v = p.retryable
                    if v is None and path in self.required:
                        row = dmap.codes.get(code)
                        v = (
                            row.retryable
                            if row is not None and row.retryable is not None
                            else m.default_retryable(p.category)
                        )
                        ctx.synthesized(
                            dmap, f, f"{self.name} requires retryable; wrote {str(v).lower()} (by rule)", at
                        )
                else:
                    v = getattr(p, attr)
                    if attr == "retry_after_ms":
                        v = count_for(v, ctx, "problem.retry_after_ms", self.name)
                    if v is None and path in self.required:
                        v = ctx.synth_value(dmap, f, path, index=at)
                if v is not None:
                    _set(item, keys, v)
            out.append(item)
        return out

    @property
    def required(self) -> frozenset[str]:
        return self._required

    # -- the rest of the unit ---------------------------------------------------------------

    def arrange(self, doc: bytes) -> bytes:
        """Declared members in declaration order, then the others as they came (so a restored
        document whose keys followed the declaration comes back byte for byte)."""
        return _ENC.encode(_arranged(Raw(doc), self.declaration.root))

    def contract(self, d: dict[str, Any], ck: Checker, m: Mappings) -> None:
        dec = self.declaration
        ok: Any = None
        if dec.ok_keys is not None:
            ok = _walk(d, dec.ok_keys)
        _check(self, dec.root, d, "$", ck, m, ok)

    def failed(self, doc: bytes) -> bool:
        d = self.declaration
        try:
            top = _OBJ.decode(doc)
        except msgspec.MsgspecError as exc:
            raise ParseError(f"the envelope's outcome cannot be read: {exc}", path="$") from None
        if d.ok_keys is not None:
            raw = _raw_at(top, d.ok_keys)
            return raw is not None and bytes(raw) == b"false"
        raw = _raw_at(top, tuple(d.group_paths["problems"][0]))  # the reader's rule: errors present
        if raw is None or bytes(raw) == b"null":
            return False
        return not (memoryview(raw)[:1] == b"[" and not _LIST.decode(raw))


def _raw_at(top: dict[str, Raw], keys: tuple[str, ...]) -> Raw | None:
    obj: dict[str, Raw] | None = top
    raw: Raw | None = None
    for i, k in enumerate(keys):
        if obj is None:
            return None
        raw = obj.get(k)
        if raw is None:
            return None
        if i < len(keys) - 1:
            obj = _OBJ.decode(raw) if memoryview(raw)[:1] == b"{" else None
    return raw


def _walk(d: Any, keys: tuple[str, ...]) -> Any:
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def _arranged(raw: Raw, node: _Node) -> Any:
    if not node.members or memoryview(raw)[:1] != b"{":
        return raw
    d = _OBJ.decode(raw)
    out: dict[str, Any] = {}
    for key, m in node.members.items():
        if key in d:
            v: Any = d[key]
            if isinstance(m, _Node):
                if m.array and memoryview(v)[:1] == b"[":
                    v = [_arranged(x, m) for x in _LIST.decode(v)]
                elif not m.array:
                    v = _arranged(v, m)
            out[key] = v
    for key, v in d.items():
        if key not in out:
            out[key] = v
    return out


def _check(
    dialect: DeclaredDialect, node: _Node, obj: dict[str, Any], path: str, ck: Checker, m: Mappings, ok: Any
) -> None:
    """The contract of one wire object, derived from the declaration."""
    for key, mem in node.members.items():
        here = f"{path}.{key}"
        if isinstance(mem, _Leaf):
            kind = _KIND[mem.type]
            if mem.field == "payload" and dialect.shape.payload == "object":
                kind = "object" if ok is not False else "any"
            v = ck.field(
                obj, key, path, kind, required=mem.required, nullable=not mem.required or mem.field == "payload"
            )
            if mem.const is not None and type(v) is type(mem.const) and v != mem.const:
                ck.add(here, f"must be {mem.const!r}, got {v!r}")
            if mem.field == "problem.code" and isinstance(v, str) and dialect.shape.closed:
                if v not in m[dialect.name].codes:
                    ck.add(here, f"{v!r} is not one of {dialect.name}'s codes")
            continue
        if mem.group is not None:
            present = key in obj and obj[key] is not None
            if mem.group == "problems":
                if ok is True and present:
                    ck.add(here, "must be absent when the envelope says success")
                    continue
                if ok is False and not present:
                    ck.add(here, f"missing required field (expected {'an array' if mem.array else 'an object'})")
                    continue
            if not present:
                continue
            if mem.array:
                for sub_path, item in ck.objects(obj, key, path, required=False):
                    _check(dialect, mem, item, sub_path, ck, m, None)
            else:
                sub = ck.field(obj, key, path, "object")
                if isinstance(sub, dict):
                    _check(dialect, mem, sub, here, ck, m, None)
            continue
        sub = ck.field(obj, key, path, "object", required=mem.required, nullable=not mem.required)
        if isinstance(sub, dict):
            _check(dialect, mem, sub, here, ck, m, ok)


# --- loading --------------------------------------------------------------------------------


def read_declaration(path: Path) -> tuple[bytes, dict[str, Any]]:
    """``(bytes, TOML document)`` of the file at ``path`` (a declaration if it has ``[declare]``)."""
    buf = read_regular(path, "mapping table", error=MappingError)
    doc = toml_document(buf, str(path))
    if not isinstance(doc, dict):
        raise MappingError(f"{path}: not a TOML table")
    return buf, doc


def build_declaration(
    path: Path, buf: bytes, doc: dict[str, Any], registry: Registry
) -> tuple[str, type[DeclaredDialect] | None, str]:
    """``(name, class to add or None when ``registry`` has it already, digest)``; validates everything."""
    raw_decl = doc.get("declare")
    if not isinstance(raw_decl, dict):
        raise MappingError(f"{path}: [declare] must be a table", path="$.declare")
    try:
        decl = msgspec.convert(raw_decl, Declare)
    except msgspec.ValidationError as exc:
        inner = error_path(str(exc)) or "$"
        raise MappingError(f"{path}: [declare]: {exc}", path="$.declare" + inner[1:]) from None
    rest = {k: v for k, v in doc.items() if k != "declare"}
    try:
        table = msgspec.convert(rest, DialectTable, str_keys=True)
    except msgspec.ValidationError as exc:
        raise MappingError(f"{path}: {locate_error(buf, exc)}", path=error_path(str(exc))) from None
    name = table.dialect
    if _NAME.fullmatch(name) is None:
        raise MappingError(
            f"{path}: dialect = {name!r}: a dialect name is lowercase letters, digits and -", path="$.dialect"
        )
    digest = hashlib.sha256(msgspec.msgpack.encode(doc)).hexdigest()
    existing = registry.find(name)
    if existing is not None:
        if isinstance(existing, DeclaredDialect) and existing.digest == digest:
            return name, None, digest
        if not isinstance(existing, DeclaredDialect):
            raise MappingError(
                f"{path}: dialect = {name!r} is a bundled dialect; a declaration names a new one", path="$.dialect"
            )
        raise MappingError(
            f"{path}: dialect {name!r} is already declared differently (by {existing.file}); "
            "one set of tables, one declaration per name",
            path="$.dialect",
        )
    for a in decl.aliases:
        other = registry.find(a)
        if other is not None:
            raise MappingError(f"{path}: alias {a!r} is already {other.name}", path="$.declare.aliases")
    if table.types:
        raise MappingError(f"{path}: [types] (an error-type vocabulary) needs a Python dialect", path="$.types")
    compiled = _Compiled(name, table, decl, str(path))
    owners: dict[str, list[str]] = {}
    for d in bundled():
        for k in d.keys:
            owners.setdefault(k, []).append(d.name)
    for k in decl.detect.keys:
        member = compiled.root.members.get(k)
        if member is None:
            raise MappingError(f"{path}: [declare.detect] key {k!r} is no top-level member of the declared envelope")
        if not member.required:
            raise MappingError(
                f"{path}: [declare.detect] key {k!r} is an optional member: a document envglot writes without "
                f"it would not be detected as {name}; name only required members (the ok flag, a constant, "
                "or a path in [declare] required)",
                path="$.declare.detect.keys",
            )
    if not decl.detect.keys:
        raise MappingError(f"{path}: [declare.detect] keys must name at least one top-level member")
    if all(k in owners for k in decl.detect.keys):
        whose = "; ".join(f"{k!r}: {', '.join(owners[k])}" for k in decl.detect.keys)
        raise MappingError(
            f"{path}: [declare.detect] keys {decl.detect.keys} of {name} are all keys of bundled dialects "
            f"({whose}); every bundled dialect's probe runs before any declared one, whatever its priority, "
            "so name at least one member no bundled dialect has (so no other dialect's document is claimed)",
            path="$.declare.detect.keys",
        )
    if decl.detect.priority < _MIN_PRIORITY:
        raise MappingError(
            f"{path}: [declare.detect] priority must be at least {_MIN_PRIORITY} (after the transport wrappers)",
            path="$.declare.detect.priority",
        )
    if "problems" not in compiled.group_paths:
        raise MappingError(f"{path}: [fields] needs a problems path (where a failure's error goes)")
    if "ok" in table.fields and len(compiled.ok_keys or ()) == 0:
        raise MappingError(f"{path}: [fields] ok path is empty")
    keys = [k for k in decl.detect.keys]
    consts = [(k[0], _ENC.encode(v)) for k, v in compiled.constants if len(k) == 1]

    def probe(f: Facts) -> str | None:
        if all(f.has(k) for k in keys) and all(f.equals(k, j) for k, j in consts):
            return keys[0]
        return None

    shape = Shape(
        payload=decl.payload,
        max_problems=0 if compiled.group_paths["problems"][1] else 1,
        residue=decl.residue,
        closed=decl.closed,
    )
    required = frozenset(decl.required) | {r.removesuffix("[]") for r in decl.required}
    outcome = table.fields.get("ok", table.fields["problems"])
    cls = type(
        f"Declared{_camel(name)}",
        (DeclaredDialect,),
        {
            "name": name,
            "description": decl.description,
            "aliases": tuple(decl.aliases),
            "shape": shape,
            "native_indent": decl.native_indent,
            "wire": compiled.wire,
            "keys": frozenset(compiled.root.members),
            "probes": (Probe(decl.detect.priority, probe),),
            "outcome_key": outcome.removeprefix("$."),
            "declaration": compiled,
            "table": table,
            "file": str(path),
            "digest": digest,
            "_required": required,
            "__module__": __name__,
        },
    )
    return name, cls, digest


def with_declarations(paths: Iterable[str | Any], registry: Registry | None = None) -> tuple[Registry, list[str]]:
    """``(registry, other paths)``: ``registry`` (default: the bundled one) plus the dialect of
    every declaration among ``paths``, and the paths that are not declarations (overlays).

    Nothing process-wide changes: the registry returned is a new one. The same declaration
    twice is fine; another declaration under a name the registry has, or a bundled dialect's
    name, is a :class:`MappingError` naming the file.
    """
    reg = registry if registry is not None else bundled()
    rest = []
    for p in paths:
        path = Path(p)
        if not path.is_file():
            rest.append(str(p))
            continue
        buf, doc = read_declaration(path)
        if "declare" not in doc:
            rest.append(str(p))
            continue
        _, cls, _ = build_declaration(path, buf, doc, reg)
        if cls is not None:
            try:
                reg = reg.adding(cls())
            except ValueError as exc:  # a spelling of its name is another dialect's alias
                raise MappingError(f"{path}: {exc}", path="$.dialect") from None
    return reg, rest


def check_overlap(m: Mappings) -> None:
    """Refuse every declaration of ``m``'s registry whose own documents carry a bundled
    dialect's evidence (:class:`MappingError` naming its file and both dialects).

    Declared probes run after every bundled one (``Dialect.declared``), so such a declaration
    could never read its own documents, and its detection overlaps a bundled dialect's
    evidence: the success and the failure document it writes must be detected as itself.
    """
    for d in m.registry:
        if isinstance(d, DeclaredDialect):
            _no_overlap(d, m)


def _no_overlap(d: DeclaredDialect, m: Mappings) -> None:
    name, path = d.name, d.file
    ctx = Context(m, DISCARD, m[name])
    problem = c.Problem(category=m.unknown_category, message="failed")
    for env in (c.Envelope(ok=True, payload=Raw(b"{}")), c.Envelope(ok=False, problems=(problem,))):
        doc = d.write(env, ctx)
        det = classify(doc, m.registry)
        if det.dialect != name and det.evidence is None:  # (optional keys are refused when compiled)
            raise MappingError(
                f"{path}: [declare.detect] a {'success' if env.ok else 'failure'} document of {name} carries "
                f"none of its detection keys and would be read as a {det.dialect} bare payload",
                path="$.declare.detect",
            )
        other = m.registry.find(det.dialect)
        if isinstance(other, DeclaredDialect) and other is not d:
            raise MappingError(
                f"{path}: [declare.detect] overlaps the declared dialect {other.name} (of {other.file}): a "
                f"{'success' if env.ok else 'failure'} document of {name} is detected as {other.name} "
                f"({det.evidence}); among declarations the lower [declare.detect] priority runs first, so "
                "load them with different tables or tell them apart by a member",
                path="$.declare.detect",
            )
        if det.dialect != name:
            outcome = "success" if env.ok else "failure"
            raise MappingError(
                f"{path}: [declare.detect] overlaps the bundled dialect {det.dialect}: a {outcome} document "
                f"of {name} carries {det.dialect}'s evidence ({det.evidence}), and a bundled dialect's markers "
                "always win (every bundled probe runs before any declared one, whatever [declare.detect] "
                f"priority says): rename or drop the members {det.dialect} defines",
                path="$.declare.detect",
            )


def valid_name(name: str) -> bool:
    """Whether ``name`` can name a declared dialect (lowercase letters, digits and ``-``)."""
    return _NAME.fullmatch(name) is not None


def field_types() -> dict[str, Any]:
    """Canonical field -> the wire type of a declared member carrying it: ``str``, ``bool``,
    ``int``, ``int | float``, or ``Raw`` (any JSON)."""
    return dict(_TYPES)
