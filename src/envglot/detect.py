"""Dialect detection: the probes of every dialect of a registry, run in priority order.

Each dialect declares its probes (``Dialect.probes``; a bundled one in ``[declare.probes]``
of its table, the test functions in its module); this module adds the two
transport wrappers (JSON-RPC and MCP), decodes the document's top level once into
:class:`~envglot.dialect.Facts`, and returns the first probe that names evidence. The order
is documented in ``docs/python-api.md`` ("Detection").

Over 500 lines: detection and the rival tests asked of a forced source (:func:`forced_rival`,
:func:`read_rival` with what a read proves, :func:`read_facts`, :func:`outcome_member`) are one
generator over one probe plan (``_plan``, ``_Gen``); split, each half would need the other's
private planner made public."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import Raw, Struct

from .declare import When
from .dialect import Dialect, Facts, Probe
from .errors import DetectError
from .probetests import DeclaredTest, Item, Lit, TestCode, implies, needs_of, rules_out
from .registry import Registry, bundled

if TYPE_CHECKING:
    import msgspec.inspect

    from .fields import Reading

__all__ = [
    "JSONRPC",
    "JSONRPC_MARKER",
    "MCP",
    "MCP_MARKERS",
    "Detection",
    "classify",
    "classify_members",
    "detect_bytes",
    "detector",
    "forced_rival",
    "outcome_member",
    "probe_table",
    "read_facts",
    "read_keys",
    "read_rival",
    "top_level",
]

MCP = "mcp"
"""Pseudo-dialect returned for an MCP CallToolResult wrapper (unwrapped by the callers)."""
JSONRPC = "jsonrpc"
"""Pseudo-dialect returned for a JSON-RPC 2.0 response (unwrapped or refused by the callers)."""


class Detection(Struct, frozen=True):
    """A dialect name and the evidence it was recognized by.

    ``evidence`` is ``None`` only for legacy-v1's marker-less shape: an object with no key
    any dialect defines, read as a bare payload (see ``docs/python-api.md``, "Evidence").
    """

    dialect: str
    evidence: str | None
    unwrapped: bool = False
    """True when the document was taken out of an MCP CallToolResult or JSON-RPC response."""


_WRAPPER_KEYS = ("content", "structuredContent", "isError", "jsonrpc", "result", "error")
MCP_MARKERS = ("content", "structuredContent")
"""The members one of which an MCP CallToolResult holds (its probe requires one)."""
JSONRPC_MARKER = "jsonrpc"
"""The member a JSON-RPC response holds (its probe requires it)."""


def _wrapper(priority: int, doc: str, name: str, when: tuple[When, ...]) -> Probe:
    return Probe(priority, DeclaredTest(when, name, name), doc, needs_of(when), when)


_TRANSPORT = (
    (
        _wrapper(
            30,
            "a **JSON-RPC response**: `jsonrpc` with `result` (unwrapped, then detected again) or `error` "
            "(refused: a `ParseError` naming its code and message, never read as a payload)",
            JSONRPC,
            tuple(When(evidence=JSONRPC, present=[JSONRPC_MARKER, k], absent=["success"]) for k in ("result", "error")),
        ),
        JSONRPC,
    ),
    (
        _wrapper(
            40,
            "an **MCP CallToolResult**: `content`/`structuredContent`, no `success`/`data`: unwrapped, then "
            "detected again (one level only: a wrapper inside a wrapper is a `ParseError`)",
            MCP,
            tuple(When(evidence=k, present=[k], absent=["success", "data"]) for k in MCP_MARKERS),
        ),
        MCP,
    ),
)


class _Plan(Struct, frozen=True):
    known: frozenset[str]
    probes: tuple[tuple[Probe, str], ...]
    fallback: str | None


_TOP = msgspec.json.Decoder(dict[str, Raw])


@functools.lru_cache(maxsize=64)
def _plan(registry: Registry) -> _Plan:
    """Built once per registry: every top-level key a dialect (or a wrapper) defines, and
    every probe in priority order."""
    keys: set[str] = set(_WRAPPER_KEYS)
    probes: list[tuple[Probe, str, bool]] = [(p, name, False) for p, name in _TRANSPORT]
    fallback = None
    for d in registry:
        keys |= d.keys
        top = d.shape.residue.split(".")
        if len(top) == 2:
            keys.add(top[1])
        probes += [(p, d.name, d.declared or d.plugin is not None) for p in d.probes]
        if d.fallback:
            fallback = d.name
    probes.sort(key=lambda pnd: (pnd[2], pnd[0].priority))  # declared and plugin dialects after every bundled one
    return _Plan(frozenset(keys), tuple((p, name) for p, name, _ in probes), fallback)


def probe_table(registry: Registry | None = None) -> list[tuple[int, str, str]]:
    """``(priority, dialect, what the probe looks for)`` in the order detection tries them,
    plus the fallback (for ``docs/python-api.md``); ``registry`` defaults to the bundled one."""
    plan = _plan(registry if registry is not None else bundled())
    rows = [(p.priority, name, p.doc) for p, name in plan.probes]
    if plan.fallback is not None:
        rows.append(
            (
                max(p.priority for p, _ in plan.probes) + 1,
                plan.fallback,
                "none: any other JSON object is read as a bare payload (evidence `None`)",
            )
        )
    return rows


def detect_bytes(buf: bytes | memoryview | str, registry: Registry | None = None) -> str:
    """Name the dialect of one JSON document (``"mcp"``/``"jsonrpc"`` for a transport wrapper).

    See :func:`classify` for the precedence.
    """
    return classify(buf, registry).dialect


def classify(buf: bytes | memoryview | str, registry: Registry | None = None) -> Detection:
    """The dialect of one JSON document and the evidence it was recognized by.

    Every probe of every bundled dialect, plus the JSON-RPC (priority 30) and MCP (40)
    wrappers, in priority order, then every declared dialect's (in their priority order); the
    first that names evidence wins. An object no probe
    claims goes to the fallback dialect (a bare payload, evidence ``None``). The dialects are
    ``registry``'s (default: the bundled ones, :func:`~envglot.registry.bundled`).
    """
    return classify_members(top_level(buf), registry)


def top_level(buf: bytes | memoryview | str) -> dict[str, Raw]:
    """The top-level members of an object document, their values skipped in C (the last of a
    repeated key); :class:`DetectError` for anything else, as :func:`classify` raises it."""
    try:
        return _TOP.decode(buf)
    except msgspec.ValidationError:  # valid JSON, but not an object
        raise DetectError("a response envelope must be a JSON object", path="$") from None
    except msgspec.DecodeError as exc:
        raise DetectError(f"invalid JSON: {exc}", path="$") from None


def classify_members(present: dict[str, Raw], registry: Registry | None = None) -> Detection:
    """:func:`classify` of a document whose top-level members (:func:`top_level`) are ``present``,
    by ``registry``'s dialects (default: the bundled ones)."""
    return detector(registry if registry is not None else bundled())(present)


