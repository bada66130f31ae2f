"""Declared probe tests (``[[declare.probes.<name>.when]]``, :class:`~envglot.declare.When`)
compiled to Python expressions over a document's top-level members ``p`` (``dict[str, Raw]``).

One emitter for every function that runs them: the detections :mod:`envglot.detect` generates
(inlined there, each object member decoded at most once per document into a tiny Struct of the
keys the tests read, shared between the probes) and a declared probe's own test
(:class:`DeclaredTest`, what :attr:`envglot.dialect.Probe.test` runs on :class:`~envglot.dialect.Facts`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import Raw

from .declare import When

if TYPE_CHECKING:
    from .dialect import Facts
    from .fields import Unit

__all__ = ["DeclaredTest", "TestCode", "needs_of"]

_NONE = Raw()
"""What a missing member reads as: no JSON text is empty."""
_UNREAD = object()
"""A member not decoded yet."""
_FIRST = {"object": b"{", "array": b"[", "string": b'"'}


def needs_of(when: Sequence[When]) -> tuple[frozenset[str], ...]:
    """A declared test's needs (:attr:`~envglot.dialect.Probe.needs`), one key set per alternative."""
    return tuple(dict.fromkeys(w.needs() for w in when))


class TestCode:
    """The expressions of declared tests in one generated function (a :class:`~envglot.fields.Unit`).

    ``known``: the registry's top-level keys (``within`` compiled against them); ``None``: the
    function has a local ``kn`` (true when every key is known). Call :meth:`locals` after every
    :meth:`test`: it binds the members' decoders and names the locals to set before the first."""

    def __init__(self, unit: Unit, known: frozenset[str] | None) -> None:
        self.u = unit
        self.known = known
        self.members: dict[str, dict[str, str]] = {}
        """Object member -> key -> its field in the member's Struct, as the tests read them."""
        unit.ns.update(NONE=_NONE, UNREAD=_UNREAD, TF=(Raw(b"true"), Raw(b"false")), NULL=Raw(b"null"))

    def test(self, w: When) -> str:
        """One alternative as a boolean expression (cheap conditions first, member decodes last)."""
        terms = [f"{k!r} in p" for k in w.present] + [f"{k!r} not in p" for k in w.absent]
        if w.present_any:
            terms.append("(" + " or ".join(f"{k!r} in p" for k in w.present_any) + ")")
        if w.within is not None:
            if self.known is None:
                terms.append(f"kn and {self.u.ref(frozenset(w.within), 'within')}.issuperset(p)")
            else:
                terms.append(f"{self.u.ref(frozenset(w.within) & self.known, 'within')}.issuperset(p)")
        nested: list[str] = []
        for ref, kinds in w.types.items():
            self._value(ref, self._types([kinds] if isinstance(kinds, str) else kinds), terms, nested)
        for ref, value in w.equals.items():
            const = self.u.ref(Raw(msgspec.json.encode(value)), "equal")
            self._value(ref, f"{{v}} == {const}", terms, nested)
        for ref, (low, high) in w.integer.items():
            test = f"(len(r := {{v}}) <= {len(str(high))} and (b := bytes(r)).isdigit() and {low} <= int(b) <= {high})"
            self._value(ref, test, terms, nested)
        for m, keys in w.holds.items():
            nested.append(f"{self._member(m)} is not None and " + " and ".join(self._has(m, k) for k in keys))
        for m, keys in w.holds_any.items():
            nested.append(f"{self._member(m)} is not None and (" + " or ".join(self._has(m, k) for k in keys) + ")")
        return " and ".join(f"({t})" for t in terms + nested) or "True"

    def locals(self) -> str | None:
        """The statement that marks every decoded member unread (``None``: no member is decoded)."""
        names = []
        for m, keys in self.members.items():
            self.u.ns[f"obj_{_var(m)}"] = _object_member(m, keys)
            names.append(_var(m))
        return " = ".join(names) + " = UNREAD" if names else None

    def _types(self, kinds: Sequence[str]) -> str:
        """The test (a template of the member's JSON text, ``{v}``) that it is of one of ``kinds``."""
        tests = []
        for kind in dict.fromkeys(kinds):
            if kind == "bool":
                tests.append("{r} in TF")
            elif kind == "null":
                tests.append("{r} == NULL")
            else:
                tests.append(f"memoryview({{r}})[:1] == {_FIRST[kind]!r}")
        if len(tests) == 1:
            return tests[0].replace("{r}", "{v}")
        first, *rest = tests
        return "(" + " or ".join([first.replace("{r}", "(r := {v})"), *(t.replace("{r}", "r") for t in rest)]) + ")"

    def _value(self, ref: str, test: str, terms: list[str], nested: list[str]) -> None:
        """``test`` (a template of the member's JSON text, ``{v}``; ``NONE`` when missing) of member ``ref``."""
        m, _, key = ref.partition(".")
        if not key:
            terms.append(test.replace("{v}", f"p.get({m!r}, NONE)"))
        else:
            nested.append(
                f"{self._member(m)} is not None and " + test.replace("{v}", f"{_var(m)}.{self._field(m, key)}")
            )

    def _member(self, m: str) -> str:
        """The top-level object ``m``, one level decoded on first use (``None``: absent or no object)."""
        self.members.setdefault(m, {})
        v = _var(m)
        return f"({v} if {v} is not UNREAD else ({v} := None if (r := p.get({m!r})) is None else obj_{v}(r)))"

    def _field(self, m: str, key: str) -> str:
        fields = self.members[m]
        return fields.setdefault(key, f"k{len(fields)}")

    def _has(self, m: str, key: str) -> str:
        return f"{_var(m)}.{self._field(m, key)} is not NONE"


