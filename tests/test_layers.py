"""The package's layers (docs/architecture.md): an AST scan of ``src/envglot``.

Every import counts, at the top of a module or inside a function (only ``if TYPE_CHECKING:``
blocks are left out, they never run): the import graph has no cycle, and no module imports
from a layer above its own.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "envglot"

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "canonical model, errors, diagnostics",
        (
            "canonical",
            "diagnostics",
            "errors",
            "excerpt",
            "kinds",
            "limits",
            "policy",
            "residue",
            "tomlfile",
            "transport",
        ),
    ),
    ("tables & codes", ("context", "tables")),
    ("kit", ("checker", "declared", "detect", "dialect", "fields", "mappings", "registry", "wire")),
    ("dialects", ("dialects",)),
    ("pipeline & api", ("api", "crosswalk", "inspect", "options", "pyresult", "schema", "validation")),
    ("faces", ("", "cli", "fastmcp", "learn", "mcp", "migration", "proxy")),
)
"""Lowest first. A name is a module or a package (with everything in it) under ``envglot``;
``""`` is the package itself: ``import envglot`` re-exports the Python API and, on first use,
the batch API (``envglot.migrate``), so it sits with the faces."""


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
    raise AssertionError(f"{module} is in no layer: add it to LAYERS here and to docs/architecture.md")


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
    assert "envglot.declared" in imports("envglot.mappings")  # imported inside register_declarations
    assert "envglot.api" in imports("envglot.crosswalk")  # imported inside unstable_codes
