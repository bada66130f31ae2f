"""``envglot proxy``: serve upstream MCP servers with every tool result in one dialect."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
import msgspec

from ..errors import EnvglotError

if TYPE_CHECKING:
    from ..proxy.config import ProxyConfig
from ..options import Options
from . import exits, main
from .common import DialectType, die, load_mappings, mappings_option

__all__ = ["proxy"]

_EPILOG = """\b
Exit codes:
  0   the client closed the connection (stdio) or the server was stopped (HTTP)
  2   usage error (no upstream, --listen not a loopback HOST:PORT, ...)
  65  the config file or a mapping overlay is invalid
  66  the config file or a mapping overlay is unreadable
  69  --listen: the address is in use (or not this machine's)
"""


@main.command(
    epilog=_EPILOG,
    short_help="Serve MCP servers with every tool result in one dialect.",
    context_settings={"allow_interspersed_args": False},
)
@click.argument("command", nargs=-1, metavar="[-- UPSTREAM_CMD ARGS...]")
@click.option("-t", "--to", "to", type=DialectType(writable=True), help="Target dialect (or `target` in --config).")
@click.option("--prefix", metavar="NAME", default="", help="Prefix of the upstream's tool names (NAME_tool).")
@click.option("-c", "--config", "config_path", metavar="FILE", help="TOML file with several upstreams (docs/proxy.md).")
@click.option("--listen", metavar="HOST:PORT", help="Serve Streamable HTTP on http://HOST:PORT/mcp (loopback only).")
@click.option("--annotate", is_flag=True, help="Put each call's diagnostics in the result's _meta.")
@click.option(
    "--header",
    "headers",
    multiple=True,
    metavar="NAME=VALUE",
    help="HTTP header for every url upstream (repeatable); $NAME / ${NAME} in VALUE: an environment variable.",
)
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), help="Seconds per upstream call (default 60).")
@mappings_option
@click.option("-q", "--quiet", is_flag=True, help="No log line per call (warnings still go to stderr).")
def proxy(
    command: tuple[str, ...],
    to: str | None,
    prefix: str,
    config_path: str | None,
    listen: str | None,
    annotate: bool,
    headers: tuple[str, ...],
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
      envglot proxy --config proxy.toml --listen 127.0.0.1:8931 --header 'Authorization=Bearer $TOKEN'
    """
    from ..proxy.config import ProxyConfig, UpstreamSpec, load_config

    m = load_mappings(mappings)
    if config_path is not None:
        if command or prefix:
            raise click.UsageError("give the upstream either after -- or in --config, not both")
        if not Path(config_path).is_file():
            die("cannot read the config file", exits.EX_NOINPUT, config_path)
        try:
            cfg = load_config(Path(config_path))
        except EnvglotError as exc:
            die(str(exc), exits.EX_DATAERR)
    else:
        if not command:
            raise click.UsageError("no upstream: give its command after -- or use --config FILE")
        cfg = ProxyConfig(upstream=[UpstreamSpec(prefix=prefix, command=command[0], args=list(command[1:]))])
    try:
        if timeout is not None:
            cfg = ProxyConfig(upstream=cfg.upstream, target=cfg.target, timeout=timeout)
        if headers:
            cfg = _with_headers(cfg, headers)
        cfg.check("command line" if config_path is None else config_path)
        for up in cfg.upstream:
            up.resolved_headers()  # every environment reference is set: fail now, not at the first call
    except EnvglotError as exc:
        raise click.UsageError(str(exc)) from None
    target = to or (DialectType(writable=True).convert(cfg.target, None, None) if cfg.target else None)
    if target is None:
        raise click.UsageError("no target dialect: give -t DIALECT (or target = ... in --config)")

    try:
        from ..proxy.rewrite import Rewriter
        from ..proxy.server import Proxy, bind_listener, listen_url, parse_listen, serve_http, serve_stdio
    except ImportError as exc:
        die(str(exc), exits.EX_USAGE)
    try:
        where = parse_listen(listen) if listen is not None else None
        rewriter = Rewriter(target, options=Options(mappings=m), annotate=annotate)
    except EnvglotError as exc:
        raise click.UsageError(str(exc)) from None
    sock = None
    if where is not None:
        try:
            sock = bind_listener(*where)
        except OSError as exc:
            die(f"cannot listen on {listen}: {exc.strerror or exc}", exits.EX_UNAVAILABLE)
    upstreams = ", ".join(f"{u.prefix or '(no prefix)'}={u.url or u.command}" for u in cfg.upstream)
    served = listen_url(sock) if sock is not None else "stdio"
    click.echo(f"envglot proxy: serving {served} as {target}; upstreams: {upstreams}", err=True)

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
            anyio.run(serve_http, p, *where, sock)
    except KeyboardInterrupt:
        sys.exit(130)


def _with_headers(cfg: ProxyConfig, headers: tuple[str, ...]) -> ProxyConfig:
    """``cfg`` with ``--header`` values added to every url upstream (over the file's own).

    Raises:
        EnvglotError: a header is not ``NAME=VALUE``, or no upstream is a url one.
    """
    from ..proxy.config import parse_header

    extra = dict(parse_header(h) for h in headers)
    if not any(u.url is not None for u in cfg.upstream):
        raise EnvglotError("--header is for url (Streamable HTTP) upstreams: give them in --config")
    ups = [
        msgspec.structs.replace(u, headers={**(u.headers or {}), **extra}) if u.url is not None else u
        for u in cfg.upstream
    ]
    return msgspec.structs.replace(cfg, upstream=ups)
