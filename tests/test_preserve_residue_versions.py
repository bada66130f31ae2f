"""Residues written by earlier envglot versions still verify and restore (issue 28).

``residues/v1.json`` holds carriers made by envglot at commit ``0e10d47`` (digest version 1,
a Python walk's canonical form): every writable dialect's first two readable goldens into every
other writable dialect, two-hop chains (nested residues), and a dotbot document whose dropped
member spells numbers in every way JSON allows (``2e2``, ``200.0``, ``1E2``, ``1e400``, ``-0``,
a 29-digit integer, ``1.50``) and escapes strings. Converting each carrier back (with
``preserve``) must give the original document (JSON-equal; the number spellings byte for byte).
"""

from __future__ import annotations

import hashlib
import itertools
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest

import envglot
from envglot import Kind, residue
from envglot.dialects import WRITABLE
from envglot.fields import use_compiled
from envglot.mappings import default_mappings
from envglot.residue import digest, none_in
from golden import json_key

RECORDS: list[dict[str, Any]] = msgspec.json.decode((Path(__file__).parent / "residues" / "v1.json").read_bytes())


def _back(rec: dict[str, Any]) -> bytes:
    """The carrier converted back hop by hop to the source, with ``preserve``."""
    doc = rec["carrier"].encode()
    route = [*reversed(rec["hops"]), rec["source"]]
    for at, dst in itertools.pairwise(route):
        doc = envglot.convert(doc, from_=at, to=dst, preserve=True, unsupported="ignore")
    return doc


def test_the_fixtures_carry_version_1_residues() -> None:
    """Every fixture carries a residue whose digest has no version mark (version 1)."""
    assert len(RECORDS) == 100
    for rec in RECORDS:
        assert '"digest":"' in rec["carrier"]
        assert '"v":' not in rec["carrier"]


@pytest.mark.parametrize("rec", RECORDS, ids=lambda r: f"{r['source']}->{'->'.join(r['hops'])}")
def test_a_version_1_residue_restores_its_original(rec: dict[str, Any]) -> None:
    back = _back(rec)
    original = rec["original"].encode()
    if b"x_num" in original:  # number spellings survive byte for byte (json_key would equate them)
        assert back == original
    else:
        assert json_key(back) == json_key(original)


def test_a_tampered_version_1_residue_is_rejected() -> None:
    """The version 1 digest still guards: a changed value in the patches is not applied."""
    rec = next(r for r in RECORDS if "x_num" in r["original"] and r["hops"] == ["response-v2"])
    tampered = rec["carrier"].replace("1.50", "1.5")
    conv = envglot.conversion(tampered, from_="response-v2", to="dotbot", preserve=True, unsupported="ignore")
    assert Kind.RESIDUE_REJECTED in [d.kind for d in conv.diagnostics]


V3: list[dict[str, Any]] = msgspec.json.decode((Path(__file__).parent / "residues" / "v3.json").read_bytes())
"""Carriers of version 3 residues made at this version from the originals of ``v1.json``."""


def test_the_version_3_fixtures_carry_version_3_residues() -> None:
    assert [(r["source"], r["hops"], r["original"]) for r in V3] == [
        (r["source"], r["hops"], r["original"]) for r in RECORDS
    ]
    assert all('"set":[["$",{' in rec["carrier"] and '"del":[],"v":3,' in rec["carrier"] for rec in V3)
    assert sum('"take":[["$.' in rec["carrier"] for rec in V3) >= 20  # payloads taken from the carrier


V4: list[dict[str, Any]] = msgspec.json.decode((Path(__file__).parent / "residues" / "v4.json").read_bytes())
"""Carriers of version 4 residues (the payload taken, digest version 4) made at this version from
the originals of ``v1.json`` whose carriers take the payload (those of ``v3.json`` with ``take``)."""


def _forward(rec: dict[str, Any]) -> bytes:
    """The original converted hop by hop along the record's hops, with ``preserve``."""
    doc, at = rec["original"].encode(), rec["source"]
    for dst in rec["hops"]:
        doc = envglot.convert(doc, from_=at, to=dst, preserve=True, unsupported="ignore")
        at = dst
    return doc


@pytest.mark.parametrize("rec", V3, ids=lambda r: f"{r['source']}->{'->'.join(r['hops'])}")
def test_a_version_3_carrier_restores_its_original_byte_for_byte(rec: dict[str, Any]) -> None:
    assert _back(rec) == msgspec.json.format(rec["original"].encode(), indent=-1) == rec["restored"].encode()


