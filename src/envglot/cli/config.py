"""The project configuration: ``envglot.toml`` or ``[tool.envglot]`` in ``pyproject.toml``.

Found as ruff finds its own: from the current directory upwards, the first directory
holding an ``envglot.toml`` (the whole file is the configuration) or a ``pyproject.toml``
with a ``[tool.envglot]`` table; in the same directory ``envglot.toml`` wins.
``envglot --config FILE`` (or ``ENVGLOT_CONFIG=FILE``) names one, ``envglot --no-config``
ignores any.

A configuration is data the user chose. A *found* file is used only if it is owned by the
user (or root) and writable by no one else, as git's ``safe.directory`` rule has it
(:func:`envglot.tomlfile.untrusted`); another is ignored with a warning naming it and the rule, and a run
that uses a found file says so once on stderr. A file named explicitly is the user's
choice and is not checked. Every file is read through :mod:`envglot.tomlfile` (a regular
file, size and depth bounded).

Keys are option names (``to``, ``unsupported``, ``fail-if-lossy``, ``mappings``, ...):
a top-level key is a default for every command that has that option, a table named
after a command (``[tool.envglot.migrate]``) holds defaults for that command only and
wins. The result is click's ``default_map``, so an option given on the command line
still wins, and no command needs to know what its options mean. ``mappings`` (and any
other path list named in :data:`PATH_KEYS`) are relative to the configuration file.
Where output goes and what the proxy serves or starts (:data:`COMMAND_LINE_ONLY`) is
never taken from a configuration: such a key is an error naming the file, line and key.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import click

from ..errors import EnvglotError, MappingError
from ..tomlfile import key_line, parse_toml, read_regular, untrusted

if TYPE_CHECKING:
    from ..registry import Registry

CONFIG_NAME = "envglot.toml"
PYPROJECT = "pyproject.toml"
ENV_VAR = "ENVGLOT_CONFIG"
"""Names the configuration file, as ``--config`` does (the option wins)."""
PATH_KEYS = frozenset({"mappings"})
"""Keys whose values are paths, resolved against the configuration file's directory."""
COMMAND_LINE_ONLY = frozenset({"output", "log_path", "out", "in_place", "rejects", "report", "listen", "upstreams"})
"""Parameters no configuration may set: every path a command writes (``-o``, ``--out``,
``--in-place``, ``--log``, ``--report``, ``--rejects``), the proxy's ``--listen`` address
and its ``--upstreams`` file (the programs it starts)."""
META_KEY = "envglot.config"
"""Where the group's context keeps the :class:`Config` in effect (``ctx.meta``)."""


class ConfigError(click.UsageError):
    """An invalid configuration file (exit 2): names the file, the line and the key."""


class Setting(NamedTuple):
    """One configured option default and where it was set."""

    value: Any
    key: str
    """As written, with its table: ``[convert] pretty``, ``to``."""
    line: int | None


class Config(NamedTuple):
    """The configuration in effect for a run, and how it was chosen."""

    path: Path | None
    how: str
    """``--config``, ``ENVGLOT_CONFIG``, ``found``, ``--no-config`` or ``none``."""
    settings: dict[str, dict[str, Setting]]
    """Per command, per parameter name."""
    ignored: str | None = None
    """The warning about a found file that was not trusted, if any."""

    def default_map(self) -> dict[str, dict[str, Any]]:
        """click's ``default_map``: the configured values, per command."""
        return {cmd: {p: s.value for p, s in opts.items()} for cmd, opts in self.settings.items()}


class _UntrustedError(Exception):
    """A found configuration file the ownership rule refuses; the message says why."""


def _trust_check(path: Path) -> Callable[[os.stat_result], None]:
    """The check of the opened file's status (and of ``path`` itself when it is a symbolic link)."""

    def check(st: os.stat_result) -> None:
        link = os.lstat(path)
        why = untrusted(link) if stat.S_ISLNK(link.st_mode) else None
        why = why or untrusted(st)
        if why is not None:
            raise _UntrustedError(why)

    return check


def _read(path: Path, found: bool) -> tuple[str, dict[str, Any]]:
    """``(text, document)`` of a configuration file; a found one must pass :func:`untrusted`."""
    try:
        buf = read_regular(path, "the configuration", check=_trust_check(path) if found else None)
        doc = parse_toml(buf, str(path))
    except EnvglotError as exc:
        raise ConfigError(str(exc)) from None
    return buf.decode(), doc


def _envglot_table(doc: dict[str, Any]) -> dict[str, Any] | None:
    table = doc.get("tool", {})
    found = table.get("envglot") if isinstance(table, dict) else None
    return found if isinstance(found, dict) else None


