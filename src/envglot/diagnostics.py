"""Loss diagnostics: one closed catalogue of kinds, a Diagnostic record, a Report collector.

A diagnostic's message is rendered from its kind's one template (:data:`envglot.kinds.TEMPLATES`)
with the facts the call site passes: call sites state facts, never free text.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import msgspec

from .errors import UnsupportedError
from .excerpt import MESSAGE_LIMIT, excerpt
from .kinds import LOSSY_KINDS, TEMPLATES, Kind
from .policy import LEVELS, Policy, as_policy

if TYPE_CHECKING:
    import logging

__all__ = [
    "LEVELS",
    "LOSSY_KINDS",
    "TEMPLATES",
    "Counting",
    "Diagnostic",
    "Kind",
    "Policy",
    "RefusedError",
    "Report",
    "diagnostic",
    "kind_help",
    "listening",
    "render",
    "report_for",
    "template_facts",
]

_WARNING, _INFO = 30, 20  # logging.WARNING, logging.INFO (logging is imported lazily)


@functools.cache
def _logger() -> logging.Logger:
    """The ``envglot`` logger; ``logging`` is imported on the first warning, not at import."""
    import logging

    return logging.getLogger("envglot")


def listening() -> bool:
    """True if a ``warn`` record of the ``envglot`` logger would reach a handler.

    The logger must be enabled for WARNING and have a handler (its own or an ancestor's,
    e.g. after ``logging.basicConfig()``); Python's last-resort stderr printing does not count.
    When nobody listens, ``warn`` builds no diagnostics at all (the cost of ``ignore``).
    """
    if "logging" not in sys.modules:  # no handler can exist yet: a conversion need not import it
        return False
    lg = _logger()
    return lg.isEnabledFor(_WARNING) and lg.hasHandlers()


_RESIDUE_KINDS = frozenset({Kind.RESIDUE_DROPPED, Kind.RESIDUE_REJECTED})


_Part = tuple[str, frozenset[str] | None]  # a format string, and the facts that make it optional
_FACT = re.compile(r"(?<!\{)\{(\w+)\}")  # ``{fact}``; ``{{`` is a literal brace


def _parts(template: str) -> tuple[_Part, ...]:
    """``template`` cut into format strings: plain text, and ``[...]`` clauses with their facts."""
    parts: list[_Part] = []
    for i, piece in enumerate(re.split(r"\[([^\[\]]*)\]", template)):
        if piece:
            parts.append((piece, frozenset(_FACT.findall(piece)) if i % 2 else None))
    return tuple(parts)


def template_facts(kind: Kind) -> tuple[frozenset[str], frozenset[str]]:
    """The facts ``kind``'s template needs and those it may take (``dialect`` is the diagnostic's)."""
    needed: set[str] = set()
    optional: set[str] = set()
    for text, opt in _parts(TEMPLATES[kind]):
        (needed if opt is None else optional).update(_FACT.findall(text))
    return frozenset(needed), frozenset(optional - needed)


def _renderer(kind: Kind) -> Callable[..., str]:
    """``kind``'s template compiled to one function ``(dialect, /, *, fact=...) -> str`` (an
    f-string per part: a diagnostic costs what a hand-written f-string did). A fact the template
    does not name, or a needed one not given, is a ``TypeError`` like any wrong call."""
    needed, optional = template_facts(kind)
    facts = sorted(needed - {"dialect"}) + [f"{f}=None" for f in sorted(optional - {"dialect"})]
    pieces = []
    for text, opt in _parts(TEMPLATES[kind]):
        literal = "f" + repr(text)
        if opt is None:
            pieces.append(literal)
        else:
            given = " and ".join(f"{f} is not None" for f in sorted(opt))
            pieces.append(f"({literal} if {given} else '')")
    check = "dialect is None" if "dialect" in needed else "False"
    source = (
        f"def {kind.value}(dialect, /, {'*, ' if facts else ''}{', '.join(facts)}):\n"
        f"    if {check}:\n"
        f"        raise TypeError('{kind.value}: the fact dialect is not given')\n"
        f"    return {' + '.join(pieces) or repr('')}\n"
    )
    namespace: dict[str, Any] = {}
    exec(compile(source, f"<template {kind.value}>", "exec"), namespace)  # our own templates, never input
    render: Callable[..., str] = namespace[kind.value]
    _RENDER[kind] = render
    return render


_RENDER: dict[Kind, Callable[..., str]] = {}
"""Each kind's compiled template, compiled on its first diagnostic (not at import)."""


