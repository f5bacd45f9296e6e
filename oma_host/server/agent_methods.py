"""The agent methods (``agent/*``) and ``oma/runAgent`` (docs/protocol.md, "Methods").

Each handler parses nothing itself: it takes typed params, delegates to the
core and shapes the answer; errors are answered in one place (:mod:`.app`).
Imported on first use.
"""

from __future__ import annotations

import asyncio
import os
from typing import cast

from oma_host.core.agent import Agent
from oma_host.core.backends import DelegateLookup, SessionLink
from oma_host.core.config import AgentConfig, parse_agent_config
from oma_host.core.errors import ErrorCode, InvalidParamsError
from oma_host.core.events import EmitFn
from oma_host.core.history import HistoryChange, TurnSink
from oma_host.core.messages import LLMMessage
from oma_host.core.redact import Redactor
from oma_host.core.results import AgentRunResult, usd
from oma_host.core.run_ids import new_run_id
from oma_host.orchestration.one_off import OpenMultiAgent
from oma_host.orchestration.store import Store
from oma_host.server.context import RequestContext
from oma_host.server.models import (
    AgentIdParams,
    ConfigureParams,
    CreateParams,
    NoParams,
    PromptParams,
    RewindParams,
    RunAgentParams,
    RunParams,
    StreamParams,
)
from oma_host.server.outgoing import (
    AgentChoicesResult,
    AgentListEntry,
    AgentListResult,
    AgentStateResult,
    CompactResult,
    CreateResult,
    HistoryResult,
    RewindResult,
    SandboxState,
)
from oma_host.server.registry import Method, Notification, handles
from oma_host.server.runs import note_secrets, tracked_run
from oma_host.workspace.sandbox import chosen_sandbox, sandbox_support, unavailable

# -- agents -----------------------------------------------------------------------


@handles(Method.AGENT_CREATE)
async def agent_create(ctx: RequestContext, params: CreateParams) -> CreateResult:
    """Validates the config and copies `config.history`; with `sessionId`, the
    stored conversation is restored (or a new one stored). The `agentId` is
    taken when the request is read: requests naming it that arrive before
    the answer wait for it. Each name in `config.delegates` is the agent of
    that name created last on this connection, before this one."""
    state = ctx.state
    config = parse_agent_config(params.config, state.defaults, ctx.where("config"))
    note_secrets(ctx, config)
    agent_id = state.agents.reserve()
    try:
        delegates = await _delegates(ctx, config, agent_id)
        agent = await _create_agent(ctx, config, params.session_id, delegates)
    except BaseException:
        state.agents.abandon(agent_id)
        raise
    state.agents.fulfil(agent_id, agent, params.session_id)
    return {"agentId": agent_id}


async def _delegates(
    ctx: RequestContext, config: AgentConfig, agent_id: str
) -> DelegateLookup | None:
    """How the agent finds its delegates: each name bound now to the agent
    of that name created last (creates read before this one finished
    first), found again by id at each call, so a disposed one is gone and a
    later agent of the same name is not taken for it. A delegate is always
    an older agent, so no loop of delegates can be made."""
    if not config.delegates:
        return None
    agents = ctx.state.agents
    await agents.created_before(agent_id)
    bound: dict[str, str] = {}
    for index, name in enumerate(config.delegates):
        found = agents.named(name)
        if found is None:
            known = ", ".join(sorted({agent.name for _, agent in agents.items()})) or "none"
            raise InvalidParamsError(
                f"{ctx.where('config')}.delegates[{index}]: no agent named {name!r} on this "
                f"connection; create it first (agents: {known})"
            )
        bound[name] = found
    return lambda name: agents.find(bound[name]) if name in bound else None


async def _create_agent(
    ctx: RequestContext,
    config: AgentConfig,
    session_id: str | None,
    delegates: DelegateLookup | None = None,
) -> Agent:
    store = None if session_id is None else ctx.state.store()
    stored = None
    marks: list[str | None] = []
    if store is not None and session_id is not None:
        stored = await asyncio.to_thread(store.load_session, session_id)
        if stored is not None:  # a known session: its history wins over config.history
            config = config.model_copy(update={"history": stored or None})
            marks = await asyncio.to_thread(store.session_checkpoints, session_id)
    link = None
    if store is not None and session_id is not None and config.backend is not None:
        known = await asyncio.to_thread(store.backend_session, session_id)
        link = _session_link(store, session_id, known)
    agent = _build_agent(ctx, config, store, session_id, link, delegates, marks)
    # Only a config that passed every check starts a session. Another host on
    # the same state directory may start it at this very moment: then that
    # host's history wins, as if the session had been found stored.
    if store is not None and session_id is not None and stored is None:
        redact = Redactor.for_config(config).redact_tree
        stored = await asyncio.to_thread(
            store.create_session, session_id, config.name, agent.get_history(), redact
        )
        if stored is not None:
            config = config.model_copy(update={"history": stored or None})
            agent = _build_agent(ctx, config, store, session_id, link, delegates)
    return agent


