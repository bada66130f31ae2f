"""The rival detection the straight entry asks after a forced source's reader read a document
(``envglot.detect.read_rival``, issues 24 and 28): generated with what the read proves
(``read_facts``: the wire Struct's required members, their JSON types, a required object's own
required keys) and the transport wrappers' keys absent, it answers as ``forced_rival`` for every
document it is asked of (a success), while making fewer tests; where ``forced_rival`` names a
dialect whose reader's outcome is the source's own member (``outcome_member``), which reads that
success too, it answers ``None``.

The documents: the benchmark corpus's tiny records of every bundled dialect, and each record of a
source with members of other dialects' records laid over it (seeded), kept when the source's
reader reads them without an error and they hold no wrapper key (what the entry asks the rival
of).
"""

from __future__ import annotations

import functools
import importlib.util
import random
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec
import pytest

from envglot import Converter
from envglot.context import Context
from envglot.detect import (
    JSONRPC_MARKER,
    MCP_MARKERS,
    forced_rival,
    outcome_member,
    read_facts,
    read_keys,
    read_rival,
)
from envglot.diagnostics import DISCARD
from envglot.dialect import get_dialect
from envglot.errors import EnvglotError
from envglot.fields import source
from envglot.limits import top_members
from envglot.mappings import default_mappings
from envglot.probetests import Lit, rules_out
from envglot.registry import bundled

_WRAPPER_KEYS = frozenset((*MCP_MARKERS, JSONRPC_MARKER))
"""The members the straight entry sends to the general path (unwrapped there) before it asks the rival."""
ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_corpus", ROOT / "benchmarks" / "corpus.py")
assert _spec is not None and _spec.loader is not None
_corpus = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _corpus  # its dataclasses look their module up
_spec.loader.exec_module(_corpus)


@pytest.fixture(scope="module")
def records() -> dict[str, list[bytes]]:
    corp = _corpus.generate({"tiny": 60}, seed=20260101)
    return {d: corp.payloads(d, "tiny") for d in _corpus.DIALECTS}


def _documents(src: str, records: dict[str, list[bytes]]) -> list[dict[str, msgspec.Raw]]:
    """Members of the documents src's reader reads without an error, no wrapper key among them."""
    rnd = random.Random(src)
    others = [r for d, rs in records.items() for r in rs]
    docs = list(others)
    for base in records[src]:
        for _ in range(8):
            top = top_members(base)
            extra = top_members(rnd.choice(others))
            for k in rnd.sample(sorted(extra), rnd.randint(1, len(extra))):
                top[k] = extra[k]
            docs.append(msgspec.json.encode(top))
    reader = get_dialect(src).steps()[0]
    assert reader is not None
    out = []
    for doc in docs:
        try:
            reader.decoder.decode(doc)
        except (EnvglotError, msgspec.MsgspecError):
            continue
        members = top_members(doc)
        if not _checked(members, reader.checks):  # the reading's steps refuse it
            continue
        if _WRAPPER_KEYS.isdisjoint(members):
            out.append(members)
    return out


def _checked(members: dict[str, msgspec.Raw], checks: Mapping[str, Any]) -> bool:
    """Whether each member ``checks`` names, when present, decodes by its type."""
    try:
        for key, t in checks.items():
            if key in members:
                msgspec.json.decode(members[key], type=t)
    except msgspec.ValidationError:
        return False
    return True


@pytest.mark.parametrize("src", bundled().names())
def test_the_rival_after_a_read_answers_as_the_forced_rival(src: str, records: dict[str, list[bytes]]) -> None:
    reg = bundled()
    dialect = get_dialect(src)
    after, plain = read_rival(reg, dialect, _WRAPPER_KEYS), forced_rival(reg, src)
    docs = _documents(src, records)
    assert len(docs) >= 60, len(docs)
    answers = [(None if after is None else after(m), plain(m)) for m in docs]  # None: the entry asks nothing
    assert all(_same_answer(src, m, a, b) for m, (a, b) in zip(docs, answers, strict=True)), [
        (sorted(m), a, b) for m, (a, b) in zip(docs, answers, strict=True) if not _same_answer(src, m, a, b)
    ][:3]
    if read_facts(dialect) and after is not None:  # what the read proves leaves tests out
        assert len(source(after)) < len(source(plain))


def _read_ok(dialect: str, doc: bytes) -> bool | None:
    """Whether ``dialect``'s reader reads ``doc`` as a success (``None``: it refuses it)."""
    m = default_mappings()
    try:
        return get_dialect(dialect).read(doc, Context(m, DISCARD, m[dialect])).ok
    except EnvglotError:
        return None


