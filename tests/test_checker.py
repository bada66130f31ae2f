"""The contract derived from wire Structs: ``Checker.wire`` and the ``Rule`` declared on a field."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
import pytest
from msgspec import Raw, Struct

from envglot.checker import Checker, Rule
from envglot.dialect import registered


class _Item(Struct):
    name: str
    size: Annotated[int | None, Rule(ge=0)] = None


class _Meta(Struct):
    seconds: Annotated[float | None, Rule(ge=0)] = None


class _Doc(Struct, rename="camel"):
    ok: bool
    version: Annotated[str, Rule(const="1.0")]
    level: Literal["low", "high"]
    when: Annotated[str, Rule(timestamp="utc")]
    tag: Annotated[str | None, Rule(pattern=r"[a-z]+", says="lower-case letters")] = None
    count: Annotated[int | None, Rule(required=True, ge=0)] = None
    payload: Annotated[Raw, Rule(kind="object")] = msgspec.field(default_factory=lambda: Raw(b"{}"))
    meta: Annotated[Raw, Rule(of=_Meta)] = msgspec.field(default_factory=lambda: Raw(b"{}"))
    items: list[_Item] | None = None
    notes: list[str | _Item] | None = None
    error_text: Annotated[str | None, Rule(by_outcome=True)] = None


_GOOD: dict[str, Any] = {
    "ok": True,
    "version": "1.0",
    "level": "low",
    "when": "2026-01-02T03:04:05Z",
    "count": 3,
}


def _violations(**changes: Any) -> list[tuple[str, str]]:
    doc = {**_GOOD, **changes}
    for k in [k for k, v in changes.items() if v is _DROP]:
        del doc[k]
    c = Checker("toy")
    c.wire(doc, _Doc)
    return [(v.path, v.message) for v in c.violations]


_DROP = object()
_ZONED = "2026-01-02T03:04:05+02:00"

CASES = [
    ({}, []),
    ({"ok": "yes"}, [("$.ok", "expected a boolean, got string")]),
    ({"ok": _DROP}, [("$.ok", "missing required field (expected a boolean)")]),
    ({"version": "2.0"}, [("$.version", "must be '1.0', got '2.0'")]),
    ({"level": "mid"}, [("$.level", "must be one of 'low', 'high', got 'mid'")]),
    ({"when": "yesterday"}, [("$.when", "expected an ISO 8601 date-time with a time zone, got 'yesterday'")]),
    (
        {"when": _ZONED},
        [("$.when", "expected a UTC time stamp (ending in Z), got " + repr(_ZONED))],
    ),
    ({"tag": "ABC"}, [("$.tag", "expected lower-case letters, got 'ABC'")]),
    ({"tag": None}, []),
    ({"count": _DROP}, [("$.count", "missing required field (expected an integer)")]),
    ({"count": None}, [("$.count", "expected an integer, got null")]),  # required by the spec: no null
    ({"count": -1}, [("$.count", "must not be negative, got -1")]),
    ({"payload": [1]}, [("$.payload", "expected an object or null, got array")]),  # optional: null allowed
    ({"meta": {"seconds": -0.5}}, [("$.meta.seconds", "must not be negative, got -0.5")]),
    ({"meta": "fast"}, [("$.meta", "expected an object or null, got string")]),
    (
        {"items": [{"name": "a"}, {"size": 1}, 3]},
        [
            ("$.items[1].name", "missing required field (expected a string)"),
            ("$.items[2]", "expected an object, got integer"),
        ],
    ),
    (
        {"notes": ["plain", {"name": "x", "size": -2}, 7]},
        [
            ("$.notes[1].size", "must not be negative, got -2"),
            ("$.notes[2]", "expected a string or an object, got integer"),
        ],
    ),
    ({"errorText": 5}, []),  # by_outcome: the dialect's invariants decide
]


@pytest.mark.parametrize(("changes", "expected"), CASES)
def test_a_wire_struct_read_as_a_contract(changes: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert _violations(**changes) == expected


def test_by_outcome_fields_are_checked_on_request() -> None:
    c = Checker("toy")
    c.wire({**_GOOD, "errorText": 5}, _Doc, by_outcome=True)
    assert [(v.path, v.message) for v in c.violations] == [("$.errorText", "expected a string or null, got integer")]
    c = Checker("toy")
    c.member({"errorText": 5}, _Doc, "errorText")
    assert [v.path for v in c.violations] == ["$.errorText"]


def test_a_rule_names_an_unknown_kind() -> None:
    with pytest.raises(ValueError, match="Rule\\(kind='thing'\\)"):
        Rule(kind="thing")


@pytest.mark.parametrize("dialect", [d for d in registered() if d.wire is not None], ids=lambda d: d.name)
def test_every_dialect_contract_reads_its_structs(dialect: Any) -> None:
    """Every registered dialect's wire Struct reads as a contract: its annotations resolve and a
    member of the wrong JSON type is reported at its path."""
    wrong = {f.encode_name: 1.5 for f in msgspec.structs.fields(dialect.wire)}
    c = Checker(dialect.name)
    c.wire(wrong, dialect.wire)
    assert {v.path for v in c.violations} <= {f"$.{k}" for k in wrong}
    assert c.violations, f"{dialect.name}: no member of its wire Struct has a JSON type?"