def _session_link(store: Store, session_id: str, known: str | None) -> SessionLink:
    """Keeps an external backend's own session id (an ACP agent's) with the
    host's session, so a later host resumes it."""

    async def remember(backend_session: str | None) -> None:
        await asyncio.to_thread(store.put_backend_session, session_id, backend_session)

    return SessionLink(known, remember)


def _build_agent(
    ctx: RequestContext,
    config: AgentConfig,
    store: Store | None,
    session_id: str | None,
    link: SessionLink | None = None,
    delegates: DelegateLookup | None = None,
    marks: list[str | None] | None = None,
) -> Agent:
    """The agent; a stored session's records its workspace's checkpoints
    in the state directory, ``marks`` the stored ones beside its history."""
    state = ctx.state
    on_turn = checkpoints = None
    if store is not None and session_id is not None:
        on_turn = _turn_sink(store, session_id, config)
        checkpoints = store.checkpoint_repository(session_id)
    return Agent(
        config,
        defaults=state.defaults,
        on_turn=on_turn,
        session_link=link,
        delegates=delegates,
        checkpoints=checkpoints,
        checkpoint_marks=marks,
        **state.callbacks.for_agent(config),
    )


def _turn_sink(store: Store, session_id: str, config: AgentConfig) -> TurnSink:
    """Commits each completed prompt turn (or the history a compaction left),
    in one transaction, off the event loop."""
    redact = Redactor.for_config(config).redact_tree

    async def commit(change: HistoryChange) -> None:
        if change.history is not None:
            await asyncio.to_thread(
                store.replace_history, session_id, change.history, redact, change.marks
            )
        else:
            await asyncio.to_thread(
                store.append_turn, session_id, change.appended, redact, change.marks
            )

    return commit


@handles(Method.AGENT_HISTORY)
async def agent_history(ctx: RequestContext, params: AgentIdParams) -> HistoryResult:
    """A copy of the persistent history."""
    return {"messages": (await ctx.state.agents.ready(params.agent_id)).get_history()}


@handles(Method.AGENT_STATE)
async def agent_state(ctx: RequestContext, params: AgentIdParams) -> AgentStateResult:
    """The agent's status (idle, running, completed, error) and its token
    usage; an LLM agent whose commands have a sandbox, what confines them."""
    agent = await ctx.state.agents.ready(params.agent_id)
    state = cast(AgentStateResult, agent.state)
    sandbox = await asyncio.to_thread(_sandbox_state, agent.config)
    if sandbox is not None:
        state["sandbox"] = sandbox
    return state


def _sandbox_state(config: AgentConfig) -> SandboxState | None:
    """What confines an LLM agent's commands here, or why nothing does
    (blocking: the first call a process makes probes bwrap)."""
    mode = chosen_sandbox(config.permission_mode, config.sandbox)
    if config.backend is not None or mode == "off":
        return None
    roots = [os.path.realpath(config.cwd or os.getcwd()), *(config.additional_directories or [])]
    why_not = unavailable(mode, roots)
    if why_not is not None:
        return {"mode": mode, "unavailable": why_not}
    tool = sandbox_support().tool
    assert tool is not None  # available: something confines
    return {"mode": mode, "confinedBy": tool}


@handles(Method.AGENT_CONFIGURE, raises=(ErrorCode.BACKEND_ERROR,))
async def agent_configure(ctx: RequestContext, params: ConfigureParams) -> AgentChoicesResult:
    """Sets one of an ACP agent's session choices (a config option, its mode
    or model), opening the session first if need be; answers the choices."""
    agent = await ctx.state.agents.ready(params.agent_id)
    return cast(AgentChoicesResult, await agent.configure(params.config_id, params.value))


@handles(Method.AGENT_RESET)
async def agent_reset(ctx: RequestContext, params: AgentIdParams) -> None:
    """Clears history and usage, status idle; an ACP agent's session is dropped too."""
    agents = ctx.state.agents
    (await agents.ready(params.agent_id)).reset()
    session_id = agents.session_of(params.agent_id)
    if session_id is not None:
        await asyncio.to_thread(ctx.state.store().clear_session, session_id)


@handles(Method.AGENT_COMPACT, raises=(ErrorCode.BACKEND_ERROR,))
async def agent_compact(ctx: RequestContext, params: AgentIdParams) -> CompactResult:
    """Compacts an LLM agent's history now, after the prompts in flight or
    queued: the older turns summarised by its model (dropped with `context:
    {strategy: "sliding-window"}`), the last `context.keepTurns` (default 1)
    kept; a stored session keeps the compacted history. A history of no more
    turns than are kept is answered `compacted: false` with the reason; a
    failed summary request with -32004 `BackendError`."""
    outcome = await (await ctx.state.agents.ready(params.agent_id)).compact()
    result: CompactResult = {
        "compacted": outcome.compaction is not None,
        "tokenUsage": outcome.usage,
    }
    if outcome.compaction is not None:
        result["compaction"] = outcome.compaction
    if outcome.reason is not None:
        result["reason"] = outcome.reason
    if outcome.cost is not None:
        result["cost"] = usd(outcome.cost)
    return result


