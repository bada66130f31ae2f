"""The trust checks share one parse of the top level (issue 28): the shortcuts decide exactly
what the checks they stand for decide.

- ``limits.spans_whole`` proves that no top-level key is repeated only when that is true;
- ``WireDecoder.from_members`` builds the wire Struct decoding the whole document gives, or
  leaves the document to the decoder;
- a large document (whose fused reader builds on the members) converts as the hub converts it,
  and the checks still refuse what they refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import envglot
from envelopes import canonical_envelopes, documents, json_values, text
from envglot import Envelope, ParseError
from envglot.dialect import get_dialect
from envglot.dialects import NAMES
from envglot.limits import WHOLE_BY_ENCODING, repeated_member, spans_whole, top_members
from envglot.mappings import mappings_for
from envglot.options import Options
from envglot.pipeline import Pipeline
from envglot.wire import WireDecoder
from test_fields import bench_corpus

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_SPACES = st.sampled_from(["", "", "", " ", "\n", "\t "])
_KEYS = st.sampled_from(["success", "ok", "data", "a", "é", "\u2028"]) | text


@st.composite
def top_levels(draw: st.DrawFn) -> tuple[bytes, list[str]]:
    """An object document written member by member (keys may repeat, be escaped, be spaced)."""
    keys = draw(st.lists(_KEYS, max_size=5))
    parts = []
    for k in keys:
        key = json.dumps(k, ensure_ascii=draw(st.booleans()))
        value = json.dumps(draw(json_values), ensure_ascii=False)
        parts.append(draw(_SPACES) + key + draw(_SPACES) + ":" + draw(_SPACES) + value + draw(_SPACES))
    doc = "{" + ",".join(parts) + (draw(_SPACES) if not parts else "") + "}" + draw(st.sampled_from(["", "", " "]))
    return doc.encode(), keys


@SETTINGS
@given(top_levels())
def test_spans_whole_only_when_no_key_is_repeated(case: tuple[bytes, list[str]]) -> None:
    doc, keys = case
    members = top_members(doc)
    if spans_whole(doc, members):
        assert len(set(keys)) == len(keys), doc
        written = b",".join(json.dumps(k, ensure_ascii=False).encode() + b":" + bytes(v) for k, v in members.items())
        assert doc == b"{" + written + b"}"  # the members, end to end: no whitespace or escape at the top
    for key in {*keys, "success"}:
        found = repeated_member(doc, key, members)
        assert found == repeated_member(doc, key), (doc, key)
        if key.isascii() and key.isalpha():  # the outcome members' kind of key
            assert found == (keys.count(key) > 1), (doc, key)


@pytest.mark.parametrize(
    ("doc", "whole"),
    [
        (b"{}", True),
        (b"{ }", False),
        (b'{"a":1,"b":[1, 2]}', True),  # whitespace inside a value is the value's
        (b'{"a" :1}', False),
        (b'{"a":1} ', False),
        (b'{"a":1,"a":1}', False),
        (b'{"\\u0061":1}', False),  # an escaped key is longer than the key
        (b'{"a\\"b":1}', True),  # a key's shortest spelling
        (b'{"\\/":1}', False),
        (b'{"\xc3\xa9":1}', True),
    ],
)
def test_spans_whole_cases(doc: bytes, whole: bool) -> None:
    assert spans_whole(doc, top_members(doc)) is whole


@pytest.mark.parametrize("whole", [True, False])
def test_spans_whole_above_the_encoding_size(whole: bool) -> None:
    """Past ``WHOLE_BY_ENCODING`` the lengths are summed per member: the same answers."""
    big = b'{"a":"' + b"x" * WHOLE_BY_ENCODING + b'","b":[1, 2]' + (b"}" if whole else b',"a":1}')
    assert spans_whole(big, top_members(big)) is whole
    assert spans_whole(big + b" ", top_members(big)) is False


@SETTINGS
@given(st.text(max_size=8) | st.sampled_from([chr(i) for i in range(0x80)]))
def test_msgspec_spells_every_key_in_its_shortest_form(key: str) -> None:
    """What ``spans_whole``'s encoding relies on: no JSON spelling of a key is shorter than msgspec's."""
    shortest = sum(
        2 if c in '"\\\b\f\n\r\t' else 6 if c < " " else len(c.encode("utf-8", "surrogatepass")) for c in key
    )
    assert len(msgspec.json.encode({key: 0})) == len(b'{"":0}') + shortest


_DECODERS = {n: get_dialect(n).reading.decoder for n in NAMES if get_dialect(n).reading is not None}  # type: ignore[union-attr]
_WIRE = {n: d for n, d in _DECODERS.items() if hasattr(d, "from_members")}
"""The dialects whose decoder is a ``WireDecoder`` (every bundled one but legacy-v1's)."""


@pytest.mark.parametrize("name", sorted(_WIRE))
def test_from_members_is_the_decoders_struct(name: str) -> None:
    dec = _WIRE[name]

    @SETTINGS
    @given(doc=documents(name) | st.dictionaries(_KEYS, json_values, max_size=4))
    def check(doc: dict[str, Any]) -> None:
        buf = msgspec.json.encode(doc)
        wire = dec.from_members(top_members(buf))
        try:
            whole = dec.decode(buf)
        except ParseError:
            assert wire is None
            return
        if wire is not None:
            assert whole == (wire, (), None)
            assert dec.decode(buf, top_members(buf)) == whole

    check()


class _Loop(dict[str, msgspec.Raw]):
    """Members that ``WireDecoder.from_members`` reads by its per-member loop (not a plain dict)."""


@pytest.mark.parametrize("name", sorted(_WIRE))
def test_generated_from_members_is_the_loop(name: str) -> None:
    """A plain members dict is read by the reader generated for the wire Struct: the loop's
    answer (the Struct, or ``None``) for whole documents, a member dropped, an unknown one added
    and a member's value replaced by any JSON value."""
    dec = _WIRE[name]

    @SETTINGS
    @given(
        doc=documents(name) | st.dictionaries(_KEYS, json_values, max_size=4),
        drop=st.integers(0, 15),
        extra=st.none() | st.tuples(_KEYS, json_values),
        other=st.none() | st.tuples(st.integers(0, 15), json_values),
    )
    def check(doc: dict[str, Any], drop: int, extra: tuple[str, Any] | None, other: tuple[int, Any] | None) -> None:
        for members in _variants(top_members(msgspec.json.encode(doc)), drop, extra, other):
            got = dec.from_members(members)
            assert type(members) is dict
            assert got == WireDecoder.from_members(dec, _Loop(members)), members
            if got is not None:
                assert type(got) is dec._tp

    check()


def _variants(
    members: dict[str, msgspec.Raw], drop: int, extra: tuple[str, Any] | None, other: tuple[int, Any] | None
) -> list[dict[str, msgspec.Raw]]:
    """``members``, with its ``drop``-th member left out, with ``extra`` added and with the
    ``other[0]``-th member's value replaced."""
    keys = list(members)
    out = [members]
    if keys:
        out.append({k: v for k, v in members.items() if k != keys[drop % len(keys)]})
    if extra is not None:
        out.append({**members, extra[0]: msgspec.Raw(msgspec.json.encode(extra[1]))})
    if other is not None and keys:
        out.append({**members, keys[other[0] % len(keys)]: msgspec.Raw(msgspec.json.encode(other[1]))})
    return out


def test_large_documents_convert_as_the_hub_converts_them() -> None:
    """Medium and large records take the fused reader on the members; the hub reads them whole."""
    records = bench_corpus.generate({"medium": 2, "large": 1}, seed=11)
    for rec in records:
        for to in ("response-v2", "dotbot", "result", "problem-json"):
            if to == rec.dialect:
                continue
            fast = envglot.convert(rec.data, from_=rec.dialect, to=to, unsupported="ignore")
            hub = envglot.conversion(rec.data, from_=rec.dialect, to=to, unsupported="ignore").output
            assert fast == hub, (rec.dialect, to)


_DECLARED = Path(__file__).resolve().parents[1] / "examples" / "declared"
_DECLARATIONS = [str(p) for p in sorted(_DECLARED.glob("*.toml"))]
_BIG = st.dictionaries(st.sampled_from(["rows", "notes", "blob"]), st.text(min_size=2100, max_size=2400), min_size=1)


def test_declared_large_documents_convert_as_the_hub_converts_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """A declared dialect's reader is a ``WireDecoder`` too: from 2 KiB its fused reader builds on
    the members, and gives the hub's bytes; ``from_members`` gives the decoder's Struct."""
    m = mappings_for(_DECLARATIONS)
    names = sorted(d.name for d in m.registry if d.declared)
    built = [0]
    from_members = WireDecoder.from_members

    def counted(self: WireDecoder, members: dict[str, msgspec.Raw]) -> Any:
        wire = from_members(self, members)
        built[0] += wire is not None
        return wire

    monkeypatch.setattr(WireDecoder, "from_members", counted)

    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )
    @given(env=canonical_envelopes(), payload=_BIG, name=st.sampled_from(names))
    def check(env: Envelope, payload: dict[str, str], name: str) -> None:
        env = msgspec.structs.replace(env, payload=msgspec.Raw(msgspec.json.encode(payload)))
        buf = envglot.write(env, to=name, mappings=m, unsupported="ignore")
        assert len(buf) >= 2048
        dec = m.registry.get(name).reading.decoder  # type: ignore[union-attr]
        wire = from_members(dec, top_members(buf))  # not counted: only the pipeline's calls are
        assert wire is not None and dec.decode(buf) == (wire, (), None)
        for to in ("response-v2", "dotbot", "problem-json"):
            fast = envglot.convert(buf, from_=name, to=to, mappings=m, unsupported="ignore")
            assert fast == envglot.conversion(buf, from_=name, to=to, mappings=m, unsupported="ignore").output

    check()
    assert built[0] > 0  # the fused readers did build on the members


