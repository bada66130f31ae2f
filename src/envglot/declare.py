"""The schema of a ``[declare]`` table: what a dialect is, said in its TOML file.

A dialect with a hooks module (every bundled one, :func:`envglot.dialect.compile_hooks`) is
declared by :class:`Hooked`; a dialect declared in TOML alone (:mod:`envglot.declared`) by
:class:`Declare`. The keys both have are :class:`Common`'s, with the same meaning; the wire
facts the pipeline reads are the :class:`Shape` compiled from them. ``docs/declared-dialects.md``
documents every key.

The module evaluates its annotations (no ``from __future__ import annotations``): msgspec reads
the Structs' types as they are when ``[declare]`` is first decoded, instead of evaluating strings.
"""

from typing import Any, Literal

from msgspec import UNSET, Struct, UnsetType

from .errors import MappingError
from .kinds import Kind

__all__ = ["Common", "Declare", "Detect", "Hooked", "JsonType", "Outcome", "ProbeDoc", "Shape", "When"]


class Shape(Struct, frozen=True, forbid_unknown_fields=True):
    """Wire facts the pipeline needs about a dialect (its ``[declare]`` table says them)."""

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


_SHAPE = Shape()
"""The defaults of the shape keys of ``[declare]``."""


class Detect(Struct, forbid_unknown_fields=True, frozen=True):
    """``[declare.detect]``: top-level keys that must all be present, and the probe's priority."""

    keys: list[str]
    priority: int = 80


class Outcome(Struct, forbid_unknown_fields=True, frozen=True):
    """``[declare.outcome]``: the values of the outcome member; the first of each is written."""

    success: str | list[str]
    failure: str | list[str]
    warning: str | list[str] = []
    """A success with warnings (read as a success; written when the success carries warnings)."""

    def words(self, which: str) -> tuple[str, ...]:
        v = getattr(self, which)
        return (v,) if isinstance(v, str) else tuple(v)