def render(kind: Kind, dialect: str | None, facts: dict[str, Any]) -> str:
    """``kind``'s message with ``facts`` (a ``[...]`` clause only when all its facts are given).

    Raises ``TypeError`` for a fact the template does not name or a needed fact not given.
    """
    return (_RENDER.get(kind) or _renderer(kind))(dialect, **facts)


def diagnostic(kind: Kind, path: str, dialect: str | None = None, /, **facts: Any) -> Diagnostic:
    """A diagnostic of ``kind`` at ``path``, its message rendered from the facts (a message or
    path quoting a huge input value is cut)."""
    message = render(kind, dialect, facts)
    if len(message) > MESSAGE_LIMIT or len(path) > MESSAGE_LIMIT:
        message, path = excerpt(message, MESSAGE_LIMIT), excerpt(path, MESSAGE_LIMIT)
    return Diagnostic(kind=kind, path=path, message=message, dialect=dialect)


class Diagnostic(msgspec.Struct, frozen=True, kw_only=True):
    """One thing a conversion could not carry or had to change."""

    kind: Kind
    path: str
    """JSON path in the source document (``$.audit.host``)."""
    message: str
    dialect: str | None = None
    """The dialect that could not carry it (the target), when relevant."""
    carried: bool = False
    """True if a ``preserve`` residue carries it: converting back restores it (not lost)."""

    @property
    def lossy(self) -> bool:
        """True if information was lost or changed (as opposed to noted, or carried by a residue)."""
        return self.kind in LOSSY_KINDS and not self.carried

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class Report:
    """Collects the diagnostics of a conversion and applies a loss policy when it is finished.

    ``level`` is ``ignore``, ``warn`` or ``raise``, or a :class:`~envglot.Policy`. ``ignore``
    keeps the diagnostics silently; ``warn`` also logs ONE record per conversion on the
    ``envglot`` logger (unless ``quiet``): WARNING naming the selected kinds and paths, or
    INFO when there are only notes; ``raise`` raises :class:`UnsupportedError` at the end if
    the policy selects any diagnostic. A conversion given a report applies its own
    ``unsupported`` policy and never changes the report's.
    """

    __slots__ = ("diagnostics", "policy", "quiet")
    collecting = True
    """False for :class:`Discard`: callers may skip building diagnostics nobody will see."""

    def __init__(self, level: str | Policy = "warn", *, quiet: bool = False) -> None:
        self.policy = as_policy(level)
        self.diagnostics: list[Diagnostic] = []
        self.quiet = quiet

    @property
    def level(self) -> str:
        """The policy's level: ``ignore``, ``warn`` or ``raise``."""
        return self.policy.level

    @level.setter
    def level(self, value: str | Policy) -> None:
        self.policy = as_policy(value)

    def add(self, kind: Kind, path: str, dialect: str | None = None, /, **facts: Any) -> None:
        """Record one diagnostic of ``kind`` at ``path``: its message is ``kind``'s template
        rendered with ``facts`` (:func:`render`), here and only here; a report that only counts
        can override this and never format a message."""
        self.diagnostics.append(diagnostic(kind, path, dialect, **facts))

    def append(self, diagnostic: Diagnostic) -> None:
        """Record a ready diagnostic (shared instances are fine: they are frozen)."""
        self.diagnostics.append(diagnostic)

    def __iter__(self) -> Iterator[Diagnostic]:
        return iter(self.diagnostics)

    def __len__(self) -> int:
        return len(self.diagnostics)

    @property
    def lossy(self) -> bool:
        """True if any diagnostic reports lost or changed information."""
        return any(d.lossy for d in self.diagnostics)

    def carry(self, start: int = 0) -> None:
        """Mark the lossy diagnostics from index ``start`` on as carried by a preserve residue.

        Loss about an input residue (``residue_dropped``, ``residue_rejected``) stays lossy.
        """
        ds = self.diagnostics
        for i in range(start, len(ds)):
            d = ds[i]
            if d.lossy and d.kind not in _RESIDUE_KINDS:
                ds[i] = msgspec.structs.replace(d, carried=True)

    def finish(
        self,
        policy: Policy | None = None,
        *,
        start: int = 0,
        source: str | None = None,
        target: str | None = None,
        tool: str | None = None,
    ) -> None:
        """Apply ``policy`` (default: the report's own) to the diagnostics from index ``start``.

        ``raise``: raise :class:`UnsupportedError` listing the selected diagnostics.
        ``warn``: one log record naming the conversion (``source -> target``, the tool when
        known), the selected kinds and their paths; nothing is built unless the logger is
        enabled for the record's level.
        """
        pol = self.policy if policy is None else policy
        ds = self.diagnostics[start:] if start else self.diagnostics
        if not ds or pol.level == "ignore":
            return
        if pol.level == "raise":
            refused = [d for d in ds if pol.selects(d)]
            if refused:
                first = "; ".join(str(d) for d in refused[:5])
                more = f" (+{len(refused) - 5} more)" if len(refused) > 5 else ""
                raise UnsupportedError(f"conversion is lossy: {first}{more}", refused, path=refused[0].path)
            return
        if self.quiet:
            return
        lg = _logger()
        if not lg.isEnabledFor(_WARNING):  # INFO enabled implies WARNING enabled
            return
        selected = [d for d in ds if pol.selects(d)]
        level = _WARNING if selected else _INFO
        if not lg.isEnabledFor(level):
            return
        shown = selected or ds
        what = "lost or changed" if selected else "notes"
        subject = f"{source or '?'} -> {target or '?'}" + (f" (tool {tool})" if tool else "")
        lg.log(
            level,
            "%s: %s %s",
            subject,
            what,
            summarize(shown),
            extra={"diagnostics": tuple(shown), "tool": tool, "source": source, "target": target},
        )


