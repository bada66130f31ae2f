"""A team's dialect as an installed plugin (``envglot.dialects`` entry points, issue 24).

Each test installs a real distribution in a temporary folder: a package with a dialect
module and its table, and a ``*.dist-info`` whose ``entry_points.txt`` names the module, put
on ``sys.path`` where ``importlib.metadata`` finds it. The base registry is built again for
each test (:func:`envglot.registry.reset`).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec
import pytest

import envglot
from envglot.detect import classify, detect_bytes, forced_rival
from envglot.errors import EnvglotError
from envglot.limits import members_of
from envglot.mappings import default_mappings, load_mappings
from envglot.registry import PLUGIN_GROUP, bundled, reset, shipped

MODULE = '''
"""teamx: {"teamx": ok, "result": payload, "fault": {"code", "message"}}."""

from __future__ import annotations

from msgspec import Raw, Struct

from envglot import canonical as c
from envglot.codes import missing_problem, problem_message, read_problem, write_plan
from envglot.context import Context
from envglot.dialect import Dialect, Facts, Probe
from envglot.fields import Build, Let, Reading, Writing
from envglot.mappings import DialectMap
from envglot.wire import ABSENT, WireDecoder


class Fault(Struct, forbid_unknown_fields=True):
    code: str
    message: str


class Envelope(Struct, forbid_unknown_fields=True, omit_defaults=True):
    teamx: bool
    result: Raw = ABSENT
    fault: Fault | None = None


def _ok(w: Envelope) -> bool:
    return w.teamx


def _payload(w: Envelope) -> Raw | None:
    return None if w.result is ABSENT else w.result


def _problems(w: Envelope, dmap: DialectMap, ctx: Context) -> tuple[c.Problem, ...]:
    if w.fault is None:
        return ()
    return (read_problem(dmap, w.fault.code, ctx, "$.fault.code", message=w.fault.message),)


def _result(payload: Raw | None) -> Raw:
    return ABSENT if payload is None else payload


def _fault(
    ok: bool, problems: tuple[c.Problem, ...], summary: str | None, ctx: Context, dmap: DialectMap
) -> Fault | None:
    if ok:
        return None
    p = problems[0] if problems else missing_problem(summary, ctx, dmap)
    return Fault(code=write_plan(p, dmap, ctx, 0).code, message=problem_message(p, summary, ctx, dmap, 0))


def _probe(f: Facts) -> str | None:
    return "teamx" if f.is_bool("teamx") else None


READING = Reading(
    WireDecoder(Envelope, "teamx", "$._envglot"),
    Let("ok", _ok, pure=True),
    Let("payload", _payload, pure=True),
    Let("problems", _problems),
)
WRITING = Writing(
    Let("result", _result, pure=True),
    Let("fault", _fault),
    Build.of("out", Envelope, teamx="ok", result="result", fault="fault"),
)


class Teamx(Dialect):
    name = "teamx"
    description = "Team X's envelope: teamx/result/fault"
    wire = Envelope
    table_file = "teamx.toml"
    probes = (Probe(50, _probe, "`teamx`, a boolean"),)
    reading = READING
    writing = WRITING
'''


def _table(name: str) -> str:
    rows = [f'dialect = "{name}"', "", "[fields]"]
    rows += [f'{k} = "{v}"' for k, v in (("ok", "$.teamx"), ("payload", "$.result"), ("problems", "$.fault"))]
    rows += ['"problem.code" = "$.fault.code"', '"problem.message" = "$.fault.message"']
    for cat in sorted(default_mappings().categories):
        rows += ["", f"[codes.{cat.upper()}]", f'category = "{cat}"']
        rows += ["", "[[write]]", f'category = "{cat}"', f'code = "{cat.upper()}"']
    return "\n".join(rows) + "\n"


Install = Callable[..., Path]


@pytest.fixture
def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Install]:
    """``install(package, module_source, entry="teamx", table=...)``: a distribution on ``sys.path``."""
    monkeypatch.delenv("ENVGLOT_NO_PLUGINS", raising=False)
    added: list[str] = []

    def _install(package: str, source: str, entry: str = "teamx", table: str | None = None) -> Path:
        root = tmp_path / package
        pkg = root / package
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "dialect.py").write_text(source)
        if table is not None:
            (pkg / "teamx.toml").write_text(table)
        info = root / f"{package}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text(f"[{PLUGIN_GROUP}]\n{entry} = {package}.dialect\n")
        monkeypatch.syspath_prepend(str(root))
        added.append(package)
        reset()  # the next bundled() finds it
        return root

    reset()
    yield _install
    for package in added:
        for mod in [m for m in sys.modules if m == package or m.startswith(f"{package}.")]:
            del sys.modules[mod]
    reset()


def test_a_plugin_dialect_converts_both_ways(install: Install) -> None:
    install("teamx_ok", MODULE, table=_table("teamx"))
    reg = bundled()
    assert "teamx" in reg and reg.get("teamx").plugin == "teamx"
    assert "teamx" not in shipped()  # envglot.DIALECTS lists the bundled modules' dialects only
    m = load_mappings()
    assert m.registry is reg
    doc = b'{"teamx":false,"fault":{"code":"NOT_FOUND","message":"no doc-9"}}'
    assert detect_bytes(doc, reg) == "teamx"
    out = envglot.convert(doc, to="errorcode", mappings=m)
    assert msgspec.json.decode(out)["error"]["message"] == "no doc-9"
    back = envglot.convert(out, to="teamx", mappings=m)
    assert msgspec.json.decode(back) == msgspec.json.decode(doc)
    ok = envglot.convert(b'{"success":true,"value":{"id":7}}', to="teamx", mappings=m)
    assert msgspec.json.decode(ok) == {"teamx": True, "result": {"id": 7}}
    # a bundled document is still read by its bundled dialect
    assert detect_bytes(b'{"success":true,"value":1}', reg) == "result"


HOOKS_MODULE = (
    MODULE[: MODULE.index("class Teamx(Dialect):")]
    .replace("from envglot.dialect import Dialect, Facts, Probe", "from envglot.dialect import Facts, compile_hooks")
    .replace("def _probe(f: Facts)", "def probe(f: Facts)")
    + """WIRE = Envelope
