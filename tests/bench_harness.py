"""The benchmark harness's modules for the tests: ``benchmarks/`` is no package, so each file is
loaded by its path, once, under the name ``bench_<name>``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def bench_module(name: str) -> Any:
    """``benchmarks/<name>.py`` as a module (the one already loaded, if any)."""
    key = f"bench_{name}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[key] = mod  # dataclasses look their module up while the class is built
    spec.loader.exec_module(mod)
    return mod
