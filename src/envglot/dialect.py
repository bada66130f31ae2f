"""The dialect unit: one class per dialect owns everything about its wire format.

A dialect module defines wire Structs, a reader and a writer, and one :class:`Dialect`
subclass that declares the rest once: its name and description, whether envglot writes it,
the shape facts the pipeline needs (:class:`Shape`), its detection probes, its contract
checks, its outcome flag and its JSON Schema. Defining a bundled subclass adds it to the base
registry (:func:`~envglot.registry.bundled`); ``envglot.dialects`` imports every module of
its package, so a new dialect is one new module (plus its table in ``mappings/``, its tests,
goldens and docs page) and no module outside it names it. See ``docs/adding-a-dialect.md``.

A dialect declared in a TOML file (``envglot.declared``) is never added to the base: it lives
only in the registries built with it (:meth:`~envglot.registry.Registry.adding`), which a
:class:`~envglot.mappings.Mappings` (and so a ``Converter``) keeps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import msgspec
from msgspec import Raw, Struct

from .checker import optional_constants
from .diagnostics import Kind
from .errors import MappingError, ParseError
from .registry import dialect_names, get_dialect, register, registered, writable_names

if TYPE_CHECKING:
    from . import canonical as c
    from .checker import Checker
    from .context import Context
    from .fields import Reading, Writing
    from .mappings import Mappings

__all__ = [
    "Dialect",
    "Facts",
    "Probe",
    "Shape",
    "dialect_names",
    "get_dialect",
    "registered",
    "writable_names",
]


class Shape(Struct, frozen=True, forbid_unknown_fields=True):
    """Wire facts the pipeline needs about a dialect (declared once, on its class)."""

    payload: Literal["object", "any"] = "any"
    """``object``: the payload field holds only objects (others are wrapped as ``{"value": ...}``)."""
    max_problems: int = 1
    """How many errors one document carries (0: unbounded, an array)."""
    residue: str = "$._envglot"
    """Where ``preserve`` mode keeps what the dialect cannot say."""
    writable: bool = True
    """False for a read-only source dialect."""
    closed: bool = False
    """The code vocabulary is a closed enum: overlays may remap codes, never add them."""
    open_codes: bool = False
    """Any code is valid (the codes are category words, from ``error-types.toml``'s column)."""
    marked_success: bool = True
    """False: a success carries no marker of the dialect (google-rpc's is the resource itself), so
    detection recognizes its failures only and a success is read with ``from_``/``-f``."""


class Probe(Struct, frozen=True):
    """One detection rule: ``test`` returns the evidence (a short name) or ``None``.

    All probes of all dialects run in ``priority`` order (lower first); the first match wins.
    """

    priority: int
    test: Callable[[Facts], str | None]
    doc: str = ""
    """What the probe looks for, in Markdown (the detection table of ``docs/python-api.md``)."""


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
    """Base class of a dialect. Subclasses set the class attributes and the methods below."""

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
        import sys
        from pathlib import Path

        from .tables import DialectTable, decode_table

        module = sys.modules[type(self).__module__].__file__
        if module is None:
            raise MappingError(f"{self.name}: table_file needs a module loaded from a file")
        path = Path(module).resolve().parent / self.table_file
        table = decode_table(path, DialectTable)
        assert isinstance(table, DialectTable)
        if table.dialect != self.name:
            raise MappingError(f"{path}: dialect = {table.dialect!r}, expected {self.name!r}", path="$.dialect")
        return table, str(path)

    def arrange(self, doc: bytes) -> bytes:
        """A document a preserve residue restored, in the dialect's own key order (default: as
        patched; a patch appends the keys it adds)."""
        return doc

    def seal(self, doc: bytes) -> bytes:
        """Recompute what counts the whole written document (default: nothing)."""
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
        return optional_constants(self.wire) if self.wire is not None else frozenset()

    def schema_type(self) -> type[Struct]:
        """The Struct whose JSON Schema ``envglot schema`` prints."""
        if self.wire is None:
            raise NotImplementedError(f"{self.name} declares no wire Struct")
        return self.wire

    def failed(self, doc: bytes) -> bool:
        """Whether a document of this dialect says failure (MCP ``isError``)."""
        try:
            top = _OBJ.decode(doc)
        except msgspec.MsgspecError as exc:
            raise ParseError(f"the envelope's outcome cannot be read: {exc}", path="$") from None
        flag = top.get(self.outcome_key)
        return flag is not None and bytes(flag) == self.failure_value

    def __repr__(self) -> str:
        return f"<dialect {self.name}>"
