"""The registry contract suite: every registered dialect passes the same checks, none is named here.

The dialects come from :func:`envglot.dialect.registered`; everything a dialect brings is
found by convention: its table ``mappings/<name>.toml``, its docs page
``docs/dialects/<name>.md``, and its folder ``tests/dialects/<name>/``: its unit tests
``test_<module>.py``, its goldens ``cases/*.json`` (and, when present, ``examples/<name>/*.json``),
their canonical forms ``canonical/``, its pinned writes ``expected/<case>.<target>.json`` with
their reasons. A new dialect passes this suite (or
fails it, saying what is missing) without an edit here.

Checked for each dialect and each ordered pair with a writable target: detection of its own
documents, same-dialect round trips (plain and ``preserve``), conversion to every writable
dialect with output that envglot's own ``validate`` accepts and ``detect`` names, ``preserve``
round trips through every other dialect, the exported JSON Schema (its documents satisfy it),
and MCP ``wrap``/``unwrap`` with ``isError`` matching the document's outcome.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings

import envglot
from envelopes import canonical_envelopes, detected_as, sample_files, unit_module, unit_path
from envglot import mcp
from envglot.canonical import Envelope
from envglot.detect import probe_table
from envglot.dialect import Dialect, get_dialect, registered
from envglot.mappings import default_mappings
from envglot.schema import SCHEMA_DIALECT, json_schema
from golden import DIALECTS as OWN_DIRS
from golden import cases, json_key, own_dir

try:
    import jsonschema
except ImportError:  # pragma: no cover - the structural check below stands in
    jsonschema = None

ROOT = Path(__file__).resolve().parents[1]
DIALECTS: tuple[Dialect, ...] = tuple(registered())
WRITERS: tuple[Dialect, ...] = tuple(d for d in DIALECTS if d.shape.writable)
PAIRS = [(s, t) for s in DIALECTS for t in WRITERS]
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _name(d: Dialect) -> str:
    return d.name


def _pair_id(pair: tuple[Dialect, Dialect]) -> str:
    return f"{pair[0].name}->{pair[1].name}"


def samples(d: Dialect) -> list[tuple[str, bytes]]:
    """``(label, document)`` of every golden and example file of ``d``."""
    return [(str(p.relative_to(ROOT)), p.read_bytes()) for p in sample_files(d.name)]


def same_json(a: bytes | Any, b: bytes | Any) -> bool:
    return json_key(a) == json_key(b)


def canonical_json(env: Envelope) -> bytes:
    """A canonical envelope as a JSON-equality key (its Raw members compared as JSON, not as bytes)."""
    return json_key(msgspec.json.encode(env))


def _ok(doc: bytes, name: str) -> bool:
    return envglot.read(doc, from_=name).ok


# -- the registry and the unit's files ---------------------------------------------------


def test_the_registry_is_consistent() -> None:
    names = [d.name for d in DIALECTS]
    assert len(names) == len(set(names)) and names == sorted(names)
    assert WRITERS, "no writable dialect"
    spellings: dict[str, str] = {}
    for d in DIALECTS:
        assert re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", d.name), d.name
        assert d.description.strip(), f"{d.name} has no description"
        for spelling in (d.name, d.name.replace("-", "_"), *d.aliases):
            assert spellings.setdefault(spelling, d.name) == d.name, f"{spelling!r} names two dialects"
            assert get_dialect(spelling) is d
    assert set(names) == set(envglot.DIALECTS)


@pytest.mark.parametrize("d", DIALECTS, ids=_name)
def test_the_unit_brings_its_table_docs_tests_and_goldens(d: Dialect) -> None:
    assert (ROOT / "mappings" / f"{d.name}.toml").is_file(), f"no mappings/{d.name}.toml"
    assert default_mappings()[d.name] is not None
    page = ROOT / "docs" / "dialects" / f"{d.name}.md"
    assert page.is_file(), f"no docs/dialects/{d.name}.md"
    assert d.name in page.read_text(encoding="utf-8")
    unit = unit_module(d)
    assert unit is not None, f"no {unit_path(d).relative_to(ROOT)}"
    suites = [v for v in vars(unit).values() if isinstance(v, type) and getattr(v, "dialect", None) == d.name]
    assert suites, f"{unit_path(d).relative_to(ROOT)} runs no GoldenSuite for {d.name}"
    own = cases(d.name)
    assert own, f"no goldens in {own_dir(d.name).relative_to(ROOT)}/cases/"
    missing = [str(c) for c in own if not c.canonical_path.is_file()]
    assert not missing, f"no canonical golden for {missing}: run tests/golden/regen.py and review it"


@pytest.mark.parametrize("d", DIALECTS, ids=_name)
def test_pinned_writes_name_registered_writable_targets(d: Dialect) -> None:
    writable = {w.name for w in WRITERS}
    for c in cases(d.name):
        assert set(c.pinned) <= writable, f"{c} pins a write to an unknown or read-only dialect: {c.pinned}"


# -- detection -----------------------------------------------------------------------------


def test_probe_priorities_are_unique() -> None:
    """The priority rule (docs/python-api.md, "Detection"), part 1: no two probes share a
    priority (the transport wrappers' included), so the order never depends on which module
    registered first. Part 2, a probe runs after every probe whose documents it could also
    match, is the test below run for every dialect: a new probe that claims an older
    dialect's document, or runs after a probe that claims its own, fails it."""
    priorities = [p for p, _, _ in probe_table()]
    assert len(priorities) == len(set(priorities)), f"two probes share a priority: {sorted(priorities)}"


@pytest.mark.parametrize("d", DIALECTS, ids=_name)
def test_its_documents_are_detected_as_itself(d: Dialect) -> None:
    wrong = [(label, envglot.detect(doc)) for label, doc in samples(d) if not detected_as(doc, d.name)]
    assert not wrong, wrong


# -- round trips in its own dialect -------------------------------------------------------------


@pytest.mark.parametrize("d", WRITERS, ids=_name)
def test_its_goldens_write_back(d: Dialect) -> None:
    """Read -> write the same dialect: JSON-equal, unless the case pins the write (then the pinned file)."""
    for case in cases(d.name):
        out = envglot.convert(case.data, from_=d.name, to=d.name, unsupported="ignore")
        if d.name in case.pinned:
            pinned = msgspec.json.decode(case.expected_path(d.name).read_bytes())
            assert same_json(out, pinned), case
        else:
            assert same_json(out, case.data), case
        assert envglot.validate(out, d.name) == [], case


@pytest.mark.parametrize("d", WRITERS, ids=_name)
def test_its_goldens_round_trip_with_preserve(d: Dialect) -> None:
    """With ``preserve`` a write into the same dialect and back restores the document, JSON-equal."""
    for case in cases(d.name):
        there = envglot.convert(case.data, from_=d.name, to=d.name, preserve=True, unsupported="ignore")
        back = envglot.convert(there, from_=d.name, to=d.name, preserve=True, unsupported="ignore")
        assert same_json(back, case.data), case


# -- the matrix: every source x every writable target -----------------------------------------


@pytest.mark.parametrize("pair", PAIRS, ids=_pair_id)
def test_conversion_output_is_valid_and_detected(pair: tuple[Dialect, Dialect]) -> None:
    src, dst = pair
    for label, doc in samples(src):
        out = envglot.convert(doc, from_=src.name, to=dst.name, unsupported="ignore")
        assert envglot.validate(out, dst.name) == [], (label, out)
        assert detected_as(out, dst.name), (label, out)
        assert _ok(out, dst.name) is _ok(doc, src.name), label


@pytest.mark.parametrize("pair", PAIRS, ids=_pair_id)
def test_preserve_round_trip_restores_the_source(pair: tuple[Dialect, Dialect]) -> None:
    """The preserve intermediate is a valid target document (when the source is valid), and
    converting it back restores the source, JSON-equal (a read-only source: only the first half)."""
    src, dst = pair
    for label, doc in samples(src):
        there = envglot.convert(doc, from_=src.name, to=dst.name, preserve=True, unsupported="ignore")
        if envglot.validate(doc, src.name) == []:
            assert envglot.validate(there, dst.name) == [], (label, there)
        if src.shape.writable:
            back = envglot.convert(there, from_=dst.name, to=src.name, preserve=True, unsupported="ignore")
            assert same_json(back, doc), (label, dst.name)


@pytest.mark.parametrize("d", WRITERS, ids=_name)
def test_canonical_envelopes_write_valid_documents(d: Dialect) -> None:
    """Hypothesis-generated canonical envelopes: the writer's output validates, is detected as
    the dialect, reads back with the same outcome and satisfies the exported schema."""
    schema = json_schema(d.name)

    @SETTINGS
    @given(env=canonical_envelopes())
    def check(env: Envelope) -> None:
        out = envglot.write(env, to=d.name, unsupported="ignore")
        assert envglot.validate(out, d.name) == [], out
        assert detected_as(out, d.name), out
        assert envglot.read(out, from_=d.name).ok is env.ok
        assert_satisfies(schema, msgspec.json.decode(out))
        wire = mcp.wrap(env, d.name)
        assert wire["isError"] is (not env.ok)
        assert same_json(mcp.unwrap(wire), out)

    check()


# -- schema export --------------------------------------------------------------------------


def assert_satisfies(schema: dict[str, Any], doc: Any) -> None:
    """``doc`` satisfies ``schema`` (``jsonschema`` when installed, else required keys and object shape)."""
    if jsonschema is not None:
        errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=str)
        assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors]
        return
    assert isinstance(doc, dict)  # pragma: no cover - jsonschema is a test dependency in practice
    required = set(schema.get("required", ()))
    if not required and "$ref" in schema:
        required = set(schema["$defs"][schema["$ref"].rsplit("/", 1)[1]].get("required", ()))
    assert required <= set(doc), sorted(required - set(doc))


