"""The seed envelopes: every bundled example and every golden input, read once."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from .tree import parse

__all__ = ["ROOT", "seeds"]

ROOT = Path(__file__).resolve().parents[2]


def _files() -> list[Path]:
    files = sorted((ROOT / "examples").glob("**/*.json"))
    return files + sorted((ROOT / "tests" / "dialects").glob("*/cases/*.json"))


@functools.cache
def seeds() -> tuple[tuple[str, Any], ...]:
    """``(name, tree)`` of every seed document, in a fixed order."""
    out = []
    for p in _files():
        out.append((str(p.relative_to(ROOT)), parse(p.read_bytes())))
    if not out:
        raise RuntimeError(f"no seed envelopes under {ROOT}")
    return tuple(out)
