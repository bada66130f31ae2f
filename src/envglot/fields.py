"""Field declarations of a dialect, compiled twice: the hub reader/writer and fused pair paths.

A dialect declares how its wire Struct carries the canonical fields, once, as a list of
steps (:class:`Reading` and :class:`Writing`, class attributes of its :class:`Dialect`):

- :class:`Move` ``(name, "w.meta.elapsed_ms")``: a plain move (``None`` when a parent on
  the way is ``None``; ``absent=True`` also maps an absent ``Raw`` field to ``None``);
- :class:`Let` ``(name, hook)``: ``name = hook(...)`` where a rule is not a plain move;
- :class:`Check` ``(hook)``: a rule that only raises or reports;
- :class:`Build` ``(name, Struct, member="local", ...)``: a wire Struct from locals
  (:class:`Const` for a literal).

A hook's parameters are bound by name: ``w`` (the decoded wire Struct, reading only),
``ctx``, ``dmap`` (the dialect's own compiled tables), ``extras``, ``residue`` (reading
only), any canonical :class:`~envglot.canonical.Envelope` field, and any name an earlier
step of the same side defined. A parameter with a default that matches nothing keeps it.
Hooks never change their arguments in place (a value may be shared, see below).

From the declarations envglot generates Python source:

- the **hub**: ``read(buf, ctx)`` and ``from_wire(w, ctx, extras, residue)`` build the
  canonical :class:`~envglot.canonical.Envelope`; ``write(env, ctx)`` writes one. This is
  the semantic source of truth (``read``, ``write``, ``inspect``, preserve, diagnostics);
- one **fused function per ordered pair** ``(source, target)``: the source's reading steps,
  then the target's writing steps, on the same local names, with no canonical envelope in
  between and the source's pure steps the target does not use left out. It is used only
  where the hub's extra work could not be seen: no diagnostics collected, no preserve, no
  MCP outcome to reconcile (:func:`pair_function`); differential tests prove it gives the
  hub's bytes and errors. A pipeline binds it to its context (:func:`bound_pair`): the
  target's steps whose inputs are all constant for the pair and that context (a required
  field the source never carries, synthesized from the table or the caller) run once
  there, and their values are shared by every document.

``ENVGLOT_DUMP_COMPILED=<dir>`` writes every generated module to ``<dir>`` as it is built;
``ENVGLOT_NO_COMPILED=1`` (or :func:`use_compiled` ``(False)``) turns fused paths off;
:func:`source` returns the source of a generated function.
"""

from __future__ import annotations

import inspect
import keyword
import linecache
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec
from msgspec import Raw

from . import canonical as c

if TYPE_CHECKING:
    from .context import Context
    from .dialect import Dialect

__all__ = [
    "ABSENT",
    "Build",
    "Check",
    "Const",
    "Let",
    "Move",
    "Reading",
    "Writing",
    "pair_function",
    "source",
    "use_compiled",
]

ABSENT = Raw(b"")
"""Default of optional Raw wire fields (``Raw | None`` cannot be decoded by msgspec); omitted on encode."""

CANONICAL: tuple[str, ...] = tuple(f for f in c.ENVELOPE_FIELDS if f not in ("extras", "residue"))
"""Canonical fields a declaration can read or write (``extras`` and ``residue`` are special names)."""
_DEFAULTS: dict[str, Any] = {
    f.name: (f.default if f.default is not msgspec.NODEFAULT else None) for f in msgspec.structs.fields(c.Envelope)
}


class Const(NamedTuple):
    """A literal member value of a :class:`Build`."""

    value: object


class Move(NamedTuple):
    """``name = <path>``: a dotted path from a local (``w.meta.elapsed_ms``), ``None`` when the
    local or any parent on the way is ``None``."""

    name: str
    path: str
    absent: bool = False
    """An absent optional ``Raw`` field (:data:`ABSENT`) reads as ``None``."""


