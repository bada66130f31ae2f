"""A seeded structure-aware mutator of the seed envelopes.

``Mutator(seed).case()`` picks a seed envelope and applies, in order: structural
mutations (swap values between keys, delete/duplicate/rename keys, change types, graft a
subtree of another seed), hostile values at random paths or typed fields, maybe a crafted
``_envglot`` residue (remembering the document without it: the *twin*), maybe an MCP
``CallToolResult`` or JSON-RPC wrapper (applied to the twin alike), and maybe byte-level
damage (a BOM, a second concatenated document, truncation). The same seed always gives
the same :class:`Case`.
"""

from __future__ import annotations

import random
from typing import Any

from envglot import EnvglotError, detect
from envglot.dialect import dialect_names, get_dialect

from .corpus import seeds
from .hostile import FIELDS, hostile_key, hostile_value, overflow
from .tree import Obj, clone, dump

__all__ = ["BOM", "Case", "Mutator", "mcp_wrap", "rpc_wrap", "says_failure", "without_residues"]

BOM = b"\xef\xbb\xbf"
NAMES = dialect_names()


class Case:
    """One fuzz input: a tree plus byte-level framing, and its twin without a residue.

    A plain class, not a dataclass: hypothesis pretty-prints dataclasses field by field,
    which recurses through trees thousands of levels deep.
    """

    def __init__(self, tree: Any, origin: str = "") -> None:
        self.tree = tree
        self.origin = origin
        self.prefix = b""
        self.tail: list[Any] = []
        self.sep = b"\n"
        self.cut: int | None = None
        self.twin: Any = None
        self.has_twin = False
        self.ops: list[str] = []

    def __repr__(self) -> str:  # short and recursion-free: trees may be thousands of levels deep
        return f"Case(origin={self.origin!r}, ops={self.ops!r}, bytes={len(self.data)})"

    def _frame(self, tree: Any) -> bytes:
        data = self.prefix + dump(tree) + b"".join(self.sep + dump(t) for t in self.tail)
        return data[: self.cut] if self.cut is not None else data

    @property
    def data(self) -> bytes:
        return self._frame(self.tree)

    @property
    def twin_data(self) -> bytes | None:
        return self._frame(self.twin) if self.has_twin else None

    @property
    def framed(self) -> bool:
        """True if byte-level damage makes the bytes differ from the tree's."""
        return bool(self.prefix or self.tail or self.cut is not None)


# ---- outcome oracle -------------------------------------------------------------------


def says_failure(tree: Any, depth: int = 0) -> bool:
    """True if the document (or a wrapper around it) says the call failed.

    JSON-RPC ``error``; a CallToolResult with ``isError: true``; an envelope with
    ``success: false`` or whose detected dialect's outcome flag says failure (``Dialect.failed``:
    dotbot ``status: "error"`` only in a dotbot envelope); recursively through wrappers.
    """
    if not isinstance(tree, Obj) or depth > 8:
        return False
    if tree.get("jsonrpc") is not None:
        if tree.has("error") and tree.get("error") is not None:
            return True
        return says_failure(tree.get("result"), depth + 1)
    if (tree.has("content") or tree.has("structuredContent")) and not (tree.has("success") or tree.has("data")):
        if tree.get("isError") is True:
            return True
        sc = tree.get("structuredContent")
        if isinstance(sc, Obj):
            return says_failure(sc, depth + 1)
        return False
    try:  # the outcome flag of the dialect the envelope is read as (a stray key of another's is not)
        return get_dialect(detect(dump(tree))).failed(dump(tree))
    except (EnvglotError, RecursionError, ValueError):
        # detection fails on a broken member: the flags as the dialects spell them
        # (dotbot's status only with its schema_id)
        return tree.get("success") is False or (tree.has("schema_id") and tree.get("status") == "error")


# ---- wrappers ---------------------------------------------------------------------------


def _text_of(tree: Any) -> str:
    return dump(tree).decode("utf-8", "surrogateescape")