class ConfigFile(NamedTuple):
    """A configuration file read: its text (for line numbers) and its envglot table."""

    path: Path
    text: str
    table: dict[str, Any]
    prefix: tuple[str, ...]
    """Where the table sits in the file: ``("tool", "envglot")`` in pyproject.toml."""


def _load(path: Path, found: bool) -> ConfigFile | None:
    """The envglot settings in ``path`` (None: a pyproject.toml without ``[tool.envglot]``)."""
    text, doc = _read(path, found)
    if path.name != PYPROJECT:
        return ConfigFile(path, text, doc, ())
    table = _envglot_table(doc)
    return None if table is None else ConfigFile(path, text, table, ("tool", "envglot"))


def find_config(start: Path) -> tuple[ConfigFile | None, str | None]:
    """The configuration that applies in ``start`` (the nearest upwards), and the warning
    about a found file that is not trusted (then no configuration applies)."""
    for d in (start, *start.parents):
        for name in (CONFIG_NAME, PYPROJECT):
            path = d / name
            if not path.is_file():
                continue
            try:
                f = _load(path, found=True)
            except _UntrustedError as exc:
                if name == PYPROJECT and not _has_envglot_table(path):
                    continue  # not a configuration: passed over, as a trusted one would be
                return None, (
                    f"envglot: ignoring config {path}: {exc} (a found configuration must belong to you "
                    f"or root and be writable by no one else; name it with --config or {ENV_VAR} to use it)"
                )
            if f is not None:
                return f, None
    return None, None


def _has_envglot_table(path: Path) -> bool:
    try:
        return _envglot_table(parse_toml(read_regular(path, "the configuration"), str(path))) is not None
    except EnvglotError:
        return False


def resolve(ctx: click.Context, named: str | None, no_config: bool, how: str) -> Config:
    """The :class:`Config` for this run: ``named`` (from ``how``), found upwards, or none.

    Raises:
        ConfigError: the file is unreadable or invalid, or sets a key it may not.
    """
    if no_config:
        return Config(None, "--no-config", {})
    if named is not None:
        path = Path(named)
        if not path.exists():
            raise click.UsageError(f"{how} {named}: no such file")
        f = _load(path, found=False)
        if f is None:
            raise ConfigError(f"{path}: no [tool.envglot] table")
        return Config(path, how, settings(f, ctx))
    f, ignored = find_config(Path.cwd())
    if f is None:
        return Config(None, "none", {}, ignored)
    return Config(f.path, "found", settings(f, ctx))


_UNSET: Any = object()


def _options(cmd: click.Command) -> dict[str, tuple[click.Parameter, Any]]:
    """A command's options by config key: ``(parameter, value a true flag stands for)``.

    Keys are the parameter name and each long option, with dashes. A flag that stands for
    a value of a shared parameter (``--pretty`` for ``style = "pretty"``) takes ``true``.
    """
    out: dict[str, tuple[click.Parameter, Any]] = {}
    for p in cmd.params:
        if not isinstance(p, click.Option) or p.name is None or p.hidden or p.name in ("help", "version"):
            continue  # a hidden option is an old spelling: configured under its new name only
        out[p.name.replace("_", "-")] = (p, _UNSET)
        for opt in p.opts:
            if opt.startswith("--") and opt[2:] != p.name.replace("_", "-"):
                stands = p.flag_value if p.is_flag and not p.is_bool_flag else _UNSET
                out[opt[2:]] = (p, stands)
    return out


def option_key(p: click.Option) -> str:
    """The key a configuration names ``p`` by: its first long option that takes a value (or its name)."""
    assert p.name is not None
    name = p.name.replace("_", "-")
    longs = [o[2:] for o in p.opts if o.startswith("--")]
    if name in longs or (p.is_flag and not p.is_bool_flag):
        return name
    return longs[0] if longs else name


