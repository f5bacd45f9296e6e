"""The Agent: one configured agent's runs, its history, and what they add up to.

Its tally (status, usage, cost) and each run's ``invoke_agent`` span live
here, beside the runs that change them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Coroutine, Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any, Literal, cast

from oma_host.core.abort import Aborted, AbortSignal, acquire_unless_aborted, unless_aborted
from oma_host.core.backends import (
    Backend,
    BackendContext,
    BackendEntry,
    Checkpointing,
    Compactable,
    Configurable,
    DelegateLookup,
    PermissionHandler,
    SessionLink,
    backend_kind,
)
from oma_host.core.config import AgentConfig, ModelDefaults, parse_agent_config
from oma_host.core.cost import Prices, prices_of
from oma_host.core.delegation import Lineage, host_refusal
from oma_host.core.editor_channel import EditorChannel
from oma_host.core.errors import InvalidMessageError, InvalidParamsError
from oma_host.core.events import EmitFn
from oma_host.core.guard import guard_prompt_input, guard_run_input
from oma_host.core.history import CompactOutcome, Conversation, Rewound, TurnSink
from oma_host.core.hooks import AfterRunHook, BeforeRunHook, RunHooks, run_with_hooks
from oma_host.core.messages import LLMMessage, latest_user_prompt
from oma_host.core.plugins import backend_entry, check_agent_config
from oma_host.core.provider_facts import span_provider
from oma_host.core.recorder import RunRecorder
from oma_host.core.redact import Redactor, remember_secrets
from oma_host.core.results import (
    AgentRunResult,
    StreamEvent,
    TokenUsage,
    add_token_usage,
    failed_result,
    usd,
    zero_usage,
)
from oma_host.core.run_ids import new_run_id
from oma_host.core.spans import (
    AGENT_NAME,
    BACKEND,
    CONVERSATION_ID,
    COST_USD,
    INPUT_MESSAGES,
    OP_INVOKE_AGENT,
    OUTPUT_MESSAGES,
    PROVIDER,
    REQUEST_MODEL,
    RESPONSE_MODEL,
    TURNS,
    Attributes,
    Span,
    capturing_content,
    conversation_id,
    end_as,
    open_span,
    set_span_content,
    usage_attributes,
)

log = logging.getLogger(__name__)

# Backends being closed after a reset, kept referenced until they finish.
_closing: set[asyncio.Task[None]] = set()


# -- the tally: what agent/state shows -------------------------------------------

AgentStatus = Literal["idle", "running", "completed", "error"]


class AgentTally:
    """What ``agent/state`` shows of an agent: its status as its runs start
    and end, and what its runs and compactions added up to (token usage, and
    the cost in USD while every run's price was known). Cleared on reset."""

    def __init__(self, prices: Prices | None) -> None:
        self.prices = prices  # the agent's own, for a run its backend did not price
        self.status: AgentStatus = "idle"
        self.usage: TokenUsage = zero_usage()
        self.cost = 0.0  # every run's, in USD, while the prices are known
        self.cost_known = True  # False once a run's cost was not known
        self.active_runs = 0

    def state(self) -> dict[str, Any]:
        """``status``, ``tokenUsage`` and, while it is known, ``cost``."""
        state: dict[str, Any] = {"status": self.status, "tokenUsage": dict(self.usage)}
        if self.prices is not None and self.cost_known:
            state["cost"] = usd(self.cost)
        return state

    def reset(self) -> None:
        self.status = "idle"
        self.usage = zero_usage()
        self.cost = 0.0
        self.cost_known = True

    def run_started(self) -> AgentStatus:
        """Count a run in flight; the status before it, for :meth:`run_ended`."""
        previous = self.status
        self.active_runs += 1
        self.status = "running"
        return previous

    def price(self, recorder: RunRecorder, result: AgentRunResult) -> None:
        """Give ``result`` its ``cost`` and add it up: as its backend priced
        each reply (an LLM agent's replies may come from fallback models at
        other prices) and added its delegates' costs, else its usage at the
        agent's prices. A run whose price is not known leaves the cost
        unknown from then on (an unpriced fallback model's reply or delegate)."""
        if recorder.cost is not None:
            cost = recorder.cost if recorder.cost_known else None
        else:
            cost = None if self.prices is None else self.prices.cost(result["tokenUsage"])
        if cost is not None:
            result["cost"] = usd(cost)
            self.cost += cost
        elif self.prices is not None:
            self.cost_known = False

    def run_ended(self, result: AgentRunResult | None, previous: AgentStatus) -> None:
        """A run ended with ``result`` (None: it raised, so it never happened
        as far as the tally goes) after :meth:`run_started` returned ``previous``."""
        self.active_runs -= 1
        if result is None:
            self.status = previous if self.active_runs == 0 else "running"
            return
        add_token_usage(self.usage, result["tokenUsage"])  # cache counts too
        if self.active_runs == 0:
            self.status = _status_after(result)

    def compacted(self, outcome: CompactOutcome) -> None:
        """Add what a compaction on request's summary cost."""
        add_token_usage(self.usage, outcome.usage)
        self.cost += outcome.cost or 0.0


def _status_after(result: AgentRunResult) -> AgentStatus:
    """The agent's status once its last run ended: a cancelled run was
    stopped by request, not a fault, so the agent is ``idle`` again."""
    if result["success"]:
        return "completed"
    return "idle" if result["status"]["code"] == "cancelled" else "error"


# -- the run's span -----------------------------------------------------------
# A run's ``invoke_agent`` span (oma_host.core.spans): the agent, its backend,
# an LLM agent's provider and model and the session when the run starts; the
# result's status, usage, turns, model and cost when it ends (the input and
# output only with content capture on).


@contextmanager
def agent_span(config: AgentConfig, run_id: str, *, delegated: bool) -> Iterator[Span | None]:
    """The span of one run of the agent ``config`` describes; a delegate's
    run (``delegated``) is not the session's, so it names none."""
    attributes: Attributes = {AGENT_NAME: config.name, BACKEND: backend_kind(config)}
    if config.backend is None:
        attributes[PROVIDER] = span_provider(config.provider)
        if config.model:
            attributes[REQUEST_MODEL] = config.model
    session = None if delegated else conversation_id()
    if session is not None:
        attributes[CONVERSATION_ID] = session
    name = f"{OP_INVOKE_AGENT} {config.name}"
    with open_span(OP_INVOKE_AGENT, name, attributes, run_id=run_id) as span:
        yield span


def end_agent_span(
    span: Span | None, config: AgentConfig, messages: list[LLMMessage], result: AgentRunResult
) -> None:
    """The run's outcome on its span."""
    if span is None:
        return
    error = result.get("errorInfo")
    end_as(span, result["status"]["code"], None if error is None else error["kind"])
    attributes = span.attributes
    attributes.update(usage_attributes(result["tokenUsage"]))
    attributes[TURNS] = sum(1 for m in result["messages"] if m["role"] == "assistant")
    if "model" in result:
        attributes[RESPONSE_MODEL] = result["model"]
    if "cost" in result:
        attributes[COST_USD] = result["cost"]["amount"]
    if capturing_content():
        redactor = Redactor.for_config(config)
        set_span_content(span, INPUT_MESSAGES, messages, redactor)
        set_span_content(span, OUTPUT_MESSAGES, result["output"], redactor)


class Agent:
    """One configured agent.

    The order of every call is fixed: validate and copy the input (the shape
    guard, then the string-only boundary for external backends) when the
    method is called, and only then touch state, hooks or the backend.
    ``run`` and ``stream`` are fresh; ``prompt`` appends the caller's turn and
    the reply to the persistent history when, and only when, the turn
    completes: only its new messages are copied, appended and stored
    (:class:`~oma_host.core.history.Conversation`). A compaction of the
    conversation by the LLM backend during the turn
    (``oma_host/llm/context_window.py``) is made to the history too, which the
    store then keeps in place of its own (:meth:`compact`: on request)."""

    def __init__(
        self,
        config: AgentConfig | Mapping[str, Any],
        *,
        before_run: BeforeRunHook | None = None,
        after_run: AfterRunHook | None = None,
        defaults: ModelDefaults | None = None,
        permission_handler: PermissionHandler | None = None,
        on_turn: TurnSink | None = None,
        session_link: SessionLink | None = None,
        editor: EditorChannel | None = None,
        delegates: DelegateLookup | None = None,
        checkpoints: str | None = None,
        checkpoint_marks: list[str | None] | None = None,
    ) -> None:
        """``checkpoints``: the shadow repository where an LLM agent whose
        tools change files records its workspace around each prompt turn
        (None: it records none); ``checkpoint_marks``: the checkpoint beside
        each message of the config's history, as the door stored them."""
        self.config = parse_agent_config(config, defaults)
        self._conversation = Conversation(
            check_agent_config(self.config), on_turn, checkpoint_marks
        )
        self._checkpoints = checkpoints
        self._entry: BackendEntry = backend_entry(self.config)
        if self.config.delegates and delegates is None:
            raise InvalidParamsError(
                f"config.delegates: agent {self.name!r} names agents to delegate to, but it "
                "runs where there are none to find (agents are found among the JSON-RPC "
                "connection's, made with agent/create, or the ACP door's agents file)"
            )
        self._before_run = before_run
        self._after_run = after_run
        self._permission_handler = permission_handler
        self._editor = editor
        self._delegates = delegates
        self._session_link = session_link  # the backend's own session id, persisted
        self._backend: Backend | None = None
        self._tally = AgentTally(prices_of(self.config))
        self._closed = False
        # The agent's own secret values, kept out of results and events, and
        # out of the log whichever agent a logged line is about.
        self._secrets = Redactor(self.config.secrets, patterns=False)
        remember_secrets(self.config.secrets)
        self._has_secrets = bool(self._secrets.values)

    # -- inspection -----------------------------------------------------

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def state(self) -> dict[str, Any]:
        state = self._tally.state()
        backend: object = self._backend
        if isinstance(backend, Configurable) and (choices := backend.choices()) is not None:
            state.update(choices)  # an ACP agent's configOptions, modes, models
        return state

    async def configure(self, config_id: str, value: str | bool) -> dict[str, Any]:
        """Set one of the backend session's choices (``agent/configure``);
        the choices after. A backend without choices refuses."""
        backend = self._live_backend()
        if not isinstance(backend, Configurable):
            raise InvalidParamsError(
                f"agent {self.name!r} has {self._entry.described}, which has no options to "
                "set (agent/configure sets the session options of an ACP agent)"
            )
        return await backend.configure(config_id, value)

    @property
    def history_length(self) -> int:
        """How many messages the persistent history holds."""
        return len(self._conversation.messages)

    @property
    def checkpoint_marks(self) -> list[str | None]:
        """The checkpoint beside each message of the history (None for most),
        for an agent built on the same history to keep (a copy)."""
        return list(self._conversation.marks)

    def get_history(self) -> list[LLMMessage]:
        """A copy of the persistent history; changing it changes nothing here.
        The agent's own secret values are taken out, as from its results."""
        return cast(list[LLMMessage], self._secrets.redact_tree(self._conversation.messages))

    def reset(self) -> None:
        """Clear the history and return to ``idle``. A backend that keeps a
        session of its own (an ACP agent's memory of the conversation) loses
        it too: the next run opens a fresh one."""
        self._conversation.reset()  # a turn still running will not be kept
        self._tally.reset()
        if self._session_link is not None:
            self._session_link.known = None  # the store forgets it with the history
        if self._backend is not None and self._entry.keeps_session:
            backend, self._backend = self._backend, None
            try:
                closing = asyncio.get_running_loop().create_task(backend.close())
            except RuntimeError:  # no loop: nothing can be running on it either
                return
            _closing.add(closing)
            closing.add_done_callback(_closing.discard)

    async def rest(self) -> bool:
        """Release the backend while no run is in flight: the processes it
        keeps (an LLM agent's MCP servers, an ACP agent's process) end, and
        the next run starts them again; the history, and the link to an ACP
        agent's own session (which that run resumes), stay. False when a run
        is in flight or there is nothing to release."""
        if self._tally.active_runs or self._backend is None or self._closed:
            return False
        backend, self._backend = self._backend, None
        await backend.close()
        return True

    async def close(self) -> None:
        """Release the backend (ends a process tree or an ACP session). Prompts
        still queued then fail: the agent is gone."""
        self._closed = True
        if self._backend is not None:
            backend, self._backend = self._backend, None
            await backend.close()

    # -- validation (always first) ----------------------------------------

    def _string_only(self, path: str) -> InvalidMessageError:
        return InvalidMessageError(
            f"{path}: agent {self.name!r} has {self._entry.described}, which accepts "
            "string prompts only; send a string instead of a message list or content blocks",
            path,
        )

    def validate_run_input(
        self, value: object, path: str = "input", *, owned: bool = False
    ) -> list[LLMMessage]:
        """The guard for RunInput, then the string-only boundary. ``owned``:
        see :func:`oma_host.core.messages.guard_messages`."""
        messages = guard_run_input(value, path, owned=owned)
        if not self._entry.accepts_structured and not isinstance(value, str):
            raise self._string_only(path)
        return messages

    def validate_prompt_input(
        self, value: object, path: str = "input", *, owned: bool = False
    ) -> LLMMessage:
        """The guard for PromptInput, then the string-only boundary."""
        turn = guard_prompt_input(value, path, owned=owned)
        if not self._entry.accepts_structured and not isinstance(value, str):
            raise self._string_only(path)
        return turn

    # -- the three ways to run ------------------------------------------

    # run and prompt are plain functions that validate and copy, then return
    # the run to await: an ``async def`` would do neither until awaited, and
    # a caller changing its input in between would change the run.

    def run(
        self, input: Any, *, run_id: str | None = None, abort: AbortSignal | None = None
    ) -> Coroutine[Any, Any, AgentRunResult]:
        """A fresh run: neither reads nor changes the history. Validates and
        copies ``input`` now (InvalidMessageError is raised here, not when
        awaited); returns the run, to await."""
        messages = self.validate_run_input(input)
        return self.execute(messages, run_id=run_id, abort=abort)

    def stream(
        self, input: Any, *, run_id: str | None = None, abort: AbortSignal | None = None
    ) -> AsyncIterator[StreamEvent]:
        """Validate now, then return an iterator of StreamEvents ending in ``done``.

        A plain function on purpose: an ``async def`` generator would not
        validate until its first iteration."""
        messages = self.validate_run_input(input)
        return self._stream(messages, run_id, abort)

    def prompt(
        self, input: Any, *, run_id: str | None = None, abort: AbortSignal | None = None
    ) -> Coroutine[Any, Any, AgentRunResult]:
        """Append one user turn and its reply to the history. Concurrent calls
        run one after another in arrival order; a failed or cancelled turn
        leaves the history as it was. Validates and copies ``input`` now, as
        :meth:`run` does."""
        turn = self.validate_prompt_input(input)
        return self.prompt_turn(turn, run_id=run_id, abort=abort)

    async def prompt_turn(
        self,
        turn: LLMMessage,
        *,
        run_id: str | None = None,
        abort: AbortSignal | None = None,
        emit: EmitFn | None = None,
    ) -> AgentRunResult:
        """``prompt`` for a turn that :meth:`validate_prompt_input` returned;
        with ``emit``, the turn streams its events to it as it runs."""
        run_id = run_id or new_run_id()
        conversation = self._conversation
        lock = conversation.lock
        if not await acquire_unless_aborted(lock, abort):
            return RunRecorder(run_id).result("cancelled", "the prompt was cancelled while queued")
        try:
            if self._closed:
                message = f"agent {self.name!r} was disposed while this prompt waited"
                return failed_result(run_id, "disposed", message)
            generation = conversation.generation
            # Every backend is given the whole conversation, so a beforeRun hook
            # sees the same for any agent; a string-only one reads the turn alone.
            context = [*conversation.messages, turn]
            checkpointing = self._checkpointing()
            checkpoint = None
            if checkpointing is not None:
                checkpoint = await checkpointing.checkpoint(f"before run {run_id}")
            result, recorder = await self._execute(context, run_id, abort, emit)
            if checkpointing is not None:  # a failed turn may have changed files too
                await checkpointing.checkpoint(f"after run {run_id}", last_turn=True)
            return await conversation.keep(turn, result, recorder, generation, checkpoint)
        finally:
            lock.release()

    def _checkpointing(self) -> Checkpointing | None:
        """The backend, when it records checkpoints of the workspace (a
        backend that cannot be built is left to the run, which says why)."""
        if self._checkpoints is None:
            return None
        try:
            backend: object = self._ensure_backend()
        except Exception:
            return None
        return backend if isinstance(backend, Checkpointing) else None

    async def rewind(self, keep_turns: int, restore_files: bool) -> Rewound:
        """Cut the history back to its first ``keep_turns`` turns, after the
        prompts in flight or queued (``agent/rewind``, ``/rewind``); stored
        as a compaction's history is. With ``restore_files`` the workspace
        is first put back as the checkpoint of the first turn cut recorded it
        (:meth:`Conversation.rewind`). InvalidParams for a backend whose
        history is not kept here, and for a ``keep_turns`` that cuts nothing."""
        backend = self._live_backend()
        if not isinstance(backend, Checkpointing):
            raise InvalidParamsError(
                f"agent {self.name!r} has {self._entry.described}, whose conversation is not "
                "kept here; only an LLM agent's history can be rewound"
            )
        return await self._conversation.rewind(
            keep_turns, backend.restore if restore_files else None
        )

    async def compact(self) -> CompactOutcome:
        """Compact the history now, after the prompts in flight or queued
        (``agent/compact``, ``/compact``); stored as a turn's change is.
        InvalidParams for a backend whose history is not kept here;
        BackendRequestError when the summary request fails."""
        backend = self._live_backend()
        if not isinstance(backend, Compactable):
            raise InvalidParamsError(
                f"agent {self.name!r} has {self._entry.described}, whose conversation is not "
                "kept here; only an LLM agent's history can be compacted"
            )
        outcome = await self._conversation.compact(
            backend, secrets=self._secrets, prices=self._tally.prices
        )
        self._tally.compacted(outcome)
        return outcome

    async def _stream(
        self, messages: list[LLMMessage], run_id: str | None, abort: AbortSignal | None
    ) -> AsyncIterator[StreamEvent]:
        queue: asyncio.Queue[StreamEvent | None] = asyncio.Queue()
        task = asyncio.ensure_future(
            self.execute(messages, run_id=run_id, abort=abort, emit=queue.put_nowait)
        )
        task.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (event := await queue.get()) is not None:
                yield event
            yield {"type": "done", "data": task.result()}
        finally:
            if not task.done():
                task.cancel()
                with suppress(asyncio.CancelledError):
                    await task

    # -- execution --------------------------------------------------------

    async def execute(
        self,
        messages: list[LLMMessage],
        *,
        run_id: str | None = None,
        abort: AbortSignal | None = None,
        emit: EmitFn | None = None,
        lineage: Lineage | None = None,
    ) -> AgentRunResult:
        """Run already-validated messages (the library's private copy).

        With ``emit`` the run streams its events to it. ``lineage``: the
        run's place among delegations, for a delegate's run (None: a client
        started it). Everything that goes wrong while running is a failed
        result, a beforeRun answer whose messages fail the guard included;
        nothing is raised."""
        return (await self._execute(messages, run_id, abort, emit, lineage))[0]

    async def _execute(
        self,
        messages: list[LLMMessage],
        run_id: str | None,
        abort: AbortSignal | None,
        emit: EmitFn | None,
        lineage: Lineage | None = None,
    ) -> tuple[AgentRunResult, RunRecorder]:
        """:meth:`execute`, and the run's recorder (what the backend recorded
        beside the result: a compaction of the conversation)."""
        recorder = RunRecorder(
            run_id or new_run_id(), self._redacting(emit), self._secrets, lineage=lineage
        )
        with agent_span(self.config, recorder.run_id, delegated=lineage is not None) as span:
            result = await self._execute_recorded(messages, recorder, abort, emit)
            end_agent_span(span, self.config, messages, result)
            return result, recorder

    async def _execute_recorded(
        self,
        messages: list[LLMMessage],
        recorder: RunRecorder,
        abort: AbortSignal | None,
        emit: EmitFn | None,
    ) -> AgentRunResult:
        """:meth:`_execute`'s run, inside its span."""
        streaming = emit is not None
        previous_status = self._tally.run_started()
        result: AgentRunResult | None = None
        try:
            refusal = host_refusal() if recorder.lineage is None else None
            try:
                if refusal is not None:  # a host started beneath a run with no room left
                    finished = recorder.result(
                        "error", refusal, output=refusal, error_kind="delegation"
                    )
                else:
                    finished = await unless_aborted(
                        self._pipeline(messages, recorder, streaming), abort
                    )
            except Aborted:
                finished = recorder.result("cancelled", "the run was cancelled")
            except Exception as error:  # a bug or an unforeseen fault: still a result
                log.exception("run %s of agent %r failed unexpectedly", recorder.run_id, self.name)
                message = Redactor.for_config(self.config).redact(
                    f"internal error: {type(error).__name__}: {error}"
                )
                finished = recorder.result("error", message, output=message, error_kind="internal")
            if self._has_secrets:  # else nothing to take out
                finished = cast(AgentRunResult, self._secrets.redact_owned(finished))
            self._tally.price(recorder, finished)
            result = finished
            if streaming:
                recorder.emit_failure(finished)
            return finished
        finally:
            self._tally.run_ended(result, previous_status)

    async def _pipeline(
        self, messages: list[LLMMessage], recorder: RunRecorder, streaming: bool
    ) -> AgentRunResult:
        hooks = self.config.hooks
        run_hooks = RunHooks(
            agent_name=self.name,
            agent_view=self.config.public_view(),
            before_run=self._before_run,
            after_run=self._after_run,
            timeout_s=(hooks.timeout_ms if hooks else 30_000) / 1000,
            string_only=None if self._entry.accepts_structured else self._entry.described,
        )
        return await run_with_hooks(
            run_hooks,
            recorder.run_id,
            messages,
            lambda effective: self._run_backend(effective, recorder, streaming),
        )

    def _redacting(self, emit: EmitFn | None) -> EmitFn:
        """``emit`` with the agent's secret values taken out of every event."""
        if emit is None:
            return lambda event: None
        sink = emit
        return lambda event: sink(self._secrets.redact_tree(event))

    def _live_backend(self) -> object:
        """The backend, for a request about it (its options, a compaction);
        InvalidParams once the agent is disposed."""
        if self._closed:
            raise InvalidParamsError(f"agent {self.name!r} has been disposed")
        return self._ensure_backend()

    def _ensure_backend(self) -> Backend:
        if self._backend is None:
            context = BackendContext(
                permission_handler=self._permission_handler,
                session_link=self._session_link,
                editor=self._editor,
                delegates=self._delegates,
                checkpoints=self._checkpoints,
            )
            self._backend = self._entry.build(self.config, context)
        return self._backend

    async def _run_backend(
        self, messages: list[LLMMessage], recorder: RunRecorder, streaming: bool
    ) -> AgentRunResult:
        backend = self._ensure_backend()
        prompt = latest_user_prompt(messages)
        timeout_ms = self.config.timeout_ms
        if timeout_ms is None:
            return await backend.execute(messages, prompt, recorder, streaming=streaming)
        try:
            async with asyncio.timeout(timeout_ms / 1000):
                return await backend.execute(messages, prompt, recorder, streaming=streaming)
        except TimeoutError:
            return recorder.result(
                "timeout", f"the run did not finish within timeoutMs={timeout_ms}"
            )
