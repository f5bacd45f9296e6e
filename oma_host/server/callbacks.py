"""The client callbacks of one session: what the core asks of the client, as requests to it.

:meth:`ClientCallbacks.for_agent` gives an agent exactly the hooks its config
asks for, plus the permission handler and, when the client declared
``workspace.applyEdit``, an editor channel that sends the write tools' edits to
the client. Timeouts and malformed answers are the core's to handle: a call
here returns the answer or raises.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oma_host.core.editor_channel import EditorChannel
from oma_host.server.outgoing import AfterRunParams, BeforeRunParams
from oma_host.server.registry import ClientMethod

if TYPE_CHECKING:
    from oma_host.core.backends import AgentCallbacks
    from oma_host.core.config import AgentConfig
    from oma_host.core.hooks import AfterRunContext, BeforeRunContext
    from oma_host.server.rpc import Connection


class ClientCallbacks:
    """The editor's side of hooks, permission and scoring, for one session."""

    def __init__(self, connection: Connection, capabilities: Any = None) -> None:
        """``capabilities``: the client's, from LSP's ``initialize``."""
        self._connection = connection
        workspace = capabilities.get("workspace") if isinstance(capabilities, dict) else None
        self.applies_edits = isinstance(workspace, dict) and workspace.get("applyEdit") is True

    async def before_run(self, context: BeforeRunContext) -> Any:
        params: BeforeRunParams = {
            "agentName": context.agent_name,
            "runId": context.run_id,
            "prompt": context.prompt,
            "messages": context.messages,
            "agent": context.agent,
        }
        return await self._connection.request(ClientMethod.BEFORE_RUN, params)

    async def after_run(self, context: AfterRunContext) -> Any:
        params: AfterRunParams = {
            "agentName": context.agent_name,
            "runId": context.run_id,
            "result": context.result,
        }
        return await self._connection.request(ClientMethod.AFTER_RUN, params)

    async def request_permission(self, request: dict[str, Any]) -> Any:
        """``request`` is PermissionParams (a bridge's has no ``source``: it
        is an ACP agent asking); the answer ``{approve, scope?}``."""
        params = request if "source" in request else {**request, "source": "acp"}
        return await self._connection.request(ClientMethod.REQUEST_PERMISSION, params)

    async def apply_edit(self, params: dict[str, Any]) -> Any:
        """``params`` is ApplyEditParams; the answer ``{applied, failureReason?}``."""
        return await self._connection.request(ClientMethod.APPLY_EDIT, params)

    async def score(self, request: dict[str, Any]) -> Any:
        """``request`` is the evaluator's ScoreParams; the answer ``{score, reason?}``."""
        return await self._connection.request(ClientMethod.EVALUATION_SCORE, request)

    def for_agent(self, config: AgentConfig) -> AgentCallbacks:
        callbacks: AgentCallbacks = {"permission_handler": self.request_permission}
        if self.applies_edits:
            callbacks["editor"] = EditorChannel(apply_edit=self.apply_edit)
        if config.hooks is not None and config.hooks.before_run:
            callbacks["before_run"] = self.before_run
        if config.hooks is not None and config.hooks.after_run:
            callbacks["after_run"] = self.after_run
        return callbacks