class _Gen:
    """One generated detection function over a document's top-level members ``p``: the probes in
    detection order as steps of one tree of tests (:meth:`~envglot.probetests.TestCode.emit`:
    each object member decoded at most once, shared; a condition steps share tested once), a
    Python probe through one :class:`Facts` built when the first one runs."""

    def __init__(self, title: str, plan: _Plan, doc: str) -> None:
        from .fields import Unit  # the compiler's module builder, loaded with the first generated detection

        self.u = Unit(title)
        self.code = TestCode(self.u, plan.known)
        self.u.ns.update(Facts=Facts, known=plan.known, DecodeError=msgspec.DecodeError, DetectError=DetectError)
        self.u.emit("def detect(p):", 0)
        self.u.emit(f'"""{doc}"""')
        self._locals = len(self.u.lines)
        self._facts = False
        self.items: list[Item] = []
        self.silent = False
        """Whether no step can return otherwise than the last statement (known once built)."""

    def declared(self, probe: Probe, found: Sequence[tuple[object, str]], kept: Sequence[bool] | None = None) -> None:
        """The steps of a declared probe: each alternative returning its object of ``found``
        (with the name to give it); ``kept``: which alternatives to test (default: all)."""
        for j, (w, (obj, hint)) in enumerate(zip(probe.when, found, strict=True)):
            if kept is not None and not kept[j]:
                continue
            ref = "None" if obj is None else self.u.ref(obj, hint)
            self.items.append(Item(self.code.lits(w), ((f"return {ref}", 0),), True))

    def hook(self, probe: Probe, name: str, lits: tuple[Lit, ...], fired: str) -> None:
        """The step of a Python probe (run when ``lits`` hold): ``fired`` (a statement, the
        probe's evidence in ``evidence``) when it names evidence."""
        self._facts = True
        test = self.u.ref(probe.test, f"{name}_{probe.priority}")
        body = (
            ("if f is None:", 0),
            ("f = Facts(p, frozenset(p) if known.issuperset(p) else None)", 1),
            (f"if (evidence := {test}(f)) is not None:", 0),
            (fired, 1),
        )
        self.items.append(Item(lits, body, False))

    def build(self, last: str, given: Sequence[Lit] = (), cheap_first: bool = False) -> Callable[[dict[str, Raw]], Any]:
        """The function, ending with the statement ``last`` when no probe returned (``given``:
        conditions every document it is called with meets; ``cheap_first``: :meth:`TestCode.emit`'s)."""
        self.u.emit("try:")
        lines = len(self.u.lines)
        self.code.emit(self.items, 2, last, given, cheap_first)
        self.silent = len(self.u.lines) == lines
        if self.silent:
            self.u.emit("pass", 2)
        self.u.emit("except DecodeError as exc:  # members are valid JSON: not raised; refused as classify does")
        self.u.emit('raise DetectError(f"invalid JSON: {exc}", path="$") from None', 2)
        self.u.emit(last)
        first = [s for s in (self.code.locals(), "f = None" if self._facts else None) if s]
        self.u.lines[self._locals : self._locals] = ["    " + s for s in first]
        fn: Callable[[dict[str, Raw]], Any] = self.u.build("detect")
        return fn