def _schema_documents(d: Dialect) -> list[tuple[str, bytes]]:
    """Documents of ``d`` its schema describes: valid samples without keys its wire model lacks
    (later additions of an emitter, which readers keep as extras), and envglot's writes into ``d``."""
    docs = []
    for label, doc in samples(d):
        if envglot.validate(doc, d.name) == [] and not envglot.read(doc, from_=d.name).extras:
            docs.append((label, doc))
    if d.shape.writable:
        for src in DIALECTS:
            for label, doc in samples(src):
                if envglot.read(doc, from_=src.name).extras:
                    continue
                out = envglot.convert(doc, from_=src.name, to=d.name, unsupported="ignore")
                docs.append((f"{label} -> {d.name}", out))
    return docs


@pytest.mark.parametrize("d", DIALECTS, ids=_name)
def test_it_exports_a_json_schema_its_documents_satisfy(d: Dialect) -> None:
    schema = json_schema(d.name)
    assert schema["$schema"] == SCHEMA_DIALECT
    inline = json_schema(d.name, inline=True)
    assert inline["type"] == "object" and "$ref" not in msgspec.json.encode(inline).decode()
    assert mcp.output_schema(d.name) == inline
    if jsonschema is not None:
        jsonschema.Draft202012Validator.check_schema(schema)
    docs = _schema_documents(d)
    assert docs, f"no document of {d.name} to check its schema against"
    for label, doc in docs:
        value = msgspec.json.decode(doc)
        try:
            assert_satisfies(schema, value)
            assert_satisfies(inline, value)
        except AssertionError as exc:
            raise AssertionError(f"{label}: {exc}") from None


