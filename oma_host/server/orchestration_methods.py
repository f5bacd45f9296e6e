"""Team and evaluation methods: ``oma/runTasks``, ``oma/runTeam``, ``oma/evaluation/*``.

The params models check shapes; a team's semantic checks are
:mod:`oma_host.orchestration.teams`'s. Imported on first use.
"""

from __future__ import annotations

from typing import Any, cast

from oma_host.core.abort import AbortSignal
from oma_host.core.config import parse_agent_config
from oma_host.orchestration import team_specs, teams
from oma_host.orchestration.executors import LocalExecutor
from oma_host.orchestration.member_placement import open_executor
from oma_host.server.context import RequestContext
from oma_host.server.models import (
    FlushParams,
    NoParams,
    RecordsParams,
    RunTasksParams,
    RunTeamParams,
    TaskParams,
    TeamParams,
)
from oma_host.server.outgoing import (
    EvaluationRecord,
    EvaluationStats,
    FlushResult,
    RecordsResult,
    TeamResult,
)
from oma_host.server.registry import Method, handles
from oma_host.server.runs import note_secrets, tracked_run


def _team(ctx: RequestContext, params: TeamParams) -> team_specs.Team:
    defaults = ctx.state.defaults
    members = [
        parse_agent_config(member, defaults, ctx.where(f"team.agents[{index}]"))
        for index, member in enumerate(params.agents)
    ]
    coordinator = (
        None
        if params.coordinator is None
        else parse_agent_config(params.coordinator, defaults, ctx.where("team.coordinator"))
    )
    for config in members if coordinator is None else [*members, coordinator]:
        note_secrets(ctx, config)
    return team_specs.Team(
        agents=team_specs.check_members(members, ctx.where("team.agents")),
        shared_memory=params.shared_memory,
        max_concurrency=params.max_concurrency,
        max_token_budget=params.max_token_budget,
        coordinator=coordinator,
    )


def _tasks(
    ctx: RequestContext, specs: list[TaskParams], team: team_specs.Team
) -> list[team_specs.Task]:
    names = list(team.agents)
    tasks = [
        team_specs.Task(
            id=spec.id or f"task-{index + 1}",
            title=spec.title,
            description=spec.description,
            assignee=spec.assignee or names[index % len(names)],
            depends_on=tuple(spec.depends_on),
            resources=spec.resources,
        )
        for index, spec in enumerate(specs)
    ]
    team_specs.check_tasks(tasks, team, ctx.where("tasks"))
    return tasks


def _progress(ctx: RequestContext, enabled: bool) -> teams.ProgressCallback | None:
    return ctx.oma_progress if enabled else None


@handles(Method.RUN_TASKS)
async def run_tasks(ctx: RequestContext, params: RunTasksParams) -> TeamResult:
    """Runs a task DAG: independent tasks in parallel, a failure skips its
    dependents; `executor` says where the members run (the host, or a Ray cluster)."""
    team = _team(ctx, params.team)
    tasks = _tasks(ctx, params.tasks, team)
    executor_config = params.executor or LocalExecutor(kind="local")
    team_specs.check_task_resources(tasks, executor_config, ctx.where("tasks"))
    executor = await open_executor(
        executor_config, team, tasks, ctx.where("executor"), ctx.where("tasks")
    )

    async def run(abort: AbortSignal) -> dict[str, Any]:
        graph = teams.TaskGraphRun(
            team,
            tasks,
            run_id=params.run_id,
            progress=_progress(ctx, params.progress),
            abort=abort,
            executor=executor,
        )
        return await graph.run()

    return cast(TeamResult, await tracked_run(ctx, "team", params.work_done_token, run))


@handles(Method.RUN_TEAM)
async def run_team(ctx: RequestContext, params: RunTeamParams) -> TeamResult:
    """The coordinator plans tasks from the goal, the team runs them, and the
    coordinator writes the final answer (`output`); the result has the `plan`."""
    team = _team(ctx, params.team)
    note_secrets(ctx, teams.check_coordinator(team))

    async def run(abort: AbortSignal) -> dict[str, Any]:
        return await teams.run_team(
            team,
            params.goal,
            run_id=params.run_id,
            progress=_progress(ctx, params.progress),
            abort=abort,
        )

    return cast(TeamResult, await tracked_run(ctx, "team", params.work_done_token, run))


def _stats(ctx: RequestContext) -> EvaluationStats:
    evaluator = ctx.state.evaluator()
    if evaluator is None:
        return {
            "sampled": 0,
            "enqueued": 0,
            "completed": 0,
            "dropped": 0,
            "failed": 0,
            "storeFailed": 0,
        }
    return cast(EvaluationStats, evaluator.stats.to_json())


@handles(Method.EVALUATION_STATS)
async def evaluation_stats(ctx: RequestContext, params: NoParams) -> EvaluationStats:
    """Counters of online evaluation (all zero when it is off)."""
    return _stats(ctx)


@handles(Method.EVALUATION_FLUSH)
async def evaluation_flush(ctx: RequestContext, params: FlushParams) -> FlushResult:
    """Settles queued samples (within `timeoutMs`); the stats plus `settled`."""
    evaluator = ctx.state.evaluator()
    settled = True
    if evaluator is not None:
        timeout_s = None if params.timeout_ms is None else params.timeout_ms / 1000
        settled = await evaluator.flush(timeout_s)
    return {"settled": settled, **_stats(ctx)}


@handles(Method.EVALUATION_RECORDS)
async def evaluation_records(ctx: RequestContext, params: RecordsParams) -> RecordsResult:
    """Stored evaluation records, oldest first (at most `limit`), of one run or all."""
    records = ctx.state.store().records(params.run_id, params.limit)
    return {"records": cast(list[EvaluationRecord], records)}
