"""Declared probe tests (``[[declare.probes.<name>.when]]``, :class:`~envglot.declare.When`)
compiled to Python expressions over a document's top-level members ``p`` (``dict[str, Raw]``).

One emitter for every function that runs them: the detections :mod:`envglot.detect` generates
(inlined there, each object member decoded at most once per document into a tiny Struct of the
keys the tests read, shared between the probes) and a declared probe's own test
(:class:`DeclaredTest`, what :attr:`envglot.dialect.Probe.test` runs on :class:`~envglot.dialect.Facts`).

Over 500 lines: the conditions (:class:`Lit`), what a set of known ones implies (``_holds``,
``_fails``, ``_simpler``), the planner built on them and the emitter rendering them are one
vocabulary; split apart, each part would read the others' private rules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec
from msgspec import Raw

from .declare import When

if TYPE_CHECKING:
    from .dialect import Facts
    from .fields import Unit

__all__ = [
    "SCAN_MIN",
    "DeclaredTest",
    "Item",
    "Lit",
    "TestCode",
    "implies",
    "needs_of",
    "occurs",
    "rarest",
    "rules_out",
]

_NONE = Raw()
"""What a missing member reads as: no JSON text is empty."""
_UNREAD = object()
"""A member not decoded yet."""
_FIRST = {"object": ord("{"), "array": ord("["), "string": ord('"')}
"""The first byte of a JSON value of each type a test can name by its text's first character."""


def needs_of(when: Sequence[When]) -> tuple[frozenset[str], ...]:
    """A declared test's needs (:attr:`~envglot.dialect.Probe.needs`), one key set per alternative."""
    return tuple(dict.fromkeys(w.needs() for w in when))


class Lit(NamedTuple):
    """One condition of a declared test (a conjunct), or its negation (``pos`` false).

    ``kind``: ``has`` (``ref`` a top-level key), ``any`` (``arg`` the keys), ``within`` (``arg``
    the keys), ``value`` (``ref`` a member, ``arg`` the test: ``("types", kinds)``,
    ``("equals", json)``, ``("integer", low, high)``), ``holds``/``holds_any`` (``ref`` a top-level
    object, ``arg`` its keys), ``expr`` (``arg`` an opaque expression: a Python probe's needs),
    ``shape`` (a fact only, never tested: ``ref`` a top-level member, ``arg`` ``(kinds, required,
    allowed)``: when present its JSON type is one of ``kinds``, and when an object it holds every
    key of ``required`` and none outside ``allowed``, ``None`` for any)."""

    kind: str
    ref: str
    arg: Any
    pos: bool = True

    def negated(self) -> Lit:
        """The condition that holds exactly when this one does not."""
        return Lit(self.kind, self.ref, self.arg, not self.pos)

    def top(self) -> str | None:
        """The top-level key a document holds whenever this condition holds (``None``: none)."""
        if self.pos and self.kind in ("has", "value", "holds", "holds_any"):
            return self.ref.partition(".")[0]
        return None


class Item(NamedTuple):
    """One step of a generated detection: when every condition of ``lits`` holds, run ``body``
    (lines, each with its indent relative to the step); ``terminal``: the body always returns."""

    lits: tuple[Lit, ...]
    body: tuple[tuple[str, int], ...]
    terminal: bool


_Known = frozenset[Lit]