def _reads_failure(dialect: str, doc: bytes) -> bool:
    """Whether ``dialect``'s reader reads ``doc`` as a failure (not when it refuses it)."""
    return _read_ok(dialect, doc) is False


def _same_answer(src: str, m: dict[str, msgspec.Raw], a: Any, b: Any) -> bool:
    """The read's rival ``a`` and the forced rival ``b`` decide alike: the same dialect, or (the
    entry asks only where ``src``'s reader read a success: ``Reading.succeeds``,
    ``outcome_member``) ``None`` where ``src`` reads no success or ``b`` reads no failure."""
    if a is b:
        return True
    doc = msgspec.json.encode(m)
    return a is None and (_read_ok(src, doc) is not True or not _reads_failure(b.name, doc))


def test_legacy_successes_hold_what_its_reading_declares(records: dict[str, list[bytes]]) -> None:
    """Every document legacy-v1's reader reads as a success holds each member of its
    ``Reading.succeeds`` with that value when present (what its rival is planned knowing); the
    documents: ``_documents``'s, each also with ``success`` set to each JSON boolean."""
    reading = get_dialect("legacy-v1").steps()[0]
    assert reading is not None and reading.succeeds == {"success": True}
    seen = {True: 0, False: 0}
    for m in _documents("legacy-v1", records):
        for flag in (None, b"true", b"false"):
            top = dict(m) if flag is None else {**m, "success": msgspec.Raw(flag)}
            doc = msgspec.json.encode(top)
            ok = _read_ok("legacy-v1", doc)
            if ok is None:
                continue
            seen[ok] += 1
            if ok:
                assert all(k not in top or msgspec.json.decode(top[k]) == v for k, v in reading.succeeds.items())
    assert seen[True] > 50 and seen[False] > 50, seen


def _holds_one(top: dict[str, msgspec.Raw], fails: Mapping[str, tuple[Any, ...]]) -> bool:
    """Whether ``top`` holds one of ``fails``' members with one of its values (a type: its JSON type)."""
    for key, values in fails.items():
        if key in top:
            value = msgspec.json.decode(top[key])
            if any(type(value) is v if isinstance(v, type) else value == v and type(value) is type(v) for v in values):
                return True
    return False


def test_legacy_failures_hold_what_its_reading_declares(records: dict[str, list[bytes]]) -> None:
    """Every document legacy-v1's reader reads as a failure holds one member of its
    ``Reading.fails`` as declared (``success: false`` or a string ``error``: what another source's
    rival is planned knowing); the documents: ``_documents``'s, each with ``success`` absent, true
    or false and ``error`` absent, null, empty or a string (a document holding none of them is
    never a failure to it: the declaration is not narrower than the reader)."""
    reading = get_dialect("legacy-v1").steps()[0]
    assert reading is not None and reading.fails == {"success": (False,), "error": (str,)}
    seen = {True: 0, False: 0}
    for m in _documents("legacy-v1", records)[:80]:
        for flag in (None, b"true", b"false"):
            for error in (None, b"null", b'""', b'"boom"'):
                top = {k: v for k, v in m.items() if k not in ("success", "error")}
                if flag is not None:
                    top["success"] = msgspec.Raw(flag)
                if error is not None:
                    top["error"] = msgspec.Raw(error)
                ok = _read_ok("legacy-v1", msgspec.json.encode(top))
                if ok is None:
                    continue
                seen[ok] += 1
                if not ok:
                    assert _holds_one(top, reading.fails), top
    assert seen[True] > 50 and seen[False] > 50, seen


def test_a_declared_failure_rule_ruled_out_leaves_the_rival_silent() -> None:
    """errorcode's success (``success: true``, ``error`` an object or null) rules out both of
    legacy-v1's failure members, so neither rival after errorcode's read names legacy-v1, where the
    forced rival (the general path's) still does; and detection's planner rules out one JSON text
    where another is known (``probetests.rules_out``)."""
    reg = bundled()
    dialect = get_dialect("errorcode")
    doc = b'{"success":true,"data":{"a":1},"error":null}'
    members = top_members(doc)
    assert forced_rival(reg, "errorcode")(members) is get_dialect("legacy-v1")
    assert _read_ok("legacy-v1", doc) is True
    after = read_rival(reg, dialect, _WRAPPER_KEYS)
    assert after is not None and after(members) is None
    assert read_rival(reg, dialect, _WRAPPER_KEYS, True) is None
    known = [Lit("has", "success", None), Lit("value", "success", ("equals", b"true"))]
    assert rules_out(known, [Lit("value", "success", ("equals", b"false"))])
    assert not rules_out(known, [Lit("value", "success", ("equals", b"true"))])
    assert not rules_out([Lit("has", "success", None)], [Lit("value", "success", ("equals", b"false"))])


