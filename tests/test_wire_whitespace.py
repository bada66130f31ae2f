"""``wire.may_hold_whitespace``: False only for a document with no insignificant whitespace."""

from __future__ import annotations

import json

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from envelopes import json_values
from envglot.wire import may_hold_whitespace

_SEPARATORS = st.sampled_from([(",", ":"), (", ", ": "), (",", ": "), (" ,", " : "), (",\t", ":\n")])


@settings(max_examples=300, deadline=None)
@given(value=json_values, separators=_SEPARATORS, indent=st.sampled_from([None, 0, 2]))
def test_false_only_for_a_minified_document(value: object, separators: tuple[str, str], indent: int | None) -> None:
    doc = json.dumps(value, separators=separators, indent=indent, ensure_ascii=False).encode()
    if not may_hold_whitespace(doc):
        assert msgspec.json.format(doc, indent=-1) == doc


def test_answers() -> None:
    assert not may_hold_whitespace(b'{"a":"b c","d":[1,2]}')  # a space inside a string, away from structure
    assert may_hold_whitespace(b'{"a":"b, c"}')  # inside a string, beside a comma: "format to be sure"
    assert may_hold_whitespace(b'{"a":{"b": 1}}')  # spaced deep inside
    assert may_hold_whitespace(b'{"a":[1,\n2]}')
    assert may_hold_whitespace(b'{"a":1 }')