class TestCode:
    """The expressions of declared tests in one generated function (a :class:`~envglot.fields.Unit`).

    ``known``: the registry's top-level keys (``within`` compiled against them); ``None``: the
    function has a local ``kn`` (true when every key is known). Call :meth:`locals` after every
    :meth:`test` and :meth:`emit`: it binds the members' decoders and names the locals to set
    before the first."""

    def __init__(self, unit: Unit, known: frozenset[str] | None) -> None:
        self.u = unit
        self.known = known
        self.members: dict[str, dict[str, str]] = {}
        """Object member -> key -> its field in the member's Struct, as the tests read them."""
        unit.ns.update(NONE=_NONE, UNREAD=_UNREAD, TF=(Raw(b"true"), Raw(b"false")), NULL=Raw(b"null"))

    def lits(self, w: When) -> tuple[Lit, ...]:
        """One alternative's conditions, cheap ones first (key tests, then values, member decodes last)."""
        out = [Lit("has", k, None) for k in w.present] + [Lit("has", k, None, False) for k in w.absent]
        if w.present_any:
            out.append(Lit("any", "", tuple(w.present_any)))
        if w.within is not None:
            keys = frozenset(w.within) if self.known is None else frozenset(w.within) & self.known
            out.append(Lit("within", "", keys))
        values: list[tuple[str, tuple[Any, ...]]] = [
            (ref, ("types", tuple(dict.fromkeys([kinds] if isinstance(kinds, str) else kinds))))
            for ref, kinds in w.types.items()
        ]
        values += [(ref, ("equals", msgspec.json.encode(value))) for ref, value in w.equals.items()]
        values += [(ref, ("integer", low, high)) for ref, (low, high) in w.integer.items()]
        nested = [Lit("value", ref, arg) for ref, arg in values if "." in ref]
        out += [Lit("value", ref, arg) for ref, arg in values if "." not in ref]
        nested += [Lit("holds", m, tuple(keys)) for m, keys in w.holds.items()]
        nested += [Lit("holds_any", m, tuple(keys)) for m, keys in w.holds_any.items()]
        return tuple(out + nested)

    def test(self, w: When) -> str:
        """One alternative as a boolean expression (cheap conditions first, member decodes last)."""
        return " and ".join(f"({self.render(lit)})" for lit in self.lits(w)) or "True"

    def render(self, lit: Lit) -> str:
        """``lit`` as a boolean expression over ``p``."""
        if not lit.pos:
            return f"{lit.ref!r} not in p" if lit.kind == "has" else f"not ({self.render(lit.negated())})"
        if lit.kind == "has":
            return f"{lit.ref!r} in p"
        if lit.kind == "any":
            return " or ".join(f"{k!r} in p" for k in lit.arg)
        if lit.kind == "within":
            within = self.u.ref(lit.arg, "within")
            return f"{within}.issuperset(p)" if self.known is not None else f"kn and {within}.issuperset(p)"
        if lit.kind == "expr":
            return str(lit.arg)
        m, _, key = lit.ref.partition(".")
        if lit.kind == "holds":
            return f"{self._member(m)} is not None and " + " and ".join(self._has(m, k) for k in lit.arg)
        if lit.kind == "holds_any":
            return f"{self._member(m)} is not None and (" + " or ".join(self._has(m, k) for k in lit.arg) + ")"
        simple, test = self._value(lit.arg)
        if not key:  # bound first: an absent member costs one lookup
            return f"(r := p.get({m!r})) is not None and " + test.replace("{r}", "r")
        member = self._member(m)
        field = f"{_var(m)}.{self._field(m, key)}"
        if simple:
            return f"{member} is not None and " + test.replace("{r}", field)
        return f"{member} is not None and (r := {field}) is not NONE and {test}"

    def emit(
        self, items: Sequence[Item], at: int, last: str, given: Sequence[Lit] = (), cheap_first: bool = False
    ) -> None:
        """Emit ``items`` at indent ``at``, the first whose conditions hold running its body, as
        a tree of tests (``last``: the statement the function runs when none returns): a condition
        consecutive steps share (or exclude) is tested once for them all, what an enclosing test
        implies is not tested again, a step it rules out is left out, and so is a step that
        returns as ``last`` does when nothing but ``last`` follows it. ``given``: conditions that
        hold for every document the function is called with (the caller's to prove), implied
        from the start. ``cheap_first``: consecutive steps that return alike are tested in the
        order that decodes no member first (:func:`_cheap_first`; otherwise in the given order,
        which keeps their shared conditions together)."""
        _Tree(self, ((last, 0),), cheap_first).emit(list(items), _closed(frozenset(), given), at, True)

    def locals(self) -> str | None:
        """The statement that marks every decoded member unread (``None``: no member is decoded)."""
        names = []
        for m, keys in self.members.items():
            self.u.ns[f"obj_{_var(m)}"] = _object_member(m, keys)
            names.append(_var(m))
        return " = ".join(names) + " = UNREAD" if names else None

    def _value(self, arg: tuple[Any, ...]) -> tuple[bool, str]:
        """A value test as a template of the member's JSON text ``{r}`` and whether it is *simple*:
        false for the missing member's ``NONE`` (else ``r``, bound and present, is tested)."""
        if arg[0] == "equals":
            return True, f"{{r}} == {self.u.ref(Raw(arg[1]), 'equal')}"
        if arg[0] == "integer":
            _, low, high = arg
            return False, f"len(r) <= {len(str(high))} and (b := bytes(r)).isdigit() and {low} <= int(b) <= {high}"
        tests = ["{r} in TF" for kind in arg[1] if kind == "bool"] + [
            "{r} == NULL" for kind in arg[1] if kind == "null"
        ]
        first = tuple(_FIRST[kind] for kind in arg[1] if kind in _FIRST)
        if first:  # one test of the first byte for every kind it tells, after the cheaper ones
            tests.append(f"memoryview(r)[0] == {first[0]}" if len(first) == 1 else f"memoryview(r)[0] in {first}")
        if len(tests) == 1:
            return not first, tests[0]
        return False, "(" + " or ".join(t.replace("{r}", "r") for t in tests) + ")"

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


