"""The exception hierarchy. Every envglot failure is an :class:`EnvglotError`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .excerpt import MESSAGE_LIMIT, excerpt

if TYPE_CHECKING:
    from .diagnostics import Diagnostic

__all__ = [
    "DetectError",
    "EnvglotError",
    "MappingError",
    "NoEnvelopeError",
    "ParseError",
    "UnknownDialectError",
    "UnsupportedError",
]


class EnvglotError(ValueError):
    """Base of every envglot error.

    Attributes:
        path: JSON path of the offending value (``$`` for the whole document), if known.
        dialect: dialect involved, if known.
        source: file name (or ``<stdin>``), set by callers that read files.
        line: 1-based line number for JSON Lines input.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        dialect: str | None = None,
        source: str | None = None,
        line: int | None = None,
    ) -> None:
        if len(message) > MESSAGE_LIMIT:  # messages may quote input: never echo a huge value whole
            message = excerpt(message, MESSAGE_LIMIT)
        if path is not None and len(path) > MESSAGE_LIMIT:
            path = excerpt(path, MESSAGE_LIMIT)
        super().__init__(message)
        self.message = message
        self.path = path
        self.dialect = dialect
        self.source = source
        self.line = line

    def located(self, *, source: str | None = None, line: int | None = None) -> EnvglotError:
        """Attach a file name and line number; returns ``self``."""
        if source is not None:
            self.source = source
        if line is not None:
            self.line = line
        return self

    def __str__(self) -> str:
        where = ""
        if self.source is not None:
            where = self.source + (f":{self.line}" if self.line is not None else "") + ": "
        elif self.line is not None:
            where = f"line {self.line}: "
        at = f" (at {self.path})" if self.path and self.path not in self.message else ""
        return f"{where}{self.message}{at}"


class ParseError(EnvglotError):
    """The input is not valid JSON or does not follow its dialect's contract."""


class DetectError(ParseError):
    """No dialect matches the input document."""


class NoEnvelopeError(ParseError):
    """An MCP CallToolResult that carries no envelope (plain text, no JSON object): not a refusal.

    Faces that must answer synthesize an envelope from it (``isError`` decides, as
    :func:`envglot.mcp.unwrap_envelope` describes); a document the core *refuses* is any
    other :class:`ParseError`, answered as a failure (:func:`envglot.refusal`).
    """


class UnsupportedError(EnvglotError):
    """A conversion would lose information and the caller asked to raise.

    Attributes:
        diagnostics: the diagnostics that made the conversion fail (those the policy selects).
    """

    def __init__(self, message: str, diagnostics: Sequence[Diagnostic] = (), **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.diagnostics: list[Diagnostic] = list(diagnostics)


class MappingError(EnvglotError):
    """A mapping table (bundled or overlay) is invalid; names the file and row."""


class UnknownDialectError(EnvglotError):
    """A dialect name that envglot does not know, with a did-you-mean suggestion."""

    def __init__(self, name: str, known: Sequence[str]) -> None:
        import difflib

        close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        super().__init__(f"unknown dialect {name!r}{hint} (known: {', '.join(known)})")
        self.name = name
        self.suggestion = close[0] if close else None
