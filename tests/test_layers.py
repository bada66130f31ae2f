"""The package's layers (docs/architecture.md): an AST scan of ``src/envglot``.

Every import counts, at the top of a module or inside a function (only ``if TYPE_CHECKING:``
blocks are left out, they never run): the import graph has no cycle, and no module imports
from a layer above its own. No private name (``_x``) is used outside the module that
defines it: a name shared between modules is public. A module over 500 lines says why at
its top.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "envglot"

ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def _layers() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The layer table of docs/architecture.md, lowest first: (name, modules). A module name is
    relative to ``envglot`` (``cli/`` is the package ``envglot.cli``); ``envglot`` is the package itself."""
    rows = []
    for line in ARCHITECTURE.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("Layer", "---"):
            continue
        names = [n.rstrip("/") for n in re.findall(r"`([^`]+)`", cells[1])]
        rows.append((cells[0], tuple("" if n == "envglot" else n for n in names)))
    return tuple(rows)


LAYERS = _layers()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def _statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """Every statement that can run, nested ones included (``if TYPE_CHECKING:`` bodies left out)."""
    out: list[ast.stmt] = []
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, ast.If) and _type_checking(node):
            stack.extend(reversed(node.orelse))
            continue
        for child in reversed(list(ast.iter_child_nodes(node))):
            if isinstance(child, ast.stmt):
                stack.append(child)
            elif isinstance(child, ast.excepthandler | ast.match_case):
                stack.extend(reversed(child.body))
    return out


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if modules()[module].name != "__init__.py":
        base.pop()
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


@cache
def imports(module: str) -> dict[str, int]:
    """The ``envglot`` modules ``module`` imports (each with the line of its first import)."""
    tree = ast.parse(modules()[module].read_text(encoding="utf-8"))
    out: dict[str, int] = {}
    for node in _statements(tree.body):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, node)
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules() else base for a in node.names]
        for t in targets:
            if (t == "envglot" or t.startswith("envglot.")) and t != module:
                out.setdefault(t, node.lineno)
    return out


def layer_of(module: str) -> int:
    rel = module.removeprefix("envglot").removeprefix(".")
    for i, (_, names) in enumerate(LAYERS):
        for n in names:
            if rel == n or (n and rel.startswith(n + ".")):
                return i
    raise AssertionError(f"{module} is in no layer: add it to the table of docs/architecture.md")


def test_the_layer_table_is_read() -> None:
    assert [name for name, _ in LAYERS] == [
        "canonical model, errors, diagnostics",
        "tables & codes",
        "kit",
        "dialects",
        "pipeline & api",
        "faces",
    ]
    assert "" in LAYERS[-1][1] and "cli" in LAYERS[-1][1] and "api" in LAYERS[-2][1]


def test_every_module_has_a_layer() -> None:
    for m in modules():
        layer_of(m)


def test_the_import_graph_has_no_cycle() -> None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for t in sorted(imports(m)):
            if state.get(t) == 1:
                cycle = [*path[path.index(t) :], t]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if t not in state:
                visit(t)
        path.pop()
        state[m] = 2

    for m in modules():
        if m not in state:
            visit(m)


@pytest.mark.parametrize("module", sorted(modules()))
def test_no_module_imports_from_a_higher_layer(module: str) -> None:
    mine = layer_of(module)
    for target, line in imports(module).items():
        theirs = layer_of(target)
        assert theirs <= mine, (
            f"{modules()[module].relative_to(SRC)}:{line}: {module} ({LAYERS[mine][0]}) imports "
            f"{target} ({LAYERS[theirs][0]})"
        )


def test_the_scan_sees_function_level_imports() -> None:
    assert "envglot.fields" in imports("envglot.dialect")  # imported inside Dialect._generate only
    assert "envglot.api" in imports("envglot.crosswalk")  # imported inside unstable_codes


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _own_names(tree: ast.Module) -> set[str]:
    """The private names a module defines: functions, classes, variables, attributes it sets, parameters."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            out.add(node.attr)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.alias):
            out.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            out.add(node.value)  # a slot or a key given as a string (``__slots__ = ("_p",)``)
    return {n for n in out if _private(n)}


PUBLIC_UNDERSCORED = {"os._exit"}
"""Documented public functions of the standard library whose names begin with ``_``."""


def private_uses(module: str, source: str | None = None) -> list[str]:
    """Where ``module`` uses a private name of another module: ``from x import _y``, an import of
    a private module, or ``obj._y`` where ``obj`` is not ``self``/``cls`` and the module does not
    define ``_y`` itself (so ``other._y`` between instances of one class stays allowed)."""
    tree = ast.parse(modules()[module].read_text(encoding="utf-8") if source is None else source)
    own = _own_names(tree)
    modules_bound: set[str] = set()  # local names bound to an envglot module
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = _resolve(module, node)
            if not (base == "envglot" or base.startswith("envglot.")):
                continue
            for a in node.names:
                full = f"{base}.{a.name}"
                if full in modules():
                    modules_bound.add(a.asname or a.name)
                if _private(a.name) or any(_private(part) for part in base.split(".")):
                    out.append(f"{node.lineno}: from {base} import {a.name}")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("envglot"):
                    modules_bound.add(a.asname or a.name.split(".")[0])
                    if any(_private(part) for part in a.name.split(".")):
                        out.append(f"{node.lineno}: import {a.name}")
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _private(node.attr)):
            continue
        base = node.value
        if isinstance(base, ast.Name) and base.id in ("self", "cls"):
            continue
        on_module = isinstance(base, ast.Name) and base.id in modules_bound
        if ast.unparse(node) in PUBLIC_UNDERSCORED:
            continue
        if on_module or node.attr not in own:
            out.append(f"{node.lineno}: {ast.unparse(base)}.{node.attr}")
    return out


@pytest.mark.parametrize("module", sorted(modules()))
def test_no_private_name_is_used_outside_its_module(module: str) -> None:
    assert private_uses(module) == [], f"{modules()[module].relative_to(SRC)} uses private names of other modules"


TOOLS = sorted(p for d in ("benchmarks", "scripts") for p in (SRC.parent / d).glob("*.py"))
"""The benchmarks and scripts: they use envglot as any caller does, through public names."""


@pytest.mark.parametrize("path", TOOLS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_benchmarks_and_scripts_use_no_private_name(path: Path) -> None:
    assert private_uses(f"{path.parent.name}.{path.stem}", path.read_text(encoding="utf-8")) == []


def test_the_private_scan_finds_what_it_looks_for() -> None:
    source = (
        "from . import fields\n"
        "from .fields import _ENABLED, hub\n"
        "from .dialects import _common\n"
        "class A:\n"
        "    __slots__ = ('_own',)\n"
        "    def f(self, other, conv):\n"
        "        return self._x, other._own, conv._p, fields._cache, hub\n"
    )
    assert private_uses("envglot.api", source) == [
        "2: from envglot.fields import _ENABLED",
        "3: from envglot.dialects import _common",
        "7: conv._p",
        "7: fields._cache",
    ]


LONG = 500


@pytest.mark.parametrize("module", sorted(modules()))
def test_a_long_module_says_why(module: str) -> None:
    source = modules()[module].read_text(encoding="utf-8")
    if source.count("\n") <= LONG:
        return
    doc = ast.get_docstring(ast.parse(source)) or ""
    assert re.search(rf"^Over {LONG} lines: \S", doc, re.M), (
        f"{modules()[module].relative_to(SRC)} has over {LONG} lines: split it, or say why in its docstring "
        f"(a line 'Over {LONG} lines: <reason>')"
    )
