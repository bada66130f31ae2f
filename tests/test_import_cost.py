"""What ``import envglot`` with its tables loaded imports (issue 28): what a command does not
need stays unimported, a check on modules, not on time (the time is benchmarks/run.py's)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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


_KIT_ON_FIRST_USE = ("envglot.checker", "envglot.detect", "envglot.diagnostics", "envglot.policy", "envglot.probetests")
"""envglot modules loading the tables does not need: the contract checker (a dialect's hooks
module, ``validate`` and a table's contract constants import it), detection and its probe tests
(a conversion, ``envglot.detect`` or a compiled dialect imports them), the diagnostics and the
policy (``envglot.Diagnostic``, ``Report``, ``Level``, ``Policy`` are imported by their first use)."""

_API_ON_FIRST_USE = ("envglot.api", "envglot.canonical", "envglot.fields", "envglot.options", "envglot.pipeline")
"""The conversion API (``envglot.convert``, ``Converter``, ``Options``, ``Envelope``, ...) and what
only it needs: imported when the package's attribute is first used."""

_README_INSTALL = ("importlib",)
"""Standard modules ``import envglot`` imports only through ``typing_extensions`` (msgspec imports
``inspect`` when it is installed, as the test install has it; the README's install has not):
finding a bundled dialect's hooks module imports ``importlib``."""

_WITHOUT_TYPING_EXTENSIONS = """\
import sys


class _Hide:
    def find_spec(self, name, path=None, target=None):
        if name == "typing_extensions":
            raise ModuleNotFoundError(name)


sys.meta_path.insert(0, _Hide())
"""


def _loaded(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return set(out.split())


@pytest.fixture(scope="module")
def loaded() -> set[str]:
    return _loaded("import envglot\nenvglot.mappings.default_mappings()")


@pytest.mark.parametrize("name", _OPTIONAL + _ON_FIRST_USE + _KIT_ON_FIRST_USE + _API_ON_FIRST_USE)
def test_import_with_tables_leaves_it_unimported(loaded: set[str], name: str) -> None:
    assert "envglot.mappings" in loaded  # the probe did load the tables
    assert name not in loaded


@pytest.mark.parametrize("name", _README_INSTALL)
def test_import_with_tables_in_the_readme_install_leaves_it_unimported(name: str) -> None:
    loaded = _loaded(_WITHOUT_TYPING_EXTENSIONS + "import envglot\nenvglot.mappings.default_mappings()")
    assert "envglot.mappings" in loaded and "typing_extensions" not in loaded
    assert name not in loaded


def test_the_api_is_imported_on_first_use_and_kept() -> None:
    """``envglot.<name>`` of the conversion API is the API module's own object, imported by the first
    use (``from envglot import ...`` included) and then a plain attribute; a module ``import envglot``
    used to import (``envglot.api``) is still found as an attribute."""
    code = (
        "import sys, envglot\n"
        "assert 'envglot.api' not in sys.modules and 'convert' not in vars(envglot)\n"
        "from envglot import Converter, Options\n"
        "import envglot.api as api, envglot.canonical as canonical, envglot.options as options\n"
        "assert Converter is api.Converter and Options is options.Options and 'Converter' in vars(envglot)\n"
        "assert envglot.convert is api.convert and envglot.Envelope is canonical.Envelope\n"
        "assert set(envglot.__all__) <= set(dir(envglot)) and 'validate' not in vars(envglot)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    fresh = "import envglot\nassert envglot.api.Converter is envglot.Converter and callable(envglot.wire.slug)"
    subprocess.run([sys.executable, "-c", fresh], check=True)
    # the submodule envglot.detect, imported first, does not take the name of the API's function
    detect = "import envglot.detect, envglot.pipeline, envglot\nassert envglot.detect is envglot.api.detect"
    subprocess.run([sys.executable, "-c", detect], check=True)


def test_the_diagnostics_and_the_policy_are_imported_on_first_use() -> None:
    """``envglot.Diagnostic``, ``Report``, ``Level`` and ``Policy`` are their modules' objects, imported
    by the first use; ``Kind`` is imported with the package (it is the kinds module's); the modules
    are found as attributes; the detection module never takes the name of the API's function."""
    code = (
        "import sys, envglot\n"
        "assert 'envglot.diagnostics' not in sys.modules and 'envglot.policy' not in sys.modules\n"
        "assert 'envglot.detect' not in sys.modules\n"
        "from envglot import Diagnostic, Policy\n"
        "import envglot.diagnostics as d, envglot.policy as p, envglot.kinds as k\n"
        "assert Diagnostic is d.Diagnostic and envglot.Report is d.Report and Policy is p.Policy\n"
        "assert envglot.Level is p.Level and envglot.Kind is k.Kind is d.Kind\n"
        "assert envglot.policy is p and envglot.diagnostics is d\n"
        "import envglot.detect\n"
        "assert envglot.detect is envglot.api.detect and sys.modules['envglot.detect'].Detection\n"
        "envglot.other = 1\n"
        "assert envglot.other == 1 and isinstance(envglot, type(sys))\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


_FIRST_CONVERSION_ON_FIRST_USE = ("logging", "pathlib")
"""What a default conversion (``warn``, nobody listening) does without: ``logging`` (until it is
imported no handler can listen, so the conversion need not import it to ask) and ``pathlib``
(the bundled ``[fields]`` a fused path derives from are read by a string path)."""


@pytest.mark.parametrize("name", _FIRST_CONVERSION_ON_FIRST_USE)
def test_a_first_conversion_leaves_it_unimported(name: str) -> None:
    doc = Path(__file__).resolve().parents[1] / "examples" / "dotbot" / "structure-ok.json"
    code = (
        "import envglot\n"
        f"doc = open({str(doc)!r}, 'rb').read()\n"
        "assert envglot.convert(doc, from_='dotbot', to='response-v2')\n"
        "assert envglot.convert(doc, to='errorcode')"
    )
    loaded = _loaded(code)
    assert "envglot.pipeline" in loaded and "envglot.derive" in loaded  # the probe did convert on the fused path
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


def test_loading_the_tables_compiles_no_bundled_dialect(loaded: set[str]) -> None:
    """The tables need each dialect's declared facts, not its hooks: no hooks module is imported."""
    assert "envglot.mappings" in loaded
    assert sorted(m for m in loaded if m.startswith("envglot.dialects.")) == []
    assert "envglot.declared" not in loaded  # a declaration among the overlays imports it


def test_a_dialect_found_by_name_is_compiled_alone() -> None:
    code = (
        "import envglot\n"
        "reg = envglot.mappings.default_mappings().registry\n"
        "assert 'dotbot' in reg and len(reg) == len(envglot.DIALECTS)\n"
        "assert reg.get('dotbot').name == 'dotbot' and reg.find('dotbot') is reg.get('dotbot')\n"
        "assert reg.writable_names() == envglot.dialects.WRITABLE"
    )
    assert sorted(m for m in _loaded(code) if m.startswith("envglot.dialects.")) == ["envglot.dialects.dotbot"]


def test_importing_the_mcp_adapters_compiles_no_bundled_dialect() -> None:
    """``envglot.mcp`` (the proxy's and the adapters' module) looks dialects up when a tool answers
    (it imports result's hooks module for ``Result``'s wire types, which compiles nothing)."""
    code = (
        "import envglot.mcp, envglot.registry as r\n"
        "assert all(isinstance(e, r.Deferred) for e in r.shipped().entries()), r.shipped().entries()"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_listing_the_dialects_compiles_them_all() -> None:
    code = "import envglot\nassert [d.name for d in envglot.registry.bundled()] == list(envglot.DIALECTS)"
    found = {m.rsplit(".", 1)[-1].replace("_", "-") for m in _loaded(code) if m.startswith("envglot.dialects.")}
    assert found == set(_names())


def test_threads_finding_dialects_at_once_compile_each_once() -> None:
    """A second compile of a module would raise (its class name is taken): the first lookups of
    many threads at once give one dialect per name."""
    code = (
        "import envglot, threading\n"
        "from envglot.registry import bundled\n"
        "reg, names, got, start = bundled(), envglot.DIALECTS, [], threading.Barrier(8)\n"
        "def run():\n"
        "    start.wait()\n"
        "    got.append(tuple(reg.get(n) for n in names))\n"
        "threads = [threading.Thread(target=run) for _ in range(8)]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "assert len(got) == 8 and all(g == got[0] for g in got), got\n"
        "assert [d.name for d in got[0]] == list(names)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_pickled_dialect_or_registry_is_found_by_name_where_it_is_loaded() -> None:
    """A bundled dialect pickles by name: the receiving process compiles its own (a worker process
    need not have imported the hooks module first)."""
    code = (
        "import pickle, envglot\n"
        "from envglot.registry import bundled, shipped_dialect\n"
        "d = bundled().get('result')\n"
        "assert pickle.loads(pickle.dumps(d)) is d is shipped_dialect('result')\n"
        "reg = pickle.loads(pickle.dumps(bundled()))\n"
        "assert reg.names() == bundled().names() and reg.get('result') is d\n"
        "print(pickle.dumps((bundled(), bundled().get('errorcode'))).hex())"
    )
    blob = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    receive = (
        "import pickle, sys\n"
        f"reg, d = pickle.loads(bytes.fromhex({blob!r}))\n"
        "assert d.name == 'errorcode' and reg.get('errorcode') is d\n"
        "assert sorted(m for m in sys.modules if m.startswith('envglot.dialects.')) == ['envglot.dialects.errorcode']"
    )
    subprocess.run([sys.executable, "-c", receive], check=True)


def _names() -> tuple[str, ...]:
    from envglot.dialects import NAMES

    return NAMES