def test_legacy_rival_skips_dialects_that_read_no_failure_in_its_successes() -> None:
    """code-graph, errorcode, response-v2 and result read their outcome from ``success`` as it
    is: in a document legacy-v1 reads as a success, holding ``success``, it is ``true`` and none
    of them reads a failure. legacy-v1's rival after a read names none of them there, and no
    longer decodes ``data`` for code-graph's evidence; the forced rival (the general path's) does."""
    reg = bundled()
    after, plain = read_rival(reg, get_dialect("legacy-v1"), _WRAPPER_KEYS), forced_rival(reg, "legacy-v1")
    assert after is not None
    cg = top_members(b'{"success":true,"data":{"requestId":"r","generatedAt":"2026-01-01T00:00:00Z"}}')
    assert plain(cg) is get_dialect("code-graph")
    assert after(cg) is None
    assert "obj_m_data" in source(plain) and "obj_m_data" not in source(after)
    dotbot = top_members(b'{"schema_id":"dotbot-mcp-response@1","status":"error"}')  # dotbot's outcome: status
    assert after(dotbot) is plain(dotbot) is get_dialect("dotbot")


@pytest.mark.parametrize("src", bundled().names())
def test_the_rival_after_a_strict_read_answers_as_the_forced_rival(src: str, records: dict[str, list[bytes]]) -> None:
    """Asked only of documents the strict decode of ``src``'s reader reads (no key but its wire
    Struct's: ``read_keys``), the rival planned knowing it answers as the forced rival."""
    reg = bundled()
    dialect = get_dialect(src)
    keys = read_keys(dialect)
    after, plain = read_rival(reg, dialect, _WRAPPER_KEYS, True), forced_rival(reg, src)
    if keys is None:  # no wire Struct: nothing more proved than by any read
        assert (after is None) is (read_rival(reg, dialect, _WRAPPER_KEYS) is None)
        return
    reader = dialect.steps()[0]
    assert reader is not None
    strict = reader.decoder.decoder().decode
    docs = []
    for m in _documents(src, records):
        doc = msgspec.json.encode(m)
        try:
            strict(doc)
        except msgspec.MsgspecError:
            continue
        assert set(m) <= keys
        docs.append(m)
    assert len(docs) >= 20, len(docs)
    assert all(_same_answer(src, m, None if after is None else after(m), plain(m)) for m in docs)


@pytest.mark.parametrize("src", bundled().names())
def test_the_rival_after_a_plain_strict_read_answers_as_the_forced_rival(
    src: str, records: dict[str, list[bytes]]
) -> None:
    """Asked only of documents without a backslash that ``src``'s strict decode reads and whose
    reading raises nothing (its checks' held values known: ``read_facts(..., plain=True)``), the
    rival answers as the forced rival; response-v2's is then silent (its version marker holds)."""
    reg = bundled()
    dialect = get_dialect(src)
    if read_keys(dialect) is None:
        return
    after, plain = read_rival(reg, dialect, _WRAPPER_KEYS, True, plain=True), forced_rival(reg, src)
    strict = dialect.steps()[0].decoder.decoder().decode  # type: ignore[union-attr]
    read = Converter(to="result" if src != "result" else "errorcode", from_=src, unsupported="ignore").convert_bytes
    docs = []
    for m in _documents(src, records):
        doc = msgspec.json.encode(m)
        try:
            strict(doc)
            read(doc)
        except (EnvglotError, msgspec.MsgspecError):
            continue
        if 92 not in doc:
            docs.append(m)
    assert len(docs) >= 20, len(docs)
    answers = [(None if after is None else after(m), plain(m)) for m in docs]
    assert all(_same_answer(src, m, a, b) for m, (a, b) in zip(docs, answers, strict=True))


