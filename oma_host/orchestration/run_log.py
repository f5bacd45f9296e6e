"""What a door writes to the store when a run ends: its ``runs`` row and its spans' rows.

Both doors build them here and write them off the request's path.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from oma_host.core.spans import COST_USD, OP_CHAT, CollectedSpans
from oma_host.orchestration.store_schema import RunTrace, SpanRow, span_row


def _turns(result: Mapping[str, Any]) -> int:
    """The provider replies of a run (an agent's assistant messages), or
    of a team run's tasks."""
    if "messages" in result:
        return sum(1 for message in result["messages"] if message.get("role") == "assistant")
    return sum(_turns(task["result"]) for task in result.get("tasks", []) if "result" in task)


def _cost(result: Mapping[str, Any], spans: CollectedSpans | None) -> float | None:
    """The run's cost: its result's, else (a team run) what its recorded
    provider requests cost; None when nothing priced it."""
    if "cost" in result:
        return float(result["cost"]["amount"])
    if spans is None:
        return None
    costs = [
        cost
        for span in spans.spans
        if span.operation == OP_CHAT
        and isinstance(cost := span.attributes.get(COST_USD), int | float)
    ]
    return round(sum(costs), 8) if costs else None


# The most tasks a team run's stored error names one by one.
_TASKS_NAMED = 8


def _team_error(result: Mapping[str, Any]) -> tuple[str | None, str] | None:
    """Why a team run that did not succeed failed, when its result has no
    ``errorInfo`` to say so: its failed tasks, then its skipped ones, each
    with its reason ("task b failed: invalid x-api-key; task c skipped:
    dependency 'b' did not complete"), and the kind of the first failed
    task's run (``task_failed`` when it has none; ``task_skipped`` when
    no task failed, the budget being spent). With every task
    completed, it was ``oma/runTeam``'s final answer that failed (its
    error text is the run's ``output``)."""
    if result.get("success", True) or "tasks" not in result or result.get("errorInfo"):
        return None
    tasks = result["tasks"]
    failed = [task for task in tasks if task.get("status") == "failed"]
    skipped = [task for task in tasks if task.get("status") == "skipped"]
    said = [
        f"task {task['id']} {task['status']}: {task.get('reason') or 'no reason given'}"
        for task in (failed + skipped)[:_TASKS_NAMED]
    ]
    if len(failed) + len(skipped) > _TASKS_NAMED:
        said.append(f"and {len(failed) + len(skipped) - _TASKS_NAMED} more")
    if not said:
        return None, f"the final answer failed: {result.get('output') or 'no reason given'}"
    kinds = [
        str(task["result"]["errorInfo"]["kind"])
        for task in failed
        if isinstance(task.get("result"), Mapping) and task["result"].get("errorInfo")
    ]
    kind = kinds[0] if kinds else "task_failed" if failed else "task_skipped"
    return kind, "; ".join(said)


def run_record(
    result: Mapping[str, Any],
    *,
    agent: str,
    method: str,
    status: str,
    started: float,
    session_id: str | None,
    spans: CollectedSpans | None,
) -> tuple[RunTrace, list[SpanRow]]:
    """The row of ``runs`` for a run that ended now with ``result`` (an
    AgentRunResult or a team result), and its spans' rows. A failed team
    run's error and kind say which tasks failed or were skipped, and why."""
    finished = time.time()
    usage = result["tokenUsage"]
    error_info = result.get("errorInfo")
    message = result.get("status", {}).get("message") if status != "ok" else None
    error_kind = None if error_info is None else str(error_info["kind"])
    team_error = _team_error(result) if status == "error" else None
    if team_error is not None:
        error_kind, message = team_error
    trace = RunTrace(
        run_id=result["identity"]["runId"],
        agent=agent,
        method=method,
        status=status,
        input_tokens=usage["input_tokens"],
        output_tokens=usage["output_tokens"],
        started=started,
        finished=finished,
        duration_ms=round((finished - started) * 1000, 3),
        session_id=session_id,
        turns=_turns(result),
        cost_usd=_cost(result, spans),
        error_kind=error_kind,
        error=message or (None if error_info is None else str(error_info["message"])),
        model=result.get("model"),
        trace_id=None if spans is None else spans.trace_id,
        cache_read_tokens=usage.get("cache_read_input_tokens"),
        cache_creation_tokens=usage.get("cache_creation_input_tokens"),
    )
    rows = [] if spans is None else [span_row(span) for span in spans.spans]
    return trace, rows