def _closed(known: _Known, lits: Sequence[Lit]) -> _Known:
    """``known`` with ``lits`` and the top-level keys they imply."""
    tops = (Lit("has", t, None) for lit in lits if (t := lit.top()) is not None)
    return known.union(lits, tops)


def rules_out(known: Sequence[Lit], lits: Sequence[Lit]) -> bool:
    """Whether no document meeting every condition of ``known`` meets every one of ``lits``."""
    closed = _closed(frozenset(), known)
    return any(_fails(lit, closed) for lit in lits)


def implies(known: Sequence[Lit], lits: Sequence[Lit]) -> bool:
    """Whether every document meeting every condition of ``known`` meets every one of ``lits``."""
    closed = _closed(frozenset(), known)
    return all(_holds(lit, closed) for lit in lits)


def _holds(lit: Lit, known: _Known) -> bool:
    """Whether ``known`` (closed) implies ``lit``."""
    if lit in known:
        return True
    if lit.kind == "has" and not lit.pos:
        return any(k.kind == "within" and k.pos and lit.ref not in k.arg for k in known)
    if lit.kind == "any" and lit.pos:
        return any(Lit("has", key, None) in known for key in lit.arg)
    if lit.kind == "within" and lit.pos:  # (keys known absent left out of a known bound)
        absent = {k.ref for k in known if k.kind == "has" and not k.pos}
        return any(k.kind == "within" and k.pos and k.arg - absent <= lit.arg for k in known)
    if lit.kind in ("holds", "holds_any") and lit.pos:  # an object known to hold (all of) its keys
        need = set(lit.arg)
        held = [set(k.arg) for k in known if k.kind == "holds" and k.pos and k.ref == lit.ref]
        if _kinds(lit.ref, known) == {"object"} and Lit("has", lit.ref, None) in known:
            held += [set(k.arg[1]) for k in known if k.kind == "shape" and k.ref == lit.ref]
        return any(need <= h if lit.kind == "holds" else not need.isdisjoint(h) for h in held)
    if lit.kind == "value" and lit.pos and lit.arg[0] == "types":  # a member known of fewer types
        kinds = set(lit.arg[1])
        if any(
            k.kind == "value" and k.pos and k.ref == lit.ref and k.arg[0] == "types" and kinds.issuperset(k.arg[1])
            for k in known
        ):
            return True
        left = None if "." in lit.ref else _kinds(lit.ref, known)  # (from its shape too)
        return left is not None and left <= kinds and Lit("has", lit.ref, None) in known
    return False