def test_a_checks_held_value_is_known_to_the_rival_where_no_escape_can_spell_it() -> None:
    """response-v2's ``_version`` check (its common case holds: the body raises otherwise) proves
    ``meta.version`` is ``"response-v2"`` in every document read; detection compares the member's
    JSON text, which is the value's encoding only in a document holding no backslash: there the
    marked probe (response-v2's own, the first) fires for every document read and the rival after
    a strict read asks nothing; with an escape (``"response\\u002dv2"`` reads the same) it still
    tests, and where the forced rival names code-graph for a payload holding code-graph's keys it
    answers as that does or ``None`` (code-graph reads the same ``success`` member: a success)."""
    reg = bundled()
    dialect = get_dialect("response-v2")
    held = Lit("value", "meta.version", ("equals", b'"response-v2"'))
    assert held in read_facts(dialect, True, True) and held in read_facts(dialect, False, True)
    assert held not in read_facts(dialect, True) and held not in read_facts(dialect)
    assert read_rival(reg, dialect, _WRAPPER_KEYS, True, plain=True) is None
    after = read_rival(reg, dialect, _WRAPPER_KEYS, True)
    assert after is not None
    doc = (
        b'{"success":true,"data":{"requestId":"r1","generatedAt":"2026-01-01T00:00:00Z"},"error":null,'
        b'"meta":{"version":"response\\u002dv2"}}'
    )
    Converter(to="result", from_="response-v2").convert_bytes(doc)  # read without an error
    forced = forced_rival(reg, "response-v2")(top_members(doc))
    assert forced is get_dialect("code-graph")
    assert _same_answer("response-v2", top_members(doc), after(top_members(doc)), forced)
    for src in reg.names():  # no other bundled check's held value is a string the rival tests
        if src != "response-v2":
            assert read_facts(get_dialect(src), True, True) == read_facts(get_dialect(src), True), src


def test_the_strict_read_leaves_no_rival_for_four_sources() -> None:
    """code-graph's, dotbot's and problem-json's wire Structs hold no key another dialect's probe
    needs before their own fires, and errorcode's success leaves no dialect that could read a
    failure (those reading its ``success`` member read the success too; legacy-v1 reads one only
    where ``success`` is false or ``error`` a string, ``Reading.fails``, and errorcode's ``error``
    is an object or null): no rival is asked of a document their strict decode reads."""
    reg = bundled()
    for src in ("code-graph", "dotbot", "problem-json", "errorcode"):
        assert read_rival(reg, get_dialect(src), _WRAPPER_KEYS, True) is None, src
    for src in ("response-v2", "result"):
        assert read_rival(reg, get_dialect(src), _WRAPPER_KEYS, True) is not None, src
    assert read_keys(get_dialect("legacy-v1")) is None  # a Python reader
    assert read_keys(get_dialect("code-graph")) == {"success", "data"}


def test_a_rival_that_can_name_no_dialect_is_not_asked() -> None:
    """``read_rival`` is ``None`` exactly where its generated function would make no test (it would
    answer ``None`` for every document), and a function otherwise."""
    reg = bundled()
    for src in reg.names():
        after = read_rival(reg, get_dialect(src), _WRAPPER_KEYS)
        if after is not None:
            assert "return" in source(after).split("try:")[1].split("except")[0], src
    assert read_rival(reg, get_dialect("errorcode"), _WRAPPER_KEYS) is not None  # legacy-v1's probe may fire
    plain = forced_rival(reg, "dotbot")  # without the read's facts, the tests are made
    assert "return" in source(plain).split("try:")[1].split("except")[0]


def test_the_read_facts_of_the_bundled_sources() -> None:
    facts = read_facts(get_dialect("code-graph"))
    assert Lit("value", "success", ("types", ("bool",))) in facts
    assert any(f.kind == "holds" and f.ref == "data" and {"requestId", "generatedAt"} <= set(f.arg) for f in facts)
    # no wire Struct: what the reading's steps check (Reading.checks), each member when present
    assert read_facts(get_dialect("legacy-v1")) == {
        Lit("shape", "success", (("bool",), (), None)),
        Lit("shape", "error", (("null", "string"), (), None)),
    }
    # dotbot's reader requires schema_id, its own probe's key: no other dialect's probe can come
    # first, so no rival is asked at all
    assert read_rival(bundled(), get_dialect("dotbot"), _WRAPPER_KEYS) is None


@pytest.mark.parametrize("src", ["errorcode", "code-graph", "result", "problem-json"])
def test_a_team_dialects_probe_is_still_asked_after_a_read(
    src: str, records: dict[str, list[bytes]], tmp_path: Path
) -> None:
    """A declared dialect's probe (after every bundled one) is planned with the same facts (for a
    source whose reader requires a boolean ``success``, legacy-v1's probe answers first)."""
    from test_probe_tests import PROBE, _team

    team = _team(tmp_path, PROBE + 'when = [{ evidence = "e", present = ["teamok"], types = { success = "bool" } }]\n')
    reg = bundled().adding(team())
    after, plain = read_rival(reg, get_dialect(src), _WRAPPER_KEYS), forced_rival(reg, src)
    assert after is not None  # the team's probe may fire
    docs = _documents(src, records)
    docs += [{**m, "teamok": msgspec.Raw(b"1")} for m in docs]
    assert all(_same_answer(src, m, after(m), plain(m)) for m in docs)


_FILL = b'"' + b"x" * 600 + b'"'
"""A string that takes a ``data`` member past ``probetests.SCAN_MIN`` bytes."""