@functools.lru_cache(maxsize=64)
def detector(registry: Registry) -> Callable[[dict[str, Raw]], Detection]:
    """:func:`classify_members` for ``registry``, as one function generated for it (by
    :class:`envglot.fields.Unit`; ``ENVGLOT_DUMP_COMPILED`` dumps it as ``detect_<registry>``):
    every probe in detection order, the first that names evidence winning, then the fallback."""
    plan = _plan(registry)
    g = _Gen(f"detect{_ident(registry, '')}", plan, "The dialect of a document and its evidence.")
    for probe, name in plan.probes:
        if probe.when:
            g.declared(probe, [(Detection(name, w.evidence), f"{name}_{w.evidence}") for w in probe.when])
        else:
            g.hook(probe, name, (), f"return Detection({name!r}, evidence)")
    g.u.ns.update(Detection=Detection)
    if plan.fallback is None:
        return g.build('raise DetectError("no dialect recognizes this object", path="$")')
    return g.build(f"return {g.u.ref(Detection(plan.fallback, None), 'fallback')}")


def forced_rival(
    registry: Registry, dialect: str, given: frozenset[Lit] = frozenset()
) -> Callable[[dict[str, Raw]], Dialect | None]:
    """The dialect other than ``dialect`` that :func:`classify` names by its evidence in a
    document with the top-level members ``p`` (``None``: ``dialect`` itself, a transport
    wrapper, the fallback or no dialect), as one function generated for ``registry`` and
    ``dialect`` (by :class:`envglot.fields.Unit`; ``ENVGLOT_DUMP_COMPILED`` dumps it).

    It runs, in detection order, the probes up to the last other dialect's: a declared test
    inline, a Python probe only where the document holds one of its declared needs
    (:attr:`~envglot.dialect.Probe.needs`; one without needs always runs). An other dialect's
    probe that fires names it, one of ``dialect``'s own or a wrapper's ends the search.
    ``given``: conditions every document the caller passes meets (:func:`read_facts`, a
    wrapper's key absent): a test they decide is not made, a probe they rule out not run."""
    return _rival(registry, dialect, given)[0]


