"""The LLM agent loop: request, stream the reply into the recorder, run the tools, repeat.

The loop ends when the model calls no tool, or at ``maxTurns``, a spent
``maxTokenBudget`` or ``maxCostBudget`` (a delegate's spending included), or a
repeated call (``loopDetection``; :mod:`oma_host.llm.guards`). With
``outputSchema`` the final answer is validated as JSON, with one repair turn.
Provider faults end on the normal failure path, unless ``fallbackModels`` may
answer the turn; an MCP server that fails fails the run (``errorInfo.kind:
"mcp"``). Each request is first fitted to the context window
(:mod:`oma_host.llm.context_window`). docs/tools.md, "The loop".
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from typing import Any, assert_never, cast

from oma_host.core.activity import report_activity
from oma_host.core.backends import DelegateLookup, FilesRestored, PermissionHandler
from oma_host.core.config import AgentConfig
from oma_host.core.cost import prices_of
from oma_host.core.editor_channel import EditorChannel
from oma_host.core.errors import BackendRequestError, ErrorKind, InvalidParamsError, StoreError
from oma_host.core.events import Compaction
from oma_host.core.messages import ContentBlock, LLMMessage, ToolResultBlock, ToolUseBlock
from oma_host.core.recorder import RunRecorder
from oma_host.core.redact import Redactor
from oma_host.core.results import COST_BUDGET_KIND, MAX_TOKENS_KIND, AgentRunResult
from oma_host.core.tools import builtin_tool
from oma_host.llm.agent_tools import AgentTools, output_text
from oma_host.llm.chat_span import chat_span, record_reply
from oma_host.llm.context_window import ContextKeeper
from oma_host.llm.environment import environment_prompt, gather_environment
from oma_host.llm.guards import RepeatWatch, falls_back, models_to_try
from oma_host.llm.mcp_errors import McpFailure
from oma_host.llm.tools.base import ToolOutput
from oma_host.providers import get_adapter
from oma_host.providers.base import ChatOptions, LLMResponse, ProviderError
from oma_host.workspace.checkpoints import CheckpointError, Checkpoints

log = logging.getLogger(__name__)

DEFAULT_MAX_TURNS = 10

_SCHEMA_INSTRUCTION = (
    "Respond with only a JSON value (no prose, no code fences) that matches this JSON Schema:\n"
)
# permissionMode "read-only": the policy refuses the calls; the model is told before it tries.
_READ_ONLY_INSTRUCTION = (
    "This session is read-only: only tools that read (such as file_read, grep and glob) "
    "will run. Any tool that writes files, runs commands or acts elsewhere is refused, so "
    "describe the changes you would make instead of making them."
)


def _text_of(content: list[ContentBlock]) -> str:
    return "".join(block["text"] for block in content if block.get("type") == "text")


def _parse_json_reply(text: str) -> Any:
    """The JSON in a reply, tolerating a surrounding code fence."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        stripped = stripped.rsplit("```", 1)[0]
    return json.loads(stripped)


def check_output_schema(schema: dict[str, Any]) -> None:
    """Raise InvalidParamsError for a schema that is not valid JSON Schema."""
    import jsonschema

    from oma_host.core.errors import InvalidParamsError

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as error:
        raise InvalidParamsError(
            f"config.outputSchema is not a valid JSON Schema: {error.message}"
        ) from None


def _changes_files(config: AgentConfig) -> bool:
    """Whether a tool of ``config`` may change files: a built-in that
    writes or runs something (a delegate included), or an MCP server's
    (which may do anything); never in ``read-only`` mode."""
    if config.permission_mode == "read-only":
        return False
    if config.mcp_servers or config.delegates:
        return True
    for name in config.granted_tools():
        facts = builtin_tool(name)
        if facts is None or facts.effect in ("write", "execute"):
            return True
    return False


class _SchemaMismatch(Exception):
    pass


@dataclasses.dataclass(frozen=True)
class _Looping:
    """The model kept making the same call (``loopDetection``): why the run ends."""

    message: str


@dataclasses.dataclass
class _Relay:
    """Whether a streamed reply has begun to reach the client: if it then
    fails, no other model may give it (the client has seen its start)."""

    begun: bool = False


class LLMBackend:
    """Runs an agent that has no ``backend`` through its provider adapter."""

    def __init__(
        self,
        config: AgentConfig,
        permission_handler: PermissionHandler | None = None,
        editor: EditorChannel | None = None,
        delegates: DelegateLookup | None = None,
        *,
        checkpoints: str | None = None,
    ) -> None:
        self._config = config
        self._adapter = get_adapter(config)
        self._tools = AgentTools(config, permission_handler, editor, delegates)
        registry = self._tools.registry
        # The workspace's checkpoints (recorded around each turn when a tool may change files).
        roots = [registry.root, *registry.folders]
        self._checkpoints = None if checkpoints is None else Checkpoints(checkpoints, roots)
        self._records_checkpoints = self._checkpoints is not None and _changes_files(config)
        system = config.system_prompt
        if config.output_schema is not None:
            instruction = _SCHEMA_INSTRUCTION + json.dumps(config.output_schema)
            system = f"{system}\n\n{instruction}" if system else instruction
        if config.permission_mode == "read-only":
            system = f"{system}\n\n{_READ_ONLY_INSTRUCTION}" if system else _READ_ONLY_INSTRUCTION
        self._options = dataclasses.replace(
            ChatOptions.from_config(config),
            system_prompt=system,
            tools=self._tools.builtin_specs,
            guarded=True,  # the agent guarded the input; the loop adds only its own blocks
        )
        self._redactor = Redactor.for_config(config)
        self._models = models_to_try(config)
        self._prices = {model: prices_of(config, model) for model in self._models}
        self._context = ContextKeeper(config, self._adapter, self._prices[self._models[0]])
        # The host's part of the system prompt, until it is gathered.
        self._environment_pending = bool(config.environment)
        self._environment_lock = asyncio.Lock()

    async def _gather_environment(self) -> None:
        """Put the host's part before the system prompt, once (see
        :mod:`oma_host.llm.environment`)."""
        async with self._environment_lock:
            if not self._environment_pending:
                return
            registry = self._tools.registry
            environment = await gather_environment(registry.root, registry.folders)
            tools = list(self._tools.registry.tools)
            host = environment_prompt(environment, self._config, tools)
            system = self._options.system_prompt
            system = f"{host}\n\n{system}" if system else host
            self._options = dataclasses.replace(self._options, system_prompt=system)
            self._environment_pending = False

    async def execute(
        self, messages: list[LLMMessage], prompt: str, recorder: RunRecorder, *, streaming: bool
    ) -> AgentRunResult:
        del prompt  # an LLM gets the complete messages
        try:
            return await self._loop(list(messages), recorder, streaming)
        except ProviderError as error:
            message = self._redactor.redact(str(error))
            if error.status_code is not None:
                message = f"{message} (HTTP {error.status_code})"
            return recorder.result("error", message, output=message, error_kind=error.kind)
        except McpFailure as error:
            message = self._redactor.redact(str(error))
            return recorder.result("error", message, output=message, error_kind="mcp")

    async def _loop(
        self, conversation: list[LLMMessage], recorder: RunRecorder, streaming: bool
    ) -> AgentRunResult:
        max_turns = self._config.max_turns or DEFAULT_MAX_TURNS
        repeats = RepeatWatch.of(self._config)
        output = ""
        if self._environment_pending:
            await self._gather_environment()
        # The MCP servers start on the first run; their tools join the built-ins.
        tools = await self._tools.prepare()
        if tools != self._options.tools:
            self._options = dataclasses.replace(self._options, tools=tools)
        for turn in range(1, max_turns + 1):
            waiting = f"waiting for {self._config.model}"
            report_activity(waiting if turn == 1 else f"turn {turn} of {max_turns}: {waiting}")
            response = await self._turn(conversation, recorder, streaming)
            output = _text_of(response.content)
            spent = self._spent(recorder)
            if spent is not None:
                message, kind = spent
                return recorder.result("budget_exhausted", message, output=output, error_kind=kind)
            calls = [block for block in response.content if block.get("type") == "tool_use"]
            if not calls:
                break
            ended = await self._run_tools(calls, conversation, recorder, repeats)
            if isinstance(ended, _Looping):
                return recorder.result(
                    "error", ended.message, output=ended.message, error_kind="loop"
                )
            if ended is not None:
                message, kind = ended
                return recorder.result("budget_exhausted", message, output=output, error_kind=kind)
        else:
            # Ends on the tool results the model never saw: ``ended_at_turn_limit``.
            return recorder.result("ok", f"stopped at maxTurns={max_turns}", output=output)
        if self._config.output_schema is None:
            return recorder.result(output=output)
        return await self._structured(output, conversation, recorder, streaming)

    def _spent(self, recorder: RunRecorder) -> tuple[str, ErrorKind] | None:
        """The budget the run has spent, as (message, errorInfo.kind), or
        None: ``maxTokenBudget`` is exceeded or ``maxCostBudget`` reached,
        each the agent's own or, for a delegate, what its caller had left
        when less (:meth:`Lineage.budgets`). Checked after each reply and
        after each tool call (a delegate's spending counts)."""
        own_tokens, own_cost = self._config.max_token_budget, self._config.max_cost_budget
        lineage = recorder.lineage
        budget, cost_budget = (
            (own_tokens, own_cost) if lineage is None else lineage.budgets(own_tokens, own_cost)
        )
        used = recorder.tokens_used()
        if budget is not None and used > budget:
            whose = "" if budget == own_tokens else " (what its caller had left)"
            return f"maxTokenBudget={budget}{whose} exceeded: {used} tokens used", MAX_TOKENS_KIND
        cost = recorder.cost or 0.0
        if cost_budget is not None and cost >= cost_budget:
            whose = "" if cost_budget == own_cost else " (what its caller had left)"
            return (
                f"maxCostBudget={cost_budget:g} USD{whose} reached: {cost:.6g} USD spent",
                COST_BUDGET_KIND,
            )
        return None

    async def _turn(
        self, conversation: list[LLMMessage], recorder: RunRecorder, streaming: bool
    ) -> LLMResponse:
        """One reply, from the agent's model or, when it fails in a way
        another model may not (``guards.falls_back``), from the next of its
        fallback models; the next turn starts with the agent's model again.
        Before it, the conversation is fitted to the model's context window;
        an answer that it is too long has it compacted and asked once more."""
        await self._context.fit(conversation, self._options, recorder)
        try:
            response, model = await self._reply(conversation, recorder, streaming)
        except ProviderError as error:
            if not await self._context.recover(error, conversation, self._options, recorder):
                raise
            response, model = await self._reply(conversation, recorder, streaming)
        self._context.observe(response.usage)
        assistant: LLMMessage = {"role": "assistant", "content": response.content}
        conversation.append(assistant)
        recorder.messages.append(assistant)
        recorder.add_token_usage(response.usage)
        recorder.model = model
        prices = self._prices[model]
        recorder.add_cost(None if prices is None else prices.cost(response.usage))
        return response

    async def _reply(
        self, conversation: list[LLMMessage], recorder: RunRecorder, streaming: bool
    ) -> tuple[LLMResponse, str]:
        """A reply, and the model that gave it (see :meth:`_turn`)."""
        for index, model in enumerate(self._models):
            relay = _Relay()
            try:
                return await self._ask(model, conversation, recorder, streaming, relay), model
            except ProviderError as error:
                last = index + 1 == len(self._models)
                if last or relay.begun or not falls_back(error):
                    raise
                self._fall_back(error, model, self._models[index + 1], recorder)
        raise AssertionError("the last model's fault was raised")  # every model was asked

    async def _ask(
        self,
        model: str,
        conversation: list[LLMMessage],
        recorder: RunRecorder,
        streaming: bool,
        relay: _Relay,
    ) -> LLMResponse:
        options = self._options
        if model != options.model:
            options = dataclasses.replace(options, model=model)
        with chat_span(self._config, model) as span:
            if streaming:
                response = await self._stream(conversation, recorder, options, relay)
            else:
                response = await self._adapter.chat(conversation, options)
            record_reply(span, response, model, self._prices[model], self._redactor)
        return response

    def _fall_back(
        self, error: ProviderError, failed: str, model: str, recorder: RunRecorder
    ) -> None:
        status = error.status_code or 0  # falls_back: the provider answered with one
        report_activity(f"{failed} failed (HTTP {status}): waiting for {model}")
        message = self._redactor.redact(str(error))
        recorder.event(
            {
                "type": "model_fallback",
                "data": {"failed": failed, "model": model, "status": status, "message": message},
            }
        )

    async def _stream(
        self,
        messages: list[LLMMessage],
        recorder: RunRecorder,
        options: ChatOptions,
        relay: _Relay,
    ) -> LLMResponse:
        response: LLMResponse | None = None
        async for event in self._adapter.stream(messages, options):
            relay.begun = True
            if event["type"] == "text":  # nearly every event: tested first
                recorder.text(event["data"])
            elif event["type"] == "reasoning":
                recorder.reasoning(event["data"])
            elif event["type"] == "tool_use":
                # The adapter built a tool_use block (ContentBlock is the untyped form).
                recorder.event({"type": "tool_use", "data": cast(ToolUseBlock, event["data"])})
            elif event["type"] == "done":
                response = event["data"]
            else:
                assert_never(event)
        if response is None:
            raise ProviderError("the provider stream ended without a final message")
        return response

    async def _run_tools(
        self,
        calls: list[ContentBlock],
        conversation: list[LLMMessage],
        recorder: RunRecorder,
        repeats: RepeatWatch,
    ) -> _Looping | tuple[str, ErrorKind] | None:
        """Run the calls in order and add their results to the conversation.
        With loop detection, a call made ``maxRepeats`` times in a row is
        answered with a warning instead of running, and the same call once
        more ends the run: its message is returned, and that call and those
        after it are answered without running. A call after which a budget
        is spent (a delegate's spending counts) ends the run too: the
        budget's (message, kind) is returned, and the calls after it are
        answered without running."""
        results: list[ContentBlock] = []
        ended: _Looping | tuple[str, ErrorKind] | None = None
        for call in calls:
            started = time.monotonic()
            verdict = "run" if ended is not None else repeats.see(call["name"], call["input"])
            if verdict == "end":
                ended = _Looping(repeats.ending(call["name"]))
            output: ToolOutput
            if ended is not None:
                why = ended.message if isinstance(ended, _Looping) else ended[0]
                output, is_error = f"Not run: the run ended. {why}", True
            elif verdict == "warn":
                output, is_error = repeats.warning(call["name"]), True
            else:
                report_activity(f"calling tool {call['name']}")
                output, is_error = await self._tools.call(call, recorder)
                ended = self._spent(recorder)
            recorder.tool_calls.append(
                {
                    "toolName": call["name"],
                    "input": call["input"],
                    "output": output_text(output),
                    "duration": round((time.monotonic() - started) * 1000, 3),
                }
            )
            block: ContentBlock = {
                "type": "tool_result",
                "tool_use_id": call["id"],
                "content": output,
            }
            if is_error:
                block["is_error"] = True
            recorder.event({"type": "tool_result", "data": cast(ToolResultBlock, block)})
            results.append(block)
        message: LLMMessage = {"role": "user", "content": results}
        conversation.append(message)
        recorder.messages.append(message)
        return ended

    async def _structured(
        self, output: str, conversation: list[LLMMessage], recorder: RunRecorder, streaming: bool
    ) -> AgentRunResult:
        """Validate the answer against outputSchema; one repair turn if it fails."""
        try:
            value = self._validate(output)
        except _SchemaMismatch as first:
            repair: LLMMessage = {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": f"That reply does not satisfy the JSON Schema: {first}. "
                        "Reply again with only the corrected JSON.",
                    }
                ],
            }
            conversation.append(repair)
            recorder.messages.append(repair)
            response = await self._turn(conversation, recorder, streaming)
            output = _text_of(response.content)
            try:
                value = self._validate(output)
            except _SchemaMismatch as second:
                message = f"the reply does not match outputSchema after one repair: {second}"
                return recorder.result("error", message, output=output, error_kind="output_schema")
        return recorder.result(output=output, structured=value)

    def _validate(self, output: str) -> Any:
        import jsonschema

        try:
            value = _parse_json_reply(output)
        except ValueError as error:
            raise _SchemaMismatch(f"it is not valid JSON ({error})") from None
        schema = self._config.output_schema or {}
        errors = sorted(
            jsonschema.validators.validator_for(schema)(schema).iter_errors(value),
            key=lambda e: list(e.absolute_path),
        )
        if errors:
            first = errors[0]
            where = "/".join(str(p) for p in first.absolute_path) or "(root)"
            raise _SchemaMismatch(f"at {where}: {first.message}")
        return value

    async def compact(self, messages: list[LLMMessage], recorder: RunRecorder) -> Compaction | str:
        """Compact a history on request (``agent/compact``, ``/compact``)."""
        try:
            return await self._context.compact_now(messages, self._options, recorder)
        except ProviderError as error:
            raise BackendRequestError(self._redactor.redact(str(error)), error.kind) from None

    async def checkpoint(self, label: str, *, last_turn: bool = False) -> str | None:
        """Record the workspace (docs/security.md, "Checkpoints"), when a
        tool of this agent may change files; a failure is logged, and the
        turn goes on without a checkpoint."""
        if self._checkpoints is None or not self._records_checkpoints:
            return None
        try:
            recorded = await asyncio.to_thread(self._checkpoints.record, label, last_turn=last_turn)
        except (CheckpointError, OSError) as error:
            log.warning("agent %r: the workspace was not recorded: %s", self._config.name, error)
            return None
        if recorded.left_out and not last_turn:
            shown = ", ".join(sorted(recorded.left_out)[:5])
            more = len(recorded.left_out) - 5
            log.warning(
                "agent %r: checkpoint %s leaves out %d file(s) (too large or past its bounds): "
                "%s%s",
                self._config.name,
                recorded.commit[:12],
                len(recorded.left_out),
                shown,
                f" and {more} more" if more > 0 else "",
            )
        return recorded.commit

    async def restore(self, checkpoint: str) -> FilesRestored:
        """Put the workspace back as ``checkpoint`` recorded it."""
        if self._checkpoints is None:
            raise InvalidParamsError(
                f"restoreFiles: agent {self._config.name!r} keeps no checkpoints of its "
                "workspace (checkpoints are kept for stored sessions only)"
            )
        try:
            return await asyncio.to_thread(self._checkpoints.restore, checkpoint)
        except (CheckpointError, OSError) as error:
            raise StoreError(f"the workspace could not be restored: {error}") from None

    async def close(self) -> None:
        """End the agent's MCP servers; the HTTP client is shared by the host."""
        await self._tools.close()
