"""OpenMultiAgent: one-off agents with tracing, progress and online evaluation
(PROTOCOL.md section 7).

``run_agent`` validates config and input first (the guard, then the
string-only boundary), and only then reports progress, runs, and hands a
sample to the evaluator. Progress payloads and evaluation inputs are copies:
what a callback does to them cannot reach the run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from oma_host.core.abort import AbortSignal
from oma_host.core.agent import Agent, PermissionHandler, new_run_id
from oma_host.core.config import AgentConfig, ModelDefaults
from oma_host.core.errors import InvalidMessageError, InvalidParamsError
from oma_host.core.hooks import AfterRunHook, BeforeRunHook
from oma_host.core.messages import clone, copy_plain
from oma_host.core.redact import Redactor, config_secrets
from oma_host.core.results import AgentRunResult

log = logging.getLogger(__name__)

ProgressEvent = dict[str, Any]
ProgressCallback = Callable[[ProgressEvent], None]


@dataclass(frozen=True)
class EvaluationSample:
    """What the online evaluator receives for one run. ``input`` is the string
    for a string call and the JSON text of a private copy of the messages for
    a structured call."""

    run_id: str
    agent: str
    input: str
    output: str
    result: AgentRunResult
    metadata: dict[str, Any] = field(default_factory=dict)
    # The run's known secret values, so stored payloads can leave them out.
    secrets: tuple[str, ...] = ()


class Evaluator(Protocol):
    """The online evaluator's entry point. ``submit`` must not block or raise
    into the run: evaluation never changes or delays a result."""

    def submit(self, sample: EvaluationSample) -> None: ...


class OpenMultiAgent:
    """Runs one-off agents with orchestration defaults."""

    def __init__(
        self,
        *,
        defaults: ModelDefaults | Mapping[str, Any] | None = None,
        on_progress: ProgressCallback | None = None,
        evaluator: Evaluator | None = None,
        evaluation: Mapping[str, Any] | None = None,
        state_dir: str | None = None,
    ) -> None:
        """``evaluation`` takes the same object as
        ``initializationOptions.evaluation`` and builds the online evaluator,
        keeping its records in ``state_dir`` (default: in memory); pass
        ``evaluator`` instead to supply your own."""
        self.defaults = (
            defaults
            if defaults is None or isinstance(defaults, ModelDefaults)
            else ModelDefaults.model_validate(dict(defaults))
        )
        self.on_progress = on_progress
        if evaluator is None and evaluation is not None:
            from oma_host.orchestration.evaluation import OnlineEvaluator, parse_evaluation_config
            from oma_host.orchestration.store import MEMORY, Store

            self.store = Store(state_dir or MEMORY)
            evaluator = OnlineEvaluator(
                parse_evaluation_config(evaluation), store_records=self.store.add_records
            )
        self.evaluator = evaluator

    async def run_agent(
        self,
        config: AgentConfig | Mapping[str, Any],
        input: Any,
        *,
        run_id: str | None = None,
        on_progress: ProgressCallback | None = None,
        metadata: Mapping[str, Any] | None = None,
        abort: AbortSignal | None = None,
        before_run: BeforeRunHook | None = None,
        after_run: AfterRunHook | None = None,
    ) -> AgentRunResult:
        """Validate, then run a fresh one-off agent."""
        run = self.prepare(
            config,
            input,
            run_id=run_id,
            on_progress=on_progress,
            metadata=metadata,
            before_run=before_run,
            after_run=after_run,
        )
        return await run(abort)

    def prepare(
        self,
        config: AgentConfig | Mapping[str, Any],
        input: Any,
        *,
        run_id: str | None = None,
        on_progress: ProgressCallback | None = None,
        metadata: Mapping[str, Any] | None = None,
        before_run: BeforeRunHook | None = None,
        after_run: AfterRunHook | None = None,
        input_owned: bool = False,
        permission_handler: PermissionHandler | None = None,
    ) -> Callable[[AbortSignal | None], Awaitable[AgentRunResult]]:
        """Validate config and input now (raising InvalidParamsError or
        InvalidMessageError) and return the run, not yet started.
        ``input_owned``: see :func:`oma_host.core.messages.guard_messages`."""
        agent = Agent(
            config,
            before_run=before_run,
            after_run=after_run,
            defaults=self.defaults,
            permission_handler=permission_handler,
        )
        messages = agent.validate_run_input(input, owned=input_owned)
        run_id = run_id or new_run_id()
        progress = on_progress or self.on_progress
        structured = not isinstance(input, str)
        # Serialised only for an evaluator: a 20 MB image is not dumped for nothing.
        evaluation_input = (
            "" if self.evaluator is None else (json.dumps(messages) if structured else str(input))
        )
        try:
            sample_metadata = copy_plain(dict(metadata or {}), "metadata")
        except InvalidMessageError as error:  # not plain data, or nested too deeply
            raise InvalidParamsError(str(error)) from None

        # A copy of the payload without the agent's own secret values.
        hide = Redactor(config_secrets(agent.config), patterns=False).redact_tree

        def report(kind: str, data: Any) -> None:
            if progress is None:
                return
            try:
                event = {"runId": run_id, "type": kind, "agent": agent.name, "data": hide(data)}
                progress(event)
            except Exception:  # a progress callback can never affect the run
                log.exception("progress callback failed for %s", kind)

        async def run(abort: AbortSignal | None) -> AgentRunResult:
            report("agent_start", {"messages": messages} if structured else {"prompt": input})
            try:
                result = await agent.execute(messages, run_id=run_id, abort=abort)
            finally:
                await agent.close()
            if result.get("budgetExceeded"):
                report("budget_exceeded", {"tokenUsage": result["tokenUsage"]})
            report("agent_complete", result)
            if self.evaluator is not None:
                sample = EvaluationSample(
                    run_id=run_id,
                    agent=agent.name,
                    input=evaluation_input,
                    output=result["output"],
                    result=clone(result),
                    metadata=sample_metadata,
                    secrets=config_secrets(agent.config),
                )
                try:
                    self.evaluator.submit(sample)
                except Exception:
                    log.exception("the evaluator refused a sample for %s", run_id)
            return result

        return run