@pytest.mark.parametrize(
    ("data", "code_graph"),
    [
        (b'{"rows":%s}', False),
        (b'{"rows":%s,"requestId":"r","generatedAt":"g"}', True),
        (b'{"rows":%s,"requestId":"r"}', False),
        (b'{"rows":%s,"note":"requestId generatedAt"}', False),
        (b'{"rows":%s,"note":"\\"requestId\\",\\"generatedAt\\""}', False),
        (b'{"rows":%s,"request\\u0049d":"r","generatedAt":"g"}', True),  # a key spelled with an escape
        (b'{"rows":%s,"\\u0072equestId":"r","generatedAt":"g","note":"\\\\"}', True),
        (b'{"rows":%s,"request\\u0049d":"r","generated\\u0041t":"g"}', True),  # neither spelled plainly
        (b'{"rows":%s,"x":{"requestId":"r","generatedAt":"g"}}', False),  # not data's own keys
        (b'[%s,{"requestId":"r","generatedAt":"g"}]', False),  # no object
        (b"%s", False),
        (b'{"requestId":"r","generatedAt":"g","rows":%s}', True),  # first in the object
        (b'{"rows":%s,"requestId":"a","requestId":"r","generatedAt":"g"}', True),  # repeated
        (b'{"rows":%s,"requestId":"r","x":{"generatedAt":"g"}}', False),  # one of them only deeper
        (b'{"rows":%s,"x":"requestId","generatedAt":"g"}', False),  # one of them only a value
        (b'{ "rows" : %s , "requestId" : "r" , "generatedAt" : "g" }', True),  # spaced
        (b'{"rows":%s,"IAIAIA":"IIIIIIIIIIAAAAAAAAAA","requestId":"r","generatedAt":"g"}', True),
        (b'{"rows":%s,"IAIAIA":"IIIIIIIIIIAAAAAAAAAA","requestIdx":"r","generatedAtx":"g"}', False),
    ],
)
def test_a_large_member_searched_for_its_keys_answers_as_decoded(
    data: bytes, code_graph: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From ``SCAN_MIN`` bytes a member's object is searched for its keys' spellings before it is
    decoded (none there and no backslash: none of its keys): the rival answers as when it is
    decoded. Here an errorcode document whose ``data`` may hold code-graph's keys."""
    import envglot.probetests as probetests

    doc = b'{"success":true,"data":' + data % _FILL + b"}"
    members = top_members(doc)
    assert len(members["data"]) >= probetests.SCAN_MIN
    reg = bundled()
    rivals = forced_rival(reg, "errorcode"), read_rival(reg, get_dialect("errorcode"), _WRAPPER_KEYS)
    searched = [r(members) for r in rivals if r is not None]
    monkeypatch.setattr(probetests, "SCAN_MIN", 1 << 30)
    assert searched == [r(members) for r in rivals if r is not None]
    assert (searched[0] is not None and searched[0].name == "code-graph") is code_graph, searched
    assert searched[1:] == [None]  # code-graph reads errorcode's success as one: no failure can win


def test_a_key_is_found_by_its_rarest_byte_as_bytes_find_finds_it() -> None:
    """``occurs`` (a key searched by its rarest byte, then by ``bytes.find`` after ``_HITS``
    places) answers as ``in`` on texts holding the key anywhere, partly, or the byte many times."""
    from envglot.probetests import occurs, rarest

    rnd = random.Random(28)
    for key in (b'"requestId"', b'"generatedAt"', b'"code"', b'"x"', b'"\xc3\xa9t\xc3\xa9"', b'"a_b"'):
        at = rarest(key)
        assert 0 <= at < len(key)
        pieces = [key, key[:-1], key[1:], key[at : at + 1] * 3, b'"', b"x", b" ", key[: at + 1]]
        for _ in range(400):
            text = b"".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 30)))
            assert occurs(text, key, at) is (key in text), (key, text)
        rare = key[at : at + 1] * 40
        for text in (key + rare, rare + key, rare + key[:-1] + rare, rare + key + rare, rare):
            assert occurs(text, key, at) is (key in text), (key, text)
    assert rarest(b'"requestId"') == 8  # the capital I, not a lower-case letter or the quotes