def _object_member(member: str, keys: dict[str, str]) -> Callable[[Raw], Any]:
    """The function that decodes the top-level member ``member`` (its JSON) into a Struct of
    ``keys`` (by field name; a missing one is ``NONE``): ``None`` when it is no object. Any
    other JSON value decodes without raising (one call, no test of its first character); only
    what none of them takes (a number beyond a float) raises, and is no object either."""
    fields = [(name, Raw, msgspec.field(default=_NONE, name=k)) for k, name in keys.items()]
    struct = msgspec.defstruct(f"{_var(member).title()}Keys", fields)
    decode = msgspec.json.Decoder(struct | None | str | bool | float | list[Raw]).decode  # type: ignore[operator]

    def read(r: Raw) -> Any:
        try:
            v = decode(r)
        except msgspec.ValidationError:
            return None
        return v if v.__class__ is struct else None

    return read


def _var(member: str) -> str:
    """The local holding top-level object ``member`` decoded (``m_`` and its key's letters and digits)."""
    return "m_" + "".join(ch if ch.isalnum() else f"_{ord(ch):x}_" for ch in member)


class DeclaredTest:
    """A declared probe test run on :class:`~envglot.dialect.Facts` (:attr:`~envglot.dialect.Probe.test`):
    generated on first call. The detections inline the alternatives instead (:attr:`when`)."""

    __slots__ = ("__name__", "_fn", "dialect", "when")

    def __init__(self, when: Sequence[When], dialect: str, name: str) -> None:
        self.when = tuple(when)
        self.dialect = dialect
        self.__name__ = name
        """The probe's name (``[declare.probes.<name>]``)."""
        self._fn: Any = None

    def __call__(self, f: Facts) -> str | None:
        if self._fn is None:
            self._fn = self._build()
        out: str | None = self._fn(f.present, f.keys is not None)
        return out

    def _build(self) -> Any:
        from .fields import Unit  # the compiler's module builder, loaded when a test first runs

        u = Unit(f"probe_{self.dialect}_{self.__name__}".replace("-", "_"))
        code = TestCode(u, None)
        tests = [(code.test(w), w.evidence) for w in self.when]
        u.emit("def test(p, kn):", 0)
        u.emit(f'"""The declared probe {self.__name__} of {self.dialect}: its evidence, or None."""')
        first = code.locals()
        if first:
            u.emit(first)
        for expr, evidence in tests:
            u.emit(f"if {expr}:")
            u.emit(f"return {evidence!r}", 2)
        u.emit("return None")
        return u.build("test")
