"""Where each command of ``envglot`` lives: its module is imported when the command is first
needed (a run imports only its own command's module; ``--help``, a configuration file and
``envglot config`` need them all: :func:`every_command`).

Each module registers its commands on ``main`` (:mod:`envglot.cli.group`) when imported;
shared helpers are in :mod:`envglot.cli.common` (options, diagnostics, run status),
:mod:`envglot.cli.inputs`, :mod:`envglot.cli.outputs` and :mod:`envglot.cli.exits`.
"""

from __future__ import annotations

import importlib

import click

__all__ = ["MODULES", "every_command", "load"]

MODULES: dict[str, str] = {
    "codes": "info_cmd",
    "config": "config_cmd",
    "convert": "convert_cmd",
    "detect": "detect_cmd",
    "dialects": "info_cmd",
    "learn": "learn_cmd",
    "mappings": "mappings_cmd",
    "migrate": "migrate_cmd",
    "proxy": "proxy_cmd",
    "schema": "info_cmd",
    "validate": "validate_cmd",
}
"""Each command's module under ``envglot.cli`` (``tests/test_cli.py`` checks that each registers
exactly the commands listed for it here)."""


def load(name: str) -> None:
    """Import the module of the command ``name`` (it registers itself); an unknown name: nothing."""
    module = MODULES.get(name)
    if module is not None:
        importlib.import_module(f"{__package__}.{module}")


def every_command(group: click.Group) -> dict[str, click.Command]:
    """Every command of ``group`` (``main``), by name in sorted order, each module imported."""
    for name in MODULES:
        load(name)
    return dict(sorted(group.commands.items()))
