"""The fuzz suite's budget: a hypothesis settings object and the CLI sample size, from env vars.

- ``ENVGLOT_FUZZ_EXAMPLES`` (default 150): examples per strategy per entry-point family;
- ``ENVGLOT_FUZZ_CLI`` (default 6): inputs run through the CLI commands (4 subprocesses each);
- ``ENVGLOT_FUZZ_DECLARATIONS`` (default a fifth of the examples, at least 10): hostile dialect
  declarations loaded (each costs a full load of the tables and a pass over the corpus);
- ``ENVGLOT_FUZZ_SEED`` (default 0): shifts the seeds of the mutated cases and the CLI sample.

Derandomized, database-free and without deadlines, so a CI run is reproducible and never
flaky; the long campaign (``scripts/fuzz.py``) is where volume comes from.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

__all__ = ["CLI_INPUTS", "DECLARATIONS", "EXAMPLES", "FUZZ", "SEED"]

EXAMPLES = int(os.environ.get("ENVGLOT_FUZZ_EXAMPLES", "150"))
CLI_INPUTS = int(os.environ.get("ENVGLOT_FUZZ_CLI", "6"))
SEED = int(os.environ.get("ENVGLOT_FUZZ_SEED", "0"))
DECLARATIONS = int(os.environ.get("ENVGLOT_FUZZ_DECLARATIONS", str(max(10, EXAMPLES // 5))))

settings.register_profile(
    "envglot-fuzz",
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
    # Shrinking a failure would re-run every probe hundreds of times; the failure message
    # names the group and a reproducer instead, and scripts/fuzz.py shrinks reproducers.
    phases=[Phase.explicit, Phase.generate],
    print_blob=False,
)
FUZZ = settings.get_profile("envglot-fuzz")
