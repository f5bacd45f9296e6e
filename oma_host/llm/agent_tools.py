"""Everything an LLM agent's model may call, and the gate in front of it.

:class:`AgentTools` joins the built-in tools (:mod:`oma_host.llm.tools`) and
the agent's MCP servers' tools (:mod:`oma_host.llm.mcp_servers`, imported
only when ``config.mcpServers`` lists some), and sends every call of a known
tool through the permission policy (:mod:`oma_host.llm.permissions`) first;
each decision is streamed as a ``permission`` event. A denied call is an
error result telling the model so.

The permission handler the agent was given is the client: it answers
``agent/requestPermission`` and, when it has an ``apply_edit`` (the JSON-RPC
door's handler has one when the client declared ``workspace.applyEdit``),
the write tools' edits go through it. Behind the ACP door, whose editor
may read and write files (:mod:`oma_host.core.file_view`), the write tools
work in the editor's view instead (:func:`oma_host.llm.edits.edit_in_editor_view`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from oma_host.core.config import AgentConfig
from oma_host.core.events import ToolPermission
from oma_host.core.file_view import current_file_reader, current_file_writer
from oma_host.core.messages import ContentBlock
from oma_host.core.redact import Redactor
from oma_host.core.results import RunRecorder
from oma_host.llm.edits import edit_in_editor_view
from oma_host.llm.permissions import WRITE_TOOLS, PermissionHandler, PermissionPolicy
from oma_host.llm.tools import EditApplier, ToolRegistry
from oma_host.providers.base import ToolSpec

if TYPE_CHECKING:
    from oma_host.llm.mcp_servers import McpServers, McpTool, ToolOutput

_DEFAULT_TIMEOUT_MS = 30_000


class AgentTools:
    """One agent's tools: kept for the backend's life (MCP servers included)."""

    def __init__(self, config: AgentConfig, handler: PermissionHandler | None) -> None:
        timeout_s = (config.hooks.timeout_ms if config.hooks else _DEFAULT_TIMEOUT_MS) / 1000
        apply_edit: EditApplier | None = getattr(handler, "apply_edit", None)
        self.registry = ToolRegistry(config.tools, config.cwd, apply_edit, timeout_s)
        self._timeout_s = timeout_s
        self._policy = PermissionPolicy(config.permissions, handler, config.name, timeout_s)
        self._servers: McpServers | None = None
        if config.mcp_servers:
            from oma_host.llm.mcp_servers import McpServers

            redactor = Redactor.for_config(config)
            self._servers = McpServers(config.mcp_servers, self.registry.root, redactor)
        self._mcp: dict[str, McpTool] = {}

    async def prepare(self) -> tuple[ToolSpec, ...]:
        """The specs to offer this run: the MCP servers are started on the
        first run and checked on later ones (McpFailure when one is gone)."""
        if self._servers is not None:
            self._mcp = await self._servers.tools()
        return (*self.registry.specs, *(tool.spec for tool in self._mcp.values()))

    async def call(
        self, call: ContentBlock, recorder: RunRecorder
    ) -> tuple[str | list[dict[str, Any]], bool]:
        """Run one tool_use block: (output, is_error). McpFailure when the
        server behind an MCP tool has died."""
        name, arguments = call["name"], call["input"]
        mcp_tool = self._mcp.get(name)
        if mcp_tool is None and name not in self.registry.tools:
            available = ", ".join([*self.registry.tools, *self._mcp]) or "none"
            return (f"unknown tool {name!r}; the tools available are: {available}", True)
        decision = await self._policy.decide(
            name,
            arguments,
            is_mcp=mcp_tool is not None,
            run_id=recorder.run_id,
            tool_use_id=call["id"],
        )
        # The policy builds its decision as a plain dict, in the event's shape.
        recorder.permission(arguments, cast(ToolPermission, decision.event))
        if not decision.allowed:
            return (f"{name}: permission denied ({_why(decision.event)})", True)
        if mcp_tool is None:
            reader, writer = current_file_reader(), current_file_writer()
            if name in WRITE_TOOLS and (reader or writer) and isinstance(arguments, dict):
                root = self.registry.root
                return await edit_in_editor_view(
                    name, arguments, root, reader, writer, self._timeout_s
                )
            return await self.registry.call(name, arguments)
        if not isinstance(arguments, dict):
            return (f"{name}: the tool input must be a JSON object", True)
        output: ToolOutput
        output, is_error = await mcp_tool.server.call(mcp_tool.name, arguments)
        return output, is_error

    async def close(self) -> None:
        """End the MCP servers, if any were started."""
        if self._servers is not None:
            await self._servers.close()


def _why(event: dict[str, Any]) -> str:
    by = event.get("by")
    if by == "rule":
        return f"by permissions[{event.get('rule')}]"
    if by == "client":
        return "the user said no"
    if by == "no_client":
        return "the policy asks and there is no client to ask"
    if by == "timeout":
        return "the client did not answer in time"
    return {"default": "by default"}.get(str(by), "the client's answer was not usable")


def output_text(output: str | list[dict[str, Any]]) -> str:
    """A tool's output as the run's toolCalls record keeps it: its text, a
    marker for each image or file."""
    if isinstance(output, str):
        return output
    return "\n".join(
        part["text"] if part["type"] == "text" else f"[{part['type']}]" for part in output
    )
