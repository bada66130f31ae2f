"""Dialect-independent questions about a response: what went wrong, may the caller retry?

Each helper takes a canonical :class:`~envglot.canonical.Envelope` (from
:func:`envglot.read`) or any document :func:`envglot.read` accepts, and answers from
the envelope's primary problem (the first one, the one single-error dialects carry)
and the canonical category table (``mappings/canonical.toml``).
"""

from __future__ import annotations

from typing import Any

from .api import MappingsArg, read
from .canonical import Envelope, Problem
from .mappings import Mappings
from .pipeline import as_mappings

__all__ = ["category", "http_status", "is_retryable", "primary_problem"]

Doc = Envelope | bytes | str | dict[str, Any]


def _envelope(envelope: Doc, m: Mappings) -> Envelope:
    return envelope if isinstance(envelope, Envelope) else read(envelope, mappings=m)


def _problem(env: Envelope, m: Mappings) -> Problem | None:
    if env.ok:
        return None
    return env.problems[0] if env.problems else Problem(category=m.unknown_category)


def primary_problem(envelope: Doc, mappings: MappingsArg = None) -> Problem | None:
    """The first problem of a failure (one in the fallback category if it names none); ``None`` on success."""
    m = as_mappings(mappings)
    return _problem(_envelope(envelope, m), m)


def category(envelope: Doc, mappings: MappingsArg = None) -> str | None:
    """The canonical category of a failure (``not_found``, ``resource_exhausted``, ...); ``None`` on success."""
    p = primary_problem(envelope, mappings=mappings)
    return None if p is None else p.category


def is_retryable(envelope: Doc, mappings: MappingsArg = None) -> bool | None:
    """May the caller retry? ``None`` on success.

    The source's own answer when it gave one (errorcode ``retryable``, a code-table row),
    else the default of the canonical category.
    """
    m = as_mappings(mappings)
    p = _problem(_envelope(envelope, m), m)
    if p is None:
        return None
    return p.retryable if p.retryable is not None else m.default_retryable(p.category)


def http_status(envelope: Doc, mappings: MappingsArg = None) -> int:
    """The HTTP status a gateway would answer with: 200 on success, else the category's status."""
    m = as_mappings(mappings)
    p = _problem(_envelope(envelope, m), m)
    return 200 if p is None else m.http(p.category)