def mcp_wrap(rng: random.Random, inner: Any) -> Obj:
    """``inner`` inside a CallToolResult (structured, text or both; isError true/false/absent)."""
    form = rng.choice(("both", "both", "text", "structured", "text-pretty-ish"))
    w = Obj()
    if form in ("both", "text"):
        w.append(("content", [Obj([("type", "text"), ("text", _text_of(inner))])]))
    elif form == "text-pretty-ish":
        w.append(
            (
                "content",
                [
                    Obj([("type", "image"), ("data", "AAAA")]),
                    Obj([("type", "text"), ("text", " \n" + _text_of(inner))]),
                ],
            )
        )
    else:
        w.append(("content", []))
    if form in ("both", "structured"):
        w.append(("structuredContent", inner))
    flag = rng.choice((True, True, False, None, "true"))
    if flag is not None:
        w.append(("isError", flag))
    return w


def rpc_wrap(rng: random.Random, inner: Any) -> Obj:
    """``inner`` as a JSON-RPC 2.0 response: in ``result``, or in a JSON-RPC ``error``."""
    if rng.random() < 0.6:
        return Obj([("jsonrpc", "2.0"), ("id", rng.choice((1, "a", None))), ("result", inner)])
    err = Obj(
        [
            ("code", rng.choice((-32603, -32602, -32000, 404, overflow(rng)))),
            ("message", rng.choice(("Internal error", "", "\udcff"))),
        ]
    )
    if rng.random() < 0.5:
        err.append(("data", inner))
    return Obj([("jsonrpc", "2.0"), ("id", 1), ("error", err)])


# ---- residues ---------------------------------------------------------------------------

_PATHS = (
    "$",
    "$.success",
    "$.status",
    "$.error",
    "$.error.code",
    "$.data",
    "$.data.result",
    "$.value",
    "$.meta",
    "$.meta.version",
    "$.errors[0]",
    "$.errors[0].message",
    '$["x y"]',
    '$["\\u00e9"]',
    "$.a[7]",
    "$[0]",
    "$.data[3].x",
    "$..x",
    "data",
    "$.",
    "$[",
    '$["unterminated',
    "$.__class__",
    "$.injected",
)


def _path(rng: random.Random) -> Any:
    r = rng.random()
    if r < 0.8:
        return rng.choice(_PATHS)
    if r < 0.9:
        return "$" + ".a" * rng.choice((300, 3000))
    return rng.choice((None, 5, [], Obj(), "\udcff", "$.a" + "[0]" * 400))


def _residue_value(rng: random.Random) -> Any:
    return rng.choice(
        (False, True, None, 5, "error", "ok", Obj([("injected", True)]), [1, 2], Obj(), hostile_value(rng))
    )


def crafted_residue(rng: random.Random) -> Any:
    """An ``_envglot`` residue an attacker wrote: valid-looking or corrupt."""
    r = rng.random()
    if r < 0.1:
        return rng.choice(("x", 5, None, [], [["$", 5]], True, "\udcff"))
    res = Obj([("from", rng.choice((*NAMES, "nope", "", 5, None)))])
    if rng.random() < 0.9:
        if rng.random() < 0.85:
            sets: Any = [[_path(rng), _residue_value(rng)] for _ in range(rng.randint(1, 3))]
            if rng.random() < 0.1:
                sets.append(rng.choice(([], ["$"], ["$", 1, 2], "x", None, Obj())))
        else:
            sets = rng.choice(("x", 5, Obj(), None))
        res.append(("set", sets))
    if rng.random() < 0.6:
        dels: Any = (
            [_path(rng) for _ in range(rng.randint(1, 2))] if rng.random() < 0.9 else rng.choice(("$", 1, Obj()))
        )
        res.append(("del", dels))
    if rng.random() < 0.3:
        res.append(("digest", rng.choice(("0" * 64, "sha256:deadbeef", "", 5))))
    if rng.random() < 0.1:
        res.append((hostile_key(rng), 1))
    return res


