"""The HTTP listener's rules: which ``--listen`` addresses are accepted, Host/Origin checks, bearer tokens.

Without a token the proxy listens on ``127.0.0.1``, ``::1`` or ``localhost`` only (any
spelling of those, normalised). With a token (``--listen-token``/``--listen-token-file``)
any specific address is accepted and every request must carry ``Authorization: Bearer
TOKEN``. Either way the SDK's DNS-rebinding protection is on, allowing exactly the bound
address (and ``localhost`` for a loopback one) as ``Host`` and ``Origin``.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import re
import stat
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import msgspec

from ..errors import EnvglotError

__all__ = ["LOOPBACK", "MIN_TOKEN_CHARS", "BearerAuth", "Listen", "check_token", "parse_listen", "read_token_file"]

LOOPBACK = ("127.0.0.1", "::1", "localhost")
"""The addresses accepted without a token."""
MIN_TOKEN_CHARS = 16
_MAX_TOKEN_FILE = 4096
_PORT_RE = re.compile(r"[0-9]{1,5}", re.ASCII)

_Scope = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
_Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class Listen(msgspec.Struct, frozen=True):
    """A normalised ``--listen`` address."""

    host: str
    """``127.0.0.1``, ``::1``, ``localhost``, or (with a token) another specific IP address."""
    port: int

    def _names(self) -> list[str]:
        """The ``Host`` header spellings of the bound address (without port)."""
        own = f"[{self.host}]" if ":" in self.host else self.host
        if self.host == "localhost":
            return ["localhost", "127.0.0.1", "[::1]"]
        return [own, "localhost"] if self.host in LOOPBACK else [own]

    def allowed_hosts(self) -> list[str]:
        """``Host`` values the listener accepts (any port when it binds port 0)."""
        port = str(self.port) if self.port else "*"
        return [f"{name}:{port}" for name in self._names()]

    def allowed_origins(self) -> list[str]:
        """``Origin`` values the listener accepts (a request without ``Origin`` is accepted)."""
        return [f"{scheme}://{host}" for host in self.allowed_hosts() for scheme in ("http", "https")]


def parse_listen(value: str, *, token: bool) -> Listen:
    """``HOST:PORT`` for ``--listen``, the host normalised (``[0::1]`` -> ``::1``).

    Raises:
        EnvglotError: not HOST:PORT with an ASCII port 0-65535; a host name other than
            ``localhost``; an address other than 127.0.0.1/::1/localhost without a token;
            an unspecified address (``0.0.0.0``, ``::``) even with one.
    """
    host, sep, port = value.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not _PORT_RE.fullmatch(port) or int(port) > 65535:
        raise EnvglotError(f"--listen must be HOST:PORT (e.g. 127.0.0.1:8931), not {value!r}")
    if host.lower() == "localhost":
        return Listen("localhost", int(port))
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise EnvglotError(
            f"--listen {value}: give an IP address or localhost (a host name could resolve anywhere)"
        ) from None
    name = str(ip)
    if ip.is_unspecified:
        raise EnvglotError(f"--listen {value}: bind one specific address, not every interface")
    if name not in LOOPBACK and not token:
        raise EnvglotError(
            f"--listen {value}: without --listen-token the proxy listens on loopback only (127.0.0.1, ::1 or localhost)"
        )
    return Listen(name, int(port))


def read_token_file(path: str) -> str:
    """The token in ``path`` (a regular file; surrounding whitespace removed).

    Raises:
        EnvglotError: unreadable, not a regular file, over 4 KiB, or holding no token.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise EnvglotError(f"cannot read the token file: {exc.strerror}", source=path) from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise EnvglotError("the token file is not a regular file", source=path)
        data = f.read(_MAX_TOKEN_FILE + 1)
    if len(data) > _MAX_TOKEN_FILE:
        raise EnvglotError(f"the token file is over {_MAX_TOKEN_FILE} bytes", source=path)
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise EnvglotError("the token file is not UTF-8 text", source=path) from None


def check_token(token: str) -> str:
    """``token`` if it can be a bearer token: at least 16 visible ASCII characters.

    Raises:
        EnvglotError: shorter, or with spaces or non-ASCII characters.
    """
    if len(token) < MIN_TOKEN_CHARS or not token.isascii() or not token.isprintable() or " " in token:
        raise EnvglotError(
            f"the listen token must be at least {MIN_TOKEN_CHARS} visible ASCII characters without spaces"
        )
    return token


class BearerAuth:
    """ASGI middleware: a request without ``Authorization: Bearer TOKEN`` gets 401 (a WebSocket is closed)."""

    def __init__(self, app: Callable[[_Scope, _Receive, _Send], Awaitable[None]], token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] != "lifespan":
            got = b""
            for key, val in scope.get("headers", ()):
                if key.lower() == b"authorization":
                    got = val
                    break
            if not hmac.compare_digest(got, self._expected):
                if scope["type"] != "http":  # a WebSocket (the proxy serves none): refused all the same
                    await send({"type": "websocket.close", "code": 1008})
                    return
                body = b"missing or wrong bearer token\n"
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"www-authenticate", b'Bearer realm="envglot proxy"'),
                            (b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
