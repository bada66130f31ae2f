"""What ``import envglot`` with its tables loaded imports (issue 28): what a command does not
need stays unimported, a check on modules, not on time (the time is benchmarks/run.py's)."""

from __future__ import annotations

import subprocess
import sys

import pytest

_OPTIONAL = (
    "envglot.cli",
    "envglot.fastmcp",
    "envglot.learn",
    "envglot.mcp",
    "envglot.migration",
    "envglot.proxy",
    "envglot.schema",
    "envglot.validation",
    "click",
    "fastmcp",
    "jsonschema",
    "mcp",
)
"""The faces and optional dependencies: imported by the command or call that uses them."""

_ON_FIRST_USE = ("ctypes", "hashlib", "json", "pathlib", "pkgutil", "string", "tempfile", "threading")
"""Standard modules only some paths need: listing the dialects does without pkgutil, a
declaration's templates import string, a TOML cache miss imports tempfile; the first depth
check imports ctypes and threading (finding the recursion budget), a dict input json, an
id or a residue hashlib (the tables' cache compares the TOML bytes instead of hashing them),
an overlay pathlib (the bundled tables' paths are strings)."""


def _loaded(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return set(out.split())


@pytest.fixture(scope="module")
def loaded() -> set[str]:
    return _loaded("import envglot\nenvglot.mappings.default_mappings()")


@pytest.mark.parametrize("name", _OPTIONAL + _ON_FIRST_USE)
def test_import_with_tables_leaves_it_unimported(loaded: set[str], name: str) -> None:
    assert "envglot.mappings" in loaded  # the probe did load the tables
    assert name not in loaded


def test_contract_constants_are_derived_on_first_use() -> None:
    """A dialect's tables answer its contract's optional constants, derived when first asked
    (no longer while the tables load)."""
    from envglot.dialects import DIALECTS
    from envglot.mappings import default_mappings

    m = default_mappings()
    errorcode = m["errorcode"]
    assert errorcode.constants == DIALECTS["errorcode"].optional_constants()
    assert "$.meta.tool_version" in errorcode.constants