def _kinds(ref: str, known: _Known) -> set[str] | None:
    """The JSON types ``known`` (closed) leaves the top-level member ``ref`` when present (``None``:
    any), from its ``value`` type tests either way and its ``shape``."""
    kinds: set[str] | None = None
    for k in known:
        if k.ref != ref or not (k.kind == "shape" or (k.kind == "value" and k.pos and k.arg[0] == "types")):
            continue
        these = set(k.arg[0] if k.kind == "shape" else k.arg[1])
        kinds = these if kinds is None else kinds & these
    for k in known:
        if k.ref == ref and k.kind == "value" and not k.pos and k.arg[0] == "types":
            kinds = (set(_FIRST) | {"bool", "null", "number"} if kinds is None else kinds) - set(k.arg[1])
    return kinds


def _allowed(ref: str, known: _Known) -> set[str] | None:
    """The keys ``known`` (closed) allows the top-level object ``ref`` (``None``: any)."""
    bounds = [set(k.arg[2]) for k in known if k.kind == "shape" and k.ref == ref and k.arg[2] is not None]
    return set.intersection(*bounds) if bounds else None


def _simpler(lit: Lit, known: _Known) -> Lit:
    """``lit``, or the cheaper condition that holds exactly when it does under ``known`` (closed): a
    ``holds``/``holds_any`` test its ``shape``'s required keys decide, the object's type test."""
    if lit.kind in ("holds", "holds_any") and lit.pos:
        need = set(lit.arg)
        for k in known:
            if k.kind == "shape" and k.ref == lit.ref and "object" in k.arg[0]:
                if need <= set(k.arg[1]) if lit.kind == "holds" else not need.isdisjoint(k.arg[1]):
                    return Lit("value", lit.ref, ("types", ("object",)))
    return lit


def _fails(lit: Lit, known: _Known) -> bool:
    """Whether ``known`` (closed) rules ``lit`` out."""
    if lit.negated() in known:
        return True
    if lit.kind == "has":
        return _holds(lit.negated(), known)
    if not lit.pos:
        return _holds(lit.negated(), known)
    if lit.kind == "any":
        return all(_holds(Lit("has", key, None, False), known) for key in lit.arg)
    if lit.kind == "within":
        return any(k.kind == "has" and k.pos and k.ref not in lit.arg for k in known)
    top = lit.top()
    if top is None:
        return False
    if _holds(Lit("has", top, None, False), known):
        return True
    kinds, allowed = _kinds(top, known), _allowed(top, known)
    if lit.kind == "value" and "." not in lit.ref:
        if lit.arg[0] == "equals":  # another text known there
            texts = (k.arg for k in known if k.kind == "value" and k.pos and k.ref == lit.ref)
            return any(arg[0] == "equals" and arg != lit.arg for arg in texts)
        return lit.arg[0] == "types" and kinds is not None and kinds.isdisjoint(lit.arg[1])
    if kinds is not None and "object" not in kinds:  # (a nested value, held keys: an object's)
        return True
    if allowed is None:
        return False
    if lit.kind == "value":  # a key the object cannot hold reads as missing: no value test passes
        return lit.ref.partition(".")[2] not in allowed
    return not set(lit.arg) <= allowed if lit.kind == "holds" else allowed.isdisjoint(lit.arg)


def _decodes(item: Item) -> bool:
    """Whether testing ``item``'s conditions may decode an object member (a nested key's test)."""
    return any(lit.kind in ("holds", "holds_any") or (lit.kind == "value" and "." in lit.ref) for lit in item.lits)