class Let(NamedTuple):
    """``name = hook(...)``, parameters bound by name.

    ``pure``: the hook neither raises nor reports, so a fused path whose target does not use
    ``name`` may leave it out.
    """

    name: str
    hook: Callable[..., Any]
    pure: bool = False


class Check(NamedTuple):
    """``hook(...)`` for what it raises or reports; never left out."""

    hook: Callable[..., Any]


class Build(NamedTuple):
    """``name = struct(member=<local or Const>, ...)``."""

    name: str
    struct: type
    members: dict[str, str | Const]

    @classmethod
    def of(cls, name: str, struct: type, **members: str | Const) -> Build:
        return cls(name, struct, members)


Step = Move | Let | Check | Build


class Reading:
    """How a dialect's document becomes canonical fields: a decoder, then steps."""

    __slots__ = ("decoder", "steps")

    def __init__(self, decoder: Any, *steps: Step) -> None:
        self.decoder = decoder
        """``decoder.decode(buf) -> (wire, extras, residue)`` (:class:`~envglot.dialects._common.WireDecoder`);
        a ``members`` parameter of ``decode``, if it has one, takes the document's top level
        (``dict[str, Raw]``, or ``None``) when the caller has parsed it (see :func:`bound_pair`)."""
        self.steps: tuple[Step, ...] = steps


class Writing:
    """How canonical fields become a dialect's document: steps ending in ``result``, encoded.

    ``finish(doc, ...)`` post-processes the encoded bytes (parameters bound by name).
    ``losses``: the hub writer first reports every canonical field the dialect's table
    cannot carry (:func:`envglot.context.report_losses`).
    """

    __slots__ = ("finish", "losses", "result", "steps")

    def __init__(
        self, *steps: Step, result: str = "out", finish: Callable[..., bytes] | None = None, losses: bool = True
    ) -> None:
        self.steps: tuple[Step, ...] = steps
        self.result = result
        self.finish = finish
        self.losses = losses


# ---- compilation ----------------------------------------------------------------------

_READ_SPECIAL = frozenset({"w", "ctx", "dmap", "extras", "residue"})
_WRITE_SPECIAL = frozenset({"ctx", "dmap", "doc"})
_ENC = msgspec.json.Encoder()
_RESERVED = frozenset({*CANONICAL, *_READ_SPECIAL, *_WRITE_SPECIAL, "buf", "env", "r_dmap", "w_dmap"})
"""Names a generated function uses for its locals: never given to a module-level object."""


