"""Hostile values: what an untrusted server may put anywhere in a document.

Every generator takes a :class:`random.Random`, so a seed reproduces the value.
"""

from __future__ import annotations

import random
from typing import Any

from envglot.dialect import registered

from .tree import Num, Obj

__all__ = ["DEEP_DEPTHS", "FIELDS", "big_string", "deep", "hostile_key", "hostile_value", "overflow"]

DEEP_DEPTHS = (257, 300, 1000, 5000)
"""Nesting depths tried: just past jq's 256, and far past Python's recursion limit."""

# Fields the dialects type (numbers, booleans, enums, dates): where an overflow or a wrong type bites.
_WORDS = (
    "success",
    "status",
    "error",
    "errors",
    "warnings",
    "data",
    "meta",
    "value",
    "code",
    "message",
    "retryable",
    "retry_after_seconds",
    "retry_after_ms",
    "elapsed_ms",
    "duration_ms",
    "approxTokens",
    "truncated",
    "hasMore",
    "total",
    "count",
    "limit",
    "offset",
    "version",
    "schema_id",
    "requestId",
    "request_id",
    "generatedAt",
    "timestamp",
    "error_type",
    "error_code",
    "error_data",
    "tool",
    "tool_version",
    "found",
    "isError",
    "structuredContent",
    "content",
    "_envglot",
    "_meta",
    "_warnings",
    "page",
    "workspace",
    "result",
    "intent",
    "actions",
    "audit",
    "summary",
    "details",
)
FIELDS: tuple[str, ...] = (*_WORDS, *sorted({k for d in registered() for k in d.keys} - set(_WORDS)))
"""Field names of every registered dialect's envelope (its wire Struct's top-level keys) and more."""

_INVALID_UTF8 = (
    "\udcff",  # 0xFF never appears in UTF-8
    "\udcc3",  # a lead byte with no continuation
    "\udcc0\udcaf",  # overlong '/'
    "\udced\udca0\udc80",  # an encoded surrogate (CESU-8)
    "\udcf4\udc90\udc80\udc80",  # beyond U+10FFFF
    "\udc80",  # a lone continuation byte
)
_LONE_SURROGATES = ("\ud800", "\udbff", "\udfff", "\ud83d")  # written as \uXXXX escapes


def overflow(rng: random.Random) -> Any:
    """A number no typed field (int64, float64) can hold, or one at the edge."""
    return rng.choice(
        (
            Num("1e400"),
            Num("-1e400"),
            Num("1e-400"),
            Num("1" * 10_000),
            Num("-" + "9" * 5_000),
            2**63,
            -(2**63) - 1,
            2**64,
            2**1024,
            Num("123456789012345678901234567890.5e300"),
            -0.0,
        )
    )


def big_string(rng: random.Random) -> str:
    """A long string (mostly 70 kB; sometimes 1 MB)."""
    n = 1_000_000 if rng.random() < 0.01 else 70_000
    return rng.choice('x{"\\é') * n


def deep(rng: random.Random, depth: int | None = None) -> Any:
    """Arrays or objects nested ``depth`` levels (built iteratively)."""
    d = depth or rng.choice(DEEP_DEPTHS)
    inner: Any = rng.choice((None, 1, "x", []))
    as_obj = rng.random() < 0.5
    key = rng.choice(("a", "data", "value", "_envglot"))
    for _ in range(d):
        inner = Obj([(key, inner)]) if as_obj else [inner]
    return inner


def _bad_text(rng: random.Random) -> str:
    bad = rng.choice(_INVALID_UTF8 + _LONE_SURROGATES)
    pre, post = rng.choice(("", "ok ", "é")), rng.choice(("", " tail", '"'))
    return pre + bad + post


def hostile_key(rng: random.Random) -> str:
    """A key that is invalid UTF-8, a lone surrogate, huge, empty or special."""
    return rng.choice(
        (
            _bad_text(rng),
            _bad_text(rng),
            "",
            "_envglot",
            "$",
            "__proto__",
            "a\x00b",
            "\u2028",
            "k" * rng.choice((300, 70_000)),
            rng.choice(FIELDS),
        )
    )


def hostile_value(rng: random.Random) -> Any:
    """One hostile value of any kind."""
    r = rng.random()
    if r < 0.3:
        return _bad_text(rng)
    if r < 0.5:
        return overflow(rng)
    if r < 0.6:
        return deep(rng)
    if r < 0.67:
        return big_string(rng)
    if r < 0.75:
        return Obj([(hostile_key(rng), rng.choice((None, 1, "v")))])
    if r < 0.82:
        return rng.choice((float("inf"), float("nan"), Num("NaN"), Num("Infinity")))
    if r < 0.9:
        return rng.choice(("\x00", "\u2028\u2029", "\ufeff", "\U0010ffff", "\\u0000", "</script>", "${jndi:x}"))
    return rng.choice(([None] * 1000, list(range(2000)), Obj([(str(i), i) for i in range(1000)])))
