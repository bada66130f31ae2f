"""A large response-v2 failure's ``data`` read once with its ``details``' members (issue 28, large).

``response_v2._data_members`` must give exactly the members ``dict[str, Raw]`` gives (the
details' bytes the input's own), and the details' top level only where the lengths prove their
span; the carried-meaning test then answers from those members without parsing the details
again, and every output and report stays the hub's.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

import envglot
import envglot.codes
from envglot.diagnostics import Report
from envglot.dialects import response_v2
from envglot.dialects.response_v2 import DATA_MEMBERS_MIN

_RAW_DICT = msgspec.json.Decoder(dict[str, msgspec.Raw])
_ROWS = [{"field": "a.b", "message": "x" * 30, "received": 1}] * 80
_BIG = msgspec.json.encode({"errors": _ROWS})[1:-1].decode()  # '"errors":[...]', a large member


def _data(members: str) -> bytes:
    return ("{" + members + "}").encode()


CASES = {
    # (data, details' members read)
    "tight": (_data(f'"error_code":"NOT_FOUND","error_type":"not_found","details":{{{_BIG}}}'), True),
    "details first": (_data(f'"details":{{{_BIG}}},"error_code":"NOT_FOUND"'), True),
    "every field": (
        _data(
            '"error_code":"E","error_type":"internal","remediation":"r",'
            f'"details":{{"category":"unavailable",{_BIG}}},"retry_after_seconds":2'
        ),
        True,
    ),
    "empty details": (_data(f'"remediation":"{"r" * 5000}","details":{{}}'), True),
    "no details": (_data(f'"error_code":"E","remediation":"{"r" * 5000}"'), False),
    "a payload member": (_data(f'"error_code":"E","rows":1,"details":{{{_BIG}}}'), False),
    "spaced": (_data(f'"error_code": "E", "details": {{{_BIG}}}'), False),
    "spaced inside": (_data(f'"error_code":"E","details":{{"a": 1,{_BIG}}}'), False),
    "repeated": (_data(f'"error_code":"E","error_code":"F","details":{{{_BIG}}}'), False),
    "repeated in details": (_data(f'"error_code":"E","details":{{"a":1,"a":2,{_BIG}}}'), False),
    "escaped key": (_data(f'"error_code":"E","details":{{"c\\u0061tegory":"x",{_BIG}}}'), False),
    "escaped field": (_data(f'"error\\u005fcode":"E","details":{{{_BIG}}}'), False),
    "control key": (_data(f'"error_code":"E","details":{{"\\u001F":1,{_BIG}}}'), False),
    "control key, lower": (_data(f'"error_code":"E","details":{{"\\u001f":1,{_BIG}}}'), False),
    "details a list": (_data(f'"error_code":"E","details":[{{{_BIG}}}]'), False),
    "details null": (_data(f'"error_code":"E","remediation":"{"r" * 5000}","details":null'), False),
    "small": (_data('"error_code":"E","details":{"a":1}'), False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_data_members_as_the_members_dict(name: str) -> None:
    """The members as ``dict[str, Raw]`` gives them, their bytes the same; the details' members
    only where proven, and then their decode."""
    data, read = CASES[name]
    assert (len(data) >= DATA_MEMBERS_MIN) == (name != "small")
    want = _RAW_DICT.decode(data)
    got, inner = response_v2._data_members(msgspec.Raw(data))
    assert got == want
    assert {k: bytes(v) for k, v in got.items()} == {k: bytes(v) for k, v in want.items()}
    assert (inner is not None) == read
    if inner is not None:
        assert inner == _RAW_DICT.decode(want["details"])


def test_a_key_msgspec_refuses_is_refused_as_before() -> None:
    """A lone surrogate in a details key: the same error as the members dict's decode."""
    data = _data(f'"error_code":"E","details":{{"\\ud800":1,{_BIG}}}')
    with pytest.raises(msgspec.DecodeError) as plain:
        _RAW_DICT.decode(data)
    with pytest.raises(msgspec.DecodeError) as read:
        response_v2._data_members(msgspec.Raw(data))
    assert str(read.value) == str(plain.value)


def _failure(code: str, etype: str, details: dict[str, Any]) -> dict[str, Any]:
    """A response-v2 failure of ``code`` / ``etype`` with ``details``."""
    return {
        "success": False,
        "data": {"error_code": code, "error_type": etype, "details": details},
        "error": "m",
        "meta": {"version": "response-v2", "request_id": "r1", "telemetry": {"duration_ms": 3}},
    }


class _CountingCarries:
    """``codes._carries`` counting the carried-meaning tests that decode the details."""

    def __init__(self) -> None:
        self.calls = 0
        self._real = envglot.codes._carries

    def __call__(self, keys: tuple[str | None, str | None]) -> Any:
        test = self._real(keys)

        def counted(d: msgspec.Raw) -> bool:
            self.calls += 1
            return bool(test(d))

        return counted


@pytest.mark.parametrize(
    ("code", "etype", "extra"),
    [
        ("NOT_FOUND", "not_found", {}),
        ("INTERNAL_ERROR", "internal", {}),
        ("INTERNAL_ERROR", "internal", {"category": "unavailable"}),  # the details carry a meaning
        ("INTERNAL_ERROR", "internal", {"retryable": True}),
        ("INTERNAL_ERROR", "internal", {"\x1f": 1}),  # a control character: read from the bytes
    ],
)
@pytest.mark.parametrize("to", ["errorcode", "dotbot", "result", "code-graph", "problem-json"])
def test_a_large_failure_converts_as_the_hub_writes_it(
    monkeypatch: pytest.MonkeyPatch, code: str, etype: str, extra: dict[str, Any], to: str
) -> None:
    """Tight and spaced, every target: the fused output is the hub's; a tight one whose details'
    members were read takes the carried-meaning test from them, without decoding the details."""
    doc = _failure(code, etype, {**extra, "errors": _ROWS})
    tight = msgspec.json.encode(doc)
    spaced = json.dumps(doc, indent=1).encode()
    assert len(tight) > DATA_MEMBERS_MIN
    conv = envglot.Converter(to=to, from_="response-v2", unsupported="ignore")
    for buf in (tight, spaced):
        want = envglot.convert(buf, to=to, from_="response-v2", report=Report())
        spy = _CountingCarries()
        monkeypatch.setattr(envglot.codes, "_carries", spy)
        assert conv.convert_bytes(buf) == want
        monkeypatch.undo()
        if buf is tight and "\x1f" not in extra:
            assert spy.calls == 0, (to, extra)