@handles(Method.AGENT_REWIND)
async def agent_rewind(ctx: RequestContext, params: RewindParams) -> RewindResult:
    """Cuts an LLM agent's history back to its first `keepTurns` turns, after
    the prompts in flight or queued; a stored session keeps the cut. With
    `restoreFiles`, the workspace is first put back as the checkpoint taken
    before the first turn cut recorded it: files the agent changed (by any
    tool, shell commands included) go back, files created since are removed,
    files changed outside the agent since its last turn are left as they are
    and named in `files.leftAlone`.

    Checkpoints are recorded for agents created with a `sessionId` whose tools
    may change files. A `keepTurns` that cuts no turn, or `restoreFiles` for a
    turn with no checkpoint, is -32602 and changes nothing."""
    agent = await ctx.state.agents.ready(params.agent_id)
    rewound = await agent.rewind(params.keep_turns, params.restore_files)
    return cast(RewindResult, rewound.wire())


@handles(Method.AGENT_DISPOSE)
async def agent_dispose(ctx: RequestContext, params: AgentIdParams) -> None:
    """Ends the agent's processes or ACP session; the id is invalid afterwards."""
    agents = ctx.state.agents
    await agents.ready(params.agent_id)
    await agents.remove(params.agent_id).close()


@handles(Method.AGENT_LIST)
async def agent_list(ctx: RequestContext, params: NoParams) -> AgentListResult:
    """Every agent of this session."""
    agents: list[AgentListEntry] = []
    for agent_id, agent in ctx.state.agents.items():
        entry: AgentListEntry = {"agentId": agent_id, "name": agent.name}
        if agent.config.backend is not None:
            entry["backend"] = agent.config.backend.kind
        agents.append(entry)
    return {"agents": agents}


# -- runs -------------------------------------------------------------------------


def _progress_emitter(ctx: RequestContext, token: int | str | None) -> EmitFn | None:
    """What sends a run's stream events as `$/progress` under ``token`` (none
    without a token): ``ctx.progress(token, event)``, with the notification's
    constant part encoded once for the whole stream."""
    if token is None:
        return None
    return ctx.state.connection.notifier(Notification.PROGRESS, token)


async def _run(ctx: RequestContext, params: RunParams, token: int | str | None) -> AgentRunResult:
    agent = await ctx.state.agents.ready(params.agent_id)
    # Params were just parsed off the wire: nobody else holds them, so no copy.
    messages: list[LLMMessage] = agent.validate_run_input(params.input, owned=True)
    emit = _progress_emitter(ctx, token)
    run_id = params.run_id or new_run_id()
    return await tracked_run(
        ctx,
        agent.name,
        params.work_done_token,
        lambda abort: agent.execute(messages, run_id=run_id, abort=abort, emit=emit),
    )


@handles(Method.AGENT_RUN)
async def agent_run(ctx: RequestContext, params: RunParams) -> AgentRunResult:
    """Runs the input fresh: neither reads nor changes history."""
    return await _run(ctx, params, None)


@handles(Method.AGENT_STREAM)
async def agent_stream(ctx: RequestContext, params: StreamParams) -> AgentRunResult:
    """As agent/run; every event but `done` arrives first, in order, as
    `$/progress {token: partialResultToken, value: StreamEvent}`."""
    return await _run(ctx, params, params.partial_result_token)


@handles(Method.AGENT_PROMPT)
async def agent_prompt(ctx: RequestContext, params: PromptParams) -> AgentRunResult:
    """Appends the user turn and the reply to history (once the turn completes)."""
    agents = ctx.state.agents
    agent = await agents.ready(params.agent_id)
    turn = agent.validate_prompt_input(params.input, owned=True)
    emit = _progress_emitter(ctx, params.partial_result_token)
    return await tracked_run(
        ctx,
        agent.name,
        params.work_done_token,
        lambda abort: agent.prompt_turn(turn, run_id=params.run_id, abort=abort, emit=emit),
        agents.session_of(params.agent_id),
    )


@handles(Method.RUN_AGENT)
async def run_agent(ctx: RequestContext, params: RunAgentParams) -> AgentRunResult:
    """Runs a fresh one-off agent with tracing and online evaluation; with
    `progress: true`, `oma/progress {runId, type, agent, data}` notifications."""
    state = ctx.state
    config = parse_agent_config(params.config, state.defaults, ctx.where("config"))
    note_secrets(ctx, config)
    orchestrator = OpenMultiAgent(defaults=state.defaults, evaluator=state.evaluator())
    run = orchestrator.prepare(
        config,
        params.input,
        run_id=params.run_id,
        on_progress=ctx.oma_progress if params.progress else None,
        metadata=params.metadata,
        input_owned=True,
        **state.callbacks.for_agent(config),
    )
    return await tracked_run(ctx, config.name, params.work_done_token, run)
