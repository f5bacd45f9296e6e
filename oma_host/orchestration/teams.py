"""Team runs: a DAG of text tasks run by fresh agents, or planned from a goal by a coordinator.

Independent tasks run in parallel up to ``maxConcurrency``; a failed task
skips its dependents while the rest go on. Fresh agents let external agents be
members, and a :class:`MemberExecutor` (Ray) may run them elsewhere. The runs'
spans are built here. docs/orchestration.md, "Teams".
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from oma_host.core.abort import AbortSignal
from oma_host.core.agent import Agent
from oma_host.core.config import AgentConfig
from oma_host.core.errors import InvalidParamsError
from oma_host.core.events import PlanEntry, PlanStatus
from oma_host.core.guard import clone
from oma_host.core.plugins import backend_entry
from oma_host.core.results import AgentRunResult, TokenUsage, add_token_usage, zero_usage
from oma_host.core.run_ids import new_run_id
from oma_host.core.spans import (
    LOCAL_TASK_REASON,
    OP_TASK,
    OP_TEAM,
    TASK_ASSIGNEE,
    TASK_DEPENDS_ON,
    TASK_ID,
    TASK_STATUS,
    TEAM_METHOD,
    TEAM_TASKS,
    Attributes,
    Span,
    end_as,
    open_span,
    string_list,
    usage_attributes,
)
from oma_host.orchestration.team_specs import (
    Task,
    Team,
    check_member,
    parse_tasks,
)

log = logging.getLogger(__name__)

ProgressCallback = Callable[[dict[str, Any]], None]


class MemberExecutor(Protocol):
    """Runs a team's members somewhere other than the host (a Ray cluster)."""

    def takes(self, config: AgentConfig) -> bool:
        """Whether a member with this config runs here (else in the host)."""
        ...

    async def run(
        self,
        task: Task,
        config: AgentConfig,
        prompt: str,
        *,
        run_id: str,
        abort: AbortSignal | None,
    ) -> AgentRunResult:
        """Run ``task``'s member on ``prompt``: its result, in the shape a
        run in the host has (a failure is a failed result, never raised)."""
        ...


def check_coordinator(team: Team) -> AgentConfig:
    """The agent that plans and writes up a team run: it must be LLM-backed,
    because planning needs structured output."""
    config = _coordinator_config(team)
    if config.backend is not None:
        raise InvalidParamsError(
            "team.coordinator must be an LLM-backed agent (it plans with structured output); "
            f"it has {backend_entry(config).described}"
        )
    check_member(config, "team.coordinator")
    return config


# -- the spans ------------------------------------------------------------------
# One ``invoke_workflow`` span over a team run (``oma/runTeam``: the
# coordinator's plan and write-up runs too), and under it a ``task`` span per
# task, over the run of the agent that does it (a skipped task's span is an
# instant, its status ``skipped``). A failed or skipped task's reason is kept in
# its span's ``local`` part (``taskReason``: the store shows it, no exporter
# sends it).


@contextmanager
def team_span(method: str, run_id: str) -> Iterator[Span | None]:
    """The span of a team run made by ``method`` (``oma/runTeam``, ``oma/runTasks``)."""
    with open_span(OP_TEAM, f"{OP_TEAM} team", {TEAM_METHOD: method}, run_id=run_id) as span:
        yield span


def end_team_span(span: Span | None, result: Mapping[str, Any], cancelled: bool) -> None:
    """A team result on its span: ok when every task completed, cancelled
    when its request was, its usage."""
    if span is None:
        return
    error = result.get("errorInfo")
    kind = None if error is None else str(error["kind"])
    code = "ok" if result["success"] else "cancelled" if cancelled else "error"
    end_as(span, code, kind or "task_failed")
    span.attributes.update(usage_attributes(result["tokenUsage"]))
    span.attributes[TEAM_TASKS] = len(result["tasks"])


@contextmanager
def task_span(task_id: str, assignee: str, depends_on: Sequence[str]) -> Iterator[Span | None]:
    """The span of one task; its agent's ``invoke_agent`` span goes under it."""
    attributes: Attributes = {TASK_ID: task_id, TASK_ASSIGNEE: assignee}
    if depends_on:
        attributes[TASK_DEPENDS_ON] = string_list(depends_on)
    with open_span(OP_TASK, f"{OP_TASK} {task_id}", attributes) as span:
        yield span