DIALECT = compile_hooks(__name__, table_file="teamx.toml")
"""
)
"""The same dialect as a declaration (``[declare]`` in its table) plus a hooks module."""

HOOKS_DECLARE = """
[declare]
description = "Team X's envelope: teamx/result/fault"

[declare.probes.probe]
priority = 50
doc = "`teamx`, a boolean"
needs = [["teamx"]]
"""


def test_a_plugin_declared_in_its_table_with_a_hooks_module_converts_both_ways(install: Install) -> None:
    table = _table("teamx").replace('dialect = "teamx"\n', 'dialect = "teamx"\n' + HOOKS_DECLARE, 1)
    install("teamx_hooks", HOOKS_MODULE, table=table)
    reg = bundled()
    d = reg.get("teamx")
    assert d.plugin == "teamx" and d.description == "Team X's envelope: teamx/result/fault"
    assert [(p.priority, p.doc, p.needs) for p in d.probes] == [(50, "`teamx`, a boolean", (frozenset({"teamx"}),))]
    assert d.keys == {"teamx", "result", "fault"}  # derived from WIRE
    m = load_mappings()
    doc = b'{"teamx":false,"fault":{"code":"NOT_FOUND","message":"no doc-9"}}'
    assert detect_bytes(doc, reg) == "teamx"
    # its needs declared, a forced source still finds its failure (and skips a document without the key)
    assert classify(doc, reg).dialect == "teamx"
    assert forced_rival(reg, "legacy-v1")(members_of(doc)) is reg.get("teamx")
    assert forced_rival(reg, "legacy-v1")({"found": msgspec.Raw(b"true")}) is None
    out = envglot.convert(doc, to="errorcode", mappings=m)
    back = envglot.convert(out, to="teamx", mappings=m)
    assert msgspec.json.decode(back) == msgspec.json.decode(doc)


def _skipped(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "envglot" and r.levelno == logging.WARNING]


def test_a_plugin_that_fails_to_import_is_skipped_with_one_warning(
    install: Install, caplog: pytest.LogCaptureFixture
) -> None:
    install("teamx_broken", "raise RuntimeError('boom at import')\n", entry="broken")
    with caplog.at_level(logging.WARNING, logger="envglot"):
        reg = bundled()
    assert reg.names() == shipped().names()
    (msg,) = _skipped(caplog)
    assert "broken = teamx_broken.dialect" in msg
    assert "RuntimeError: boom at import" in msg


def test_a_plugin_module_without_a_dialect_is_skipped(install: Install, caplog: pytest.LogCaptureFixture) -> None:
    install("teamx_empty", "X = 1\n", entry="empty")
    with caplog.at_level(logging.WARNING, logger="envglot"):
        assert bundled().names() == shipped().names()
    (msg,) = _skipped(caplog)
    assert "empty = teamx_empty.dialect" in msg and "defines no Dialect" in msg


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (('name = "teamx"', 'name = "result"'), "'result' already names the dialect result"),
        (("description =", 'aliases = ("adr-003",)\n    description ='), "'adr-003' already names the dialect result"),
        (
            ("    table_file =", '    keys = frozenset({"success", "error"})\n    table_file ='),
            "are all keys of dialects",
        ),
    ],
    ids=["name", "alias", "detection-keys"],
)
def test_a_plugin_that_clashes_with_a_bundled_dialect_is_refused(
    install: Install, caplog: pytest.LogCaptureFixture, change: tuple[str, str], why: str
) -> None:
    source = MODULE.replace(*change)
    assert source != MODULE
    install("teamx_clash", source, table=_table("teamx"))
    with caplog.at_level(logging.WARNING, logger="envglot"):
        reg = bundled()
    assert reg.names() == shipped().names()
    assert reg.get("result") is shipped().get("result")  # the bundled dialect keeps its place
    (msg,) = _skipped(caplog)
    assert "teamx = teamx_clash.dialect" in msg and why in msg


def test_a_plugin_without_a_readable_table_is_skipped(install: Install, caplog: pytest.LogCaptureFixture) -> None:
    install("teamx_notable", MODULE, table=_table("other"))
    with caplog.at_level(logging.WARNING, logger="envglot"):
        assert "teamx" not in bundled()
    (msg,) = _skipped(caplog)
    assert "its table cannot be read" in msg and "dialect = 'other', expected 'teamx'" in msg


def test_envglot_no_plugins_loads_none(install: Install, monkeypatch: pytest.MonkeyPatch) -> None:
    install("teamx_off", MODULE, table=_table("teamx"))
    monkeypatch.setenv("ENVGLOT_NO_PLUGINS", "1")
    assert "teamx" not in bundled()
    assert "teamx_off.dialect" not in sys.modules  # not even imported
    monkeypatch.delenv("ENVGLOT_NO_PLUGINS")
    reset()
    assert "teamx" in bundled()


@pytest.mark.parametrize(("padding", "found"), [(100_000, True), ((1 << 20) + 10, False)])
def test_the_plugin_scan_reads_the_first_mib_of_entry_points(install: Install, padding: int, found: bool) -> None:
    """The scan that decides whether to import ``importlib.metadata`` reads an ``entry_points.txt``
    in reads of 64 KiB up to its first MiB: a group named after 100 kB is found, after a MiB not."""
    root = install("teamx_far", MODULE, table=_table("teamx"))
    info = root / "teamx_far-1.0.dist-info" / "entry_points.txt"
    info.write_text("# " + "x" * padding + "\n" + info.read_text())
    assert ("teamx" in bundled()) is found


def test_a_plugin_probe_runs_after_every_bundled_one(install: Install) -> None:
    """Even a plugin probe of priority 1 that claims any ``success`` document never takes a
    bundled dialect's document: plugin probes run after every bundled one."""
    greedy = MODULE.replace(
        'return "teamx" if f.is_bool("teamx") else None',
        'return "teamx" if f.has("teamx") or f.has("success") else None',
    ).replace("Probe(50,", "Probe(1,")
    assert greedy.count("Probe(1,") == 1 and 'f.has("success")' in greedy
    install("teamx_greedy", greedy, table=_table("teamx"))
    reg = bundled()
    assert "teamx" in reg
    assert detect_bytes(b'{"success":true,"value":1}', reg) == "result"
    assert (
        detect_bytes(b'{"success":false,"data":null,"error":{"code":"x_not_found","message":"m"}}', reg) == "errorcode"
    )
    assert detect_bytes(b'{"teamx":true,"result":1}', reg) == "teamx"


