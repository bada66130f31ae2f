"""Shared test setup: markers, the order and the xdist scheduling that keep ``pytest -q`` (``-n
auto``) short, and a progress line naming each test module as it starts.

The golden corpus helpers live in ``tests/golden`` (importable as ``golden``).
"""

from __future__ import annotations

from typing import Any

import pytest

SLOW: dict[str, str] = {
    "tests/test_bench_smoke.py": "the benchmark harness on a tiny corpus",
    "tests/test_migrate_dask.py": "Dask LocalClusters",
    "tests/test_batch_faults.py": "fault tests: migrations killed mid-run",
    "tests/test_cli_faults.py": "fault tests: full disks, signals, 200,000 records",
    "tests/test_migrate_large.py": "200,000 records in bounded memory",
    "tests/test_migrate_cli.py": "fault tests: migrations killed mid-run",
    "tests/fuzz/": "the fuzz budget",
    "tests/proxy/": "real MCP servers and clients",
    "tests/test_docs_run.py": "every docs page run as written",
    "tests/test_style.py": "ruff and mypy",
    "tests/test_docs_typing.py": "mypy --strict on the docs' examples",
    "tests/test_packaging.py": "builds and installs the wheel",
    "tests/test_other_pythons.py": "the input checks' suites on CPython 3.12 and 3.13",
}
"""Test modules (or folders) marked ``slow``, and why. They run in CI like every test (``-m "not
slow"`` leaves them out while iterating); they are scheduled first, so that on two workers no
long test starts last."""

GROUPED = frozenset(
    {"tests/test_bench_smoke.py", "tests/test_migrate_dask.py", "tests/test_cli_faults.py", "tests/test_fields.py"}
)
"""Modules whose module-scoped fixture is expensive: all their tests go to one xdist worker, one
after another, so the fixture is built once (xdist's own ``loadgroup`` marks no longer reach the
scheduler with pytest 9.2, whose node ids do not take xdist's suffix)."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "packaging: builds and installs the wheel offline (runs in CI)")
    config.addinivalue_line("markers", "slow: a long test (fuzz budget, Dask cluster, fault tests, ...); runs in CI")
    _config[:] = [config]


def _slow_reason(nodeid: str) -> str | None:
    path = nodeid.split("::", 1)[0]
    return next((why for prefix, why in SLOW.items() if path.startswith(prefix)), None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark; slow modules first (a stable sort: the order within each part is kept)."""
    for item in items:
        if _slow_reason(item.nodeid) is not None:
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: _slow_reason(item.nodeid) is None)


_started: set[str] = set()
_config: list[pytest.Config] = []


def pytest_runtest_logstart(nodeid: str, location: tuple[str, int | None, str]) -> None:
    """One line when a test module's first test starts: what is running, between the dots."""
    module = nodeid.split("::", 1)[0]
    if module in _started or not _config or hasattr(_config[0], "workerinput"):  # xdist workers print nothing
        return
    _started.add(module)
    reporter = _config[0].pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        why = _slow_reason(nodeid)
        column = reporter._tw.width_of_current_line  # start our own line after the dots
        reporter.write(("\n" if column else "") + module + (f"  (slow: {why})" if why else "") + "\n")


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Tests go to the workers one at a time, in collection order (slow ones first), except that
    a module of :data:`GROUPED` goes whole to one worker."""
    from xdist.scheduler import LoadScopeScheduling

    class ByTestAndGroupedModule(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:  # xdist's extension point (LoadFileScheduling overrides it too)
            module = nodeid.split("::", 1)[0]
            return module if module in GROUPED else nodeid

    return ByTestAndGroupedModule(config, log)


@pytest.fixture
def members_parses(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The documents handed to the top level's members parse (``pipeline.members_within_depth``)
    while the test runs, recorded in order: a test of the straight entry's strict read asserts
    which documents took that parse."""
    import envglot.pipeline as pipeline

    parsed: list[bytes] = []
    parse = pipeline.members_within_depth

    def counted(buf: bytes, *args: Any) -> Any:
        parsed.append(buf)
        return parse(buf, *args)

    monkeypatch.setattr(pipeline, "members_within_depth", counted)
    return parsed
