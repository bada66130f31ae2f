"""Loss diagnostics: one closed catalogue of kinds, a Diagnostic record, a Report collector."""

from __future__ import annotations

import enum
import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING

import msgspec

from .errors import EnvglotError, UnsupportedError
from .excerpt import MESSAGE_LIMIT, excerpt

if TYPE_CHECKING:
    import logging

__all__ = ["LEVELS", "Diagnostic", "Kind", "Report"]

LEVELS = ("ignore", "warn", "raise")


@functools.cache
def _logger() -> logging.Logger:
    """The ``envglot`` logger; ``logging`` is imported on the first warning, not at import."""
    import logging

    return logging.getLogger("envglot")


class Kind(enum.StrEnum):
    """What kind of loss or change a diagnostic reports (closed catalogue)."""

    FIELD_DROPPED = "field_dropped"
    """A source field has no place in the target and was left out."""
    EXTRA_PROBLEM_DROPPED = "extra_problem_dropped"
    """The target carries one error; further errors were left out."""
    CODE_MAPPED = "code_mapped"
    """The native code had no exact equivalent; a code of the same category was chosen."""
    CODE_UNKNOWN = "code_unknown"
    """A native code no table knows; it was read with the fallback category."""
    CODE_EXTENSION = "code_extension"
    """The chosen code lies outside the target dialect's documented catalogue."""
    RETRYABLE_CHANGED = "retryable_changed"
    """The target derives or implies a retryable value that differs from the source's."""
    VALUE_COERCED = "value_coerced"
    """A value was changed to fit the target (type, format, precision)."""
    PAYLOAD_WRAPPED = "payload_wrapped"
    """A non-object payload was wrapped as {"value": ...} for a target that needs an object."""
    PAYLOAD_UNWRAPPED = "payload_unwrapped"
    """A {"value": ...} payload was read as the wrapped non-object value."""
    SYNTHESIZED = "synthesized"
    """A value the target requires was invented by a documented rule."""
    STATUS_MISMATCH = "status_mismatch"
    """Two flags of the input disagree (e.g. MCP isError vs the envelope's outcome)."""
    RESIDUE_DROPPED = "residue_dropped"
    """A preserve-mode residue meant for another dialect was left out."""
    RESIDUE_REJECTED = "residue_rejected"
    """A preserve-mode residue was not applied: it does not restore the document it records, or
    applying it would change the outcome or contradict the document it travels in."""
    OUTCOME_INFERRED = "outcome_inferred"
    """The outcome was inferred from the transport: an MCP ``isError`` result without an envelope."""
    WEAK_DETECTION = "weak_detection"
    """The document has no dialect's markers; it was read as a legacy-v1 bare payload by elimination."""
    BOM_REMOVED = "bom_removed"
    """The input began with a UTF-8 byte order mark, which was removed."""
    FIELD_RELOCATED = "field_relocated"
    """A value was read from a place its own contract does not give it; writers put it in the standard place."""


_LOSSY = frozenset(
    {
        Kind.FIELD_DROPPED,
        Kind.EXTRA_PROBLEM_DROPPED,
        Kind.CODE_MAPPED,
        Kind.RETRYABLE_CHANGED,
        Kind.VALUE_COERCED,
        Kind.RESIDUE_DROPPED,
        Kind.RESIDUE_REJECTED,
    }
)


class Diagnostic(msgspec.Struct, frozen=True, kw_only=True):
    """One thing a conversion could not carry or had to change."""

    kind: Kind
    path: str
    """JSON path in the source document (``$.audit.host``)."""
    message: str
    dialect: str | None = None
    """The dialect that could not carry it (the target), when relevant."""

    @property
    def lossy(self) -> bool:
        """True if information was lost or changed (as opposed to noted)."""
        return self.kind in _LOSSY

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class Report:
    """Collects diagnostics of one conversion and applies the ``unsupported`` level.

    ``ignore`` keeps them silently, ``warn`` also logs them on the ``envglot``
    logger when the report is finished (lossy ones at WARNING, notes at INFO; unless
    ``quiet``), ``raise`` raises
    :class:`UnsupportedError` at the end if any lossy diagnostic was collected.
    """

    __slots__ = ("diagnostics", "level", "quiet")
    collecting = True
    """False for :class:`Discard`: callers may skip building diagnostics nobody will see."""

    def __init__(self, level: str = "warn", *, quiet: bool = False) -> None:
        if level not in LEVELS:
            raise EnvglotError(f"unsupported must be one of {', '.join(LEVELS)}, not {level!r}")
        self.level = level
        self.diagnostics: list[Diagnostic] = []
        self.quiet = quiet

    def add(self, kind: Kind, path: str, message: str, dialect: str | None = None) -> None:
        """Record one diagnostic (a message or path quoting a huge input value is cut)."""
        if len(message) > MESSAGE_LIMIT or len(path) > MESSAGE_LIMIT:
            message, path = excerpt(message, MESSAGE_LIMIT), excerpt(path, MESSAGE_LIMIT)
        self.diagnostics.append(Diagnostic(kind=kind, path=path, message=message, dialect=dialect))

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

    def finish(self) -> None:
        """Apply the level: raise on loss (``raise``) or print (``warn``)."""
        if not self.diagnostics:
            return
        if self.level == "raise" and self.lossy:
            lossy = [d for d in self.diagnostics if d.lossy]
            first = "; ".join(str(d) for d in lossy[:5])
            more = f" (+{len(lossy) - 5} more)" if len(lossy) > 5 else ""
            raise UnsupportedError(f"conversion is lossy: {first}{more}", lossy, path=lossy[0].path)
        if self.level == "warn" and not self.quiet:
            for d in self.diagnostics:
                _logger().log(30 if d.lossy else 20, "%s", d)  # logging.WARNING / logging.INFO


class Discard(Report):
    """A report for ``unsupported="ignore"`` when nobody reads the diagnostics (hot loops).

    Keeps nothing, so one instance can serve every thread.
    """

    __slots__ = ()
    collecting = False

    def __init__(self) -> None:
        super().__init__("ignore")

    def add(self, kind: Kind, path: str, message: str, dialect: str | None = None) -> None:
        """Drop the diagnostic."""

    def append(self, diagnostic: Diagnostic) -> None:
        """Drop the diagnostic."""


DISCARD = Discard()
