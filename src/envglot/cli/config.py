"""The project configuration: ``envglot.toml`` or ``[tool.envglot]`` in ``pyproject.toml``.

Found as ruff finds its own: from the current directory upwards, the first directory
holding an ``envglot.toml`` (the whole file is the configuration) or a ``pyproject.toml``
with a ``[tool.envglot]`` table; in the same directory ``envglot.toml`` wins.
``envglot --config FILE`` names one, ``envglot --no-config`` ignores any.

Keys are option names (``to``, ``unsupported``, ``fail-if-lossy``, ``mappings``, ...):
a top-level key is a default for every command that has that option, a table named
after a command (``[tool.envglot.migrate]``) holds defaults for that command only and
wins. The result is click's ``default_map``, so an option given on the command line
still wins, and no command needs to know what its options mean. ``mappings`` (and any
other path list named in :data:`PATH_KEYS`) are relative to the configuration file.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

CONFIG_NAME = "envglot.toml"
PYPROJECT = "pyproject.toml"
PATH_KEYS = frozenset({"mappings"})
"""Keys whose values are paths, resolved against the configuration file's directory."""


class ConfigError(click.UsageError):
    """An invalid configuration file (exit 2): names the file and the key."""


def find_config(start: Path) -> Path | None:
    """The configuration file that applies in ``start``: the nearest one upwards, or None."""
    for d in (start, *start.parents):
        own = d / CONFIG_NAME
        if own.is_file():
            return own
        py = d / PYPROJECT
        if py.is_file() and _envglot_table(py) is not None:
            return py
    return None


def _read(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"cannot read the configuration {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def _envglot_table(pyproject: Path) -> dict[str, Any] | None:
    table = _read(pyproject).get("tool", {})
    found = table.get("envglot") if isinstance(table, dict) else None
    return found if isinstance(found, dict) else None


def load_table(path: Path) -> dict[str, Any]:
    """The envglot settings in ``path`` (the whole ``envglot.toml``, or ``[tool.envglot]``)."""
    if path.name == PYPROJECT:
        table = _envglot_table(path)
        if table is None:
            raise ConfigError(f"{path}: no [tool.envglot] table")
        return table
    return _read(path)


_UNSET: Any = object()


def _options(cmd: click.Command) -> dict[str, tuple[click.Parameter, Any]]:
    """A command's options by config key: ``(parameter, value a true flag stands for)``.

    Keys are the parameter name and each long option, with dashes. A flag that stands for
    a value of a shared parameter (``--pretty`` for ``style = "pretty"``) takes ``true``.
    """
    out: dict[str, tuple[click.Parameter, Any]] = {}
    for p in cmd.params:
        if not isinstance(p, click.Option) or p.name is None or p.name in ("help", "version"):
            continue
        out[p.name.replace("_", "-")] = (p, _UNSET)
        for opt in p.opts:
            if opt.startswith("--") and opt[2:] != p.name.replace("_", "-"):
                stands = p.flag_value if p.is_flag and not p.is_bool_flag else _UNSET
                out[opt[2:]] = (p, stands)
    return out


def default_map(path: Path, group: click.Group, ctx: click.Context) -> dict[str, dict[str, Any]]:
    """Turn the configuration in ``path`` into click's ``default_map`` for ``group``'s commands.

    Raises:
        ConfigError: an unknown key, a value of the wrong type, or a table that is not one.
    """
    table = load_table(path)
    commands = {name: group.commands[name] for name in sorted(group.commands)}
    prefix = "tool.envglot" if path.name == PYPROJECT else ""
    where = f"[{prefix}] " if prefix else ""
    shared: dict[str, Any] = {}
    per_command: dict[str, dict[str, Any]] = {}
    for key, value in table.items():
        if isinstance(value, dict):  # a table: one command's options (`mappings = [...]` is the option)
            if key not in commands:
                raise ConfigError(f"{path}: [{_dotted(prefix, key)}]: no such command (known: {', '.join(commands)})")
            per_command[key] = value
        elif not any(key in _options(c) for c in commands.values()):
            raise ConfigError(f"{path}: {where}{key}: no command has an option --{key}")
        else:
            shared[key] = value
    out: dict[str, dict[str, Any]] = {}
    for name, cmd in commands.items():
        opts = _options(cmd)
        defaults: dict[str, Any] = {}
        for scope, values in ((where, shared), (f"[{_dotted(prefix, name)}] ", per_command.get(name, {}))):
            for key, value in values.items():
                found = opts.get(key)
                if found is None:
                    if values is shared:
                        continue  # a shared key for the commands that have it
                    raise ConfigError(f"{path}: {scope}{key}: envglot {name} has no option --{key}")
                param, stands = found
                assert param.name is not None
                if stands is not _UNSET:  # pretty = true -> style = "pretty"
                    if value is not True:
                        raise ConfigError(f"{path}: {scope}{key}: expected true (the default is what it changes)")
                    value = stands
                defaults[param.name] = _checked(path, f"{scope}{key}", param, _relative(path, key, value), ctx)
        if defaults:
            out[name] = defaults
    return out


def _dotted(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _relative(path: Path, key: str, value: Any) -> Any:
    if key not in PATH_KEYS:
        return value
    base = path.parent
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [os.path.normpath(base / v) for v in value]
    return value


def _checked(path: Path, key: str, param: click.Parameter, value: Any, ctx: click.Context) -> Any:
    """The value as click will take it: the type checked now, so an error names the file and key."""
    multiple = getattr(param, "multiple", False)
    if multiple and not isinstance(value, list):
        raise ConfigError(f"{path}: {key}: expected a list")
    if not multiple and isinstance(value, list | Mapping):
        raise ConfigError(f"{path}: {key}: expected a single value, not a {type(value).__name__}")
    if isinstance(param, click.Option) and param.is_bool_flag and not isinstance(value, bool):
        raise ConfigError(f"{path}: {key}: expected true or false")
    try:
        param.type_cast_value(ctx, value)
    except click.BadParameter as exc:
        raise ConfigError(f"{path}: {key}: {exc.message}") from None
    return value
