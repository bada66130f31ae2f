"""Explicit registration (issue 24): loading tables registers nothing process-wide.

A declaration lives only in the :class:`envglot.Registry` of the tables loaded with it
(``mappings=``, ``--mappings``); the bundled registry is the base every other registry
extends; a ``Converter`` keeps the registry it was built with, so loading another
declaration later, in this thread or another, changes nothing it does.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import envglot
from envglot.declared import DeclaredDialect, with_declarations
from envglot.detect import classify, probe_table
from envglot.dialect import get_dialect, registered
from envglot.errors import MappingError, UnknownDialectError
from envglot.mappings import default_mappings, load_mappings, mappings_for
from envglot.mcp import is_error
from envglot.registry import Registry, bundled

ROOT = Path(__file__).resolve().parents[1]
ACME = ROOT / "examples" / "declared" / "acme.toml"
ACME_DOCS = sorted((ROOT / "examples" / "declared" / "acme").glob("*.json"))
BUNDLED = tuple(d.name for d in registered())
# acme under another name, its probe ahead of acme's: in one registry it would claim every acme
# document. Loaded after a converter is built, it must change nothing that converter does.
ZETA = ACME.read_text().replace('dialect = "acme"', 'dialect = "zeta"').replace('aliases = ["acme-v1"]', "aliases = []")
ZETA = ZETA.replace("priority = 80", "priority = 41")


def _doc(p: Path) -> bytes:
    return p.read_bytes().strip()


def _outcome(c: envglot.Converter, doc: bytes) -> envglot.Conversion | tuple[str, str]:
    """The conversion, or the refusal (its error type and message)."""
    try:
        return c.conversion(doc)
    except envglot.EnvglotError as exc:
        return type(exc).__name__, str(exc)


@pytest.fixture
def zeta(tmp_path: Path) -> Path:
    path = tmp_path / "zeta.toml"
    path.write_text(ZETA)
    return path


# -- the registry type --------------------------------------------------------------------------


def test_the_bundled_registry_holds_the_bundled_dialects_only() -> None:
    base = bundled()
    assert isinstance(base, Registry) and base is bundled()
    assert base.names() == BUNDLED == envglot.DIALECTS
    assert not any(d.declared for d in base)
    assert base.get("v2") is get_dialect("response-v2") is base.get("response_v2")
    assert "acme" not in base and base.find("acme") is None
    with pytest.raises(UnknownDialectError):
        base.get("acme")


def test_a_registry_is_immutable_adding_gives_a_new_one() -> None:
    base = bundled()
    reg, rest = with_declarations([str(ACME), "overlay.toml"], base)
    assert rest == ["overlay.toml"]  # not a declaration (not even a file): left for the tables
    assert reg is not base and "acme" in reg and "acme-v1" in reg
    assert isinstance(reg.get("acme"), DeclaredDialect)
    assert reg.names() == tuple(sorted((*BUNDLED, "acme")))
    assert "acme" not in base and base.names() == BUNDLED
    with pytest.raises(ValueError, match="names two dialects"):
        base.adding(reg.get("acme"), reg.get("acme").__class__())


def test_loading_tables_registers_nothing() -> None:
    before = (bundled(), bundled().names(), probe_table())
    m = load_mappings([str(ACME)])
    m2 = mappings_for([str(ACME)])
    assert "acme" in m.registry and "acme" in m2.registry and "acme" in m.dialects
    assert (bundled(), bundled().names(), probe_table()) == before
    assert "acme" not in default_mappings().dialects
    assert classify(_doc(ACME_DOCS[0])).dialect == "legacy-v1"
    assert classify(_doc(ACME_DOCS[0]), m.registry).dialect == "acme"
    with pytest.raises(UnknownDialectError):
        envglot.convert(_doc(ACME_DOCS[0]), to="acme")


def test_one_set_of_tables_one_declaration_per_name(zeta: Path, tmp_path: Path) -> None:
    clash = tmp_path / "acme-too.toml"
    clash.write_text(ZETA.replace('dialect = "zeta"', 'dialect = "acme"'))
    with pytest.raises(MappingError, match="already declared differently"):
        load_mappings([str(ACME), str(clash)])
    # two names, but zeta's probe (41) runs before acme's (80) and claims its documents
    with pytest.raises(MappingError, match=r"acme.toml: \[declare.detect\] overlaps the declared dialect zeta"):
        load_mappings([str(ACME), str(zeta)])
    apart = tmp_path / "zeta-apart.toml"
    apart.write_text(ZETA.replace('"$.tier" = "v1"', '"$.tier" = "z1"'))
    both = load_mappings([str(ACME), str(apart)])  # told apart by a member: one registry holds both
    assert {"acme", "zeta"} <= set(both.registry.names())
    assert classify(_doc(ACME_DOCS[0]), both.registry).dialect == "acme"


def test_a_name_whose_spelling_is_another_dialects_alias_is_a_clear_error(tmp_path: Path) -> None:
    first = tmp_path / "first.toml"
    first.write_text(ZETA.replace("aliases = []", 'aliases = ["my_x"]').replace("priority = 41", "priority = 90"))
    second = tmp_path / "second.toml"
    second.write_text(ACME.read_text().replace('dialect = "acme"', 'dialect = "my-x"').replace('"acme-v1"', '"mx"'))
    with pytest.raises(MappingError, match="'my_x' names two dialects: zeta and my-x") as info:
        with_declarations([str(first), str(second)])
    assert str(second) in str(info.value)


# -- a Converter keeps the registry it was built with --------------------------------------------


def test_a_converter_built_before_another_declaration_loads_behaves_as_before(zeta: Path) -> None:
    to_v2 = envglot.Converter("response-v2")  # the bundled registry
    from_acme = envglot.Converter("response-v2", mappings=[str(ACME)])
    to_acme = envglot.Converter("acme", mappings=[str(ACME)])
    docs = [_doc(p) for p in ACME_DOCS]
    before = (
        [_outcome(to_v2, d) for d in docs],
        [_outcome(from_acme, d) for d in docs],
        [_outcome(to_acme, d) for d in docs],
    )
    assert {c.source for c in before[1] if isinstance(c, envglot.Conversion)} == {"acme"}
    assert all(isinstance(c, envglot.Conversion) for c in before[1] + before[2])
    assert {c.source if isinstance(c, envglot.Conversion) else c[0] for c in before[0]} <= {"legacy-v1", "ParseError"}
    m = load_mappings([str(zeta)])  # another declaration loads: in its own tables only
    assert envglot.detect(docs[0], mappings=m) == "zeta"  # there it claims acme's documents
    after = (
        [_outcome(to_v2, d) for d in docs],
        [_outcome(from_acme, d) for d in docs],
        [_outcome(to_acme, d) for d in docs],
    )
    assert after == before
    with pytest.raises(UnknownDialectError):
        envglot.Converter("zeta", mappings=[str(ACME)])


def test_converters_in_threads_keep_their_registries_while_others_load(zeta: Path, tmp_path: Path) -> None:
    """Threads convert with converters built once while other threads load declarations that would
    claim their documents (each load a new file, so a new registry): every answer is the one
    given before the loads."""
    docs = [_doc(p) for p in ACME_DOCS]
    converters = [
        envglot.Converter("response-v2"),
        envglot.Converter("response-v2", mappings=[str(ACME)]),
        envglot.Converter("acme", mappings=[str(ACME)]),
    ]
    expected = [[_outcome(c, d) for d in docs] for c in converters]
    stop = threading.Event()
    loaded: list[str] = []

    def load(i: int) -> None:
        while not stop.is_set() and len(loaded) < 40:
            path = tmp_path / f"zeta{i}-{len(loaded)}.toml"
            name = f"zeta{i}x{len(loaded)}"
            path.write_text(ZETA.replace('dialect = "zeta"', f'dialect = "{name}"'))
            m = load_mappings([str(path)])
            assert name in m.registry and name not in bundled()
            assert classify(docs[0], m.registry).dialect == name
            loaded.append(name)

    def convert(k: int) -> bool:
        c = converters[k % len(converters)]
        want = expected[k % len(converters)]
        return all(_outcome(c, d) == w for _ in range(30) for d, w in zip(docs, want, strict=True))

    loaders = [threading.Thread(target=load, args=(i,)) for i in range(2)]
    for t in loaders:
        t.start()
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            results = list(pool.map(convert, range(12)))
    finally:
        stop.set()
        for t in loaders:
            t.join()
    assert all(results)
    assert loaded and not any(name in bundled() for name in loaded)
    assert bundled().names() == BUNDLED


# -- every face takes the registry from its tables -----------------------------------------------


def test_the_module_level_helpers_get_a_registry_for_their_call() -> None:
    acme = [str(ACME)]
    doc = _doc(ACME_DOCS[0])
    assert envglot.detect(doc, mappings=acme) == "acme" and envglot.detect(doc) == "legacy-v1"
    env = envglot.read(doc, mappings=acme)
    assert (env.ok, env.tool, env.problems[0].code) == (False, "get_doc", "NOT_FOUND")
    assert envglot.validate(doc, "acme", mappings=acme) == []
    with pytest.raises(UnknownDialectError):
        envglot.validate(doc, "acme")
    assert is_error(doc, "acme", mappings=acme) is is_error(doc, mappings=acme) is True
    assert envglot.json_schema("acme", mappings=acme)["$schema"]
    with pytest.raises(UnknownDialectError):
        envglot.json_schema("acme")
    assert envglot.convert(doc, to="acme", mappings=acme) == doc


def test_the_mcp_faces_take_the_declared_dialect_from_their_tables() -> None:
    acme = [str(ACME)]

    @envglot.mcp.emits("acme", mappings=acme)
    def get_doc(x: int) -> dict[str, int]:
        return {"x": x}

    answered = get_doc(3).model_dump(mode="json", by_alias=True, exclude_none=True)  # an SDK CallToolResult
    assert answered["structuredContent"] == {"tier": "v1", "tool_id": "get_doc", "data": {"x": 3}}
    assert answered["isError"] is False
    schema = envglot.mcp.output_schema("acme", {"type": "object"}, mappings=acme)
    assert list(schema["properties"])[:3] == ["tier", "tool_id", "data"]
    wire = envglot.mcp.wrap(b'{"success": false, "error": "gone"}', "acme", mappings=acme)
    assert wire["isError"] is True and wire["structuredContent"]["tier"] == "v1"
    with pytest.raises(UnknownDialectError):
        envglot.mcp.emits("acme")
