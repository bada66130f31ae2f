"""The dialect unit: one declaration and one hooks module own everything about a wire format.

A bundled dialect is its table's ``[declare]`` (``mappings/<name>.toml``: its description, aliases,
the shape facts the pipeline needs (:class:`Shape`), native indent, its probes' priorities and
docs, ...) plus its hooks module ``envglot.dialects.<name>`` (wire Structs, the field declarations,
probe functions, the contract's ``invariants`` and the few methods a declaration cannot say, by the
names in :data:`HOOKS`). :func:`compile_hooks` builds the :class:`Dialect` from the two and so adds
it to the base registry (:func:`~envglot.registry.bundled`); ``envglot.dialects`` makes every
module of its package known and compiles each on first use, so a new dialect is its table and one
new module (plus its tests and docs page) and no module outside them names it. See
``docs/adding-a-dialect.md``. A plugin may be the same (its module compiles itself with its
``table_file``) or a :class:`Dialect` subclass stating the facts as class attributes.

A dialect declared in a TOML file alone (``envglot.declared``) is never added to the base: it
lives only in the registries built with it (:meth:`~envglot.registry.Registry.adding`), which a
:class:`~envglot.mappings.Mappings` (and so a ``Converter``) keeps.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import msgspec
from msgspec import Raw, Struct

from .declare import Hooked, ProbeDoc, Shape, When
from .errors import MappingError, ParseError
from .kinds import Kind
from .registry import (
    Deferred,
    defer,
    dialect_names,
    get_dialect,
    is_shipped,
    register,
    registered,
    shipped_dialect,
    writable_names,
)
from .tables import bundled_table, error_path, toml_document
from .tomlfile import read_regular

if TYPE_CHECKING:
    from pathlib import Path

    from . import canonical as c
    from .checker import Checker
    from .context import Context
    from .fields import Reading, Writing
    from .mappings import Mappings

__all__ = [
    "HOOKS",
    "Dialect",
    "Facts",
    "Probe",
    "Shape",
    "compile_hooks",
    "declared_facts",
    "defer_hooks",
    "dialect_names",
    "get_dialect",
    "name_of",
    "registered",
    "shape_of",
    "writable_names",
]


class Probe(Struct, frozen=True):
    """One detection rule: ``test`` returns the evidence (a short name) or ``None``.

    All probes of all dialects run in ``priority`` order (lower first); the first match wins.
    """

    priority: int
    test: Callable[[Facts], str | None]
    doc: str = ""
    """What the probe looks for, in Markdown (the detection table of ``docs/python-api.md``)."""
    needs: tuple[frozenset[str], ...] | None = None
    """Top-level key sets, one of which a document holds in full whenever ``test`` names evidence
    (``None``: not declared). Lets a forced source rule this probe out by its keys alone."""
    when: tuple[When, ...] = ()
    """A declared test's alternatives (``test`` runs them): the detections generate them inline
    instead of calling ``test``. Empty: ``test`` is a Python function."""


_OBJ = msgspec.json.Decoder(dict[str, Raw])
_TRUE, _FALSE = Raw(b"true"), Raw(b"false")


class Facts:
    """What the probes look at: a document's top-level members as raw JSON, decoded once.

    ``keys`` is the set of top-level keys, or ``None`` when the document has a key that no
    registered dialect (and no transport wrapper) defines.
    """

    __slots__ = ("_members", "keys", "present")

    def __init__(self, present: dict[str, Raw], keys: frozenset[str] | None) -> None:
        self.present = present
        """The members the probe Struct found, by key."""
        self.keys = keys
        self._members: dict[str, dict[str, Raw] | None] = {}

    def raw(self, key: str) -> Raw | None:
        """The member ``key`` as raw JSON (``None`` when absent)."""
        return self.present.get(key)

    def has(self, key: str) -> bool:
        return key in self.present

    def starts(self, key: str, first: bytes) -> bool:
        """The member is present and its JSON starts with ``first`` (``b"{"``, ``b'"'``...)."""
        r = self.present.get(key)
        return r is not None and memoryview(r)[:1] == first

    def is_obj(self, key: str) -> bool:
        return self.starts(key, b"{")

    def is_bool(self, key: str) -> bool:
        r = self.present.get(key)
        return r is not None and (r == _TRUE or r == _FALSE)

    def equals(self, key: str, json: bytes) -> bool:
        r = self.present.get(key)
        return r is not None and bytes(r) == json

    def member(self, key: str) -> dict[str, Raw] | None:
        """The object member ``key``, one level decoded (``None`` when absent or not an object)."""
        if key in self._members:
            return self._members[key]
        r = self.present.get(key)
        out = _OBJ.decode(r) if r is not None and memoryview(r)[:1] == b"{" else None
        self._members[key] = out
        return out


class Dialect:
    """Base class of a dialect: :func:`compile_hooks` sets the class attributes and methods below
    from a declaration and its hooks module (a plugin's subclass may set them by hand)."""

    name: ClassVar[str]
    """The CLI name (kebab-case); ``mappings/<name>.toml`` is its table."""
    description: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    shape: ClassVar[Shape] = Shape()
    native_indent: ClassVar[int] = -1
    """``style="native"``: how the real emitter prints (negative: minified)."""
    wire: ClassVar[type[Struct] | None] = None
    """The envelope's wire Struct (JSON Schema, detection keys); ``None`` for a free-form dialect."""
    keys: ClassVar[frozenset[str]] = frozenset()
    """Top-level keys the dialect defines (derived from ``wire`` when not given)."""
    probes: ClassVar[tuple[Probe, ...]] = ()
    fallback: ClassVar[bool] = False
    """Reads any object no probe claims (a bare payload; detection evidence ``None``)."""
    declared: ClassVar[bool] = False
    """Compiled from a declaration file: its probes run after every bundled dialect's, so a
    declaration never outranks a bundled dialect whose markers are present; defining its class
    adds it to no registry."""
    plugin: ClassVar[str | None] = None
    """The ``envglot.dialects`` entry point that installed it (``None``: bundled or declared); a
    plugin's probes, like a declared dialect's, run after every bundled dialect's."""
    table_file: ClassVar[str | None] = None
    """A plugin's table: a TOML file (the schema of ``mappings/<name>.toml``), relative to the
    folder of the module that defines the class; ``None``: the table is ``mappings/<name>.toml``."""
    outcome_key: ClassVar[str] = "success"
    """The member that says success or failure (``isError`` mirrors it)."""
    failure_value: ClassVar[bytes] = b"false"
    """The JSON of ``outcome_key`` that means failure."""
    reader_kinds: ClassVar[frozenset[Kind]] = frozenset({Kind.STATUS_MISMATCH})
    """Reader diagnostics that ``validate`` reports as contract violations."""
    example_code: ClassVar[str] = "EXAMPLE_NOT_READY"
    """The code an overlay template adds, spelled as the dialect spells codes."""
    reading: ClassVar[Reading | None] = None
    """Field declarations of the reader (``envglot.fields``): ``read`` and ``from_wire`` are
    generated from them, and so is every fused pair path from this dialect."""
    writing: ClassVar[Writing | None] = None
    """Field declarations of the writer: ``write`` and every fused pair path to this dialect."""
    _steps: tuple[object, object, tuple[Reading | None, Writing | None]] | None = None

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if "name" not in cls.__dict__:
            return
        if "keys" not in cls.__dict__ and cls.wire is not None:
            cls.keys = frozenset(cls.wire.__struct_encode_fields__)  # (no annotations evaluated)
        if not cls.declared:
            register(cls())

    # -- the unit's behaviour ------------------------------------------------------------

    def read(self, buf: bytes | memoryview | str, ctx: Context) -> c.Envelope:
        """Read one document into the canonical model (generated from ``reading``)."""
        self._generate()
        return self.read(buf, ctx)

    def from_wire(
        self, w: Any, ctx: Context, extras: tuple[c.Extra, ...] = (), residue: Raw | None = None
    ) -> c.Envelope:
        """The canonical envelope of a decoded (or constructed) wire Struct (from ``reading``)."""
        self._generate()
        return self.from_wire(w, ctx, extras, residue)

    def write(self, env: c.Envelope, ctx: Context) -> bytes:
        """Write the canonical envelope, compact JSON (generated from ``writing``)."""
        self._generate()
        return self.write(env, ctx)

    def steps(self) -> tuple[Reading | None, Writing | None]:
        """The reading and writing the compiler compiles: ``reading`` and ``writing`` with the
        plain moves of ``[fields]`` added where they say ``derive=True`` (:mod:`envglot.derive`)."""
        cached = self._steps
        if cached is not None and cached[0] is self.reading and cached[1] is self.writing:
            return cached[2]
        from .derive import derived

        out = derived(self)
        self._steps = (self.reading, self.writing, out)
        return out

    def _generate(self) -> None:
        """Replace ``read``/``from_wire``/``write`` on this instance by the generated hub code."""
        if self.reading is None:
            raise NotImplementedError(f"{self.name} declares no reading")
        from .fields import hub

        read, from_wire, write = hub(self)
        self.read = read  # type: ignore[method-assign]
        self.from_wire = from_wire  # type: ignore[method-assign]
        if write is not None:
            self.write = write  # type: ignore[method-assign]
        elif type(self).write is Dialect.write:
            raise NotImplementedError(f"{self.name} declares no writing")

    def own_table(self) -> tuple[Any, str] | None:
        """``(DialectTable, file)`` when the dialect's table does not live in ``mappings/``: a
        plugin's ``table_file`` (a dialect declared in a file of its own overrides this); ``None``
        when it does.

        Raises:
            MappingError: the file cannot be read, is no table, or names another dialect.
        """
        if self.table_file is None:
            return None
        from .tables import DialectTable, decode_table

        module = sys.modules[type(self).__module__].__file__
        if module is None:
            raise MappingError(f"{self.name}: table_file needs a module loaded from a file")
        path = os.path.join(os.path.dirname(os.path.realpath(module)), self.table_file)
        table = decode_table(path, DialectTable)
        assert isinstance(table, DialectTable)
        if table.dialect != self.name:
            raise MappingError(f"{path}: dialect = {table.dialect!r}, expected {self.name!r}", path="$.dialect")
        return table, str(path)

    def arrange(self, doc: bytes) -> bytes:
        """A document a preserve residue restored, in the dialect's own key order (default: as
        patched; a patch appends the keys it adds)."""
        return doc

    def seal(self, doc: bytes, top: dict[str, Raw] | None = None, minified: bool = False) -> bytes:
        """Recount the written document (default: no-op; ``top``: its decoded top level; ``minified``: unspaced)."""
        return doc

    def contract(self, d: dict[str, Any], c: Checker, m: Mappings) -> None:
        """Report to ``c`` every way the document ``d`` breaks the dialect's specification: the
        wire Struct read as a contract (:meth:`Checker.wire`, with the :class:`~envglot.checker.Rule`
        declared on its fields), then :meth:`invariants`."""
        if self.wire is not None:
            c.wire(d, self.wire)
        self.invariants(d, c, m)

    def invariants(self, d: dict[str, Any], c: Checker, m: Mappings) -> None:
        """The spec's rules across fields, which no one field's declaration states (a status
        computed from the errors, a flag derived from the code); report each break to ``c``."""

    def optional_constants(self) -> frozenset[str]:
        """JSON paths of the constants inside the optional objects of this dialect's contract
        (:func:`~envglot.checker.optional_constants`; none for a free-form dialect)."""
        from .checker import optional_constants  # only here: loading the tables needs no checker

        return optional_constants(self.wire) if self.wire is not None else frozenset()

    def schema_type(self) -> type[Struct]:
        """The Struct whose JSON Schema ``envglot schema`` prints."""
        if self.wire is None:
            raise NotImplementedError(f"{self.name} declares no wire Struct")
        return self.wire

    @staticmethod
    def top_members(doc: bytes) -> dict[str, Raw]:
        """``doc``'s top-level members, for :meth:`failed` (a :class:`ParseError` if it is no object)."""
        try:
            return _OBJ.decode(doc)
        except msgspec.MsgspecError as exc:
            raise ParseError(f"the envelope's outcome cannot be read: {exc}", path="$") from None

    def failed(self, doc: bytes) -> bool:
        """Whether a document of this dialect says failure (MCP ``isError``)."""
        flag = self.top_members(doc).get(self.outcome_key)
        return flag is not None and bytes(flag) == self.failure_value

    def __reduce_ex__(self, protocol: Any) -> str | tuple[Any, ...]:
        """A bundled dialect pickles by name: the receiving process compiles its own on first use."""
        if is_shipped(self):
            return shipped_dialect, (self.name,)
        return super().__reduce_ex__(protocol)

    def __repr__(self) -> str:
        return f"<dialect {self.name}>"


# --- a dialect compiled from its declaration and its hooks module ----------------------------

HOOKS = {
    "wire": "WIRE",
    "keys": "KEYS",
    "reading": "READING",
    "writing": "WRITING",
    "write": "write",
    "seal": "seal",
    "arrange": "arrange",
    "invariants": "invariants",
    "contract": "contract",
    "failed": "failed",
    "schema_type": "schema_type",
}
"""Dialect attribute -> the module-level name of a hooks module that provides it: the wire
Struct, the field declarations and the methods a declaration cannot say. A hook function is
written as the method it replaces: with a first parameter ``self`` (the dialect) when it needs
the dialect's declared facts, else without (a static function)."""


class DeclaredFacts:
    """A hooks module's ``[declare]`` read from its table: the facts, the shape, the outcome member."""

    __slots__ = ("declare", "file", "name", "outcome_key", "shape")

    def __init__(self, name: str, declare: Hooked, outcome_key: str, file: str) -> None:
        self.name = name
        self.declare = declare
        self.file = file
        self.outcome_key = outcome_key
        """The member ``[fields] ok`` names (a top-level key: ``isError`` mirrors it)."""
        self.shape = Shape(
            payload=declare.payload,
            max_problems=declare.max_problems,
            residue=declare.residue,
            writable=declare.writable,
            closed=declare.closed,
            open_codes=declare.open_codes,
            marked_success=declare.marked_success,
        )


@cache
def declared_facts(name: str | None, file: str | Path | None = None) -> DeclaredFacts:
    """The ``[declare]`` table of bundled dialect ``name`` (``mappings/<name>.toml`` as shipped,
    read once for these facts and the default tables: :func:`~envglot.tables.bundled_table`), or
    of the table ``file`` (a plugin's; ``name=None``: the one its ``dialect`` key says).

    Raises:
        MappingError: the file cannot be read, names another dialect or its ``[declare]`` is
            not a valid one (naming the file and the JSON path).
    """
    if file is None:
        assert name is not None
        table, path = bundled_table(name)
        said: object = table.dialect
        raw: object = table.declare
        fields: object = table.fields
    else:
        path = os.fspath(file)
        doc = toml_document(read_regular(path, "mapping table", error=MappingError), path)
        got = doc if isinstance(doc, dict) else {}
        said, raw, fields = got.get("dialect"), got.get("declare"), got.get("fields")
    if not isinstance(said, str) or said != (name or said):
        raise MappingError(f"{path}: dialect = {said!r}, expected {name or 'a dialect name'!r}", path="$.dialect")
    if not isinstance(raw, dict):
        raise MappingError(f"{path}: [declare] must be a table (the dialect's declaration)", path="$.declare")
    for name, part in (probes if isinstance(probes := raw.get("probes"), dict) else {}).items():
        _convert(part, ProbeDoc, path, f"probes.{name}")  # first on its own: an error names the probe
    decl = _convert(raw, Hooked, path, "")
    ok = fields.get("ok") if isinstance(fields, dict) else None
    if not isinstance(ok, str) or not ok.startswith("$.") or "." in ok[2:]:
        raise MappingError(
            f"{path}: [fields] ok must name the top-level member that says the outcome", path="$.fields.ok"
        )
    return DeclaredFacts(said, decl, ok[2:], str(path))


_T = TypeVar("_T")


def _convert(raw: object, kind: type[_T], file: str, at: str) -> _T:
    """``raw`` as ``kind``, part ``at`` of ``[declare]`` of ``file`` (a :class:`MappingError` naming both)."""
    try:
        return msgspec.convert(raw, kind)
    except msgspec.ValidationError as exc:
        inner = (error_path(str(exc)) or "$")[1:]
        name = f"[declare.{at}]" if at else "[declare]"
        raise MappingError(f"{file}: {name}: {exc}", path="$.declare" + (f".{at}" if at else "") + inner) from None


def name_of(module: str) -> str:
    """The name of the dialect whose hooks module is ``module`` (``envglot.dialects.code_graph``:
    ``code-graph``; its table is ``mappings/<name>.toml``)."""
    return module.rsplit(".", 1)[-1].replace("_", "-")


def shape_of(name: str) -> Shape:
    """The :class:`Shape` the ``[declare]`` of bundled dialect ``name`` says."""
    return declared_facts(name).shape


def defer_hooks(module: str, load: Callable[[], object]) -> Deferred:
    """Make the bundled dialect of hooks module ``module`` (``envglot.dialects.<name>``) known by
    its ``[declare]`` alone; ``load`` compiles it (:func:`compile_hooks`) when a registry first
    needs the dialect itself (:class:`~envglot.registry.Deferred`)."""
    facts = declared_facts(name_of(module))
    decl = facts.declare
    return defer(facts.name, tuple(decl.aliases), decl.description, facts.shape, load)


def _probe(file: str, module: ModuleType, fn: str, p: ProbeDoc, dialect: str) -> Probe:
    """``[declare.probes.<fn>]``: its declared test (``when``), or the module's function ``fn``."""
    from .probetests import DeclaredTest, needs_of  # on first compile: loading the tables never needs it

    test = getattr(module, fn, None)
    p.check(file, fn, f"{module.__name__} has a function {fn!r}" if callable(test) else None, module.__name__)
    if p.when or test is None:
        return Probe(p.priority, DeclaredTest(p.when, dialect, fn), p.doc, needs_of(p.when), tuple(p.when))
    return Probe(p.priority, test, p.doc, p.needs_sets())


def compile_hooks(module: ModuleType | str, table_file: str | None = None) -> type[Dialect]:
    """The dialect of a hooks module (or its name), compiled from its declaration.

    A bundled dialect is named after its module (``code_graph``: ``code-graph``) and declared by
    ``[declare]`` of ``mappings/<name>.toml``; a plugin's module names its table, ``table_file``
    (relative to the module's folder), whose ``dialect`` key names it. Every declared fact comes
    from ``[declare]``, the rest from the module's names in :data:`HOOKS` and the probe
    functions ``[declare.probes]`` names. Defining the class registers it (a module of
    ``envglot.dialects``: in the base registry; a plugin's: when its entry point loads); it is
    set on the module under its name (``CodeGraph``), where pickle looks for it.
    """
    if isinstance(module, str):
        module = sys.modules[module]
    if table_file is None:
        facts = declared_facts(name_of(module.__name__))
    else:
        if module.__file__ is None:
            raise MappingError(f"{module.__name__}: a table_file needs a module loaded from a file")
        facts = declared_facts(None, os.path.join(os.path.dirname(os.path.realpath(module.__file__)), table_file))
    name = facts.name
    decl = facts.declare
    ns: dict[str, Any] = {
        "__module__": module.__name__,
        "__doc__": decl.description,
        "name": name,
        "description": decl.description,
        "aliases": tuple(decl.aliases),
        "shape": facts.shape,
        "native_indent": decl.native_indent,
        "outcome_key": facts.outcome_key,
        "table_file": table_file,
    }
    if decl.outcome is not None:
        ns["failure_value"] = msgspec.json.encode(decl.outcome.words("failure")[0])
    if decl.fallback is not msgspec.UNSET:
        ns["fallback"] = decl.fallback
    ns.update(decl.class_facts(facts.file))
    ns["probes"] = tuple(_probe(facts.file, module, fn, p, name) for fn, p in decl.probes.items())
    for attr, hook in HOOKS.items():
        value = getattr(module, hook, None)
        if value is None:
            continue
        if callable(value) and not isinstance(value, type):
            code = getattr(value, "__code__", None)
            takes_self = code is not None and code.co_argcount > 0 and code.co_varnames[0] == "self"
            value = value if takes_self else staticmethod(value)
        ns[attr] = value
    from .declaration import camel  # on first compile: loading the tables never needs it

    cls_name = camel(name)
    if hasattr(module, cls_name):
        raise MappingError(
            f"{module.__name__}: {cls_name} is the name of the dialect's class; rename the module's {cls_name}"
        )
    cls = type(cls_name, (Dialect,), ns)
    setattr(module, cls_name, cls)  # where pickle finds it (a Converter sent to a worker process)
    return cls