# -- MCP ------------------------------------------------------------------------------------


def _mcp_documents(d: Dialect) -> list[tuple[str, bytes]]:
    docs = samples(d)
    if d.shape.writable:  # envglot's own writes into d, one per source sample
        docs += [
            (f"{label} -> {d.name}", envglot.convert(doc, from_=src.name, to=d.name, unsupported="ignore"))
            for src in DIALECTS
            for label, doc in samples(src)
        ]
    return docs


@pytest.mark.parametrize("d", DIALECTS, ids=_name)
def test_mcp_wrap_and_unwrap_round_trip(d: Dialect) -> None:
    """``wrap`` carries the document with ``isError`` = its failure; ``unwrap`` gives it back; the
    canonical envelope unwrapped is the one ``read`` gives."""
    for label, doc in _mcp_documents(d):
        failed = not _ok(doc, d.name)
        wire = mcp.wrap(doc, from_=d.name)
        assert wire["isError"] is failed, label
        if d.shape.writable:  # is_error reads a writable dialect's own outcome flag
            assert mcp.is_error(doc, d.name) is failed, label
        assert wire["structuredContent"] == msgspec.json.decode(doc), label
        assert same_json(mcp.unwrap(wire), doc), label
        assert same_json(mcp.unwrap(msgspec.json.encode(wire)), doc), label
        env = mcp.unwrap_envelope(wire, from_=d.name)
        assert canonical_json(env) == canonical_json(envglot.read(doc, from_=d.name)), label
        if d.shape.writable and envglot.detect(doc) == d.name:  # else a success without a marker: unwrap
            assert same_json(  # has no from_, and detection names another dialect (Shape.marked_success)
                mcp.unwrap(wire, to=d.name, unsupported="ignore"),
                envglot.convert(doc, from_=d.name, to=d.name, unsupported="ignore"),
            ), label


def test_every_ordered_pair_is_covered() -> None:
    """The matrix above is the full product of registered sources and writable targets."""
    assert len(PAIRS) == len(DIALECTS) * len(WRITERS)
    assert {d.name for d in DIALECTS} == {c.dialect for c in cases()}
    folders = {p.name for p in OWN_DIRS.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))}
    assert folders == {d.name for d in DIALECTS}, "tests/dialects/ holds one folder per registered dialect"
