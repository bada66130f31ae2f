"""Documents of any registered dialect, derived from the registry (never from a list of names).

- :func:`canonical_envelopes`: hypothesis strategy of canonical :class:`envglot.Envelope`\\ s
  whose fields every writer can express or report (categories from ``canonical.toml``).
- :func:`documents`: a strategy of valid documents of one dialect, as decoded JSON. A
  dialect's own unit may declare a hand-tuned one (an ``envelopes`` strategy in
  ``tests/dialects/<name>/test_<module>.py``, reaching its quirks: unknown keys of a newer emitter,
  unknown codes); otherwise a writable dialect's documents are canonical envelopes written by
  its writer, and a read-only dialect's are its golden and example files.
- :func:`sample_files`: a dialect's golden and example documents, found by convention
  (``tests/dialects/<name>/cases/*.json``, ``examples/<name>/*.json``).
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path
from typing import Any

import msgspec
from hypothesis import strategies as st

import envglot
from envglot.canonical import Envelope, Notice, Problem
from envglot.dialect import Dialect, get_dialect
from envglot.mappings import default_mappings

__all__ = [
    "canonical_envelopes",
    "code_of",
    "counts",
    "detected_as",
    "documents",
    "json_values",
    "objects",
    "record",
    "sample_files",
    "scalars",
    "some_objects",
    "text",
    "unit_module",
    "unit_table",
]

ROOT = Path(__file__).resolve().parents[1]

# -- JSON building blocks (for the dialects' own ``envelopes`` strategies) ---------------------

text = st.text(max_size=8)  # any unicode (no lone surrogates): quotes, backslashes, controls, emoji
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
)
"""Payloads: any JSON value."""
_KEYS = st.sampled_from(["a", "id", "value", "error", "x y", 'q"uote', "\\", "é", "😀", ""])
objects = st.dictionaries(_KEYS | text, scalars | st.lists(scalars, max_size=2), max_size=3)
"""Small objects for details, parameters, limits, contexts."""
some_objects = objects.filter(bool)
counts = st.integers(min_value=0, max_value=2**53)


def code_of(dialect: str) -> st.SearchStrategy[str]:
    """A code the dialect's table knows, or an unknown one."""
    unknown = st.text(alphabet="ABCDEFGHIJ_xyz", min_size=1, max_size=10)
    return st.sampled_from(sorted(default_mappings()[dialect].codes)) | unknown


def record(
    required: dict[str, Any],
    optional: dict[str, Any] | None = None,
    extra: bool = True,
    known: frozenset[str] = frozenset(),
) -> st.SearchStrategy:
    """An object with ``required`` keys, any of ``optional``, and (``extra``) unknown keys of a newer emitter.

    Unknown keys avoid ``known`` (the dialect's other field names) and the preserve slot.
    """
    base = st.fixed_dictionaries(
        {k: v if isinstance(v, st.SearchStrategy) else st.just(v) for k, v in required.items()},
        optional=optional or {},
    )
    if not extra:
        return base
    taken = set(required) | set(optional or {}) | set(known) | {"_envglot"}
    unknown = st.dictionaries(text.filter(lambda k: k not in taken), json_values, max_size=1)
    return st.builds(lambda d, e: {**d, **e}, base, unknown)


# -- canonical envelopes and documents of any dialect ------------------------------------------


def _raw(value: Any) -> msgspec.Raw:
    return msgspec.Raw(msgspec.json.encode(value))


@functools.cache
def canonical_envelopes() -> st.SearchStrategy[Envelope]:
    """Canonical envelopes: success or failure, payload, summary, problems, warnings, request id, timing."""
    categories = st.sampled_from(sorted(default_mappings().categories))
    problems = st.builds(
        Problem, category=categories, message=text, retryable=st.none() | st.booleans(), details=st.none()
    )
    warnings = st.builds(Notice, message=text)
    common = {
        "payload": st.none() | objects.map(_raw),
        "summary": st.none() | text,
        "warnings": st.lists(warnings, max_size=2).map(tuple),
        "request_id": st.none() | st.text(alphabet="0123456789abcdef", min_size=8, max_size=12),
        "duration_ms": st.none() | st.integers(0, 10**6),
    }
    ok = st.builds(Envelope, ok=st.just(True), **common)
    some = st.lists(problems, min_size=1, max_size=2).map(tuple)
    failed = st.builds(Envelope, ok=st.just(False), problems=some, **common)
    return ok | failed


def detected_as(doc: bytes, name: str) -> bool:
    """``doc`` is detected as dialect ``name``, or is a success of a dialect whose successes carry
    no marker (``Shape.marked_success``: read with ``from_`` only, so detection need not name it)."""
    if envglot.detect(doc) == name:
        return True
    return not get_dialect(name).shape.marked_success and envglot.read(doc, from_=name).ok


def unit_path(dialect: Dialect) -> Path:
    """Where the dialect's own test module lives: ``tests/dialects/<name>/test_<module>.py``."""
    return ROOT / "tests" / "dialects" / dialect.name / f"test_{dialect.name.replace('-', '_')}.py"


def unit_module(dialect: Dialect) -> Any:
    """The dialect's own test module, or ``None``: the one pytest imported (its folder is no
    package, so pytest names it by its file name), else imported here under that name."""
    path = unit_path(dialect)
    if not path.is_file():
        return None
    name = path.stem
    mod = sys.modules.get(name)
    if mod is not None and Path(mod.__file__ or "") == path:
        return mod
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def unit_table(name: str, attr: str) -> dict[str, Any]:
    """A table the dialect's own unit declares, by convention (``{}`` when it declares none):

    ``DERIVED``: wire path -> the wire paths it is derived from (a change at it, or inside it, is
    explained by a diagnostic on a base); ``LOSS_XFAIL``: case stem -> why ``test_matrix``'s loss
    check fails for it (a reason: for every other target; a dict target -> reason: for those only).
    """
    value = getattr(unit_module(get_dialect(name)), attr, None)
    return value if isinstance(value, dict) else {}


def sample_files(name: str) -> tuple[Path, ...]:
    """The dialect's golden and example documents, by convention."""
    dirs = (ROOT / "tests" / "dialects" / name / "cases", ROOT / "examples" / name)
    return tuple(p for d in dirs for p in sorted(d.glob("*.json")))


def documents(name: str) -> st.SearchStrategy[dict[str, Any]]:
    """Valid-shaped documents of dialect ``name`` (decoded JSON objects)."""
    d = get_dialect(name)
    own = getattr(unit_module(d), "envelopes", None)
    if isinstance(own, st.SearchStrategy):
        return own
    if d.shape.writable:
        return canonical_envelopes().map(
            lambda env: msgspec.json.decode(envglot.write(env, to=d.name, unsupported="ignore"))
        )
    files = [p.read_bytes() for p in sample_files(name)]  # decoded afresh per draw: callers may mutate it
    return st.sampled_from(files).map(msgspec.json.decode) if files else st.nothing()
