"""What envglot reads off its own classes and functions, read once per object while it lives: a
Struct's fields (``msgspec.structs.fields`` evaluates the class's annotations on every call) and
a callable's signature (``inspect.signature`` builds it on every call). Compiling one dialect
pair's functions asks for the same ones hundreds of times: about 40 % of a process's first chunk
of a migration went there (docs/performance.md, issue 27, branch ``h-j2dask``).

Kept in weak dictionaries keyed by the object itself: an entry goes with its class or function
(a declared dialect's Structs and hooks are made at run time), and an object that cannot be
weakly referenced is read afresh each time.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    import inspect

__all__ = ["signature_of", "struct_fields"]

_FIELDS: weakref.WeakKeyDictionary[Any, tuple[msgspec.structs.FieldInfo, ...]] = weakref.WeakKeyDictionary()
_SIGNATURES: weakref.WeakKeyDictionary[Any, inspect.Signature] = weakref.WeakKeyDictionary()


def struct_fields(tp: Any) -> tuple[msgspec.structs.FieldInfo, ...]:
    """``msgspec.structs.fields(tp)`` (a Struct class), computed once per class. The same tuple is
    handed to every caller: read it, never change its ``FieldInfo``s."""
    try:
        return _FIELDS[tp]
    except KeyError:
        got = _FIELDS[tp] = msgspec.structs.fields(tp)
        return got
    except TypeError:  # not weakly referenceable (a Struct instance without weakref=True)
        return msgspec.structs.fields(tp)


def signature_of(fn: Callable[..., Any]) -> inspect.Signature:
    """``inspect.signature(fn)``, computed once per callable (a signature is immutable)."""
    try:
        return _SIGNATURES[fn]
    except KeyError:
        pass
    except TypeError:  # not weakly referenceable (a builtin)
        return _signature(fn)
    got = _signature(fn)
    try:
        _SIGNATURES[fn] = got
    except TypeError:  # pragma: no cover - hashable and referenceable above
        pass
    return got


def _signature(fn: Callable[..., Any]) -> inspect.Signature:
    import inspect  # compiling a pair needs it, importing envglot does not

    return inspect.signature(fn)