@functools.lru_cache(maxsize=256)
def _rival(
    registry: Registry,
    dialect: str,
    given: frozenset[Lit],
    succeeds: frozenset[tuple[str, bytes]] = frozenset(),
    read: bool = False,
) -> tuple[Callable[[dict[str, Raw]], Dialect | None], bool]:
    """``(forced_rival's function, whether it answers None for every document)``. ``succeeds``:
    asked only where ``dialect``'s reader read a success, each ``(key, json)`` a top-level member
    such a document holds with that value when present (:func:`_success_facts`): a probe naming a
    dialect that reads no failure where its condition holds answers ``None`` (:func:`_no_failure`).
    ``read``: for :func:`read_rival`, the steps that return alike tested cheapest first."""
    plan = _plan(registry)
    g = _Gen(
        f"rival_{_ident(registry, dialect)}",
        plan,
        f"The other dialect detection names in a document read as {dialect}.",
    )
    steps: list[tuple[Probe, str, list[Dialect | None], tuple[Lit, ...]]] = []
    for probe, name in plan.probes:
        found = None if name in (dialect, MCP, JSONRPC) else registry.get(name)
        lits: tuple[Lit, ...] = ()
        if probe.when:
            answers = [_no_failure(found, g.code.lits(w), given, succeeds) for w in probe.when]
        else:
            if probe.needs is not None and len(probe.needs) == 1:
                lits = tuple(Lit("has", k, None) for k in sorted(probe.needs[0]))
            elif probe.needs is not None:
                lits = (Lit("expr", "", _met(probe.needs)),)
            answers = [_no_failure(found, lits, given, succeeds)]
        steps.append((probe, name, answers, lits))
    # Each step as its alternatives' conditions and answers (and whether it ends the search).
    # One answering None where no later step can answer otherwise is left out: the search ends
    # with None either way. (Nothing after the last rival's probe matters.)
    alts = [
        [(g.code.lits(w), a, True) for w, a in zip(probe.when, answers, strict=True)]
        if probe.when
        else [(lits, answers[0], False)]
        for probe, _, answers, lits in steps
    ]
    flat = [alt for step in alts for alt in step]

    def needed(at: int, cond: tuple[Lit, ...]) -> bool:
        """Whether a later alternative than ``at`` may answer otherwise than None in a document
        meeting ``cond``: one not ruled out, before any that surely ends the search with None."""
        known = [*given, *cond]
        for c, a, ends in flat[at + 1 :]:
            if rules_out(known, c):
                continue
            if a is not None:
                return True
            if ends and implies(known, c):
                return False
        return False

    at = 0
    for (probe, name, answers, lits), step in zip(steps, alts, strict=True):
        kept = [a is not None or needed(at + j, c) for j, (c, a, _) in enumerate(step)]
        at += len(step)
        if not any(kept):
            continue
        if probe.when:
            g.declared(probe, [(a, name) for a in answers], kept)
            continue
        g.hook(probe, name, lits, "return None" if answers[0] is None else f"return {g.u.ref(answers[0], name)}")
    fn: Callable[[dict[str, Raw]], Dialect | None] = g.build("return None", tuple(given), read)
    return fn, g.silent


def _no_failure(
    found: Dialect | None, lits: Sequence[Lit], given: frozenset[Lit], succeeds: frozenset[tuple[str, bytes]]
) -> Dialect | None:
    """``found`` (the dialect a probe names where ``lits`` hold, in a document meeting ``given``),
    or ``None`` where its reader cannot read a failure there: its ``ok`` is a plain move of a
    top-level member (:func:`_ok_member`) that the document holds (by ``lits`` or ``given``) and
    that ``succeeds`` says is ``true`` when present; or, for a reading declaring where it reads
    failures (:func:`_failure_facts`), none of them can hold there (``succeeds``' values of the
    members held known)."""
    if found is None or not succeeds:
        return found
    held = {k for k, _ in succeeds if Lit("has", k, None) in given or any(lit.top() == k for lit in lits)}
    key = _ok_member(found)
    if key is not None:
        return None if key in held and (key, _TRUE) in succeeds else found
    fails = _failure_facts(found)
    if not fails:
        return found
    known = [*given, *lits, *(Lit("value", k, ("equals", v)) for k, v in succeeds if k in held)]
    return None if all(rules_out(known, (lit,)) for lit in fails) else found