def residue_slot(tree: Obj) -> tuple[Obj, str]:
    """``(object, key)`` where the residue of the document's detected dialect lives.

    The slot is the dialect's ``Shape.residue`` (``$._envglot`` unless the dialect says
    otherwise, e.g. inside ``meta``); when the document is detected as no dialect, or the
    slot's parent is not an object, it is the top level. A ``_envglot`` key anywhere else is
    an ordinary unknown field.
    """
    try:
        where = get_dialect(detect(dump(tree))).shape.residue
    except (EnvglotError, RecursionError, ValueError):
        where = "$._envglot"
    *parents, key = where.removeprefix("$.").split(".")
    node: Any = tree
    for seg in parents:
        node = node.get(seg) if isinstance(node, Obj) else None  # a repeated key: its last occurrence
    return (node, key) if isinstance(node, Obj) else (tree, "_envglot")


def without_residues(tree: Any) -> Any:
    """A copy of the document without its residue (at its dialect's slot): the twin."""
    out = clone(tree)
    if isinstance(out, Obj):
        node, key = residue_slot(out)
        node[:] = [(k, v) for k, v in node if k != key]
    return out


# ---- the mutator ------------------------------------------------------------------------


def _slots(tree: Any, limit: int = 4000) -> list[tuple[Any, int]]:
    """``(container, index)`` of every value in the tree (breadth-first, bounded)."""
    out: list[tuple[Any, int]] = []
    todo = [tree]
    while todo and len(out) < limit:
        node = todo.pop()
        if isinstance(node, Obj):
            for i, (_, v) in enumerate(node):
                out.append((node, i))
                todo.append(v)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                out.append((node, i))
                todo.append(v)
    return out


def _get(c: Any, i: int) -> Any:
    return c[i][1] if isinstance(c, Obj) else c[i]


def _put(c: Any, i: int, v: Any) -> None:
    if isinstance(c, Obj):
        c[i] = (c[i][0], v)
    else:
        c[i] = v


def _objects(tree: Any) -> list[Obj]:
    objs = [c for c, _ in _slots(tree) if isinstance(c, Obj)]
    if isinstance(tree, Obj):
        objs.append(tree)
    return objs


def _other_type(rng: random.Random, v: Any) -> Any:
    # a copy inside the wrappers: the value may stay in its slot too (a duplicated key), and a shared
    # subtree would take the residue added later into both places while the twin lacks it in both
    options = [None, True, False, 0, -1, 1.5, "", "x", "true", "false", [], Obj()]
    options += [[clone(v)], Obj([("value", clone(v))])]
    if isinstance(v, str):
        options.append(v.upper())
    if isinstance(v, int | float) and not isinstance(v, bool):
        options += [str(v), -v if v else 1]
    return rng.choice(options)


