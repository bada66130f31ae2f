"""``envglot proxy``: serve upstream MCP servers with every tool result in one dialect."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click

from ..errors import EnvglotError
from ..options import Options
from . import exits, main
from .common import DialectType, die, load_mappings, mappings_option, unreadable

__all__ = ["proxy"]

_EPILOG = """\b
Exit codes:
  0   the client closed the connection (stdio) or the server was stopped (HTTP)
  2   usage error (no upstream, --listen not a loopback HOST:PORT, ...)
  65  the --upstreams file or a mapping overlay is invalid
  66  the --upstreams file or a mapping overlay is unreadable (or not a regular file)
"""


@main.command(
    epilog=_EPILOG,
    short_help="Serve MCP servers with every tool result in one dialect.",
    context_settings={"allow_interspersed_args": False},
)
@click.argument("command", nargs=-1, metavar="[-- UPSTREAM_CMD ARGS...]")
@click.option("-t", "--to", "to", type=DialectType(writable=True), help="Target dialect (or `target` in --upstreams).")
@click.option("--prefix", metavar="NAME", default="", help="Prefix of the upstream's tool names (NAME_tool).")
@click.option("-u", "--upstreams", metavar="FILE", help="TOML file with several upstreams (docs/proxy.md).")
@click.option("-c", "--config", "old_upstreams", metavar="FILE", hidden=True, help="Old spelling of --upstreams.")
@click.option("--listen", metavar="HOST:PORT", help="Serve Streamable HTTP on http://HOST:PORT/mcp (loopback only).")
@click.option("--annotate", is_flag=True, help="Put each call's diagnostics in the result's _meta.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), help="Seconds per upstream call (default 60).")
@mappings_option
@click.option("-q", "--quiet", is_flag=True, help="No log line per call (warnings still go to stderr).")
def proxy(
    command: tuple[str, ...],
    to: str | None,
    prefix: str,
    upstreams: str | None,
    old_upstreams: str | None,
    listen: str | None,
    annotate: bool,
    timeout: float | None,
    mappings: tuple[str, ...],
    quiet: bool,
) -> None:
    """Run an MCP server in front of upstream MCP servers, rewriting every tool result.

    Each tool result's envelope (any dialect, detected per result) is converted to the
    target dialect; a result with no envelope is wrapped as the target's success or
    failure as its isError says. tools/list publishes the target's outputSchema.
    Diagnostics go to stderr, one line per call. See docs/proxy.md.

    \b
    Examples:
      envglot proxy -t response-v2 -- dotbot-mcp --stdio
      envglot proxy -t result --prefix gh -- npx -y @modelcontextprotocol/server-github
      envglot proxy --upstreams proxy.toml --listen 127.0.0.1:8931
    """
    from ..proxy.config import ProxyConfig, UpstreamSpec, load_config

    if old_upstreams is not None:
        if upstreams is not None:
            raise click.UsageError("give --upstreams once (--config is its old spelling)")
        click.echo("envglot proxy: --config FILE is deprecated, use --upstreams FILE", err=True)
        upstreams = old_upstreams
    m = load_mappings(mappings)
    if upstreams is not None:
        if command or prefix:
            raise click.UsageError("give the upstream either after -- or in --upstreams, not both")
        why = unreadable(upstreams, "the upstreams file")
        if why is not None:
            die(why, exits.EX_NOINPUT, upstreams)
        try:
            cfg = load_config(Path(upstreams))
        except EnvglotError as exc:
            die(str(exc), exits.EX_DATAERR)
    else:
        if not command:
            raise click.UsageError("no upstream: give its command after -- or use --upstreams FILE")
        cfg = ProxyConfig(upstream=[UpstreamSpec(prefix=prefix, command=command[0], args=list(command[1:]))])
    try:
        if timeout is not None:
            cfg = ProxyConfig(upstream=cfg.upstream, target=cfg.target, timeout=timeout)
        cfg.check("command line" if upstreams is None else upstreams)
    except EnvglotError as exc:
        raise click.UsageError(str(exc)) from None
    target = to or (DialectType(writable=True).convert(cfg.target, None, None) if cfg.target else None)
    if target is None:
        raise click.UsageError("no target dialect: give -t DIALECT (or target = ... in --upstreams)")

    try:
        from ..proxy.rewrite import Rewriter
        from ..proxy.server import Proxy, parse_listen, serve_http, serve_stdio
    except ImportError as exc:
        die(str(exc), exits.EX_USAGE)
    try:
        where = parse_listen(listen) if listen is not None else None
        rewriter = Rewriter(target, options=Options(mappings=m), annotate=annotate)
    except EnvglotError as exc:
        raise click.UsageError(str(exc)) from None

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("envglot proxy: %(message)s"))
    log = logging.getLogger("envglot.proxy")
    log.addHandler(handler)
    log.setLevel(logging.WARNING if quiet else logging.INFO)
    log.propagate = False

    import anyio

    p = Proxy(cfg, rewriter)
    try:
        if where is None:
            anyio.run(serve_stdio, p)
        else:
            anyio.run(serve_http, p, *where)
    except KeyboardInterrupt:
        sys.exit(130)
