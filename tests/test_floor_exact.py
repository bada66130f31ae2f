"""The floors are exact, audited by mutation (issue 28).

A floor (``benchmarks/floors.py``) is the cheapest code giving envglot's exact output with its
checks, and refuses (``OutsideError``) what the benchmark corpus does not hold. The benchmark
only compares it with envglot on the corpus's own records; here records of the small corpus
(tiny and medium, successes and failures) are mutated systematically at every object of the
document (a member removed; a member added under each known name of the source dialect's wire
Structs and mapping paths, and an unknown one; a value replaced by each JSON type, by strings
with escapes and non-ASCII; a key spelt with an escape; a key repeated) and each mutant must be
refused by the floor, or refused by envglot (an ``EnvglotError``: the floor refuses or raises
too), or converted by both to the same bytes. Deterministic: a fixed list of mutations, and a
seeded sample of them for the medium records.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest

import envglot
from bench_harness import bench_module
from envglot.errors import EnvglotError
from envglot.mappings import default_mappings

ROOT = Path(__file__).resolve().parents[1]


_floors = bench_module("floors")
_corpus = bench_module("corpus")
FLOORED = sorted(_floors.FLOORS)

COUNTS = {"tiny": 10, "medium": 5}
"""The corpus mutated: per source, 10 tiny records (2 failures) and 5 medium ones (1 failure)."""
MEDIUM_SAMPLE = 600
"""Mutants kept per medium record (a seeded sample: a medium payload has hundreds of objects)."""
SEED = 20261128


class Obj(list[tuple[Any, Any]]):
    """A JSON object as its members in order (repeated keys kept)."""


class Lit(bytes):
    """JSON text written as is (a string spelt with escapes)."""


VALUES: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    -5,
    2**62,
    1.5,
    "",
    "x",
    [],
    Obj(),
    Obj([("k", 1)]),
    Obj([("category", "internal"), ("retryable", True)]),
    Lit(b'"\\u0065"'),
    "a\nb",
    "café 東京",
)
"""What a member's value is replaced by: each JSON type, an object carrying a category and
``retryable`` (as an error's details may), escapes, non-ASCII."""
ADDED = (Obj(), "x", 0, None, Obj([("category", "internal"), ("retryable", True)]), [], True, Lit(b'"\\u0065"'))
"""What an added member holds: each name gets two of these, in rotation, and :data:`MEANING`."""
MEANING = ("internal", True)
"""Added under each name too: a category (that a code may not imply) and a ``retryable``."""
EXTRA_NAMES = (
    "details",
    "category",
    "retryable",
    "retry_after_ms",
    "retry_after_seconds",
    "warnings",
    "code",
    "value",
    "error_data",
    "error",
    "data",
    "meta",
    "_envglot",
    "zz_unknown",
)


def _loads(b: bytes) -> Any:
    return json.loads(b, object_pairs_hook=Obj)


def dump(v: Any) -> bytes:
    """``v`` as compact JSON (members in order, repeated keys and :class:`Lit` kept)."""
    if isinstance(v, Lit):
        return bytes(v)
    if isinstance(v, Obj):
        return b"{" + b",".join(_key(k) + b":" + dump(x) for k, x in v) + b"}"
    if isinstance(v, list):
        return b"[" + b",".join(map(dump, v)) + b"]"
    return orjson.dumps(v)


def _key(k: Any) -> bytes:
    return bytes(k) if isinstance(k, Lit) else orjson.dumps(k)


def _escaped(s: str) -> Lit:
    """``s`` spelt with its first character as a ``\\u`` escape."""
    return Lit(b'"\\u%04x' % ord(s[0]) + orjson.dumps(s[1:])[1:])


def _layout(v: Any, at: int, path: tuple[int, ...], out: dict[tuple[int, ...], tuple[int, int, list[bytes]]]) -> bytes:
    """:func:`dump` of ``v`` (written from offset ``at``), recording in ``out`` for every object
    its path (member or item indices), its span and its members' texts."""
    if isinstance(v, Obj):
        parts, pos = [], at + 1
        out[path] = (at, at, parts)  # its place, before its children's (the document's order)
        for i, (k, x) in enumerate(v):
            head = _key(k) + b":"
            part = head + _layout(x, pos + len(head), (*path, i), out)
            parts.append(part)
            pos += len(part) + 1
        text = b"{" + b",".join(parts) + b"}"
        out[path] = (at, at + len(text), parts)
        return text
    if isinstance(v, list) and not isinstance(v, Lit):
        items, pos = [], at + 1
        for i, x in enumerate(v):
            item = _layout(x, pos, (*path, i), out)
            items.append(item)
            pos += len(item) + 1
        return b"[" + b",".join(items) + b"]"
    return dump(v)


@cache
def known_names(dialect: str) -> tuple[str, ...]:
    """The member names of ``dialect``'s wire Structs, the steps of its mapping paths, and
    :data:`EXTRA_NAMES`."""
    module = envglot.dialect.get_dialect(dialect).__class__.__module__
    names: set[str] = set(EXTRA_NAMES)
    for v in vars(__import__(module, fromlist=["_"])).values():
        if isinstance(v, type) and issubclass(v, msgspec.Struct):
            names.update(getattr(v, "__struct_encode_fields__", ()))
    for path in default_mappings().dialects[dialect].fields.values():
        for step in path.removeprefix("$.").split("."):
            if step and step != "$":
                names.add(step.removesuffix("[]"))
    return tuple(sorted(names))


def mutants(doc: bytes, dialect: str) -> Iterator[bytes]:
    """Every mutation of ``doc`` (see the module's docstring), in a fixed order: each object's
    members written again around the change, the rest of the document as it was."""
    tree = _loads(doc)
    objects: dict[tuple[int, ...], tuple[int, int, list[bytes]]] = {}
    base = _layout(tree, 0, (), objects)
    names = known_names(dialect)
    nodes: dict[tuple[int, ...], Obj] = {}
    for path in objects:
        node = tree
        for i in path:
            node = node[i][1] if isinstance(node, Obj) else node[i]
        nodes[path] = node
    for path, (start, end, parts) in objects.items():
        head, tail = base[:start] + b"{", b"}" + base[end:]

        def put(members: list[bytes], head: bytes = head, tail: bytes = tail) -> bytes:
            return head + b",".join(members) + tail

        node = nodes[path]
        present = {k for k, _ in node}
        for i, (k, x) in enumerate(node):
            key = _key(k) + b":"
            before, after = parts[:i], parts[i + 1 :]
            yield put(before + after)
            for new in VALUES:
                yield put([*before, key + dump(new), *after])
            if isinstance(x, str) and x:
                yield put([*before, key + dump(_escaped(x)), *after])
            yield put([*before, _escaped(k) + parts[i][len(key) - 1 :], *after])
            yield put([*before, parts[i], parts[i], *after])
            yield put([*before, key + b"null", parts[i], *after])
            yield put([*parts, key + b'"x"'])
        for j, name in enumerate(names):
            if name in present:
                continue
            key = _key(name) + b":"
            for new in (ADDED[j % len(ADDED)], ADDED[(j + 3) % len(ADDED)]):
                yield put([*parts, key + dump(new)])
                yield put([key + dump(new), *parts])
            for new in MEANING:
                yield put([*parts, key + dump(new)])


def records(dialect: str) -> list[Any]:
    """The records of ``dialect`` mutated (tiny and medium, successes and failures)."""
    corpus = _corpus.generate(COUNTS, seed=SEED, dialects=(dialect,))
    return [r for size in ("tiny", "medium") for r in corpus.groups[(dialect, size)]]


@cache
def source_mutants(dialect: str) -> tuple[bytes, ...]:
    """Every mutant of ``dialect``'s records (a seeded sample for the medium ones), deduplicated."""
    rng = random.Random(SEED)
    out: dict[bytes, None] = {}
    for rec in records(dialect):
        found = list(mutants(rec.data, dialect))
        if rec.size != "tiny" and len(found) > MEDIUM_SAMPLE:
            found = rng.sample(found, MEDIUM_SAMPLE)
        out.update(dict.fromkeys(found))
    return tuple(out)


def _grafted(into: Obj, other: Obj) -> Iterator[Obj]:
    """``into`` with each member of ``other`` added (last) or put in place of its own, at the
    top level and in each object both hold under the same key."""
    for k, x in other:
        mine = next((i for i, (j, _) in enumerate(into) if j == k), None)
        if mine is None:
            yield Obj([*into, (k, x)])
            continue
        yield Obj([*into[:mine], (k, x), *into[mine + 1 :]])
        if isinstance(x, Obj) and isinstance(into[mine][1], Obj):
            for inner in _grafted(into[mine][1], x):
                yield Obj([*into[:mine], (k, inner), *into[mine + 1 :]])


def _outcome_set(doc: Obj, key: str, value: Any) -> Obj:
    return Obj([(k, value if k == key else x) for k, x in doc])


@cache
def cross_mutants(dialect: str) -> tuple[bytes, ...]:
    """Each success record with each member of each failure record grafted in
    (:func:`_grafted`) and vice versa, the outcome member as it is and set to each value the
    source's records hold for it (a seeded sample of :data:`CROSS_SAMPLE`), deduplicated."""
    key = envglot.dialect.get_dialect(dialect).outcome_key
    trees = [(r.ok, _loads(r.data)) for r in records(dialect)]
    outcomes = list(dict.fromkeys(orjson.dumps(x) for _, t in trees for k, x in t if k == key))
    out: dict[bytes, None] = {}
    for ok, tree in trees:
        for other_ok, other in trees:
            if ok == other_ok:
                continue
            for graft in _grafted(tree, other):
                for value in (None, *outcomes):
                    doc = graft if value is None else _outcome_set(graft, key, Lit(value))
                    out[dump(doc)] = None
    found = list(out)
    if len(found) > CROSS_SAMPLE:
        found = random.Random(SEED).sample(found, CROSS_SAMPLE)
    return tuple(found)


CROSS_SAMPLE = 3000
"""Cross-outcome mutants kept per source (a seeded sample)."""


class Mismatch(msgspec.Struct):
    """A mutant the floor handles otherwise than envglot."""

    why: str
    doc: bytes
    envglot: bytes | str
    floor: bytes | str


def audit(src: str, dst: str, docs: tuple[bytes, ...]) -> tuple[list[Mismatch], dict[str, int]]:
    """Each of ``docs`` through the floor and through envglot: the mismatches, and counts of
    what happened (refused by the floor, refused by envglot, the same bytes)."""
    floor = _floors.build(src, dst)
    conv = envglot.Converter(to=dst, from_=src, unsupported="ignore").convert_bytes
    bad: list[Mismatch] = []
    counts = {"floor refused": 0, "envglot refused": 0, "same bytes": 0}
    for b in docs:
        want: bytes | str
        try:
            want = conv(b)
        except EnvglotError as exc:
            want = f"EnvglotError: {exc}"
        except Exception as exc:  # envglot crashed: reported, not the floor's fault
            bad.append(Mismatch("envglot crashed", b, f"{type(exc).__name__}: {exc}", b""))
            continue
        try:
            got = floor(b)
        except _floors.OutsideError:
            counts["floor refused"] += 1
            continue
        except Exception as exc:
            if isinstance(want, str):
                counts["envglot refused"] += 1
            else:
                bad.append(Mismatch("floor raised", b, want, f"{type(exc).__name__}: {exc}"))
            continue
        if isinstance(want, str):
            bad.append(Mismatch("floor converted what envglot refuses", b, want, got))
        elif got != want:
            bad.append(Mismatch("other bytes", b, want, got))
        else:
            counts["same bytes"] += 1
    return bad, counts


@pytest.mark.parametrize(("src", "dst"), FLOORED, ids=[f"{s}->{t}" for s, t in FLOORED])
def test_a_floor_refuses_or_matches_every_mutant(src: str, dst: str) -> None:
    docs = source_mutants(src)
    bad, counts = audit(src, dst, docs)
    assert not bad, (len(bad), bad[:3])
    assert counts["same bytes"] >= len(docs) // 20, counts  # the floor still converts many of them


@pytest.mark.parametrize(("src", "dst"), FLOORED, ids=[f"{s}->{t}" for s, t in FLOORED])
def test_a_floor_refuses_or_matches_every_cross_outcome_mutant(src: str, dst: str) -> None:
    """A failure's members grafted into a success and the reverse, the outcome member set to
    each value: no floor may turn a failure into a success (or the reverse)."""
    docs = cross_mutants(src)
    bad, _ = audit(src, dst, docs)
    assert not bad, (len(bad), bad[:3])


def test_the_cross_outcome_mutants_hold_a_success_status_with_errors() -> None:
    """Among dotbot's: ``"status":"ok"`` with a non-empty ``errors`` list (a failure to envglot)."""
    docs = cross_mutants("dotbot")
    assert len(docs) > 100
    for b in docs:
        json.loads(b)
    assert any(b'"status":"ok"' in b and b'"errors":[{' in b for b in docs)
    assert any(b'"status":"error"' in b and b'"errors":[]' in b for b in docs)


def test_the_mutants_are_json_and_hold_what_they_are_meant_to() -> None:
    """Every mutant of a record parses; among them a removed member, an escaped key, a repeated
    key, a replaced value and a member added to an error's details that carries meaning."""
    rec = next(r for r in records("dotbot") if not r.ok and r.size == "tiny")
    found = list(mutants(rec.data, "dotbot"))
    for b in found:
        json.loads(b)
    assert len(set(found)) > 1000
    assert any(b"\\u0073tatus" in b for b in found)  # "status" spelt with an escape
    assert any(b.count(b'"status":') == 2 for b in found)  # the outcome member repeated
    assert any(b'"summary":2.0' in b or b'"summary":1.5' in b for b in found)
    assert any(b'"details":{' in b and b'"retryable":true}' in b for b in found)


@pytest.mark.parametrize(
    ("doc", "repeated"),
    [
        (b'{"status":"ok","data":{"status":1,"status":2,"k":"status"}}', False),  # inside the payload
        (b'{"status":"ok","data":{"status":1,"status":2,"k":"status"},"status":"error"}', True),
        (b'{"status":"ok","data":{},"summary":"status","status":"error"}', True),
        (b'{"status":"ok","data":{"a":"\\"status\\""}}', False),  # a backslash: repeated_member decides
        (b'{"status":"ok","data":{},"st\\u0061tus":"error"}', True),
        (b'{"status":"ok","data":{"x":1},"data":{"status":1,"status":2}}', False),
        (b'{"status":"ok","data":{"status":1},"data":{},"status":"error"}', True),
    ],
)
def test_the_outcome_counted_around_the_decoded_value(doc: bytes, repeated: bool) -> None:
    """A floor's repeated-outcome test (around the payload it decoded) answers as envglot's
    ``repeated_member`` does, by the span searched, the copy counted or the fallback."""
    from envglot.limits import repeated_member

    assert repeated_member(doc, "status") is repeated
    data = msgspec.json.decode(doc, type=dict[str, msgspec.Raw])["data"]
    try:
        _floors._outcome_once(doc, b'"status"', data, b'"data":')
    except _floors.OutsideError:
        assert repeated
    else:
        assert not repeated


def test_the_audit_finds_a_floor_without_the_carried_meaning_test(monkeypatch: pytest.MonkeyPatch) -> None:
    """The floors before ``73c87e7`` made no carried-meaning test: the audit shows the bytes
    they wrote where envglot writes another code."""
    monkeypatch.setattr(_floors, "_no_carried_meaning", lambda details, keys: None)
    bad, _ = audit("dotbot", "errorcode", source_mutants("dotbot"))
    assert bad and {m.why for m in bad} == {"other bytes"}
    assert all(b'"retryable":true' in m.doc or b'"category":"internal"' in m.doc for m in bad)


if __name__ == "__main__":
    import time

    pairs = [tuple(a.split(":")) for a in sys.argv[1:]] or FLOORED
    for s, t in pairs:
        t0 = time.process_time()
        ms = source_mutants(s)
        t1 = time.process_time()
        bad, counts = audit(s, t, ms)
        print(f"{s}->{t}: {len(ms)} mutants, gen {t1 - t0:.1f}s audit {time.process_time() - t1:.1f}s {counts}")
        for m in bad[:4]:
            print("   ", m.why, m.doc[:400], "\n      envglot:", m.envglot[:300], "\n      floor:  ", m.floor[:300])
        if bad:
            print("    kinds:", {w: sum(m.why == w for m in bad) for w in {m.why for m in bad}}, len(bad))
