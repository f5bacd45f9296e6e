"""OpenMultiAgent: one-off agents with tracing, progress and evaluation, and task graphs.

``run_agent`` validates config and input before it reports progress, runs, or
samples. Progress payloads and evaluation inputs are copies, so what a callback
does to them cannot reach the run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, TypedDict, Unpack

from oma_host.core.abort import AbortSignal
from oma_host.core.agent import Agent
from oma_host.core.backends import PermissionHandler
from oma_host.core.config import (
    AgentConfig,
    ModelDefaults,
    parse_agent_config,
    parse_model_defaults,
)
from oma_host.core.editor_channel import EditorChannel
from oma_host.core.errors import InvalidMessageError, InvalidParamsError
from oma_host.core.guard import clone, copy_plain
from oma_host.core.hooks import AfterRunHook, BeforeRunHook
from oma_host.core.messages import LLMMessage
from oma_host.core.redact import Redactor
from oma_host.core.results import AgentRunResult
from oma_host.core.run_ids import new_run_id
from oma_host.orchestration.evaluation import (
    EvaluationSample,
    Evaluator,
    OnlineEvaluator,
    check_judges,
    parse_evaluation_config,
)
from oma_host.orchestration.executors import LocalExecutor, RayExecutor, parse_executor
from oma_host.orchestration.member_placement import open_executor
from oma_host.orchestration.store import Store
from oma_host.orchestration.store_schema import MEMORY
from oma_host.orchestration.team_specs import (
    DEFAULT_MAX_CONCURRENCY,
    Team,
    check_members,
    check_task_resources,
    parse_tasks,
)
from oma_host.orchestration.teams import TaskGraphRun

log = logging.getLogger(__name__)

ProgressEvent = dict[str, Any]
ProgressCallback = Callable[[ProgressEvent], None]


class RunOptions(TypedDict, total=False):
    """The options of one run, for :meth:`OpenMultiAgent.run_agent` and
    :meth:`OpenMultiAgent.prepare`."""

    run_id: str | None
    on_progress: ProgressCallback | None
    metadata: Mapping[str, Any] | None
    before_run: BeforeRunHook | None
    after_run: AfterRunHook | None


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
        self.defaults = parse_model_defaults(defaults)
        self.on_progress = on_progress
        if evaluator is None and evaluation is not None:
            parsed = parse_evaluation_config(evaluation)
            check_judges(parsed, self.defaults)
            self.store = Store(state_dir or MEMORY)
            evaluator = OnlineEvaluator(
                parsed, store_records=self.store.add_records, defaults=self.defaults
            )
        self.evaluator = evaluator

    def run_agent(
        self,
        config: AgentConfig | Mapping[str, Any],
        input: Any,
        *,
        abort: AbortSignal | None = None,
        **options: Unpack[RunOptions],
    ) -> Coroutine[Any, Any, AgentRunResult]:
        """Run a fresh one-off agent (``options``: see :class:`RunOptions`).

        A plain function, like :meth:`Agent.run`: config and input are
        validated and copied now (raising InvalidParamsError or
        InvalidMessageError here), and the run is returned, to await."""
        return self.prepare(config, input, **options)(abort)

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
        editor: EditorChannel | None = None,
    ) -> Callable[[AbortSignal | None], Coroutine[Any, Any, AgentRunResult]]:
        """Validate config and input now (raising InvalidParamsError or
        InvalidMessageError) and return the run, not yet started.
        ``input_owned``: see :func:`oma_host.core.messages.guard_messages`."""
        agent = Agent(
            config,
            before_run=before_run,
            after_run=after_run,
            defaults=self.defaults,
            permission_handler=permission_handler,
            editor=editor,
        )
        messages = agent.validate_run_input(input, owned=input_owned)
        run_id = run_id or new_run_id()
        progress = on_progress or self.on_progress
        structured = not isinstance(input, str)
        # The evaluator's own copy: the private one, which the run never changes
        # and nothing else holds once the run is over.
        evaluation_input: str | list[LLMMessage] = messages if structured else str(input)
        try:
            sample_metadata = copy_plain(dict(metadata or {}), "metadata")
        except InvalidMessageError as error:  # not plain data, or nested too deeply
            raise InvalidParamsError(str(error)) from None

        # A copy of the payload without the agent's own secret values.
        hide = Redactor(agent.config.secrets, patterns=False).redact_tree

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
                spent: dict[str, Any] = {"tokenUsage": result["tokenUsage"]}
                if "cost" in result:
                    spent["cost"] = result["cost"]
                report("budget_exceeded", spent)
            report("agent_complete", result)
            if self.evaluator is not None:
                sample = EvaluationSample(
                    run_id=run_id,
                    agent=agent.name,
                    input=evaluation_input,
                    output=result["output"],
                    result=clone(result),
                    metadata=sample_metadata,
                    secrets=agent.config.secrets,
                )
                try:
                    self.evaluator.submit(sample)
                except Exception:
                    log.exception("the evaluator refused a sample for %s", run_id)
            return result

        return run

    async def run_tasks(
        self,
        agents: Sequence[AgentConfig | Mapping[str, Any]],
        tasks: Sequence[Mapping[str, Any]],
        *,
        executor: LocalExecutor | RayExecutor | Mapping[str, Any] | None = None,
        shared_memory: bool = False,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        max_token_budget: int | None = None,
        run_id: str | None = None,
        on_progress: ProgressCallback | None = None,
        abort: AbortSignal | None = None,
    ) -> dict[str, Any]:
        """Run a task DAG with a team of ``agents``, as ``oma/runTasks``: the
        same tasks (``id``, ``title``, ``description``, ``assignee``,
        ``dependsOn``, ``resources``), executor (``{"kind": "local"}``, the
        default, or ``{"kind": "ray", ...}``) and result. Everything is
        checked before any task starts (InvalidParamsError)."""
        if not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise InvalidParamsError("max_concurrency must be an integer of at least 1")
        if max_token_budget is not None and (
            not isinstance(max_token_budget, int) or max_token_budget < 1
        ):
            raise InvalidParamsError("max_token_budget must be an integer of at least 1")
        if not agents:
            raise InvalidParamsError("agents must be a non-empty list of agent configs")
        members = [
            parse_agent_config(member, self.defaults, f"agents[{index}]")
            for index, member in enumerate(agents)
        ]
        team = Team(
            agents=check_members(members, "agents"),
            shared_memory=shared_memory,
            max_concurrency=max_concurrency,
            max_token_budget=max_token_budget,
        )
        parsed = parse_tasks(
            [dict(task) if isinstance(task, Mapping) else task for task in tasks],
            team,
            with_resources=True,
        )
        chosen = parse_executor(executor)
        check_task_resources(parsed, chosen)
        graph = TaskGraphRun(
            team,
            parsed,
            run_id=run_id,
            progress=on_progress or self.on_progress,
            abort=abort,
            executor=await open_executor(chosen, team, parsed),
        )
        return await graph.run()