def test_a_plugin_failure_is_detected_by_a_forced_source(install: Install) -> None:
    """A plugin's probe declares no needs (``Probe.needs``): a forced source's check for another
    dialect's failure runs detection in full, which finds the plugin's failure (issue 23)."""
    install("teamx_pkg", MODULE, table=_table("teamx"))
    reg = bundled()
    doc = b'{"teamx":false,"fault":{"code":"NOT_FOUND","message":"no task t-1"}}'
    assert forced_rival(reg, "problem-json")(members_of(doc)) is reg.get("teamx")
    assert classify(doc, reg).dialect == "teamx"
    m = load_mappings()
    assert m.registry is reg
    for src in ("legacy-v1", "problem-json", "dotbot"):
        try:
            out = envglot.convert(doc, to="errorcode", from_=src, mappings=m, unsupported="ignore")
        except EnvglotError:  # refused: never a success
            continue
        assert msgspec.json.decode(out)["success"] is False
    conv = envglot.conversion(doc, to="errorcode", from_="legacy-v1", mappings=m)
    assert msgspec.json.decode(conv.output)["success"] is False


def test_a_probe_declaring_empty_needs_is_refused(install: Install, caplog: pytest.LogCaptureFixture) -> None:
    """``needs = []`` would say the probe never fires (a forced source would then skip it): refused."""
    declare = HOOKS_DECLARE.replace('needs = [["teamx"]]', "needs = []")
    assert "needs = []" in declare
    install(
        "teamx_empty",
        HOOKS_MODULE,
        table=_table("teamx").replace('dialect = "teamx"\n', 'dialect = "teamx"\n' + declare, 1),
    )
    with caplog.at_level(logging.WARNING, logger="envglot"):
        reg = bundled()
    assert "teamx" not in reg
    (msg,) = _skipped(caplog)
    assert "needs is empty" in msg