def _failure_facts(dialect: Dialect) -> tuple[Lit, ...]:
    """What a document ``dialect``'s reader reads as a failure holds, one of them at least
    (:attr:`~envglot.fields.Reading.fails`, as detection's tests: empty where nothing is declared)."""
    import msgspec.inspect  # (see read_facts)

    reading = dialect.steps()[0]
    if reading is None:
        return ()
    facts = []
    for k, vs in reading.fails.items():
        for v in vs:
            if not isinstance(v, type):
                facts.append(Lit("value", k, ("equals", msgspec.json.encode(v))))
                continue
            kinds = _kinds_of(msgspec.inspect.type_info(v))
            if "" in kinds:  # a type no test names: nothing can be ruled out
                return ()
            facts.append(Lit("value", k, ("types", kinds)))
    return tuple(facts)


_TRUE = msgspec.json.encode(True)


def _ok_member(dialect: Dialect) -> str | None:
    """The top-level member whose value ``dialect``'s reading reads as its outcome, as it is (its
    ``ok`` a plain move of it, :func:`~envglot.derive.moved_paths`): a document holding ``true``
    there reads as a success or not at all. ``None`` for a reading with an outcome rule of its own."""
    from .derive import moved_paths  # asked by a straight entry's rival, with the compiled readings

    path = moved_paths(dialect).get("ok")
    if path is None or not path.startswith("$."):
        return None
    key = path[2:]
    return None if "." in key or "[" in key else key


def _success_facts(dialect: Dialect) -> frozenset[tuple[str, bytes]]:
    """``(key, json)``: a top-level member every document ``dialect``'s reader reads as a success
    holds with that value when present: what its reading declares
    (:attr:`~envglot.fields.Reading.succeeds`), and its :func:`outcome_member` as ``true``."""
    reading = dialect.steps()[0]
    if reading is None:
        return frozenset()
    facts = {(k, msgspec.json.encode(v)) for k, v in reading.succeeds.items()}
    key = outcome_member(dialect)
    if key is not None:
        facts.add((key, _TRUE))
    return frozenset(facts)


def read_rival(
    registry: Registry,
    dialect: Dialect,
    absent: frozenset[str] = frozenset(),
    strict: bool = False,
    plain: bool = False,
) -> Callable[[dict[str, Raw]], Dialect | None] | None:
    """:func:`forced_rival` for ``dialect``, asked only of a document its reader read without an
    error (:func:`read_facts`) and holding none of the members ``absent``; ``None`` when it
    would answer ``None`` for every such document (what the read proves leaves no test to make:
    the caller asks nothing). ``strict``: read by the reader's strict decode, so its top level
    holds none but :func:`read_keys` (when that names them). ``plain``: the document holds no
    backslash (:func:`read_facts`). Asked only where the reader read a success (another
    dialect's failure wins over a success alone): a dialect that reads no failure there is not
    named (:func:`_success_facts`: a rival whose reader's outcome is the source's own member,
    :func:`outcome_member`, reads that success too)."""
    given = read_facts(dialect, strict, plain) | {Lit("has", k, None, False) for k in absent}
    keys = read_keys(dialect) if strict else None
    if keys is not None:
        given |= {Lit("within", "", keys)}
    fn, silent = _rival(registry, dialect.name, given, _success_facts(dialect), True)
    return None if silent else fn


