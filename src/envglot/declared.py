"""Dialects declared in a TOML file alone, compiled by the same compiler as the bundled ones.

A declaration file is a mapping table (``dialect``, ``[fields]``, ``[codes]``, ``[[write]]``,
``[synthesize]``, ``[defaults]``) plus a ``[declare]`` table (``envglot.declare.Declare``: the
keys a bundled dialect's ``[declare]`` has, with required paths, constant members and detection
keys instead of a hooks module's probes). Passing it as ``mappings=[path]`` / ``--mappings path``
adds it to a new :class:`~envglot.registry.Registry` kept by those tables
(:func:`with_declarations`); nothing is registered for the process. The declaration is
checked into a wire tree (``envglot.declaration``), turned into field steps
(``envglot.declsteps``) and compiled by ``envglot.fields`` into the hub reader and writer and
every fused pair path; its contract check, detection probe, outcome flag and JSON Schema come
from the same tree. See ``docs/declared-dialects.md``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec
from msgspec import Raw

from . import canonical as c
from .checker import Checker
from .context import Context
from .declaration import KIND, Declaration, Declare, Detect, Leaf, Node, camel, canonical_types
from .declare import When
from .declsteps import steps
from .detect import classify
from .diagnostics import DISCARD, Kind
from .dialect import Dialect, Probe, Shape
from .errors import MappingError
from .probetests import DeclaredTest, needs_of
from .registry import Registry, bundled
from .tables import DialectTable, Mappings, error_path, locate_error, toml_document
from .tomlfile import read_regular

if TYPE_CHECKING:
    from pathlib import Path

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
        top = self.top_members(doc)
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


def build_declaration(
    path: Path, buf: bytes, doc: dict[str, Any], registry: Registry
) -> tuple[str, type[DeclaredDialect] | None, str]:
    """``(name, class to add or None when ``registry`` has it already, digest)``; validates everything."""
    raw_decl = doc.get("declare")
    if not isinstance(raw_decl, dict):
        raise MappingError(f"{path}: [declare] must be a table", path="$.declare")
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
    import hashlib  # a declaration file only: not imported with envglot

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
    try:  # (after the name: a bundled table is refused by name, not by its [declare])
        decl = msgspec.convert(raw_decl, Declare)
    except msgspec.ValidationError as exc:
        inner = error_path(str(exc)) or "$"
        raise MappingError(f"{path}: [declare]: {exc}", path="$.declare" + inner[1:]) from None
    for a in decl.aliases:
        other = registry.find(a)
        if other is not None:
            raise MappingError(f"{path}: alias {a!r} is already {other.name}", path="$.declare.aliases")
    if table.types:
        raise MappingError(f"{path}: [types] (an error-type vocabulary) needs a Python dialect", path="$.types")
    compiled = Declaration(name, table, decl, str(path))
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
    # The detection keys all present, each top-level constant its value (a declared test: inline in detection).
    when = (
        When(
            evidence=decl.detect.keys[0],
            present=decl.detect.keys,
            equals={k[0]: v for k, v in compiled.constants if len(k) == 1},
        ),
    )

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
            "probes": (Probe(decl.detect.priority, DeclaredTest(when, name, "detect"), "", needs_of(when), when),),
            "outcome_key": outcome.removeprefix("$."),
            "declaration": compiled,
            "reading": reading,
            "writing": writing,
            "table": table,
            "file": str(path),
            "digest": digest,
            "__module__": __name__,
            **decl.class_facts(str(path)),
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
    from pathlib import Path  # overlays only: the bundled tables are read without pathlib

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
    return dict(canonical_types())
