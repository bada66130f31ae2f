"""The CLI commands on a small sample of fuzz inputs (subprocesses are slow: ``ENVGLOT_FUZZ_CLI`` of them).

Per input: ``convert`` (target, ``--preserve`` and ``--unsupported`` vary), ``detect``,
``validate`` and ``migrate``; documented exit codes only, no traceback, valid outputs.
"""

from __future__ import annotations

import pytest

from fuzz.campaign import reproducer
from fuzz.cli import ENVGLOT, cli_runs
from fuzz.mutator import Mutator
from fuzz.oracle import Input
from fuzz.settings import CLI_INPUTS, SEED

# Seeds chosen to cover plain, residue-carrying, wrapped and hostile inputs alike.
SEEDS = [SEED + 7919 * k for k in range(CLI_INPUTS)]


@pytest.mark.parametrize("seed", SEEDS)
def test_cli_commands(seed: int) -> None:
    assert ENVGLOT, "the envglot command is installed with the package"
    inp = Input.of(Mutator(seed).case())
    failures = cli_runs(inp, SEEDS.index(seed))
    if failures:
        pytest.fail(
            "\n".join(
                f"{f.group}\n    {f.probe}: {f.detail[:300]}\n    input: {reproducer(f.probe, f.data)[:400]}"
                for f in failures
            ),
            pytrace=False,
        )
