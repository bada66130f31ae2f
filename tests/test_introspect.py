"""envglot.introspect: a Struct's fields and a callable's signature read once per object, the same
as msgspec's and inspect's, and let go with the object."""

from __future__ import annotations

import gc
import inspect
import weakref

import msgspec

from envglot import canonical
from envglot.introspect import signature_of, struct_fields


def test_struct_fields_are_msgspecs_read_once() -> None:
    got = struct_fields(canonical.Envelope)
    assert got == msgspec.structs.fields(canonical.Envelope)
    assert struct_fields(canonical.Envelope) is got  # not evaluated again


def test_a_struct_made_at_run_time_is_let_go() -> None:
    made = msgspec.defstruct("Made", [("a", int), ("b", "str | None", None)])
    assert [f.name for f in struct_fields(made)] == ["a", "b"]
    assert struct_fields(made)[1].type == str | None
    gone = weakref.ref(made)
    del made
    gc.collect()
    assert gone() is None


def test_a_struct_instance_is_read_each_time() -> None:
    made = msgspec.defstruct("Plain", [("a", int)])
    value = made(1)
    assert struct_fields(value) == msgspec.structs.fields(value)


def _hook(data: dict[str, object], *, code: str | None = None) -> None:
    """A step's hook."""


def test_signature_of_is_inspects_read_once() -> None:
    got = signature_of(_hook)
    assert got == inspect.signature(_hook)
    assert signature_of(_hook) is got
    assert [p.kind for p in got.parameters.values()] == [
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    ]


def test_a_function_made_at_run_time_is_let_go_and_a_builtin_is_read() -> None:
    def made(a: int, b: int = 2) -> int:
        return a + b

    assert list(signature_of(made).parameters) == ["a", "b"]
    gone = weakref.ref(made)
    del made
    gc.collect()
    assert gone() is None
    assert signature_of(divmod) == inspect.signature(divmod)  # no weak reference to a builtin