V5: list[dict[str, Any]] = msgspec.json.decode((Path(__file__).parent / "residues" / "v5.json").read_bytes())
"""Carriers of version 5 residues (digest of the bytes as they travel) made from the originals of ``v1.json``."""


def _residue_of(carrier: str, dialect: str) -> dict[str, Any]:
    res: Any = msgspec.json.decode(carrier)
    for key in residue.slot_path(default_mappings()[dialect].shape.residue):
        res = res[key]
    return res  # type: ignore[no-any-return]


def _without_digest(carrier: str) -> str:
    """``carrier`` with its residue's version and digest blanked (the only members version 5 changed)."""
    return re.sub(r'"v":[345],', '"v":N,', re.sub(r'"digest":"[0-9a-f]{32}"', '"digest":"H"', carrier))


def test_the_version_5_fixtures_are_the_version_3_and_4_carriers_with_another_digest() -> None:
    """Version 5 changed the digest only: each carrier is version 3's (or, for a failure whose
    details now travel unchanged, one that takes them; for a payload taken, version 4's) with
    another ``v`` and ``digest``, and every one restores the same document."""
    assert [(r["source"], r["hops"], r["original"]) for r in V5] == [
        (r["source"], r["hops"], r["original"]) for r in RECORDS
    ]
    assert all('"del":[],"v":5,' in rec["carrier"] for rec in V5)
    assert [r["restored"] for r in V5] == [r["restored"] for r in V3]
    by_original = {(r["source"], tuple(r["hops"]), r["original"]): r for r in V5}
    for rec in V4:
        assert _without_digest(by_original[rec["source"], tuple(rec["hops"]), rec["original"]]["carrier"]) == (
            _without_digest(rec["carrier"])
        )
    for old, new in zip(V3, V5, strict=True):
        if _without_digest(old["carrier"]) != _without_digest(new["carrier"]):
            assert '"take":' not in old["carrier"], new["carrier"]
            res = _residue_of(new["carrier"], new["hops"][-1])
            assert res["take"] and all(here.endswith(".details") for here, _ in res["take"]), new["carrier"]


@pytest.mark.parametrize("rec", V5, ids=lambda r: f"{r['source']}->{'->'.join(r['hops'])}")
def test_a_version_5_carrier_is_written_again_and_restores_its_original_byte_for_byte(rec: dict[str, Any]) -> None:
    assert _forward(rec).decode() == rec["carrier"]
    assert _back(rec) == msgspec.json.format(rec["original"].encode(), indent=-1) == rec["restored"].encode()


def test_version_5_hashes_the_bytes_as_they_travel() -> None:
    """Version 5: SHA-256 (its first 128 bits) of its tag, the dialect, the document's bytes with
    ``null`` at the taken members (after their length) and each taken member's bytes (after
    theirs); any other spelling has another digest."""
    doc = b'{"b":2e2,"data":{"x":1,"y":"\\u00e9"},"a":1}'
    rest, data = b'{"b":2e2,"data":null,"a":1}', b'{"x":1,"y":"\\u00e9"}'

    def by_hand(*parts: bytes) -> str:
        h = hashlib.sha256(b"envglot-residue/5\0dotbot\0")
        for part in parts:
            h.update(len(part).to_bytes(8, "big") + part)
        return h.hexdigest()[:32]

    assert digest("dotbot", doc, 5) == by_hand(doc) == residue.digest_bytes("dotbot", doc, ())
    assert digest("dotbot", doc, 5, [["data"]]) == by_hand(rest, data) == residue.digest_bytes("dotbot", rest, [data])
    for other in (b'{"a":1,"data":{"x":1,"y":"\\u00e9"},"b":2e2}', doc.replace(b"2e2", b"200.0")):
        assert digest("dotbot", other, 5) != digest("dotbot", doc, 5)
        assert digest("dotbot", other, 3) == digest("dotbot", doc, 3)


def test_the_version_4_fixtures_are_the_version_3_carriers_that_take_the_payload() -> None:
    taking = [r for r in V3 if '"take":' in r["carrier"]]
    assert [(r["source"], r["hops"], r["original"]) for r in V4] == [
        (r["source"], r["hops"], r["original"]) for r in taking
    ]
    assert len(V4) >= 20
    assert all('"del":[],"v":4,"take":[["$.' in rec["carrier"] for rec in V4)
    assert not any('"v":3,' in rec["carrier"] for rec in V4)


@pytest.mark.parametrize("rec", V4, ids=lambda r: f"{r['source']}->{'->'.join(r['hops'])}")
def test_a_version_4_carrier_restores_its_original_byte_for_byte(rec: dict[str, Any]) -> None:
    assert _back(rec) == msgspec.json.format(rec["original"].encode(), indent=-1) == rec["restored"].encode()


