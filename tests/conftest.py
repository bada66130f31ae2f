"""Shared test setup: the golden corpus helpers live in ``tests/golden`` (importable as ``golden``)."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "packaging: builds and installs the wheel offline (runs in CI)")