OLD_SEAL = """
SEALED = []


def seal(doc, top=None):
    SEALED.append(len(doc))
    return doc

"""
"""A hooks module's ``seal`` as written before the hook took ``minified``."""


@pytest.mark.parametrize("fused", [True, False])
def test_a_hooks_modules_seal_without_minified_is_still_called(install: Install, fused: bool) -> None:
    """A preserve residue placed into a plugin dialect whose hooks module's ``seal(doc, top=None)``
    predates ``minified``: the seal is called without it, and the residue restores the original."""
    table = _table("teamx").replace('dialect = "teamx"\n', 'dialect = "teamx"\n' + HOOKS_DECLARE, 1)
    source = HOOKS_MODULE.replace("WIRE = Envelope\n", OLD_SEAL + "WIRE = Envelope\n", 1)
    install("teamx_seal", source, table=table)
    import teamx_seal.dialect as hooks  # type: ignore[import-not-found]

    m = load_mappings()
    doc = (
        b'{"schema_id":"dotbot-mcp-response@1","tool":"solution.structure","version":"1.0.0","status":"ok",'
        b'"summary":"Found 1 project.","data":{"projects":[{"alias":"be","name":"Axiome.Bot"}]},'
        b'"warnings":[],"errors":[],"audit":{"timestamp":"2026-01-02T13:57:00Z","duration_ms":45,"source":"s.ps1","host":"warp"}}'
    )
    conv = envglot.Converter(to="teamx", from_="dotbot", preserve=True, mappings=m)
    out = conv.convert_bytes(doc) if fused else envglot.convert(doc, to="teamx", preserve=True, mappings=m)
    assert hooks.SEALED, "the hooks module's seal was not called"
    back = envglot.Converter(to="dotbot", from_="teamx", preserve=True, mappings=m).convert_bytes(out)
    assert msgspec.json.decode(back) == msgspec.json.decode(doc)
