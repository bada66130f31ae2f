"""``envglot proxy``: an MCP server in front of other MCP servers, one envelope dialect out.

Modules: :mod:`.config` (upstreams, TOML file), :mod:`.protocol` (the protocol-error
table), :mod:`.rewrite` (tool listings and results), :mod:`.upstream` (client sessions),
:mod:`.server` (the SDK server, stdio and Streamable HTTP), :mod:`.sdk` (``mcp`` 1.x/2.x
differences). Needs ``pip install 'envglot[mcp]'`` to run; see ``docs/proxy.md``.
"""

from __future__ import annotations

from .config import ProxyConfig, UpstreamSpec, load_config
from .rewrite import META_KEY, Rewriter, Rewritten

__all__ = ["META_KEY", "ProxyConfig", "Rewriter", "Rewritten", "UpstreamSpec", "load_config"]
