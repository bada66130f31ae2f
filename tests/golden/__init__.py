"""The golden corpus helpers: every registered dialect's cases, canonical forms and pinned writes.

Each dialect keeps its own material in ``tests/dialects/<dialect>/`` (pandoc's reader goldens,
sqlglot's table-driven cases); nothing here names a dialect:

- ``cases/<case>.json``: an input envelope. Case stems are unique across dialects.
- ``canonical/<case>.json``: ``msgspec.json.encode(envglot.read(input))``, pretty-printed
  (2 spaces): the hub form every reader must produce.
- ``expected/<case>.<target>.json``: the compact output of converting ``<case>`` to
  ``<target>``, pretty-printed. The file's presence pins the write (:func:`pinned_writes`): a
  write back into the source dialect that is not JSON-equal to the input, and the
  cross-dialect writes worth reviewing line by line. ``expected/README.md`` says why each is
  pinned (a test checks that it names every pinned case); deleting the file unpins it.

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
from envglot.dialect import dialect_names, writable_names

__all__ = [
    "DIALECTS",
    "GOLDEN",
    "Case",
    "canonical_form",
    "cases",
    "json_key",
    "own_dir",
    "pinned_writes",
    "pretty",
    "write",
    "written_files",
]

GOLDEN = Path(__file__).resolve().parent
DIALECTS = GOLDEN.parent / "dialects"
"""``tests/dialects``: one folder per registered dialect, named after it."""


def own_dir(dialect: str) -> Path:
    """The folder of ``dialect``'s own test material."""
    return DIALECTS / dialect


@functools.cache
def pinned_writes() -> dict[str, tuple[str, ...]]:
    """Case stem -> target dialects whose output is pinned: the files in ``expected/`` say it.

    A file ``expected/<stem>.<target>.json`` pins the write of case ``<stem>`` to ``<target>``
    (``python tests/golden/regen.py --pin <stem> <target>`` creates one); why each is pinned is
    in the case's dialect's ``expected/README.md``. No list of cases or dialects is kept here.
    """
    out: dict[str, list[str]] = {}
    for p in sorted(DIALECTS.glob("*/expected/*.json")):
        stem, _, target = p.name[: -len(".json")].rpartition(".")
        out.setdefault(stem, []).append(target)
    return {k: tuple(v) for k, v in out.items()}


@dataclass(frozen=True)
class Case:
    """One input envelope of the corpus."""

    dialect: str
    stem: str

    @property
    def path(self) -> Path:
        return own_dir(self.dialect) / "cases" / f"{self.stem}.json"

    @property
    def canonical_path(self) -> Path:
        return own_dir(self.dialect) / "canonical" / f"{self.stem}.json"

    def expected_path(self, target: str) -> Path:
        return own_dir(self.dialect) / "expected" / f"{self.stem}.{target}.json"

    @property
    def data(self) -> bytes:
        return self.path.read_bytes()

    @property
    def pinned(self) -> tuple[str, ...]:
        return pinned_writes().get(self.stem, ())

    def __str__(self) -> str:
        return f"{self.dialect}/{self.stem}"


@functools.cache
def cases(dialect: str | None = None) -> tuple[Case, ...]:
    """Every case of ``dialect`` (or of all dialects), sorted."""
    names = dialect_names() if dialect is None else (dialect,)
    return tuple(Case(d, p.stem) for d in names for p in sorted((own_dir(d) / "cases").glob("*.json")))


def written_files() -> set[Path]:
    """Every canonical and pinned file on disk (what :mod:`regen` writes), of every dialect folder."""
    return set(DIALECTS.glob("*/canonical/*.json")) | set(DIALECTS.glob("*/expected/*.json"))


def pretty(buf: bytes) -> bytes:
    """The golden-file form of a JSON document: 2-space indent, trailing newline."""
    return msgspec.json.format(buf, indent=2) + b"\n"


def canonical_form(case: Case) -> bytes:
    """The canonical envelope read from ``case``, in golden-file form."""
    return pretty(msgspec.json.encode(envglot.read(case.data, from_=case.dialect)))


def write(case: Case, target: str) -> bytes:
    """``case`` converted to ``target`` (compact, diagnostics ignored), in golden-file form."""
    if target not in writable_names():
        raise ValueError(f"{target} is not writable")
    return pretty(envglot.convert(case.data, from_=case.dialect, to=target, unsupported="ignore"))


def json_key(doc: bytes | str | Any) -> bytes:
    """A comparison key for JSON equality that keeps types apart (``1``, ``1.0``, ``true``).

    Bytes and str are parsed as JSON; anything else is taken as an already-decoded value.
    """
    value = msgspec.json.decode(doc) if isinstance(doc, bytes | str) else doc
    return msgspec.json.encode(value, order="sorted")
