"""Probe tests declared as data (``[[declare.probes.<name>.when]]``, issue 24): the vocabulary's
meaning, its schema errors, and the detections generated with the tests inline.

``tests/test_probe_needs.py`` holds the generated detections to each other on every bundled
document; here each condition is held to what it says on small top levels, through a probe's
own test (``Probe.test``) and through a registry's generated detection, which must agree.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import msgspec
import pytest

from envglot.detect import classify, detector, forced_rival
from envglot.dialect import Dialect, Facts, compile_hooks, declared_facts
from envglot.errors import MappingError
from envglot.fields import source
from envglot.registry import bundled


def _team(tmp_path: Path, probes: str, body: str = "") -> type[Dialect]:
    """A plugin-style dialect ``teamy`` whose ``[declare]`` has ``probes`` (its hooks module: ``body``,
    and the top-level keys it defines, ``KEYS``)."""
    (tmp_path / "teamy.toml").write_text(
        f'dialect = "teamy"\n\n[declare]\ndescription = "x"\n{probes}\n[fields]\nok = "$.ok"\npayload = "$.data"\n'
    )
    mod = types.ModuleType("teamy_hooks")
    mod.__file__ = str(tmp_path / "teamy_hooks.py")
    keys = "KEYS = frozenset({'ok', 'data', 'teamok', 'teamid', 'teama', 'teamb', 'teamc'})\n"
    head = "from envglot.dialect import Facts\n" + keys
    exec(compile(head + body, mod.__file__, "exec"), mod.__dict__)
    sys.modules[mod.__name__] = mod
    try:
        return compile_hooks(mod, table_file="teamy.toml")
    finally:
        del sys.modules[mod.__name__]
        declared_facts.cache_clear()


def _members(doc: bytes) -> dict[str, msgspec.Raw]:
    return msgspec.json.decode(doc, type=dict[str, msgspec.Raw])


def _evidence(cls: type[Dialect], doc: bytes) -> str | None:
    """The probe's own test and the detection generated for a registry with the dialect, which agree."""
    (probe,) = cls.probes
    present = _members(doc)
    own = probe.test(Facts(present, None if any(k.startswith("x_") for k in present) else frozenset(present)))
    d = classify(doc, bundled().adding(cls()))
    assert (d.dialect == "teamy") == (own is not None), (doc, d, own)
    return d.evidence if d.dialect == "teamy" else None


PROBE = "[declare.probes.mine]\npriority = 500\n"