def end_task_span(span: Span | None, status: str, reason: str | None = None) -> None:
    """A task's outcome (completed, failed, skipped) on its span, and why
    it failed or was skipped."""
    if span is None:
        return
    span.attributes[TASK_STATUS] = status
    if status == "failed":
        end_as(span, "error", "task_failed")
    elif status == "skipped":
        span.status = "skipped"
    if reason is not None and status != "completed":
        span.local[LOCAL_TASK_REASON] = reason


# -- running --------------------------------------------------------------------


@dataclass
class TaskOutcome:
    task: Task
    status: str = "pending"  # running, completed, failed, skipped
    result: AgentRunResult | None = None
    reason: str | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def to_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "id": self.task.id,
            "title": self.task.title,
            "assignee": self.task.assignee,
            "status": self.status,
        }
        if self.result is not None:
            entry["result"] = self.result
        if self.reason is not None:
            entry["reason"] = self.reason
        return entry


# A task's status as a plan entry's (a failed or skipped one is completed).
_PLAN_STATUS: dict[str, PlanStatus] = {
    "pending": "pending",
    "running": "in_progress",
}


def _add_usage(total: TokenUsage, usage: TokenUsage) -> None:
    add_token_usage(total, usage)  # the optional counts (cache, reasoning) too


class TaskGraphRun:
    """One execution of a task DAG.

    Tasks and goals are text only: a message list or content blocks there is
    InvalidParams naming the field. Independent tasks run in parallel up to
    ``maxConcurrency``; a failed task skips its dependents (and theirs) while
    the rest go on; with ``sharedMemory`` a task's prompt carries the outputs
    of the tasks it depends on; ``maxTokenBudget`` caps the team's total usage
    (tasks not yet started when it is spent are skipped). Every task runs on a
    fresh agent, so external (process, ACP) agents can be members, unless the
    run's :class:`MemberExecutor` takes them: then the same task runs there,
    with the same prompt, reports and result. What a run is given is parsed
    and checked first (:mod:`oma_host.orchestration.team_specs`)."""

    def __init__(
        self,
        team: Team,
        tasks: list[Task],
        *,
        run_id: str | None = None,
        progress: ProgressCallback | None = None,
        abort: AbortSignal | None = None,
        executor: MemberExecutor | None = None,
    ) -> None:
        self.team = team
        self.executor = executor
        self.run_id = run_id or new_run_id()
        self.progress = progress
        self.abort = abort
        self.outcomes = {task.id: TaskOutcome(task) for task in tasks}
        self.usage: TokenUsage = zero_usage()
        self._slots = asyncio.Semaphore(team.max_concurrency)

    def report(self, kind: str, agent: str | None, data: Any) -> None:
        if self.progress is None:
            return
        try:
            self.progress({"runId": self.run_id, "type": kind, "agent": agent, "data": clone(data)})
        except Exception:
            log.exception("team progress callback failed for %s", kind)

    def report_plan(self, agent: str | None) -> None:
        """Every task as a plan entry, as the tasks stand now (``plan``
        progress, the form of an agent's ``update_plan``): its title, then
        pending, in progress or completed; a failed or skipped task is
        completed, and says so."""
        if self.progress is None:
            return
        entries: list[PlanEntry] = []
        for outcome in self.outcomes.values():
            content = outcome.task.title or outcome.task.id
            if outcome.status in ("failed", "skipped"):
                content += f" ({outcome.status}: {outcome.reason})"
            status = _PLAN_STATUS.get(outcome.status, "completed")
            entries.append({"content": content, "priority": "medium", "status": status})
        self.report("plan", agent, {"entries": entries})

    async def run(self, *, own_span: bool = True) -> dict[str, Any]:
        """Run every task; the result. ``own_span``: the run is a team span
        of its own (``oma/runTasks``); else its tasks' spans go under the
        current one (a coordinated run's, :func:`run_team`)."""
        if not own_span:
            return await self._run_all()
        with team_span("oma/runTasks", self.run_id) as span:
            result = await self._run_all()
            end_team_span(span, result, self.abort is not None and self.abort.aborted)
            return result

    async def _run_all(self) -> dict[str, Any]:
        self.report_plan(None)
        await asyncio.gather(*(self._run_task(o) for o in self.outcomes.values()))
        outcomes = list(self.outcomes.values())
        depended_on = {d for o in outcomes for d in o.task.depends_on}
        sinks = [o for o in outcomes if o.task.id not in depended_on and o.status == "completed"]
        return {
            "success": all(o.status == "completed" for o in outcomes),
            "output": "\n\n".join(o.result["output"] for o in sinks if o.result is not None),
            "tasks": [o.to_json() for o in outcomes],
            "tokenUsage": dict(self.usage),
            "identity": {"runId": self.run_id},
        }

    def _skip(self, outcome: TaskOutcome, reason: str) -> None:
        with task_span(outcome.task.id, outcome.task.assignee, outcome.task.depends_on) as span:
            end_task_span(span, "skipped", reason)
        outcome.status = "skipped"
        outcome.reason = reason
        self.report(
            "task_skipped", outcome.task.assignee, {"taskId": outcome.task.id, "reason": reason}
        )
        self.report_plan(outcome.task.assignee)
        outcome.done.set()

    async def _run_task(self, outcome: TaskOutcome) -> None:
        task = outcome.task
        for dependency in task.depends_on:
            await self.outcomes[dependency].done.wait()
        blocked = [d for d in task.depends_on if self.outcomes[d].status != "completed"]
        if blocked:
            self._skip(outcome, f"dependency {blocked[0]!r} did not complete")
            return
        async with self._slots:
            budget = self.team.max_token_budget
            spent = self.usage["input_tokens"] + self.usage["output_tokens"]
            if budget is not None and spent >= budget:
                self._skip(outcome, f"the team's maxTokenBudget={budget} is spent")
                return
            if self.abort is not None and self.abort.aborted:
                self._skip(outcome, "the run was cancelled")
                return
            try:
                await self._execute(outcome)
            except Exception as error:  # one task's fault never stops the others
                log.exception("task %s failed unexpectedly", task.id)
                outcome.status = "failed"
                outcome.reason = f"{type(error).__name__}: {error}"
            finally:
                self.report_plan(task.assignee)
                outcome.done.set()

    def _prompt(self, task: Task) -> str:
        prompt = f"{task.title}\n\n{task.description}"
        if self.team.shared_memory and task.depends_on:
            shared = "\n\n".join(
                f"### {self.outcomes[d].task.title}\n{self.outcomes[d].result['output']}"  # type: ignore[index]
                for d in task.depends_on
            )
            prompt += f"\n\nResults of the tasks this one depends on:\n\n{shared}"
        return prompt

    async def _execute(self, outcome: TaskOutcome) -> None:
        task = outcome.task
        config = self.team.agents[task.assignee]
        executor = self.executor if self.executor and self.executor.takes(config) else None
        agent = Agent(config) if executor is None else None
        prompt = self._prompt(task)
        outcome.status = "running"
        self.report("task_start", task.assignee, {"taskId": task.id, "title": task.title})
        self.report_plan(task.assignee)
        self.report("agent_start", task.assignee, {"prompt": prompt})
        run_id = f"{self.run_id}:{task.id}"
        with task_span(task.id, task.assignee, task.depends_on) as span:
            if executor is not None:
                result = await executor.run(task, config, prompt, run_id=run_id, abort=self.abort)
            else:
                assert agent is not None
                try:
                    result = await agent.run(prompt, run_id=run_id, abort=self.abort)
                finally:
                    await agent.close()
            status = "completed" if result["success"] else "failed"
            reason: str | None = None
            if not result["success"]:
                reason = result["status"].get("message", result["status"]["code"])
            end_task_span(span, status, reason)
        _add_usage(self.usage, result["tokenUsage"])
        self.report("agent_complete", task.assignee, result)
        outcome.result = result
        outcome.status = status
        outcome.reason = reason
        self.report(
            "task_complete",
            task.assignee,
            {"taskId": task.id, "status": outcome.status, "result": result},
        )