class _Unit:
    """One generated module: source lines and the objects its names refer to."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.lines: list[str] = []
        self.ns: dict[str, Any] = {"ABSENT": ABSENT, "_Envelope": c.Envelope}
        self._ids: dict[int, str] = {}

    def ref(self, obj: object, hint: str) -> str:
        """A module-level name for ``obj`` (hooks, Structs, decoders, constants)."""
        key = id(obj)
        if key in self._ids:
            return self._ids[key]
        base = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in hint) or "obj"
        if not base[0].isalpha() and base[0] != "_":
            base = "_" + base
        name, n = base, 1
        while name in self.ns or keyword.iskeyword(name) or name in _RESERVED or name.startswith(("r_", "w_")):
            n += 1
            name = f"{base}_{n}"
        self.ns[name] = obj
        self._ids[key] = name
        return name

    def emit(self, line: str, indent: int = 1) -> None:
        self.lines.append("    " * indent + line)

    def build(self, fn_name: str) -> Callable[..., Any]:
        text = "\n".join(self.lines) + "\n"
        filename = f"<envglot.fields {self.title}>"
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)  # tracebacks show it
        exec(compile(text, filename, "exec"), self.ns)
        fn: Callable[..., Any] = self.ns[fn_name]
        _SOURCES[fn] = text
        dump = os.environ.get("ENVGLOT_DUMP_COMPILED")
        if dump:
            Path(dump).mkdir(parents=True, exist_ok=True)
            (Path(dump) / f"{self.title}.py").write_text(f"# generated by envglot.fields: {self.title}\n{text}")
        return fn


class _Side:
    """The names one side (reading or writing) of a generated function sees."""

    def __init__(self, unit: _Unit, prefix: str, dmap: str, dialect: str, reading: bool) -> None:
        self.unit = unit
        self.prefix = prefix
        self.dmap = dmap
        self.dialect = dialect
        self.special = _READ_SPECIAL if reading else _WRITE_SPECIAL
        self.canonical_bound = not reading
        """Writing: every canonical field is bound (from the envelope, or by the fused reading)."""
        self.locals: set[str] = set()

    def var(self, name: str) -> str:
        """The generated variable of a step's (or special) name on this side."""
        if name == "dmap":
            return self.dmap
        if name in CANONICAL or name in self.special:
            return name
        return self.prefix + name

    def call(self, hook: Callable[..., Any]) -> str:
        """The call of ``hook`` with its parameters bound by name (positionally while none is
        skipped, a little cheaper than keywords)."""
        args = []
        positional = True
        for p in _params(hook):
            n = p.name
            if n in self.locals or n in self.special or (n in CANONICAL and self.canonical_bound):
                keyword_only = p.kind is inspect.Parameter.KEYWORD_ONLY
                args.append(self.var(n) if positional and not keyword_only else f"{n}={self.var(n)}")
            elif p.default is not inspect.Parameter.empty:
                positional = False
            else:
                raise TypeError(f"{self.dialect}: hook {hook.__qualname__} asks for {n!r}, which no step defines")
        return f"{self.unit.ref(hook, getattr(hook, '__name__', 'hook'))}({', '.join(args)})"


def _params(hook: Callable[..., Any]) -> list[inspect.Parameter]:
    return [
        p
        for p in inspect.signature(hook).parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    ]


def inputs(step: Step) -> set[str]:
    """The names a step reads."""
    if isinstance(step, Move):
        return {step.path.split(".", 1)[0]}
    if isinstance(step, Build):
        return {v.split(".", 1)[0] for v in step.members.values() if isinstance(v, str)}
    return {p.name for p in _params(step.hook)}


def _path_expr(side: _Side, path: str, absent: bool) -> str:
    head, *rest = path.split(".")
    expr = side.var(head)
    guards: list[str] = []
    for i, seg in enumerate(rest):
        if i > 0 or head != "w":  # the decoded wire Struct is never None; any other local may be
            guards.append(expr)
        expr = f"{expr}.{seg}"
    out = expr
    if absent:
        out = f"(None if {expr} is ABSENT else {expr})"
    for g in reversed(guards):
        out = f"(None if {g} is None else {out})"
    return out


def _member(side: _Side, v: str | Const) -> str:
    if isinstance(v, Const):
        plain = isinstance(v.value, bool | int | float | str | type(None))
        return repr(v.value) if plain else side.unit.ref(v.value, "CONST")
    head, *rest = v.split(".")
    return ".".join((side.var(head), *rest))


def _emit_steps(side: _Side, steps: Sequence[Step], keep: set[int] | None = None, indent: int = 1) -> None:
    for i, st in enumerate(steps):
        if keep is not None and i not in keep:
            continue
        if isinstance(st, Move):
            side.unit.emit(f"{side.var(st.name)} = {_path_expr(side, st.path, st.absent)}", indent)
            side.locals.add(st.name)
        elif isinstance(st, Let):
            side.unit.emit(f"{side.var(st.name)} = {side.call(st.hook)}", indent)
            side.locals.add(st.name)
        elif isinstance(st, Check):
            side.unit.emit(side.call(st.hook), indent)
        else:
            struct = side.unit.ref(st.struct, st.struct.__name__)
            members = ", ".join(f"{k}={_member(side, v)}" for k, v in st.members.items())
            side.unit.emit(f"{side.var(st.name)} = {struct}({members})", indent)
            side.locals.add(st.name)


