"""The client callbacks of one session: what the core asks of the editor
(hook answers, permission, scores) as server-to-client requests.

One :class:`ClientCallbacks` per session. :meth:`ClientCallbacks.for_agent`
gives an agent exactly what its config asks for (``hooks.beforeRun``,
``hooks.afterRun``) plus the permission handler, which an ACP backend consults
only with ``permission: "ask-client"`` (``source: "acp"``) and an LLM agent's
permission policy when a rule says ``ask`` (``source: "tool"``); the online
evaluator gets :meth:`ClientCallbacks.score`. When the client declared
``capabilities.workspace.applyEdit`` in ``initialize``, the handler also has
``apply_edit`` (LSP's ``workspace/applyEdit``), through which an LLM agent's
``file_write`` and ``file_edit`` go instead of the host writing the file.
Timeouts and malformed answers are the core's to handle: a call here returns
the client's answer or raises.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypedDict

from oma_host.server.outgoing import AfterRunParams, BeforeRunParams
from oma_host.server.registry import ClientMethod

if TYPE_CHECKING:
    from oma_host.core.backends import PermissionHandler
    from oma_host.core.config import AgentConfig
    from oma_host.core.hooks import AfterRunContext, AfterRunHook, BeforeRunContext, BeforeRunHook
    from oma_host.server.rpc import Connection


class AgentCallbacks(TypedDict, total=False):
    """The keyword arguments an Agent (or a one-off run) takes for its callbacks."""

    before_run: BeforeRunHook
    after_run: AfterRunHook
    permission_handler: PermissionHandler


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
        handler = _ClientHandler(
            self.request_permission, self.apply_edit if self.applies_edits else None
        )
        callbacks: AgentCallbacks = {"permission_handler": handler}
        if config.hooks is not None and config.hooks.before_run:
            callbacks["before_run"] = self.before_run
        if config.hooks is not None and config.hooks.after_run:
            callbacks["after_run"] = self.after_run
        return callbacks


class _ClientHandler:
    """The permission handler an agent gets: called, it asks the client's
    permission; ``apply_edit`` is None unless the client applies edits (the
    LLM backend looks for it, see :mod:`oma_host.llm.agent_tools`)."""

    def __init__(
        self,
        ask: Callable[[dict[str, Any]], Awaitable[Any]],
        apply_edit: Callable[[dict[str, Any]], Awaitable[Any]] | None,
    ) -> None:
        self._ask = ask
        self.apply_edit = apply_edit

    async def __call__(self, request: dict[str, Any]) -> Any:
        return await self._ask(request)
