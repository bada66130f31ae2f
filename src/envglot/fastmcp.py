"""FastMCP (the standalone ``fastmcp`` package, 4.x) middleware: every tool result in one dialect.

``EnvelopeMiddleware(to=...)`` does for a FastMCP server, or a FastMCP proxy
(``fastmcp.server.create_proxy``), what ``envglot proxy`` does in front of any MCP server,
with the proxy's own :class:`~envglot.proxy.rewrite.Rewriter`: ``tools/list`` publishes the
target envelope's ``outputSchema`` (the tool's own schema at its payload member), and every
``tools/call`` result is converted (an envelope of any dialect, detected) or synthesized
(plain content; a raised tool error or argument validation error becomes a failure
envelope of category ``invalid_argument`` or ``internal``, ``isError: true``). Diagnostics
go to the ``envglot.proxy`` logger, and with ``annotate=True`` to the result's ``_meta``.
Needs ``pip install 'envglot[fastmcp]'``; see ``docs/adapters.md``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

try:
    import mcp_types
    from fastmcp.exceptions import ToolError, ValidationError
    from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
    from fastmcp.tools.base import Tool, ToolResult
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("envglot.fastmcp needs the fastmcp package: pip install 'envglot[fastmcp]'") from exc

from .mappings import Mappings
from .options import UNSET, Options
from .proxy.rewrite import Rewriter

__all__ = ["EnvelopeMiddleware"]

_log = logging.getLogger("envglot.proxy")


class EnvelopeMiddleware(Middleware):
    """Rewrites a FastMCP server's tool listing and tool results into the dialect ``to``.

    Args:
        to: the target dialect (writable).
        options, mappings: as for :class:`~envglot.proxy.rewrite.Rewriter` (a result is never
            refused: diagnostics are logged, and put in ``_meta`` with ``annotate``).
        annotate: put each call's diagnostics in the result's ``_meta`` under
            ``dev.envglot/diagnostics`` (``envglot proxy --annotate``).
        timing: offer the call's start and duration to dialects that require them.

    Raises:
        EnvglotError: ``to`` is not a writable dialect, or the mappings are invalid.
    """

    def __init__(
        self,
        to: str,
        *,
        options: Options | None = None,
        mappings: Mappings | None = UNSET,
        annotate: bool = False,
        timing: bool = True,
    ) -> None:
        self.rewriter = Rewriter(to, options=options, mappings=mappings, annotate=annotate, timing=timing)

    async def on_list_tools(
        self,
        context: MiddlewareContext[mcp_types.ListToolsRequest],
        call_next: CallNext[mcp_types.ListToolsRequest, Sequence[Tool]],
    ) -> Sequence[Tool]:
        """Every tool with the target envelope's ``outputSchema`` (its own schema at the payload member)."""
        tools = await call_next(context)
        out: list[Tool] = []
        for tool in tools:
            listed: dict[str, Any] = {"name": tool.name}
            if tool.output_schema is not None:
                listed["outputSchema"] = tool.output_schema
            schema = self.rewriter.tool(listed, tool.name)["outputSchema"]
            out.append(tool.model_copy(update={"output_schema": schema}))
        return out

    async def on_call_tool(
        self,
        context: MiddlewareContext[mcp_types.CallToolRequestParams],
        call_next: CallNext[mcp_types.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        """The tool's result as an envelope of the target dialect; a tool or argument error as a failure one.

        An unknown tool, or an error FastMCP must answer as a protocol error, is raised as it is.
        """
        name = context.message.name
        started, clock = time.time(), time.perf_counter()
        try:
            result = await call_next(context)
        except (ToolError, ValidationError) as exc:  # FastMCP's message, masked as the server is configured
            wire: dict[str, Any] = {"content": [{"type": "text", "text": str(exc)}], "isError": True}
        else:
            if type(result) is not ToolResult:
                return result  # an input-required ask or a task acknowledgement: not a tool's answer
            wire = {
                "content": [b.model_dump(by_alias=True, mode="json", exclude_none=True) for b in result.content],
                "isError": result.is_error,
            }
            if result.structured_content is not None:
                wire["structuredContent"] = result.structured_content
            if result.meta:
                wire["_meta"] = result.meta
        out = self.rewriter.result(wire, name, started, time.perf_counter() - clock)
        _log.info("call %s %s", name, out.describe(self.rewriter.target, (time.perf_counter() - clock) * 1000))
        sdk = mcp_types.CallToolResult.model_validate(out.result)
        return ToolResult(
            content=sdk.content, structured_content=sdk.structured_content, meta=sdk.meta, is_error=out.is_error
        )