_EC_DOCS = [
    b'{"success":true,"data":{"a":1}}',
    b'{"success":true,"data":{"a":1},"error":null}',
    b'{"success":true,"data":[1],"error":null}',
    b'{"success":true,"data":"s","error":null,"meta":null}',
    b'{"success":true,"data":{},"meta":null}',
    b'{"success":false,"data":null,"error":{"code":"E","message":"m","retryable":false}}',
    b'{"success":true,"data":{"requestId":"r","generatedAt":"g"}}',
    b'{"success":true,"data":{"requestId":"r","generatedAt":"g"},"error":null}',
    b'{"success":true,"data":{"request\\u0049d":"r","generatedAt":"g"},"error":null}',  # an escaped key
    b'{"success":true,"data":{"x":{"requestId":"r","generatedAt":"g"}}}',  # only deeper
    b'{"success":true,"data":{"requestId":"r"},"data":{"generatedAt":"g"}}',  # data repeated
    b'{"success":true,"data":{},"meta":{"tool_version":"1.0","elapsed_ms":1}}',
    b'{"success":true,"data":{},"meta":{"tool_version":"1.0","elapsed_ms":1,"version":"response-v2"}}',
    b'{"success":true,"data":{},"meta":{"tool_version":"1.0","elapsed_ms":1,"ver\\u0073ion":"response-v2"}}',
    b'{"success":true,"data":{},"meta":{"tool_version":"1.0","elapsed_ms":1,"request_id":"q"}}',
    b'{"success":true,"data":{},"meta":{"version":"response-v2"},"meta":{"tool_version":"1.0","elapsed_ms":1}}',
    b'{"success":true,"data":{},"meta":{"tool_version":"1.0","elapsed_ms":1},"meta":null}',  # meta repeated
    b'{"success":true,"data":{},"error":null,"meta":{"tool_version":"1.0","elapsed_ms":1}}',
    b'{"success":true,"data":{"version":"response-v2","meta":{"version":"response-v2"}},"meta":null}',
    b'{"success":false,"data":{},"error":{"code":"E","message":"m","retryable":true,"x":1}}',
    b'{"success":false,"data":{},"error":{"c\\u006fde":"E","message":"m","retryable":true}}',
    b'{ "success" : true , "data" : { "requestId" : "r" , "generatedAt" : "g" } , "error" : null }',
    b'{"success":true,"data":{"a":1},"error":null,"x":1}',  # a key the wire Struct does not name
    b'{"success":true,"data":1e400}',
]
"""errorcode documents (and near ones) for the rival's facts: escaped keys, repeated keys, spaces,
nested objects holding the same key names, non-object ``data``, a ``meta`` holding another
dialect's keys (the read that sets unknown members aside reads it, the strict decode does not)."""


def test_the_errorcode_rivals_answer_as_the_forced_rival_on_edge_documents(tmp_path: Path) -> None:
    """Each document errorcode's reader reads: ``read_rival`` answers as ``forced_rival``; each
    its strict decode reads: the strict ``read_rival`` too (the bundled registry, and one with a
    team's probe testing keys inside errorcode's ``meta`` and ``error``)."""
    from test_probe_tests import PROBE, _team

    dialect = get_dialect("errorcode")
    reader = dialect.steps()[0]
    assert reader is not None
    team = _team(
        tmp_path,
        PROBE
        + 'when = [{ evidence = "e", equals = { "meta.teamok" = 1 } }, '
        + '{ evidence = "f", holds = { error = ["code", "teamid"] } }, '
        + '{ evidence = "g", holds_any = { meta = ["mode", "teama"] } }]\n',
    )
    read = strict = 0
    for reg in (bundled(), bundled().adding(team())):
        plain = forced_rival(reg, "errorcode")
        after, after_strict = read_rival(reg, dialect, _WRAPPER_KEYS), read_rival(reg, dialect, _WRAPPER_KEYS, True)
        assert after is not None  # (after the strict read none may be asked: its answer is then None)
        docs = [*_EC_DOCS, *(d.replace(b'"e"', b'"e","teamid":1') for d in _EC_DOCS if b'"code"' in d)]
        docs += [d.replace(b'"elapsed_ms":1', b'"elapsed_ms":1,"teamok":1') for d in _EC_DOCS if b"elapsed" in d]
        for doc in docs:
            members = top_members(doc)
            try:
                reader.decoder.decode(doc)
            except (EnvglotError, msgspec.MsgspecError):
                continue
            read += 1
            assert _same_answer("errorcode", members, after(members), plain(members)), doc
            try:
                reader.decoder.decoder().decode(doc)
            except msgspec.MsgspecError:
                continue
            strict += 1
            got = None if after_strict is None else after_strict(members)
            assert _same_answer("errorcode", members, got, plain(members)), doc
    assert read >= 40 and strict >= 20, (read, strict)


