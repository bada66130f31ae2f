"""The golden corpus: envelopes of every dialect, their canonical forms, pinned writes.

Layout (pandoc's reader goldens, sqlglot's table-driven cases):

- ``<dialect>/<case>.json``: an input envelope. Case stems are unique across dialects.
- ``canonical/<dialect>/<case>.json``: ``msgspec.json.encode(envglot.read(input))``,
  pretty-printed (2 spaces): the hub form every reader must produce.
- ``expected/<case>.<target>.json``: the compact output of converting ``<case>`` to
  ``<target>``, pretty-printed. Only the writes listed in :data:`PINNED` are kept: a
  write back into the source dialect that is not JSON-equal to the input, and the
  cross-dialect writes worth reviewing line by line (the legacy-v1 migration, multi-error
  and wrapping cases, the writers' synthesized fields).

``python tests/golden/regen.py`` rewrites the canonical and expected files from the
current code; every changed file must be reviewed before it is committed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

import envglot
from envglot.dialects import NAMES, WRITABLE

__all__ = [
    "GOLDEN",
    "PINNED",
    "Case",
    "canonical_form",
    "cases",
    "json_key",
    "pretty",
    "write",
]

GOLDEN = Path(__file__).resolve().parent

PINNED: dict[str, tuple[str, ...]] = {
    # -- writes back into the source dialect that differ from the input --
    "status-mismatch": ("dotbot",),  # status is computed from errors/warnings
    "retryable-contradicts-code": ("errorcode",),  # retryable is derived from the code
    "unknown-enum-code": ("errorcode",),  # a closed enum: an unknown code is mapped
    "spec-digest-ok": ("code-graph",),  # approxTokens is recomputed
    "spec-issues-error": ("code-graph", "response-v2", "result"),
    "warning-details-only": ("response-v2",),  # every warning message goes to meta.warnings
    # -- cross-dialect writes --
    "spec-3-register-error": ("response-v2", "errorcode"),
    "real-multi-error": ("response-v2", "result"),
    "spec-5-actions": ("code-graph",),
    "ok-list-value": ("dotbot", "response-v2"),
    "failure-exception": ("dotbot", "response-v2"),
    "rate-limited-workflow": ("response-v2", "dotbot"),
    "thread-partial-failure": ("response-v2",),
    "spec-validation-error": ("errorcode", "code-graph", "result"),
    "real-rate-limited": ("errorcode",),
    # -- the legacy-v1 -> response-v2 migration, every case --
    "a-success-docs": ("response-v2",),
    "a-success-false": ("response-v2",),
    "a-found-true": ("response-v2",),
    "a-found-false": ("response-v2",),
    "a-found-false-error": ("response-v2",),
    "a-nothing-list-specs": ("response-v2",),
    "a-error-alone": ("response-v2",),
    "a-error-empty-defaults": ("response-v2",),
    "a-testing-schema-version-error": ("response-v2",),
    "b-interim-meta-warnings": ("response-v2",),
    "b-interim-error": ("response-v2",),
    "b-interim-timing-only": ("response-v2",),
}
"""Case stem -> target dialects whose output is pinned in ``expected/``."""


@dataclass(frozen=True)
class Case:
    """One input envelope of the corpus."""

    dialect: str
    stem: str

    @property
    def path(self) -> Path:
        return GOLDEN / self.dialect / f"{self.stem}.json"

    @property
    def canonical_path(self) -> Path:
        return GOLDEN / "canonical" / self.dialect / f"{self.stem}.json"

    def expected_path(self, target: str) -> Path:
        return GOLDEN / "expected" / f"{self.stem}.{target}.json"

    @property
    def data(self) -> bytes:
        return self.path.read_bytes()

    @property
    def pinned(self) -> tuple[str, ...]:
        return PINNED.get(self.stem, ())

    def __str__(self) -> str:
        return f"{self.dialect}/{self.stem}"


@functools.cache
def cases(dialect: str | None = None) -> tuple[Case, ...]:
    """Every case of ``dialect`` (or of all dialects), sorted."""
    names = NAMES if dialect is None else (dialect,)
    return tuple(Case(d, p.stem) for d in names for p in sorted((GOLDEN / d).glob("*.json")))


def pretty(buf: bytes) -> bytes:
    """The golden-file form of a JSON document: 2-space indent, trailing newline."""
    return msgspec.json.format(buf, indent=2) + b"\n"


def canonical_form(case: Case) -> bytes:
    """The canonical envelope read from ``case``, in golden-file form."""
    return pretty(msgspec.json.encode(envglot.read(case.data, from_=case.dialect)))


def write(case: Case, target: str) -> bytes:
    """``case`` converted to ``target`` (compact, diagnostics ignored), in golden-file form."""
    if target not in WRITABLE:
        raise ValueError(f"{target} is not writable")
    return pretty(envglot.convert(case.data, from_=case.dialect, to=target, unsupported="ignore"))


def json_key(doc: bytes | str | Any) -> bytes:
    """A comparison key for JSON equality that keeps types apart (``1``, ``1.0``, ``true``).

    Bytes and str are parsed as JSON; anything else is taken as an already-decoded value.
    """
    value = msgspec.json.decode(doc) if isinstance(doc, bytes | str) else doc
    return msgspec.json.encode(value, order="sorted")
