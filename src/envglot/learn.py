"""``envglot learn``: a declaration (docs/declared-dialects.md) inferred from a server's responses.

Over 500 lines: inferring every canonical part of a declaration from samples; the rules share one sample table.

:func:`read_samples` reads the responses as ``migrate`` reads its inputs (files, folders, JSON
Lines, ``.gz``; CallToolResults and JSON-RPC responses unwrapped by the pipeline's own code);
:func:`learn` infers where every canonical part lives and writes the declaration as commented
TOML (each rule says how many samples support it and which contradict it; each inferred code
category is flagged ``⚑`` for review); :func:`check_examples` is the check ``envglot mappings
check --examples`` runs, and ``learn`` refuses to hand out a declaration that fails it on its
own samples. See ``docs/learn.md``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import tempfile
import textwrap
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from .api import convert, detection, unwrap
from .declared import DeclaredDialect, field_types, valid_name
from .dialect import get_dialect, registered
from .errors import EnvglotError, MappingError
from .excerpt import excerpt
from .mappings import Mappings, default_mappings, load_mappings, mappings_dir
from .mcp import is_error as outcome_is_error
from .residue import format_path
from .validation import validate

__all__ = [
    "MAX_CODE",
    "MAX_MEMBERS",
    "MAX_SAMPLES",
    "LearnError",
    "Sample",
    "check_examples",
    "first_difference",
    "from_server",
    "learn",
    "learn_checked",
    "read_samples",
]

MAX_SAMPLES = 1000
"""Samples one run reads at most (inference compares every sample with every rule)."""
_MAX_DEPTH = 4
"""How deep a member is looked for (payload, fields, error object)."""
_ANY = msgspec.json.Decoder()
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WIDE = 64
"""An object with more members is data (a payload's), not a part of the envelope: not looked into."""
MAX_MEMBERS = 4096
"""Distinct member paths the samples may hold (outside wide objects): inference compares each with each rule."""
_MAX_KEY = 64
"""Longest member name learn declares (a longer one stays an undeclared member)."""
MAX_CODE = 128
"""Longest code learn puts in a declaration."""
_BARE = re.compile(r"[A-Za-z0-9_-]+")
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_JSON: dict[Any, tuple[type, ...]] = {
    str: (str,),
    bool: (bool,),
    int: (int,),
    int | float: (int, float),
    msgspec.Raw: (dict, list, str, int, float, bool),
}
_TYPE = {f: _JSON[t] for f, t in field_types().items()}
"""The JSON types a member must hold to carry a canonical field (the declared wire types)."""
_SCALARS = tuple(
    f
    for f, t in _TYPE.items()
    if f not in ("ok", "payload") and not f.startswith(("problem.", "warning.")) and t != _JSON[msgspec.Raw]
)
"""Canonical scalars learn looks for outside the error, payload and warnings (by name, then type)."""
_PROBLEM = tuple(f for f in _TYPE if f.startswith("problem.") and f != "problem.code")
_WARNING = tuple(f for f in _TYPE if f.startswith("warning.") and f != "warning.message")

Path_ = tuple[str, ...]


class LearnError(EnvglotError):
    """The samples do not support a declaration; the message says what is missing."""


class Sample(msgspec.Struct, frozen=True):
    """One response: its name (``FILE`` or ``FILE:LINE``), the envelope and what came with it."""

    name: str
    envelope: bytes
    """The envelope (taken out of its CallToolResult or JSON-RPC response, if it was in one)."""
    record: bytes
    """The record as read (what ``mappings check --examples`` reads again)."""
    is_error: bool | None = None
    """The CallToolResult's ``isError``; ``None`` when the sample was a bare envelope."""
    indent: int | None = None
    """The sample's own indentation (-1: minified); ``None`` when it says nothing (a wrapped one)."""


# --- reading ---------------------------------------------------------------------------------


def read_samples(inputs: Sequence[str], stdin: BinaryIO | None = None) -> list[Sample]:
    """Every response among ``inputs`` (as ``migrate`` reads them), unwrapped.

    Raises:
        LearnError: a record is not an envelope (named with its file and line), or too many.
        MigrationError: an input is missing or unreadable.
    """
    from .migration.reading import input_records

    out: list[Sample] = []
    for name, rec in input_records(inputs, stdin=stdin):
        if len(out) >= MAX_SAMPLES:
            raise LearnError(f"more than {MAX_SAMPLES} samples; learn from a few of each kind of response")
        out.append(_sample(name, rec))
    return out


def _sample(name: str, rec: bytes) -> Sample:
    try:
        env, det, is_error = unwrap(rec)
    except EnvglotError as exc:
        raise LearnError(f"{name}: {exc}", path=exc.path) from None
    indent = None if det.unwrapped else _indent(rec)
    return Sample(name=name, envelope=env, record=rec, is_error=is_error, indent=indent)


def _indent(rec: bytes) -> int:
    m = re.search(rb"\n( +)\S", rec)
    return len(m.group(1)) if m else -1


# --- the vocabulary ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _snake(key: str) -> str:
    return "_".join(w.lower() for w in _WORD.findall(key))


class _Vocabulary:
    """Member names per canonical field, and the bundled codes' categories (all derived from the tables)."""

    def __init__(self, m: Mappings) -> None:
        names: dict[str, set[str]] = {}
        bundled = [d for d in registered() if not isinstance(d, DeclaredDialect)]
        for d in bundled:
            for f, path in m[d.name].fields.items():
                last = path.removesuffix("[]").rsplit(".", 1)[-1]
                if last != "$":
                    names.setdefault(f, set()).add(_snake(last))
        names.setdefault("problem.message", set()).update(_snake(k) for k in m.message_keys)
        for f, extra in _learn_table().names.items():
            names.setdefault(f, set()).update(_snake(k) for k in extra)
        self.names = {f: frozenset(v) for f, v in names.items()}
        self.bundled_keys = frozenset().union(*(d.keys for d in bundled))
        exact: dict[str, Counter[str]] = {}
        origin: dict[str, str] = {}
        for d in bundled:
            for code, row in m[d.name].codes.items():
                k = _snake(code) or code
                exact.setdefault(k, Counter())[row.category] += 1
                origin.setdefault(k, f"{d.name}'s {code}")
        for r in m.error_types:
            for col, word in r.words.items():
                k = _snake(word)
                exact.setdefault(k, Counter())[r.category] += 1
                origin.setdefault(k, f"{col}'s {word}")
        for cat in m.categories:
            exact.setdefault(cat, Counter())[cat] += 2
            origin.setdefault(cat, f"the category {cat}")
        self.exact = exact
        self.origin = origin
        words: dict[str, Counter[str]] = {}
        for k, cats in exact.items():
            for w in k.split("_"):
                words.setdefault(w, Counter()).update(cats)
        self.words = words
        self.unknown = m.unknown_category

    def reads_as(self, field: str, key: str) -> bool:
        return _snake(key) in self.names.get(field, frozenset())

    def category(self, code: str) -> tuple[str, str]:
        """``(category, why)`` for a code: a bundled code it equals, else the words it shares with them."""
        ws = _snake(code).split("_") if _snake(code) else [code]
        for n in range(len(ws), 0, -1):
            found: Counter[str] = Counter()
            whys = []
            for i in range(len(ws) - n + 1):
                k = "_".join(ws[i : i + n])
                if k in self.exact:
                    found.update(self.exact[k])
                    whys.append(self.origin[k])
            if found:
                cat = _top(found)
                return cat, ("equals " if n == len(ws) else "contains ") + ", ".join(sorted(set(whys)))
        votes: dict[str, float] = {}
        hit = []
        for w in ws:
            cats = self.words.get(w)
            if cats:
                total = sum(cats.values())
                for c, cnt in cats.items():
                    votes[c] = votes.get(c, 0.0) + cnt / total
                hit.append(w)
        if votes:
            return _top(votes), "the bundled codes sharing the words " + ", ".join(repr(w) for w in hit)
        return self.unknown, "no word of it is in the bundled codes"


class _LearnTable(msgspec.Struct, forbid_unknown_fields=True):
    """``mappings/learn.toml``."""

    names: dict[str, list[str]] = {}


_LOOKED_FOR = frozenset(
    {"ok", "payload", "problems", "warnings", "problem.code", "warning.message", *_SCALARS, *_PROBLEM, *_WARNING}
)
"""The canonical fields learn looks for (the keys ``learn.toml`` may name)."""


def _learn_table() -> _LearnTable:
    import tomllib

    path = mappings_dir() / "learn.toml"
    try:
        table = msgspec.convert(tomllib.loads(path.read_text()), _LearnTable)
    except (OSError, tomllib.TOMLDecodeError, msgspec.ValidationError) as exc:
        raise MappingError(f"{path}: cannot read learn's vocabulary: {exc}") from None
    for f in table.names:
        if f not in _LOOKED_FOR:
            raise MappingError(f"{path}: [names] {f!r} is not a field learn looks for", path=f"$.names.{f}")
    return table


def _top(c: Mapping[str, float]) -> str:
    return min(c, key=lambda k: (-c[k], k))


# --- the samples' members ---------------------------------------------------------------------

_NOTHING = object()


def _get(doc: Any, path: Path_) -> Any:
    for k in path:
        if not isinstance(doc, dict) or k not in doc:
            return _NOTHING
        doc = doc[k]
    return doc


def _members(doc: dict[str, Any], base: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every member reachable through objects (not arrays), in document order, plain keys only;
    not inside an object wider than an envelope part (``_WIDE`` members: a payload's data)."""
    for k, v in doc.items():
        if len(k) > _MAX_KEY or _KEY.fullmatch(k) is None:
            continue
        p = (*base, k)
        yield p, v
        if isinstance(v, dict) and len(p) < _MAX_DEPTH and len(v) <= _WIDE:
            yield from _members(v, p)


def _wire(path: Path_, array: bool = False) -> str:
    return "$." + ".".join(path) + ("[]" if array else "")


def _inside(path: Path_, others: Iterable[Path_]) -> bool:
    return any(path[: len(o)] == o for o in others)


def _typed(v: Any, types: tuple[type, ...]) -> bool:
    if isinstance(v, bool) and bool not in types:
        return False
    return isinstance(v, types)


def _shown(name: str) -> str:
    """A sample's or tool's name as a comment or message may carry it: one bounded printable line."""
    return excerpt(name if name.isprintable() else name.encode("unicode_escape").decode("ascii"))


def _names(names: Sequence[str], limit: int = 4) -> str:
    shown = ", ".join(_shown(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _all(n: int, word: str) -> str:
    """``the 1 failure`` / ``all 3 failures``."""
    return f"the 1 {word}" if n == 1 else f"all {_count(n, word)}"


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 'es' if word.endswith('s') else 's'}"


class _Error:
    """Where a failure's error lives: the member, whether it is an array, each failing sample's errors."""

    def __init__(self, path: Path_, array: bool, items: list[list[dict[str, Any]]], failed: list[int]) -> None:
        self.path = path
        self.array = array
        self.items = items
        """Per failing sample (in ``failed`` order): its error objects."""
        self.failed = failed


def _error_items(v: Any) -> tuple[bool, list[dict[str, Any]]] | None:
    """``(array, objects)`` when ``v`` holds an error (an object, or a non-empty array of them)."""
    if isinstance(v, dict) and v:
        return False, [v]
    if isinstance(v, list) and v and all(isinstance(x, dict) and x for x in v):
        return True, list(v)
    return None


def _empty(v: Any) -> bool:
    return v is _NOTHING or v is None or v == []


class _Learner:
    """The inference over sorted samples; :meth:`text` is the declaration."""

    def __init__(
        self, samples: list[Sample], name: str, m: Mappings, schemas: Sequence[tuple[str, dict[str, Any]]]
    ) -> None:
        self.samples = samples
        self.name = name
        self.m = m
        self.vocab = _Vocabulary(m)
        self.schemas = list(schemas)
        self.docs: list[dict[str, Any]] = [_ANY.decode(s.envelope) for s in samples]
        self.n = len(samples)
        paths: set[Path_] = set()
        for d in self.docs:
            paths.update(p for p, _ in _members(d))
            if len(paths) > MAX_MEMBERS:
                raise LearnError(
                    f"the samples hold more than {MAX_MEMBERS} distinct members; learn from a few responses of "
                    "one server"
                )
        self.detected: Counter[str] = Counter()
        """How many samples each bundled dialect's markers claim (valid or not)."""
        self.notes: list[str] = []
        """Findings that are no rule (what the format cannot say, what was left undeclared)."""

    def parents_ok(self, p: Path_) -> bool:
        """Whether every object on the way to ``p`` is an object (or absent) in every sample."""
        return all(
            _get(d, p[:k]) is _NOTHING or isinstance(_get(d, p[:k]), dict) for d in self.docs for k in range(1, len(p))
        )

    def label(self, idx: Iterable[int]) -> str:
        return _names(sorted(self.samples[i].name for i in idx))

    # -- refusals before inference --------------------------------------------------------

    def refuse_bundled_and_mixed(self) -> None:
        from .detect import classify

        bundled: dict[int, str] = {}  # valid envelopes of a bundled dialect
        claimed: dict[int, str] = {}  # with a bundled dialect's markers, valid or not
        for i, s in enumerate(self.samples):
            det = classify(s.envelope)
            d = get_dialect(det.dialect)
            if det.evidence is not None and not isinstance(d, DeclaredDialect):
                self.detected[d.name] += 1
                claimed[i] = d.name
                if not validate(s.envelope, d.name, mappings=self.m):
                    bundled[i] = d.name
        if len(bundled) == self.n:
            kinds = Counter(bundled.values())
            what = (
                f"{next(iter(kinds))} envelopes (a bundled dialect)"
                if len(kinds) == 1
                else "envelopes of bundled dialects (" + ", ".join(f"{d}: {c}" for d, c in sorted(kinds.items())) + ")"
            )
            raise LearnError(
                f"the samples are already {what}: envglot reads them as they are (envglot convert -t DIALECT); "
                "no declaration is needed"
            )
        groups = self._groups(claimed)
        if len(groups) > 1:
            parts = []
            for k, (label, idx) in enumerate(groups, 1):
                keys = sorted(set().union(*(self.docs[i].keys() for i in idx)))
                what = label or "members " + ", ".join(keys[:6]) + (", ..." if len(keys) > 6 else "")
                parts.append(f"[{k}] {_names(sorted(self.samples[i].name for i in idx), 2)} ({what})")
            raise LearnError(
                f"the samples hold {len(groups)} kinds of envelope; learn one server at a time: "
                + "; ".join(parts)
                + " (if they are one server's, they share no member of their own: a declaration's detection needs one)"
            )

    def _groups(self, claimed: dict[int, str]) -> list[tuple[str | None, list[int]]]:
        """Samples joined when they share half the members of the smaller one, counting the members no
        bundled dialect has when both have some; two samples with bundled dialects' markers are joined
        when the dialect is the same (a group of one dialect's samples says so)."""
        parent = list(range(self.n))

        def find(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        own = [set(d) - self.vocab.bundled_keys for d in self.docs]  # the members that tell servers apart
        for i in range(self.n):
            for j in range(i + 1, self.n):
                if i in claimed and j in claimed:
                    if claimed[i] == claimed[j]:
                        parent[find(i)] = find(j)
                    continue
                a, b = (own[i], own[j]) if own[i] and own[j] else (set(self.docs[i]), set(self.docs[j]))
                if a & b and 2 * len(a & b) >= min(len(a), len(b)):
                    parent[find(i)] = find(j)
        by: dict[int, list[int]] = {}
        for i in range(self.n):
            by.setdefault(find(i), []).append(i)
        out: list[tuple[str | None, list[int]]] = []
        for idx in by.values():
            names = {claimed.get(i) for i in idx}
            one = names.pop() if len(names) == 1 else None
            out.append((f"{one}'s markers" if one else None, idx))
        return sorted(out, key=lambda g: g[1][0])

    # -- the outcome ----------------------------------------------------------------------

    def error(self) -> _Error:
        cands: dict[Path_, None] = {}
        strings: list[Path_] = []
        for doc in self.docs:
            for p, v in _members(doc):
                if _error_items(v) is not None:
                    cands.setdefault(p, None)
                elif isinstance(v, str) and self.vocab.reads_as("problems", p[-1]):
                    strings.append(p)
        best: tuple[tuple[Any, ...], _Error] | None = None
        everywhere: list[Path_] = []
        for p in cands:
            if not self.parents_ok(p):
                continue
            failed, items, array = [], [], set()
            ok = True
            for i, doc in enumerate(self.docs):
                v = _get(doc, p)
                got = _error_items(v)
                if got is not None:
                    failed.append(i)
                    items.append(got[1])
                    array.add(got[0])
                elif not _empty(v):
                    ok = False
            if ok and len(failed) == self.n:
                everywhere.append(p)
            if array == {False} and any(_get(d, p) == [] for d in self.docs):
                ok = False  # an object on failure, an empty array on success: no declared shape says both
            if not ok or len(array) != 1 or not failed or len(failed) == self.n:
                continue
            err = _Error(p, array.pop(), items, failed)
            code = self._code_key(err)
            named = self.vocab.reads_as("problems", p[-1])
            if code is None and not named:  # objects that come and go, neither named nor coded as errors
                continue
            rank = (code is not None, named, len(failed), -len(p), p)
            if best is None or rank > best[0]:
                best = (rank, err)
        failing = [i for i, s in enumerate(self.samples) if s.is_error]
        if best is None:
            if strings:
                p = sorted(strings)[0]
                raise LearnError(
                    f"the failures' error {_wire(p)} is a string; a declared error is an object with a code "
                    "(string errors need a later declaration format, issue 24, or a Python dialect)"
                )
            always = [p for p in everywhere if self.vocab.reads_as("problems", p[-1])]
            if always:
                raise LearnError(
                    f"no success seen: {_wire(always[0])} holds an error in every sample; the payload and the "
                    "outcome cannot be inferred — add a successful response"
                )
            flags = [
                p
                for p, v in _members(self.docs[0])
                if isinstance(v, bool) and {x for d in self.docs if isinstance(x := _get(d, p), bool)} == {True, False}
            ]
            if flags or failing:
                why = f"{_wire(flags[0])} varies" if flags else f"{self.label(failing)} failed (isError)"
                raise LearnError(
                    f"{why}, but no failure carries an error object with a code; a declared error is one "
                    "(an error that is only a flag and a message needs a later declaration format, issue 24)"
                )
            raise LearnError("no failure seen; the error shape cannot be inferred — add a failing response")
        err = best[1]
        code = self._code_key(err)
        long = [it[code] for its in err.items for it in its if code is not None and len(it[code]) > MAX_CODE]
        if long:
            raise LearnError(f"a code of {len(long[0])} characters; learn declares codes of at most {MAX_CODE}")
        if code is None:
            keys = sorted({k for its in err.items for it in its for k in it})
            ints = [
                k
                for k in keys
                if self.vocab.reads_as("problem.code", k)
                and all(isinstance(it.get(k), int) for its in err.items for it in its)
            ]
            if ints:
                raise LearnError(
                    f"{_wire((*err.path, ints[0]), False)} holds integer codes; a declaration reads string codes "
                    "(integer codes need a later declaration format, issue 24)"
                )
            raise LearnError(
                f"the failures' error {_wire(err.path)} has no member that reads as a code in every error "
                f"(its members: {', '.join(keys)}); a declared error needs a string code"
            )
        return err

    def _code_key(self, err: _Error) -> str | None:
        objs = [it for its in err.items for it in its]
        keys = [
            k
            for k in objs[0]
            if self.vocab.reads_as("problem.code", k) and all(isinstance(o.get(k), str) and o[k] for o in objs)
        ]
        return min(keys, key=lambda k: ("code" not in k, len(k), k)) if keys else None

    def flag(self, err: _Error) -> tuple[Path_ | None, str]:
        """The boolean member that says the outcome (``None``: the error's presence says it), and why."""
        failed = set(err.failed)
        found: list[Path_] = []
        notes: list[str] = []
        for p, v in _members(self.docs[0]):
            if not isinstance(v, bool) or _inside(p, [err.path]):
                continue
            vals = [_get(d, p) for d in self.docs]
            if not all(isinstance(x, bool) for x in vals):
                continue
            agree = [i for i, x in enumerate(vals) if x == (i not in failed)]
            if len(agree) == self.n:
                found.append(p)
            elif not agree:
                notes.append(
                    f"{_wire(p)} is true on failures: a declaration reads a flag that is true on success "
                    "(an inverted flag needs issue 24); it stays an undeclared member"
                )
            elif len(agree) * 2 > self.n:
                bad = [i for i in range(self.n) if i not in agree]
                notes.append(f"{_wire(p)} follows the outcome except in {self.label(bad)}: not the outcome flag")
        for p, v in _members(self.docs[0]):
            if isinstance(v, str) and not _inside(p, [err.path]):
                vals = [_get(d, p) for d in self.docs]
                if all(isinstance(x, str) for x in vals):
                    fv = {vals[i] for i in failed}
                    sv = {vals[i] for i in range(self.n) if i not in failed}
                    named = any(self.vocab.reads_as(f, p[-1]) for f in _SCALARS)  # a field, not a status
                    if not fv & sv and len(fv) == 1 and len(failed) >= 2 and not named:
                        notes.append(
                            f"{_wire(p)} is {_q(next(iter(fv)))} on failures and {'/'.join(map(_q, sorted(sv)))} "
                            "on successes: an enum outcome needs a later declaration format (issue 24); "
                            "it stays an undeclared member"
                        )
        self.notes += notes
        carried = [i for i, d in enumerate(self.docs) if i not in failed and _get(d, err.path) not in (_NOTHING, None)]
        if found and carried:  # an empty error on a success: only the error's presence says the outcome
            self.notes.append(
                f"{_wire(found[0])} follows the outcome, but {self.label(carried)} carry an empty {_wire(err.path)}: "
                "a declared flag needs the error absent (or null) on success; the outcome is the error's presence"
            )
            found = []
        if not found:
            return None, ""
        p = min(found, key=lambda p: (not self.vocab.reads_as("ok", p[-1]), len(p), p))
        return p, (
            f"{_wire(p)} is true in {_all(self.n - len(failed), 'success')} and false in "
            f"{_all(len(failed), 'failure')}; none contradicts it"
        )

    def payload(self, err: _Error, flag: Path_ | None) -> tuple[Path_, str]:
        failed = set(err.failed)
        succ = [i for i in range(self.n) if i not in failed]
        taken = [err.path] + ([flag] if flag else [])
        best: tuple[tuple[Any, ...], Path_] | None = None
        seen: dict[Path_, None] = {}
        for i in succ:
            for p, _ in _members(self.docs[i]):
                seen.setdefault(p, None)
        # members that read as envelope fields: one holding them is an envelope part, no payload
        fieldlike = [q for q in seen if any(self.vocab.reads_as(f, q[-1]) for f in _SCALARS)]
        for p in seen:
            if _inside(p, taken) or any(_inside(t, [p]) for t in taken) or not self.parents_ok(p):
                continue  # nor one holding the error
            vals = [_get(self.docs[i], p) for i in succ]
            if any(v is _NOTHING for v in vals):
                continue
            named = self.vocab.reads_as("payload", p[-1])
            containers = sum(isinstance(v, dict | list) for v in vals)
            if not named and not containers:
                continue
            fields = sum(1 for q in fieldlike if len(q) > len(p) and q[: len(p)] == p)
            rank = (named, -fields, containers, -len(p), tuple(-ord(c) for c in ".".join(p)))
            if best is None or rank > best[0]:
                best = (rank, p)
        if best is None:
            raise LearnError(
                f"no member holds the payload in {_all(len(succ), 'success')} "
                f"({self.label(succ)}); a declaration needs a payload path"
            )
        p = best[1]
        absent = [i for i in err.failed if _get(self.docs[i], p) is _NOTHING]
        why = f"{_wire(p)} is in {_all(len(succ), 'success')}"
        why += f"; absent from {self.label(absent)}" if absent else " and in every failure"
        return p, why

    def scalars(self, taken: list[Path_]) -> dict[str, tuple[Path_, str]]:
        """Canonical scalar -> (member, why), outside the error, payload, flag and warnings."""
        seen: dict[Path_, None] = {}
        for d in self.docs:
            for p, _ in _members(d):
                if not _inside(p, taken):
                    seen.setdefault(p, None)
        out: dict[str, tuple[Path_, str]] = {}
        used: set[Path_] = set()
        for f in _SCALARS:
            cands = []
            for p in seen:
                if p in used or not self.vocab.reads_as(f, p[-1]):
                    continue
                vals = [(i, _get(d, p)) for i, d in enumerate(self.docs)]
                have = [i for i, v in vals if v is not _NOTHING and v is not None]
                wrong = [i for i, v in vals if v is not _NOTHING and v is not None and not _typed(v, _TYPE[f])]
                if wrong or not have or not self.parents_ok(p):
                    if wrong:
                        self.notes.append(
                            f"{_wire(p)} reads as {f} but holds another type in {self.label(wrong)}: not declared"
                        )
                    continue
                cands.append((-len(have), len(p), p, have))
            if cands:
                _, _, p, have = min(cands)
                missing = [i for i in range(self.n) if i not in have]
                why = f"{_wire(p)} in {len(have)} of {self.n} samples"
                why += f" (absent from {self.label(missing)})" if missing else ""
                out[f] = (p, why)
                used.add(p)
        return out

    def warnings(self, taken: list[Path_]) -> tuple[Path_, dict[str, str], str] | None:
        """The warnings array: its member, item field -> key, and why (object items only)."""
        for p in sorted({p for d in self.docs for p, v in _members(d) if isinstance(v, list)}):
            if _inside(p, taken) or not self.vocab.reads_as("warnings", p[-1]) or not self.parents_ok(p):
                continue
            lists = [(i, _get(d, p)) for i, d in enumerate(self.docs)]
            items = [x for _, v in lists if isinstance(v, list) for x in v]
            have = [i for i, v in lists if isinstance(v, list) and v]
            if items and all(isinstance(x, str) for x in items):
                self.notes.append(
                    f"{_wire(p)} holds strings: string warnings need a later declaration format (issue 24); "
                    "they stay an undeclared member (kept for this dialect, reported as dropped elsewhere)"
                )
                continue
            if not items or not all(isinstance(x, dict) for x in items):
                continue
            keys: dict[str, str] = {}
            for f in ("warning.message", *_WARNING):
                ks = [
                    k
                    for k in dict.fromkeys(k for x in items for k in x)
                    if k not in keys.values()
                    and self.vocab.reads_as(f, k)
                    and all(k not in x or _typed(x[k], _TYPE[f]) for x in items)
                    and (f != "warning.message" or all(k in x for x in items))
                ]
                if ks:
                    keys[f] = min(ks, key=lambda k: (len(k), k))
            if "warning.message" not in keys:
                self.notes.append(f"{_wire(p)}: no member of its items reads as a message in every one: not declared")
                continue
            why = f"{_wire(p, True)}: objects with a message in {_count(len(have), 'sample')} ({len(items)} items)"
            return p, keys, why
        return None

    def problem_keys(self, err: _Error, code: str) -> dict[str, tuple[str, bool]]:
        """problem field -> (key in the error object, present in every error)."""
        objs = [it for its in err.items for it in its]
        out = {"problem.code": (code, True)}
        for f in _PROBLEM:
            ks = [
                k
                for k in dict.fromkeys(k for o in objs for k in o)
                if k not in {v for v, _ in out.values()}
                and self.vocab.reads_as(f, k)
                and all(k not in o or o[k] is None or _typed(o[k], _TYPE[f]) for o in objs)
            ]
            if ks:
                k = min(ks, key=lambda k: (len(k), k))
                out[f] = (k, all(k in o and o[k] is not None for o in objs))
        return out

    def constants(self, taken: list[Path_]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in self.docs[0].items():
            if len(k) > _MAX_KEY or _KEY.fullmatch(k) is None or _inside((k,), taken) or isinstance(v, bool):
                continue
            if not isinstance(v, str | int) or (isinstance(v, str) and len(v) > MAX_CODE):
                continue
            if all(k in d and type(d[k]) is type(v) and d[k] == v for d in self.docs):
                out[k] = v
        return out

    # -- the declaration ------------------------------------------------------------------

    def text(self) -> str:
        self.refuse_bundled_and_mixed()
        err = self.error()
        failed = set(err.failed)
        for i, s in enumerate(self.samples):
            if s.is_error is not None and s.is_error != (i in failed):
                raise LearnError(
                    f"{_shown(s.name)}: its CallToolResult says isError={str(s.is_error).lower()}, but "
                    f"{_wire(err.path)} says {'failure' if i in failed else 'success'}; no rule fits every sample"
                )
        flag, flag_why = self.flag(err)
        payload, payload_why = self.payload(err, flag)
        code = self._code_key(err)
        assert code is not None
        taken = [err.path, payload] + ([flag] if flag else [])
        warn = self.warnings(taken)
        if warn is not None:
            taken.append(warn[0])
        scalars = self.scalars(taken)
        taken += [p for p, _ in scalars.values()]
        consts = self.constants(taken)
        pkeys = self.problem_keys(err, code)

        # detection: members every sample has, every document this dialect writes has, no bundled dialect has
        bundled = self.vocab.bundled_keys
        detect = [k for k in consts if k not in bundled]
        synth: dict[str, str] = {}
        if not detect:
            top = [(flag, "the outcome flag")] if flag and len(flag) == 1 else []
            if all(_get(d, payload) is not _NOTHING for d in self.docs) and len(payload) == 1:
                top.append((payload, "the payload"))
            for f, (p, _) in scalars.items():
                if len(p) == 1 and _TYPE[f] == (str,) and all(isinstance(d.get(p[0]), str) for d in self.docs):
                    top.append((p, f))
            for p, _what in top:
                if p is not None and p[0] not in bundled:
                    detect = [p[0]]
                    carried = next((f for f, (q, _) in scalars.items() if q == p), None)
                    if carried is not None:
                        synth[carried] = "unknown"
                    break
        if not detect:
            everywhere = sorted(set.intersection(*(set(d) for d in self.docs)))
            claimed = ", ".join(f"{d}: {c} of {self.n}" for d, c in sorted(self.detected.items()))
            hint = (
                f"; bundled dialects' markers are in them ({claimed}): if that is what they are, "
                "envglot validate says what is wrong with them"
                if claimed
                else ""
            )
            raise LearnError(
                "no member present in every sample sets these envelopes apart from the bundled dialects "
                f"(in every sample: {', '.join(everywhere) or 'nothing'}; each is a bundled dialect's key or no "
                f"field a declaration carries); a declaration's detection needs one{hint}"
            )
        return self._render(err, flag, flag_why, payload, payload_why, pkeys, warn, scalars, consts, detect, synth)

    def _order(self, paths: list[Path_]) -> dict[Path_, int]:
        """Member order as the samples write it (the sample holding most of them first)."""
        want = set(paths)
        flat = [[p for p, _ in _members(d)] for d in self.docs]
        order: dict[Path_, int] = {}
        for ps in sorted(flat, key=lambda ps: -len(want & set(ps))):
            for p in ps:
                if p in want and p not in order:
                    order[p] = len(order)
        for p in sorted(want - set(order)):
            order[p] = len(order)
        return order

    def _render(
        self,
        err: _Error,
        flag: Path_ | None,
        flag_why: str,
        payload: Path_,
        payload_why: str,
        pkeys: dict[str, tuple[str, bool]],
        warn: tuple[Path_, dict[str, str], str] | None,
        scalars: dict[str, tuple[Path_, str]],
        consts: dict[str, Any],
        detect: list[str],
        synth: dict[str, str],
    ) -> str:
        n, failed = self.n, set(err.failed)
        succ = n - len(failed)
        ep = _wire(err.path, err.array)
        epfx = _wire(err.path) + ("[]" if err.array else "")
        objs = [it for its in err.items for it in its]
        fields: list[tuple[str, str, str]] = []  # (field, wire path, comment)
        if flag is not None:
            fields.append(("ok", _wire(flag), f"outcome: {flag_why}"))
        fields.append(("payload", _wire(payload), f"payload: {payload_why}"))
        for f, (p, why) in scalars.items():
            fields.append((f, _wire(p), why))
        top_order = self._order(
            ([flag] if flag else [])
            + [payload, err.path]
            + ([warn[0]] if warn else [])
            + [p for p, _ in scalars.values()]
        )
        rows: list[tuple[int, list[tuple[str, str, str]]]] = []
        for f, path, why in fields:
            p = tuple(path[2:].split("."))
            rows.append((top_order[p], [(f, path, why)]))
        outcome = (
            f"outcome: the flag above; {ep} holds the error on {_all(len(failed), 'failure')}"
            if flag is not None
            else f"outcome: {ep} is present on {_all(len(failed), 'failure')} and absent (or null) on "
            f"{_all(succ, 'success')}; none contradicts it"
        )
        err_rows = [("problems", ep, outcome)]
        key_order = {k: i for i, k in enumerate(dict.fromkeys(k for o in objs for k in o))}
        for f, (k, _) in sorted(pkeys.items(), key=lambda kv: key_order[kv[1][0]]):
            have = sum(k in o and o[k] is not None for o in objs)
            why = f"{k!r} in {have} of {_count(len(objs), 'error')}"
            if f == "problem.code":
                why += f" ({len({o[k] for o in objs})} distinct codes, in [codes] below)"
            err_rows.append((f, f"{epfx}.{k}", why))
        rows.append((top_order[err.path], err_rows))
        if warn is not None:
            wp, wkeys, wwhy = warn
            wrows = [("warnings", _wire(wp, True), wwhy)]
            wrows += [(f, f"{_wire(wp)}[].{k}", f"the items' {k!r}") for f, k in wkeys.items()]
            rows.append((top_order[wp], wrows))
        rows.sort(key=lambda r: r[0])

        required = []
        if flag is not None:
            required.append(_wire(flag))
        if all(_get(d, payload) is not _NOTHING for d in self.docs):
            required.append(_wire(payload))
        for f in synth:
            required.append(_wire(scalars[f][0]))
        for f, (k, always) in pkeys.items():
            if f in ("problem.code", "problem.message") and always:
                required.append(f"{epfx}.{k}")
        if warn is not None:
            required.append(f"{_wire(warn[0])}[].{warn[1]['warning.message']}")
        indents = Counter(s.indent for s in self.samples if s.indent is not None)
        indent = _top_int(indents) if indents else -1

        out: list[str] = []
        w = out.append
        w(f"# {self.name}: a declaration learned by `envglot learn` from {_count(n, 'sample')}")
        w(f"# ({_count(succ, 'success')}, {_count(len(failed), 'failure')}). Review it before use: every rule says")
        w("# how many samples support it; ⚑ marks each inferred code category. docs/learn.md,")
        w("# docs/declared-dialects.md.")
        for note in sorted(set(self.notes)):
            for j, line in enumerate(textwrap.wrap(note, 94)):
                w(f"# {'⚑' if j == 0 else ' '} {line}")
        declared: dict[str, Any] = dict(consts)
        kinds = {**_TYPE, "ok": (bool,), "payload": _TYPE["problem.details"]}
        declared.update({path[2:]: kinds[f] for f, path, _ in fields if path.count(".") == 1})
        for line in self._schema_notes(declared):
            w(f"# {line}")
        w(f"dialect = {_q(self.name)}")
        w("")
        w("[declare]")
        description = f"{self.name}: learned from {_count(n, 'sample')} by envglot learn"
        w(f"description = {_q(description)}")
        w('payload = "any"')
        w(
            "# native print style: "
            + ", ".join(
                f"{'minified' if k < 0 else f'indent {k}'} in {_count(c, 'sample')}" for k, c in sorted(indents.items())
            )
            if indents
            else "# native print style: no sample file says (minified)"
        )
        w(f"native_indent = {indent}")
        w(f"required = [{', '.join(_q(r) for r in required)}]")
        w("")
        if consts:
            w(f"# the same value in {_all(n, 'sample')} ⚑ (a member only equal by chance is no constant)")
            w("[declare.constants]")
            for k, v in consts.items():
                w(f"{_q('$.' + k)} = {_q(v) if isinstance(v, str) else v}")
            w("")
        w("[declare.detect]")
        w(f"# in {_all(n, 'sample')}, written on every document, and no bundled dialect's key")
        w(f"keys = [{', '.join(_q(k) for k in detect)}]")
        w("")
        w("# canonical field -> wire path, in the samples' member order (the order envglot writes)")
        w("[fields]")
        for _, group in rows:
            for f, path, why in group:
                w(f"# {why}")
                w(f"{_key(f)} = {_q(path)}")
        w("")
        if synth:
            w("# detection needs it on every document: a source without one gets this value (reported)")
            w("[synthesize]")
            for f, v in synth.items():
                w(f"{_key(f)} = {_q(v)}")
            w("")
        self._codes(w, err, pkeys)
        return "\n".join(out).rstrip("\n") + "\n"

    def _codes(self, w: Any, err: _Error, pkeys: dict[str, tuple[str, bool]]) -> None:
        code_key = pkeys["problem.code"][0]
        retry_key = pkeys.get("problem.retryable", (None, False))[0]
        seen: dict[str, list[int]] = {}
        retry: dict[str, set[bool]] = {}
        for i, its in zip(err.failed, err.items, strict=True):
            for it in its:
                c = it[code_key]
                seen.setdefault(c, []).append(i)
                if retry_key is not None and isinstance(it.get(retry_key), bool):
                    retry.setdefault(c, set()).add(it[retry_key])
        cats: dict[str, str] = {}
        w("# ---- codes: every code seen, with an inferred category ⚑ (review each row) ----")
        for c in sorted(seen):
            cat, why = self.vocab.category(c)
            cats[c] = cat
            w("")
            w(f"# ⚑ seen {len(seen[c])}x ({self.label(sorted(set(seen[c])))}); {cat}: {why}")
            w(f"[codes.{_key(c)}]")
            w(f"category = {_q(cat)}")
            if len(retry.get(c, ())) == 1:
                w(f"retryable = {str(next(iter(retry[c]))).lower()}")
        invented = self._invented(seen, cats)
        cats.update({c: cat for cat, c in invented.items()})
        for cat, c in invented.items():
            w("")
            w(f"# ⚑ never seen: the code envglot writes for {cat} (replace it with the server's own, if it has one)")
            w(f"[codes.{_key(c)}]")
            w(f"category = {_q(cat)}")
        w("")
        w("# ---- writer choices: one unconditional row per canonical category ----")
        for cat in self.m.categories:
            mine = sorted((c for c in seen if cats[c] == cat), key=lambda c: (-len(seen[c]), c))
            code = mine[0] if mine else invented.get(cat) or self._style(cat, seen)
            w("")
            if not mine and cat not in invented:
                w(f"# ⚑ {code} is {cats[code]}'s code; no code of {cat} was seen")
            w("[[write]]")
            w(f"category = {_q(cat)}")
            w(f"code = {_q(code)}")

    def _invented(self, seen: dict[str, list[int]], cats: dict[str, str]) -> dict[str, str]:
        """A code in the samples' style for every category no sample shows (unless the samples use it)."""
        out: dict[str, str] = {}
        for cat in self.m.categories:
            if any(cats[c] == cat for c in seen):
                continue
            code = self._style(cat, seen)
            if code not in seen and code not in out.values() and self.vocab.category(code)[0] == cat:
                out[cat] = code
        return out

    def _style(self, cat: str, seen: dict[str, list[int]]) -> str:
        """``cat`` as the samples write codes: HTTP numbers, snake_case or SCREAMING_CASE."""
        if all(c.isdigit() for c in seen):
            return str(self.m.categories[cat].http)
        if all(c == c.lower() for c in seen):
            return cat
        return cat.upper()

    def _schema_notes(self, members: dict[str, Any]) -> list[str]:
        """What the tools' outputSchemas say about the declared top-level members (``members``: key ->
        the JSON types the declaration gives it, or the constant's value); ⚑ where they disagree."""
        if not self.schemas:
            return []
        n = len(self.schemas)
        lines = [f"outputSchema of {_count(n, 'tool')} (tools/list) read as evidence:"]
        for k, want in members.items():
            listed = [(t, (s.get("properties") or {})[k]) for t, s in self.schemas if k in (s.get("properties") or {})]
            req = sum(k in (s.get("required") or []) for _, s in self.schemas)
            line = f"  $.{k}: listed by {len(listed)} of {n}, required by {req} of {n}"
            bad = sorted(t for t, prop in listed if not _schema_agrees(prop, want))
            unlisted = sorted(t for t, s in self.schemas if t not in {t2 for t2, _ in listed})
            if bad:
                line += f"; ⚑ {_names(bad)} say{'s' if len(bad) == 1 else ''} another type or value"
            if unlisted:
                line += f"; ⚑ not listed by {_names(unlisted)}"
            lines.append(line)
        undeclared = sorted(
            {k for _, s in self.schemas for k in (s.get("required") or []) if k not in members}
            & set().union(*(d.keys() for d in self.docs))
        )
        if undeclared:
            lines.append(f"  required by a schema, declared by no rule: {', '.join(undeclared)}")
        return lines


_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number"}


def _schema_agrees(prop: Any, want: Any) -> bool:
    """Whether a JSON Schema property allows ``want`` (a constant's value, or a tuple of types)."""
    if not isinstance(prop, dict):
        return True
    if "const" in prop and not isinstance(want, tuple):
        return bool(prop["const"] == want)
    kinds = prop.get("type")
    if kinds is None:
        return True
    allowed = set(kinds) if isinstance(kinds, list) else {kinds}
    if "number" in allowed:
        allowed.add("integer")
    types = want if isinstance(want, tuple) else (type(want),)
    return any(_JSON_TYPES.get(t) in allowed for t in types)


def _top_int(c: Counter[int]) -> int:
    return min(c, key=lambda k: (-c[k], k))


def _q(v: str) -> str:
    """A TOML basic string (JSON string escapes are TOML's)."""
    return msgspec.json.encode(v).decode()


def _key(k: str) -> str:
    return k if _BARE.fullmatch(k) else _q(k)


# --- learning and checking ------------------------------------------------------------------


def learn(
    samples: Sequence[Sample],
    name: str,
    schemas: Sequence[tuple[str, dict[str, Any]]] = (),
    mappings: Mappings | None = None,
) -> str:
    """The declaration (TOML text) of the dialect ``name`` inferred from ``samples``.

    ``schemas`` are ``(tool, outputSchema)`` pairs read as extra evidence. The same samples in
    any order give the same bytes. Not checked: see :func:`learn_checked`.

    Raises:
        LearnError: the samples do not support a rule (the message says which and why).
    """
    if not valid_name(name):
        raise LearnError(f"--name {name!r}: a dialect name is lowercase letters, digits and -")
    taken = {d.name for d in registered()} | {a for d in registered() for a in d.aliases}
    if name in taken:
        raise LearnError(f"--name {name!r} is already a dialect's name; give another")
    if len(samples) < 2:
        raise LearnError(
            "a single sample is not enough: a declaration needs what every response carries — "
            "give at least one success and one failure of the server"
        )
    m = mappings if mappings is not None else default_mappings()
    ordered = sorted(samples, key=lambda s: (s.envelope, s.name))
    schemas = sorted(schemas, key=lambda ts: (ts[0], msgspec.json.encode(ts[1], order="sorted")))
    return _Learner(ordered, name, m, schemas).text()


def learn_checked(samples: Sequence[Sample], name: str, schemas: Sequence[tuple[str, dict[str, Any]]] = ()) -> str:
    """:func:`learn`, then :func:`check_examples` on the samples themselves; the process is left as
    it was (the trial declaration lives only in the tables the check loads).

    Raises:
        LearnError: no rule fits, or the declaration fails its own samples (each one named).
    """
    text = learn(samples, name, schemas)
    with _trial(text) as m:
        failures = check_examples(name, [(s.name, s.record) for s in samples], m)
    if failures:
        listed = "; ".join(f"{n}: {why}" for n, why in failures[:8])
        more = f" (and {len(failures) - 8} more)" if len(failures) > 8 else ""
        raise LearnError(
            f"the learned declaration fails {_count(len(failures), 'sample')} it was learned from, so it "
            f"is not written: {listed}{more}"
        )
    return text


@contextlib.contextmanager
def _trial(text: str) -> Iterator[Mappings]:
    """The tables loaded with the declaration ``text`` (its dialect in their registry only)."""
    fd, path = tempfile.mkstemp(prefix="envglot-learn-", suffix=".toml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        try:
            m = load_mappings([path])
        except MappingError as exc:  # a bug of learn's: say so plainly, never hand the file out
            raise LearnError(f"the learned declaration does not load: {exc}") from None
        yield m
    finally:
        with contextlib.suppress(OSError):
            Path(path).unlink()


def check_examples(dialect: str, examples: Iterable[tuple[str, bytes]], mappings: Mappings) -> list[tuple[str, str]]:
    """``(name, reason)`` for every example the declared ``dialect`` gets wrong.

    Each example (an envelope, or one in a CallToolResult or JSON-RPC response) must be
    detected as ``dialect`` (with ``mappings``' registry), validate, and agree with its
    CallToolResult's ``isError``. Then it is converted to every other writable dialect ``T``
    and back: with ``preserve`` it must come back as the same JSON value
    (``dialect -> T -> dialect``); without, and written as ``dialect`` directly, envglot's
    own output must be detected as ``dialect`` and validate (an optional detection key the
    other dialect cannot carry would make it a legacy-v1 bare payload). A reason names the
    target and the JSON path. ``envglot mappings check --examples`` and ``envglot learn`` run
    this one check.
    """
    targets = [t for t in mappings.registry.writable_names() if t != dialect]
    out: list[tuple[str, str]] = []
    for name, rec in examples:
        why = _check_one(dialect, rec, mappings, targets)
        if why is not None:
            out.append((name, why))
    return out


def _check_one(dialect: str, rec: bytes, m: Mappings, targets: list[str]) -> str | None:
    try:
        env, det, is_error = unwrap(rec, mappings=m)
    except EnvglotError as exc:
        return str(exc)
    if det.dialect != dialect:
        ev = f" (evidence {det.evidence!r})" if det.evidence else " (no dialect's markers)"
        return f"$: detected as {det.dialect}{ev}, not {dialect}"
    why = _invalid(env, dialect, m)
    if why is not None:
        return why
    if is_error is not None and is_error != outcome_is_error(env, dialect, mappings=m):
        return f"$.isError: isError={str(is_error).lower()} but {dialect} reads the other outcome"
    original = _ANY.decode(env)
    try:
        again = convert(env, from_=dialect, to=dialect, mappings=m, unsupported="ignore")
    except EnvglotError as exc:
        return f"written as {dialect}: {exc}"
    why = _own_output(again, dialect, m)
    if why is not None:
        return f"written as {dialect}: {why}"
    for t in targets:
        try:
            there = convert(env, from_=dialect, to=t, preserve=True, mappings=m, unsupported="ignore")
            back = convert(there, from_=t, to=dialect, preserve=True, mappings=m, unsupported="ignore")
            plain = convert(env, from_=dialect, to=t, mappings=m, unsupported="ignore")
            written = convert(plain, from_=t, to=dialect, mappings=m, unsupported="ignore")
        except EnvglotError as exc:
            return f"round trip through {t}: {exc}"
        restored = _ANY.decode(back)
        if restored != original:
            at = first_difference(original, restored)
            return f"round trip through {t} (preserve) does not restore it: {at} differs"
        why = _own_output(written, dialect, m)
        if why is not None:
            return f"written as {dialect} from {t}: {why}"
    return None


def _invalid(doc: bytes, dialect: str, m: Mappings) -> str | None:
    """Why ``doc`` breaks ``dialect``'s contract (the first three violations), or ``None``."""
    found = validate(doc, dialect, mappings=m)
    if not found:
        return None
    return "does not validate: " + "; ".join(f"{v.path}: {v.message}" for v in found[:3])


def _own_output(doc: bytes, dialect: str, m: Mappings) -> str | None:
    """Why a document envglot wrote as ``dialect`` is not one (detection, then the contract)."""
    try:
        det = detection(doc, mappings=m)
    except EnvglotError as exc:
        return f"{exc.path or '$'}: {exc.message}"
    if det.dialect != dialect:
        ev = f"evidence {det.evidence!r}" if det.evidence else "no dialect's markers"
        shown = excerpt(doc.decode(errors="replace"), 160)
        return f"$: envglot's own output {shown} is detected as {det.dialect} ({ev})"
    return _invalid(doc, dialect, m)


def first_difference(a: Any, b: Any, segs: tuple[str | int, ...] = ()) -> str:
    """The JSON path of the first place where ``a`` and ``b`` differ (``segs`` when they are equal)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in (*a, *(k for k in b if k not in a)):
            if k not in a or k not in b:
                return format_path([*segs, k])
            if a[k] != b[k]:
                return first_difference(a[k], b[k], (*segs, k))
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return first_difference(x, y, (*segs, i))
    return format_path(list(segs))


# --- a live server ---------------------------------------------------------------------------

SERVER_TIMEOUT = 60.0
"""Seconds ``--from-server`` gives the server to start, list its tools and answer a ``--call``."""


def from_server(
    command: Sequence[str], call: tuple[str, dict[str, Any]] | None = None, timeout: float = SERVER_TIMEOUT
) -> tuple[list[tuple[str, dict[str, Any]]], list[Sample]]:
    """``(schemas, samples)`` of a stdio MCP server: every tool's ``outputSchema`` (``tools/list``),
    and the result of ``call`` (``(tool, arguments)``) when one is given. No tool is called otherwise.

    Raises:
        LearnError: the server cannot be started or reached, or answers with a protocol error.
    """
    try:
        import anyio

        from .proxy.config import DEFAULT_MAX_RESULT_BYTES, UpstreamSpec
        from .proxy.sdk import ProtocolError
        from .proxy.upstream import Upstream, UpstreamAnswerError, UpstreamGoneError
    except ImportError as exc:
        raise LearnError(f"--from-server needs the mcp package (pip install 'envglot[mcp]'): {exc}") from None
    if not command:
        raise LearnError("--from-server needs the server's command after --")
    spec = UpstreamSpec(command=command[0], args=list(command[1:]))

    async def talk() -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        async with anyio.create_task_group() as tg:
            up = Upstream(spec, tg, timeout=timeout, max_result_bytes=DEFAULT_MAX_RESULT_BYTES)
            try:
                with anyio.fail_after(timeout):
                    tools = await up.list_tools()
                    result = (await up.call(call[0], call[1])).wire if call is not None else None
            finally:
                await up.close()
        return tools, result

    label = " ".join(command)
    try:
        tools, result = anyio.run(talk)
    except BaseException as exc:  # anyio may group what the task group raised
        leaf: BaseException = exc
        while isinstance(leaf, BaseExceptionGroup) and leaf.exceptions:
            leaf = leaf.exceptions[0]
        if isinstance(leaf, TimeoutError):
            raise LearnError(f"{label}: no answer within {timeout:g} s") from None
        if isinstance(leaf, UpstreamGoneError | UpstreamAnswerError | ProtocolError):
            raise LearnError(f"{label}: {leaf}") from None
        raise
    schemas = [(str(t.get("name")), t["outputSchema"]) for t in tools if isinstance(t.get("outputSchema"), dict)]
    samples = []
    if call is not None and result is not None:
        samples.append(_sample(f"{call[0]} (called)", msgspec.json.encode(result)))
    return schemas, samples
