"""The proxy's configuration: the target dialect and its upstream servers.

From the command line (one stdio upstream) or a TOML file with several::

    target = "response-v2"        # optional when given with --to
    timeout = 60                  # seconds per upstream call and start-up (optional)
    max_result_bytes = 16777216   # longest upstream answer taken (optional)

    [[upstream]]
    prefix = "dot"
    command = "dotbot-mcp"
    args = ["--stdio"]
    env = { DOTBOT_HOME = "/srv/dotbot" }   # optional; cwd = "..." too

    [[upstream]]
    prefix = "graph"
    url = "http://127.0.0.1:8931/mcp"       # Streamable HTTP
    headers = { Authorization = "Bearer ${GRAPH_TOKEN}" }   # optional; $NAME / ${NAME}: environment

Every upstream has exactly one of ``command`` and ``url``, and a unique ``prefix``:
its tools are published as ``PREFIX_TOOL``.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import msgspec

from ..errors import EnvglotError
from ..tomlfile import load_toml, validation_line

__all__ = [
    "PREFIX_RE",
    "SEPARATOR",
    "ProxyConfig",
    "UpstreamSpec",
    "check_timeout",
    "expand_env",
    "load_config",
    "parse_header",
    "redact_url",
]

SEPARATOR = "_"
"""Between an upstream's prefix and its tool's name."""
PREFIX_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,31}")
"""A prefix: letters, digits and dashes (no ``_``, so ``PREFIX_TOOL`` splits at its first ``_``)."""
DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RESULT_BYTES = 16 * 1024 * 1024
"""The longest upstream answer (one JSON-RPC message) the proxy takes: 16 MiB."""


def check_timeout(value: float, where: str) -> None:
    """Raises :class:`EnvglotError` unless ``value`` is a finite number of seconds above 0."""
    if not (math.isfinite(value) and value > 0):
        raise EnvglotError(f"{where}: timeout must be a positive number of seconds, not {value}")


_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""An HTTP header name (RFC 9110 token)."""
_ENV_REF = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*)|(\$))")


def expand_env(value: str, what: str, environ: Mapping[str, str] | None = None) -> str:
    """``value`` with ``$NAME`` and ``${NAME}`` replaced by environment variables (``$$``: a ``$``).

    Raises:
        EnvglotError: a variable is not set (``what`` names the value, never its text).
    """
    env = os.environ if environ is None else environ

    def one(m: re.Match[str]) -> str:
        if m.group(3):
            return "$"
        name = m.group(1) or m.group(2)
        if name not in env:
            raise EnvglotError(f"{what}: environment variable {name} is not set")
        return env[name]

    return _ENV_REF.sub(one, value)


def parse_header(text: str) -> tuple[str, str]:
    """``NAME=VALUE`` (``--header``) as a pair; the value is expanded later (:meth:`UpstreamSpec.resolved_headers`).

    Raises:
        EnvglotError: no ``=``, or not a valid header name.
    """
    name, sep, value = text.partition("=")
    if not sep or not _HEADER_NAME.fullmatch(name):
        raise EnvglotError(f"--header must be NAME=VALUE with an HTTP header name, not {name if sep else text!r}")
    return name, value


class UpstreamSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One upstream MCP server: a stdio command or a Streamable HTTP URL."""

    prefix: str = ""
    """Namespace of its tools (``""``: no prefix, allowed for a single upstream)."""
    command: str | None = None
    args: list[str] = []
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = None
    """HTTP headers sent to a ``url`` upstream; ``$NAME``/``${NAME}`` in a value is an environment variable."""
    timeout: float | None = None
    """Seconds per call (default: the proxy's)."""

    def resolved_headers(self) -> dict[str, str]:
        """The headers with their environment references expanded.

        Raises:
            EnvglotError: a referenced variable is not set.
        """
        return {k: expand_env(v, f"upstream {self.label}: header {k}") for k, v in (self.headers or {}).items()}

    @property
    def label(self) -> str:
        """How logs name this upstream."""
        return self.prefix or (self.command or self.shown_url or "upstream")

    @property
    def shown_url(self) -> str | None:
        """The url as logs show it: user info and query string (where credentials and tokens
        travel) replaced by ``***``."""
        return None if self.url is None else redact_url(self.url)

    def public_name(self, tool: str) -> str:
        """The name the proxy publishes for ``tool``."""
        return f"{self.prefix}{SEPARATOR}{tool}" if self.prefix else tool


def redact_url(url: str) -> str:
    """``url`` without what may be a secret: ``https://user:pw@host/p?token=x`` ->
    ``https://***@host/p?***``."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")
    netloc = f"***@{host[2]}" if host[1] else parts.netloc
    return urlunsplit((parts.scheme, netloc, parts.path, "***" if parts.query else "", ""))


class ProxyConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Everything the proxy needs to run."""

    upstream: list[UpstreamSpec]
    target: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES

    def check(self, where: str = "configuration") -> ProxyConfig:
        """Validate cross-field rules; returns ``self``.

        Raises:
            EnvglotError: no upstream, a bad or duplicate prefix, neither or both of
                command and url, a URL that is not http(s), a timeout that is not a
                positive finite number, a ``max_result_bytes`` below 1 KiB, headers on a
                stdio upstream or a header name that is not one.
        """
        if not self.upstream:
            raise EnvglotError(f"{where}: no upstream server (add an [[upstream]] table)")
        check_timeout(self.timeout, where)
        if not 1024 <= self.max_result_bytes <= 1 << 40:
            raise EnvglotError(f"{where}: max_result_bytes must be between 1024 and 2**40, not {self.max_result_bytes}")
        seen: set[str] = set()
        for i, up in enumerate(self.upstream):
            at = f"{where}: upstream[{i}]"
            if (up.command is None) == (up.url is None):
                raise EnvglotError(f"{at}: give exactly one of command (stdio) and url (Streamable HTTP)")
            if up.url is not None and not re.match(r"https?://", up.url):
                raise EnvglotError(f"{at}: url must start with http:// or https://, not {up.url!r}")
            if up.command is not None and not up.command.strip():
                raise EnvglotError(f"{at}: command is empty")
            if up.headers and up.url is None:
                raise EnvglotError(f"{at}: headers are for a url (Streamable HTTP) upstream")
            for name in up.headers or ():
                if not _HEADER_NAME.fullmatch(name):
                    raise EnvglotError(f"{at}: {name!r} is not an HTTP header name")
            if up.prefix == "":
                if len(self.upstream) > 1:
                    raise EnvglotError(f"{at}: every upstream needs a prefix when there are several")
            elif not PREFIX_RE.fullmatch(up.prefix):
                raise EnvglotError(f"{at}: prefix {up.prefix!r} must be 1-32 letters, digits or dashes (no '_' or '.')")
            if up.prefix in seen:
                raise EnvglotError(f"{at}: prefix {up.prefix!r} is used twice")
            seen.add(up.prefix)
            if up.timeout is not None:
                check_timeout(up.timeout, at)
        return self


def load_config(path: Path) -> ProxyConfig:
    """Read and validate a TOML configuration file.

    Raises:
        EnvglotError: unreadable, not TOML, unknown keys or wrong types (with the
            offending key's path), or a rule of :meth:`ProxyConfig.check` broken.
    """
    buf, raw = load_toml(path, "proxy configuration")
    try:
        cfg = msgspec.convert(raw, ProxyConfig)
    except msgspec.ValidationError as exc:
        raise EnvglotError(str(exc), source=str(path), line=validation_line(buf.decode(), str(exc))) from None
    return cfg.check(str(path))
