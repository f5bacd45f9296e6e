"""Team and evaluation methods: ``oma/runTasks``, ``oma/runTeam`` and
``oma/evaluation/{stats,flush,records}``. Imported on first use.

Team params are checked by hand in ``oma_host.orchestration.teams`` so the errors name the
field exactly (``tasks[2].description must be a string``); the evaluation
methods read the session's evaluator and store.
"""

from __future__ import annotations

from typing import Any

from oma_host.core.abort import AbortSignal
from oma_host.core.errors import InvalidParamsError
from oma_host.orchestration import teams
from oma_host.server.app import HostSession
from oma_host.server.services import (
    evaluator_for,
    model_defaults,
    note_secrets,
    store_for,
    tracked_run,
)


def _object(params: Any, method: str, allowed: set[str]) -> dict[str, Any]:
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise InvalidParamsError(f"{method}: params must be an object")
    unknown = set(params) - allowed
    if unknown:
        raise InvalidParamsError(f"{method}: params.{sorted(unknown)[0]}: is not a known field")
    return params


def _optional_str(params: dict[str, Any], key: str, method: str) -> str | None:
    value = params.get(key)
    if value is not None and not isinstance(value, str):
        raise InvalidParamsError(f"{method}: params.{key} must be a string")
    return value


def _progress(session: HostSession, raw: dict[str, Any], method: str) -> Any:
    enabled = raw.get("progress", False)
    if not isinstance(enabled, bool):
        raise InvalidParamsError(f"{method}: params.progress must be true or false")
    if not enabled:
        return None

    def report(event: dict[str, Any]) -> None:
        session.protocol.notify("oma/progress", event)

    return report


def _token(raw: dict[str, Any], method: str) -> int | str | None:
    token = raw.get("workDoneToken")
    if token is not None and (not isinstance(token, int | str) or isinstance(token, bool)):
        raise InvalidParamsError(f"{method}: params.workDoneToken must be a string or an integer")
    return token


async def run_tasks(session: HostSession, params: Any) -> Any:
    method = "oma/runTasks"
    raw = _object(params, method, {"team", "tasks", "progress", "runId", "workDoneToken"})
    team = teams.parse_team(raw.get("team"), model_defaults(session))
    for member in team.agents.values():
        note_secrets(session, member)
    tasks = teams.parse_tasks(raw.get("tasks"), team)
    run_id = _optional_str(raw, "runId", method)
    progress = _progress(session, raw, method)

    async def run(abort: AbortSignal) -> dict[str, Any]:
        graph = teams.TaskGraphRun(team, tasks, run_id=run_id, progress=progress, abort=abort)
        return await graph.run()

    return await tracked_run(session, method, "team", _token(raw, method), run)


async def run_team(session: HostSession, params: Any) -> Any:
    method = "oma/runTeam"
    raw = _object(params, method, {"team", "goal", "progress", "runId", "workDoneToken"})
    team = teams.parse_team(raw.get("team"), model_defaults(session))
    for member in [*team.agents.values(), teams.check_coordinator(team)]:
        note_secrets(session, member)
    goal = raw.get("goal")
    if not isinstance(goal, str) or not goal.strip():
        raise InvalidParamsError(
            f"{method}: params.goal must be a non-empty string (a team goal is text-only; "
            "a message list or content blocks cannot be used here)"
        )
    run_id = _optional_str(raw, "runId", method)
    progress = _progress(session, raw, method)

    async def run(abort: AbortSignal) -> dict[str, Any]:
        return await teams.run_team(team, goal, run_id=run_id, progress=progress, abort=abort)

    return await tracked_run(session, method, "team", _token(raw, method), run)


def _stats(session: HostSession) -> dict[str, int]:
    evaluator = evaluator_for(session, model_defaults(session))
    if evaluator is None:
        return {
            "sampled": 0,
            "enqueued": 0,
            "completed": 0,
            "dropped": 0,
            "failed": 0,
            "storeFailed": 0,
        }
    return evaluator.stats.to_json()


async def evaluation_stats(session: HostSession, params: Any) -> Any:
    _object(params, "oma/evaluation/stats", set())
    return _stats(session)


async def evaluation_flush(session: HostSession, params: Any) -> Any:
    method = "oma/evaluation/flush"
    raw = _object(params, method, {"timeoutMs"})
    timeout_ms = raw.get("timeoutMs")
    if timeout_ms is not None and (
        not isinstance(timeout_ms, int | float) or isinstance(timeout_ms, bool) or timeout_ms <= 0
    ):
        raise InvalidParamsError(f"{method}: params.timeoutMs must be a positive number")
    evaluator = evaluator_for(session, model_defaults(session))
    settled = True
    if evaluator is not None:
        settled = await evaluator.flush(None if timeout_ms is None else timeout_ms / 1000)
    return {"settled": settled, **_stats(session)}


async def evaluation_records(session: HostSession, params: Any) -> Any:
    method = "oma/evaluation/records"
    raw = _object(params, method, {"runId", "limit"})
    limit = raw.get("limit", 100)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 10_000:
        raise InvalidParamsError(f"{method}: params.limit must be an integer from 1 to 10000")
    records = store_for(session).records(_optional_str(raw, "runId", method), limit)
    return {"records": records}