# -- the coordinator ----------------------------------------------------------------

_PLAN_SYSTEM = (
    "You coordinate a team of agents. Break the goal into a small number of concrete tasks, "
    "each assigned to the team member best suited to it; use dependsOn when a task needs "
    "another's result."
)


def _plan_schema(names: list[str]) -> dict[str, Any]:
    task = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "minLength": 1},
            "title": {"type": "string"},
            "description": {"type": "string"},
            "assignee": {"type": "string", "enum": names},
            "dependsOn": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["id", "title", "description", "assignee"],
    }
    return {
        "type": "object",
        "properties": {"tasks": {"type": "array", "minItems": 1, "items": task}},
        "required": ["tasks"],
    }


def _coordinator_config(team: Team) -> AgentConfig:
    if team.coordinator is not None:
        return team.coordinator
    for config in team.agents.values():
        if config.backend is None:
            return config.model_copy(
                update={
                    "name": "coordinator",
                    "tools": None,
                    "tool_preset": None,
                    "disallowed_tools": None,
                    "history": None,
                    "hooks": None,
                }
            )
    raise InvalidParamsError(
        "team.coordinator is required when no team agent is LLM-backed (runTeam plans with an LLM)"
    )


async def run_team(
    team: Team,
    goal: str,
    *,
    run_id: str | None = None,
    progress: ProgressCallback | None = None,
    abort: AbortSignal | None = None,
) -> dict[str, Any]:
    """Plan tasks from ``goal`` with the coordinator, run them, then synthesise."""
    run_id = run_id or new_run_id()
    with team_span("oma/runTeam", run_id) as span:
        result = await _coordinate(team, goal, run_id, progress, abort)
        end_team_span(span, result, abort is not None and abort.aborted)
        return result