def settings(f: ConfigFile, ctx: click.Context) -> dict[str, dict[str, Setting]]:
    """The configuration in ``f`` as option defaults for the commands of ``ctx``'s group.

    Raises:
        ConfigError: an unknown key, a value of the wrong type, a table that is not one, or
            a key of :data:`COMMAND_LINE_ONLY`.
    """
    from ..declared import with_declarations
    from . import exits
    from .commands import every_command
    from .common import set_registry
    from .exits import die

    group = ctx.command
    assert isinstance(group, click.Group)
    commands = every_command(group)
    where = f"[{'.'.join(f.prefix)}] " if f.prefix else ""

    def at(keys: tuple[str, ...]) -> str:
        line = key_line(f.text, (*f.prefix, *keys))
        return f"{f.path}{f':{line}' if line else ''}"

    def fail(keys: tuple[str, ...], scope: str, msg: str) -> ConfigError:
        return ConfigError(f"{at(keys)}: {scope}{msg}")

    shared: dict[str, Any] = {}
    per_command: dict[str, dict[str, Any]] = {}
    for key, value in f.table.items():
        if isinstance(value, dict):  # a table: one command's options (`mappings = [...]` is the option)
            if key not in commands:
                sub = ".".join((*f.prefix, key))
                raise fail((key,), "", f"[{sub}]: no such command (known: {', '.join(commands)})")
            per_command[key] = value
        elif not any(key in _options(c) for c in commands.values()):
            raise fail((key,), where, f"{key}: no command has an option --{key}")
        else:
            shared[key] = value
    registries: dict[tuple[str, ...], Registry] = {}
    for keys_of, values in (((), shared), *(((n,), t) for n, t in per_command.items())):
        if isinstance(values.get("mappings"), list):  # declared dialects first, so `to = "acme"` knows its name
            try:
                registries[keys_of] = with_declarations(_relative(f.path, "mappings", values["mappings"]))[0]
            except MappingError as exc:  # an invalid declaration: exit 65, as with --mappings
                scope = f"[{'.'.join((*f.prefix, *keys_of))}] " if f.prefix or keys_of else ""
                die(f"{at((*keys_of, 'mappings'))}: {scope}mappings: {exc}", exits.EX_DATAERR)
    try:
        return _defaults(f, ctx, commands, shared, per_command, registries, fail, at)
    finally:
        set_registry(ctx, None)  # each command's --mappings callback sets its own


def _defaults(
    f: ConfigFile,
    ctx: click.Context,
    commands: dict[str, click.Command],
    shared: dict[str, Any],
    per_command: dict[str, dict[str, Any]],
    registries: dict[tuple[str, ...], Registry],
    fail: Callable[[tuple[str, ...], str, str], ConfigError],
    at: Callable[[tuple[str, ...]], str],
) -> dict[str, dict[str, Setting]]:
    """Every command's option defaults from ``shared`` and its own table, each value checked
    with the dialects that command's configured mappings declare."""
    from .common import set_registry

    where = f"[{'.'.join(f.prefix)}] " if f.prefix else ""
    out: dict[str, dict[str, Setting]] = {}
    for name, cmd in commands.items():
        set_registry(ctx, registries.get((name,), registries.get(())))
        opts = _options(cmd)
        defaults: dict[str, Setting] = {}
        table_scope = f"[{'.'.join((*f.prefix, name))}] "
        for keys_of, scope, values in (((), where, shared), ((name,), table_scope, per_command.get(name, {}))):
            for key, value in values.items():
                found = opts.get(key)
                if found is None:
                    if values is shared:
                        continue  # a shared key for the commands that have it
                    raise fail((*keys_of, key), scope, f"{key}: envglot {name} has no option --{key}")
                param, stands = found
                assert param.name is not None
                if param.name in COMMAND_LINE_ONLY:
                    raise fail(
                        (*keys_of, key),
                        scope,
                        f"{key}: --{key} is command-line only (a configuration never chooses where output "
                        "goes, what the proxy listens on or which programs it starts)",
                    )
                if stands is not _UNSET:  # pretty = true -> style = "pretty"
                    if value is not True:
                        raise fail((*keys_of, key), scope, f"{key}: expected true (the default is what it changes)")
                    value = stands
                try:
                    value = _checked(param, _relative(f.path, key, value), ctx)
                except ValueError as exc:
                    raise fail((*keys_of, key), scope, f"{key}: {exc}") from None
                line = key_line(f.text, (*f.prefix, *keys_of, key))
                defaults[param.name] = Setting(value, f"{scope}{key}", line)
        if defaults:
            out[name] = defaults
    return out


def _relative(path: Path, key: str, value: Any) -> Any:
    if key not in PATH_KEYS:
        return value
    base = path.parent
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [os.path.normpath(base / v) for v in value]
    return value


def _checked(param: click.Parameter, value: Any, ctx: click.Context) -> Any:
    """The value as click will take it: the type checked now (``ValueError`` says what is wrong)."""
    multiple = getattr(param, "multiple", False)
    if multiple and not isinstance(value, list):
        raise ValueError("expected a list")
    if not multiple and isinstance(value, list | Mapping):
        raise ValueError(f"expected a single value, not a {type(value).__name__}")
    if isinstance(param, click.Option) and param.is_bool_flag and not isinstance(value, bool):
        raise ValueError("expected true or false")
    try:
        param.type_cast_value(ctx, value)
    except click.BadParameter as exc:
        raise ValueError(exc.message) from None
    return value