def test_version_1_3_4_and_5_residues_restore_the_same_document() -> None:
    for old, new, newest in zip(RECORDS, V3, V5, strict=True):
        a, b = _back(old), _back(new)
        assert a == b if b"x_num" in a else json_key(a) == json_key(b)
        assert _back(newest) == b
    by_original = {(r["source"], tuple(r["hops"]), r["original"]): r for r in V3}
    for rec in V4:
        assert _back(rec) == _back(by_original[rec["source"], tuple(rec["hops"]), rec["original"]])


def test_a_tampered_version_3_residue_is_rejected() -> None:
    rec = next(r for r in V3 if "x_num" in r["original"] and r["hops"] == ["response-v2"])
    tampered = rec["carrier"].replace('"1.50"', '"1.5"').replace("1.50", "1.51")
    assert tampered != rec["carrier"]
    conv = envglot.conversion(tampered, from_="response-v2", to="dotbot", preserve=True, unsupported="ignore")
    assert Kind.RESIDUE_REJECTED in [d.kind for d in conv.diagnostics]


def test_version_3_hashes_number_spellings_alike_and_falls_back_to_the_walk() -> None:
    """Version 3 decodes numbers as numbers (``2e2`` and ``200.0`` alike, unlike version 2); a
    number msgspec refuses (``1e400``, a 5,000-digit integer) takes version 1's walk, which
    keeps its text."""
    assert digest("dotbot", b'{"a":2e2}', 3) == digest("dotbot", b'{"a":200.0}', 3)
    assert digest("dotbot", b'{"a":2e2}', 2) != digest("dotbot", b'{"a":200.0}', 2)
    assert digest("dotbot", b'{"b":1,"a":"\\u00e9"}', 3) == digest("dotbot", b'{"a":"\xc3\xa9","b":1}', 3)
    for big in (b"1e400", b"1" + b"0" * 5000):
        doc = b'{"a":' + big + b"}"
        assert digest("dotbot", doc, 3) != digest("dotbot", doc.replace(big, big + b"0"), 3)
        assert digest("dotbot", doc, 3) not in {digest("dotbot", doc, 1), digest("dotbot", doc, 2)}
    assert len({digest("dotbot", b"{}", v) for v in (1, 2, 3, 4, 5)}) == 5  # one tag per version


def test_version_4_hashes_the_taken_members_bytes_as_they_are_and_the_rest_canonically() -> None:
    """Version 4: the document less its taken members in version 3's form, then their bytes."""
    data = [["data"]]
    doc = b'{"b":2e2,"data":{"x":1,"y":"\\u00e9"},"a":1}'
    same_rest = b'{"a":1,"data":{"x":1,"y":"\\u00e9"},"b":200.0}'
    assert digest("dotbot", doc, 4, data) == digest("dotbot", same_rest, 4, data)
    for payload in (b'{"y":"\\u00e9","x":1}', b'{"x":1,"y":"\xc3\xa9"}', b'{"x":1,"y":"\\u00E9"}'):
        assert digest("dotbot", doc.replace(b'{"x":1,"y":"\\u00e9"}', payload), 4, data) != digest(
            "dotbot", doc, 4, data
        )
    assert digest("dotbot", doc, 4, data) != digest("dotbot", doc, 4)  # the payload counted as itself
    assert digest("dotbot", doc, 4, [["nowhere"]]) != digest("dotbot", doc, 4)  # a missing member counts
    assert digest("dotbot", doc, 3) == digest("dotbot", same_rest, 3)


def _large_dotbot() -> bytes:
    data = {"rows": [{"id": i, "name": f"row {i}", "tags": ["a", "b"]} for i in range(400)]}
    rec = next(r for r in RECORDS if r["source"] == "dotbot" and r["hops"] == ["response-v2"])
    doc = msgspec.json.decode(rec["original"])
    return msgspec.json.encode({**doc, "status": "ok", "errors": [], "data": data})


def test_a_payload_that_travels_unchanged_is_taken_from_the_carrier_not_carried_twice() -> None:
    original = _large_dotbot()
    carrier = envglot.convert(original, from_="dotbot", to="response-v2", preserve=True, unsupported="ignore")
    res = msgspec.json.decode(carrier)["meta"]["_envglot"]
    assert res["take"] == [["$.data", "$.data"]] and res["set"][0][1]["data"] is None
    assert len(carrier) < 1.1 * len(original)  # not the payload twice
    back = envglot.convert(carrier, from_="response-v2", to="dotbot", preserve=True, unsupported="ignore")
    assert back == original


