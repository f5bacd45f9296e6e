"""Everything an LLM agent's model may call, and the permission gate in front of it.

:class:`AgentTools` joins the built-in tools and the agent's MCP servers' tools
(the MCP SDK imported only when there are servers) and sends every call through
the permission policy first, streaming each decision as a ``permission`` event;
a denied call is an error result to the model. Each call runs with the door's
editor channel, which decides where files are read and written.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from oma_host.core.backends import DelegateLookup, PermissionHandler
from oma_host.core.config import DEFAULT_TOOL_TIMEOUT_MS, AgentConfig
from oma_host.core.editor_channel import NO_EDITOR, EditorChannel
from oma_host.core.events import ToolPermission
from oma_host.core.messages import ContentBlock
from oma_host.core.recorder import RunRecorder
from oma_host.core.redact import Redactor
from oma_host.core.spans import (
    ERROR_TYPE,
    LOCAL_TOOL_INPUT,
    OP_EXECUTE_TOOL,
    PERMISSION_BY,
    PERMISSION_DECISION,
    PERMISSION_RULE,
    TOOL_CALL_ARGUMENTS,
    TOOL_CALL_ID,
    TOOL_CALL_RESULT,
    TOOL_EFFECT,
    TOOL_NAME,
    TOOL_SOURCE,
    TOOL_TYPE,
    Attributes,
    Span,
    open_span,
    set_span_content,
)
from oma_host.core.tools import ToolSpec
from oma_host.llm.delegation import Delegation
from oma_host.llm.tools import ToolRegistry, delegate
from oma_host.llm.tools.base import Tool, ToolOutput, Workspace, call_tool, unknown_tool
from oma_host.workspace.permissions import PermissionPolicy
from oma_host.workspace.sandbox import chosen_sandbox

if TYPE_CHECKING:
    from oma_host.llm.mcp_servers import McpServers, McpTool

_DEFAULT_TIMEOUT_MS = 30_000
_BOUNDED_GRACE_S = 10.0


class AgentTools:
    """One agent's tools: kept for the backend's life (MCP servers included)."""

    def __init__(
        self,
        config: AgentConfig,
        handler: PermissionHandler | None,
        editor: EditorChannel | None = None,
        delegates: DelegateLookup | None = None,
    ) -> None:
        timeout_s = (config.hooks.timeout_ms if config.hooks else _DEFAULT_TIMEOUT_MS) / 1000
        self._delegation_settings = config.delegation
        self._delegation: Delegation | None = None
        if config.delegates and delegates is not None:
            self._delegation = Delegation(config, delegates)
        offered = config.delegates if self._delegation is not None else None
        self.registry = ToolRegistry(config, offered)
        self._tool_timeout_s = (config.tool_timeout_ms or DEFAULT_TOOL_TIMEOUT_MS) / 1000
        sandbox = chosen_sandbox(config.permission_mode, config.sandbox)
        self._workspace = Workspace(
            self.registry.root,
            editor or NO_EDITOR,
            timeout_s,
            call_timeout_s=self._tool_timeout_s,
            secrets=config.secrets,
            folders=self.registry.folders,
            sandbox=sandbox,
        )
        self._policy = PermissionPolicy(
            config.permissions,
            handler,
            config.name,
            timeout_s,
            self.registry.root,
            config.permission_mode or "ask",
            self.registry.folders,
            sandbox,
        )
        self._servers: McpServers | None = None
        # What a call's input is stored with, and its content exported with.
        self._redactor = Redactor.for_config(config)
        if config.mcp_servers:
            from oma_host.llm.mcp_servers import McpServers

            self._servers = McpServers(
                config.mcp_servers,
                self.registry.root,
                self._redactor,
                elicit=None if editor is None else editor.elicit,
            )
        self._mcp: dict[str, McpTool] = {}

    @property
    def builtin_specs(self) -> tuple[ToolSpec, ...]:
        """The built-in tools, as offered before the MCP servers have started."""
        return tuple(tool.declaration for tool in self.registry.tools.values())

    async def prepare(self) -> tuple[ToolSpec, ...]:
        """The specs to offer this run: the MCP servers are started on the
        first run and checked on later ones (McpFailure when one is gone)."""
        if self._servers is not None:
            self._mcp = await self._servers.tools()
        return (*self.builtin_specs, *(tool.declaration for tool in self._mcp.values()))

    async def call(self, call: ContentBlock, recorder: RunRecorder) -> tuple[ToolOutput, bool]:
        """Run one tool_use block: (output, is_error), in its ``execute_tool``
        span. McpFailure when the server behind an MCP tool has died."""
        name, arguments = call["name"], call["input"]
        attributes: Attributes = {TOOL_NAME: name, TOOL_CALL_ID: call["id"], TOOL_TYPE: "function"}
        with open_span(OP_EXECUTE_TOOL, f"{OP_EXECUTE_TOOL} {name}", attributes) as span:
            if span is not None:
                span.local[LOCAL_TOOL_INPUT] = self._redactor.redact_tree(arguments)
                set_span_content(span, TOOL_CALL_ARGUMENTS, arguments, self._redactor)
            output, is_error = await self._call(call, recorder, span)
            if span is not None:
                set_span_content(span, TOOL_CALL_RESULT, output_text(output), self._redactor)
                if is_error:
                    span.status = "error"
                    span.attributes.setdefault(ERROR_TYPE, "tool_error")
            return output, is_error

    async def _call(
        self, call: ContentBlock, recorder: RunRecorder, span: Span | None
    ) -> tuple[ToolOutput, bool]:
        name, arguments = call["name"], call["input"]
        tool: Tool | None = self.registry.tools.get(name) or self._mcp.get(name)
        if tool is None:
            if span is not None:
                span.attributes[ERROR_TYPE] = "unknown_tool"
            return unknown_tool(name, [*self.registry.tools, *self._mcp])
        decision = await self._policy.decide(
            tool.declaration, arguments, run_id=recorder.run_id, tool_use_id=call["id"]
        )
        # The policy builds its decision as a plain dict, in the event's shape.
        recorder.permission(arguments, cast(ToolPermission, decision.event))
        if span is not None:
            span.attributes.update(_tool_attributes(tool, decision.event, name in self._mcp))
        if not decision.allowed:
            if span is not None:
                span.attributes[ERROR_TYPE] = "permission_denied"
            return (f"{name}: permission denied ({_why(decision.event)})", True)
        # The call may touch the file decided for, and no other (see Workspace.confirm).
        workspace = replace(
            self._workspace,
            approved=decision.resolved,
            # A search leaves out, file by file, what the rules keep from it.
            search_rules=self._policy.search_rules(name) if tool.declaration.search else None,
            report=recorder.event,
            call_id=call["id"],
            # A host a command starts counts as one level beneath this run.
            command_env=recorder.place(self._delegation_settings).environment(),
        )
        if name == delegate.NAME and self._delegation is not None:
            # A whole run of another agent: bounded by its own timeoutMs.
            workspace = replace(workspace, delegate=self._delegation.for_call(recorder, call["id"]))
            return await call_tool(tool, arguments, workspace)
        # A tool that keeps to the limit itself is given the moment it needs
        # to say so (and end what it started) before it is cut off.
        bound = self._tool_timeout_s + (_BOUNDED_GRACE_S if tool.declaration.bounded else 0)
        try:
            return await asyncio.wait_for(call_tool(tool, arguments, workspace), bound)
        except TimeoutError:
            # The call is cancelled (a built-in's worker stops at its next check,
            # an MCP request is abandoned): the session goes on.
            if span is not None:
                span.attributes[ERROR_TYPE] = "timeout"
            limit = f"{self._tool_timeout_s:g} s"
            return (f"{name}: the call did not finish within {limit} (toolTimeoutMs)", True)

    async def close(self) -> None:
        """End the MCP servers, if any were started."""
        if self._servers is not None:
            await self._servers.close()


def _tool_attributes(tool: Tool, decision: dict[str, Any], mcp: bool) -> Attributes:
    """A call's tool and its permission decision, on its span."""
    attributes: Attributes = {
        TOOL_EFFECT: tool.declaration.effect,
        TOOL_SOURCE: "mcp" if mcp else "builtin",
        PERMISSION_DECISION: str(decision["decision"]),
        PERMISSION_BY: str(decision["by"]),
    }
    if decision.get("rule") is not None:
        attributes[PERMISSION_RULE] = int(decision["rule"])
    return attributes


def _why(event: dict[str, Any]) -> str:
    by = event.get("by")
    if by == "rule":
        return f"by permissions[{event.get('rule')}]"
    if by == "mode":
        return "the session is read-only: only reading tools run"
    if by == "client":
        return "the user said no"
    if by == "no_client":
        return "the policy asks and there is no client to ask"
    if by == "timeout":
        return "the client did not answer in time"
    return {"default": "by default"}.get(str(by), "the client's answer was not usable")


def output_text(output: ToolOutput) -> str:
    """A tool's output as the run's toolCalls record keeps it: its text, a
    marker for each image or file."""
    if isinstance(output, str):
        return output
    return "\n".join(
        part["text"] if part["type"] == "text" else f"[{part['type']}]" for part in output
    )
