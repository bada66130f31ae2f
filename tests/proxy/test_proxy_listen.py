"""The HTTP listener's rules: accepted addresses, Host/Origin (DNS-rebinding) checks, bearer tokens.

The ASGI app ``serve_http`` runs is driven in-process (no socket), once per accepted
spelling of a loopback address; test_proxy_http.py runs it on a real socket.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from envglot.errors import EnvglotError
from envglot.proxy import Rewriter
from envglot.proxy.config import ProxyConfig, UpstreamSpec
from envglot.proxy.listen import BearerAuth, Listen, parse_listen, read_token_file
from envglot.proxy.server import Proxy, http_app

TOKEN = "s3cret-token-0123456789"
PORT = 8931
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


@pytest.mark.parametrize(
    ("value", "host"),
    [
        ("127.0.0.1:8931", "127.0.0.1"),
        ("[::1]:8931", "::1"),
        ("[0::1]:8931", "::1"),
        ("[0:0:0:0:0:0:0:1]:8931", "::1"),
        ("::1:8931", "::1"),
        ("localhost:8931", "localhost"),
        ("LocalHost:8931", "localhost"),
    ],
)
def test_loopback_spellings_are_normalised(value: str, host: str) -> None:
    assert parse_listen(value, token=False) == Listen(host, 8931)


@pytest.mark.parametrize("value", ["127.0.0.2:80", "10.0.0.7:80", "[fe80::1]:80", "[::ffff:127.0.0.1]:80"])
def test_other_addresses_need_a_token(value: str) -> None:
    with pytest.raises(EnvglotError, match="loopback only"):
        parse_listen(value, token=False)
    assert parse_listen(value, token=True).port == 80


@pytest.mark.parametrize(
    "value", ["0.0.0.0:80", "[::]:80", "127.0.0.1:²", "127.0.0.1:", "127.0.0.1:99999", "h.example:80", "8931"]
)
def test_bad_listen_values_are_refused_even_with_a_token(value: str) -> None:
    with pytest.raises(EnvglotError):
        parse_listen(value, token=True)


def test_allowed_hosts_are_the_bound_address() -> None:
    assert Listen("::1", 8931).allowed_hosts() == ["[::1]:8931", "localhost:8931"]
    assert Listen("127.0.0.1", 0).allowed_hosts() == ["127.0.0.1:*", "localhost:*"]
    assert Listen("10.0.0.7", 80).allowed_hosts() == ["10.0.0.7:80"]
    assert "http://localhost:8931" in Listen("localhost", 8931).allowed_origins()


def test_token_file(tmp_path: Path) -> None:
    good = tmp_path / "token"
    good.write_text(TOKEN + "\n")
    assert read_token_file(str(good)) == TOKEN
    big = tmp_path / "big"
    big.write_text("x" * 5000)
    with pytest.raises(EnvglotError, match="over 4096 bytes"):
        read_token_file(str(big))
    with pytest.raises(EnvglotError, match="cannot read"):
        read_token_file(str(tmp_path / "missing"))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(EnvglotError, match="not a regular file"):
        read_token_file(str(fifo))  # no writer: must not block


def _status(listen: Listen, headers: dict[str, str], token: str | None = None) -> int:
    """The HTTP status the listener's app answers an ``initialize`` POST with."""
    cfg = ProxyConfig(upstream=[UpstreamSpec(command=sys.executable, args=["-c", "pass"])], timeout=5)
    app = http_app(Proxy(cfg, Rewriter("result")), listen, token)
    inner: Any = app.app if isinstance(app, BearerAuth) else app
    body = json.dumps(INITIALIZE).encode()
    base = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "root_path": "",
        "headers": [(k.encode(), v.encode()) for k, v in {**base, **headers}.items()],
        "client": ("127.0.0.1", 50000),
        "server": (listen.host, listen.port),
    }
    statuses: list[int] = []

    async def run() -> None:
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await anyio.sleep_forever()
            raise AssertionError  # pragma: no cover

        started = anyio.Event()

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                statuses.append(message["status"])
                started.set()

        with anyio.fail_after(15):
            async with inner.router.lifespan_context(inner), anyio.create_task_group() as tg:
                tg.start_soon(app, scope, receive, send)
                await started.wait()
                tg.cancel_scope.cancel()

    anyio.run(run)
    return statuses[0]


@pytest.mark.parametrize("spelling", ["127.0.0.1", "[::1]", "[0::1]", "[0:0:0:0:0:0:0:1]", "localhost"])
def test_foreign_host_or_origin_is_refused_on_every_spelling(spelling: str) -> None:
    listen = parse_listen(f"{spelling}:{PORT}", token=False)
    own = f"[{listen.host}]" if ":" in listen.host else listen.host
    assert _status(listen, {"host": f"evil.example:{PORT}"}) == 421
    assert _status(listen, {"host": f"{own}:{PORT}", "origin": "http://evil.example"}) == 403
    assert _status(listen, {"host": f"{own}:{PORT}", "origin": f"http://{own}:{PORT}"}) == 200


def test_bearer_token_is_required_when_given() -> None:
    listen = parse_listen(f"127.0.0.2:{PORT}", token=True)
    host = {"host": f"127.0.0.2:{PORT}"}
    assert _status(listen, host, TOKEN) == 401
    assert _status(listen, {**host, "authorization": "Bearer wrong-token-0123456789"}, TOKEN) == 401
    assert _status(listen, {**host, "authorization": f"Bearer {TOKEN}"}, TOKEN) == 200
    foreign = {"host": f"evil.example:{PORT}", "authorization": f"Bearer {TOKEN}"}
    assert _status(listen, foreign, TOKEN) == 421  # the token does not switch the Host check off


def test_token_options_on_the_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from envglot.cli import main

    run = CliRunner().invoke
    base = ["proxy", "-t", "result", "--listen", "127.0.0.2:1"]
    missing = run(main, [*base, "--listen-token-file", str(tmp_path / "none"), "--", "x"])
    assert missing.exit_code == 66 and "cannot read the token file" in missing.output
    both = run(main, [*base, "--listen-token", TOKEN, "--listen-token-file", "f", "--", "x"])
    assert both.exit_code == 2 and "not both" in both.output
    # set in the environment for other runs: a stdio proxy ignores it (it would refuse --listen-token)
    monkeypatch.setenv("ENVGLOT_LISTEN_TOKEN", TOKEN)
    stdio = run(main, ["proxy", "--", "x"])
    assert stdio.exit_code == 2 and "no target dialect" in stdio.output


def test_a_configuration_file_cannot_set_the_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from envglot.cli import main

    (tmp_path / "envglot.toml").write_text(f'[proxy]\nlisten-token = "{TOKEN}"\n')
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["--config", "envglot.toml", "proxy", "-t", "result", "--", "x"])
    assert res.exit_code == 2 and "command-line only" in res.output