def defined(steps: Sequence[Step]) -> list[str]:
    """Canonical fields the steps define, in order."""
    out: list[str] = []
    for st in steps:
        name = getattr(st, "name", None)
        if name in CANONICAL and name not in out:
            out.append(name)
    return out


def _canonical_inputs(steps: Sequence[Step]) -> list[str]:
    """Canonical fields a writing side reads (bound from the envelope by the hub writer)."""
    out: list[str] = []
    local: set[str] = set()
    for st in steps:
        for name in sorted(inputs(st)):
            if name in CANONICAL and name not in local and name not in out:
                out.append(name)
        n = getattr(st, "name", None)
        if n is not None:
            local.add(n)
    return out


def _writer_inputs(writing: Writing) -> list[str]:
    """Canonical fields a writing reads: its steps', then its ``finish`` hook's."""
    out = _canonical_inputs(writing.steps)
    if writing.finish is not None:
        out += [p.name for p in _params(writing.finish) if p.name in CANONICAL and p.name not in out]
    return out


def _finish(side: _Side, writing: Writing, indent: int = 1) -> None:
    enc = side.unit.ref(_ENC.encode, "encode")
    side.unit.emit(f"doc = {enc}({side.var(writing.result)})", indent)
    if writing.finish is not None:
        side.unit.emit(f"doc = {side.call(writing.finish)}", indent)
    side.unit.emit("return doc", indent)


def _compile_read(d: Dialect) -> tuple[Callable[..., c.Envelope], Callable[..., c.Envelope]]:
    reading = d.reading
    assert reading is not None
    u = _Unit(f"read_{_ident(d.name)}")
    dec = u.ref(reading.decoder, "decoder")
    side = _Side(u, "r_", "dmap", d.name, reading=True)
    u.emit("def from_wire(w, ctx, extras=(), residue=None):", 0)
    u.emit(f"dmap = ctx.mappings[{d.name!r}]")
    _emit_steps(side, reading.steps)
    fields = defined(reading.steps)
    if "ok" not in fields:
        raise TypeError(f"{d.name}: its reading defines no 'ok'")
    args = ", ".join(f"{f}={f}" for f in fields)
    u.emit(f"return _Envelope({args}, extras=extras, residue=residue)")
    u.emit("", 0)
    u.emit("def read(buf, ctx):", 0)
    u.emit(f"w, extras, residue = {dec}.decode(buf)")
    u.emit("return from_wire(w, ctx, extras, residue)")
    read = u.build("read")
    from_wire = u.ns["from_wire"]
    _SOURCES[from_wire] = _SOURCES[read]
    return read, from_wire


def _compile_write(d: Dialect) -> Callable[..., bytes]:
    writing = d.writing
    assert writing is not None
    u = _Unit(f"write_{_ident(d.name)}")
    side = _Side(u, "w_", "dmap", d.name, reading=False)
    u.emit("def write(env, ctx):", 0)
    u.emit(f"dmap = ctx.mappings[{d.name!r}]")
    if writing.losses:
        from .context import report_losses

        u.emit(f"{u.ref(report_losses, 'report_losses')}(env, dmap, ctx)")
    for f in _writer_inputs(writing):
        u.emit(f"{f} = env.{f}")
    _emit_steps(side, writing.steps)
    _finish(side, writing)
    return u.build("write")


def _keep(reading: Reading, writing: Writing, same: bool) -> set[int]:
    """Indexes of the reading steps a fused path runs: every impure step, and the pure ones
    whose names the target (or a kept step) uses."""
    needed: set[str] = set(_writer_inputs(writing)) | {"ok"}
    if same:
        needed.add("extras")
    keep: set[int] = set()
    for i in range(len(reading.steps) - 1, -1, -1):
        st = reading.steps[i]
        pure = isinstance(st, Move | Build) or (isinstance(st, Let) and st.pure)
        if pure and getattr(st, "name", None) not in needed:
            continue
        keep.add(i)
        needed |= inputs(st)
    return keep