def outcome_member(dialect: Dialect) -> str | None:
    """The top-level member whose JSON alone says whether ``dialect``'s reader reads a failure:
    its reading's ``ok`` the plain move (:func:`_ok_member`) of a required ``bool`` field of the
    wire Struct (a :class:`~envglot.wire.WireDecoder`'s), so every document it reads is a failure
    exactly where that member is ``false``; ``None`` for any other reading (a hook deciding ``ok``)."""
    import msgspec.inspect  # asked by a straight entry: ``import envglot`` leaves these unimported

    from .wire import WireDecoder

    key = _ok_member(dialect)
    reading = dialect.steps()[0]
    if key is None or reading is None or not isinstance(reading.decoder, WireDecoder):
        return None
    top = msgspec.inspect.type_info(reading.decoder.decoder().type)
    if not isinstance(top, msgspec.inspect.StructType):
        return None
    f = next((f for f in top.fields if f.encode_name == key), None)
    return key if f is not None and f.required and isinstance(f.type, msgspec.inspect.BoolType) else None


def read_keys(dialect: Dialect) -> frozenset[str] | None:
    """The top-level keys a document the strict decode of ``dialect``'s reader reads can hold:
    its wire Struct's (a :class:`~envglot.wire.WireDecoder`'s, which forbids any other); ``None``
    for another reader."""
    import msgspec.inspect  # asked by a straight entry: ``import envglot`` leaves these unimported

    from .wire import WireDecoder

    reading = dialect.steps()[0]
    if reading is None or not isinstance(reading.decoder, WireDecoder):
        return None
    top = msgspec.inspect.type_info(reading.decoder.decoder().type)
    if not isinstance(top, msgspec.inspect.StructType) or top.array_like or not top.forbid_unknown_fields:
        return None
    return frozenset([f.encode_name for f in top.fields] + ([top.tag_field] if top.tag_field else []))


@functools.cache
def _json_kinds() -> dict[type, str]:
    """The JSON type a value of each msgspec type takes (built on first use: ``import envglot``
    leaves ``msgspec.inspect`` unimported)."""
    import msgspec.inspect

    return {
        msgspec.inspect.BoolType: "bool",
        msgspec.inspect.StrType: "string",
        msgspec.inspect.StructType: "object",  # unless laid out as an array: _kind_of
        msgspec.inspect.DictType: "object",
        msgspec.inspect.ListType: "array",
    }


def _kind_of(t: msgspec.inspect.Type) -> str | None:
    """The JSON type a value of msgspec type ``t`` takes, as detection's tests name it (``None``: no
    test names it)."""
    import msgspec.inspect

    if isinstance(t, msgspec.inspect.LiteralType) and all(isinstance(v, str) for v in t.values):
        return "string"
    if isinstance(t, msgspec.inspect.StructType) and t.array_like:
        return "array"
    return "null" if isinstance(t, msgspec.inspect.NoneType) else _json_kinds().get(type(t))


def _kinds_of(t: msgspec.inspect.Type) -> tuple[str, ...]:
    """:func:`_kind_of` of each type of the union ``t`` (or of ``t``), sorted (``""`` for a type no
    test names)."""
    import msgspec.inspect

    return tuple(sorted({_kind_of(u) or "" for u in (t.types if isinstance(t, msgspec.inspect.UnionType) else (t,))}))


