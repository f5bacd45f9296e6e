"""Team and evaluation methods: ``oma/runTasks``, ``oma/runTeam`` and
``oma/evaluation/{stats,flush,records}``. Imported on first use.

Team params are checked by hand in ``oma_host.teams`` so the errors name the
field exactly (``tasks[2].description must be a string``); the evaluation
methods read the session's evaluator and store.
"""

from __future__ import annotations

import time
from typing import Any

from pygls.exceptions import JsonRpcException

from oma_host import teams
from oma_host.abort import AbortSignal
from oma_host.errors import InvalidParamsError
from oma_host.server.app import HostSession
from oma_host.server.services import (
    evaluator_for,
    model_defaults,
    record_trace,
    store_for,
    work_done,
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


def _progress(session: HostSession, enabled: bool) -> Any:
    if not enabled:
        return None

    def report(event: dict[str, Any]) -> None:
        session.protocol.notify("oma/progress", event)

    return report


def _cancelled(abort: AbortSignal, result: dict[str, Any]) -> None:
    if abort.aborted:
        raise JsonRpcException(
            code=-32800,
            message="the request was cancelled",
            data={"type": "RequestCancelled", "partial": result},
        )


async def run_tasks(session: HostSession, params: Any) -> Any:
    method = "oma/runTasks"
    raw = _object(params, method, {"team", "tasks", "progress", "runId", "workDoneToken"})
    team = teams.parse_team(raw.get("team"), model_defaults(session))
    tasks = teams.parse_tasks(raw.get("tasks"), team)
    abort = session.abort_signal() or AbortSignal()
    started = time.time()
    graph = teams.TaskGraphRun(
        team,
        tasks,
        run_id=_optional_str(raw, "runId", method),
        progress=_progress(session, bool(raw.get("progress"))),
        abort=abort,
    )
    work_done(session, raw.get("workDoneToken"), {"kind": "begin", "title": "team"})
    result = await graph.run()
    _end_work(session, raw, result)
    record_trace(session, method, "team", result, started)
    _cancelled(abort, result)
    return result


async def run_team(session: HostSession, params: Any) -> Any:
    method = "oma/runTeam"
    raw = _object(params, method, {"team", "goal", "progress", "runId", "workDoneToken"})
    team = teams.parse_team(raw.get("team"), model_defaults(session))
    goal = raw.get("goal")
    if not isinstance(goal, str) or not goal.strip():
        raise InvalidParamsError(
            f"{method}: params.goal must be a non-empty string (a team goal is text-only; "
            "a message list or content blocks cannot be used here)"
        )
    abort = session.abort_signal() or AbortSignal()
    started = time.time()
    work_done(session, raw.get("workDoneToken"), {"kind": "begin", "title": "team"})
    result = await teams.run_team(
        team,
        goal,
        run_id=_optional_str(raw, "runId", method),
        progress=_progress(session, bool(raw.get("progress"))),
        abort=abort,
    )
    _end_work(session, raw, result)
    record_trace(session, method, "team", result, started)
    _cancelled(abort, result)
    return result


def _end_work(session: HostSession, raw: dict[str, Any], result: dict[str, Any]) -> None:
    status = "ok" if result["success"] else "error"
    work_done(session, raw.get("workDoneToken"), {"kind": "end", "message": status})


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
