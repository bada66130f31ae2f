"""Bounded excerpts of untrusted input for messages and logs."""

from __future__ import annotations

__all__ = ["EXCERPT_LIMIT", "excerpt", "excerpt_repr"]

EXCERPT_LIMIT = 120
"""Characters of an input value a message quotes at most."""


def excerpt(value: str | bytes, limit: int = EXCERPT_LIMIT) -> str:
    """``value`` cut to ``limit`` characters, saying how much was left out.

    Bytes are decoded as UTF-8 with invalid bytes shown as ``\\xNN`` escapes, so the
    result is always valid text whatever the input held; lone surrogates are escaped too.
    """
    text = value.decode("utf-8", "backslashreplace") if isinstance(value, bytes | bytearray) else value
    if len(text) > limit:
        text = f"{text[:limit]}… (+{len(text) - limit} chars)"
    if not text.isascii():
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def excerpt_repr(value: object, limit: int = EXCERPT_LIMIT) -> str:
    """``repr(value)`` for a message, bounded like :func:`excerpt` (strings are cut before repr)."""
    if isinstance(value, str) and len(value) > limit:
        return repr(value[:limit]) + f"… (+{len(value) - limit} chars)"
    return excerpt(repr(value), limit + 2)