def test_the_strict_facts_bound_a_nested_structs_keys() -> None:
    """errorcode's ``meta`` and ``error`` are Structs that forbid unknown keys: read strictly, an
    object there holds its Struct's required keys and none but its fields (``shape``), so the
    rival neither decodes them nor tests response-v2's marker in ``meta``; read by the decode that
    sets unknown members aside, only the required keys are known, but response-v2's marker is not
    tested either (response-v2's outcome member is errorcode's: it reads the success too)."""
    dialect = get_dialect("errorcode")
    loose, strict = read_facts(dialect), read_facts(dialect, True)
    meta = [f for f in strict if f.kind == "shape" and f.ref == "meta"]
    assert meta == [
        Lit(
            "shape",
            "meta",
            (
                ("null", "object"),
                ("tool_version", "elapsed_ms"),
                ("tool_version", "elapsed_ms", "mode", "approval_mode", "pagination", "correlation_id"),
            ),
        )
    ]
    assert Lit("shape", "meta", (("null", "object"), ("tool_version", "elapsed_ms"), None)) in loose
    assert not any(f.kind == "shape" and f.ref == "data" for f in strict)  # a Raw: any JSON
    reg = bundled()
    after, after_strict = read_rival(reg, dialect, _WRAPPER_KEYS), read_rival(reg, dialect, _WRAPPER_KEYS, True)
    assert after is not None and after_strict is None  # (test_the_strict_read_leaves_no_rival_for_four_sources)
    assert "obj_m_meta" not in source(after) and "obj_m_error" not in source(after)
    assert "obj_m_data" not in source(after)  # code-graph reads the success too: its keys are not searched


@pytest.mark.parametrize("target", ["dotbot", "response-v2", "errorcode", "result", "code-graph"])
def test_legacy_v1_refuses_what_its_checks_name(target: str, records: dict[str, list[bytes]]) -> None:
    """``Reading.checks`` of legacy-v1 (what ``read_facts`` takes as proven): a document whose
    ``success`` or ``error`` is of another JSON type is refused by every conversion from it, forced
    (the straight entry's fused line) or on the general path."""
    from envglot import Converter, ParseError

    reading = get_dialect("legacy-v1").steps()[0]
    assert reading is not None and set(reading.checks) == {"success", "error"}
    wrong = {
        "success": [b"null", b"1", b'"true"', b"{}", b"[]"],
        "error": [b"1", b"true", b"{}", b"[]", b'{"code":404}'],
    }
    conv = Converter(to=target, from_="legacy-v1", unsupported="ignore")
    refused = 0
    for base in records["legacy-v1"][:20]:
        top = top_members(base)
        for key, values in wrong.items():
            for v in values:
                doc = msgspec.json.encode({**top, key: msgspec.Raw(v)})
                with pytest.raises(ParseError):
                    conv.convert_bytes(doc)
                with pytest.raises(ParseError):
                    conv.conversion(doc)  # with its diagnostics: the general path
                refused += 1
    assert refused == 200


def test_legacy_documents_holding_other_dialects_members_convert_as_the_general_path(
    records: dict[str, list[bytes]],
) -> None:
    """The straight entry (which asks the read's rival) answers as ``Pipeline.convert`` (which
    asks the forced rival) for legacy-v1 documents holding other dialects' members, failures
    among them, with ``success`` true, false or absent: the rival left out where the other
    dialect reads no failure changes no answer."""
    from envglot.dialects import WRITABLE
    from envglot.options import Options
    from envglot.pipeline import Pipeline

    rnd = random.Random(28)
    others = [r for d, rs in records.items() if d != "legacy-v1" for r in rs[:12]]
    docs = []
    for other in others:
        top = top_members(other)
        for flag in (None, b"true", b"false"):
            merged = {**top_members(rnd.choice(records["legacy-v1"])), **top}
            merged.pop("success", None)
            if flag is not None:
                merged["success"] = msgspec.Raw(flag)
            docs.append(msgspec.json.encode(merged))
    options = Options(unsupported="ignore")

    def answer(fn: Any, doc: bytes) -> Any:
        try:
            return fn(doc)
        except EnvglotError as exc:
            return type(exc).__name__, str(exc), exc.path

    for to in WRITABLE:
        entry = Pipeline("legacy-v1", to, options).convert_bytes
        general = Pipeline("legacy-v1", to, options)
        for doc in docs:
            want = answer(lambda d, p=general: p.convert(d, p.report())[0], doc)
            assert answer(entry, doc) == want, (to, doc[:160])


def test_the_outcome_member_of_the_bundled_dialects() -> None:
    """A reading whose ``ok`` is the plain move of a required ``bool`` wire field names that field;
    one deciding ``ok`` in a hook (dotbot, legacy-v1) or another way names none."""
    got = {d.name: outcome_member(d) for d in bundled()}
    assert got == {
        "code-graph": "success",
        "dotbot": None,
        "errorcode": "success",
        "google-rpc": None,
        "legacy-v1": None,
        "problem-json": None,
        "response-v2": "success",
        "result": "success",
    }