@pytest.mark.parametrize(
    ("when", "fires", "misses"),
    [
        (
            'evidence = "ok"\npresent = ["teamok", "teamid"]',
            [b'{"teamok":1,"teamid":2}', b'{"teamok":1,"teamid":2,"x_other":3}'],
            [b'{"teamok":1}'],
        ),
        ('evidence = "e"\npresent = ["teamok"]\nabsent = ["teamid"]', [b'{"teamok":1}'], [b'{"teamok":1,"teamid":2}']),
        (
            'evidence = "e"\npresent_any = ["teama", "teamb"]',
            [b'{"teama":1}', b'{"teamb":1}'],
            [b'{"teamc":1}'],
        ),
        (
            'evidence = "e"\npresent = ["teamok"]\nwithin = ["teamok", "teamid", "x_unknown"]',
            [b'{"teamok":1}', b'{"teamok":1,"teamid":2}'],
            [b'{"teamok":1,"teamc":2}', b'{"teamok":1,"x_unknown":2}'],  # a key no dialect defines: no match
        ),
        (
            'evidence = "e"\ntypes = { teamok = "bool", teamid = ["null", "string"] }',
            [b'{"teamok":true,"teamid":null}', b'{"teamok":false,"teamid":"a"}'],
            [b'{"teamok":1,"teamid":null}', b'{"teamok":true,"teamid":[]}', b'{"teamok":true}'],
        ),
        (
            'evidence = "e"\ntypes = { teamok = "object", "teamok.k" = "array" }',
            [b'{"teamok":{"k":[]}}', b'{"teamok":{"k":1,"k":[1]}}'],  # the last of a repeated key
            [b'{"teamok":{"k":{}}}', b'{"teamok":{"k":[],"k":1}}', b'{"teamok":"{}"}', b'{"teamok":{}}'],
        ),
        (
            'evidence = "e"\nequals = { "teamok.v" = "two", teamid = 3 }',
            [b'{"teamok":{"v":"two"},"teamid":3}'],
            [b'{"teamok":{"v":"tw\\u006f"},"teamid":3}', b'{"teamok":{"v":"two"},"teamid":3.0}', b'{"teamok":[]}'],
        ),
        (
            'evidence = "e"\ninteger = { teamok = [200, 599], "teamid.code" = [0, 9] }',
            [b'{"teamok":200,"teamid":{"code":0}}', b'{"teamok":599,"teamid":{"code":9}}'],
            [
                b'{"teamok":600,"teamid":{"code":0}}',
                b'{"teamok":2e2,"teamid":{"code":0}}',
                b'{"teamok":"200","teamid":{"code":0}}',
                b'{"teamok":-200,"teamid":{"code":0}}',
                b'{"teamok":200,"teamid":{"code":10}}',
                b'{"teamok":200,"teamid":"x"}',
            ],
        ),
        (
            'evidence = "e"\nholds = { teamok = ["a", "b"] }\nholds_any = { teamid = ["c", "d"] }',
            [b'{"teamok":{"a":1,"b":null},"teamid":{"d":1}}'],
            [b'{"teamok":{"a":1},"teamid":{"d":1}}', b'{"teamok":{"a":1,"b":2},"teamid":{}}', b'{"teamok":[]}'],
        ),
    ],
    ids=["present", "absent", "present_any", "within", "types", "nested-types", "equals", "integer", "holds"],
)
def test_each_condition_means_what_it_says(tmp_path: Path, when: str, fires: list[bytes], misses: list[bytes]) -> None:
    cls = _team(tmp_path, f"{PROBE}[[declare.probes.mine.when]]\n{when}\n")
    for doc in fires:
        assert _evidence(cls, doc) is not None, doc
    for doc in misses:
        assert _evidence(cls, doc) is None, doc


def test_alternatives_are_tried_in_order_and_name_their_evidence(tmp_path: Path) -> None:
    cls = _team(
        tmp_path,
        PROBE + "when = [\n"
        '  { evidence = "first", present = ["teama"] },\n'
        '  { evidence = "second", present = ["teamb"] },\n]\n',
    )
    assert cls.probes[0].needs == (frozenset({"teama"}), frozenset({"teamb"}))  # derived from when
    assert _evidence(cls, b'{"teama":1,"teamb":2}') == "first"
    assert _evidence(cls, b'{"teamb":2}') == "second"


def test_a_declared_probe_and_a_python_probe_run_side_by_side(tmp_path: Path) -> None:
    """A probe that cannot be said as data stays the hooks module's function."""
    cls = _team(
        tmp_path,
        PROBE + 'when = [{ evidence = "data", present = ["teama"] }]\n'
        '[declare.probes.code]\npriority = 501\nneeds = [["teamb"]]\n',
        "def code(f: Facts) -> str | None:\n    return 'code' if f.equals('teamb', b'7') else None\n",
    )
    reg = bundled().adding(cls())
    assert classify(b'{"teamb":7}', reg).evidence == "code" and classify(b'{"teama":1}', reg).evidence == "data"
    assert forced_rival(reg, "legacy-v1")(_members(b'{"teamb":7}')) is reg.get("teamy")


