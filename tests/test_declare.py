"""A bundled dialect is compiled from ``[declare]`` of its table plus its hooks module (issue 24).

The facts a dialect used to state on its class come from ``mappings/<name>.toml``; a broken
``[declare]`` is a clear ``MappingError`` naming the file and the JSON path.
"""

from __future__ import annotations

import pickle
import sys
import types
from pathlib import Path

import msgspec
import pytest

from envglot.declare import Shape
from envglot.dialect import Dialect, compile_hooks, declared_facts, name_of
from envglot.dialects import DIALECTS
from envglot.errors import MappingError
from envglot.kinds import Kind
from envglot.tables import shipped_dir, toml_document
from envglot.tomlfile import read_regular


def _declare(name: str) -> dict[str, object]:
    path = shipped_dir() / f"{name}.toml"
    doc = toml_document(read_regular(path, "table"), str(path))
    assert isinstance(doc, dict)
    out = doc["declare"]
    assert isinstance(out, dict)
    return out


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_a_bundled_dialect_is_its_declaration_and_its_module(name: str) -> None:
    d = DIALECTS[name]
    raw = _declare(name)
    assert type(d).__module__ == f"envglot.dialects.{name.replace('-', '_')}"
    assert name_of(type(d).__module__) == name
    assert d.description == raw["description"] and list(d.aliases) == raw.get("aliases", [])
    assert d.native_indent == raw.get("native_indent", -1)
    probes = raw.get("probes", {})
    assert isinstance(probes, dict)
    assert [(p.test.__name__, p.priority, p.doc) for p in d.probes] == [
        (fn, p["priority"], p["doc"]) for fn, p in probes.items()
    ]
    shape_keys = {f.name for f in msgspec.structs.fields(Shape)}
    said = {k: v for k, v in raw.items() if k in shape_keys}
    assert d.shape == msgspec.structs.replace(Shape(), **said)  # a key left out is Shape's default
    assert d.example_code == raw.get("example_code", Dialect.example_code)
    assert d.reader_kinds == frozenset(Kind(k) for k in raw.get("reader_kinds", ["status_mismatch"]))  # type: ignore[union-attr]
    module = sys.modules[type(d).__module__]
    own = [v for v in vars(module).values() if isinstance(v, type) and issubclass(v, Dialect) and v is not Dialect]
    assert own == [type(d)]  # no hand-written class: the compiler's, set on the module
    assert pickle.loads(pickle.dumps(type(d))) is type(d)  # found there by pickle (worker processes)


def _hooks_module(tmp_path: Path, declare: str, body: str = "") -> types.ModuleType:
    (tmp_path / "teamy.toml").write_text(
        f'dialect = "teamy"\n\n[declare]\n{declare}\n[fields]\nok = "$.ok"\npayload = "$.data"\n'
    )
    mod = types.ModuleType("teamy_hooks")
    mod.__file__ = str(tmp_path / "teamy_hooks.py")
    exec(compile("from envglot.dialect import Facts\n" + body, mod.__file__, "exec"), mod.__dict__)
    sys.modules[mod.__name__] = mod
    return mod


@pytest.mark.parametrize(
    ("declare", "body", "said"),
    [
        ('description = "x"\nshape = 1\n', "", "unknown field `shape`"),
        ('description = "x"\n[declare.probes.missing]\npriority = 5\n', "", "'missing' is no function of"),
        ('description = "x"\nreader_kinds = ["nope"]\n', "", "[declare] reader_kinds"),
        ('description = "x"\nmax_problems = "one"\n', "", "Expected `int`"),
        ("aliases = []\n", "", "missing required field `description`"),
    ],
    ids=["unknown-key", "missing-probe", "bad-kind", "bad-type", "no-description"],
)
def test_a_broken_declare_names_the_file_and_the_path(tmp_path: Path, declare: str, body: str, said: str) -> None:
    mod = _hooks_module(tmp_path, declare, body)
    try:
        with pytest.raises(MappingError) as err:
            compile_hooks(mod, table_file="teamy.toml")
    finally:
        del sys.modules[mod.__name__]
        declared_facts.cache_clear()
    assert str(tmp_path / "teamy.toml") in str(err.value)
    assert said in str(err.value)
    assert err.value.path is not None and err.value.path.startswith("$.")


def test_the_outcome_words_give_the_failure_json(tmp_path: Path) -> None:
    """``[declare.outcome]``: the first failure word is the JSON ``failed`` compares (dotbot's status)."""
    declare = 'description = "x"\n[declare.outcome]\nsuccess = "fine"\nfailure = ["broken", "bad"]\n'
    mod = _hooks_module(tmp_path, declare, "def probe(f: Facts) -> str | None:\n    return None\n")
    try:
        cls = compile_hooks(mod, table_file="teamy.toml")
    finally:
        del sys.modules[mod.__name__]
        declared_facts.cache_clear()
    d = cls()
    assert d.name == "teamy" and d.outcome_key == "ok" and d.failure_value == b'"broken"'
    assert d.failed(b'{"ok":"broken"}') and not d.failed(b'{"ok":"fine"}')
    assert DIALECTS["dotbot"].failure_value == b'"error"'