@pytest.mark.parametrize("name", [d.name for d in bundled() if outcome_member(d) is not None])
def test_a_reader_with_an_outcome_member_fails_exactly_where_it_is_false(
    name: str, records: dict[str, list[bytes]]
) -> None:
    """What ``outcome_member`` states, tested on every bundled dialect's records and on each of
    them with the member set to ``true``, ``false``, repeated and spelt with an escape: every one
    the reader reads is a failure exactly where the member (its last occurrence) is ``false``."""
    from envglot.context import Context
    from envglot.diagnostics import DISCARD
    from envglot.mappings import default_mappings

    dialect, m = get_dialect(name), default_mappings()
    key = outcome_member(dialect)
    assert key is not None
    quoted = msgspec.json.encode(key)
    docs = [r for rs in records.values() for r in rs]
    for doc in list(docs):
        top = top_members(doc)
        for flag in (b"true", b"false"):
            docs.append(msgspec.json.encode({**top, key: msgspec.Raw(flag)}))
            first = msgspec.json.encode({key: msgspec.Raw(flag), **top})
            docs.append(first.replace(quoted, b'"\\u0073' + quoted[2:], 1))
            docs.append(b"{" + quoted + b":" + (b"false" if flag == b"true" else b"true") + b"," + docs[-2][1:])
    read = failures = 0
    for doc in docs:
        try:
            env = dialect.read(doc, Context(m, DISCARD, m[name]))
        except EnvglotError:
            continue
        read += 1
        failures += not env.ok
        last = msgspec.json.decode(doc, type=dict[str, msgspec.Raw])[key]
        assert env.ok is (bytes(last) != b"false"), doc[:200]
    assert read >= 60 and failures >= 10, (read, failures)


def _laid_over(src: str, records: dict[str, list[bytes]]) -> list[bytes]:
    """``src``'s tiny records (a success each), each with the members of another dialect's failure
    record laid over it but the outcome member, and each of those again with its payload padded past
    ``SPLIT_MIN`` bytes (the members' line), plus a success whose payload is another's."""
    from envglot.pipeline import SPLIT_MIN

    key = get_dialect(src).outcome_key
    rnd = random.Random(src + "28")
    failures = [top_members(r) for d, rs in records.items() if d != src for r in rs if b"false" in r or b"rror" in r]
    out = []
    for base in records[src][:30]:
        top = top_members(base)
        if bytes(top.get(key, b"")) != b"true":
            continue
        for other in rnd.sample(failures, 6):
            laid = {**top, **{k: v for k, v in other.items() if k != key}}
            out.append(msgspec.json.encode(laid))
            payload = bytes(other.get("data", b"null"))
            pad = msgspec.Raw(b'{"pad":"' + b"p" * SPLIT_MIN + b'","payload":' + payload + b"}")
            out.append(msgspec.json.encode({**laid, "data": pad}))
            out.append(msgspec.json.encode({**top, "data": other.get("data", msgspec.Raw(b"{}"))}))
    return out


@pytest.mark.parametrize("src", ["errorcode", "response-v2", "result", "code-graph"])
def test_a_success_another_dialect_with_its_outcome_member_names_converts_as_the_general_path(
    src: str, records: dict[str, list[bytes]]
) -> None:
    """A source read as a success whose document another dialect's probe names: where that dialect's
    outcome member is the source's (``read_rival`` asks it no more), the straight entry answers as
    ``Pipeline.convert`` (which asks every rival's reader), short documents (the strict read) and
    long ones (the members' line) alike."""
    from envglot import Converter
    from envglot.options import Options
    from envglot.pipeline import Pipeline

    docs = _laid_over(src, records)
    assert len(docs) >= 60, len(docs)
    named = 0
    for to in ("dotbot", "problem-json", "errorcode" if src != "errorcode" else "response-v2"):
        fast = Converter(to=to, from_=src, unsupported="ignore").convert_bytes
        general = Pipeline(src, to, Options(unsupported="ignore"))
        slow = functools.partial(_general, general)
        for doc in docs:
            want, got = _outcome(slow, doc), _outcome(fast, doc)
            assert got == want, (to, doc[:200])
            plain = forced_rival(bundled(), src)(top_members(doc))
            named += plain is not None and not _reads_failure(plain.name, doc)
    assert named >= 10, named


def _general(p: Any, doc: bytes) -> bytes:
    """``p``'s general path for ``doc``, with the report a call gets."""
    out: bytes = p.convert(doc, p.report())[0]
    return out


def _outcome(fn: Any, doc: bytes) -> Any:
    """``fn(doc)``, or the error it raises (type, message, path)."""
    try:
        return fn(doc)
    except EnvglotError as exc:
        return type(exc).__name__, str(exc), exc.path
