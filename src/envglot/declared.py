"""Dialects declared in a TOML file alone, compiled by the same compiler as the bundled ones.

A declaration file is a mapping table (``dialect``, ``[fields]``, ``[codes]``, ``[[write]]``,
``[synthesize]``, ``[defaults]``) plus a ``[declare]`` table with what a Python dialect states
on its class (description, payload shape, residue place, native indent, required paths,
constant members, detection). Passing it as ``mappings=[path]`` / ``--mappings path``
registers the dialect for the process (:func:`envglot.mappings.register_declarations`). The
declaration is checked into a wire tree (``envglot.declaration``), turned into field steps
(``envglot.declsteps``) and compiled by ``envglot.fields`` into the hub reader and writer and
every fused pair path; its contract check, detection probe, outcome flag and JSON Schema come
from the same tree. See ``docs/declared-dialects.md``.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any, ClassVar

import msgspec
from msgspec import Raw

from .checker import Checker
from .declaration import KIND, TYPES, Declaration, Declare, Detect, Leaf, Node, camel
from .declsteps import steps
from .diagnostics import Kind
from .dialect import Dialect, Facts, Probe, Shape
from .errors import MappingError, ParseError
from .registry import find, registered
from .tables import DialectTable, Mappings, error_path, locate_error, toml_document
from .tomlfile import read_regular

__all__ = [
    "Declare",
    "DeclaredDialect",
    "Detect",
    "build_declaration",
    "field_types",
    "read_declaration",
    "valid_name",
]

_ENC = msgspec.json.Encoder()
_OBJ = msgspec.json.Decoder(dict[str, Raw])
_LIST = msgspec.json.Decoder(list[Raw])
_NAME = re.compile(r"[a-z][a-z0-9-]*")
_MIN_PRIORITY = 41
"""Declared probes run after the transport wrappers (JSON-RPC 30, MCP 40)."""


class DeclaredDialect(Dialect):
    """A dialect compiled from a declaration file; every attribute comes from the file
    (``reading`` and ``writing``: its steps, :func:`envglot.declsteps.steps`)."""

    declaration: ClassVar[Declaration]
    table: ClassVar[DialectTable]
    file: ClassVar[str]
    digest: ClassVar[str]
    reader_kinds = frozenset({Kind.STATUS_MISMATCH})
    declared = True

    def own_table(self) -> tuple[DialectTable, str] | None:
        return self.table, self.file

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
            if dec.outcome is not None and isinstance(ok, str):
                o = dec.outcome
                said = (*o.words("success"), *o.words("warning"), *o.words("failure"))
                if ok not in said:
                    ck.add(dec.fields["ok"], f"must be one of {', '.join(map(repr, said))}, got {ok!r}")
                ok = None if ok not in said else ok not in o.words("failure")
        _check(self, dec.root, d, "$", ck, m, ok)

    def failed(self, doc: bytes) -> bool:
        d = self.declaration
        try:
            top = _OBJ.decode(doc)
        except msgspec.MsgspecError as exc:
            raise ParseError(f"the envelope's outcome cannot be read: {exc}", path="$") from None
        if d.ok_keys is not None:
            raw = _raw_at(top, d.ok_keys)
            if d.outcome is not None:
                return raw is not None and bytes(raw) in {_ENC.encode(w) for w in d.outcome.words("failure")}
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


def _arranged(raw: Raw, node: Node) -> Any:
    if not node.members or memoryview(raw)[:1] != b"{":
        return raw
    d = _OBJ.decode(raw)
    out: dict[str, Any] = {}
    for key, m in node.members.items():
        if key in d:
            v: Any = d[key]
            if isinstance(m, Node):
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
    dialect: DeclaredDialect, node: Node, obj: dict[str, Any], path: str, ck: Checker, m: Mappings, ok: Any
) -> None:
    """The contract of one wire object, derived from the declaration."""
    for key, mem in node.members.items():
        here = f"{path}.{key}"
        if isinstance(mem, Leaf):
            kind = KIND[mem.type]
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
            if present and obj[key] == [] and dialect.declaration.absent.get(mem.group) == "empty":
                present = False  # the declared way of saying "none"
            if mem.group == "problems":
                if ok is True and present:
                    ck.add(here, "must be absent when the envelope says success")
                    continue
                if ok is False and not present:
                    ck.add(here, f"missing required field (expected {'an array' if mem.array else 'an object'})")
                    continue
            if not present:
                continue
            if mem.array and mem.strings:  # plain strings or objects
                items = ck.field(obj, key, path, "array")
                for i, item in enumerate(items if isinstance(items, list) else ()):
                    if isinstance(item, dict):
                        _check(dialect, mem, item, f"{here}[{i}]", ck, m, None)
                    elif not isinstance(item, str):
                        ck.add(f"{here}[{i}]", f"expected a string or an object, got {type(item).__name__}")
            elif mem.array:
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


def build_declaration(path: Path, buf: bytes, doc: dict[str, Any]) -> tuple[str, type[DeclaredDialect] | None, str]:
    """``(name, class to register or None when already registered, digest)``; validates everything."""
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
    existing = find(name) or next((d for d in registered() if name in d.aliases), None)
    if existing is not None:
        if isinstance(existing, DeclaredDialect) and existing.digest == digest:
            return name, None, digest
        if not isinstance(existing, DeclaredDialect):
            raise MappingError(
                f"{path}: dialect = {name!r} is a bundled dialect; a declaration names a new one", path="$.dialect"
            )
        raise MappingError(
            f"{path}: dialect {name!r} is already declared differently (by {existing.file}); "
            "one process, one declaration",
            path="$.dialect",
        )
    for a in decl.aliases:
        other = find(a) or next((d for d in registered() if a in d.aliases), None)
        if other is not None:
            raise MappingError(f"{path}: alias {a!r} is already {other.name}", path="$.declare.aliases")
    if table.types:
        raise MappingError(f"{path}: [types] (an error-type vocabulary) needs a Python dialect", path="$.types")
    compiled = Declaration(name, table, decl, str(path))
    bundled_keys: set[str] = set()
    for d in registered():
        if not isinstance(d, DeclaredDialect):
            bundled_keys |= d.keys
    for k in decl.detect.keys:
        if k not in compiled.root.members:
            raise MappingError(f"{path}: [declare.detect] key {k!r} is no top-level member of the declared envelope")
    if not decl.detect.keys:
        raise MappingError(f"{path}: [declare.detect] keys must name at least one top-level member")
    if set(decl.detect.keys) <= bundled_keys:
        raise MappingError(
            f"{path}: [declare.detect] keys {decl.detect.keys} are all keys of bundled dialects; "
            "name at least one member no bundled dialect has (so no other dialect's document is claimed)",
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
    outcome = table.fields.get("ok", table.fields["problems"])
    reading, writing = steps(compiled, shape)
    cls = type(
        f"Declared{camel(name)}",
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
            "reading": reading,
            "writing": writing,
            "table": table,
            "file": str(path),
            "digest": digest,
            "__module__": __name__,
        },
    )
    return name, cls, digest


def valid_name(name: str) -> bool:
    """Whether ``name`` can name a declared dialect (lowercase letters, digits and ``-``)."""
    return _NAME.fullmatch(name) is not None


def field_types() -> dict[str, Any]:
    """Canonical field -> the wire type of a declared member carrying it: ``str``, ``bool``,
    ``int``, ``int | float``, or ``Raw`` (any JSON)."""
    return dict(TYPES)