def _constant_steps(writing: Writing, constants: set[str]) -> set[int]:
    """Indexes of the writing steps whose inputs are all constant for a pair and a context
    (canonical fields the source never defines, the context, the table, earlier such steps)."""
    known = {*constants, "ctx", "dmap"}
    out: set[int] = set()
    for i, st in enumerate(writing.steps):
        if isinstance(st, Check) or not inputs(st) <= known:
            continue
        out.add(i)
        known.add(st.name)
    return out


def _shareable(v: Any) -> bool:
    """Whether a value computed once may be shared by every document's output: data only
    (JSON values, tuples, lists and Structs of them), which no hook changes in place."""
    if v is None or isinstance(v, bool | int | float | str | bytes | Raw):
        return True
    if isinstance(v, tuple | list):
        return all(_shareable(x) for x in v)
    if isinstance(v, msgspec.Struct):
        return all(_shareable(x) for x in msgspec.structs.astuple(v))
    return False


def _compile_pair(src: Dialect, dst: Dialect) -> Callable[[bytes, Context], bytes | None]:
    """The fused function ``(buf, ctx)``; its ``bind(ctx)`` gives a one-argument version for a
    fixed context with the pair's constant writing steps done once (see :func:`bound_pair`)."""
    reading, writing = src.reading, dst.writing
    assert reading is not None and writing is not None
    same = src.name == dst.name
    fn = f"{_ident(src.name)}_to_{_ident(dst.name)}"
    u = _Unit(fn)
    dec = u.ref(reading.decoder, "decoder")
    keep = _keep(reading, writing, same)
    produced = set(defined(reading.steps)) & {getattr(reading.steps[i], "name", None) for i in keep}
    defaults = [f for f in _writer_inputs(writing) if f not in produced]
    folded = _constant_steps(writing, set(defaults))

    def head(indent: int) -> None:
        u.emit(f"r_dmap = ctx.mappings[{src.name!r}]", indent)
        u.emit(f"w_dmap = ctx.mappings[{dst.name!r}]" if not same else "w_dmap = r_dmap", indent)

    def body(indent: int, skip: set[int], members: bool = False) -> None:
        r = _Side(u, "r_", "r_dmap", src.name, reading=True)
        wr = _Side(u, "w_", "w_dmap", dst.name, reading=False)
        if members and "members" in inspect.signature(reading.decoder.decode).parameters:
            u.emit(f"w, extras, residue = {dec}.decode(buf, members)", indent)
        else:
            u.emit(f"w, extras, residue = {dec}.decode(buf)", indent)
        if same:
            u.emit("if extras:", indent)
            u.emit("return None  # the hub puts the dialect's own unknown fields back", indent + 1)
        _emit_steps(r, reading.steps, keep=keep, indent=indent)
        if same and any(getattr(st, "name", None) == "extras" for st in reading.steps):
            u.emit("if extras:", indent)
            u.emit("return None  # a step kept a field of the dialect's own as an unknown one", indent + 1)
        if not skip:
            for f in defaults:
                u.emit(f"{f} = {_default(u, f)}", indent)
        wr.locals |= {getattr(writing.steps[i], "name", "") for i in skip}
        _emit_steps(wr, writing.steps, keep=set(range(len(writing.steps))) - skip, indent=indent)
        _finish(wr, writing, indent)

    u.emit(f"def {fn}(buf, ctx):", 0)
    u.emit(f'"""{src.name} -> {dst.name} without a canonical envelope (``None``: take the hub)."""')
    head(1)
    body(1, set())
    u.emit("", 0)
    u.emit("def bind(ctx):", 0)
    u.emit(f'"""{fn} for one context: tables looked up, constant steps done once (``None``: cannot be)."""')
    wc = _Side(u, "w_", "w_dmap", dst.name, reading=False)
    u.emit("try:")
    head(2)
    if folded:
        for f in defaults:
            u.emit(f"{f} = {_default(u, f)}", 2)
        _emit_steps(wc, writing.steps, keep=folded, indent=2)
    u.emit("except Exception:")
    u.emit("return None  # raised for every document: the unbound function raises it in order", 2)
    if folded:
        names = ", ".join(wc.var(writing.steps[i].name) for i in sorted(folded))  # type: ignore[union-attr]
        u.emit(f"if not {u.ref(_shareable, 'shareable')}(({names},)):")
        u.emit("return None", 2)
    u.emit(f"def {fn}_bound(buf, members=None):")
    body(2, folded, members=True)
    u.emit(f"return {fn}_bound")
    out = u.build(fn)
    _BINDERS[out] = u.ns["bind"]
    return out


