"""Residues written by earlier envglot versions still verify and restore (issue 28).

``residues/v1.json`` holds carriers made by envglot at commit ``0e10d47`` (digest version 1,
a Python walk's canonical form): every writable dialect's first two readable goldens into every
other writable dialect, two-hop chains (nested residues), and a dotbot document whose dropped
member spells numbers in every way JSON allows (``2e2``, ``200.0``, ``1E2``, ``1e400``, ``-0``,
a 29-digit integer, ``1.50``) and escapes strings. Converting each carrier back (with
``preserve``) must give the original document (JSON-equal; the number spellings byte for byte).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import msgspec
import pytest

import envglot
from envglot import Kind
from envglot.dialects import WRITABLE
from envglot.fields import use_compiled
from envglot.residue import none_in
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


_SPELLED = msgspec.json.Decoder(float_hook=lambda text: msgspec.Raw(text.encode()))


def _without_digests(value: Any) -> Any:
    """``value`` with every residue's ``v`` and ``digest`` left out (nested residues too)."""
    if isinstance(value, dict):
        drop = ("v", "digest") if {"from", "set", "del", "digest"} <= value.keys() else ()
        return {k: _without_digests(v) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [_without_digests(v) for v in value]
    if isinstance(value, msgspec.Raw):
        return bytes(value)
    return value


@pytest.mark.parametrize("rec", RECORDS, ids=lambda r: f"{r['source']}->{'->'.join(r['hops'])}")
def test_outputs_differ_from_version_1_only_in_the_digest(rec: dict[str, Any]) -> None:
    """Differential against main's outputs: the same carrier but for ``v`` and ``digest`` (and
    code-graph's ``approxTokens``, which counts them)."""
    doc, at = rec["original"].encode(), rec["source"]
    for dst in rec["hops"]:
        doc = envglot.convert(doc, from_=at, to=dst, preserve=True, unsupported="ignore")
        at = dst
    new, old = (_without_digests(_SPELLED.decode(d)) for d in (doc, rec["carrier"]))
    if at == "code-graph":  # approxTokens counts the whole document, residue included
        for d in (new, old):
            d["data"]["meta"].pop("approxTokens")
    assert new == old
    assert b'"v":2,"digest":"' in doc


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