def test_a_repeated_outcome_member_in_a_large_document_is_refused() -> None:
    big = b'{"x":"' + b"y" * 4000 + b'"}'
    doc = b'{"success":false,"data":' + big + b',"success":true}'
    with pytest.raises(ParseError, match="appears more than once"):
        envglot.convert(doc, from_="result", to="dotbot", unsupported="ignore")


_TARGETS = ("response-v2", "dotbot", "result", "errorcode")


@pytest.mark.parametrize("name", sorted(_WIRE))
def test_the_fused_function_given_members_answers_as_without_them(name: str) -> None:
    """The bound pair function handed the document's top-level members (its decoder's
    ``from_members`` called without ``decode``'s frame; a top parse's members where the source
    has one) answers as it does decoding the document itself: the same bytes, or the same error.
    A member ``from_members`` refuses (an unknown one) sends the document to the decoder."""
    pairs = []
    for to in _TARGETS:
        if to != name:
            p = Pipeline(name, to, Options(unsupported="ignore"))
            fused = p._fused_from(p.src, True)
            if fused is not None:
                pairs.append(fused)
    assert pairs
    top = _WIRE[name].top_parser()

    def answer(fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as exc:  # the same error either way
            return type(exc), str(exc)

    @SETTINGS
    @given(doc=documents(name), extra=st.none() | st.tuples(_KEYS, json_values))
    def check(doc: dict[str, Any], extra: tuple[str, Any] | None) -> None:
        buf = msgspec.json.encode(doc if extra is None else {**doc, extra[0]: extra[1]})
        found = [top_members(buf)]
        if top is not None:
            try:
                found.append(top(buf))
            except msgspec.MsgspecError:
                pass
        for members in found:
            for fused in pairs:
                assert answer(fused, buf, members) == answer(fused, buf), (name, members)

    check()