def test_a_failures_details_that_travel_unchanged_are_taken_from_the_carrier() -> None:
    """A failure carries no payload: its details, when the target carries them byte for byte, are
    taken as the payload is, so a large failure's residue does not hold them twice
    and its digest hashes them as they travel; a changed detail is refused."""
    details = {"rows": [{"id": i, "why": f"field {i} is required"} for i in range(300)]}
    original = msgspec.json.encode(
        {
            "type": "urn:x",
            "title": "Bad Request",
            "status": 400,
            "detail": "bad",
            "code": "invalid_argument",
            "details": details,
        }
    )
    carrier = envglot.convert(original, from_="problem-json", to="code-graph", preserve=True, unsupported="ignore")
    res = msgspec.json.decode(carrier)["_envglot"]
    assert res["v"] == residue.VERSION and res["take"] == [["$.details", "$.data.result.error.details"]]
    assert res["set"][0][1]["details"] is None
    assert len(carrier) < 1.2 * len(original)
    assert envglot.convert(carrier, from_="code-graph", to="problem-json", preserve=True) == original
    changed = carrier.replace(b"field 7 is", b"field 8 is", 1)
    conv = envglot.conversion(changed, from_="code-graph", to="problem-json", preserve=True, unsupported="ignore")
    assert Kind.RESIDUE_REJECTED in [d.kind for d in conv.diagnostics]


def test_a_carrier_whose_payload_changed_on_its_way_does_not_restore_it() -> None:
    """The taken payload is checked with the rest: the digest refuses a changed one."""
    carrier = envglot.convert(_large_dotbot(), from_="dotbot", to="response-v2", preserve=True, unsupported="ignore")
    changed = carrier.replace(b'"row 7"', b'"row 8"', 1)
    conv = envglot.conversion(changed, from_="response-v2", to="dotbot", preserve=True, unsupported="ignore")
    assert [d.message for d in conv.diagnostics if d.kind is Kind.RESIDUE_REJECTED] == [
        "preserve residue not applied: it does not restore the document its digest records "
        "(not made by envglot for this document)"
    ]
    assert b'"row 8"' in conv.output and b"schema_id" in conv.output


def test_a_carrier_whose_payload_was_re_encoded_on_its_way_does_not_restore_it() -> None:
    """Versions 4 and 5 hash the payload's bytes as they travel: the same values in another key
    order or with other escapes are refused (reported, never silent) and the carrier converts
    without the residue (spacing alone is minified away first); version 3 hashed its canonical
    form, and still restores such a carrier."""
    carrier = envglot.convert(_large_dotbot(), from_="dotbot", to="response-v2", preserve=True, unsupported="ignore")
    first = b'{"id":0,"name":"row 0","tags":["a","b"]}'
    for respelled in (b'{"name":"row 0","id":0,"tags":["a","b"]}', b'{"id":0,"name":"row \\u0030","tags":["a","b"]}'):
        moved = carrier.replace(first, respelled, 1)
        assert moved != carrier
        conv = envglot.conversion(moved, from_="response-v2", to="dotbot", preserve=True, unsupported="ignore")
        assert [d.message for d in conv.diagnostics if d.kind is Kind.RESIDUE_REJECTED] == [
            "preserve residue not applied: it does not restore the document its digest records "
            "(not made by envglot for this document)"
        ]
        assert b"schema_id" in conv.output and respelled in conv.output
    spaced = msgspec.json.format(carrier, indent=2)  # whitespace alone: minified before it is read
    back = envglot.convert(spaced, from_="response-v2", to="dotbot", preserve=True, unsupported="ignore")
    assert back == _large_dotbot()
    rec = next(r for r in V3 if '"take":' in r["carrier"] and r["hops"] == ["response-v2"])
    data = msgspec.json.decode(rec["carrier"])["data"]
    assert isinstance(data, dict) and len(data) > 1
    reordered = msgspec.json.encode(dict(reversed(list(data.items()))))
    old = rec["carrier"].encode().replace(msgspec.json.encode(data), reordered, 1)
    assert old != rec["carrier"].encode()
    back = envglot.convert(old, from_="response-v2", to=rec["source"], preserve=True, unsupported="ignore")
    assert json_key(back) == json_key(rec["original"])


def test_take_belongs_to_version_3() -> None:
    rec = next(r for r in V3 if '"take":' in r["carrier"])
    carrier = rec["carrier"].replace('"v":3,', '"v":2,')
    with pytest.raises(envglot.EnvglotError, match="take in a residue of version 2"):
        envglot.convert(carrier, from_=rec["hops"][0], to=rec["source"], preserve=True, unsupported="ignore")