@pytest.mark.parametrize(
    ("probes", "body", "said", "path"),
    [
        (PROBE + 'when = [{ evidence = "e", present = "k" }]', "", "Expected `array`", "probes.mine.when[0].present"),
        (PROBE + 'when = [{ evidence = "e", typo = ["k"] }]', "", "unknown field `typo`", "probes.mine.when[0]"),
        (
            PROBE + 'when = [{ evidence = "e", types = { k = "int" } }]',
            "",
            "Invalid enum value 'int'",
            "probes.mine.when[0].types",
        ),
        (PROBE + 'when = [{ evidence = "e", holds = { k = [] } }]', "", "holds.k is empty", ".when[0].holds.k"),
        (PROBE + 'when = [{ evidence = "e", within = [] }]', "", "within is empty", ".when[0].within"),
        (PROBE + 'when = [{ evidence = "e", equals = { "a.b.c" = 1 } }]', "", "'a.b.c' is no member", ".equals"),
        (PROBE + 'when = [{ evidence = "e", holds = { "a.b" = ["c"] } }]', "", "'a.b' is no top-level key", ".holds"),
        (PROBE + 'when = [{ evidence = "e", integer = { k = [5, 1] } }]', "", "[5, 1] is no range", ".integer"),
        (PROBE + 'when = [{ evidence = "e", integer = { k = [-1, 1] } }]', "", "[-1, 1] is no range", ".integer"),
        (PROBE + 'needs = [["k"]]\nwhen = [{ evidence = "e", present = ["k"] }]', "", "derived from when", ".needs"),
        (
            PROBE + 'when = [{ evidence = "e", present = ["k"] }]',
            "def mine(f: Facts) -> None:\n    return None\n",
            "one home",
            ".mine.when",
        ),
        (PROBE + 'when = [{ evidence = "e" }]', "", "has no condition", ".when[0]"),
    ],
    ids=[
        "wrong-type",
        "unknown-condition",
        "unknown-json-type",
        "empty-holds",
        "empty-within",
        "too-deep",
        "holds-nested",
        "reversed-range",
        "negative-range",
        "needs-beside-when",
        "function-beside-when",
        "no-condition",
    ],
)
def test_a_broken_declared_test_names_the_file_and_the_key(
    tmp_path: Path, probes: str, body: str, said: str, path: str
) -> None:
    with pytest.raises(MappingError) as err:
        _team(tmp_path, probes, body)
    assert str(tmp_path / "teamy.toml") in str(err.value) and said in str(err.value)
    assert err.value.path is not None and err.value.path.startswith("$.declare") and path in err.value.path


def test_the_generated_detections_inline_the_bundled_tests_and_decode_each_member_once() -> None:
    """No bundled probe runs through Facts; an object member has one local, decoded on first use."""
    reg = bundled()
    for fn in (detector(reg), *(forced_rival(reg, name) for name in reg.names())):
        text = source(fn)
        assert "Facts(" not in text, text
        for member in ("meta", "data", "error"):
            decodes = text.count(f"(m_{member} := None if (r := p.get({member!r})) is None else obj_m_{member}(r))")
            assert decodes == text.count(f"m_{member} if m_{member} is not UNREAD")
    assert "m_meta = m_data = m_error = UNREAD" in source(forced_rival(reg, "errorcode"))


def test_the_compiled_dump_has_the_generated_detections(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVGLOT_DUMP_COMPILED", str(tmp_path))
    cls = _team(tmp_path, PROBE + 'when = [{ evidence = "e", present = ["teama"] }]\n')
    reg = bundled().adding(cls())
    forced_rival(reg, "errorcode")
    detector(reg)
    assert cls.probes[0].test(Facts({}, frozenset())) is None
    names = {p.name for p in tmp_path.glob("*.py")}
    assert {"probe_teamy_mine.py"} <= names and any(n.startswith("rival_errorcode_") for n in names), names
    assert any(n.startswith("detect_") for n in names), names


def _wire_keys(struct: type[msgspec.Struct]) -> list[str]:
    return [f.encode_name for f in msgspec.structs.fields(struct)]


def test_the_key_lists_written_in_probes_are_the_wire_structs_keys() -> None:
    """result's and response-v2's declared tests spell out key lists their wire Structs define:
    the lists stay those Structs' keys (plus the residue's top-level slot), so neither drifts."""
    from envglot.dialects import response_v2, result

    reg = bundled()
    res = reg.get("result")
    slot = res.shape.residue.removeprefix("$.")
    keys = [*_wire_keys(result.WIRE), slot]
    own = [k for k in keys if k not in ("success", "error", slot)]
    (probe,) = res.probes
    assert [sorted(w.within) for w in probe.when] == [sorted(keys)] * 2
    assert sorted(probe.when[1].present_any) == sorted(own)
    rv2 = reg.get("response-v2")
    (unmarked,) = [p for p in rv2.probes if p.when and "meta" in p.when[0].holds_any]
    meta = [k for k in _wire_keys(response_v2.Meta) if k != "pagination"]
    assert sorted(unmarked.when[0].holds_any["meta"]) == sorted(meta)
