"""Bounded excerpts of input-derived text for messages and logs.

Anything quoted from an input (a code, a key, an exception message that embeds one) goes
through :func:`excerpt` before it reaches stderr, a log line or a rejects record, so a
5 MB value is never echoed whole.
"""

from __future__ import annotations

import os
import re

import msgspec

__all__ = ["DEFAULT_LIMIT", "MESSAGE_LIMIT", "display_path", "excerpt", "key_segment", "quoted"]

DEFAULT_LIMIT = 120
"""Characters kept by default (before the ``… (N more characters)`` note): one quoted value."""
MESSAGE_LIMIT = 500
"""Characters kept of a whole message or JSON path that may embed input (stderr, logs, rejects)."""


def excerpt(value: object, limit: int = DEFAULT_LIMIT) -> str:
    """``value`` as text, cut to at most ``limit`` characters plus a note of how much was cut.

    ``bytes`` are decoded as UTF-8 with invalid bytes shown as ``\\xNN``; lone surrogates
    (from ``surrogateescape`` file names or bad input) are shown the same way, so the result
    always encodes as valid UTF-8. A cut never splits a character or an escape.

    >>> excerpt("abc")
    'abc'
    >>> excerpt("x" * 300, limit=5)
    'xxxxx… (295 more characters)'
    >>> excerpt(b"caf\\xe9")
    'caf\\\\xe9'
    """
    if limit < 1:
        raise ValueError("limit must be positive")
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        # decode no more than needed (at most 4 bytes per character); bad bytes as \xNN below
        text = raw[: limit * 4 + 4].decode("utf-8", "surrogateescape")
        if len(text) > limit:
            return f"{_clean(text[:limit])}… (cut; {len(raw)} bytes in all)"
        return _clean(text)
    text = value if isinstance(value, str) else str(value)
    if len(text) > limit:
        return f"{_clean(text[:limit])}… ({len(text) - limit} more characters)"
    return _clean(text)


def _clean(text: str) -> str:
    """Lone surrogates as ``\\xNN`` (surrogateescape) or ``\\udNNN``: always valid UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape" if _only_escapes(text) else "backslashreplace").decode(
            "utf-8", "backslashreplace"
        )
    return text


def _only_escapes(text: str) -> bool:
    return all(not (0xD800 <= ord(c) <= 0xDFFF) or 0xDC80 <= ord(c) <= 0xDCFF for c in text)


def display_path(path: str | os.PathLike[str]) -> str:
    """How a file name is shown in messages, logs and reports: always valid UTF-8.

    A name that is not valid UTF-8 (read with ``surrogateescape``) shows its bad bytes as
    ``\\xNN``, e.g. ``caf\\xe9.json``; valid names are unchanged (never cut).
    """
    text = os.fspath(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(text).decode("utf-8", "backslashreplace")
    return text


def quoted(value: object, limit: int = DEFAULT_LIMIT) -> str:
    """``repr`` of an input-derived value for a message, bounded like :func:`excerpt`."""
    return repr(excerpt(value, limit)) if isinstance(value, str) else excerpt(repr(value), limit)


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ENC = msgspec.json.Encoder()


def key_segment(key: str) -> str:
    """The path segment of an object key: ``.name`` for an ASCII identifier, else ``["JSON string"]``."""
    return "." + key if _NAME.fullmatch(key) else "[" + _ENC.encode(key).decode() + "]"