def summarize(diagnostics: list[Diagnostic], limit: int = 8) -> str:
    """``kind at $.a, $.b; kind at $.c`` in first-seen order (at most ``limit`` paths per kind)."""
    by_kind: dict[str, list[str]] = {}
    for d in diagnostics:
        paths = by_kind.setdefault(d.kind.value, [])
        if d.path not in paths:
            paths.append(d.path)
    parts = []
    for kind, paths in by_kind.items():
        more = f" (+{len(paths) - limit} more)" if len(paths) > limit else ""
        parts.append(f"{kind} at {', '.join(excerpt(p, 80) for p in paths[:limit])}{more}")
    return "; ".join(parts)


class Discard(Report):
    """A report for ``unsupported="ignore"`` when nobody reads the diagnostics (hot loops).

    Keeps nothing, so one instance can serve every thread.
    """

    __slots__ = ()
    collecting = False

    def __init__(self) -> None:
        super().__init__("ignore")

    def add(self, kind: Kind, path: str, dialect: str | None = None, /, **facts: Any) -> None:
        """Drop the diagnostic (its message is never rendered)."""

    def append(self, diagnostic: Diagnostic) -> None:
        """Drop the diagnostic."""


DISCARD = Discard()


class RefusedError(Exception):
    """Raised by :meth:`Counting.finish` where a :class:`Report` would raise
    :class:`UnsupportedError`: the caller converts again with a full report to say why."""


