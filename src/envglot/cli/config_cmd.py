"""``envglot config``: the configuration in effect, and where each value comes from."""

from __future__ import annotations

import click
import msgspec

from .commands import every_command
from .config import COMMAND_LINE_ONLY, META_KEY, Config, option_key
from .group import main

__all__ = ["config"]

_HOW = {
    "--config": "named by --config",
    "ENVGLOT_CONFIG": "named by $ENVGLOT_CONFIG",
    "found": "found from the current directory upwards",
    "--no-config": "--no-config",
    "none": "no envglot.toml or pyproject.toml with [tool.envglot] here or above",
}


def _toml_value(value: object) -> str | None:
    """``value`` as TOML writes it (strings, numbers, booleans and lists of them), or None."""
    if isinstance(value, list | tuple):
        items = [_toml_value(v) for v in value]
        return None if None in items else f"[{', '.join(i for i in items if i is not None)}]"
    if isinstance(value, bool | int | float | str):
        return msgspec.json.encode(value).decode()
    return None  # no value (None, click's UNSET)


@main.command("config", short_help="Show the configuration in effect and where each value comes from.")
@click.argument("commands", nargs=-1, metavar="[COMMAND]...")
@click.pass_context
def config(ctx: click.Context, commands: tuple[str, ...]) -> None:
    """Print every configurable option of COMMANDs (default: all) with its value and source.

    The output is TOML (values that are set; a comment names the file and line, or
    `default`); options with no value and those a configuration may not set are listed
    in comments. See docs/cli.md, "Configuration and trust".

    \b
    Examples:
      envglot config
      envglot --config ci/envglot.toml config migrate
    """
    root = ctx.find_root()
    group = root.command
    assert isinstance(group, click.Group)
    cfg = root.meta.get(META_KEY)
    assert isinstance(cfg, Config)
    every = every_command(group)
    known = [n for n, c in every.items() if _configurable(c)]
    for name in commands:
        if name not in known:
            raise click.UsageError(f"{name}: not a command with options to configure (known: {', '.join(known)})")
    where = f"{cfg.path} ({_HOW[cfg.how]})" if cfg.path is not None else f"none ({_HOW[cfg.how]})"
    if cfg.ignored is not None:
        where = "none (a found file was ignored: see the warning above)"
    lines = [f"# configuration: {where}"]
    for name in commands or known:
        cmd = every[name]
        own = cfg.settings.get(name, {})
        bare = click.Context(cmd, info_name=name, default_map={})
        rows: list[tuple[str, str]] = []
        unset: list[str] = []
        cli_only: list[str] = []
        for p in sorted(_params(cmd), key=option_key):
            key = option_key(p)
            assert p.name is not None
            if p.name in COMMAND_LINE_ONLY:
                cli_only.append(key)
            elif p.name in own:
                s = own[p.name]
                at = f"{cfg.path}:{s.line}" if s.line is not None else str(cfg.path)
                rows.append((f"{key} = {_toml_value(s.value)}", f"{at}: {s.key}"))
            else:
                default = _toml_value(p.get_default(bare, call=True))
                if default is None:
                    unset.append(key)
                else:
                    rows.append((f"{key} = {default}", "default"))
        lines += ["", f"[{name}]"]
        width = max((len(r[0]) for r in rows), default=0)
        lines += [f"{text.ljust(width)}  # {source}" for text, source in rows]
        if unset:
            lines.append(f"# not set: {', '.join(unset)}")
        if cli_only:
            lines.append(f"# command line only: {', '.join(cli_only)}")
    click.echo("\n".join(lines))


def _params(cmd: click.Command) -> list[click.Option]:
    """The configurable options of ``cmd``, one per parameter (``--pretty``/``--compact`` are ``style``)."""
    out: dict[str, click.Option] = {}
    for p in cmd.params:
        if isinstance(p, click.Option) and p.name is not None and not p.hidden and p.name not in ("help", "version"):
            out.setdefault(p.name, p)
    return list(out.values())


def _configurable(cmd: click.Command) -> bool:
    return not isinstance(cmd, click.Group) and bool(_params(cmd))