def _default(u: _Unit, field: str) -> str:
    v = _DEFAULTS[field]
    return repr(v) if v is None or isinstance(v, bool | tuple) else u.ref(v, f"DEFAULT_{field}")


def _ident(name: str) -> str:
    return name.replace("-", "_")


# ---- caches and switches ----------------------------------------------------------------

_SOURCES: dict[Callable[..., Any], str] = {}
_BINDERS: dict[Callable[..., Any], Callable[[Context], Callable[..., bytes | None] | None]] = {}
_PAIRS: dict[tuple[str, str, int, int], Callable[[bytes, Context], bytes | None] | None] = {}
_ENABLED = [os.environ.get("ENVGLOT_NO_COMPILED", "") in ("", "0")]
"""Read by the pipeline on every conversion (one list index), so :func:`use_compiled` acts at once."""


def use_compiled(on: bool) -> None:
    """Turn the fused pair paths on or off (off: every conversion takes the hub)."""
    _ENABLED[0] = on


def source(fn: Callable[..., Any]) -> str:
    """The generated source of a compiled function (``KeyError`` for any other)."""
    return _SOURCES[fn]


def hub(d: Dialect) -> tuple[Callable[..., c.Envelope], Callable[..., c.Envelope], Callable[..., bytes] | None]:
    """``(read, from_wire, write)`` generated from ``d``'s declarations (``write`` is ``None``
    for a read-only dialect)."""
    read, from_wire = _compile_read(d)
    write = _compile_write(d) if d.writing is not None else None
    return read, from_wire, write


def pair_function(src: Dialect, dst: Dialect) -> Callable[[bytes, Context], bytes | None] | None:
    """The fused ``src -> dst`` function (built on first use, cached), or ``None`` when
    either side has no declarations or fused paths are off.

    It returns the target document's compact bytes, or ``None`` when the hub must do the
    work after all (a same-dialect document with unknown fields to put back).
    """
    if not _ENABLED[0] or src.reading is None or dst.writing is None:
        return None
    key = (src.name, dst.name, id(src.reading), id(dst.writing))
    fn = _PAIRS.get(key, _MISSING)
    if fn is _MISSING:
        fn = _PAIRS[key] = _compile_pair(src, dst)
    return fn  # type: ignore[return-value]


def bound_pair(src: Dialect, dst: Dialect, ctx: Context) -> Callable[..., bytes | None] | None:
    """The fused ``src -> dst`` function for one context (a pipeline's, which nothing collects
    from): the target's steps that are constant for the pair and ``ctx`` (synthesized
    required fields, fields the source never carries) are done once here, not per document.
    ``None`` as for :func:`pair_function`.

    It is called ``(buf)`` or ``(buf, members)``: ``members`` is the document's top level
    (``dict[str, Raw]``) from a parse that checked all of ``buf`` (its decoder's ``decode``)."""
    fn = pair_function(src, dst)
    if fn is None:
        return None
    bound = _BINDERS[fn](ctx)
    return bound if bound is not None else lambda buf, members=None: fn(buf, ctx)


_MISSING: Any = object()