class Mutator:
    """Seeded, reproducible mutations of the seed envelopes (see the module docstring)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.seeds = seeds()

    def case(self) -> Case:
        rng = self.rng
        name, tree = rng.choice(self.seeds)
        tree = clone(tree)
        c = Case(tree=tree, origin=name)
        for _ in range(rng.choice((0, 1, 1, 2, 3, 5))):
            self._structural(c)
        if rng.random() < 0.35:
            self._hostile(c)
        if rng.random() < 0.25:
            self._residue(c)
        if rng.random() < 0.3:
            self._wrap(c)
        if rng.random() < 0.08:
            self._frame(c)
        return c

    # -- structural ---------------------------------------------------------------------

    def _structural(self, c: Case) -> None:
        rng = self.rng
        slots = _slots(c.tree)
        objs = _objects(c.tree)
        op = rng.choice(("swap", "delete", "duplicate", "retype", "retype", "rename", "graft", "field"))
        c.ops.append(op)
        if op == "swap" and len(slots) >= 2:
            (a, i), (b, j) = rng.sample(slots, 2)
            va, vb = _get(a, i), _get(b, j)
            if va is not vb and not _contains(va, vb) and not _contains(vb, va):
                _put(a, i, vb)
                _put(b, j, va)
        elif op == "delete" and objs:
            o = rng.choice(objs)
            if o:
                del o[rng.randrange(len(o))]
        elif op == "duplicate" and objs:
            o = rng.choice(objs)
            if o:
                k, v = o[rng.randrange(len(o))]
                o.insert(rng.randrange(len(o) + 1), (k, _other_type(rng, v) if rng.random() < 0.7 else clone(v)))
        elif op == "retype" and slots:
            cont, i = rng.choice(slots)
            _put(cont, i, _other_type(rng, _get(cont, i)))
        elif op == "rename" and objs:
            o = rng.choice(objs)
            if o:
                i = rng.randrange(len(o))
                o[i] = (rng.choice(FIELDS), o[i][1])
        elif op == "graft":
            _, donor = rng.choice(self.seeds)
            dslots = _slots(donor)
            if dslots and slots:
                dc, di = rng.choice(dslots)
                cont, i = rng.choice(slots)
                _put(cont, i, clone(_get(dc, di)))
        elif op == "field" and objs:
            o = rng.choice(objs)
            o.append((rng.choice(FIELDS), _other_type(rng, None)))

    def _hostile(self, c: Case) -> None:
        rng = self.rng
        slots = _slots(c.tree)
        objs = _objects(c.tree)
        r = rng.random()
        if r < 0.4 and slots:
            cont, i = rng.choice(slots)
            _put(cont, i, hostile_value(rng))
            c.ops.append("hostile-value")
        elif r < 0.6 and objs:
            o = rng.choice(objs)
            o.append((hostile_key(rng), rng.choice((None, 1, "v", hostile_value(rng)))))
            c.ops.append("hostile-key")
        elif r < 0.8 and objs:
            o = rng.choice(objs)
            k = rng.choice(FIELDS[:12] + FIELDS[11:20])
            o.append((k, overflow(rng) if rng.random() < 0.7 else hostile_value(rng)))
            c.ops.append(f"hostile-field:{k}")
        elif objs:  # a key's bytes damaged in place
            o = rng.choice(objs)
            if o:
                i = rng.randrange(len(o))
                k = o[i][0]
                o[i] = (k[: len(k) // 2] + "\udcff" + k[len(k) // 2 :], o[i][1])
                c.ops.append("damaged-key")

    def _residue(self, c: Case) -> None:
        rng = self.rng
        c.twin = without_residues(c.tree)
        c.has_twin = True
        if not isinstance(c.tree, Obj):
            c.has_twin = False
            return
        res = crafted_residue(rng)
        node, key = residue_slot(c.tree)  # the detected dialect's slot (elsewhere: an ordinary unknown field)
        node.append((key, res))
        c.ops.append("residue" if node is c.tree else "residue:nested")

    def _wrap(self, c: Case) -> None:
        rng = self.rng
        r = rng.random()
        if r < 0.15:  # a failure whose text is a JSON object that is no envelope
            bare = Obj([(rng.choice(("message", "detail", "error", "specs")), rng.choice(("Not Found", "boom", 5)))])
            c.tree = bare
            c.twin = clone(bare)
            c.has_twin = False
        kind = rng.choice(("mcp", "mcp", "rpc", "rpc-mcp", "mcp-mcp"))
        c.ops.append(f"wrap:{kind}")
        state = rng.getstate()

        def wrap(t: Any) -> Any:
            rng.setstate(state)
            if kind == "mcp":
                return mcp_wrap(rng, t)
            if kind == "rpc":
                return rpc_wrap(rng, t)
            if kind == "rpc-mcp":
                return rpc_wrap(rng, mcp_wrap(rng, t))
            return mcp_wrap(rng, mcp_wrap(rng, t))

        if c.has_twin:
            c.twin = wrap(c.twin)
        c.tree = wrap(c.tree)

    def _frame(self, c: Case) -> None:
        rng = self.rng
        r = rng.random()
        if r < 0.4:
            c.prefix = BOM
            c.ops.append("bom")
        elif r < 0.8:
            _, other = rng.choice(self.seeds)
            c.tail = [clone(rng.choice((c.tree, other)))]
            c.sep = rng.choice((b"", b"\n", b" ", b"\r\n"))
            c.ops.append("concatenated")
        else:
            n = len(dump(c.tree))
            c.cut = rng.randrange(max(n, 1))
            c.ops.append("truncated")


def _contains(a: Any, b: Any) -> bool:
    """True if ``b`` is ``a`` or inside it (a swap must not build a cycle)."""
    todo = [a]
    while todo:
        n = todo.pop()
        if n is b:
            return True
        if isinstance(n, Obj):
            todo.extend(v for _, v in n)
        elif isinstance(n, list):
            todo.extend(n)
    return False
