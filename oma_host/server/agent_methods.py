"""Agent and run methods: each handler parses its params into a pydantic
model, delegates to the core, and shapes the answer. Errors are raised as
OmaError subclasses and turned into JSON-RPC errors in one place
(``app._bind``). Imported on the first agent request, not at start-up.
"""

from __future__ import annotations

import asyncio
from typing import Any

from oma_host.core.agent import Agent, PermissionHandler, TurnSink, new_run_id
from oma_host.core.config import AgentConfig, parse_agent_config
from oma_host.core.errors import AgentNotFoundError
from oma_host.core.hooks import AfterRunContext, BeforeRunContext
from oma_host.core.messages import LLMMessage
from oma_host.core.redact import Redactor
from oma_host.core.results import EmitFn, StreamEvent
from oma_host.orchestration.one_off import OpenMultiAgent
from oma_host.orchestration.store import Store
from oma_host.server.app import HostSession
from oma_host.server.models import (
    AgentIdParams,
    CreateParams,
    ListParams,
    PromptParams,
    RunAgentParams,
    RunParams,
    StreamParams,
    parse_params,
)
from oma_host.server.services import (
    evaluator_for,
    model_defaults,
    note_secrets,
    store_for,
    tracked_run,
)

# -- agents -----------------------------------------------------------------


def _hooks_for(session: HostSession, config: AgentConfig) -> dict[str, Any]:
    """Wire a config's ``hooks`` flags to server-to-client requests."""
    hooks: dict[str, Any] = {}
    if config.hooks is None:
        return hooks
    protocol = session.protocol
    if config.hooks.before_run:

        async def before_run(context: BeforeRunContext) -> Any:
            return await protocol.send_request_async(
                "agent/beforeRun",
                {
                    "agentName": context.agent_name,
                    "runId": context.run_id,
                    "prompt": context.prompt,
                    "messages": context.messages,
                    "agent": context.agent,
                },
            )

        hooks["before_run"] = before_run
    if config.hooks.after_run:

        async def after_run(context: AfterRunContext) -> Any:
            return await protocol.send_request_async(
                "agent/afterRun",
                {
                    "agentName": context.agent_name,
                    "runId": context.run_id,
                    "result": context.result,
                },
            )

        hooks["after_run"] = after_run
    return hooks


def _permission_handler_for(session: HostSession, config: AgentConfig) -> PermissionHandler | None:
    """Wire an ACP agent's ``permission: "ask-client"`` to the server-to-client
    request ``agent/requestPermission``; the bridge bounds it by the hook timeout."""
    backend = config.backend
    if backend is None or backend.kind != "acp" or backend.permission != "ask-client":
        return None
    protocol = session.protocol

    async def ask(request: dict[str, Any]) -> Any:
        return await protocol.send_request_async("agent/requestPermission", request)

    return ask


async def agent_create(session: HostSession, params: Any) -> Any:
    parsed = parse_params(CreateParams, params, "agent/create")
    config = parse_agent_config(parsed.config, model_defaults(session))
    note_secrets(session, config)
    session_id = parsed.session_id
    store = store_for(session) if session_id is not None else None
    stored = None
    if store is not None and session_id is not None:
        stored = await asyncio.to_thread(store.load_session, session_id)
        if stored is not None:  # a known session: its history wins over config.history
            config = config.model_copy(update={"history": stored or None})
    agent = Agent(
        config,
        defaults=model_defaults(session),
        permission_handler=_permission_handler_for(session, config),
        on_turn=None if store is None else _turn_sink(store, session_id, config),
        **_hooks_for(session, config),
    )
    # Only a config that passed every check starts a session.
    if store is not None and session_id is not None and stored is None:
        redact = Redactor.for_config(config).redact_tree
        await asyncio.to_thread(
            store.create_session, session_id, config.name, agent.get_history(), redact
        )
    agent_id = session.new_agent_id()
    session.agents[agent_id] = agent
    if session_id is not None:
        _agent_sessions(session)[agent_id] = session_id
    return {"agentId": agent_id}


def _agent_sessions(session: HostSession) -> dict[str, str]:
    """agentId → the persistent sessionId it was created with."""
    sessions: dict[str, str] = session.extras.setdefault("agent_sessions", {})
    return sessions


def _turn_sink(store: Store, session_id: str | None, config: AgentConfig) -> TurnSink:
    """Commits each completed prompt turn, in one transaction, off the event loop."""
    assert session_id is not None
    redact = Redactor.for_config(config).redact_tree

    async def commit(messages: list[LLMMessage]) -> None:
        await asyncio.to_thread(store.append_turn, session_id, messages, redact)

    return commit