class Common(Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """The ``[declare]`` keys every declaration has, with a hooks module or without."""

    description: str
    aliases: list[str] = []
    payload: Literal["object", "any"] = _SHAPE.payload
    residue: str = _SHAPE.residue
    native_indent: int = -1
    """``style="native"``: how the real emitter prints (negative: minified)."""
    closed: bool = _SHAPE.closed
    outcome: Outcome | None = None
    """The words of the outcome member (``[fields] ok``) when it is no boolean; the first of each
    is written (a hooks module's dialect: the first failure word is the JSON that says failure)."""
    example_code: str | UnsetType = UNSET
    """The code an overlay template adds, spelled as the dialect spells codes."""
    reader_kinds: list[str] | UnsetType = UNSET
    """Reader diagnostics (``Kind`` values) that ``validate`` reports as contract violations.
    (Unset keys keep the defaults of :class:`~envglot.dialect.Dialect`.)"""

    def class_facts(self, file: str) -> dict[str, Any]:
        """The dialect class attributes these keys set (``example_code``, ``reader_kinds``; an
        unset key sets none); an unknown kind is a :class:`MappingError` naming ``file``."""
        out: dict[str, Any] = {}
        if self.example_code is not UNSET:
            out["example_code"] = self.example_code
        if self.reader_kinds is not UNSET:
            try:
                out["reader_kinds"] = frozenset(Kind(k) for k in self.reader_kinds)
            except ValueError as exc:
                raise MappingError(f"{file}: [declare] reader_kinds: {exc}", path="$.declare.reader_kinds") from None
        return out


JsonType = Literal["bool", "null", "string", "object", "array"]
"""A JSON type a declared probe test checks a member for, by its JSON text (``bool``: ``true`` or
``false``; ``object``/``array``/``string``: its first character)."""


class When(Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """``[[declare.probes.<name>.when]]``: one alternative of a declared probe test. Every
    condition given must hold; the probe names ``evidence`` for the first alternative that does.

    A *member* is a top-level key (``"success"``) or one key of a top-level object
    (``"error.code"``, quoted in TOML); every test reads the members' JSON text as the document
    spells it (the last of a repeated key), so ``equals`` compares JSON text, not values."""

    evidence: str
    present: list[str] = []
    """Top-level keys the document holds, every one."""
    present_any: list[str] = []
    """Top-level keys the document holds at least one of."""
    absent: list[str] = []
    """Top-level keys the document does not hold."""
    within: list[str] | None = None
    """The document's top-level keys are all among these (and all defined by a registered dialect)."""
    types: dict[str, JsonType | list[JsonType]] = {}
    """Member -> its JSON type (or one of a list)."""
    equals: dict[str, str | int | bool] = {}
    """Member -> the value whose compact JSON text the member is (``"response-v2"``: ``"response-v2"``)."""
    integer: dict[str, tuple[int, int]] = {}
    """Member -> ``[low, high]``: an integer written in plain digits from ``low`` to ``high`` (>= 0)."""
    holds: dict[str, list[str]] = {}
    """Top-level member -> keys it holds, every one (an object)."""
    holds_any: dict[str, list[str]] = {}
    """Top-level member -> keys it holds at least one of (an object)."""

    def needs(self) -> frozenset[str]:
        """The top-level keys a document holds whenever this alternative holds."""
        refs = [*self.types, *self.equals, *self.integer, *self.holds, *self.holds_any]
        return frozenset(self.present) | {r.split(".", 1)[0] for r in refs}

    def check(self, file: str, at: str) -> None:
        """A :class:`MappingError` naming ``file`` and the key (under ``at``) of a test that cannot be run."""
        if not (self.needs() or self.absent or self.present_any or self.within is not None):
            raise MappingError(f"{file}: {at} has no condition: name what the probe looks for", path=at)
        lists = {f"holds.{m}": k for m, k in self.holds.items()} | {
            f"holds_any.{m}": k for m, k in self.holds_any.items()
        }
        if self.within is not None:
            lists["within"] = self.within
        for key, got in lists.items():
            if not got:
                raise MappingError(f"{file}: {at}.{key} is empty: name at least one key", path=f"{at}.{key}")
        for key, refs in (("types", self.types), ("equals", self.equals), ("integer", self.integer)):
            for ref in refs:
                if ref.count(".") > 1 or "" in ref.split("."):
                    raise MappingError(
                        f"{file}: {at}.{key}: {ref!r} is no member: a top-level key or one key of a top-level "
                        'object ("error.code")',
                        path=f"{at}.{key}",
                    )
        for key, objs in (("holds", self.holds), ("holds_any", self.holds_any)):
            for m in objs:
                if "." in m:
                    raise MappingError(f"{file}: {at}.{key}: {m!r} is no top-level key", path=f"{at}.{key}")
        for ref, (low, high) in self.integer.items():
            if not 0 <= low <= high:
                raise MappingError(
                    f"{file}: {at}.integer.{ref}: [{low}, {high}] is no range of integers from 0 (low <= high)",
                    path=f"{at}.integer",
                )


class ProbeDoc(Struct, forbid_unknown_fields=True, frozen=True):
    """``[declare.probes.<name>]``: a probe's priority and doc, and its test: declared as data
    (``when``) or the hooks module's function ``<name>``."""

    priority: int
    doc: str = ""
    """What the probe looks for, in Markdown (the detection table of ``docs/python-api.md``)."""
    needs: list[list[str]] | None = None
    """Top-level key sets, one of which a document holds in full whenever the probe names
    evidence (:attr:`envglot.dialect.Probe.needs`); left out: not declared. Derived from
    ``when`` for a declared test (and refused beside it)."""
    when: list[When] = []
    """The declared test's alternatives, tried in order (empty: the module's function)."""

    def needs_sets(self) -> tuple[frozenset[str], ...] | None:
        """:attr:`needs` as :attr:`envglot.dialect.Probe.needs` takes it."""
        return None if self.needs is None else tuple(frozenset(keys) for keys in self.needs)

    def check(self, file: str, name: str, function: str | None, module: str) -> None:
        """A :class:`MappingError` naming ``file`` and the key when ``[declare.probes.<name>]``
        cannot be run: a declared test that cannot be, or beside the hooks ``module``'s
        ``function`` (``None``: it has none) or ``needs``; no test at all; empty needs."""
        at = f"$.declare.probes.{name}"
        if self.when:
            if function is not None:
                raise MappingError(
                    f"{file}: [declare.probes.{name}] has a declared test (when) and {function}: "
                    "one of them (a probe has one home)",
                    path=f"{at}.when",
                )
            if self.needs is not None:
                raise MappingError(
                    f"{file}: [declare.probes.{name}] needs is derived from when: leave it out", path=f"{at}.needs"
                )
            for i, w in enumerate(self.when):
                w.check(file, f"{at}.when[{i}]")
        elif function is None:
            raise MappingError(
                f"{file}: [declare.probes] {name!r} is no function of {module} (and declares no test, when)",
                path=at,
            )
        elif self.needs == []:
            raise MappingError(
                f"{file}: [declare.probes.{name}] needs is empty: name the key sets one of which the "
                "probe needs (or leave needs out)",
                path=f"{at}.needs",
            )


class Hooked(Common, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """``[declare]`` of a dialect with a hooks module (``Dialect.compiled``): the shared keys plus
    what only code can back (probe functions, the read-only and fallback roles, ...)."""

    probes: dict[str, ProbeDoc] = {}
    """Probe function of the hooks module (by name) -> its priority and doc."""
    max_problems: int = _SHAPE.max_problems
    writable: bool = _SHAPE.writable
    open_codes: bool = _SHAPE.open_codes
    marked_success: bool = _SHAPE.marked_success
    fallback: bool | UnsetType = UNSET


class Declare(Common, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """``[declare]`` of a dialect declared in TOML alone (no hooks module)."""

    detect: Detect
    required: list[str] = []
    """Wire paths that must be present (inside a problem or warning: in each one)."""
    constants: dict[str, str | int | bool] = {}
    """Wire path -> the value every document carries there (written always, checked by validate)."""
    absent: dict[str, Literal["omit", "null", "empty"]] = {}
    """The errors, warnings or payload member -> how a document without any says so: the member
    left out (``omit``, the default), ``null``, or an empty list (``empty``, an array member)."""
    string_items: list[str] = []
    """Array paths (``$.warnings[]``) whose items may be plain strings (a warning's message)."""
    units: dict[str, Literal["ms", "s"]] = {}
    """Wire path of a duration or delay (``duration_ms``, ``problem.retry_after_ms``) -> its unit."""