async def _coordinate(
    team: Team,
    goal: str,
    run_id: str,
    progress: ProgressCallback | None,
    abort: AbortSignal | None,
) -> dict[str, Any]:
    """:func:`run_team`'s work, inside its span."""
    base = check_coordinator(team)
    members = "\n".join(
        f"- {name}: {config.system_prompt or 'a general assistant'}"
        for name, config in team.agents.items()
    )
    planner = Agent(
        base.model_copy(
            update={
                "system_prompt": _PLAN_SYSTEM,
                "output_schema": _plan_schema(list(team.agents)),
            }
        )
    )
    usage = zero_usage()
    prompt = f"Goal: {goal}\n\nTeam members:\n{members}"
    tasks: list[Task] | None = None
    failure = ""
    try:
        for _attempt in range(2):  # the plan, and one repair if its graph is unusable
            plan = await planner.run(prompt, run_id=f"{run_id}:plan", abort=abort)
            _add_usage(usage, plan["tokenUsage"])
            if not plan["success"] or "structured" not in plan:
                failure = plan["status"].get("message", "the coordinator sent no plan")
                break
            try:
                tasks = parse_tasks(plan["structured"]["tasks"], team, "plan.tasks")
                break
            except InvalidParamsError as error:
                failure = str(error)
                prompt += f"\n\nYour previous plan was unusable: {error}. Send a corrected plan."
    finally:
        await planner.close()
    if tasks is None:
        return {
            "success": False,
            "output": f"the coordinator could not plan the goal: {failure}",
            "tasks": [],
            "tokenUsage": dict(usage),
            "identity": {"runId": run_id},
            "errorInfo": {"kind": "plan", "message": failure},
        }
    graph = TaskGraphRun(team, tasks, run_id=run_id, progress=progress, abort=abort)
    outcome = await graph.run(own_span=False)
    _add_usage(usage, outcome["tokenUsage"])
    results = "\n\n".join(
        f"### {t['title']} ({t['status']})\n"
        + (t["result"]["output"] if "result" in t else t.get("reason", ""))
        for t in outcome["tasks"]
    )
    writer = Agent(base.model_copy(update={"system_prompt": "You write the team's final answer."}))
    try:
        final = await writer.run(
            f"Goal: {goal}\n\nResults of the team's tasks:\n\n{results}\n\n"
            "Write the final answer to the goal.",
            run_id=f"{run_id}:synthesis",
            abort=abort,
        )
    finally:
        await writer.close()
    _add_usage(usage, final["tokenUsage"])
    return {
        "success": outcome["success"] and final["success"],
        "output": final["output"],
        "plan": [
            {"id": t.id, "title": t.title, "assignee": t.assignee, "dependsOn": list(t.depends_on)}
            for t in tasks
        ],
        "tasks": outcome["tasks"],
        "tokenUsage": dict(usage),
        "identity": {"runId": run_id},
    }