def _agent(session: HostSession, agent_id: str) -> Agent:
    agent = session.agents.get(agent_id)
    if agent is None:
        raise AgentNotFoundError(f"no agent with agentId {agent_id!r} (never created, or disposed)")
    return agent


async def agent_history(session: HostSession, params: Any) -> Any:
    parsed = parse_params(AgentIdParams, params, "agent/history")
    return {"messages": _agent(session, parsed.agent_id).get_history()}


async def agent_state(session: HostSession, params: Any) -> Any:
    parsed = parse_params(AgentIdParams, params, "agent/state")
    return _agent(session, parsed.agent_id).state


async def agent_reset(session: HostSession, params: Any) -> None:
    parsed = parse_params(AgentIdParams, params, "agent/reset")
    _agent(session, parsed.agent_id).reset()
    session_id = _agent_sessions(session).get(parsed.agent_id)
    if session_id is not None:
        await asyncio.to_thread(store_for(session).clear_session, session_id)
    return None


async def agent_dispose(session: HostSession, params: Any) -> None:
    parsed = parse_params(AgentIdParams, params, "agent/dispose")
    agent = _agent(session, parsed.agent_id)
    del session.agents[parsed.agent_id]
    await agent.close()
    return None


async def agent_list(session: HostSession, params: Any) -> Any:
    parse_params(ListParams, params, "agent/list")
    agents = []
    for agent_id, agent in session.agents.items():
        entry: dict[str, Any] = {"agentId": agent_id, "name": agent.name}
        if agent.config.backend is not None:
            entry["backend"] = agent.config.backend.kind
        agents.append(entry)
    return {"agents": agents}


# -- runs -------------------------------------------------------------------


def _progress_emitter(session: HostSession, token: int | str) -> EmitFn:
    def emit(event: StreamEvent) -> None:
        session.protocol.notify("$/progress", {"token": token, "value": event})

    return emit


async def _run_like(session: HostSession, method: str, params: Any) -> Any:
    parsed = parse_params(StreamParams if method == "agent/stream" else RunParams, params, method)
    agent = _agent(session, parsed.agent_id)
    # Params were just parsed off the wire: nobody else holds them, so no copy.
    messages: list[LLMMessage] = agent.validate_run_input(parsed.input, owned=True)
    token = parsed.partial_result_token if method == "agent/stream" else None
    emit = _progress_emitter(session, token) if token is not None else None
    run_id = parsed.run_id or new_run_id()
    return await tracked_run(
        session,
        method,
        agent.name,
        parsed.work_done_token,
        lambda abort: agent.execute(messages, run_id=run_id, abort=abort, emit=emit),
    )


async def agent_run(session: HostSession, params: Any) -> Any:
    return await _run_like(session, "agent/run", params)


async def agent_stream(session: HostSession, params: Any) -> Any:
    return await _run_like(session, "agent/stream", params)


async def agent_prompt(session: HostSession, params: Any) -> Any:
    parsed = parse_params(PromptParams, params, "agent/prompt")
    agent = _agent(session, parsed.agent_id)
    turn = agent.validate_prompt_input(parsed.input, owned=True)
    return await tracked_run(
        session,
        "agent/prompt",
        agent.name,
        parsed.work_done_token,
        lambda abort: agent.prompt_turn(turn, run_id=parsed.run_id, abort=abort),
        _agent_sessions(session).get(parsed.agent_id),
    )


async def run_agent(session: HostSession, params: Any) -> Any:
    parsed = parse_params(RunAgentParams, params, "oma/runAgent")
    config = parse_agent_config(parsed.config, model_defaults(session))
    note_secrets(session, config)
    orchestrator = OpenMultiAgent(
        defaults=model_defaults(session), evaluator=evaluator_for(session, model_defaults(session))
    )

    def on_progress(event: dict[str, Any]) -> None:
        session.protocol.notify("oma/progress", event)

    run = orchestrator.prepare(
        config,
        parsed.input,
        run_id=parsed.run_id,
        on_progress=on_progress if parsed.progress else None,
        metadata=parsed.metadata,
        input_owned=True,
        permission_handler=_permission_handler_for(session, config),
        **_hooks_for(session, config),
    )
    return await tracked_run(session, "oma/runAgent", config.name, parsed.work_done_token, run)
