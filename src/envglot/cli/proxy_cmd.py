"""``envglot proxy``: serve upstream MCP servers with every tool result in one dialect."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
import msgspec

from ..errors import EnvglotError
from ..options import Options
from . import exits
from .common import DialectType, load_mappings, mappings_option, unreadable
from .exits import die
from .group import main

if TYPE_CHECKING:
    from ..proxy.config import ProxyConfig

__all__ = ["proxy"]

_EPILOG = """\b
Exit codes:
  0   the client closed the connection (stdio) or the server was stopped (HTTP)
  2   usage error (no upstream, --listen not a loopback HOST:PORT without a token, ...)
  65  the --upstreams file or a mapping overlay is invalid
  66  the --upstreams file or a mapping overlay is unreadable (or not a regular file)
  69  --listen: the address is in use (or not this machine's)
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
@click.option(
    "--listen-token",
    metavar="TOKEN",
    envvar="ENVGLOT_LISTEN_TOKEN",
    show_envvar=True,
    help="Bearer token every HTTP request must carry (prefer the env var or --listen-token-file).",
)
@click.option("--listen-token-file", metavar="FILE", help="Read the --listen-token from FILE.")
@click.option("--annotate", is_flag=True, help="Put each call's diagnostics in the result's _meta.")
@click.option(
    "--header",
    "headers",
    multiple=True,
    metavar="NAME=VALUE",
    help="HTTP header for every url upstream (repeatable); $NAME / ${NAME} in VALUE: an environment variable.",
)
@click.option("--timeout", type=float, help="Seconds per upstream call and start-up (default 60).")
@click.option(
    "--max-result-bytes",
    type=click.IntRange(min=1024),
    metavar="N",
    help="Longest upstream answer taken, in bytes (default 16 MiB).",
)
@mappings_option
@click.option("-q", "--quiet", is_flag=True, help="No log line per call (warnings still go to stderr).")
def proxy(
    command: tuple[str, ...],
    to: str | None,
    prefix: str,
    upstreams: str | None,
    old_upstreams: str | None,
    listen: str | None,
    listen_token: str | None,
    listen_token_file: str | None,
    annotate: bool,
    headers: tuple[str, ...],
    timeout: float | None,
    max_result_bytes: int | None,
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
      envglot proxy --upstreams proxy.toml --listen 127.0.0.1:8931 --header 'Authorization=Bearer $TOKEN'
    """
    from ..proxy.config import ProxyConfig, UpstreamSpec, check_timeout, load_config
    from ..proxy.listen import check_token, parse_listen, read_token_file

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
            check_timeout(timeout, "--timeout")
            cfg = msgspec.structs.replace(cfg, timeout=timeout)
        if max_result_bytes is not None:
            cfg = msgspec.structs.replace(cfg, max_result_bytes=max_result_bytes)
        if headers:
            cfg = _with_headers(cfg, headers)
        cfg.check("command line" if upstreams is None else upstreams)
        for up in cfg.upstream:
            up.resolved_headers()  # every environment reference is set: fail now, not at the first call
    except EnvglotError as exc:
        raise click.UsageError(str(exc)) from None
    target = to or (DialectType(writable=True).convert(cfg.target, None, None) if cfg.target else None)
    if target is None:
        raise click.UsageError("no target dialect: give -t DIALECT (or target = ... in --upstreams)")

    for name in ("listen_token", "listen_token_file"):
        if _source(name) is click.core.ParameterSource.DEFAULT_MAP:
            raise click.UsageError(f"{name.replace('_', '-')} is command-line only, not a configuration key")
    if listen is None and _source("listen_token") is click.core.ParameterSource.ENVIRONMENT:
        listen_token = None  # ENVGLOT_LISTEN_TOKEN set for other runs: a stdio proxy has no listener
    if listen_token is not None and listen_token_file is not None:
        raise click.UsageError("give --listen-token or --listen-token-file, not both")
    try:
        token = read_token_file(listen_token_file) if listen_token_file is not None else listen_token
    except EnvglotError as exc:
        die(str(exc), exits.EX_NOINPUT)
    try:
        if token is not None:
            if listen is None:
                raise EnvglotError("--listen-token needs --listen (a stdio proxy has no listener)")
            check_token(token)
        where = parse_listen(listen, token=token is not None) if listen is not None else None
    except EnvglotError as exc:
        raise click.UsageError(str(exc)) from None

    try:
        from ..proxy.rewrite import Rewriter
        from ..proxy.server import Proxy, bind_listener, listen_url, serve_http, serve_stdio
    except ImportError as exc:
        die(str(exc), exits.EX_USAGE)
    try:
        rewriter = Rewriter(target, options=Options(mappings=m), annotate=annotate)
    except EnvglotError as exc:
        raise click.UsageError(str(exc)) from None

    sock = None
    if where is not None:
        try:
            sock = bind_listener(where.host, where.port)
        except OSError as exc:
            die(f"cannot listen on {listen}: {exc.strerror or exc}", exits.EX_UNAVAILABLE)
    listed = ", ".join(f"{u.prefix or '(no prefix)'}={u.shown_url or u.command}" for u in cfg.upstream)
    served = listen_url(sock) if sock is not None else "stdio"
    click.echo(f"envglot proxy: serving {served} as {target}; upstreams: {listed}", err=True)

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
            anyio.run(serve_http, p, where, token, sock)
    except KeyboardInterrupt:
        sys.exit(130)


def _source(param: str) -> click.core.ParameterSource | None:
    """Where ``param``'s value came from (command line, environment, configuration, default)."""
    return click.get_current_context().get_parameter_source(param)


def _with_headers(cfg: ProxyConfig, headers: tuple[str, ...]) -> ProxyConfig:
    """``cfg`` with ``--header`` values added to every url upstream (over the file's own).

    Raises:
        EnvglotError: a header is not ``NAME=VALUE``, or no upstream is a url one.
    """
    from ..proxy.config import parse_header

    extra = dict(parse_header(h) for h in headers)
    if not any(u.url is not None for u in cfg.upstream):
        raise EnvglotError("--header is for url (Streamable HTTP) upstreams: give them in --upstreams")
    ups = [
        msgspec.structs.replace(u, headers={**(u.headers or {}), **extra}) if u.url is not None else u
        for u in cfg.upstream
    ]
    return msgspec.structs.replace(cfg, upstream=ups)
