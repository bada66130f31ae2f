"""The loss policy: which diagnostics a conversion refuses (``raise``) or reports (``warn``).

``unsupported=`` takes a :class:`Level` (or its value, ``"ignore"``, ``"warn"``, ``"raise"``)
or a :class:`Policy`; :func:`as_policy` is the one place that interprets it. The selector
syntax follows ruff's ``--select``/``--ignore``: ``KIND`` or ``KIND:PATH``.
"""

from __future__ import annotations

import enum
import functools
import re
from typing import TYPE_CHECKING, Literal

import msgspec

from .errors import EnvglotError
from .kinds import LOSSY_KINDS, Kind

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .diagnostics import Diagnostic

__all__ = ["LEVELS", "Level", "LevelName", "Policy", "as_policy"]


class Level(enum.StrEnum):
    """What a conversion does with the loss its policy selects (``unsupported=``).

    A ``str`` enum: ``Level.RAISE == "raise"``, so every level name keeps working.
    """

    IGNORE = "ignore"
    """Keep the diagnostics on the :class:`~envglot.Conversion` (or the caller's report) only."""
    WARN = "warn"
    """Also log one record per conversion on the ``envglot`` logger (when logging is configured)."""
    RAISE = "raise"
    """Refuse the document with :class:`~envglot.UnsupportedError`."""

    def __repr__(self) -> str:
        return f"Level.{self.name}"


LevelName = Literal["ignore", "warn", "raise"]
"""A level by name, as a type checker sees a string literal."""
LEVELS: tuple[Level, ...] = tuple(Level)


def _kinds() -> frozenset[str]:
    return frozenset(k.value for k in Kind)


def _parse(selector: object, option: str) -> tuple[str, str | None]:
    """``(kind, path or None)`` of one ``KIND[:PATH]`` selector; an unknown kind is an error."""
    if not isinstance(selector, str):
        raise EnvglotError(f"{option} entries must be strings like 'field_dropped:$.summary', not {selector!r}")
    kind, sep, path = selector.partition(":")
    kind = kind.strip()
    if kind not in _kinds():
        raise EnvglotError(
            f"{option}: unknown diagnostic kind {kind!r} in {selector!r}; kinds: {', '.join(sorted(_kinds()))}"
        )
    path = path.strip()
    if sep and not path.startswith("$"):
        raise EnvglotError(f"{option}: the path of {selector!r} must be a JSON path starting with '$'")
    return kind, (path or None) if sep else None


@functools.cache
def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")))


def _path_matches(pattern: str, path: str) -> bool:
    """With ``*`` (any run of characters), ``pattern`` must match the whole path; a plain path
    matches itself and everything below it."""
    if "*" in pattern:
        return _glob(pattern).fullmatch(path) is not None
    return path == pattern or (path.startswith(pattern) and path[len(pattern)] in ".[")


class Policy(msgspec.Struct, frozen=True, kw_only=True, dict=True):
    """What a conversion does with its diagnostics.

    Attributes:
        level: ``ignore`` (keep them on :class:`~envglot.Conversion` only), ``warn`` (one log
            record per conversion on the ``envglot`` logger) or ``raise`` (refuse the
            document with :class:`~envglot.UnsupportedError`).
        select: the selectors that count (``KIND`` or ``KIND:PATH``); empty: every lossy kind.
        ignore: selectors that never count, even when selected.

    A ``PATH`` is the diagnostic's JSON path in the source document: a plain path matches
    itself and everything below it (``$.audit`` matches ``$.audit.host``); in a path with
    ``*``, each ``*`` matches any run of characters and the pattern must match the whole
    path (``$.errors[*].path``). Brackets are literal (JSON path indices).
    Loss that a ``preserve`` residue carries back is never counted.
    """

    level: Level | LevelName = Level.WARN
    """Given as a :class:`Level` or its name; always a :class:`Level` once built."""
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        level = _LEVEL.get(self.level) if isinstance(self.level, str) else None
        if level is None:
            raise EnvglotError(f"unsupported must be one of {', '.join(LEVELS)}, not {self.level!r}")
        if level is not self.level:
            msgspec.structs.force_setattr(self, "level", level)
        for option, items in (("select", self.select), ("ignore", self.ignore)):
            if isinstance(items, str) or not isinstance(items, tuple | list):
                raise EnvglotError(f"{option} must be a tuple of 'KIND[:PATH]' strings, not {items!r}")
            for s in items:
                _parse(s, option)

    @functools.cached_property
    def _rules(self) -> tuple[tuple[tuple[str, str | None], ...], tuple[tuple[str, str | None], ...]]:
        return tuple(_parse(s, "select") for s in self.select), tuple(_parse(s, "ignore") for s in self.ignore)

    def selects(self, d: Diagnostic) -> bool:
        """True if ``d`` counts under this policy (whatever the level)."""
        return not d.carried and self.selects_at(d.kind, d.path)

    def selects_at(self, kind: Kind, path: str) -> bool:
        """True if a diagnostic of ``kind`` at ``path`` that no residue carries counts under this policy."""
        if not self.select and not self.ignore:
            return kind in LOSSY_KINDS
        select, ignore = self._rules
        if select:
            if not any(k == kind and (p is None or _path_matches(p, path)) for k, p in select):
                return False
        elif kind not in LOSSY_KINDS:
            return False
        return not any(k == kind and (p is None or _path_matches(p, path)) for k, p in ignore)

    def selects_any(self, seen: Iterable[tuple[Kind, str]]) -> bool:
        """True if :meth:`selects_at` holds for one of ``seen``'s ``(kind, path)`` (a counting report's)."""
        if not self.select and not self.ignore:  # as selects_at, without a call per diagnostic
            for kind, _ in seen:
                if kind in LOSSY_KINDS:
                    return True
            return False
        return any(self.selects_at(k, p) for k, p in seen)

    def refuses(self, d: Diagnostic) -> bool:
        """True if ``d`` makes the conversion fail (level ``raise`` and selected)."""
        return self.level is Level.RAISE and self.selects(d)


_LEVEL: dict[str, Level] = {level.value: level for level in Level}
_PLAIN: dict[str, Policy] = {level.value: Policy(level=level) for level in Level}


def as_policy(unsupported: object) -> Policy:
    """The :class:`Policy` for an ``unsupported=`` argument: a :class:`Level`, its name, or a Policy.

    The one place an ``unsupported=`` value is interpreted; a bad one is an :class:`EnvglotError`.
    """
    if isinstance(unsupported, Policy):
        return unsupported
    policy = _PLAIN.get(unsupported) if isinstance(unsupported, str) else None
    if policy is None:
        raise EnvglotError(
            f"unsupported must be one of {', '.join(LEVELS)} (or envglot.Level) or an envglot.Policy, "
            f"not {unsupported!r}"
        )
    return policy