def read_facts(dialect: Dialect, strict: bool = False, plain: bool = False) -> frozenset[Lit]:
    """What every document ``dialect``'s reader reads without an error holds, as conditions on
    its top-level members: each member its wire Struct requires (``has``), of the JSON type its
    field's type allows alone (``value`` types), and an object member's own required keys
    (``holds``); every member whose field's types are all JSON types a test names (a Struct, a
    string, a bool, a list, a dict, ``None``) of one of them when present, and when an object
    (a Struct's) holding the Struct's required keys (``shape``). From the Struct of a
    :class:`~envglot.wire.WireDecoder` (its strict decode and the one that sets unknown members
    aside both require them); for another reader, each member of its
    :attr:`~envglot.fields.Reading.checks` of one of its type's JSON types when present
    (``shape``). ``strict``: read by the strict decode, whose nested Structs also forbid unknown
    keys: such an object holds none but its Struct's. And the values the reading's checks prove
    (:func:`_held_values`; a string's only where ``plain``: the document holds no backslash)."""
    import msgspec.inspect  # asked by a straight entry: ``import envglot`` leaves these unimported

    from .wire import WireDecoder

    reading = dialect.steps()[0]
    if reading is None:
        return frozenset()
    if not isinstance(reading.decoder, WireDecoder):
        checked = ((k, _kinds_of(msgspec.inspect.type_info(t))) for k, t in reading.checks.items())
        return frozenset(Lit("shape", k, (kinds, (), None)) for k, kinds in checked if "" not in kinds)
    top = msgspec.inspect.type_info(reading.decoder.decoder().type)
    if not isinstance(top, msgspec.inspect.StructType) or top.array_like:
        return frozenset()
    facts: set[Lit] = set()
    for f in top.fields:
        t = f.type
        union = t.types if isinstance(t, msgspec.inspect.UnionType) else (t,)
        kinds = _kinds_of(t)
        objects = [u for u in union if _kind_of(u) == "object"]  # a Struct alone among them: its keys
        if "" not in kinds:
            sub = objects[0] if len(objects) == 1 and isinstance(objects[0], msgspec.inspect.StructType) else None
            required = () if sub is None else tuple(g.encode_name for g in sub.fields if g.required)
            allowed = None
            if strict and sub is not None and sub.forbid_unknown_fields and not sub.tag_field:
                allowed = tuple(g.encode_name for g in sub.fields)
            facts.add(Lit("shape", f.encode_name, (kinds, required, allowed)))
        if not f.required:
            continue
        facts.add(Lit("has", f.encode_name, None))
        kind = _kind_of(t)
        if isinstance(t, msgspec.inspect.StructType) and not t.array_like:
            keys = tuple(g.encode_name for g in t.fields if g.required)
            if keys:
                facts.add(Lit("holds", f.encode_name, keys))
        if kind is not None:
            facts.add(Lit("value", f.encode_name, ("types", (kind,))))
    facts.update(_held_values(reading, top, plain))
    return frozenset(facts)


def _held_values(reading: Reading, top: msgspec.inspect.StructType, plain: bool) -> Iterator[Lit]:
    """What each :class:`~envglot.fields.Check` of ``reading`` whose common case holds
    (:func:`~envglot.fields.common`'s ``holds``: its body raises unless every test holds) proves
    of a document read without an error, as detection's ``equals`` tests compare a member's JSON
    text: each ``==`` test of a member of the wire Struct ``top`` (or of a member of a required
    nested Struct) against ``true``, ``false``, ``null`` or, where ``plain`` (no backslash in the
    document: a string's text is its value's encoding), a string."""
    import msgspec.inspect  # (see read_facts)

    from .fields import Check

    for step in reading.steps:
        c = getattr(step.hook, "__envglot_common__", None) if isinstance(step, Check) else None
        if c is None or not c.holds:
            continue
        for t in c.when:
            head, *path = t.path.split(".")
            if t.op != "==" or head != "w" or not 1 <= len(path) <= 2:
                continue
            if not (t.value is None or isinstance(t.value, bool) or (plain and isinstance(t.value, str))):
                continue
            names: list[str] = []
            struct = top
            for name in path:
                f = next((f for f in struct.fields if f.name == name), None)
                if f is None or (len(names) < len(path) - 1 and not _nested(f)):
                    break
                names.append(f.encode_name)
                if isinstance(f.type, msgspec.inspect.StructType):
                    struct = f.type
            else:
                yield Lit("value", ".".join(names), ("equals", msgspec.json.encode(t.value)))


def _nested(f: msgspec.inspect.Field) -> bool:
    """Whether the wire field ``f`` is a required object of one Struct (its members then read as keys)."""
    import msgspec.inspect

    t = f.type
    return f.required and isinstance(t, msgspec.inspect.StructType) and not t.array_like


def _met(needs: tuple[frozenset[str], ...]) -> str:
    """The generated test that a document's members ``p`` hold one of ``needs``' key sets."""
    return " or ".join("(" + " and ".join(f"{k!r} in p" for k in sorted(s)) + ")" for s in sorted(needs, key=sorted))


def _ident(registry: Registry, dialect: str) -> str:
    """A module title naming ``dialect`` and ``registry`` (the bundled one, or another by its dialects)."""
    tag = "" if registry is bundled() else "_" + "_".join(registry.names())
    return (dialect + tag).replace("-", "_")