class Counting(Report):
    """A report that keeps each diagnostic's kind and source path only, never a message or a
    :class:`Diagnostic` (what a caller that counts kinds needs: ``migrate``).

    ``finish`` raises :class:`RefusedError` where the policy would refuse the conversion and
    writes no log record (the caller counts); :meth:`selected` says whether the policy
    selects any of the diagnostics.
    """

    __slots__ = ("carried", "seen")

    def __init__(self, level: str | Policy = "ignore") -> None:  # one per document: no call to Report's
        self.policy = level if type(level) is Policy else as_policy(level)
        self.diagnostics = []
        self.quiet = True
        self.seen: list[tuple[Kind, str]] = []
        """``(kind, source path)`` of every diagnostic, in the order they were reported."""
        self.carried: set[int] = set()
        """Indexes in :attr:`seen` of the diagnostics a preserve residue carries."""

    def add(self, kind: Kind, path: str, dialect: str | None = None, /, **facts: Any) -> None:
        """Count one diagnostic (its path cut as :meth:`Report.add` cuts it); its message is never rendered."""
        self.count(kind, path)

    def count(self, kind: Kind, path: str) -> None:
        """:meth:`add` for a caller that knows the report is a ``Counting`` one: no facts formatted
        for a message nobody renders (the call sites that format them are :meth:`add`'s)."""
        self.seen.append((kind, path if len(path) <= MESSAGE_LIMIT else excerpt(path, MESSAGE_LIMIT)))

    def append(self, diagnostic: Diagnostic) -> None:
        """Count a ready diagnostic."""
        self.seen.append((diagnostic.kind, diagnostic.path))

    def __len__(self) -> int:
        return len(self.seen)

    @property
    def lossy(self) -> bool:
        """True if any diagnostic reports lost or changed information."""
        return any(k in LOSSY_KINDS and i not in self.carried for i, (k, _) in enumerate(self.seen))

    def carry(self, start: int = 0) -> None:
        """As :meth:`Report.carry`."""
        for i in range(start, len(self.seen)):
            k = self.seen[i][0]
            if k in LOSSY_KINDS and k not in _RESIDUE_KINDS:
                self.carried.add(i)

    def selected(self, policy: Policy | None = None, start: int = 0) -> bool:
        """True if ``policy`` (default: the report's own) selects a diagnostic from index ``start`` on."""
        pol = self.policy if policy is None else policy
        seen = self.seen[start:] if start else self.seen
        if not self.carried:  # the common case: nothing carried, no index to look up
            return pol.selects_any(seen)
        return any(pol.selects_at(k, p) for i, (k, p) in enumerate(seen, start) if i not in self.carried)

    def finish(
        self,
        policy: Policy | None = None,
        *,
        start: int = 0,
        source: str | None = None,
        target: str | None = None,
        tool: str | None = None,
    ) -> None:
        """Raise :class:`RefusedError` if the policy is ``raise`` and selects a diagnostic from ``start`` on."""
        pol = self.policy if policy is None else policy
        if pol.level == "raise" and self.selected(pol, start):
            raise RefusedError


def report_for(unsupported: str | Policy) -> Report:
    """A fresh report for one conversion, or the shared :data:`DISCARD` when nobody would see it
    (``ignore``, or ``warn`` while nobody listens: see :func:`listening`)."""
    policy = as_policy(unsupported)
    if policy.level == "ignore" or (policy.level == "warn" and not listening()):
        return DISCARD
    return Report(policy)


@functools.cache
def kind_help() -> dict[Kind, str]:
    """Each kind's help text: the docstring written under it in :class:`Kind` (read from the source)."""
    import ast
    import inspect
    import itertools
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(Kind)))
    out: dict[Kind, str] = {}
    body = tree.body[0].body  # type: ignore[attr-defined]
    for stmt, after in itertools.pairwise(body):
        if (
            isinstance(stmt, ast.Assign)
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            out[Kind[stmt.targets[0].id]] = " ".join(after.value.value.split())
    return out
