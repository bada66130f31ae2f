"""The ```python examples of docs/python-api.md and docs/adapters.md run as written, in page order."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = {
    "python-api.md": None,
    # the adapter examples run a real MCP server and client (mcp 2.x API: MCPServer, Client)
    "adapters.md": "mcp.server.mcpserver",
}


def _blocks(page: Path) -> list[tuple[int, str]]:
    text = page.read_text()
    return [
        (text.count("\n", 0, m.start()) + 2, m.group(1))
        for m in re.finditer(r"^```python\n(.*?)^```", text, re.M | re.S)
    ]


@pytest.mark.parametrize("name", PAGES)
def test_page_examples_run(name: str) -> None:
    needs = PAGES[name]
    if needs is not None:
        try:
            found = importlib.util.find_spec(needs) is not None
        except ImportError:
            found = False
        if not found:
            pytest.skip(f"{name} needs {needs} (the mcp 2.x API: pip install -e '.[mcp]')")
    page = DOCS / name
    blocks = _blocks(page)
    assert blocks, f"{name} has no python examples"
    namespace: dict[str, object] = {"__name__": f"docs_{name.replace('-', '_').removesuffix('.md')}"}
    for line, code in blocks:
        # pad with blank lines so a traceback points at the line in the Markdown page
        exec(compile("\n" * (line - 1) + code, str(page), "exec"), namespace)