def test_a_residue_of_an_unknown_version_is_refused() -> None:
    rec = V5[0]
    carrier = rec["carrier"].replace('"v":5,', '"v":6,')
    with pytest.raises(envglot.EnvglotError, match="preserve residue of unknown version 6"):
        envglot.convert(carrier, from_=rec["hops"][0], to=rec["source"], preserve=True, unsupported="ignore")


def test_a_root_set_restores_only_from_version_3() -> None:
    """Versions 1 and 2 never replaced the document: a set at ``$`` there does not fit."""
    rec = next(r for r in V3 if '"take":' not in r["carrier"])
    carrier = rec["carrier"].replace('"v":3,', '"v":2,')
    conv = envglot.conversion(carrier, from_=rec["hops"][0], to=rec["source"], preserve=True, unsupported="ignore")
    assert [d.message for d in conv.diagnostics if d.kind is Kind.RESIDUE_REJECTED] == [
        "preserve residue not applied: a patch does not fit the document"
    ]


@pytest.mark.parametrize("src", WRITABLE)
def test_the_fused_path_writes_the_hubs_preserve_output(src: str) -> None:
    """With and without fused pair paths, ``preserve`` writes the same bytes (and restores)."""
    for rec in (r for r in RECORDS if r["source"] == src and len(r["hops"]) == 1):
        data, dst = rec["original"].encode(), rec["hops"][0]
        fused = envglot.Converter(to=dst, from_=src, unsupported="ignore", preserve=True).convert_bytes(data)
        use_compiled(False)
        try:
            hub = envglot.Converter(to=dst, from_=src, unsupported="ignore", preserve=True).convert_bytes(data)
        finally:
            use_compiled(True)
        assert fused == hub, f"{src} -> {dst}"


@pytest.mark.parametrize("spelling", ['"_envglot"', '"\\u005fenvglot"', '"_envglo\\u0074"'])
def test_a_residue_under_any_key_spelling_is_read(spelling: str) -> None:
    """A carrier whose residue key is spelled with escapes still restores (the fused path,
    which carries no residue, is not taken for it)."""
    rec = next(r for r in RECORDS if r["hops"] == ["result"] and r["source"] == "dotbot")
    carrier = rec["carrier"].replace('"_envglot"', spelling)
    assert spelling in carrier
    back = envglot.convert(carrier, from_="result", to="dotbot", preserve=True, unsupported="ignore")
    assert json_key(back) == json_key(rec["original"])


def test_none_in_rules_out_only_what_cannot_be_a_residue() -> None:
    assert none_in(b'{"a":1}', "$._envglot")
    assert not none_in(b'{"\\u005fenvglot":{}}', "$._envglot")
    assert not none_in(b'{"x":"_envglot"}', "$._envglot")  # conservative without members
    assert none_in(b'{"x":"_envglot"}', "$._envglot", {"x": msgspec.Raw(b'"_envglot"')})
    assert not none_in(b"", "$._envglot", {"_envglot": msgspec.Raw(b"{}")})
    meta = {"meta": msgspec.Raw(b'{"\\u005fenvglot":{}}')}
    assert not none_in(b"", "$.meta._envglot", meta)
    assert none_in(b"", "$.meta._envglot", {"meta": msgspec.Raw(b'{"version":"response-v2"}')})
    assert none_in(b"", "$.meta._envglot", {"data": msgspec.Raw(b"{}")})


@pytest.mark.parametrize("size", [0, 1, residue.FED_WHOLE - 1, residue.FED_WHOLE, residue.FED_WHOLE + 1, 50_000])
def test_version_5_digest_is_the_same_fed_whole_or_in_parts(size: int) -> None:
    """A single taken member up to ``FED_WHOLE`` bytes is hashed in one buffer with the rest, a
    larger one fed after it: the digest is version 5's either way (a Raw taken as bytes are)."""
    rest = b'{"a":"\\u00e9","data":null}'
    data = b'"' + b"x" * max(size - 2, 0) + b'"' if size >= 2 else b"1"[:size]
    h = hashlib.sha256(b"envglot-residue/5\0dotbot\0")
    for part in (rest, data):
        h.update(len(part).to_bytes(8, "big") + part)
    assert residue.digest_bytes("dotbot", rest, [data]) == h.hexdigest()[:32]
    if size >= 2:
        assert residue.digest_bytes("dotbot", rest, [msgspec.Raw(data)]) == h.hexdigest()[:32]