def _cheap_first(items: list[Item]) -> list[Item]:
    """``items`` with each run of consecutive steps that return alike (terminal, the same body)
    in the order that tests the conditions decoding no member first: within such a run the first
    step whose conditions hold and the last give one answer, so their order is free."""
    out: list[Item] = []
    run: list[Item] = []
    for item in [*items, None]:
        if run and (item is None or not item.terminal or item.body != run[0].body):
            out += sorted(run, key=_decodes) if len(run) > 1 else run
            run = []
        if item is not None:
            (run if item.terminal else out).append(item)
    return out


class _Tree:
    """:meth:`TestCode.emit`'s planner: steps in order, each test where it is decided."""

    def __init__(self, code: TestCode, last: tuple[tuple[str, int], ...], cheap_first: bool = False) -> None:
        self.code = code
        self.last = last
        self.cheap_first = cheap_first

    def emit(self, items: list[Item], known: _Known, at: int, tail: bool) -> bool:
        """Emit ``items`` under what ``known`` says holds (``tail``: the function's last statement
        follows them); whether the code emitted always returns."""
        while items:
            items = self._reduce(items, known, tail)
            if self.cheap_first:
                items = _cheap_first(items)
            if not items:
                return False
            head = items[0]
            if not head.lits:
                self._body(head, at)
                if head.terminal:
                    return True
                items = items[1:]
                continue
            guard, yes, no, run = self._guard(items, known)
            if run == 1:
                self.code.u.emit("if " + " and ".join(f"({self.code.render(lit)})" for lit in head.lits) + ":", at)
                self._body(head, at + 1)
                if head.terminal and len(head.lits) == 1:
                    known = _closed(known, [head.lits[0].negated()])
                items = items[1:]
                continue
            ends_yes = ends_no = False
            rest = tail and len(items) == run
            on_yes, on_no = _closed(known, [guard]), _closed(known, [guard.negated()])
            yes, no = self._reduce(yes, on_yes, rest), self._reduce(no, on_no, rest)
            if yes:
                self.code.u.emit(f"if {self.code.render(guard)}:", at)
                ends_yes = self._branch(yes, on_yes, at + 1, rest)
            if no:
                self.code.u.emit("else:" if yes else f"if {self.code.render(guard.negated())}:", at)
                ends_no = self._branch(no, on_no, at + 1, rest)
            if ends_yes and ends_no:
                return True
            if ends_yes:
                known = _closed(known, [guard.negated()])
            elif ends_no:
                known = _closed(known, [guard])
            items = items[run:]
        return False

    def _branch(self, items: list[Item], known: _Known, at: int, tail: bool) -> bool:
        """:meth:`emit` as the body of a test (``pass`` when what the test implies leaves nothing to run)."""
        lines = len(self.code.u.lines)
        ends = self.emit(items, known, at, tail)
        if len(self.code.u.lines) == lines:
            self.code.u.emit("pass", at)
        return ends

    def _reduce(self, items: list[Item], known: _Known, tail: bool) -> list[Item]:
        """``items`` without the steps ``known`` rules out and the conditions it implies, up to
        the first that always runs and returns; with ``tail``, without the last steps that return
        as the function's last statement does."""
        out = []
        for item in items:
            if any(_fails(lit, known) for lit in item.lits):
                continue
            lits = tuple(dict.fromkeys(_simpler(lit, known) for lit in item.lits if not _holds(lit, known)))
            out.append(Item(lits, item.body, item.terminal))
            if not lits and item.terminal:
                break
        while tail and out and out[-1].body == self.last:
            out.pop()
        return out

    def _guard(self, items: list[Item], known: _Known) -> tuple[Lit, list[Item], list[Item], int]:
        """The condition of the first step that decides the longest run of steps from it (each
        needs it or rules it out; a top-level key's test preferred among equals): the condition,
        the run's steps that need it, those that rule it out, the run's length."""
        head = items[0]
        candidates = dict.fromkeys([*head.lits, *(Lit("has", t, None) for lit in head.lits if (t := lit.top()))])
        best: tuple[Lit, list[Item], list[Item], int] | None = None
        for lit in candidates:
            if _holds(lit, known) or _fails(lit, known):  # decided already
                continue
            yes: list[Item] = []
            no: list[Item] = []
            for item in items:
                assumed = _closed(known, item.lits)
                if _holds(lit, assumed):
                    yes.append(item)
                elif _fails(lit, assumed):
                    no.append(item)
                else:
                    break
            run = len(yes) + len(no)
            if best is None or run > best[3] or (run == best[3] and lit.kind == "has" and best[0].kind != "has"):
                best = (lit, yes, no, run)
        assert best is not None
        return best

    def _body(self, item: Item, at: int) -> None:
        for line, indent in item.body:
            self.code.u.emit(line, at + indent)


