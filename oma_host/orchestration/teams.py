"""Team methods: a DAG of text tasks run by a team of agents (``oma/runTasks``),
and a coordinator that plans such a DAG from a goal and writes the final
answer (``oma/runTeam``).

Tasks and goals are text only, as in the seed: a message list or content
blocks there is InvalidParams naming the field. Independent tasks run in
parallel up to ``maxConcurrency``; a failed task skips its dependents (and
theirs) while the rest go on; with ``sharedMemory`` a task's prompt carries
the outputs of the tasks it depends on; ``maxTokenBudget`` caps the team's
total usage (tasks not yet started when it is spent are skipped). Every task
runs on a fresh agent, so external (process, ACP) agents can be members. A
run takes at most ``MAX_TASKS`` (1,000) tasks.

Members run in the host, unless the run has a :class:`MemberExecutor` that
takes them (the Ray executor, :mod:`oma_host.orchestration.executors`): then
the same task runs there, with the same prompt, reports and result.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from oma_host.core.abort import AbortSignal
from oma_host.core.agent import Agent
from oma_host.core.backends import backend_entry, check_agent_config
from oma_host.core.config import AgentConfig
from oma_host.core.cycles import first_cycle
from oma_host.core.errors import InvalidMessageError, InvalidParamsError
from oma_host.core.events import PlanEntry
from oma_host.core.guard import clone
from oma_host.core.results import AgentRunResult, TokenUsage, add_token_usage, zero_usage
from oma_host.core.run_ids import new_run_id
from oma_host.orchestration.executors import (
    LocalExecutor,
    RayExecutor,
    TaskResources,
    parse_resources,
)
from oma_host.orchestration.team_spans import end_task_span, end_team_span, task_span, team_span

log = logging.getLogger(__name__)

ProgressCallback = Callable[[dict[str, Any]], None]
DEFAULT_MAX_CONCURRENCY = 3
# The most tasks one run takes: a bound on the work a single request can queue.
MAX_TASKS = 1000


@dataclass(frozen=True)
class Task:
    id: str
    title: str
    description: str
    assignee: str
    depends_on: tuple[str, ...] = ()
    # What the task holds on a node (the Ray executor's; see executors.py).
    resources: TaskResources | None = None


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


@dataclass(frozen=True)
class Team:
    agents: dict[str, AgentConfig]
    shared_memory: bool = False
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    max_token_budget: int | None = None
    coordinator: AgentConfig | None = None


# -- validation ---------------------------------------------------------------


def _text(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        raise InvalidParamsError(
            f"{where} must be a string: team tasks and goals are text-only, "
            "so a message list or content blocks cannot be used here"
        )
    raise InvalidParamsError(f"{where} must be a string")


def check_members(members: list[AgentConfig], where: str = "team.agents") -> dict[str, AgentConfig]:
    """The team's agents by name: each refused now if an Agent would refuse
    it, and no name used twice."""
    agents: dict[str, AgentConfig] = {}
    for index, config in enumerate(members):
        at = f"{where}[{index}]"
        _check_member(config, at)
        if config.name in agents:
            raise InvalidParamsError(f"{at}.name {config.name!r} is used twice")
        agents[config.name] = config
    return agents


def _check_member(config: AgentConfig, where: str) -> None:
    """Everything Agent() would refuse (provider, tools, outputSchema,
    history, delegates with no agents to find), refused now, before any task
    starts."""
    if config.delegates:
        raise InvalidParamsError(
            f"{where}.delegates: a team's agents cannot delegate (each task runs on a fresh "
            "agent with no session to find others in); hand work on with dependsOn"
        )
    try:
        check_agent_config(config)
    except InvalidParamsError as error:
        raise InvalidParamsError(f"{where}: {error}") from None
    except InvalidMessageError as error:
        path = f"{where}.{error.path}" if error.path else where
        raise InvalidMessageError(f"{where}: {error}", path) from None


def check_coordinator(team: Team) -> AgentConfig:
    """The agent that plans and writes up a team run: it must be LLM-backed,
    because planning needs structured output."""
    config = _coordinator_config(team)
    if config.backend is not None:
        raise InvalidParamsError(
            "team.coordinator must be an LLM-backed agent (it plans with structured output); "
            f"it has {backend_entry(config).described}"
        )
    _check_member(config, "team.coordinator")
    return config


def parse_tasks(
    raw: Any, team: Team, where: str = "tasks", *, with_resources: bool = False
) -> list[Task]:
    """Tasks with ids, assignees and dependencies checked; cycles refused.
    ``with_resources``: a task may name its ``resources`` (a caller's tasks;
    a coordinator's plan may not)."""
    fields = {"id", "title", "description", "assignee", "dependsOn"}
    if with_resources:
        fields.add("resources")
    if not isinstance(raw, list) or not raw:
        raise InvalidParamsError(f"{where} must be a non-empty array of tasks")
    names = list(team.agents)
    tasks: list[Task] = []
    for index, item in enumerate(raw):
        at = f"{where}[{index}]"
        if not isinstance(item, dict):
            raise InvalidParamsError(f"{at} must be an object")
        unknown = set(item) - fields
        if unknown:
            raise InvalidParamsError(f"{at}.{sorted(unknown)[0]}: is not a known field")
        task_id = item.get("id", f"task-{index + 1}")
        if not isinstance(task_id, str) or not task_id:
            raise InvalidParamsError(f"{at}.id must be a non-empty string")
        assignee = item.get("assignee", names[index % len(names)])
        if not isinstance(assignee, str):
            raise InvalidParamsError(f"{at}.assignee must be a string")
        depends = item.get("dependsOn", [])
        if not isinstance(depends, list) or not all(isinstance(d, str) for d in depends):
            raise InvalidParamsError(f"{at}.dependsOn must be an array of task ids")
        tasks.append(
            Task(
                id=task_id,
                title=_text(item.get("title"), f"{at}.title"),
                description=_text(item.get("description"), f"{at}.description"),
                assignee=assignee,
                depends_on=tuple(depends),
                resources=parse_resources(item.get("resources"), f"{at}.resources"),
            )
        )
    check_tasks(tasks, team, where)
    return tasks


def check_tasks(tasks: list[Task], team: Team, where: str = "tasks") -> None:
    """Assignees are team agents, ids are unique, dependencies name tasks,
    and ``dependsOn`` forms no cycle."""
    if len(tasks) > MAX_TASKS:
        raise InvalidParamsError(
            f"{where} has {len(tasks)} tasks, over the limit of {MAX_TASKS} tasks per run"
        )
    for index, task in enumerate(tasks):
        if task.assignee not in team.agents:
            raise InvalidParamsError(
                f"{where}[{index}].assignee {task.assignee!r} is not a team agent "
                f"(agents: {', '.join(team.agents)})"
            )
    uses = Counter(task.id for task in tasks)
    for index, task in enumerate(tasks):
        if uses[task.id] > 1:
            raise InvalidParamsError(f"{where}[{index}].id {task.id!r} is used twice")
        for dependency in task.depends_on:
            if dependency not in uses:
                raise InvalidParamsError(
                    f"{where}[{index}].dependsOn: {dependency!r} is not a task id"
                )
    _refuse_cycles(tasks, where)


def check_task_resources(
    tasks: list[Task], executor: LocalExecutor | RayExecutor, where: str = "tasks"
) -> None:
    """A task's ``resources`` are for the Ray executor: refused under the local one."""
    if executor.kind == "ray":
        return
    for index, task in enumerate(tasks):
        if task.resources is not None:
            raise InvalidParamsError(
                f'{where}[{index}].resources: resources are for executor.kind "ray"; '
                "the local executor runs every task in the host"
            )


def _refuse_cycles(tasks: list[Task], where: str) -> None:
    """The first cycle met depth-first from each task in order, along
    ``dependsOn`` in order, is named."""
    by_id = {task.id: task for task in tasks}
    cycle = first_cycle(by_id, lambda task_id: by_id[task_id].depends_on)
    if cycle is not None:
        raise InvalidParamsError(f"{where}: dependsOn forms a cycle: {' -> '.join(cycle)}")


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
_PLAN_STATUS: dict[str, Literal["pending", "in_progress", "completed"]] = {
    "pending": "pending",
    "running": "in_progress",
}


def _add_usage(total: TokenUsage, usage: TokenUsage) -> None:
    add_token_usage(total, usage)  # the optional counts (cache, reasoning) too


class TaskGraphRun:
    """One execution of a task DAG; see the module docstring."""

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
            end_task_span(span, "skipped")
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
            end_task_span(span, "completed" if result["success"] else "failed")
        _add_usage(self.usage, result["tokenUsage"])
        self.report("agent_complete", task.assignee, result)
        outcome.result = result
        outcome.status = "completed" if result["success"] else "failed"
        if not result["success"]:
            outcome.reason = result["status"].get("message", result["status"]["code"])
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
                update={"name": "coordinator", "tools": None, "history": None, "hooks": None}
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
