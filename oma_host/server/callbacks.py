"""The client callbacks of one session: what the core asks of the editor
(hook answers, permission, scores) as server-to-client requests.

One :class:`ClientCallbacks` per session. :meth:`ClientCallbacks.for_agent`
gives an agent exactly what its config asks for (``hooks.beforeRun``,
``hooks.afterRun``) plus the permission handler, which an ACP backend consults
only with ``permission: "ask-client"``; the online evaluator gets
:meth:`ClientCallbacks.score`. Timeouts and malformed answers are the core's
to handle: a call here returns the client's answer or raises.
"""

from __future__ import annotations

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

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

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
        """``request`` is the bridge's PermissionParams; the answer ``{approve}``."""
        return await self._connection.request(ClientMethod.REQUEST_PERMISSION, request)

    async def score(self, request: dict[str, Any]) -> Any:
        """``request`` is the evaluator's ScoreParams; the answer ``{score, reason?}``."""
        return await self._connection.request(ClientMethod.EVALUATION_SCORE, request)

    def for_agent(self, config: AgentConfig) -> AgentCallbacks:
        callbacks: AgentCallbacks = {"permission_handler": self.request_permission}
        if config.hooks is not None and config.hooks.before_run:
            callbacks["before_run"] = self.before_run
        if config.hooks is not None and config.hooks.after_run:
            callbacks["after_run"] = self.after_run
        return callbacks