SCAN_MIN = 512
"""Bytes from which a member's object is first searched for its keys (:func:`_object_member`):
below them its decode costs less than the copy and the searches."""

_BY_FREQUENCY = b'" :,0123456789etaoinsrhldcumfpgwybvkxjqz{}[]_-./ETAOINSRHLDCUMFPGWYBVKXJQZ'
"""Bytes by how often JSON text holds them, most often first (a fixed guess: what a key is
searched by, :func:`rarest`; a byte not listed is rarer than all). Only the search's speed
depends on it, never its answer."""
_HITS = 8
"""Places of a key's rarest byte compared one by one (:func:`occurs`) before the rest of the
text is searched for the whole key."""


def rarest(key: bytes) -> int:
    """The offset in ``key`` of the byte JSON text holds least often (by :data:`_BY_FREQUENCY`)."""
    rank = [_BY_FREQUENCY.find(c) % (len(_BY_FREQUENCY) + 1) for c in key]  # (not listed: -1, rarest)
    return rank.index(max(rank))


def occurs(text: bytes, key: bytes, at: int) -> bool:
    """Whether ``key`` occurs in ``text`` (``key[at]`` its rarest byte, :func:`rarest`): each place
    of that byte found by ``memchr`` (``bytes.find`` of one byte) and the key compared there, up
    to :data:`_HITS` places, then the text from the next one searched for the whole key
    (``bytes.find``, whose cost per byte is many times ``memchr``'s). Every place the key occurs
    holds its byte ``at`` on: none is passed over."""
    rare = key[at]
    i = text.find(rare, at)
    for _ in range(_HITS):
        if i < 0:
            return False
        if text.startswith(key, i - at):
            return True
        i = text.find(rare, i + 1)
    return i >= 0 and text.find(key, i - at) >= 0


def _object_member(member: str, keys: dict[str, str]) -> Callable[[Raw], Any]:
    """The function that decodes the top-level member ``member`` (its JSON) into a Struct of
    ``keys`` (by field name; a missing one is ``NONE``): ``None`` when it is no object. Any
    other JSON value decodes without raising (one call, no test of its first character); only
    what none of them takes (a number beyond a float) raises, and is no object either.

    From :data:`SCAN_MIN` bytes on, an object (the members are valid JSON: one that starts with
    ``{`` is one) holding no backslash, in which no key's JSON spelling occurs (:func:`occurs`),
    holds none of them: it reads as the Struct with every field ``NONE`` without being decoded
    (a payload's bytes are not skipped a second time by the detection)."""
    fields = [(name, Raw, msgspec.field(default=_NONE, name=k)) for k, name in keys.items()]
    struct = msgspec.defstruct(f"{_var(member).title()}Keys", fields)
    decode = msgspec.json.Decoder(struct | None | str | bool | float | list[Raw]).decode  # type: ignore[operator]
    spelled = tuple((s, rarest(s)) for s in map(msgspec.json.encode, keys))
    empty = struct()

    def read(r: Raw) -> Any:
        if len(r) >= SCAN_MIN:  # an object none of whose keys' spellings occur holds none of them
            b = bytes(r)
            if b[0] == 123 and 92 not in b:  # (no backslash: every key spelled as encoded)
                for k, at in spelled:
                    if occurs(b, k, at):
                        break
                else:
                    return empty
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
